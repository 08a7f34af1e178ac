// The columns of every CSV file a run folder holds, with the type a typed reader gets: writers
// take their header from here, readers name the columns they need through here, and the
// ```dtypes blocks of docs/commands/<page>.md are generated from it (a test checks them).
#pragma once
#include <initializer_list>
#include <string>
#include <vector>

namespace attngeo::schema {

// The docs/commands/ page a folder kind's files are documented on.
namespace page {
inline constexpr const char* bounds = "bounds";  // the CSV `attngeo bounds` prints
inline constexpr const char* simulate = "simulate";
inline constexpr const char* extract = "extract";
inline constexpr const char* compare = "compare";
inline constexpr const char* truncate = "truncate";
inline constexpr const char* normalization = "normalization";
}  // namespace page

// One column: `type` is int, bigint (an exact integer that may outgrow 64 bits), float, flag
// (0/1), bool (true/false) or str; `may_be_empty` marks a column that
// may hold empty fields (read as missing).
struct Column {
    std::string name;
    std::string type;
    bool may_be_empty = false;
    // This entry stands for a sweep's swept parameters: one float column per --set name, in
    // the order given (named kSweptParameters in the table and the docs' dtypes blocks).
    bool swept_parameters = false;
};
inline constexpr const char* kSweptParameters = "{swept}";

// The columns of `file` (a schema::file name) as documented on `page`, in file order. A pair
// the table does not hold is a programming error (std::logic_error).
const std::vector<Column>& csv_columns(const std::string& page, const std::string& file);

// The header line of that file without the newline: the names joined by commas, `swept` (a
// sweep's parameter names) in place of the swept-parameter entry.
std::string csv_header(const std::string& page, const std::string& file,
                       const std::vector<std::string>& swept = {});

// Every column name of that file, in file order: a reader that needs them all.
std::vector<std::string> csv_column_names(const std::string& page, const std::string& file);

// The names of that file's columns from `first` to `last`, both included (std::logic_error
// when either is not one of its columns).
std::vector<std::string> csv_column_names(const std::string& page, const std::string& file,
                                          const std::string& first, const std::string& last);

// `names`, each checked to be a column of that file (std::logic_error naming it otherwise): a
// reader's request for columns, so that a reader cannot ask for a column no writer writes.
std::vector<std::string> csv_column_names(const std::string& page, const std::string& file,
                                          std::initializer_list<const char*> names);

// The parameters compare fits per head, in the order of their interval columns
// (<name>_lo, <name>_hi) in fits.csv (beta .. rho0) and profile.csv (p_sink .. T2), and of
// recovery.csv's rows: beta, beta_offset, c_inf, lambda, C, rho0, p_sink, p_base, eta, omega,
// T1, T2.
const std::vector<std::string>& fitted_parameters();

// The pages the table documents, in order, and one page's ```dtypes block: a line per file,
// "file: column:type, column:type?, ...", in the order the table lists them.
std::vector<std::string> csv_pages();
std::string dtypes_block(const std::string& page);

}  // namespace attngeo::schema
