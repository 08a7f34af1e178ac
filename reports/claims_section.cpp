// The claims table across run folders; see claims_section.hpp.
#include "reports/claims_section.hpp"

#include <cmath>
#include <filesystem>
#include <map>
#include <utility>

#include "common/errors.hpp"
#include "common/run_schema.hpp"
#include "reports/csv_table.hpp"
#include "reports/html.hpp"

namespace fs = std::filesystem;

namespace attngeo::reports {
namespace {

const std::vector<std::string> kClaimColumns = {"claim",    "statement", "variant", "answer",
                                                "quantity", "value",     "ci_lo",   "ci_hi",
                                                "units",    "rule",      "detail"};

// One column of the table: a folder's claims.csv.
struct ClaimsColumn {
    std::string label;
    CsvTable table;
};

ClaimsColumn read_column(const std::string& label, const fs::path& dir) {
    ClaimsColumn column{
        label, read_table_with_columns((dir / schema::file::claims).string(), kClaimColumns)};
    for (std::size_t r = 0; r < column.table.rows.size(); ++r) {
        const std::string& answer = column.table.text(r, "answer");
        if (answer != "yes" && answer != "no" && answer != "can't tell")
            throw InputError(column.table.where(r, "answer") + ": '" + answer +
                             "', expected yes, no or can't tell");
    }
    return column;
}

// The folders with claims, in command-line order (a compare set: one per model).
std::vector<ClaimsColumn> claim_columns(const std::vector<RunFolder>& runs,
                                        const std::vector<std::string>& labels) {
    std::vector<ClaimsColumn> columns;
    for (std::size_t i = 0; i < runs.size(); ++i) {
        const RunFolder& run = runs[i];
        const std::string kind = run.manifest.at("kind").get<std::string>();
        if (kind == schema::kind::compare_set) {
            for (const auto& model : run.manifest.at("models")) {
                const std::string folder = model.at("folder").get<std::string>();
                if (fs::is_regular_file(fs::path(run.dir) / folder / schema::file::claims))
                    columns.push_back(
                        read_column(labels[i] + ": " + folder, fs::path(run.dir) / folder));
            }
        } else if (fs::is_regular_file(fs::path(run.dir) / schema::file::claims)) {
            columns.push_back(read_column(labels[i], run.dir));
        }
    }
    return columns;
}

std::string optional_number(const CsvTable& t, std::size_t r, const std::string& name) {
    return t.text(r, name).empty() ? std::string() : short_number(t.number(r, name));
}

// "<b class=…>no</b> −0.75 [−0.91; −0.40]".
std::string answer_cell(const CsvTable& t, std::size_t r) {
    const std::string& answer = t.text(r, "answer");
    const char* style = answer == "yes" ? "yes" : answer == "no" ? "bad" : "dim";
    std::string cell = "<b class=\"" + std::string(style) + "\">" + html_escape(answer) + "</b>";
    const std::string value = optional_number(t, r, "value");
    if (!value.empty()) cell += " " + value;
    const std::string lo = optional_number(t, r, "ci_lo"), hi = optional_number(t, r, "ci_hi");
    if (!lo.empty() || !hi.empty())
        cell += " [" + (lo.empty() ? "?" : lo) + ", " + (hi.empty() ? "?" : hi) + "]";
    return cell;
}

// The rows of the table: every (claim, variant) in the order first met, with its row in each
// column (or none).
using RowKey = std::pair<std::string, std::string>;

std::vector<RowKey> row_keys(const std::vector<ClaimsColumn>& columns) {
    std::vector<RowKey> keys;
    for (const ClaimsColumn& c : columns)
        for (std::size_t r = 0; r < c.table.rows.size(); ++r) {
            RowKey key{c.table.text(r, "claim"), c.table.text(r, "variant")};
            bool seen = false;
            for (const RowKey& k : keys)
                seen = seen || k == key;
            if (!seen) keys.push_back(key);
        }
    return keys;
}

// The row of `key` in `column`, or −1.
long find_row(const ClaimsColumn& column, const RowKey& key) {
    for (std::size_t r = 0; r < column.table.rows.size(); ++r)
        if (column.table.text(r, "claim") == key.first &&
            column.table.text(r, "variant") == key.second)
            return static_cast<long>(r);
    return -1;
}

std::string claim_cell(const ClaimsColumn& column, std::size_t r) {
    const CsvTable& t = column.table;
    std::string cell =
        "<b>" + html_escape(t.text(r, "claim")) + "</b> " + html_escape(t.text(r, "statement"));
    if (!t.text(r, "variant").empty()) cell += " — " + html_escape(t.text(r, "variant"));
    return cell;
}

// One folder: the answer with its number, interval, units, what decided it and the rule.
std::string single_table(const ClaimsColumn& column) {
    const CsvTable& t = column.table;
    std::vector<std::vector<std::string>> rows;
    for (std::size_t r = 0; r < t.rows.size(); ++r)
        rows.push_back({claim_cell(column, r), answer_cell(t, r),
                        html_escape(t.text(r, "quantity")), html_escape(t.text(r, "units")),
                        html_escape(t.text(r, "detail")),
                        "<span class=\"dim\">" + html_escape(t.text(r, "rule")) + "</span>"});
    return html_table({"Claim", "Answer, number [95 % interval]", "The number", "Units",
                       "What decided it", "Rule"},
                      rows);
}

// Several folders: one column each, the claim and its rule once per row; each cell's title
// holds what decided it.
std::string multi_table(const std::vector<ClaimsColumn>& columns) {
    std::vector<std::string> header = {"Claim"};
    for (const ClaimsColumn& c : columns)
        header.push_back(html_escape(c.label));
    header.push_back("Rule");
    std::vector<std::vector<std::string>> rows;
    for (const RowKey& key : row_keys(columns)) {
        std::vector<std::string> row(1);
        std::string rule;
        for (const ClaimsColumn& c : columns) {
            const long r = find_row(c, key);
            if (r < 0) {
                row.push_back("<span class=\"dim\">—</span>");
                continue;
            }
            if (rule.empty()) {
                row.front() = claim_cell(c, static_cast<std::size_t>(r));
                rule = c.table.text(r, "rule");
            }
            row.push_back("<span title=\"" +
                          html_escape(c.table.text(r, "quantity") + ": " +
                                      c.table.text(r, "detail") + " (" + c.table.text(r, "units") +
                                      ")") +
                          "\">" + answer_cell(c.table, r) + "</span>");
        }
        row.push_back("<span class=\"dim\">" + html_escape(rule) + "</span>");
        rows.push_back(row);
    }
    return html_table(header, rows);
}

}  // namespace

std::vector<Section> claims_sections(const std::vector<RunFolder>& runs,
                                     const std::vector<std::string>& labels) {
    const std::vector<ClaimsColumn> columns = claim_columns(runs, labels);
    if (columns.empty()) return {};
    Section section;
    section.title = "The paper's claims, answered";
    section.html_before =
        "<p>Each claim of the paper answered from this run's numbers: <b>yes</b>, <b>no</b> or "
        "<b>can't tell</b> (the data cannot separate yes from no), with the number it rests on "
        "and its 95 % interval. The rules are docs/design.md §7's; a tautology (N = 1, the "
        "exhaustive regime labels) is never evidence. Every figure below is the material of "
        "these answers.</p>\n" +
        (columns.size() == 1 ? single_table(columns.front()) : multi_table(columns));
    return {section};
}

}  // namespace attngeo::reports
