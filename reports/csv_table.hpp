// reports' name for the header-CSV table of common/csv.hpp: run outputs (simulate.csv,
// bounds.csv, compare's tables) are read with the common reader and its error dialect.
#pragma once
#include "common/csv.hpp"

namespace attngeo::reports {

using attngeo::CsvTable;
using attngeo::read_csv_table;

}  // namespace attngeo::reports
