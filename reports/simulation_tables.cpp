// The one reader of a simulate or sweep folder's tables, checked against its manifest (and
// bounds.csv against the columns simulate writes); see simulation_tables.hpp.
#include "reports/simulation_tables.hpp"

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "common/csv.hpp"
#include "common/errors.hpp"
#include "common/json_file.hpp"
#include "common/run_columns.hpp"
#include "common/run_schema.hpp"
#include "compare/verdict_tables.hpp"
#include "simulate/run.hpp"
#include "theory/bounds.hpp"

namespace fs = std::filesystem;

namespace attngeo::reports {
namespace {

// Every value of the integer `columns` of `table`, each checked (InputError naming the file,
// line and column otherwise).
void check_integer_columns(const CsvTable& table, const std::vector<std::string>& columns) {
    for (const std::string& name : columns)
        for (std::size_t r = 0; r < table.rows.size(); ++r)
            (void)table.integer(r, name);
}

// The N of `rows` of `table` must be exactly `grid`, each once; `what` says which rows
// ("" or " for variant 'paper'").
void check_sizes(const CsvTable& table, const std::vector<std::size_t>& rows,
                 const std::vector<int>& grid, const std::string& what) {
    std::set<std::int64_t> seen;
    for (std::size_t r : rows) {
        const std::int64_t N = table.integer(r, "N");
        if (std::find(grid.begin(), grid.end(), N) == grid.end() || !seen.insert(N).second)
            throw InputError(
                table.where(r, "N") + ": N = " + std::to_string(N) +
                (seen.count(N) ? " appears twice" : " is not in the manifest's N grid") + what);
    }
    for (int N : grid) {
        if (!seen.count(N))
            throw InputError("'" + table.path + "': no row for N = " + std::to_string(N) + what +
                             " (the manifest's N grid has " + std::to_string(grid.size()) +
                             " values)");
    }
}

// The N grid of each grid point of the manifest's configuration (a simulate run has one point;
// a sweep over L has a grid per point).
std::vector<std::vector<int>> manifest_sizes(const RunFolder& run) {
    return with_json_context(run_manifest_path(run.dir), [&] {
        const simulate::RunConfig config =
            simulate::run_config_from_json(run.manifest.at("config"));
        std::vector<std::vector<int>> sizes;
        try {
            for (const simulate::GridPoint& point : simulate::grid_points(config))
                sizes.push_back(
                    simulate::setup_point(config, point, simulate::ConfigSource::manifest)
                        .spec.sizes);
        } catch (const InputError& e) {
            throw InputError("'" + run_manifest_path(run.dir) + "': " + e.what());
        }
        return sizes;
    });
}

// The rows of `table` by bound variant (a row of another variant is bad input); `rows` all rows
// or those of one grid point.
std::map<std::string, std::vector<std::size_t>> rows_by_variant(
    const CsvTable& table, const std::vector<std::size_t>& rows) {
    std::map<std::string, std::vector<std::size_t>> by_variant;
    for (theory::BoundVariant v : theory::bound_variants())
        by_variant[theory::to_string(v)];
    for (std::size_t r : rows) {
        const auto found = by_variant.find(table.text(r, "variant"));
        if (found == by_variant.end())
            throw InputError(table.where(r, "variant") + ": '" + table.text(r, "variant") +
                             "' is not a bound variant");
        found->second.push_back(r);
    }
    return by_variant;
}

// 0, 1, …, rows − 1 of `table`.
std::vector<std::size_t> every_row(const CsvTable& table) {
    std::vector<std::size_t> rows(table.rows.size());
    for (std::size_t r = 0; r < rows.size(); ++r)
        rows[r] = r;
    return rows;
}

// bounds.csv's columns as simulate writes them: the row's key, the bound values, then each
// side's judgement.
std::vector<std::string> simulate_bound_columns() {
    return schema::csv_column_names(schema::page::simulate, schema::file::bounds);
}

}  // namespace

SimulateTables read_simulate_tables(const RunFolder& run) {
    SimulateTables tables{
        read_csv_table((fs::path(run.dir) / schema::file::simulate_estimates).string()),
        read_table_with_columns((fs::path(run.dir) / schema::file::bounds).string(),
                                simulate_bound_columns())};
    const std::vector<int> grid = manifest_sizes(run).front();
    check_sizes(tables.estimates, every_row(tables.estimates), grid, "");
    for (const auto& [name, rows] : rows_by_variant(tables.bounds, every_row(tables.bounds)))
        check_sizes(tables.bounds, rows, grid, " for variant '" + name + "'");
    return tables;
}

CsvTable read_sweep_table(const RunFolder& run) {
    CsvTable sweep = read_table_with_columns(
        (fs::path(run.dir) / schema::file::sweep_estimates).string(),
        {"grid", "N", "variant", "kappa", "P_mean", "P_ci_lo", "P_ci_hi", "R_mean", "R_ci_lo",
         "R_ci_hi", "P_lower", "P_upper", "R_lower", "R_upper", "P_lower_joint", "P_upper_joint",
         "R_lower_joint", "R_upper_joint"});
    check_integer_columns(sweep, {"grid", "N"});
    const std::vector<std::vector<int>> grids = manifest_sizes(run);
    std::vector<std::vector<std::size_t>> rows_of_point(grids.size());
    for (std::size_t r = 0; r < sweep.rows.size(); ++r) {
        const std::int64_t point = sweep.integer(r, "grid");
        if (point < 0 || point >= static_cast<std::int64_t>(grids.size()))
            throw InputError(sweep.where(r, "grid") + ": grid = " + std::to_string(point) +
                             ", expected a grid point of the manifest (0.." +
                             std::to_string(grids.size() - 1) + ")");
        rows_of_point[static_cast<std::size_t>(point)].push_back(r);
    }
    for (std::size_t point = 0; point < grids.size(); ++point)
        for (const auto& [name, rows] : rows_by_variant(sweep, rows_of_point[point]))
            check_sizes(sweep, rows, grids[point],
                        " for grid point " + std::to_string(point) + ", variant '" + name + "'");
    return sweep;
}

}  // namespace attngeo::reports
