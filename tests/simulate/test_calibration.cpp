// The verdict calibrated on planted truths (simulate/calibration, docs/design.md §7): on a small
// head (n = 65) over 200 runs, bounds planted on the truth are falsified no more often than 5 %
// allows within its sampling error, on every side and pooled, and bounds moved 8 standard errors
// past the truth on a window of N are caught in at least 95 % of runs; the Clopper–Pearson
// interval against values computed from the binomial distribution by a plain search.
#include <gtest/gtest.h>

#include <cmath>

#include "common/errors.hpp"
#include "simulate/calibration.hpp"
#include "simulate/run.hpp"

using namespace attngeo;
using namespace attngeo::simulate;

namespace {

// The n = 65 paper-profile head the calibration test judges (d = 16, seed 11).
PointSetup small_point(RunConfig& config) {
    config.model.assumption3.L = 64;
    config.model.assumption3.T1 = 8;
    config.model.assumption3.T2 = 48;
    config.model.length_given = true;
    config.d = 16;
    config.trials = 1000;
    config.seed = 11;
    config.sizes = "all";
    return setup_point(config, grid_points(config).front());
}

// P(X ≤ k) for X ~ Binomial(n, p), summed term by term in logs (no underflow near p = 1).
double binomial_cdf(int k, int n, double p) {
    double total = 0;
    for (int i = 0; i <= k; ++i)
        total += std::exp(std::lgamma(n + 1.0) - std::lgamma(i + 1.0) - std::lgamma(n - i + 1.0) +
                          i * std::log(p) + (n - i) * std::log1p(-p));
    return total;
}

}  // namespace

TEST(Calibration, ClopperPearsonIsTheBinomialTailInversion) {
    for (auto [k, n] :
         {std::pair{0, 20}, std::pair{3, 20}, std::pair{17, 200}, std::pair{200, 200}}) {
        const auto [lo, hi] = clopper_pearson(k, n);
        // lo: P(X ≥ k | lo) = 0.025; hi: P(X ≤ k | hi) = 0.025.
        if (k > 0) EXPECT_NEAR(1 - binomial_cdf(k - 1, n, lo), 0.025, 1e-9) << k << "/" << n;
        if (k < n) EXPECT_NEAR(binomial_cdf(k, n, hi), 0.025, 1e-9) << k << "/" << n;
        EXPECT_LE(lo, static_cast<double>(k) / n);
        EXPECT_GE(hi, static_cast<double>(k) / n);
    }
}

TEST(Calibration, TrueBoundsAreFalsifiedAtMostAtTheLevelAndFalseOnesAreCaught) {
    RunConfig config;
    const PointSetup setup = small_point(config);
    CalibrationSettings s;
    s.runs = 200;
    s.trials = config.trials;
    s.seed = config.seed;
    s.band_replicates = 1000;
    s.threads = 2;
    const CalibrationResult result = calibrate_verdict(setup, s, nullptr);
    ASSERT_EQ(result.cases.size(), 16u);  // 4 sides × (true, δ = 2, 4, 8)
    int true_runs = 0, true_falsified = 0;
    for (const CalibrationCase& c : result.cases) {
        std::printf("%s %-5s %s shift %g: %d of %d runs falsified (%.3f, 95 %% %.3f-%.3f)\n",
                    c.metric.c_str(), c.side.c_str(), c.planted_true ? "true " : "false", c.shift,
                    c.falsified, c.runs, c.rate, c.ci_lo, c.ci_hi);
        EXPECT_EQ(c.runs, 200);
        if (c.planted_true) {
            // "At most 5 %" within its sampling error: the interval reaches down to 5 %.
            EXPECT_LE(c.ci_lo, 0.05) << c.metric << " " << c.side;
            true_runs += c.runs;
            true_falsified += c.falsified;
        } else if (c.shift == 8) {
            EXPECT_GE(c.rate, 0.95) << c.metric << " " << c.side;
        }
    }
    const double pooled = static_cast<double>(true_falsified) / true_runs;
    std::printf("pooled false-alarm rate over the four sides: %.4f\n", pooled);
    EXPECT_LE(pooled, 0.05 + 2 * std::sqrt(0.05 * 0.95 / true_runs));
    EXPECT_FALSE(result.P_window.empty());
    EXPECT_FALSE(result.R_window.empty());
}

TEST(Calibration, RefusesWhatCannotBeCalibrated) {
    RunConfig config;
    PointSetup setup = small_point(config);
    CalibrationSettings s;
    s.trials = config.trials;
    s.runs = 5;
    EXPECT_THROW(calibrate_verdict(setup, s, nullptr), InputError);  // fewer than 10 runs
    s.runs = 20;
    s.trials = std::int64_t{1} << 28;  // (50 + 20) · 2^28 trial indices pass 2^32
    EXPECT_THROW(calibrate_verdict(setup, s, nullptr), InputError);
}
