// Up-front checks of a simulate or sweep folder's tables against its manifest, before any
// section is built: the key columns (grid, N) hold integers and, for a simulate folder,
// simulate.csv and bounds.csv (per bound variant) hold exactly the manifest's N grid.
#pragma once
#include "reports/report.hpp"

namespace attngeo::reports {

// InputError naming the file (and its line and column, or the first missing N) when a table
// of `run` is damaged or does not cover the manifest's grid, so no report is built on a table
// with a row missing.
void check_simulation_tables(const RunFolder& run);

}  // namespace attngeo::reports
