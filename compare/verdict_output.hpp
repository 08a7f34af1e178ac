// How the κ scan and the verdict (compare/kappa_scan.hpp) are written, shared by simulate,
// sweep and compare run folders so the three agree column for column: kappa_scan.csv,
// verdict.csv, the star and degeneracy columns of bounds.csv, and the manifest's blocks.
#pragma once
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "compare/kappa_scan.hpp"
#include "theory/bounds.hpp"

namespace attngeo::compare {

// The manifest's decision lines for the scan and the single κ.
extern const char* const kScanDecision;
extern const char* const kIntervalScoreDecision;

// Column names (no leading or trailing comma).
extern const char* const kScanColumns;      // variant,metric,side,kappa,coverage,…
extern const char* const kVerdictColumns;   // variant,metric,side,kappa_star,…
extern const std::string kStarFlagColumns;  // kappa_P_lower,…,P_lower_star,…,delta_le0,…

// The scan's rows of one variant, each line opening with `prefix` (e.g. "0," for grid point
// 0 of a simulation; "" in compare).
void append_scan_rows(std::ostream& out, const std::string& prefix, theory::BoundVariant variant,
                      const KappaScan& scan);
// The four verdict rows (P lower, P upper, R lower, R upper) of one variant.
void append_verdict_rows(std::ostream& out, const std::string& prefix, theory::BoundVariant variant,
                         const KappaScan& scan);
// The fields of kStarFlagColumns for point `point`, whose bound row (any κ: the margin flags
// do not depend on it) is `row`; no leading comma.
std::string star_flag_fields(const KappaScan& scan, std::size_t point, const theory::BoundRow& row);

// The manifest's block for one variant: kappa_rule, interval_score, sides, degenerate.
// `margins` [points] are the margin flags of every point, in the scan's point order.
nlohmann::json verdict_json(const KappaScan& scan, const std::vector<theory::MarginFlags>& margins,
                            const char* kappa_rule);

}  // namespace attngeo::compare
