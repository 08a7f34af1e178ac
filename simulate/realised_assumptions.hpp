// Assumptions 1–3 checked on what the generator realised at one grid point (docs/design.md §7
// "Assumption checks"): the same "assumptions" block compare writes, for one head, with the
// values it was decided on, in the simulate manifest's point entry.
#pragma once
#include <nlohmann/json.hpp>

#include "simulate/montecarlo.hpp"
#include "theory/assumption_checks.hpp"

namespace attngeo::simulate {

// The checks of the realised head: A1 from λ = ‖v_0‖ / median_{i≥1} ‖v_i‖ of the nominal
// norms and the CV √(CV_nominal² + CV_realised²) (the nominal norms' spread over i ≥ 1 and the
// realised ‖v_i‖ / nominal's); A2 from the realised mean cos at lags 1..8 against the expected
// cosines of the head (the mean over i ≥ 1 of head.cosine(i, i+k)), the best constant and 0;
// A3 from α_0 > p_base (Assumption 3's p_base, or the median α_{i≥1} for other profiles), with
// R² = 1 and nothing to identify for a parametric Assumption-3 profile and no R² otherwise.
theory::AssumptionCheck realised_assumption_check(const SimulationSums& sums,
                                                  const SimulationSpec& spec,
                                                  const theory::HeadModel& head);

// assumptions_summary of that one head plus "values": lambda, cv, mae_model, mae_constant,
// mae_zero, negative_cos_share, p_sink, p_base.
nlohmann::json realised_assumptions_json(const SimulationSums& sums, const SimulationSpec& spec,
                                         const theory::HeadModel& head);

}  // namespace attngeo::simulate
