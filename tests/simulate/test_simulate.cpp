// Tests for simulate/: the RNG and normal transform, the generator's covariance and sink
// construction, exact and thread-independent sums, sharding, the d → ∞ limit against a plain
// reference, convergence of large-d Monte Carlo to it, confidence-interval coverage, and
// Table 1 (table1.csv of a sweep) against theory's sensitivities and their central differences.
#include <gtest/gtest.h>

#include <algorithm>
#include <boost/math/distributions/normal.hpp>
#include <cmath>
#include <cstring>
#include <iostream>
#include <limits>
#include <numeric>
#include <random>
#include <set>
#include <sstream>

#include "common/csv.hpp"
#include "common/errors.hpp"
#include "common/exact_sums.hpp"
#include "common/format.hpp"
#include "common/safetensors.hpp"
#include "compare/estimate_envelopes.hpp"
#include "compare/table1.hpp"
#include "simulate/generator.hpp"
#include "simulate/montecarlo.hpp"
#include "simulate/rng.hpp"
#include "simulate/run.hpp"
#include "tests/support/sensitivity_reference.hpp"
#include "tests/support/test_files.hpp"
#include "tests/support/tiny_run.hpp"
#include "theory/parametric.hpp"

using namespace attngeo;
using namespace attngeo::simulate;
using namespace attngeo::compare;

namespace {

// A small Assumption-3 head without ties in α (zipf profile) unless asked otherwise.
SimulationSpec small_spec(int L, int d, const std::string& profile = "zipf:1.1") {
    SimulationSpec spec;
    spec.model.profile.L = L;
    spec.model.profile.T1 = L / 8;
    spec.model.profile.T2 = L * 3 / 4;
    spec.model.profile_kind = theory::parse_profile_spec(profile);
    spec.model.beta = 0.2;
    spec.d = d;
    for (int N = 1; N <= L + 1; ++N)
        spec.sizes.push_back(N);
    spec.all_sizes = true;
    return spec;
}

double mean_of(const std::vector<double>& x) {
    return std::accumulate(x.begin(), x.end(), 0.0) / x.size();
}
double se_of(const std::vector<double>& x) {
    const double m = mean_of(x);
    double ss = 0;
    for (double v : x)
        ss += (v - m) * (v - m);
    return std::sqrt(ss / (x.size() - 1) / x.size());
}

using attngeo::test_support::tiny_run_config;  // n = 16, d = 8, 4 trials, N = powers of two

}  // namespace

TEST(Rng, SameKeySameStreamDifferentKeysDiffer) {
    RandomStream a(42, 3, 7), b(42, 3, 7), c(42, 3, 8), e(43, 3, 7);
    for (int i = 0; i < 100; ++i) {
        const auto x = a.next_u64();
        EXPECT_EQ(x, b.next_u64());
        EXPECT_NE(x, c.next_u64());
        EXPECT_NE(x, e.next_u64());
    }
}

TEST(Rng, ZigguratNormalMomentsAndTails) {
    RandomStream s(1, 0, 0);
    const int count = 2'000'000;
    double sum = 0, sum2 = 0, sum4 = 0;
    int beyond_r = 0, beyond_1 = 0;
    // The empirical CDF on a grid of 161 points in [−4, 4] (every layer's wedge lies between two
    // of them): each within 5 standard errors of Φ.
    std::vector<int> at_most(161, 0);
    for (int i = 0; i < count; ++i) {
        const double z = s.next_normal();
        const double cell = std::ceil((z + 4.0) * 20.0);  // first grid index t with z ≤ t
        for (int g = static_cast<int>(std::max(cell, 0.0)); g < 161; ++g)
            ++at_most[g];
        sum += z;
        sum2 += z * z;
        sum4 += z * z * z * z;
        beyond_r += std::abs(z) > 3.6541528853610088;  // the ziggurat's tail
        beyond_1 += z > 1.0;
    }
    const double mean = sum / count, var = sum2 / count - mean * mean, kurt = sum4 / count;
    std::cout << "normal: mean " << mean << " var " << var << " E z^4 " << kurt << "\n";
    EXPECT_NEAR(mean, 0, 5 * std::sqrt(1.0 / count));
    EXPECT_NEAR(var, 1, 5 * std::sqrt(2.0 / count));
    EXPECT_NEAR(kurt, 3, 5 * std::sqrt(96.0 / count));
    const boost::math::normal_distribution<double> normal;
    const double p_tail = 2 * boost::math::cdf(boost::math::complement(normal, 3.6541528853610088));
    const double p_one = boost::math::cdf(boost::math::complement(normal, 1.0));
    EXPECT_NEAR(beyond_r / double(count), p_tail, 5 * std::sqrt(p_tail / count));
    EXPECT_NEAR(beyond_1 / double(count), p_one, 5 * std::sqrt(p_one * (1 - p_one) / count));
    double worst_cdf = 0;  // in standard errors
    for (int g = 0; g < 161; ++g) {
        const double p = boost::math::cdf(normal, -4.0 + g / 20.0);
        const double error =
            std::abs(at_most[g] / double(count) - p) / std::sqrt(p * (1 - p) / count);
        worst_cdf = std::max(worst_cdf, error);
    }
    std::cout << "normal: largest empirical-CDF difference " << worst_cdf << " standard errors\n";
    EXPECT_LT(worst_cdf, 5.0);
    RandomStream u(2, 0, 0);
    double umin = 1, umax = 0;
    for (int i = 0; i < 100000; ++i) {
        const double x = u.next_open_uniform();
        umin = std::min(umin, x);
        umax = std::max(umax, x);
    }
    EXPECT_GT(umin, 0.0);
    EXPECT_LT(umax, 1.0);
}

TEST(Generator, SinkWeightsSolveTheCovarianceExactly) {
    // w = ρ0 K⁻¹1 from the tridiagonal formula must satisfy K w = ρ0·1 and τ² = 1 − ρ0² 1ᵀK⁻¹1.
    for (int L : {1, 2, 5, 40}) {
        const double beta = 0.3, r = std::exp(-beta), rho0 = 0.2;
        Eigen::MatrixXd K(L, L);
        for (int i = 0; i < L; ++i)
            for (int j = 0; j < L; ++j)
                K(i, j) = std::pow(r, std::abs(i - j));
        const Eigen::VectorXd inv1 = K.llt().solve(Eigen::VectorXd::Ones(L));
        EXPECT_NEAR(inv1.sum(), kms_inverse_sum(L, r), 1e-12) << L;
        EXPECT_NEAR(max_feasible_rho0(L, beta), 1 / std::sqrt(inv1.sum()), 1e-12);
        const Eigen::VectorXd expected_w = rho0 * inv1;
        // The generator's construction, checked through its realised covariance below; here the
        // closed form: ends 1/(1+r), inside (1−r)/(1+r).
        for (int i = 0; i < L; ++i) {
            const double closed =
                L == 1 ? 1.0 : (i == 0 || i == L - 1 ? 1 / (1 + r) : (1 - r) / (1 + r));
            EXPECT_NEAR(inv1[i], closed, 1e-12) << "L=" << L << " i=" << i;
        }
    }
}

