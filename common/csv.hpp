// Strict readers for the small numeric text files the CLI takes (points, weights, norms,
// cosine matrices). Every defect is an InputError naming the file and line.
#pragma once
#include <string>
#include <vector>

namespace attngeo {

// A rectangular table of finite numbers read from text.
struct NumericTable {
    std::vector<std::vector<double>> rows;  // [rows][columns], all rows the same width
    std::vector<int> line_numbers;          // [rows] 1-based source line of each row
    std::size_t columns() const { return rows.empty() ? 0 : rows.front().size(); }
};

// Reads `path`: one row per line, fields separated by commas (or by whitespace when a line
// has no comma), no header, blank lines and `#` comments ignored. Throws InputError for a
// missing file, an empty table, a ragged row, an empty field, or a value that is not a finite
// number. `what` describes the file for messages ("points file", "--cos file", ...).
NumericTable read_numeric_table(const std::string& path, const std::string& what);

// Reads a file with exactly one finite number per row.
std::vector<double> read_numeric_column(const std::string& path, const std::string& what);

// Parses one finite double; `context` names where it came from. Throws InputError.
double parse_finite_double(const std::string& text, const std::string& context);

}  // namespace attngeo
