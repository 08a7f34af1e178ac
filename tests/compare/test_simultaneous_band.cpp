// Tests of compare/simultaneous_band: moments against a long double computation, the resamples
// against their definition, the bootstrap's fast products against a plain loop and a naive
// bootstrap-t written here, Holm against hand-computed p-values — and the calibration the
// verdict rests on: with AR(1) errors of lag-1 correlation 0.98 across points and the truth on
// the bound, "falsified somewhere" happens in at most 5 % of repetitions (within its sampling
// error), where the withdrawn Binomial allowance fires far more often.
#include <gtest/gtest.h>

#include <algorithm>
#include <boost/math/distributions/students_t.hpp>
#include <cmath>
#include <cstdio>
#include <limits>
#include <random>

#include "common/splitmix64.hpp"
#include "compare/simultaneous_band.hpp"

namespace attngeo::compare {
namespace {

// Gaussian draws from SplitMix64 (Box–Muller), so the test is the same on every platform.
class Normals {
  public:
    explicit Normals(std::uint64_t seed) : rng_(seed) {}
    double next() {
        const double r = std::sqrt(-2 * std::log(rng_.open_uniform()));
        return r * std::cos(6.283185307179586 * rng_.open_uniform());
    }

  private:
    SplitMix64 rng_;
};

// Units whose values across points follow an AR(1) with lag-1 correlation `rho`, mean `mean`.
UnitValues ar1_units(int units, int points, double rho, double mean, double sd,
                     std::uint64_t seed) {
    Normals normal(seed);
    UnitValues v;
    v.units = units;
    v.points = points;
    v.values.resize(static_cast<std::size_t>(units) * points);
    for (int u = 0; u < units; ++u) {
        double e = normal.next();
        for (int p = 0; p < points; ++p) {
            if (p > 0) e = rho * e + std::sqrt(1 - rho * rho) * normal.next();
            v.values[static_cast<std::size_t>(u) * points + p] = mean + sd * e;
        }
    }
    return v;
}

TEST(SimultaneousBand, MomentsMatchALongDoubleComputation) {
    const UnitValues v = ar1_units(37, 25, 0.5, 0.3, 0.1, 11);
    const PointMoments m = point_moments(v);
    double largest = 0;
    for (int p = 0; p < v.points; ++p) {
        long double sum = 0, squares = 0;
        for (int u = 0; u < v.units; ++u)
            sum += v.at(u, p);
        const long double mean = sum / v.units;
        for (int u = 0; u < v.units; ++u)
            squares += (v.at(u, p) - mean) * (v.at(u, p) - mean);
        // Two pseudo-units at the ends of the (unit-width) range, as point_moments adds them.
        const long double se = std::sqrt((squares + 2) / (v.units - 1) / v.units);
        largest = std::max(
            {largest, double(std::fabs(m.mean[p] - mean)), double(std::fabs(m.se[p] - se))});
    }
    std::printf("largest difference of mean or se from long double: %.3g\n", largest);
    EXPECT_LT(largest, 1e-15);
}

TEST(SimultaneousBand, PseudoUnitsWidenByTheRangeAndEqualValuesKeepTheirMeanExactly) {
    UnitValues v;
    v.units = 8;
    v.points = 2;
    v.values.assign(16, 0.1);
    for (int u = 0; u < 8; ++u)
        v.values[2 * u + 1] = u % 2;  // point 1 varies
    v.width = {0.5, 1.0};
    const PointMoments m = point_moments(v);
    EXPECT_EQ(m.mean[0], 0.1);  // not a sum's rounding of it
    EXPECT_DOUBLE_EQ(m.se[0], std::sqrt(2 * 0.25 / 7 / 8));
    EXPECT_EQ(m.pseudo[1], 1.0);  // the range's width
    EXPECT_NEAR(m.se[1], std::sqrt((2.0 + 2.0) / 7 / 8), 1e-15);
    const PointMoments one = point_moments(v, 3, 4);
    EXPECT_EQ(one.mean[1], 1.0);
    EXPECT_TRUE(std::isnan(one.se[0]));
}

TEST(SimultaneousBand, ResamplesAreTheirDefinitionAndUniform) {
    const int B = 300, U = 51;
    const Resamples draws(42, B, U);
    std::vector<double> per_unit(U, 0.0);
    for (int b = 0; b < B; ++b) {
        std::vector<double> counts(U, 0.0);
        for (int j = 0; j < U; ++j)
            counts[resampled_unit(42, b, U, j)] += 1;
        double total = 0;
        for (int u = 0; u < U; ++u) {
            ASSERT_EQ(draws.at(b, u), counts[u]);
            total += counts[u];
            per_unit[u] += counts[u];
        }
        ASSERT_EQ(total, U);
    }
    // Each unit is drawn B times on average, with variance B(1 − 1/U).
    double worst = 0;
    for (double c : per_unit)
        worst = std::max(worst, std::fabs(c - B) / std::sqrt(B * (1 - 1.0 / U)));
    std::printf("resampled counts: largest |count − B| / sd over units %.2f\n", worst);
    EXPECT_LT(worst, 4.5);
    EXPECT_NE(resampled_unit(42, 0, U, 0) * 1000 + resampled_unit(42, 0, U, 1),
              resampled_unit(43, 0, U, 0) * 1000 + resampled_unit(43, 0, U, 1));
}

// The bootstrap-t as its definition reads — resample the units, recompute mean and standard
// error (with the pseudo-units), take the maximum over points, sort: the test's own reference.
CriticalValues naive_bootstrap(const UnitValues& v, int first, int last, std::uint64_t seed,
                               int replicates) {
    const int U = last - first;
    std::vector<int> all(U);
    for (int u = 0; u < U; ++u)
        all[u] = first + u;
    auto mean_of_units = [&](const std::vector<int>& units, int p) {
        double s = 0;
        for (int u : units)
            s += v.at(u, p);
        return s / U;
    };
    // The pseudo-units sit at the ends of each point's range.
    std::vector<double> pseudo(v.points);
    for (int p = 0; p < v.points; ++p)
        pseudo[p] = v.width_at(p);
    auto moments = [&](const std::vector<int>& units, int p) {
        const double mean = mean_of_units(units, p);
        double q = 0;
        for (int u : units)
            q += (v.at(u, p) - mean) * (v.at(u, p) - mean);
        return std::pair{mean, std::sqrt((q + 2 * pseudo[p] * pseudo[p]) / (U - 1) / U)};
    };
    std::vector<double> high(replicates), low(replicates);
    for (int b = 0; b < replicates; ++b) {
        std::vector<int> drawn(U);
        for (int j = 0; j < U; ++j)
            drawn[j] = first + resampled_unit(seed, b, U, j);
        double hi = -1e300, lo = -1e300;
        for (int p = 0; p < v.points; ++p) {
            const double mean = moments(all, p).first;
            const auto [star, se] = moments(drawn, p);
            hi = std::max(hi, (star - mean) / se);
            lo = std::max(lo, (mean - star) / se);
        }
        high[b] = hi;
        low[b] = lo;
    }
    std::sort(high.begin(), high.end());
    std::sort(low.begin(), low.end());
    const int k = static_cast<int>(std::ceil(0.95 * replicates)) - 1;
    return {high[k], low[k]};
}

TEST(SimultaneousBand, FastProductsEqualPlainLoopAndNaiveBootstrapForAnyThreads) {
    const UnitValues v = ar1_units(45, 300, 0.9, 0.5, 0.2, 5);
    const std::vector<char> tested(300, 1);
    for (auto [first, last] : {std::pair{0, 45}, std::pair{0, 22}, std::pair{22, 45}}) {
        const Resamples draws(9, 400, last - first);
        const PointMoments m = point_moments(v, first, last);
        const CriticalValues fast =
            bootstrap_critical_values(v, m, tested, draws, first, last, 0.05, 1);
        const CriticalValues two =
            bootstrap_critical_values(v, m, tested, draws, first, last, 0.05, 2);
        const CriticalValues plain =
            bootstrap_critical_values_plain(v, m, tested, draws, first, last, 0.05);
        const CriticalValues naive = naive_bootstrap(v, first, last, 9, 400);
        const double largest = std::max({std::fabs(fast.upper_side - plain.upper_side),
                                         std::fabs(fast.lower_side - plain.lower_side),
                                         std::fabs(fast.upper_side - naive.upper_side),
                                         std::fabs(fast.lower_side - naive.lower_side)});
        std::printf("units [%d, %d): c_up %.6f c_lo %.6f, largest difference %.3g\n", first, last,
                    fast.upper_side, fast.lower_side, largest);
        EXPECT_LT(largest, 1e-9);
        EXPECT_EQ(fast.upper_side, two.upper_side);  // the same bits on two threads
        EXPECT_EQ(fast.lower_side, two.lower_side);
        // With strongly correlated points the band is far narrower than Bonferroni's.
        const double bonferroni = 3.4;  // Φ⁻¹(1 − 0.05/300) ≈ 3.40
        EXPECT_GT(fast.upper_side, 1.2);
        EXPECT_LT(fast.upper_side, bonferroni + 0.6);
    }
}

// The screened critical value stops early only with a lower bound of the exact one that
// clears, and otherwise returns the exact value's bits; a threshold far below c stops after the
// first pass of replicates.
TEST(SimultaneousBand, ScreenedCriticalIsALowerBoundThatClearsOrTheExactValue) {
    const UnitValues v = ar1_units(60, 300, 0.9, 0.5, 0.2, 8);
    const std::vector<char> tested(300, 1);
    const Resamples draws(4, 2000, 60);
    const PointMoments m = point_moments(v);
    const CriticalValues exact = bootstrap_critical_values(v, m, tested, draws, 0, 60, 0.05, 2);
    const double plain =
        bootstrap_critical_values_plain(v, m, tested, draws, 0, 60, 0.05).upper_side;
    int early = 0;
    double largest = std::fabs(exact.upper_side - plain);
    for (double share : {0.3, 0.8, 0.97, 0.999, 1.0, 1.01, 1.5}) {
        const double threshold = share * plain;
        int calls = 0;
        const UpperCritical c =
            bootstrap_upper_critical(v, m, tested, draws, 0, 60, 0.05, 2, [&](double critical) {
                ++calls;
                return critical >= threshold;
            });
        if (c.exact) {
            EXPECT_EQ(c.value, exact.upper_side) << "share " << share;
            EXPECT_EQ(c.lower_side, exact.lower_side);
        } else {
            early += 1;
            EXPECT_GE(c.value, threshold) << "share " << share;
            EXPECT_LE(c.value, plain + 1e-9) << "a lower bound of c, share " << share;
        }
        if (share > 1.0) {
            EXPECT_TRUE(c.exact) << "no lower bound of c reaches " << share << " c";
        }
        if (share <= 0.3) {
            EXPECT_EQ(calls, 1) << "cleared after the first pass";
        }
        std::printf("threshold %.4f c: %s, %.6f after %d screens\n", share,
                    c.exact ? "exact" : "lower bound", c.value, calls);
    }
    EXPECT_GE(early, 2);
    std::printf("c %.6f, largest difference from the plain loop %.3g\n", plain, largest);
    EXPECT_LT(largest, 1e-9);
}

TEST(SimultaneousBand, UntestedPointsAreLeftOut) {
    UnitValues v = ar1_units(40, 20, 0.0, 0.0, 1.0, 3);
    for (int u = 0; u < 40; ++u)
        v.values[static_cast<std::size_t>(u) * 20 + 7] = u == 0 ? 1e6 : 0.0;  // one wild unit
    std::vector<char> tested(20, 1);
    const Resamples g(1, 300, 40);
    const PointMoments m = point_moments(v);
    const CriticalValues with = bootstrap_critical_values(v, m, tested, g, 0, 40, 0.05, 1);
    tested[7] = 0;
    const CriticalValues without = bootstrap_critical_values(v, m, tested, g, 0, 40, 0.05, 1);
    tested.assign(20, 0);
    const CriticalValues none = bootstrap_critical_values(v, m, tested, g, 0, 40, 0.05, 1);
    // The wild unit moves the resampled maxima at its point: one side's band changes.
    EXPECT_TRUE(with.upper_side != without.upper_side || with.lower_side != without.lower_side);
    EXPECT_TRUE(std::isnan(none.upper_side));
}

// The share of R repetitions in which some point's lower band lies above the truth (the upper
// side's "falsified somewhere" with the bound on the mean), and the same for the Binomial
// allowance of the withdrawn verdict (violations of per-point 95 % intervals beyond the 95 %
// quantile of Binomial(M, 0.025)).
struct FalseAlarms {
    double band = 0, allowance = 0;
};
FalseAlarms false_alarms(int repetitions, int units, int points, double rho, int replicates) {
    const std::vector<char> tested(points, 1);
    int band = 0, allowance = 0;
    // 95 % quantile of Binomial(points, 0.025), counted up.
    int allowed = 0;
    {
        double cdf = 0, pmf = std::pow(0.975, points);
        for (int k = 0;; ++k) {
            cdf += pmf;
            if (cdf >= 0.95) {
                allowed = k;
                break;
            }
            pmf *= (points - k) / (k + 1.0) * 0.025 / 0.975;
        }
    }
    const boost::math::students_t_distribution<double> t(units - 1);
    const double half_width = boost::math::quantile(t, 0.975);
    for (int r = 0; r < repetitions; ++r) {
        const UnitValues v = ar1_units(units, points, rho, 0.0, 1.0, 1000 + r);
        const PointMoments m = point_moments(v);
        const Resamples g(77 + r, replicates, units);
        const CriticalValues c = bootstrap_critical_values(v, m, tested, g, 0, units, 0.05, 1);
        bool falsified = false;
        int violations = 0;
        for (int p = 0; p < points; ++p) {
            falsified = falsified || m.mean[p] - c.upper_side * m.se[p] > 0;
            violations += m.mean[p] - half_width * m.se[p] > 0;
        }
        band += falsified;
        allowance += violations > allowed;
    }
    return {static_cast<double>(band) / repetitions, static_cast<double>(allowance) / repetitions};
}

TEST(SimultaneousBand, CalibratedUnderStrongCorrelationWhereTheAllowanceIsNot) {
    const int repetitions = 400;
    const FalseAlarms f = false_alarms(repetitions, 60, 200, 0.98, 500);
    const double sampling = 2 * std::sqrt(0.05 * 0.95 / repetitions);
    std::printf(
        "truth on the bound, AR(1) rho 0.98, 200 points, 60 units, %d repetitions: band "
        "falsifies in %.3f, the Binomial allowance in %.3f\n",
        repetitions, f.band, f.allowance);
    EXPECT_LE(f.band, 0.05 + sampling);
    EXPECT_GE(f.band, 0.01);  // a max statistic, not a Bonferroni bound: close to the level
    EXPECT_GT(f.allowance, 0.10);
}

TEST(SimultaneousBand, HolmMatchesHandComputedStepsAndStopsAtTheFirstFailure) {
    // p-values of t on 9 df: t = 5 → 3.7e-4, t = 3.5 → 3.4e-3, t = 2.9 → 8.8e-3, t = 1 → 0.17.
    const std::vector<double> t = {1.0, 5.0, 2.9, 3.5, std::nan(""), -2.0};
    const std::vector<char> tested = {1, 1, 1, 1, 1, 1};
    const boost::math::students_t_distribution<double> student(9);
    auto p = [&](double x) { return boost::math::cdf(boost::math::complement(student, x)); };
    // m = 6: 3.7e-4 ≤ 0.05/6; 3.4e-3 ≤ 0.05/5; 8.8e-3 ≤ 0.05/4 = 0.0125; 0.17 > 0.05/3: stop.
    ASSERT_LT(p(2.9), 0.05 / 4);
    ASSERT_GT(p(1.0), 0.05 / 3);
    const std::vector<char> rejected = holm_rejections(t, tested, 9, 0.05);
    EXPECT_EQ(rejected, (std::vector<char>{0, 1, 1, 1, 0, 0}));
    EXPECT_NEAR(holm_first_critical(6, 9, 0.05), boost::math::quantile(student, 1 - 0.05 / 6),
                1e-12);
    // A point left out does not count in m.
    std::vector<char> fewer = tested;
    fewer[1] = 0;
    EXPECT_EQ(holm_rejections(t, fewer, 9, 0.05)[1], 0);
}

// The procedure over the full order (every tested t sorted, stable), as before the candidates'
// prefix: the reference the ordered prefix must reproduce point for point.
std::vector<char> holm_over_full_order(const std::vector<double>& t,
                                       const std::vector<char>& tested, int df,
                                       double family_error) {
    const boost::math::students_t_distribution<double> student(df);
    std::vector<std::pair<double, std::size_t>> order;
    std::size_t m = 0;
    for (std::size_t p = 0; p < t.size(); ++p) {
        if (!tested[p]) continue;
        m += 1;
        if (!std::isnan(t[p])) order.emplace_back(t[p], p);
    }
    std::stable_sort(order.begin(), order.end(),
                     [](const auto& a, const auto& b) { return a.first > b.first; });
    std::vector<char> rejected(t.size(), 0);
    for (std::size_t i = 0; i < order.size(); ++i) {
        const double x = order[i].first;
        const double p_value = std::isinf(x)
                                   ? (x > 0 ? 0.0 : 1.0)
                                   : boost::math::cdf(boost::math::complement(student, x));
        if (p_value > family_error / static_cast<double>(m - i)) break;
        rejected[order[i].second] = 1;
    }
    return rejected;
}

TEST(SimultaneousBand, HolmEqualsTheProcedureOverTheFullOrder) {
    std::mt19937_64 rng(20261206);
    std::normal_distribution<double> normal(0, 1);
    int cases = 0, with_rejections = 0, differing_points = 0;
    for (int df : {1, 2, 5, 30})
        for (double family_error : {0.05, 0.5, 0.9, 1.0})
            for (int repetition = 0; repetition < 20; ++repetition) {
                const boost::math::students_t_distribution<double> student(df);
                const std::size_t points = repetition % 2 ? 7 : 3000;
                std::vector<double> t(points);
                std::vector<char> tested(points, 1);
                for (std::size_t p = 0; p < points; ++p) {
                    // Many t at the quantiles the steps compare with, ties, and the odd inf/NaN.
                    const double level = family_error / (1 + static_cast<double>(p % 50));
                    t[p] = level < 1 && level > 0 && p % 3 == 0
                               ? boost::math::quantile(boost::math::complement(student, level))
                               : 4 * normal(rng) + (p % 7 == 0 ? 8 : 0);
                    if (p % 97 == 0)
                        t[p] = p % 2 ? std::numeric_limits<double>::infinity() : std::nan("");
                    if (p % 89 == 0) t[p] = -std::numeric_limits<double>::infinity();
                    if (p % 11 == 0) tested[p] = 0;
                }
                const auto ours = holm_rejections(t, tested, df, family_error);
                const auto reference = holm_over_full_order(t, tested, df, family_error);
                for (std::size_t p = 0; p < points; ++p)
                    differing_points += ours[p] != reference[p];
                EXPECT_EQ(ours, reference) << "df " << df << " level " << family_error;
                with_rejections += std::count(ours.begin(), ours.end(), 1) > 0;
                ++cases;
            }
    std::printf("Holm: %d cases (%d with rejections), %d points differ from the full order\n",
                cases, with_rejections, differing_points);
    EXPECT_GT(with_rejections, cases / 2);
}

TEST(SimultaneousBand, HolmIsCalibratedWithFewUnits) {
    const int repetitions = 600, units = 8, points = 40;
    const std::vector<char> tested(points, 1);
    int falsified = 0;
    for (int r = 0; r < repetitions; ++r) {
        const UnitValues v = ar1_units(units, points, 0.5, 0.0, 1.0, 5000 + r);
        const PointMoments m = point_moments(v);
        std::vector<double> t(points);
        for (int p = 0; p < points; ++p)
            t[p] = m.mean[p] / m.se[p];
        const std::vector<char> rejected = holm_rejections(t, tested, units - 1, 0.05);
        falsified += std::count(rejected.begin(), rejected.end(), 1) > 0;
    }
    const double rate = static_cast<double>(falsified) / repetitions;
    std::printf("Holm, 8 units, 40 points: false-alarm rate %.3f\n", rate);
    EXPECT_LE(rate, 0.05 + 2 * std::sqrt(0.05 * 0.95 / repetitions));
}

TEST(SimultaneousBand, MethodsByUnitCount) {
    EXPECT_EQ(band_method_for(1), BandMethod::none);
    EXPECT_EQ(band_method_for(2), BandMethod::holm);
    EXPECT_EQ(band_method_for(29), BandMethod::holm);
    EXPECT_EQ(band_method_for(30), BandMethod::bootstrap);
    EXPECT_STREQ(to_string(BandMethod::bootstrap), "bootstrap-t");
}

}  // namespace
}  // namespace attngeo::compare