TEST(Generator, DirectionsHaveTheRequestedCovariance) {
    // E⟨g_i, g_j⟩ = K_ij (Cov = K·I/d summed over d coordinates): check lags 1..8, the sink and
    // the variance, each within 3.5 standard errors over many trials.
    const int L = 40, d = 16, trials = 4000;
    GeneratorSettings g;
    g.d = d;
    g.beta = 0.1;
    g.rho0 = 0.15;
    g.norms = Eigen::VectorXd::Ones(L + 1);
    ASSERT_LT(g.rho0, max_feasible_rho0(L, g.beta));
    const ValueGenerator generator(g);
    std::vector<std::vector<double>> lag(9), sink, variance(1);
    sink.resize(1);
    theory::RowMatrix dirs;
    for (int t = 0; t < trials; ++t) {
        RandomStream s(5, 0, t);
        generator.draw_directions(s, dirs);
        for (int k = 1; k <= 8; ++k) {
            double total = 0;
            for (int i = 1; i + k <= L; ++i)
                total += dirs.row(i).dot(dirs.row(i + k));
            lag[k].push_back(total / (L - k));
        }
        double to_sink = 0, var = 0;
        for (int j = 1; j <= L; ++j) {
            to_sink += dirs.row(0).dot(dirs.row(j));
            var += dirs.row(j).squaredNorm();
        }
        sink[0].push_back(to_sink / L);
        variance[0].push_back(var / L + dirs.row(0).squaredNorm() * 0);  // non-sink variance
    }
    double worst = 0;
    for (int k = 1; k <= 8; ++k) {
        const double z = (mean_of(lag[k]) - std::exp(-g.beta * k)) / se_of(lag[k]);
        worst = std::max(worst, std::abs(z));
        EXPECT_LT(std::abs(z), 3.5) << "lag " << k << " mean " << mean_of(lag[k]);
    }
    const double z_sink = (mean_of(sink[0]) - g.rho0) / se_of(sink[0]);
    const double z_var = (mean_of(variance[0]) - 1.0) / se_of(variance[0]);
    std::cout << "largest |z| over lags " << worst << ", sink z " << z_sink << ", variance z "
              << z_var << "\n";
    EXPECT_LT(std::abs(z_sink), 3.5);
    EXPECT_LT(std::abs(z_var), 3.5);
}

TEST(Generator, NormalisedCosinesMatchTheirExpectation) {
    // After normalisation E cos = ρ·c(d, ρ); the simulator reports both. Check the formula's
    // limits and the realised mean cos by lag against it.
    EXPECT_NEAR(expected_normalized_cosine(0.5, 1), 2 / M_PI * std::asin(0.5), 1e-12);
    EXPECT_NEAR(expected_normalized_cosine(0.9, 100000), 0.9, 1e-5);
    EXPECT_EQ(expected_normalized_cosine(0, 7), 0);
    SimulationSpec spec = small_spec(64, 8, "assumption3");
    spec.sizes = {1, 2, 4};
    spec.all_sizes = false;
    const SimulationSums sums = run_trials(spec, 0, 3000, 2);
    for (int k = 1; k <= kRealisedLags; ++k) {
        const Estimate e = estimate(sums.realised.cos_by_lag[k - 1]);
        const double expected = expected_normalized_cosine(std::exp(-spec.model.beta * k), spec.d);
        EXPECT_LT(std::abs(e.mean - expected), 3.5 * e.se)
            << "lag " << k << ": " << e.mean << " vs " << expected;
    }
}

TEST(Generator, InfeasibleRho0NamesTheLargestFeasibleValue) {
    GeneratorSettings g;
    g.d = 8;
    g.beta = 0.05;
    g.rho0 = 0.5;
    g.norms = Eigen::VectorXd::Ones(1025);
    try {
        ValueGenerator generator(g);
        FAIL() << "expected std::domain_error";
    } catch (const std::domain_error& e) {
        const std::string message = e.what();
        EXPECT_NE(message.find("largest feasible |rho0| is 0.194"), std::string::npos) << message;
    }
    g.sink_mode = SinkMode::project;  // the documented alternative accepts it
    EXPECT_NO_THROW(ValueGenerator{g});
}

TEST(Sums, Int128TextRoundTripAndEstimates) {
    for (Int128 v :
         {Int128(0), Int128(-1), Int128(123456789012345678) * 1000000007, -(Int128(1) << 120)}) {
        EXPECT_TRUE(parse_int128(to_string_int128(v)) == v);
    }
    EXPECT_THROW(parse_int128("12a"), std::invalid_argument);
    MomentSums m;
    for (double x : {0.25, 0.5, 0.75})
        m.add(x);
    const Estimate e = estimate(m);
    EXPECT_DOUBLE_EQ(e.mean, 0.5);
    EXPECT_NEAR(e.se, 0.25 / std::sqrt(3.0), 1e-15);
    // t_{0.975, 2} in closed form: (2p − 1)·√(2/(4p(1 − p))) with p = 0.975.
    const double t975 = 0.95 * std::sqrt(2 / (4 * 0.975 * 0.025));
    EXPECT_NEAR(e.ci_hi - e.mean, t975 * e.se, 1e-12);
}

TEST(Sums, IntervalsCoverAKnownMeanAbout95Percent) {
    // Bernoulli(0.3) "trials" from our RNG: 2000 replications of 60 trials each.
    int covered = 0;
    const int replications = 2000;
    for (int r = 0; r < replications; ++r) {
        RandomStream s(9, 0, r);
        MomentSums m;
        for (int t = 0; t < 60; ++t)
            m.add(s.next_open_uniform() < 0.3 ? 1.0 : 0.0);
        const Estimate e = estimate(m);
        covered += e.ci_lo <= 0.3 && 0.3 <= e.ci_hi;
    }
    const double coverage = covered / double(replications);
    std::cout << "coverage of the 95% interval: " << coverage << "\n";
    EXPECT_GT(coverage, 0.92);
    EXPECT_LT(coverage, 0.975);
}

TEST(MonteCarlo, SimulatorIntervalsCoverAHighPrecisionMean) {
    // Known mean: a 40000-trial run; then 60 independent 100-trial runs (other seeds).
    SimulationSpec spec = small_spec(15, 4);
    spec.sizes = {3, 6};
    spec.all_sizes = false;
    spec.seed = 1000;
    const SimulationSums truth_sums = run_trials(spec, 0, 40000, 2);
    const double truth = estimate(truth_sums.by_size[0].recall).mean;
    int covered = 0;
    for (int r = 0; r < 60; ++r) {
        spec.seed = static_cast<std::uint64_t>(r + 1);
        const Estimate e = estimate(run_trials(spec, 0, 100, 2).by_size[0].recall);
        covered += e.ci_lo <= truth && truth <= e.ci_hi;
    }
    std::cout << "simulator coverage: " << covered << "/60 around " << truth << "\n";
    EXPECT_GE(covered, 51);  // P(X ≤ 50 | p = 0.95, n = 60) < 0.3%
}

