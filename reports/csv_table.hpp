// A header-addressed CSV table as the tool writes them (no quoting), for reading run outputs.
#pragma once
#include <string>
#include <vector>

namespace attngeo::reports {

struct CsvTable {
    std::string path;
    std::vector<std::string> header;
    std::vector<std::vector<std::string>> rows;

    // Column index of `name`; throws InputError naming the file when absent.
    std::size_t column(const std::string& name) const;
    bool has_column(const std::string& name) const;
    const std::string& text(std::size_t row, const std::string& name) const;
    double number(std::size_t row, const std::string& name) const;  // "inf"/"nan" allowed
};

// Reads a CSV with a header line; throws InputError naming the file on a ragged table.
CsvTable read_csv_table(const std::string& path);

}  // namespace attngeo::reports
