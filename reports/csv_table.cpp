// Header-addressed CSV reading; see csv_table.hpp.
#include "reports/csv_table.hpp"

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "common/errors.hpp"

namespace attngeo::reports {
namespace {

std::vector<std::string> split(const std::string& line) {
    std::vector<std::string> fields;
    std::string field;
    std::istringstream in(line);
    while (std::getline(in, field, ','))
        fields.push_back(field);
    if (!line.empty() && line.back() == ',') fields.push_back("");
    return fields;
}

}  // namespace

std::size_t CsvTable::column(const std::string& name) const {
    for (std::size_t c = 0; c < header.size(); ++c)
        if (header[c] == name) return c;
    throw InputError("'" + path + "': no column '" + name + "'");
}

bool CsvTable::has_column(const std::string& name) const {
    for (const auto& h : header)
        if (h == name) return true;
    return false;
}

const std::string& CsvTable::text(std::size_t row, const std::string& name) const {
    return rows.at(row).at(column(name));
}

double CsvTable::number(std::size_t row, const std::string& name) const {
    const std::string& t = text(row, name);
    char* end = nullptr;
    const double v = std::strtod(t.c_str(), &end);
    if (t.empty() || end != t.c_str() + t.size()) {
        throw InputError("'" + path + "' row " + std::to_string(row + 2) + " column " + name +
                         ": '" + t + "' is not a number");
    }
    return v;
}

CsvTable read_csv_table(const std::string& path) {
    std::ifstream in(path);
    if (!in) throw InputError("'" + path + "': cannot open");
    CsvTable t;
    t.path = path;
    std::string line;
    if (!std::getline(in, line))
        throw InputError("'" + path + "': empty file, expected a CSV header");
    t.header = split(line);
    int number = 1;
    while (std::getline(in, line)) {
        ++number;
        if (line.empty()) continue;
        auto fields = split(line);
        if (fields.size() != t.header.size()) {
            throw InputError("'" + path + "' line " + std::to_string(number) + ": " +
                             std::to_string(fields.size()) + " fields, expected " +
                             std::to_string(t.header.size()));
        }
        t.rows.push_back(std::move(fields));
    }
    return t;
}

}  // namespace attngeo::reports