TEST(MonteCarlo, IdenticalForAnyThreadCountAndShardSplit) {
    const SimulationSpec spec = small_spec(63, 16);
    const SimulationSums one = run_trials(spec, 0, 37, 1);
    const SimulationSums two = run_trials(spec, 0, 37, 2);
    SimulationSums split = run_trials(spec, 0, 11, 2);
    split.merge(run_trials(spec, 11, 37, 1));
    ASSERT_EQ(one.trials, 37);
    for (std::size_t s = 0; s < spec.sizes.size(); ++s) {
        EXPECT_TRUE(one.by_size[s].precision == two.by_size[s].precision) << s;
        EXPECT_TRUE(one.by_size[s].recall == two.by_size[s].recall) << s;
        EXPECT_TRUE(one.by_size[s].fmax == split.by_size[s].fmax) << s;
        EXPECT_TRUE(one.by_size[s].fmin == split.by_size[s].fmin) << s;
    }
    EXPECT_TRUE(one.realised.cos_to_sink == split.realised.cos_to_sink);
}

TEST(MonteCarlo, GramAndPerNPathsAgreeTrialByTrial) {
    // Euclidean runs on the single-precision Gram path, cosine on the double one; both must
    // give the per-N path's counts exactly.
    using theory::Distance;
    for (const Distance distance : {Distance::euclidean, Distance::cosine}) {
        SimulationSpec all = small_spec(80, 12, "assumption3");
        all.distance = distance;
        SimulationSpec grid = all;
        grid.all_sizes = false;
        const SimulationSums a = run_trials(all, 0, 25, 2);
        const SimulationSums b = run_trials(grid, 0, 25, 2);
        for (std::size_t s = 0; s < all.sizes.size(); ++s) {
            EXPECT_TRUE(a.by_size[s].precision == b.by_size[s].precision) << "N=" << all.sizes[s];
            EXPECT_TRUE(a.by_size[s].recall == b.by_size[s].recall) << "N=" << all.sizes[s];
        }
        // Realised statistics from the Gram matrix and from the values agree to the Gram's
        // rounding: float32 (γ_{d+2} ≈ 8e-7 relative per cosine) or double.
        const double tolerance = distance == Distance::euclidean ? 2e-6 : 1e-11;
        double largest = 0;
        for (int k = 0; k < kRealisedLags; ++k) {
            const double difference = std::abs(estimate(a.realised.cos_by_lag[k]).mean -
                                               estimate(b.realised.cos_by_lag[k]).mean);
            EXPECT_LE(difference, tolerance) << "lag " << k + 1;
            largest = std::max(largest, difference);
        }
        // Norms come from the double rows on both paths.
        EXPECT_NEAR(estimate(a.realised.norm_ratio_mean).mean,
                    estimate(b.realised.norm_ratio_mean).mean, 1e-12);
        EXPECT_NEAR(estimate(a.realised.norm_ratio_cv).mean,
                    estimate(b.realised.norm_ratio_cv).mean, 1e-7);
        std::cout << "realised cos by lag, Gram vs values (" << theory::to_string(distance)
                  << "): largest difference " << largest << "\n";
    }
}

TEST(MonteCarlo, InfiniteDEqualsAPlainReferenceOnTheExpectedGram) {
    for (const char* profile : {"assumption3", "zipf:0.7", "uniform"}) {
        SimulationSpec spec = small_spec(50, 0, profile);
        spec.model.rho0 = 0.1;
        spec.d_infinite = true;
        const auto rows = infinite_d_metrics(spec);
        // Reference: Ḡ_kl = a_k a_l ρ_kl in rank order; per N from scratch.
        const theory::HeadModel head = simulation_head(spec);
        const int n = static_cast<int>(head.alpha.size());
        std::vector<int> order(n);
        std::iota(order.begin(), order.end(), 0);
        std::stable_sort(order.begin(), order.end(),
                         [&](int x, int y) { return head.alpha[x] > head.alpha[y]; });
        std::vector<std::vector<double>> G(n, std::vector<double>(n));
        for (int k = 0; k < n; ++k)
            for (int l = 0; l < n; ++l) {
                const int i = order[k], j = order[l];
                const double rho =
                    i == j ? 1.0 : (i == 0 || j == 0 ? 0.1 : std::exp(-0.2 * std::abs(i - j)));
                G[k][l] = head.alpha[i] * head.norms[i] * head.alpha[j] * head.norms[j] * rho;
            }
        for (int N = 1; N <= n; ++N) {
            std::vector<double> c(n, 0.0);
            for (int l = 0; l < n; ++l)
                for (int k = 0; k < N; ++k)
                    c[l] += G[k][l];
            double s2 = 0;
            for (int k = 0; k < N; ++k)
                s2 += c[k];
            double dmax = -1e300, dmin = 1e300;
            std::vector<double> D(n);
            for (int l = 0; l < n; ++l)
                D[l] = s2 + G[l][l] - 2 * c[l];
            for (int l = 0; l < N; ++l)
                dmax = std::max(dmax, D[l]);
            for (int l = N; l < n; ++l)
                dmin = std::min(dmin, D[l]);
            int k_in = 0, k_out = 0;
            for (int l = 0; l < N; ++l)
                k_in += D[l] <= dmin;
            for (int l = N; l < n; ++l)
                k_out += D[l] <= dmax;
            if (N == n) k_in = n;
            EXPECT_EQ(rows[N - 1].K_in, k_in) << profile << " N=" << N;
            EXPECT_EQ(rows[N - 1].K_out, k_out) << profile << " N=" << N;
        }
    }
}

TEST(MonteCarlo, LargeDConvergesToTheInfiniteDLimit) {
    SimulationSpec spec = small_spec(31, 4096);
    spec.sizes = {1, 2, 3, 4, 8, 16, 24};
    spec.all_sizes = false;
    SimulationSpec limit = spec;
    limit.d_infinite = true;
    const auto exact = infinite_d_metrics(limit);
    const SimulationSums sums = run_trials(spec, 0, 60, 2);
    double worst = 0;
    for (std::size_t s = 0; s < spec.sizes.size(); ++s) {
        const double p = estimate(sums.by_size[s].precision).mean,
                     r = estimate(sums.by_size[s].recall).mean;
        worst = std::max({worst, std::abs(p - exact[s].precision_at_rmax),
                          std::abs(r - exact[s].recall_at_rmin)});
    }
    std::cout << "largest |MC(d=4096) - limit| = " << worst << "\n";
    EXPECT_LT(worst, 0.05);
}

