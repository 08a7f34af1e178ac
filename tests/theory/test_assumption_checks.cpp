// Tests of theory/assumption_checks: the A2 baselines against a plain recount (median by a
// brute-force search over constants), each assumption's verdict at spot values and edges, the
// summary's counts, and bad input.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <vector>

#include "theory/assumption_checks.hpp"

namespace attngeo::theory {
namespace {

// The least MAE over constants, by brute force: the optimum is at one of the data points.
double plain_best_constant_mae(const std::vector<double>& c) {
    double best = 1e300;
    for (double m : c) {
        double mae = 0;
        for (double x : c)
            mae += std::abs(x - m);
        best = std::min(best, mae / c.size());
    }
    return best;
}

}  // namespace

TEST(AssumptionChecks, DecayBaselinesEqualAPlainRecount) {
    const std::vector<std::vector<double>> curves = {
        {0.9, 0.8, 0.7, 0.6, 0.5}, {0.2, 0.21, 0.19, 0.2}, {0.3, -0.1, 0.05, -0.2, 0.0, 0.1}};
    double largest = 0;
    for (const auto& c : curves) {
        std::vector<double> model(c.size());
        for (std::size_t k = 0; k < c.size(); ++k)
            model[k] = std::exp(-0.1 * (k + 1));
        const DecayBaselines b = decay_baselines(c, model);
        double mae_model = 0, mae_zero = 0;
        int negative = 0;
        for (std::size_t k = 0; k < c.size(); ++k) {
            mae_model += std::abs(c[k] - model[k]) / c.size();
            mae_zero += std::abs(c[k]) / c.size();
            negative += c[k] < 0;
        }
        largest =
            std::max({largest, std::abs(b.mae_model - mae_model), std::abs(b.mae_zero - mae_zero),
                      std::abs(b.mae_constant - plain_best_constant_mae(c)),
                      std::abs(b.negative_share - double(negative) / c.size())});
        EXPECT_EQ(b.uninformative, !(b.mae_model <= 0.8 * std::min(b.mae_constant, b.mae_zero) &&
                                     std::min(b.mae_constant, b.mae_zero) > 0));
    }
    std::cout << "decay baselines against a plain recount: largest difference " << largest << "\n";
    EXPECT_LE(largest, 1e-15);
}

TEST(AssumptionChecks, AnExponentialIsInformativeAndAFlatCurveIsNot) {
    std::vector<double> c(32), model(32), flat(32, 0.2);
    for (int k = 1; k <= 32; ++k)
        c[k - 1] = model[k - 1] = std::exp(-0.1 * k);
    EXPECT_FALSE(decay_baselines(c, model).uninformative);
    // L0H0 of the issue: flat cosines near 0.2 fitted with some β.
    std::vector<double> fitted(32);
    for (int k = 1; k <= 32; ++k)
        fitted[k - 1] = std::exp(-1.156 * k);
    const DecayBaselines b = decay_baselines(flat, fitted);
    EXPECT_TRUE(b.uninformative);
    EXPECT_EQ(b.mae_constant, 0);
    // All zero: nothing to explain, so never informative.
    const std::vector<double> zeros(4, 0.0);
    EXPECT_TRUE(decay_baselines(zeros, zeros).uninformative);
}

TEST(AssumptionChecks, VerdictsAtSpotValuesAndTheSummaryCounts) {
    AssumptionInputs good;
    good.lambda = 0.5;
    good.cv = 0.05;  // the edge holds
    good.has_decay = true;
    good.decay.uninformative = false;
    good.has_profile = true;
    good.p_sink = 0.3;
    good.p_base = 0.001;
    good.r2_log = 0.9;
    good.profile_identified = true;
    good.sink_mass = 0.3;
    const AssumptionCheck ok = check_assumptions(good);
    EXPECT_TRUE(ok.a1 && ok.a2 && ok.a3);

    AssumptionInputs bad = good;
    bad.lambda = 1;  // λ ≥ 1: no compressed sink
    bad.cv = 0.06;
    bad.decay.uninformative = true;
    bad.p_sink = 1e-4;  // below p_base: no sink
    bad.p_base = 1e-3;
    bad.r2_log = 0.5;
    bad.sink_mass = 1e-4;
    const AssumptionCheck no = check_assumptions(bad);
    EXPECT_FALSE(no.compressed_sink || no.stable_norms || no.a1 || no.a2 || no.sink_exists ||
                 no.profile_r2_ok || no.a3);
    EXPECT_TRUE(no.beta_uninformative);
    AssumptionInputs no_profile = good;
    no_profile.has_profile = false;
    EXPECT_FALSE(check_assumptions(no_profile).a3);
    AssumptionInputs unidentified = good;
    unidentified.profile_identified = false;
    EXPECT_FALSE(check_assumptions(unidentified).a3);
    EXPECT_TRUE(check_assumptions(unidentified).sink_exists);

    const nlohmann::json s = assumptions_summary({ok, no, check_assumptions(unidentified)});
    EXPECT_EQ(s.at("heads"), 3);
    EXPECT_EQ(s.at("A1_holds"), 2);
    EXPECT_EQ(s.at("compressed_sink"), 2);
    EXPECT_EQ(s.at("stable_norms"), 2);
    EXPECT_EQ(s.at("A2_holds"), 2);
    EXPECT_EQ(s.at("beta_uninformative"), 1);
    EXPECT_EQ(s.at("A3_holds"), 1);
    EXPECT_EQ(s.at("sink_exists"), 2);
    EXPECT_EQ(s.at("profile_r2_ok"), 2);
    EXPECT_EQ(s.at("profile_identified"), 2);
    EXPECT_DOUBLE_EQ(s.at("median_sink_mass").get<double>(), 0.3);
    EXPECT_TRUE(assumptions_summary({}).at("median_sink_mass").is_null());
}

TEST(AssumptionChecks, BadInputThrows) {
    EXPECT_THROW(decay_baselines({}, {}), std::domain_error);
    EXPECT_THROW(decay_baselines({0.1, 0.2}, {0.1}), std::domain_error);
    EXPECT_THROW(decay_baselines({std::nan("")}, {0.1}), std::domain_error);
    EXPECT_THROW(decay_baselines({0.1}, {INFINITY}), std::domain_error);
}

}  // namespace attngeo::theory
