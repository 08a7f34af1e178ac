// reports' name for the header-CSV table of common/csv.hpp: run outputs (simulate.csv,
// bounds.csv, compare's tables) are read with the common reader and its error dialect.
#pragma once
#include <sstream>
#include <string>
#include <vector>

#include "common/csv.hpp"

namespace attngeo::reports {

using attngeo::CsvTable;
using attngeo::read_csv_table;

// `path` read, its header checked for every one of `columns` (InputError naming the file and the
// first missing column): a table without one was not written by the command that owns it, even
// where no section reads that column.
inline CsvTable read_table_with_columns(const std::string& path,
                                        const std::vector<std::string>& columns) {
    CsvTable table = read_csv_table(path);
    for (const std::string& name : columns)
        (void)table.column(name);
    return table;
}

// "a,b,c" (a writer's column list, e.g. compare's kVerdictColumns) as names.
inline std::vector<std::string> column_list(const std::string& columns) {
    std::vector<std::string> names;
    std::stringstream list(columns);
    for (std::string name; std::getline(list, name, ',');)
        names.push_back(name);
    return names;
}

}  // namespace attngeo::reports
