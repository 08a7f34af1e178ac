// HTML helpers of the report; see html.hpp.
#include "reports/html.hpp"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <sstream>

#include "common/json_file.hpp"
#include "common/run_schema.hpp"
#include "reports/csv_table.hpp"

namespace fs = std::filesystem;

namespace attngeo::reports {

std::string html_escape(const std::string& text) {
    std::string out;
    for (char c : text) {
        switch (c) {
            case '&':
                out += "&amp;";
                break;
            case '<':
                out += "&lt;";
                break;
            case '>':
                out += "&gt;";
                break;
            case '"':
                out += "&quot;";
                break;
            default:
                out += c;
        }
    }
    return out;
}

std::string html_table(const std::vector<std::string>& header,
                       const std::vector<std::vector<std::string>>& rows) {
    std::ostringstream out;
    out << "<table><thead><tr>";
    for (const auto& h : header)
        out << "<th>" << h << "</th>";
    out << "</tr></thead><tbody>";
    for (const auto& row : rows) {
        out << "<tr>";
        for (const auto& cell : row)
            out << "<td>" << cell << "</td>";
        out << "</tr>";
    }
    out << "</tbody></table>\n";
    return out.str();
}

std::string short_number(double x) {
    if (std::isnan(x)) return "nan";
    if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%.6g", x);
    return buffer;
}

std::string json_text(const nlohmann::json& value) {
    if (value.is_string()) return value.get<std::string>();
    if (value.is_number_float()) return short_number(value.get<double>());
    return value.dump();
}

std::string table1_html(const std::string& dir, const nlohmann::json& manifest,
                        const std::string& where) {
    const std::string path = (fs::path(dir) / schema::file::table1).string();
    const CsvTable table = read_csv_table(path);
    // The manifest's "table1" block as compare::table1_manifest writes it, every key required.
    const std::string manifest_path = (fs::path(dir) / schema::file::manifest).string();
    std::ostringstream html;
    with_json_context(manifest_path, [&] {
        const nlohmann::json& about = manifest.at("table1");
        auto fact = [&](const char* key) { return html_escape(json_text(about.at(key))); };
        html << "<p>Central differences of the <code>paper</code> bounds " << where
             << "κ = " << fact("kappa") << ", d = " << fact("d")
             << "); ρ0 is differentiated directly (it can be ≤ 0). Positive: the bound rises "
                "with the parameter. From <code>"
             << html_escape(path) << "</code>.</p>\n";
        const nlohmann::json& error = about.at("error");
        if (!error.is_null())
            html << "<p class=\"warn\">No rows: " << html_escape(error.get<std::string>())
                 << "</p>\n";
        std::vector<std::vector<std::string>> rows;
        for (std::size_t r = 0; r < table.rows.size(); ++r)
            rows.push_back({html_escape(table.text(r, "parameter")), table.text(r, "N"),
                            short_number(table.number(r, "dP_lower")),
                            short_number(table.number(r, "dP_upper")),
                            short_number(table.number(r, "dR_lower")),
                            short_number(table.number(r, "dR_upper"))});
        html << html_table({"parameter", "N", "dP_lower", "dP_upper", "dR_lower", "dR_upper"},
                           rows);
        // Why a row is nan, as the run recorded it.
        const nlohmann::json& undefined = about.at("undefined_rows");
        if (!undefined.is_array())
            throw nlohmann::json::type_error::create(
                302, "expected an array, found " + undefined.dump(), &undefined);
        if (!undefined.empty()) {
            html << "<p>Rows of nan:</p>\n<ul>";
            for (const nlohmann::json& row : undefined)
                html << "<li><code>" << html_escape(row.at("parameter").get<std::string>())
                     << "</code>: " << html_escape(row.at("why").get<std::string>()) << "</li>";
            html << "</ul>\n";
        }
    });
    return html.str();
}

std::string decisions_list(const nlohmann::json& manifest) {
    if (!manifest.contains("decisions") || !manifest.at("decisions").is_array()) return "";
    std::ostringstream out;
    out << "<ul class=\"decisions\">";
    for (const auto& d : manifest.at("decisions"))
        out << "<li>" << html_escape(json_text(d)) << "</li>";
    out << "</ul>\n";
    return out.str();
}

}  // namespace attngeo::reports
