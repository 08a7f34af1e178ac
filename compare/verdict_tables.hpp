// How the κ scan and the verdict (compare/falsification.hpp) are written, shared by simulate,
// sweep and compare run folders so the three agree column for column: kappa_scan.csv,
// verdict.csv, the per-point judgement columns of bounds.csv, and the manifest's blocks
// (docs/commands/simulate.md, docs/commands/compare.md).
#pragma once
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "compare/falsification.hpp"
#include "theory/bounds.hpp"

namespace attngeo::compare {

// The manifest's decision line for the scan and the verdict.
extern const char* const kVerdictDecision;

// Column names (no leading or trailing comma).
extern const std::string kKappaScanColumns;  // variant,metric,side,kappa,consistent,…
extern const std::string kVerdictColumns;    // variant,metric,side,state,kappa_set,…

// The scan's rows of one variant (all units), each line opening with `prefix` (e.g. "0," for
// grid point 0 of a simulation; "" in compare).
void append_scan_rows(std::ostream& out, const std::string& prefix, theory::BoundVariant variant,
                      const KappaScan& scan);
// The four verdict rows (P lower, P upper, R lower, R upper) of one variant.
void append_verdict_rows(std::ostream& out, const std::string& prefix, theory::BoundVariant variant,
                         const KappaScan& scan);
// The fields of bounds.csv from kappa_P_lower on (run_columns) for `point`, whose bound row (any κ:
// its margin flags do not depend on it) is `row`; no leading comma.
std::string judgement_fields(const KappaScan& scan, std::size_t point, const theory::BoundRow& row);

// "2;3", "2-5;53-225": distinct N ascending, runs of three or more as first-last.
std::string size_list(std::vector<int> sizes);

// The rule the bound rows' κ followed: "joint" (one κ consistent on all four sides), "each
// side at its own kappa", "given", or "kappa-irrelevant" (d = ∞).
std::string rows_rule(const KappaScan& scan, bool given, bool kappa_irrelevant);

// The manifest's (and kappa.json's) block of one variant: the band, the bound rows' κ and rule,
// the information share, each side's verdict, the hypotheses and the degenerate fractions.
nlohmann::json verdict_json(const KappaScan& scan, const std::string& rows_rule_text,
                            int band_replicates);

// The intersection of several samples' sets (a sweep's grid points, compare's models) per
// variant: one block per side.
nlohmann::json joint_json(const JointScan& joint);

}  // namespace attngeo::compare
