// Table 1 (docs/design.md §3, "Sensitivity"): d(bound)/d(log parameter) of the paper bounds at one
// parametric head, written as table1.csv by the run that owns it (a sweep, a compare) so that
// reports only read it.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "theory/parametric.hpp"

namespace attngeo::compare {

struct Table1 {
    double d = 0, kappa = 0;                   // where the derivatives are taken
    std::vector<theory::SensitivityRow> rows;  // [parameters · N] bound_sensitivities order
    std::string error;  // why there are no rows (not a valid parametric head); empty otherwise
    // Why a parameter's rows are all NaN: its name and the reason, one per such parameter.
    std::vector<std::pair<std::string, std::string>> nan_rows;
};

// The few N a table follows: 2, 4, 16, 64, 256 where the grid has them (at most four), topped
// up to three with the grid's smallest others; ascending. The sweep report's panels follow the
// same N.
std::vector<int> followed_sizes(const std::vector<int>& grid);

// Table 1 of `params` at `sizes` (those above the head's n are left out). An invalid head
// (std::domain_error from theory) gives no rows and the reason in `error`.
Table1 sensitivity_table(const theory::ModelParameters& params, const std::vector<int>& sizes,
                         const theory::BoundSettings& settings);

// table1.csv: parameter,N,dP_lower,dP_upper,dR_lower,dR_upper,dFmax_lower,dFmax_upper,
// dFmin_lower,dFmin_upper (docs/commands/compare.md, docs/commands/simulate.md).
std::string table1_csv(const Table1& table);
// The manifest's "table1": d, kappa, variant, error (null when there are rows) and undefined_rows
// ([{parameter, why}] for every parameter whose derivatives are all NaN).
nlohmann::json table1_manifest(const Table1& table);
// The decision a manifest records for table1.csv; `head` says at which head, d and κ the
// derivatives were taken.
std::string table1_decision(const std::string& head);

}  // namespace attngeo::compare
