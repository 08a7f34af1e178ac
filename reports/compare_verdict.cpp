// The verdict of a compare folder (docs/design.md §7): verdict.csv with kappa.json's per-variant
// blocks and the κ-scan figures, the plug-in cosines' verdict beside the parametric one where
// the manifest has a "plug_in" block (Assumption 2 fails in most heads), and the mean envelopes
// over heads streamed from compare's bounds.csv.
#include <filesystem>
#include <functional>
#include <sstream>

#include "common/csv.hpp"
#include "common/json_file.hpp"
#include "common/run_schema.hpp"
#include "reports/verdict.hpp"
#include "reports/verdict_text.hpp"
#include "reports/html.hpp"

namespace fs = std::filesystem;

namespace attngeo::reports {
namespace {

std::string in_dir(const std::string& dir, const char* name) {
    return (fs::path(dir) / name).string();
}

VerdictWords compare_words() {
    VerdictWords words;
    words.points = "(head, N) points";
    words.units = "documents";
    return words;
}

// The verdict and κ-scan figures of one cosine source: `verdict_file`, `scan_file` and the
// blocks `variants`, read from `json_path`.
struct JudgedFiles {
    VerdictTable table;
    std::map<std::string, VariantFacts> facts;
    CsvTable scan;
};

JudgedFiles read_judged(const std::string& dir, const char* verdict_file, const char* scan_file,
                        const std::string& json_path, const nlohmann::json& variants) {
    JudgedFiles j;
    j.table = read_verdict(in_dir(dir, verdict_file));
    j.facts = with_json_context(json_path, [&] { return variant_facts_of_all(variants); });
    j.scan = read_kappa_scan(in_dir(dir, scan_file));
    return j;
}

// "holds-uninformative (any)": a side's state and κ set, for the side-by-side table.
std::string state_cell(const VerdictSide& r) {
    const std::string text = html_escape(r.state) + " (" + html_escape(r.kappa_set) + ")";
    return side_falsified(r) ? "<span class=\"bad\">" + text + "</span>" : text;
}

std::string side_by_side(const std::vector<VerdictSide>& parametric,
                         const std::vector<VerdictSide>& plug_in) {
    std::vector<std::vector<std::string>> cells;
    for (const VerdictSide& p : parametric)
        for (const VerdictSide& q : plug_in)
            if (q.variant == p.variant && q.metric == p.metric && q.side == p.side)
                cells.push_back(
                    {html_escape(p.variant), p.metric, p.side, state_cell(p), state_cell(q),
                     q.worst_N < 0 ? "–"
                                   : "N = " + std::to_string(q.worst_N) +
                                         ", z = " + verdict_words::digits(q.worst_z, 3)});
    return html_table({"variant", "metric", "side", "parametric cosines: state (κ set)",
                       "plug-in cosines: state (κ set)", "plug-in worst point"},
                      cells);
}

Section plug_in_section(const std::string& dir, const std::string& prefix,
                        const nlohmann::json& manifest, const JudgedFiles& parametric) {
    const std::string manifest_path = in_dir(dir, schema::file::manifest);
    // Read in place, not copied, so an error's JSON pointer starts at /plug_in.
    const nlohmann::json& block = with_json_context(
        manifest_path, [&]() -> const nlohmann::json& { return manifest.at("plug_in"); });
    const std::string reason =
        with_json_context(manifest_path, [&] { return block.at("reason").get<std::string>(); });
    const nlohmann::json& variants = with_json_context(
        manifest_path, [&]() -> const nlohmann::json& { return block.at("variants"); });
    const JudgedFiles plug = read_judged(dir, schema::file::verdict_plug_in,
                                         schema::file::kappa_scan_plug_in, manifest_path, variants);
    Section s;
    s.title = "The verdict with the measured cosines (--cosines plug-in)";
    std::ostringstream html;
    html << "<p class=\"warn\">" << html_escape(reason) << " (manifest.json <code>plug_in</code>; "
         << html_escape(plug.table.path) << ").</p>\n"
         << side_by_side(parametric.table.rows, plug.table.rows) << "<div class=\"bottom-line\">"
         << bottom_line_html(plug.table.rows, plug.facts, compare_words()) << "</div>\n";
    s.html_before = html.str();
    for (const auto& v : variant_names())
        s.figures.push_back(
            kappa_scan_figure(prefix + "kappa_plug_in_" + v, v, plug.scan, plug.table.rows, -1));
    return s;
}

// Streams compare's bounds.csv (heads × sizes × variants rows) and calls `row(variant,
// numbers)` with the fields named in `number_columns` parsed; every column is required and the
// table must have rows (compare writes one per head, N and variant).
void stream_bounds(const std::string& path, const std::vector<std::string>& number_columns,
                   const std::function<void(const std::string&, const std::vector<double>&)>& row) {
    std::vector<std::string> names = {"variant"};
    names.insert(names.end(), number_columns.begin(), number_columns.end());
    std::vector<double> numbers(number_columns.size());
    for_each_csv_row(path, "compare's bounds.csv", names, true,
                     [&](const CsvRow& fields, const std::vector<std::size_t>& at) {
                         for (std::size_t k = 0; k < numbers.size(); ++k)
                             numbers[k] = fields.number(at[k + 1]);
                         row(fields.text(at[0]), numbers);
                     });
}

}  // namespace

std::vector<Section> compare_verdict_sections(const std::string& dir, const std::string& prefix,
                                              const nlohmann::json& kappa,
                                              const nlohmann::json& manifest,
                                              const std::string& opening) {
    Section verdict;
    verdict.title = "The verdict: does each bound hold on real heads, and does it say anything?";
    const std::string kappa_path = in_dir(dir, schema::file::kappa);
    const nlohmann::json& variants = with_json_context(
        kappa_path, [&]() -> const nlohmann::json& { return kappa.at("variants"); });
    const JudgedFiles judged =
        read_judged(dir, schema::file::verdict, schema::file::kappa_scan, kappa_path, variants);
    const bool plug_in = manifest.is_object() && manifest.contains("plug_in");
    const std::string closing =
        plug_in ? "<p>Assumption 2 fails in most heads: the verdict with the measured cosines "
                  "by lag (<code>--cosines plug-in</code>) follows this one.</p>"
                : "";
    verdict.html_before =
        verdict_html(judged.table.rows, judged.facts, compare_words(), opening, closing);
    for (const auto& v : variant_names())
        verdict.figures.push_back(
            kappa_scan_figure(prefix + "kappa_" + v, v, judged.scan, judged.table.rows, -1));
    std::vector<Section> sections = {verdict};
    if (plug_in) sections.push_back(plug_in_section(dir, prefix, manifest, judged));
    return sections;
}

std::map<std::string, std::map<int, std::array<double, 4>>> mean_edge_envelopes(
    const std::string& bounds_path) {
    std::map<std::string, std::map<int, std::array<double, 5>>> sums;  // + count
    stream_bounds(bounds_path,
                  {"N", "P_lower_edge", "P_upper_edge", "R_lower_edge", "R_upper_edge"},
                  [&](const std::string& variant, const std::vector<double>& numbers) {
                      auto& sum = sums[variant][static_cast<int>(numbers[0])];
                      for (int k = 0; k < 4; ++k)
                          sum[k] += numbers[k + 1];
                      sum[4] += 1;
                  });
    std::map<std::string, std::map<int, std::array<double, 4>>> means;
    for (const auto& [v, by_size] : sums)
        for (const auto& [N, sum] : by_size)
            means[v][N] = {sum[0] / sum[4], sum[1] / sum[4], sum[2] / sum[4], sum[3] / sum[4]};
    return means;
}

std::map<std::pair<std::string, int>, double> mean_widths_by_layer(const std::string& bounds_path) {
    std::map<std::pair<std::string, int>, std::array<double, 2>> sums;  // (width sum, points)
    stream_bounds(bounds_path, {"layer", "P_lower", "P_upper", "R_lower", "R_upper"},
                  [&](const std::string& variant, const std::vector<double>& numbers) {
                      const double widths = (numbers[2] - numbers[1]) + (numbers[4] - numbers[3]);
                      for (const int layer : {static_cast<int>(numbers[0]), -1}) {
                          auto& sum = sums[{variant, layer}];
                          sum[0] += widths;
                          sum[1] += 2;  // a P and an R point
                      }
                  });
    std::map<std::pair<std::string, int>, double> means;
    for (const auto& [key, sum] : sums)
        means[key] = sum[0] / sum[1];
    return means;
}

}  // namespace attngeo::reports