TEST(Run, ShardsPartitionTheTrialsAndParseStrictly) {
    for (int count : {1, 2, 3, 7}) {
        std::int64_t next = 0;
        for (int i = 0; i < count; ++i) {
            const auto [first, last] = shard_trials(1000, Shard{i, count});
            EXPECT_EQ(first, next);
            next = last;
        }
        EXPECT_EQ(next, 1000);
    }
    EXPECT_EQ(parse_shard("2/5").index, 2);
    for (const char* bad : {"5/5", "-1/2", "1", "a/b", "1/0", "1/2x"})
        EXPECT_THROW(parse_shard(bad), InputError) << bad;
}

// The per-trial values of a run's counts as the judge reads them, [T, S].
MeasuredPoint measured_of(const SimulationSpec& spec, const SimulationSums& sums) {
    MeasuredPoint m;
    const int S = static_cast<int>(spec.sizes.size());
    for (UnitValues* v : {&m.P, &m.R}) {
        v->units = static_cast<int>(sums.trials);
        v->points = S;
    }
    for (std::int64_t t = 0; t < sums.trials; ++t)
        for (int s = 0; s < S; ++s) {
            m.P.values.push_back(trial_precision(sums.counts, t, s, spec.sizes[s]));
            m.R.values.push_back(trial_recall(sums.counts, t, s, spec.sizes[s]));
        }
    return m;
}

TEST(Envelope, JudgedBoundsAreTheReferencesAndAGivenKappaIsJudgedAlone) {
    SimulationSpec spec = small_spec(63, 32, "assumption3");
    const SimulationSums sums = run_trials(spec, 0, 40, 2);
    PointInputs point;
    point.head = simulation_head(spec);
    point.sizes = spec.sizes;
    point.ranking = spec.ranking;
    point.d = spec.d;
    point.measured = measured_of(spec, sums);
    BandSettings band;
    band.replicates = 300;
    const auto judged = judge_envelopes({point}, std::nullopt, band);
    ASSERT_EQ(judged.size(), 4u);
    double worst = 0;
    for (const VariantEnvelope& v : judged) {
        const KappaScan& scan = v.scans.front();
        EXPECT_EQ(scan.sides[0].band_method, BandMethod::bootstrap);  // 40 trials
        // Each side's bound at its judged κ, and the rows at the rows' κ, against the literal
        // per-N reference.
        for (std::size_t s = 0; s < spec.sizes.size(); ++s) {
            theory::BoundSettings at;
            at.d = spec.d;
            at.variant = v.variant;
            for (int side = 0; side < kSideCount; ++side) {
                at.kappa = scan.sides[side].kappa_judged;
                const theory::BoundRow r = theory::bounds_reference(point.head, spec.sizes[s], at);
                const double reference[4] = {r.precision_lower, r.precision_upper, r.recall_lower,
                                             r.recall_upper};
                worst = std::max(worst, std::abs(reference[side] - scan.points.bound[side][s]));
            }
            if (std::isnan(scan.rows_kappa)) continue;
            at.kappa = scan.rows_kappa;
            const theory::BoundRow r = theory::bounds_reference(point.head, spec.sizes[s], at);
            worst =
                std::max({worst, std::abs(r.precision_lower - v.rows.front()[s].precision_lower),
                          std::abs(r.recall_upper - v.rows.front()[s].recall_upper)});
        }
        // A given κ is every side's judged κ and the rows' κ.
        const auto fixed = judge_envelopes({point}, 0.37, band);
        for (const VariantEnvelope& w : fixed) {
            if (w.variant != v.variant) continue;
            EXPECT_EQ(w.scans.front().rows_kappa, 0.37);
            EXPECT_EQ(w.rows_rule.front(), "given");
            for (const SideVerdict& side : w.scans.front().sides) {
                EXPECT_EQ(side.kappa_judged, 0.37);
                EXPECT_TRUE(side.kappa_given);
            }
        }
    }
    std::printf("largest difference from bounds_reference: %.3g\n", worst);
    EXPECT_LE(worst, 1e-12);
}

TEST(ExactSum, OrderDoesNotChangeTheBitsAndOverflowThrows) {
    std::mt19937_64 rng(17);
    std::uniform_real_distribution<double> magnitude(-30, 10);
    std::vector<double> x(2000);
    for (auto& v : x)
        v = std::ldexp(1.0, static_cast<int>(magnitude(rng))) * (rng() % 2 ? 1.0 : -0.7);
    ExactSum forward, backward, halves_a, halves_b;
    long double reference = 0;  // plain long-double loop, for the printed difference
    for (double v : x) {
        forward.add(v);
        reference += v;
    }
    for (auto it = x.rbegin(); it != x.rend(); ++it)
        backward.add(*it);
    for (std::size_t i = 0; i < x.size(); ++i)
        (i % 2 ? halves_a : halves_b).add(x[i]);
    halves_a.merge(halves_b);
    EXPECT_TRUE(forward == backward);
    EXPECT_TRUE(forward == halves_a);
    const double difference = std::abs(forward.value() - static_cast<double>(reference));
    std::cout << "ExactSum vs long double loop: " << difference << "\n";
    EXPECT_LE(difference, 2000 * 0x1p-64 + 1e-15 * std::abs(static_cast<double>(reference)));
    ExactSum big;
    EXPECT_THROW(big.add(0x1p62), std::overflow_error);
    EXPECT_THROW(big.add(std::nan("")), std::overflow_error);
    big.add(0x1p61);
    EXPECT_THROW(big.add(0x1p61), std::overflow_error);
}

