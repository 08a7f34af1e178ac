// Tests of simulate/realised_assumptions (Assumptions 1-3 on what the generator realised, the
// manifest's per-point "assumptions" block) recounted plainly from the realised sums and the
// head, and of Table 1's undefined_rows (why a row is all NaN).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <map>
#include <string>

#include "common/exact_sums.hpp"
#include "compare/table1.hpp"
#include "simulate/montecarlo.hpp"
#include "simulate/realised_assumptions.hpp"
#include "theory/parametric.hpp"

namespace attngeo::simulate {
using namespace attngeo::compare;
namespace {

SimulationSpec spec_with(const std::string& profile, double lambda) {
    SimulationSpec spec;
    spec.model.profile.L = 63;
    spec.model.profile.T1 = 8;
    spec.model.profile.T2 = 48;
    spec.model.profile.p_sink = 0.3;
    spec.model.profile_kind = theory::parse_profile_spec(profile);
    spec.model.beta = 0.2;
    spec.model.lambda = lambda;
    spec.d = 32;
    spec.sizes = {1, 2, 4};
    spec.all_sizes = false;
    return spec;
}

}  // namespace

TEST(RealisedAssumptions, TheBlockRecountsFromTheRealisedSums) {
    const SimulationSpec spec = spec_with("assumption3", 0.1);
    const theory::HeadModel head = simulation_head(spec);
    const SimulationSums sums = run_trials(spec, 0, 400, 2);
    const nlohmann::json block = realised_assumptions_json(sums, spec, head);
    for (const char* key : {"heads", "A1_holds", "compressed_sink", "stable_norms", "A2_holds",
                            "beta_uninformative", "A3_holds", "sink_exists", "profile_r2_ok",
                            "profile_identified", "median_sink_mass", "values"})
        EXPECT_TRUE(block.contains(key)) << key;
    EXPECT_EQ(block.at("heads"), 1);
    // A2 by hand: realised mean cos at lags 1..8 against e^{-βk} (the cosines of this head).
    double mae = 0, zero = 0;
    std::vector<double> c;
    for (int k = 1; k <= kRealisedLags; ++k) {
        const double realised = estimate(sums.realised.cos_by_lag[k - 1]).mean;
        c.push_back(realised);
        mae += std::abs(realised - std::exp(-spec.model.beta * k)) / kRealisedLags;
        zero += std::abs(realised) / kRealisedLags;
    }
    std::sort(c.begin(), c.end());
    const double median = 0.5 * (c[3] + c[4]);
    double constant = 0;
    for (double x : c)
        constant += std::abs(x - median) / kRealisedLags;
    const auto& values = block.at("values");
    const double largest = std::max({std::abs(values.at("mae_model").get<double>() - mae),
                                     std::abs(values.at("mae_zero").get<double>() - zero),
                                     std::abs(values.at("mae_constant").get<double>() - constant)});
    std::cout << "realised A2 values against a plain recount: largest difference " << largest
              << "\n";
    EXPECT_LE(largest, 1e-12);
    EXPECT_EQ(block.at("A2_holds"), mae <= 0.8 * std::min(zero, constant) ? 1 : 0);
    // A1: λ = 0.1 with exact norms; A3: p_sink 0.3 well above p_base, the profile exact.
    EXPECT_NEAR(values.at("lambda").get<double>(), 0.1, 1e-12);
    EXPECT_EQ(block.at("A1_holds"), 1);
    EXPECT_EQ(block.at("sink_exists"), 1);
    EXPECT_EQ(block.at("A3_holds"), 1);
    EXPECT_DOUBLE_EQ(block.at("median_sink_mass").get<double>(), head.alpha[0]);
}

TEST(RealisedAssumptions, AUniformProfileHasNoSink) {
    const SimulationSpec spec = spec_with("uniform", 0.5);
    const theory::HeadModel head = simulation_head(spec);
    const SimulationSums sums = run_trials(spec, 0, 50, 2);
    const theory::AssumptionCheck check = realised_assumption_check(sums, spec, head);
    EXPECT_TRUE(check.compressed_sink);  // λ = 0.5
    EXPECT_TRUE(check.a1);
    EXPECT_FALSE(check.sink_exists);  // α_0 equals the median α
    EXPECT_FALSE(check.profile_r2_ok);
    EXPECT_FALSE(check.a3);
}

// Table 1 at ω = 0 (the global profile's clamp in compare): the ω rows are all NaN, and
// undefined_rows says so; every other parameter has numbers and is not named.
TEST(Table1, UndefinedRowsNameWhyARowIsNan) {
    theory::ModelParameters p;
    p.profile.L = 31;
    p.profile.T1 = 4;
    p.profile.T2 = 24;
    p.profile.p_sink = 0.3;
    p.profile.eta = 0.2;
    p.profile.omega = 0;
    const Table1 table = sensitivity_table(p, {2, 4}, theory::BoundSettings{});
    ASSERT_FALSE(table.rows.empty());
    std::map<std::string, bool> any_number;
    for (const auto& r : table.rows)
        any_number[r.parameter] |= !std::isnan(r.precision_lower) ||
                                   !std::isnan(r.precision_upper) || !std::isnan(r.recall_lower) ||
                                   !std::isnan(r.recall_upper) || !std::isnan(r.fmax_lower) ||
                                   !std::isnan(r.fmax_upper) || !std::isnan(r.fmin_lower) ||
                                   !std::isnan(r.fmin_upper);
    EXPECT_FALSE(any_number.at("omega"));
    const nlohmann::json rows = table1_manifest(table).at("undefined_rows");
    std::map<std::string, std::string> named;
    for (const auto& row : rows)
        named[row.at("parameter")] = row.at("why");
    for (const auto& [parameter, has] : any_number)
        EXPECT_EQ(named.count(parameter), has ? 0u : 1u) << parameter;
    EXPECT_NE(named.at("omega").find("log(omega)"), std::string::npos) << named.at("omega");
}

}  // namespace attngeo::simulate
