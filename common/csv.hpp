// Strict readers for the text tables attngeo reads: the headerless numeric files the CLI takes
// (points, weights, norms, cosine matrices) and the header CSVs that runs write and later
// commands read back. Every defect is one InputError line in one dialect: the path quoted, then
// the line and the column where there is one ("'pr.csv' line 3 column 'P_se': 'nan' is not
// finite, expected a finite number").
#pragma once
#include <cstdint>
#include <fstream>
#include <functional>
#include <optional>
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

// One data row of a header CSV, addressed by the column indices CsvReader::column gives. Every
// accessor's error names the file, the line and the column.
class CsvRow {
  public:
    const std::string& text(std::size_t column) const { return fields_[column]; }
    // Any double: finite, or inf, -inf, nan as format_double writes them.
    double number(std::size_t column) const { return parse(column, false); }
    double finite_number(std::size_t column) const { return parse(column, true); }
    // An empty field is "no value"; anything else must be a finite number.
    std::optional<double> optional_finite_number(std::size_t column) const;
    std::int64_t integer(std::size_t column) const;

    int line() const { return line_; }
    std::string where() const;                    // 'path' line L
    std::string where(std::size_t column) const;  // 'path' line L column 'name'

  private:
    friend class CsvReader;
    double parse(std::size_t column, bool finite_only) const;
    const std::string* path_ = nullptr;
    const std::vector<std::string>* header_ = nullptr;
    std::vector<std::string> fields_;  // [header.size()]
    int line_ = 0;
};

// Streams a CSV whose first line names the columns, as attngeo writes them: fields separated by
// commas, no quoting, a trailing '\r' ignored, blank lines skipped, every row as wide as the
// header. Streaming keeps one row in memory (an extract's by_position.csv has millions).
class CsvReader {
  public:
    // Opens `path` and reads its header; `what` says what the file should be ("an extract
    // table"), for the message when it cannot be opened or is empty.
    CsvReader(std::string path, const std::string& what);
    CsvReader(const CsvReader&) = delete;  // row() points into the reader
    CsvReader& operator=(const CsvReader&) = delete;

    const std::string& path() const { return path_; }
    const std::vector<std::string>& header() const { return header_; }
    // Index of a required column; InputError naming the file when the header lacks it.
    std::size_t column(const std::string& name) const;
    std::optional<std::size_t> find_column(const std::string& name) const;

    // Reads the next data row into row(); false at the end of the file.
    bool next();
    const CsvRow& row() const { return row_; }
    std::int64_t rows_read() const { return rows_read_; }

  private:
    std::string path_;
    std::ifstream in_;
    std::vector<std::string> header_;
    std::string line_text_;
    int line_ = 0;
    std::int64_t rows_read_ = 0;
    CsvRow row_;
};

// Streams the table at `path` to `visit`: every data row with the indices of the columns
// `names` lists, in that order (a missing column is an InputError naming the file). `what`
// describes the file as for CsvReader. With `rows_required`, a header without rows is an
// error ("no data rows"), as for tables that hold one row per head.
void for_each_csv_row(
    const std::string& path, const std::string& what, const std::vector<std::string>& names,
    bool rows_required,
    const std::function<void(const CsvRow&, const std::vector<std::size_t>&)>& visit);

// A whole header CSV in memory, addressed by column name (small outputs such as a run's
// simulate.csv or compare's fits.csv). A header with no rows is a valid table.
struct CsvTable {
    std::string path;
    std::vector<std::string> header;
    std::vector<std::vector<std::string>> rows;  // [rows][header.size()]
    std::vector<int> line_numbers;               // [rows] 1-based source line of each row

    // Column index of `name`; InputError naming the file when absent.
    std::size_t column(const std::string& name) const;
    bool has_column(const std::string& name) const;
    const std::string& text(std::size_t row, const std::string& name) const;
    double number(std::size_t row, const std::string& name) const {  // inf, -inf, nan allowed
        return parse(row, name, false);
    }
    double finite_number(std::size_t row, const std::string& name) const {
        return parse(row, name, true);
    }
    std::int64_t integer(std::size_t row, const std::string& name) const;
    std::string where(std::size_t row,
                      const std::string& name) const;  // 'path' line L column 'name'

  private:
    double parse(std::size_t row, const std::string& name, bool finite_only) const;
};

// Reads all of `path` through CsvReader.
CsvTable read_csv_table(const std::string& path);

}  // namespace attngeo