// A sums.csv row whose sum_squares no run can produce would overflow estimate()'s 128 bits
// (T·Σq²; a fuzz_run_folder finding): rows are checked against what `count` trials can sum
// to, and a genuine run folder still merges to the same numbers.
TEST(Run, MergeRefusesSumsNoRunCanProduce) {
    const auto dir = test_support::scratch_folder("merge_sums");
    const RunConfig config = tiny_run_config();
    RunTimings timings;
    const auto sums = run_grid(config, 1, nullptr, timings);
    const auto run = dir / "run";
    write_run(run.string(), config, sums, 1, nlohmann::json::object(), timings);
    const std::string genuine = test_support::slurp(run / "sums.csv");
    merge_runs({run.string()}, (dir / "merged").string(), 1, nlohmann::json::object());
    const std::string merged = test_support::slurp(dir / "merged" / "sums.csv");
    EXPECT_EQ(merged, genuine) << "a genuine one-shard run must merge to itself";

    // Each bad row replaces the first P row of N = 1; the rest of the file stays genuine.
    const std::size_t p_row = genuine.find("\n0,1,P,") + 1;
    const std::size_t p_end = genuine.find('\n', p_row) + 1;
    const std::string one = std::to_string(1ULL << 40);
    const std::vector<std::string> bad_rows = {
        "0,1,P,4,43980465111010847714,2455147429419660937342812",     // the fuzzer's input
        "0,1,P,-1,0,0",                                               // negative count
        "0,1,P,5,0,0",                                                // more than 4 trials
        "0,1,P,4,-1,0",                                               // P below 0
        "0,1,P,4," + one + "0,0",                                     // mean above 1
        "0,1,P,4,4," + std::string("0"),                              // Σq² < (Σq)²/T
        "0,0,cos_sink,4,10,170141183460469231731687303715884105727",  // T·Σq² overflows
    };
    for (const auto& bad : bad_rows) {
        std::ofstream(run / "sums.csv") << genuine.substr(0, p_row) << bad << "\n"
                                        << genuine.substr(p_end);
        test_support::expect_input_error(
            [&] {
                merge_runs({run.string()}, (dir / "merged2").string(), 1, nlohmann::json::object());
            },
            {"sums.csv", "line", "not the sums of that many values"});
        std::cout << "refused: " << bad << "\n";
    }
    // Fuzz finding: a manifest number beyond double ("0.014E666111") escaped as nlohmann's
    // out_of_range; now an InputError naming the manifest.
    std::ofstream(run / "sums.csv") << genuine;
    const std::string manifest = test_support::slurp(run / "manifest.json");
    const std::size_t d_at = manifest.find("\"d\": ");
    ASSERT_NE(d_at, std::string::npos);
    std::ofstream(run / "manifest.json")
        << manifest.substr(0, d_at)
        << "\"d\": 0.014E666111, \"d_was\": " << manifest.substr(d_at + 5);
    test_support::expect_input_error(
        [&] {
            merge_runs({run.string()}, (dir / "merged3").string(), 1, nlohmann::json::object());
        },
        {"manifest.json", "not valid JSON"});
    std::filesystem::remove_all(dir);
}

// sums.csv is read by column name through the common CSV reader: a permuted column order
// merges to the same file, and a malformed row is one line naming the file, line and column.
TEST(Run, MergeReadsSumsByColumnNameAndNamesTheBadField) {
    const auto dir = test_support::scratch_folder("merge_sums_columns");
    const RunConfig config = tiny_run_config();
    RunTimings timings;
    const auto run = dir / "run";
    write_run(run.string(), config, run_grid(config, 1, nullptr, timings), 1,
              nlohmann::json::object(), timings);
    const std::string genuine = test_support::slurp(run / "sums.csv");

    // Columns reversed: grid,N,quantity,count,sum,sum_squares -> sum_squares,...,grid.
    std::istringstream lines(genuine);
    std::ostringstream reversed;
    for (std::string line; std::getline(lines, line);) {
        std::vector<std::string> fields;
        std::istringstream cells(line);
        for (std::string cell; std::getline(cells, cell, ',');)
            fields.push_back(cell);
        for (std::size_t c = fields.size(); c-- > 0;)
            reversed << fields[c] << (c ? "," : "\n");
    }
    std::ofstream(run / "sums.csv") << reversed.str();
    merge_runs({run.string()}, (dir / "merged").string(), 1, nlohmann::json::object());
    EXPECT_EQ(test_support::slurp(dir / "merged" / "sums.csv"), genuine);

    const std::size_t p_row = genuine.find("\n0,1,P,") + 1;
    const std::size_t p_end = genuine.find('\n', p_row) + 1;
    const std::string line =
        "line " + std::to_string(std::count(genuine.begin(), genuine.begin() + p_row, '\n') + 1);
    const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
        {"0,1,P,four,0,0", {line + " column 'count'", "'four' is not an integer"}},
        {"7,1,P,4,0,0", {line + " column 'grid'", "grid index 7 out of range"}},
        {"0,1,Q,4,0,0", {line + " column 'quantity'", "unknown quantity 'Q' at N = 1"}},
        {"0,3,P,4,0,0", {line + " column 'quantity'", "unknown quantity 'P' at N = 3"}},
        {"0,1,P,4,1x,0", {line + " column 'sum'", "'1x' is not an integer"}},
        {"0,1,P,4,0", {line + ":", "5 fields, expected 6", "ragged"}},
    };
    for (const auto& [bad, phrases] : cases) {
        std::ofstream(run / "sums.csv") << genuine.substr(0, p_row) << bad << "\n"
                                        << genuine.substr(p_end);
        std::vector<std::string> expected = {"merge: '" + (run / "sums.csv").string() + "' "};
        expected.insert(expected.end(), phrases.begin(), phrases.end());
        test_support::expect_input_error(
            [&] {
                merge_runs({run.string()}, (dir / "merged2").string(), 1, nlohmann::json::object());
            },
            expected);
    }
    std::ofstream(run / "sums.csv") << "grid,N,quantity,count,sum,sumsq\n";
    test_support::expect_input_error(
        [&] {
            merge_runs({run.string()}, (dir / "merged3").string(), 1, nlohmann::json::object());
        },
        {"merge: '", "sums.csv': missing column 'sum_squares'"});
    // A folder of another kind is named as such, not read as a simulate run.
    std::ofstream(run / "sums.csv") << genuine;
    nlohmann::json manifest = nlohmann::json::parse(test_support::slurp(run / "manifest.json"));
    manifest["kind"] = "extract";
    std::ofstream(run / "manifest.json") << manifest.dump(2);
    test_support::expect_input_error(
        [&] {
            merge_runs({run.string()}, (dir / "merged4").string(), 1, nlohmann::json::object());
        },
        {"manifest.json", "kind is \"extract\"", "expected \"simulate\" or \"sweep\""});
    std::filesystem::remove_all(dir);
}

// ---- Table 1 (compare/table1) ------------------------------------------------------------

TEST(Table1, FollowsThePowersPresentToppedUpToThree) {
    using Sizes = std::vector<int>;
    EXPECT_EQ(followed_sizes({1, 2, 4, 8, 16, 32, 64, 128, 256, 512}), Sizes({2, 4, 16, 64}));
    EXPECT_EQ(followed_sizes({1, 2, 4, 8, 16, 32, 64}), Sizes({2, 4, 16, 64}));
    EXPECT_EQ(followed_sizes({1, 2, 3}), Sizes({1, 2, 3}));
    EXPECT_EQ(followed_sizes({9, 7, 5, 3, 1}), Sizes({1, 3, 5}));  // the smallest others
    EXPECT_EQ(followed_sizes({256, 512}), Sizes({256, 512}));
    EXPECT_EQ(followed_sizes({4, 4, 4}), Sizes({4}));  // repeats count once
    EXPECT_TRUE(followed_sizes({}).empty());
}

