// Strict text table readers; see csv.hpp.
#include "common/csv.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
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

// Fields of a headerless numeric line: comma-separated, or whitespace-separated without a comma.
std::vector<std::string> split_numeric_fields(const std::string& line) {
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

// The comma-separated fields of a header-CSV line, into `fields` (reused across rows: a large
// file is read without an allocation per field once the strings have grown).
void split_commas(const std::string& line, std::vector<std::string>& fields) {
    std::size_t count = 0, start = 0;
    while (true) {
        const auto comma = line.find(',', start);
        const auto end = comma == std::string::npos ? line.size() : comma;
        if (count == fields.size()) fields.emplace_back();
        fields[count++].assign(line, start, end - start);
        if (comma == std::string::npos) break;
        start = comma + 1;
    }
    fields.resize(count);
}

// Reads one line without its '\n' or a trailing '\r'; false at the end of the stream.
bool read_line(std::istream& in, std::string& line) {
    if (!std::getline(in, line)) return false;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    return true;
}

// What is wrong with a number field, if anything; the message is built only on failure, since
// large tables parse millions of fields.
enum class NumberProblem { none, empty, not_a_number, not_finite };

bool is_blank(char c) {
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

// A double written in full, surrounding blanks allowed; inf and nan only when !finite_only.
NumberProblem parse_number(const std::string& text, bool finite_only, double& value) {
    const char* begin = text.c_str();
    const char* const stop = begin + text.size();
    while (begin != stop && is_blank(*begin))
        ++begin;
    if (begin == stop) return NumberProblem::empty;
    char* end = nullptr;
    value = std::strtod(begin, &end);
    if (end == begin) return NumberProblem::not_a_number;
    for (const char* rest = end; rest != stop; ++rest)
        if (!is_blank(*rest)) return NumberProblem::not_a_number;
    if (finite_only && !std::isfinite(value)) return NumberProblem::not_finite;
    return NumberProblem::none;
}

[[noreturn]] void throw_number_problem(NumberProblem problem, const std::string& text,
                                       const std::string& context) {
    if (problem == NumberProblem::empty)
        throw InputError(context + ": empty field, expected a number");
    if (problem == NumberProblem::not_finite)
        throw InputError(context + ": '" + trim(text) +
                         "' is not finite, expected a finite number");
    throw InputError(context + ": '" + trim(text) + "' is not a number");
}

}  // namespace

double parse_finite_double(const std::string& text, const std::string& context) {
    double value = 0;
    const NumberProblem problem = parse_number(text, true, value);
    if (problem != NumberProblem::none) throw_number_problem(problem, text, context);
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
        const auto fields = split_numeric_fields(line);
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

// ---- header CSVs ----

double CsvRow::parse(std::size_t column, bool finite_only) const {
    double value = 0;
    const NumberProblem problem = parse_number(fields_[column], finite_only, value);
    if (problem != NumberProblem::none)
        throw_number_problem(problem, fields_[column], where(column));
    return value;
}

std::optional<double> CsvRow::optional_finite_number(std::size_t column) const {
    if (fields_[column].empty()) return std::nullopt;
    return finite_number(column);
}

namespace {

// The whole of `field` as a decimal integer; InputError starting with `where` otherwise.
std::int64_t parse_integer(const std::string& field, const std::string& where) {
    const std::string text = trim(field);
    errno = 0;
    char* end = nullptr;
    const long long value = std::strtoll(text.c_str(), &end, 10);
    if (text.empty() || end != text.c_str() + text.size() || errno != 0)
        throw InputError(where + ": '" + field + "' is not an integer");
    return value;
}

}  // namespace

std::int64_t CsvRow::integer(std::size_t column) const {
    return parse_integer(fields_[column], where(column));
}

std::string CsvRow::where() const {
    return "'" + *path_ + "' line " + std::to_string(line_);
}

std::string CsvRow::where(std::size_t column) const {
    return where() + " column '" + (*header_)[column] + "'";
}

CsvReader::CsvReader(std::string path, const std::string& what)
    : path_(std::move(path)), in_(path_, std::ios::binary) {
    if (!in_) throw InputError("'" + path_ + "': cannot open file, expected " + what);
    if (!read_line(in_, line_text_))
        throw InputError("'" + path_ + "': empty file, expected " + what + " with a header line");
    line_ = 1;
    split_commas(line_text_, header_);
    row_.path_ = &path_;
    row_.header_ = &header_;
}

std::optional<std::size_t> CsvReader::find_column(const std::string& name) const {
    const auto it = std::find(header_.begin(), header_.end(), name);
    if (it == header_.end()) return std::nullopt;
    return static_cast<std::size_t>(it - header_.begin());
}

std::size_t CsvReader::column(const std::string& name) const {
    if (const auto index = find_column(name)) return *index;
    throw InputError("'" + path_ + "': missing column '" + name + "' in the header");
}

bool CsvReader::next() {
    while (read_line(in_, line_text_)) {
        ++line_;
        if (line_text_.empty()) continue;
        split_commas(line_text_, row_.fields_);
        row_.line_ = line_;
        if (row_.fields_.size() != header_.size()) {
            throw InputError(row_.where() + ": " + std::to_string(row_.fields_.size()) +
                             " fields, expected " + std::to_string(header_.size()) +
                             " like the header (ragged row)");
        }
        ++rows_read_;
        return true;
    }
    if (in_.bad())
        throw InputError("'" + path_ + "': read error after line " + std::to_string(line_));
    return false;
}

std::size_t CsvTable::column(const std::string& name) const {
    for (std::size_t c = 0; c < header.size(); ++c)
        if (header[c] == name) return c;
    throw InputError("'" + path + "': missing column '" + name + "' in the header");
}

bool CsvTable::has_column(const std::string& name) const {
    return std::find(header.begin(), header.end(), name) != header.end();
}

const std::string& CsvTable::text(std::size_t row, const std::string& name) const {
    return rows.at(row).at(column(name));
}

double CsvTable::parse(std::size_t row, const std::string& name, bool finite_only) const {
    const std::string& field = text(row, name);
    double value = 0;
    const NumberProblem problem = parse_number(field, finite_only, value);
    if (problem != NumberProblem::none) throw_number_problem(problem, field, where(row, name));
    return value;
}

std::int64_t CsvTable::integer(std::size_t row, const std::string& name) const {
    const std::string& field = text(row, name);
    return parse_integer(field, where(row, name));
}

std::string CsvTable::where(std::size_t row, const std::string& name) const {
    // Rows appended by hand after reading have no source line: the line they would have.
    const int line = row < line_numbers.size() ? line_numbers[row] : static_cast<int>(row) + 2;
    return "'" + path + "' line " + std::to_string(line) + " column '" + name + "'";
}

CsvTable read_csv_table(const std::string& path) {
    CsvReader reader(path, "a CSV table");
    CsvTable table;
    table.path = path;
    table.header = reader.header();
    while (reader.next()) {
        const CsvRow& row = reader.row();
        std::vector<std::string> fields(table.header.size());
        for (std::size_t c = 0; c < fields.size(); ++c)
            fields[c] = row.text(c);
        table.rows.push_back(std::move(fields));
        table.line_numbers.push_back(row.line());
    }
    return table;
}

void for_each_csv_row(
    const std::string& path, const std::string& what, const std::vector<std::string>& names,
    bool rows_required,
    const std::function<void(const CsvRow&, const std::vector<std::size_t>&)>& visit) {
    CsvReader reader(path, what);
    std::vector<std::size_t> columns;
    columns.reserve(names.size());
    for (const auto& name : names)
        columns.push_back(reader.column(name));
    while (reader.next())
        visit(reader.row(), columns);
    if (rows_required && reader.rows_read() == 0) throw InputError("'" + path + "': no data rows");
}

}  // namespace attngeo
