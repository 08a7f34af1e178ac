// The one reader of a simulate or sweep folder's tables, checked against its manifest; see
// simulation_tables.hpp.
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
#include "common/run_schema.hpp"
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

// The N grid the manifest's configuration selects (every grid point of a simulate run has the
// same model, so the same n).
std::vector<int> manifest_sizes(const RunFolder& run) {
    return with_json_context(run_manifest_path(run.dir), [&] {
        const simulate::RunConfig config =
            simulate::run_config_from_json(run.manifest.at("config"));
        const simulate::GridPoint first = simulate::grid_points(config).front();
        try {
            return simulate::setup_point(config, first, simulate::ConfigSource::manifest)
                .spec.sizes;
        } catch (const InputError& e) {
            throw InputError("'" + run_manifest_path(run.dir) + "': " + e.what());
        }
    });
}

}  // namespace

SimulateTables read_simulate_tables(const RunFolder& run) {
    SimulateTables tables{
        read_csv_table((fs::path(run.dir) / schema::file::simulate_estimates).string()),
        read_csv_table((fs::path(run.dir) / schema::file::bounds).string())};
    const std::vector<int> grid = manifest_sizes(run);
    std::vector<std::size_t> all(tables.estimates.rows.size());
    for (std::size_t r = 0; r < all.size(); ++r)
        all[r] = r;
    check_sizes(tables.estimates, all, grid, "");
    std::map<std::string, std::vector<std::size_t>> by_variant;
    for (std::size_t r = 0; r < tables.bounds.rows.size(); ++r)
        by_variant[tables.bounds.text(r, "variant")].push_back(r);
    for (theory::BoundVariant v : theory::bound_variants()) {
        const std::string name = theory::to_string(v);
        check_sizes(tables.bounds, by_variant[name], grid, " for variant '" + name + "'");
    }
    return tables;
}

CsvTable read_sweep_table(const RunFolder& run) {
    CsvTable sweep = read_csv_table((fs::path(run.dir) / schema::file::sweep_estimates).string());
    check_integer_columns(sweep, {"grid", "N"});
    return sweep;
}

}  // namespace attngeo::reports