namespace {

theory::ModelParameters table1_head() {
    theory::ModelParameters p;
    p.profile.L = 31;
    p.profile.T1 = 4;
    p.profile.T2 = 24;
    p.profile.p_sink = 0.3;
    p.profile.eta = 0.2;
    p.profile.omega = 0.3;
    p.C = 1.5;
    p.lambda = 0.2;
    p.beta = 0.08;
    p.rho0 = 0.1;
    return p;
}

// table1.csv read back as rows (the text round-trips: shortest round-trip digits).
std::vector<theory::SensitivityRow> read_table1(const std::filesystem::path& path) {
    const CsvTable table = read_csv_table(path.string());
    std::vector<theory::SensitivityRow> rows(table.rows.size());
    for (std::size_t i = 0; i < rows.size(); ++i) {
        rows[i].parameter = table.text(i, "parameter");
        rows[i].N = std::stoi(table.text(i, "N"));
        double* fields[8] = {&rows[i].precision_lower, &rows[i].precision_upper,
                             &rows[i].recall_lower,    &rows[i].recall_upper,
                             &rows[i].fmax_lower,      &rows[i].fmax_upper,
                             &rows[i].fmin_lower,      &rows[i].fmin_upper};
        const char* columns[8] = {"dP_lower",    "dP_upper",    "dR_lower",    "dR_upper",
                                  "dFmax_lower", "dFmax_upper", "dFmin_lower", "dFmin_upper"};
        for (int c = 0; c < 8; ++c)
            *fields[c] = table.number(i, columns[c]);
    }
    return rows;
}

// Largest |difference| of two tables with the same rows (parameter and N checked).
double largest_table_difference(const std::vector<theory::SensitivityRow>& got,
                                const std::vector<theory::SensitivityRow>& want) {
    EXPECT_EQ(got.size(), want.size());
    double worst = 0;
    for (std::size_t i = 0; i < std::min(got.size(), want.size()); ++i) {
        EXPECT_EQ(got[i].parameter, want[i].parameter) << "row " << i;
        EXPECT_EQ(got[i].N, want[i].N) << "row " << i;
        const theory::SensitivityRow &a = got[i], &b = want[i];
        for (double d :
             {a.precision_lower - b.precision_lower, a.precision_upper - b.precision_upper,
              a.recall_lower - b.recall_lower, a.recall_upper - b.recall_upper,
              a.fmax_lower - b.fmax_lower, a.fmax_upper - b.fmax_upper, a.fmin_lower - b.fmin_lower,
              a.fmin_upper - b.fmin_upper})
            worst = std::max(worst,
                             std::isnan(d) ? std::numeric_limits<double>::infinity() : std::abs(d));
    }
    return worst;
}

}  // namespace

TEST(Table1, DerivativesAreCentralDifferencesOfTheReferenceBounds) {
    const theory::ModelParameters p = table1_head();
    theory::BoundSettings s;
    s.d = 16;
    s.kappa = 0.5;
    const Table1 table = sensitivity_table(p, {2, 4, 16, 1000}, s);  // 1000 > n = 32: left out
    EXPECT_TRUE(table.error.empty()) << table.error;
    EXPECT_EQ(table.d, 16);
    EXPECT_EQ(table.kappa, 0.5);
    std::set<int> sizes;
    std::set<std::string> parameters;
    for (const auto& r : table.rows)
        sizes.insert(r.N), parameters.insert(r.parameter);
    EXPECT_EQ(sizes, std::set<int>({2, 4, 16}));
    for (const char* name :
         {"d", "kappa", "L", "C", "lambda", "beta", "rho0", "p_sink", "T1", "T2", "eta", "omega"})
        EXPECT_EQ(parameters.count(name), 1u) << name;
    EXPECT_EQ(table.rows.size(), parameters.size() * sizes.size());
    const double worst = test_support::largest_log_derivative_difference(table.rows, p, s);
    std::cout << "Table 1 against central differences of bounds_reference: largest difference "
              << worst << "\n";
    EXPECT_LT(worst, 1e-6);

    // The CSV holds every row with round-trip digits, in order.
    std::istringstream csv(table1_csv(table));
    std::string line;
    std::getline(csv, line);
    EXPECT_EQ(line,
              "parameter,N,dP_lower,dP_upper,dR_lower,dR_upper,dFmax_lower,dFmax_upper,"
              "dFmin_lower,dFmin_upper");
    for (const auto& r : table.rows) {
        ASSERT_TRUE(std::getline(csv, line));
        EXPECT_EQ(line.substr(0, line.find(',', line.find(',') + 1) + 1),
                  r.parameter + "," + std::to_string(r.N) + ",");
        EXPECT_NE(line.find("," + format_double(r.recall_upper) + ","), std::string::npos) << line;
    }
    EXPECT_FALSE(std::getline(csv, line));
}

TEST(Table1, AnInvalidHeadGivesNoRowsAndSaysWhy) {
    theory::ModelParameters p = table1_head();
    p.profile.p_sink = 1.5;  // Assumption 3 needs 0 < p_sink < 1
    const Table1 table = sensitivity_table(p, {2, 4}, theory::BoundSettings{});
    EXPECT_TRUE(table.rows.empty());
    EXPECT_FALSE(table.error.empty());
    const std::string csv = table1_csv(table);
    EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 1);  // the header only
    const nlohmann::json about = table1_manifest(table);
    EXPECT_EQ(about.at("error"), table.error);
    EXPECT_EQ(about.at("variant"), "paper");
    EXPECT_TRUE(table1_manifest(sensitivity_table(table1_head(), {2}, theory::BoundSettings{}))
                    .at("error")
                    .is_null());
}

namespace {

// A small sweep over L, so that its grid points have different n (32 and 128 tokens).
RunConfig table1_sweep(double d) {
    RunConfig config;
    config.kind = "sweep";
    config.model.assumption3.L = 31;
    config.model.assumption3.T1 = 4;
    config.model.assumption3.T2 = 24;
    config.d = d;
    config.trials = 8;
    config.sizes = "pow2";
    config.sweep = {{"L", {31, 127}}};
    return config;
}

nlohmann::json write_folder(const RunConfig& config, const std::filesystem::path& dir) {
    RunTimings timings;
    const auto sums = run_grid(config, 1, nullptr, timings);
    return write_run(dir.string(), config, sums, 1, nlohmann::json::object(), timings);
}

}  // namespace

