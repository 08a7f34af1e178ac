// assumptions.csv (docs/design.md §7 "Assumption checks"): per head, whether Assumptions 1–3 hold
// where compare applies them, from the extract's heads.csv, the fits and their intervals; the
// manifest's "assumptions" summary comes from the same checks.
#pragma once
#include <string>
#include <vector>

#include "compare/extract_folder_reader.hpp"
#include "compare/fit_intervals.hpp"
#include "theory/assumption_checks.hpp"

namespace attngeo::compare {

// Whether a head's fitted profile has no parameter at a clamp or unidentified (intervals are
// judged only where there are any). False when the profile could not be fitted.
bool profile_identified(const PointFits& point, const ParameterIntervals* intervals);

// One check per head. points [heads] are the point fits (decay over lags 1..K of
// run.rows[i].cos_by_lag), intervals [heads] or empty (no intervals). A1 uses λ and
// cv_positional of heads.csv; A2 the e^{−βk} fit against the best constant and β = ∞ over the
// fitted lags; A3 the profile fit (p_sink > p_base, R² on log α, profile_identified).
std::vector<theory::AssumptionCheck> check_heads(const EmpiricalRun& run,
                                                 const std::vector<PointFits>& points,
                                                 const std::vector<ParameterIntervals>& intervals);

// Where the sinks are: the heads whose check found one (p_sink > p_base), by the mass the last
// query puts on position 0, largest first (ties: run order), at most `top` of them, as
// [{"layer", "head", "sink_mass"}] for the manifest's assumptions block.
nlohmann::json strongest_sinks(const EmpiricalRun& run,
                               const std::vector<theory::AssumptionCheck>& checks, int top = 3);

// assumptions.csv (docs/commands/compare.md): one row per head.
std::string assumptions_csv(const EmpiricalRun& run, const std::vector<PointFits>& points,
                            const std::vector<theory::AssumptionCheck>& checks,
                            const std::vector<char>& counted);

}  // namespace attngeo::compare
