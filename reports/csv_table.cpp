// Nothing to define: reports::CsvTable is common/csv.hpp's table (see csv_table.hpp). This file
// stays only while reports/CMakeLists.txt lists it.
#include "reports/csv_table.hpp"