// table1.csv of a sweep is theory::bound_sensitivities at the first grid point (its head built
// here from the model source, its d, the paper κ its manifest records), at the N followed over
// every grid point (64 and 128 only exist at the second point, n = 128, so 64 is followed but
// left out at the first, n = 32); the derivatives also match central differences of the
// reference bounds. A simulate folder has no table1.csv.
TEST(Run, SweepWritesTable1AtTheFirstGridPoint) {
    const auto dir = test_support::scratch_folder("sweep_table1");
    for (double d : {16.0, std::numeric_limits<double>::infinity()}) {
        const RunConfig config = table1_sweep(d);
        const auto out = dir / (std::isinf(d) ? "inf" : "finite");
        const nlohmann::json manifest = write_folder(config, out);
        theory::ModelSource first = config.model;
        first.assumption3.L = 31;
        const theory::ModelParameters p = theory::load_model(first);
        theory::BoundSettings s;
        s.d = std::isinf(d) ? 1e6 : d;  // d = ∞ has no finite difference in d
        const nlohmann::json& kappa =
            manifest.at("points").at(0).at("envelopes").at("paper").at("rows_kappa");
        s.kappa = kappa.is_number() ? kappa.get<double>() : 1.0;
        const auto want = theory::bound_sensitivities(p, {2, 4, 16}, s);
        const auto got = read_table1(out / "table1.csv");
        const double worst = largest_table_difference(got, want);
        const double central = test_support::largest_log_derivative_difference(got, p, s);
        std::cout << "sweep (d = " << d << ") table1.csv against bound_sensitivities at grid "
                  << "point 0: largest difference " << worst
                  << "; against central differences of bounds_reference: " << central << "\n";
        EXPECT_EQ(worst, 0);
        EXPECT_LT(central, 1e-6);
        const nlohmann::json& about = manifest.at("table1");
        EXPECT_EQ(about.at("d").get<double>(), s.d);
        EXPECT_EQ(about.at("kappa").get<double>(), s.kappa);
        EXPECT_EQ(about.at("variant"), "paper");
        EXPECT_TRUE(about.at("error").is_null());
        const auto outputs = manifest.at("outputs").get<std::vector<std::string>>();
        EXPECT_EQ(std::count(outputs.begin(), outputs.end(), "table1.csv"), 1);
        EXPECT_NE(manifest.at("decisions").dump().find("table1.csv (Table 1)"), std::string::npos);
    }
    RunConfig single = table1_sweep(16);
    single.kind = "simulate";
    single.sweep.clear();
    const nlohmann::json manifest = write_folder(single, dir / "simulate");
    EXPECT_FALSE(std::filesystem::exists(dir / "simulate" / "table1.csv"));
    EXPECT_FALSE(manifest.contains("table1"));
    std::filesystem::remove_all(dir);
}

// merge writes the folder through write_run, so a sweep merged from its shards has the
// unsharded run's table1.csv (and sweep.csv) byte for byte.
TEST(Run, MergedSweepShardsHaveTheUnshardedTable1) {
    const auto dir = test_support::scratch_folder("sweep_table1_merge");
    const RunConfig whole = table1_sweep(16);
    const nlohmann::json whole_manifest = write_folder(whole, dir / "whole");
    std::vector<std::string> shards;
    for (int i = 0; i < 2; ++i) {
        RunConfig shard = whole;
        shard.shard = Shard{i, 2};
        shards.push_back((dir / ("shard" + std::to_string(i))).string());
        write_folder(shard, shards.back());
    }
    const nlohmann::json merged =
        merge_runs({shards[1], shards[0]}, (dir / "merged").string(), 1, nlohmann::json::object());
    for (const char* file : {"table1.csv", "sweep.csv"})
        EXPECT_EQ(test_support::slurp(dir / "merged" / file),
                  test_support::slurp(dir / "whole" / file))
            << file;
    EXPECT_EQ(merged.at("table1"), whole_manifest.at("table1"));
    std::filesystem::remove_all(dir);
}

namespace {

// A simulate folder's per-trial P and R, read back from per_trial.safetensors plainly.
struct FolderTrials {
    std::vector<int> N;                     // [S]
    std::vector<std::vector<double>> P, R;  // [S][T]
};

FolderTrials read_folder_trials(const std::filesystem::path& dir) {
    const SafetensorsFile file((dir / "per_trial.safetensors").string());
    const HostTensor K_in = file.get("K_in.0"), K_out = file.get("K_out.0"), N = file.get("N.0");
    FolderTrials out;
    const std::int64_t T = K_in.shape[0], S = K_in.shape[1];
    for (std::int64_t s = 0; s < S; ++s) {
        std::int64_t n_value = 0;
        std::memcpy(&n_value, static_cast<const char*>(N.data) + 8 * s, 8);
        out.N.push_back(static_cast<int>(n_value));
    }
    out.P.assign(S, {});
    out.R.assign(S, {});
    for (std::int64_t t = 0; t < T; ++t)
        for (std::int64_t s = 0; s < S; ++s) {
            std::int32_t in = 0, outside = 0;
            std::memcpy(&in, static_cast<const char*>(K_in.data) + 4 * (t * S + s), 4);
            std::memcpy(&outside, static_cast<const char*>(K_out.data) + 4 * (t * S + s), 4);
            const double n_s = out.N[s];
            out.P[s].push_back(n_s / (n_s + outside));
            out.R[s].push_back(in / n_s);
        }
    return out;
}

// Mean and standard error with the band's two pseudo-units at the ends of a range of width w,
// written out here.
std::pair<double, double> plain_moments(const std::vector<double>& x, double w) {
    const bool constant = std::all_of(x.begin(), x.end(), [&](double v) { return v == x[0]; });
    double sum = 0;
    for (double v : x)
        sum += v;
    const double mean = constant ? x[0] : sum / x.size();
    double squares = 0;
    if (!constant)
        for (double v : x)
            squares += (v - mean) * (v - mean);
    const double U = static_cast<double>(x.size());
    return {mean, std::sqrt((squares + 2 * w * w) / (U - 1) / U)};
}

// The recount of one side at one κ from the reference bounds and the folder's trials.
struct SideAtKappa {
    int falsified = 0, contradicted = 0;
    double gap = 0, max_z = -HUGE_VAL;
};

SideAtKappa recount_at(const theory::HeadModel& head, const FolderTrials& trials,
                       const std::string& variant, int side, double kappa, double d,
                       double critical, int n, bool sink_first) {
    SideAtKappa c;
    theory::BoundSettings at;
    at.d = d;
    at.kappa = kappa;
    at.variant = theory::parse_bound_variant(variant);
    int counted = 0;
    for (std::size_t s = 0; s < trials.N.size(); ++s) {
        const int N = trials.N[s];
        if (N == n || (N == 1 && sink_first)) continue;  // convention points
        counted += 1;
        const theory::BoundRow r = theory::bounds_reference(head, N, at);
        const double bounds[4] = {r.precision_lower, r.precision_upper, r.recall_lower,
                                  r.recall_upper};
        const double b = bounds[side];
        const bool P = side < 2, upper = side % 2 == 1;
        const double low_limit = P ? static_cast<double>(N) / n : 0.0;
        const auto [mean, se] = plain_moments(P ? trials.P[s] : trials.R[s], P ? 1 - low_limit : 1);
        const double excess = upper ? mean - b : b - mean;
        c.gap -= excess;
        const bool identity = N == 1;
        c.contradicted +=
            upper ? (b < low_limit - 1e-12 || (identity && b < 1 - 1e-12)) : b > 1 + 1e-12;
        if (identity) continue;
        c.falsified += excess - critical * se > 1e-12;
        c.max_z = std::max(c.max_z, excess / se);
    }
    c.gap /= counted;
    return c;
}

}  // namespace

