// Table 1 (docs/design.md §3): the sensitivities of the paper bounds as a table1.csv and its
// manifest entry; see table1.hpp.
#include "compare/table1.hpp"

#include <algorithm>
#include <cmath>
#include <set>
#include <sstream>
#include <stdexcept>

#include "common/format.hpp"
#include "common/manifest_values.hpp"
#include "common/run_columns.hpp"
#include "common/run_schema.hpp"
#include "theory/parameter_table.hpp"

namespace attngeo::compare {

std::string table1_decision(const std::string& head) {
    return "table1.csv (Table 1): d(bound)/d(log parameter) of the paper bounds by central "
           "differences (theory::bound_sensitivities; rho0 differentiated directly) at " +
           head +
           ", at N = 2, 4, 16, 64, 256 where the grid has them (at most four, topped up to "
           "three with the smallest others).";
}

std::vector<int> followed_sizes(const std::vector<int>& grid) {
    const std::set<int> present(grid.begin(), grid.end());
    std::vector<int> follow;
    for (int N : {2, 4, 16, 64, 256})
        if (present.count(N) && follow.size() < 4) follow.push_back(N);
    for (int N : present)
        if (follow.size() < 3 && std::find(follow.begin(), follow.end(), N) == follow.end())
            follow.push_back(N);
    std::sort(follow.begin(), follow.end());
    return follow;
}

namespace {

// The value Table 1 differentiates for `parameter` (theory/parameter_table's field).
double knob_value(const std::string& parameter, const theory::ModelParameters& p,
                  const theory::BoundSettings& s) {
    const theory::ParameterDescriptor* entry = theory::find_parameter(parameter);
    if (entry == nullptr || entry->group == theory::ParameterGroup::generator)
        return std::nan("");  // not a Table-1 parameter
    // Read only: the fields are pointers into the caller's values.
    theory::ParameterFields f = theory::parameter_fields(const_cast<theory::ModelParameters&>(p));
    f.d = const_cast<double*>(&s.d);
    f.kappa = const_cast<double*>(&s.kappa);
    return theory::get_value(*entry, f);
}

// Why every derivative of `parameter` is NaN: at 0 on a log scale (d/d log x does not exist),
// or no valid step to either side (theory::bound_sensitivities gives up there).
std::string nan_reason(const std::string& parameter, double value) {
    if (value == 0 && parameter != "rho0")
        return parameter + " = 0: the derivative is taken in log(" + parameter +
               "), which does not exist at 0 (e.g. a fit at its omega = 0 clamp)";
    return "the bounds cannot be evaluated on either side of " + parameter + " = " +
           format_double(value) + " (the edge of its valid range)";
}

void explain_nan_rows(Table1& table, const theory::ModelParameters& params,
                      const theory::BoundSettings& settings) {
    std::vector<std::string> order;
    std::set<std::string> finite;
    for (const auto& r : table.rows) {
        if (std::find(order.begin(), order.end(), r.parameter) == order.end())
            order.push_back(r.parameter);
        for (double x : {r.precision_lower, r.precision_upper, r.recall_lower, r.recall_upper,
                         r.fmax_lower, r.fmax_upper, r.fmin_lower, r.fmin_upper})
            if (!std::isnan(x)) finite.insert(r.parameter);
    }
    for (const std::string& parameter : order)
        if (!finite.count(parameter))
            table.nan_rows.emplace_back(
                parameter, nan_reason(parameter, knob_value(parameter, params, settings)));
}

}  // namespace

Table1 sensitivity_table(const theory::ModelParameters& params, const std::vector<int>& sizes,
                         const theory::BoundSettings& settings) {
    Table1 table;
    table.d = settings.d;
    table.kappa = settings.kappa;
    try {
        theory::build_head_model(params);  // an invalid head throws here, not per knob
        const int n = theory::token_count(params);
        std::vector<int> inside;
        for (int N : sizes)
            if (N <= n) inside.push_back(N);
        table.rows = theory::bound_sensitivities(params, inside, settings);
        explain_nan_rows(table, params, settings);
    } catch (const std::domain_error& e) {
        table.rows.clear();
        table.error = e.what();
    }
    return table;
}

std::string table1_csv(const Table1& table) {
    std::ostringstream csv;
    csv << schema::csv_header(schema::page::compare, schema::file::table1) << '\n';
    for (const auto& r : table.rows) {
        csv << r.parameter << ',' << r.N;
        for (double x : {r.precision_lower, r.precision_upper, r.recall_lower, r.recall_upper,
                         r.fmax_lower, r.fmax_upper, r.fmin_lower, r.fmin_upper})
            csv << ',' << format_double(x);
        csv << '\n';
    }
    return csv.str();
}

nlohmann::json table1_manifest(const Table1& table) {
    nlohmann::json undefined_rows = nlohmann::json::array();
    for (const auto& [parameter, why] : table.nan_rows)
        undefined_rows.push_back({{"parameter", parameter}, {"why", why}});
    return {{"d", json_number(table.d)},
            {"kappa", json_number(table.kappa)},
            {"variant", "paper"},
            {"error", table.error.empty() ? nlohmann::json(nullptr) : nlohmann::json(table.error)},
            {"undefined_rows", undefined_rows}};
}

}  // namespace attngeo::compare
