// Tests of the κ scan by test inversion (compare/falsification) on samples whose bounds are
// simple functions of κ, so every state, κ set, κ_edge and split answer is known in advance:
// a ray of consistent κ, a side falsified at every κ with its persistent points named, identity
// contradictions set apart from chance, a given κ, split replication that holds and one that
// does not, the intersection of two samples, the exact method; every scan row recounted by a
// plain loop over the band.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "common/splitmix64.hpp"
#include "compare/falsification.hpp"
#include "compare/fixed_bound_sample.hpp"

namespace attngeo::compare {
namespace {

constexpr int kPoints = 50;

// M points N = 2..51 of n = 1000 tokens (no convention, no identity), or with N = 1 first.
ScanPoints points_of(int count, bool with_identity = false) {
    ScanPoints p;
    for (int i = 0; i < count; ++i) {
        const int N = with_identity ? i + 1 : i + 2;
        p.facts.push_back({N, 1000, false});
        p.regime.push_back(0);
    }
    return p;
}

// U units × M points: `mean` plus independent noise of sd `sd`; unit u's mean shifted by
// `second_shift` in the second half.
UnitValues noisy(int units, int points, double mean, double sd, std::uint64_t seed,
                 double second_shift = 0) {
    SplitMix64 rng(seed);
    UnitValues v;
    v.units = units;
    v.points = points;
    for (int u = 0; u < units; ++u)
        for (int p = 0; p < points; ++p) {
            const double r = std::sqrt(-2 * std::log(rng.open_uniform()));
            const double z = r * std::cos(6.283185307179586 * rng.open_uniform());
            v.values.push_back(mean + (u >= units / 2 ? second_shift : 0) + sd * z);
        }
    return v;
}

// Bounds: P upper from `p_upper(κ, point)`, the rest trivial (P lower 0, R lower 0, R upper 1).
template <class Upper>
BoundEvaluator bounds_from(int points, Upper p_upper) {
    return [points, p_upper](const std::vector<double>& kappas) {
        std::vector<PointBounds> out;
        for (double kappa : kappas) {
            PointBounds b;
            for (int p = 0; p < points; ++p) {
                b.P_lower.push_back(0);
                b.P_upper.push_back(p_upper(kappa, p));
                b.R_lower.push_back(0);
                b.R_upper.push_back(1);
            }
            out.push_back(b);
        }
        return out;
    };
}

double ray_bound(double kappa) {
    return std::clamp(0.55 + 0.05 * std::log10(kappa), 0.0, 1.0);
}

Sample ray_sample(const UnitValues& P, int points, std::uint64_t seed = 3) {
    const UnitValues R = noisy(P.units, points, 0.5, 0.05, seed + 100);
    ScanPoints pts = points_of(points);
    BandSettings settings;
    settings.replicates = 500;
    settings.seed = seed;
    return fixed_bound_sample(pts, unit_bands(P, R, tested_points(pts.facts), settings),
                              bounds_from(points, [](double k, int) { return ray_bound(k); }));
}

constexpr int kPUpper = 1;

TEST(Falsification, AnUpperSideHoldsOnARayOfKappaEndingWhereTheBandMeetsIt) {
    const UnitValues P = noisy(200, kPoints, 0.6, 0.05, 1);
    const Sample sample = ray_sample(P, kPoints);
    const ScanResult r = scan_kappa({sample}, std::nullopt);
    const SideVerdict& v = r.samples[0].sides[kPUpper];
    // The smallest fine-grid κ where the bound reaches max_p (m̂_p − c·se_p), from the band.
    const auto bands = unit_bands(P, noisy(200, kPoints, 0.5, 0.05, 103),
                                  tested_points(points_of(kPoints).facts), [] {
                                      BandSettings s;
                                      s.replicates = 500;
                                      s.seed = 3;
                                      return s;
                                  }());
    const MetricBand& band = bands[all_units].P;
    double lowest_band = -1;
    for (int p = 0; p < kPoints; ++p)
        lowest_band = std::max(
            lowest_band, band.moments.mean[p] - band.critical.upper_side * band.moments.se[p]);
    double expected = 0;
    for (int i = 0; i <= 640; ++i) {
        const double kappa = std::pow(10.0, -8 + i * 0.025);
        if (ray_bound(kappa) >= lowest_band - 1e-12) {
            expected = kappa;
            break;
        }
    }
    std::printf("P upper: state %s, set %s, kappa_edge %.6g (expected %.6g), c %.4f\n",
                to_string(v.state), kappa_set_text(v.kappa_set).c_str(), v.kappa_edge, expected,
                band.critical.upper_side);
    EXPECT_EQ(v.state, SideState::holds);
    ASSERT_EQ(v.kappa_set.size(), 1u);
    EXPECT_TRUE(v.kappa_set[0].open_above);
    EXPECT_DOUBLE_EQ(v.kappa_set[0].low, expected);
    EXPECT_DOUBLE_EQ(v.kappa_edge, expected);
    EXPECT_EQ(v.at_judged.falsified_points, 0);
    EXPECT_EQ(v.band_method, BandMethod::bootstrap);
    EXPECT_EQ(v.informative_points, kPoints);
    EXPECT_EQ(v.replicates, 1);
    // The trivial sides hold and say nothing.
    EXPECT_EQ(r.samples[0].sides[0].state, SideState::holds_uninformative);
    EXPECT_EQ(r.samples[0].sides[3].state, SideState::holds_uninformative);
    EXPECT_TRUE(r.samples[0].sides[0].kappa_free);
}

TEST(Falsification, ScanRowsRecountFromTheBandByAPlainLoop) {
    const UnitValues P = noisy(200, kPoints, 0.6, 0.05, 1);
    const UnitValues R = noisy(200, kPoints, 0.5, 0.05, 103);
    const Sample sample = ray_sample(P, kPoints);
    const ScanResult r = scan_kappa({sample}, std::nullopt);
    BandSettings s;
    s.replicates = 500;
    s.seed = 3;
    const auto bands = unit_bands(P, R, tested_points(points_of(kPoints).facts), s);
    const MetricBand& band = bands[all_units].P;
    double largest_z = 0;
    int mismatches = 0;
    for (const ScanRow& row : r.samples[0].sides[kPUpper].scan) {
        const double b = ray_bound(row.kappa);
        int falsified = 0;
        double max_z = -HUGE_VAL, gap = 0;
        for (int p = 0; p < kPoints; ++p) {
            const double m = band.moments.mean[p], se = band.moments.se[p];
            falsified += m - band.critical.upper_side * se > b + 1e-12;
            max_z = std::max(max_z, (m - b) / se);
            gap += b - m;
        }
        mismatches += falsified != row.falsified_points;
        largest_z = std::max(
            {largest_z, std::fabs(max_z - row.max_z), std::fabs(gap / kPoints - row.mean_gap)});
    }
    std::printf("%zu rows recounted: %d count mismatches, largest max_z/gap difference %.3g\n",
                r.samples[0].sides[kPUpper].scan.size(), mismatches, largest_z);
    EXPECT_EQ(mismatches, 0);
    EXPECT_LT(largest_z, 1e-9);
}

TEST(Falsification, ABoundBelowTheMeasurementAtEveryKappaIsFalsifiedThereAndNamed) {
    const UnitValues P = noisy(200, kPoints, 0.6, 0.05, 7);
    const UnitValues R = noisy(200, kPoints, 0.5, 0.05, 8);
    ScanPoints pts = points_of(kPoints);
    BandSettings s;
    s.replicates = 500;
    auto bands = unit_bands(P, R, tested_points(pts.facts), s);
    // Points 3 and 4 sit at 0.5 whatever κ (0.55 at 4, so 3 is worst); the others move with κ.
    auto upper = [](double kappa, int p) {
        if (p == 3) return 0.5;
        if (p == 4) return 0.55;
        return ray_bound(kappa);
    };
    const ScanResult r =
        scan_kappa({fixed_bound_sample(pts, bands, bounds_from(kPoints, upper))}, std::nullopt);
    const SideVerdict& v = r.samples[0].sides[kPUpper];
    EXPECT_EQ(v.state, SideState::falsified_every_kappa);
    EXPECT_TRUE(v.kappa_set.empty());
    EXPECT_EQ(kappa_set_text(v.kappa_set), "none");
    EXPECT_TRUE(std::isnan(v.kappa_edge));
    EXPECT_EQ(v.persistent, (std::vector<int>{3, 4}));
    EXPECT_EQ(v.worst.point, 3);
    EXPECT_EQ(v.worst.N, 5);
    EXPECT_GT(v.worst.z, 10);
    EXPECT_NEAR(v.worst.excess, bands[all_units].P.moments.mean[3] - 0.5, 1e-12);
    // Judged where the fewest points are falsified: only 3 and 4.
    EXPECT_EQ(v.at_judged.falsified_points, 2);
    EXPECT_EQ(v.replicates, 1);  // both halves find it falsified too

    // The same bound with no κ-dependence anywhere is κ-free falsified.
    const ScanResult flat = scan_kappa(
        {fixed_bound_sample(
            pts, bands, bounds_from(kPoints, [](double, int p) { return p == 3 ? 0.5 : 0.9; }))},
        std::nullopt);
    EXPECT_EQ(flat.samples[0].sides[kPUpper].state, SideState::kappa_free_falsified);
}

TEST(Falsification, IdentityContradictionsAreDeterministicNotChance) {
    // Point 0 is N = 1: P(r_max,1) = 1 in every unit. An upper bound of 0.93 there contradicts it
    // at every κ, whatever the data say elsewhere (and the data hold elsewhere).
    ScanPoints pts = points_of(kPoints, true);
    UnitValues P = noisy(100, kPoints, 0.6, 0.05, 2);
    for (int u = 0; u < P.units; ++u)
        P.values[static_cast<std::size_t>(u) * kPoints] = 1.0;
    const UnitValues R = noisy(100, kPoints, 0.5, 0.05, 4);
    BandSettings s;
    s.replicates = 300;
    const auto bands = unit_bands(P, R, tested_points(pts.facts), s);
    auto upper = [](double, int p) { return p == 0 ? 0.93 : 0.9; };
    ScanResult r =
        scan_kappa({fixed_bound_sample(pts, bands, bounds_from(kPoints, upper))}, std::nullopt);
    const SideVerdict& v = r.samples[0].sides[kPUpper];
    EXPECT_EQ(v.state, SideState::contradicted_by_construction);
    EXPECT_EQ(v.at_judged.contradicted_points, 1);
    EXPECT_EQ(v.at_judged.falsified_points, 0);  // the identity point is never tested
    EXPECT_EQ(v.identity_points, 1);
    EXPECT_TRUE(std::isnan(r.samples[0].points.z[kPUpper][0]));
    EXPECT_EQ(r.samples[0].points.contradicted[kPUpper][0], 1);
    // Where the bound reaches 1 at N = 1 for large κ, those κ are consistent: the side holds there.
    auto reaching = [](double kappa, int p) { return p == 0 ? (kappa >= 1e4 ? 1.0 : 0.93) : 0.9; };
    r = scan_kappa({fixed_bound_sample(pts, bands, bounds_from(kPoints, reaching))}, std::nullopt);
    EXPECT_EQ(r.samples[0].sides[kPUpper].state, SideState::holds);
    EXPECT_EQ(kappa_set_text(r.samples[0].sides[kPUpper].kappa_set), ">=1e+04");
    // …and the κ where the formula contradicts the identity are still named.
    EXPECT_EQ(kappa_set_text(r.samples[0].sides[kPUpper].contradiction_set), "<=9.44e+03");
    EXPECT_EQ(r.samples[0].sides[kPUpper].contradicted_most, 1);
}

TEST(Falsification, AGivenKappaIsJudgedAloneWithTheSetStillScanned) {
    const UnitValues P = noisy(200, kPoints, 0.6, 0.05, 1);
    const Sample sample = ray_sample(P, kPoints);
    const ScanResult low = scan_kappa({sample}, 0.01);
    EXPECT_EQ(low.samples[0].sides[kPUpper].state, SideState::falsified_at_given_kappa);
    EXPECT_EQ(low.samples[0].sides[kPUpper].kappa_judged, 0.01);
    EXPECT_FALSE(low.samples[0].sides[kPUpper].kappa_set.empty());
    EXPECT_EQ(low.samples[0].rows_kappa, 0.01);
    const ScanResult high = scan_kappa({sample}, 1e5);
    EXPECT_EQ(high.samples[0].sides[kPUpper].state, SideState::holds);
}

TEST(Falsification, ASplitWhoseHalvesDisagreeDoesNotReplicate) {
    // The first half measures 0.55, the second 0.65, and the bound is 0.6 at every κ: the first
    // half holds it, the second falsifies it everywhere.
    const UnitValues P = noisy(200, kPoints, 0.55, 0.05, 9, 0.1);
    const UnitValues R = noisy(200, kPoints, 0.5, 0.05, 10);
    ScanPoints pts = points_of(kPoints);
    BandSettings s;
    s.replicates = 500;
    const Sample sample = fixed_bound_sample(
        pts, unit_bands(P, R, tested_points(pts.facts), s), bounds_from(kPoints, [](double k, int) {
            return 0.6 + 1e-3 * std::log10(k);  // nearly κ-free
        }));
    const ScanResult r = scan_kappa({sample}, std::nullopt);
    const SideVerdict& v = r.samples[0].sides[kPUpper];
    EXPECT_TRUE(v.split);
    EXPECT_FALSE(v.first_half_empty);
    EXPECT_TRUE(v.falsified_on_second_half);
    EXPECT_LT(v.gap_on_second_half, 0);
    EXPECT_EQ(v.replicates, 0);
    // Over the whole the mean, 0.6, sits on the bound: the band holds it.
    EXPECT_TRUE(v.state == SideState::holds || v.state == SideState::falsified_every_kappa);
}

TEST(Falsification, SamplesIntersectTheirSets) {
    const Sample a = ray_sample(noisy(200, kPoints, 0.6, 0.05, 1), kPoints);  // κ ≥ ~6
    const Sample b = ray_sample(noisy(200, kPoints, 0.7, 0.05, 2), kPoints);  // κ ≥ ~600
    const ScanResult r = scan_kappa({a, b}, std::nullopt);
    const JointSide& j = r.joint.sides[kPUpper];
    ASSERT_EQ(j.kappa_set.size(), 1u);
    EXPECT_DOUBLE_EQ(j.kappa_set[0].low, r.samples[1].sides[kPUpper].kappa_set[0].low);
    EXPECT_DOUBLE_EQ(j.kappa_edge, r.samples[1].sides[kPUpper].kappa_edge);
    EXPECT_EQ(j.consistent_samples, (std::vector<int>{0, 1}));
    // A sample whose bound never reaches its measurement leaves the intersection empty.
    ScanPoints pts = points_of(kPoints);
    BandSettings s;
    s.replicates = 300;
    const Sample never = fixed_bound_sample(
        pts,
        unit_bands(noisy(200, kPoints, 0.6, 0.05, 5), noisy(200, kPoints, 0.5, 0.05, 6),
                   tested_points(pts.facts), s),
        bounds_from(kPoints, [](double k, int) { return k < 1 ? 0.9 : 0.3; }));
    const ScanResult disjoint = scan_kappa({b, never}, std::nullopt);
    EXPECT_TRUE(disjoint.joint.sides[kPUpper].kappa_set.empty());
    EXPECT_TRUE(std::isnan(disjoint.joint.sides[kPUpper].kappa_edge));
}

TEST(Falsification, ExactValuesAreFalsifiedWhenBeyondAtAllAndNotSplit) {
    ScanPoints pts = points_of(4);
    const std::vector<double> P = {0.9, 0.8, 0.7, 0.6}, R = {0.5, 0.5, 0.5, 0.5};
    const Sample sample = fixed_bound_sample(
        pts, exact_bands(P, R),
        bounds_from(4, [](double, int p) { return p == 2 ? 0.7 - 1e-9 : 0.95; }));
    EXPECT_FALSE(sample.split);
    const ScanResult r = scan_kappa({sample}, std::nullopt);
    const SideVerdict& v = r.samples[0].sides[kPUpper];
    EXPECT_EQ(v.state, SideState::kappa_free_falsified);
    EXPECT_EQ(v.band_method, BandMethod::exact);
    EXPECT_EQ(v.persistent, (std::vector<int>{2}));
    EXPECT_EQ(v.replicates, -1);
    EXPECT_TRUE(std::isinf(v.worst.z));
}

TEST(Falsification, FewUnitsUseHolmAndOneUnitIsUntestable) {
    const UnitValues P = noisy(20, kPoints, 0.6, 0.05, 1);
    const Sample sample = ray_sample(P, kPoints);
    const ScanResult r = scan_kappa({sample}, std::nullopt);
    EXPECT_EQ(r.samples[0].sides[kPUpper].band_method, BandMethod::holm);
    EXPECT_EQ(r.samples[0].sides[kPUpper].state, SideState::holds);
    EXPECT_TRUE(r.samples[0].sides[kPUpper].split);  // halves of 10 still test with Holm
    const ScanResult one =
        scan_kappa({ray_sample(noisy(1, kPoints, 0.6, 0.05, 1), kPoints)}, std::nullopt);
    EXPECT_EQ(one.samples[0].sides[kPUpper].state, SideState::untestable);
}

TEST(Falsification, InformationShareIsTheTrivialRangeRuledOut) {
    ScanPoints pts;
    pts.facts = {{10, 100, false}, {1, 100, false}, {100, 100, true}};  // one ordinary point
    pts.regime = {0, 0, 0};
    auto evaluate = [](const std::vector<double>& kappas) {
        std::vector<PointBounds> out;
        for (std::size_t k = 0; k < kappas.size(); ++k)
            out.push_back({{0.2, 0.0, 1}, {0.8, 1.0, 1}, {0.1, 0.0, 1}, {0.6, 1.0, 1}});
        return out;
    };
    const ScanResult r = scan_kappa(
        {fixed_bound_sample(pts, exact_bands({0.5, 1, 1}, {0.3, 1, 1}), evaluate)}, std::nullopt);
    const KappaScan& s = r.samples[0];
    // P: [max(0.2, 0.1), 0.8] of [0.1, 1]; R: [0.1, 0.6] of [0, 1].
    EXPECT_NEAR(s.information_share_P, 1 - 0.6 / 0.9, 1e-12);
    EXPECT_NEAR(s.information_share_R, 1 - 0.5, 1e-12);
    EXPECT_NEAR(s.information_share, (1 - 0.6 / 0.9 + 0.5) / 2, 1e-12);
    EXPECT_EQ(s.sides[0].points, 2);
    EXPECT_EQ(s.sides[0].convention_points, 1);
}

}  // namespace
}  // namespace attngeo::compare
