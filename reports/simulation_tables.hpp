// The one reader of a simulate or sweep folder's tables (every report section and the
// across-models figures read them through it): the key columns (grid, N) hold integers and
// simulate.csv, bounds.csv and sweep.csv (per bound variant and grid point) hold exactly the
// manifest's N grid.
#pragma once
#include "reports/csv_table.hpp"
#include "reports/sections.hpp"

namespace attngeo::reports {

// A simulate folder's tables.
struct SimulateTables {
    CsvTable estimates;  // simulate.csv: one row per N of the manifest's grid
    CsvTable bounds;     // bounds.csv: one row per (N, bound variant)
};

// simulate.csv and bounds.csv of `run` (a simulate folder), read and checked: InputError naming
// the file (and its line and column, or the first missing N) when a table is damaged or does not
// cover the manifest's grid, so no report is built on a table with a row missing.
SimulateTables read_simulate_tables(const RunFolder& run);

// sweep.csv of `run` (a sweep folder), read and checked: the columns the sections read are
// present, and each grid point of the manifest has, for each bound variant, one row per N of its
// grid (InputError naming the file, line and column, or the first missing N, otherwise).
CsvTable read_sweep_table(const RunFolder& run);

}  // namespace attngeo::reports
