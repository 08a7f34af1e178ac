// HTML helpers shared by the section builders: escaping, tables, numbers for people, manifest
// values as text, Table 1 and the list of a manifest's decisions.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace attngeo::reports {

std::string html_escape(const std::string& text);
std::string html_table(const std::vector<std::string>& header,
                       const std::vector<std::vector<std::string>>& rows);
std::string short_number(double x);  // 6 significant digits for tables (files keep 17)
// A manifest value as text: strings as they are, floats by short_number, the rest as JSON.
std::string json_text(const nlohmann::json& value);
// Table 1 as the run that owns it wrote it (DIR/table1.csv and the manifest's "table1"):
// `where` says where the derivatives were taken (HTML).
std::string table1_html(const std::string& dir, const nlohmann::json& manifest,
                        const std::string& where);
// The manifest's "decisions" as an HTML list (the body of sections.hpp's decisions_section),
// to append another manifest's.
std::string decisions_list(const nlohmann::json& manifest);

}  // namespace attngeo::reports
