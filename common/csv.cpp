// Strict numeric text readers; see csv.hpp.
#include "common/csv.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "common/errors.hpp"

namespace attngeo {
namespace {

std::string trim(const std::string& s) {
    const auto first = s.find_first_not_of(" \t\r\n");
    if (first == std::string::npos) return "";
    const auto last = s.find_last_not_of(" \t\r\n");
    return s.substr(first, last - first + 1);
}

std::vector<std::string> split_fields(const std::string& line) {
    std::vector<std::string> fields;
    if (line.find(',') != std::string::npos) {
        std::string field;
        std::istringstream in(line);
        while (std::getline(in, field, ','))
            fields.push_back(trim(field));
        if (!line.empty() && line.back() == ',') fields.push_back("");
    } else {
        std::istringstream in(line);
        std::string field;
        while (in >> field)
            fields.push_back(field);
    }
    return fields;
}

}  // namespace

double parse_finite_double(const std::string& text, const std::string& context) {
    const std::string t = trim(text);
    if (t.empty()) throw InputError(context + ": empty field, expected a number");
    errno = 0;
    char* end = nullptr;
    const double value = std::strtod(t.c_str(), &end);
    if (end != t.c_str() + t.size()) {
        throw InputError(context + ": '" + t + "' is not a number");
    }
    if (!std::isfinite(value)) {
        throw InputError(context + ": '" + t + "' is not finite, expected a finite number");
    }
    return value;
}

NumericTable read_numeric_table(const std::string& path, const std::string& what) {
    std::ifstream in(path);
    if (!in) throw InputError(what + " '" + path + "': cannot open file");
    NumericTable table;
    std::string line;
    int line_number = 0;
    while (std::getline(in, line)) {
        ++line_number;
        const auto hash = line.find('#');
        if (hash != std::string::npos) line.erase(hash);
        if (trim(line).empty()) continue;
        const auto fields = split_fields(line);
        const std::string where = what + " '" + path + "' line " + std::to_string(line_number);
        std::vector<double> row;
        row.reserve(fields.size());
        for (std::size_t c = 0; c < fields.size(); ++c) {
            row.push_back(
                parse_finite_double(fields[c], where + " column " + std::to_string(c + 1)));
        }
        if (!table.rows.empty() && row.size() != table.columns()) {
            throw InputError(where + ": has " + std::to_string(row.size()) + " columns, expected " +
                             std::to_string(table.columns()) +
                             " like the first row (ragged table)");
        }
        table.rows.push_back(std::move(row));
        table.line_numbers.push_back(line_number);
    }
    if (table.rows.empty()) throw InputError(what + " '" + path + "': no data rows");
    return table;
}

std::vector<double> read_numeric_column(const std::string& path, const std::string& what) {
    const NumericTable table = read_numeric_table(path, what);
    if (table.columns() != 1) {
        throw InputError(what + " '" + path + "': expected one number per line, found " +
                         std::to_string(table.columns()) + " columns");
    }
    std::vector<double> values;
    values.reserve(table.rows.size());
    for (const auto& row : table.rows)
        values.push_back(row[0]);
    return values;
}

}  // namespace attngeo