// Every figure of verdict.csv and kappa_scan.csv recounted by a plain loop (docs/design.md §7):
// per scanned κ the falsified and contradicted points, max z and mean gap from the literal bounds
// and the folder's per-trial values; the κ set as the runs of consistent κ; κ_edge as the
// smallest mean gap among them; the states; and bounds.csv's per-point z and flags at each
// side's judged κ.
TEST(Run, VerdictEqualsAPlainRecountFromTheFolder) {
    RunConfig config = tiny_run_config();  // n = 64, every N, 60 trials, κ scanned
    config.model.assumption3.L = 63;
    config.model.assumption3.T1 = 8;
    config.model.assumption3.T2 = 48;
    config.d = 16;
    config.trials = 60;
    config.sizes = "all";
    config.kappa.reset();
    config.band_replicates = 400;
    const auto dir = test_support::scratch_folder("verdict_counts");
    RunTimings timings;
    const auto sums = run_grid(config, 2, nullptr, timings);
    write_run((dir / "run").string(), config, sums, 2, nlohmann::json::object(), timings);
    const CsvTable verdict = read_csv_table((dir / "run" / "verdict.csv").string());
    const CsvTable scan = read_csv_table((dir / "run" / "kappa_scan.csv").string());
    const CsvTable bounds = read_csv_table((dir / "run" / "bounds.csv").string());
    const FolderTrials trials = read_folder_trials(dir / "run");
    const PointSetup setup = setup_point(config, grid_points(config).front());
    const int n = 64;
    const bool sink_first = point_facts(setup.head, {1}, setup.spec.ranking).front().convention;
    int checked = 0, rows_checked = 0, mismatches = 0;
    double largest = 0;
    std::set<std::string> states;
    for (std::size_t r = 0; r < verdict.rows.size(); ++r) {
        const std::string variant = verdict.text(r, "variant"), metric = verdict.text(r, "metric");
        const std::string side_name = verdict.text(r, "side");
        const int side = (metric == "R" ? 2 : 0) + (side_name == "upper" ? 1 : 0);
        const double critical = verdict.number(r, "critical_value");
        std::vector<double> kappas;
        std::vector<char> consistent;
        std::vector<double> gaps;
        for (std::size_t k = 0; k < scan.rows.size(); ++k) {
            if (scan.text(k, "variant") != variant || scan.text(k, "metric") != metric ||
                scan.text(k, "side") != side_name)
                continue;
            const double kappa = scan.number(k, "kappa");
            EXPECT_EQ(scan.number(k, "critical_value"), critical);  // one band per metric
            const SideAtKappa c = recount_at(setup.head, trials, variant, side, kappa, config.d,
                                             critical, n, sink_first);
            mismatches += c.falsified != scan.integer(k, "falsified_points");
            mismatches += c.contradicted != scan.integer(k, "contradicted_points");
            largest = std::max({largest, std::abs(c.gap - scan.number(k, "mean_gap")),
                                std::abs(c.max_z - scan.number(k, "max_z"))});
            kappas.push_back(kappa);
            consistent.push_back(c.falsified == 0 && c.contradicted == 0);
            gaps.push_back(c.gap);
            ++rows_checked;
        }
        // The κ set as runs of consistent κ, and κ_edge as the smallest gap among them.
        std::string set;
        double edge = std::nan(""), edge_gap = HUGE_VAL;
        char buffer[32];
        for (std::size_t i = 0; i < kappas.size();) {
            if (!consistent[i]) {
                ++i;
                continue;
            }
            std::size_t j = i;
            while (j + 1 < kappas.size() && consistent[j + 1])
                ++j;
            std::string item;
            auto text = [&](double x) {
                std::snprintf(buffer, sizeof buffer, "%.3g", x);
                return std::string(buffer);
            };
            if (i == 0 && j + 1 == kappas.size())
                item = "any";
            else if (i == 0)
                item = "<=" + text(kappas[j]);
            else if (j + 1 == kappas.size())
                item = ">=" + text(kappas[i]);
            else
                item = text(kappas[i]) + ".." + text(kappas[j]);
            set += (set.empty() ? "" : " | ") + item;
            for (std::size_t k = i; k <= j; ++k)
                if (gaps[k] < edge_gap) edge_gap = gaps[k], edge = kappas[k];
            i = j + 1;
        }
        const std::string where = variant + " " + metric + " " + side_name;
        EXPECT_EQ(verdict.text(r, "kappa_set"), set.empty() ? "none" : set) << where;
        const std::string state = verdict.text(r, "state");
        states.insert(state);
        if (!set.empty() && verdict.text(r, "kappa_free") == "0") {
            EXPECT_DOUBLE_EQ(verdict.number(r, "kappa_edge"), edge) << where;
        }
        if (set.empty()) EXPECT_NE(state.rfind("holds", 0), 0u) << where << ": " << state;
        // bounds.csv's per-point z and flags at the side's judged κ, recounted.
        const std::string key = metric + "_" + side_name;
        int falsified = 0;
        for (std::size_t b = 0; b < bounds.rows.size(); ++b) {
            if (bounds.text(b, "variant") != variant || bounds.text(b, "convention") == "1")
                continue;
            falsified += bounds.text(b, "falsified_" + key) == "1";
            const std::string z = bounds.text(b, "z_" + key);
            if (z.empty()) continue;
            const int N = static_cast<int>(bounds.integer(b, "N"));
            std::size_t s = 0;
            while (trials.N[s] != N)
                ++s;
            const bool P = metric == "P";
            const auto [mean, se] = plain_moments(P ? trials.P[s] : trials.R[s],
                                                  P ? 1 - static_cast<double>(N) / n : 1);
            const double edge_bound = bounds.number(b, key + "_edge");
            const double excess = side_name == "upper" ? mean - edge_bound : edge_bound - mean;
            largest = std::max(largest, std::abs(excess / se - bounds.number(b, "z_" + key)));
        }
        EXPECT_EQ(falsified, verdict.integer(r, "falsified_at_judged")) << where;
        std::printf("%-26s %-22s set %-22s recounted\n", where.c_str(), state.c_str(),
                    verdict.text(r, "kappa_set").c_str());
        ++checked;
    }
    std::printf("%d scan rows recounted: %d count mismatches, largest z/gap difference %.3g\n",
                rows_checked, mismatches, largest);
    EXPECT_EQ(checked, 16);
    EXPECT_EQ(mismatches, 0);
    EXPECT_LT(largest, 1e-9);
    EXPECT_GT(states.size(), 1u);  // the tiny head is not judged the same on every side
    // The manifest records the B the bands were drawn with, not the default.
    const nlohmann::json manifest =
        nlohmann::json::parse(test_support::slurp(dir / "run" / "manifest.json"));
    for (const auto& [variant, block] : manifest.at("points").at(0).at("envelopes").items())
        EXPECT_EQ(block.at("band").at("replicates"), 400) << variant;
    std::filesystem::remove_all(dir);
}
