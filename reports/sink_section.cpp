// The attention-sink section of extract and compare reports; see sink_section.hpp.
#include "reports/sink_section.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <sstream>
#include <utility>
#include <vector>

#include "common/run_schema.hpp"
#include "reports/empirical_data.hpp"
#include "reports/html.hpp"
#include "reports/palette.hpp"
#include "reports/series_plot.hpp"

namespace attngeo::reports::empirical {
namespace {

std::string cell(const CsvTable& t, std::size_t row, const std::string& column) {
    return number_or_na(optional_number(t, row, column));
}

Figure sink_rate_figure(const std::string& prefix, const CsvTable& layers) {
    Figure f;
    f.id = prefix + "sink_rate_by_layer";
    f.title = "Attention sink rate by layer";
    std::ostringstream dat;
    dat << "# layer sink_rate\n";
    for (std::size_t r = 0; r < layers.rows.size(); ++r) {
        const double rate = optional_number(layers, r, "sink_rate");
        dat << layers.integer(r, "layer") << ' ' << (std::isnan(rate) ? 0.0 : rate) << '\n';
    }
    f.data.push_back({f.id + ".dat", dat.str()});
    const int every = std::max<int>(1, static_cast<int>(layers.rows.size()) / 16);
    std::ostringstream s;
    s << "  set style data histograms\n  set style fill solid 0.85 border lc rgb '"
      << palette::kBarBorder << "'\n  set boxwidth 0.8\n"
      << "  set xlabel 'layer'\n  set ylabel 'share of heads with α(0) > 0.3'\n"
      << "  set yrange [0:1]\n  set grid ytics lc rgb '" << palette::kGridLine << "'\n"
      << "  plot '" << f.id << ".dat' using 2:xtic(int($0) % " << every
      << " == 0 ? stringcolumn(1) : '')" << series_colour(0) << " notitle\n";
    f.script = s.str();
    f.caption =
        "Gu et al.'s sink rate (ICLR 2025): the share of a layer's heads whose mean "
        "attention on the first token over the query rows, α(0), exceeds ε = 0.3, "
        "averaged over the windows. From " +
        code(layers.path) + ".";
    return f;
}

Figure key_geometry_figure(const std::string& prefix, const CsvTable& heads) {
    Figure f;
    f.id = prefix + "sink_key_geometry";
    f.title = "The sink token's key: norm and cosine with the queries, per head";
    std::ostringstream dat;
    dat << "# key_norm_ratio cos_query_sink cos_query_rest (one head a row)\n";
    for (std::size_t r = 0; r < heads.rows.size(); ++r) {
        const double ratio = optional_number(heads, r, "key_norm_ratio"),
                     sink = optional_number(heads, r, "cos_query_sink"),
                     rest = optional_number(heads, r, "cos_query_rest");
        if (std::isfinite(ratio) && std::isfinite(sink) && std::isfinite(rest))
            dat << ratio << ' ' << sink << ' ' << rest << '\n';
    }
    f.data.push_back({f.id + ".dat", dat.str()});
    f.script = kGrid +
               "  set xlabel '‖k_0‖ / median_{j≥1} ‖k_j‖'\n  set ylabel 'mean cosine with q_t'\n"
               "  set key outside right top\n" +
               plot_command({"'" + f.id + ".dat' using 1:2 with points pt 7 ps 0.6" +
                                 series_colour(0) + " title 'cos(q_t, k_0)'",
                             "'" + f.id + ".dat' using 1:3 with points pt 6 ps 0.6" +
                                 series_colour(1) + " title 'mean_{j≥1} cos(q_t, k_j)'"});
    f.caption =
        "Each head twice: the mean cosine of its queries with the first token's key "
        "(filled) and with the other keys (open), against the first key's norm "
        "relative to the median key norm. Gu et al. find sink heads at a small norm "
        "ratio with a high cosine. From " +
        code(heads.path) + ".";
    return f;
}

std::string massive_table(const CsvTable& layers) {
    std::vector<std::vector<std::string>> rows;
    for (std::size_t r = 0; r < layers.rows.size(); ++r)
        rows.push_back({std::to_string(layers.integer(r, "layer")), cell(layers, r, "largest"),
                        cell(layers, r, "median"), cell(layers, r, "ratio"),
                        layers.text(r, "window"), layers.text(r, "position"), layers.text(r, "dim"),
                        layers.text(r, "token_id"), cell(layers, r, "massive_share")});
    return "<p>Massive activations (Sun et al., 2024): per layer, the largest |h| of the residual "
           "stream over the windows, where it sits, that window's median |h|, and the share of "
           "windows where it is massive by their rule (&gt; 100 and ≥ 1000 × the median).</p>\n" +
           html_table({"layer", "largest |h|", "median |h|", "ratio", "window", "position", "dim",
                       "token id", "massive windows"},
                      rows);
}

// The secondary sinks gathered by (position, token id) over the windows.
std::string secondary_table(const CsvTable& sinks) {
    struct Seen {
        int windows = 0;
        double heads = 0, largest = 0;
    };
    std::map<std::pair<std::int64_t, std::int64_t>, Seen> by_key;
    for (std::size_t r = 0; r < sinks.rows.size(); ++r) {
        Seen& s = by_key[{sinks.integer(r, "position"), sinks.integer(r, "token_id")}];
        ++s.windows;
        s.heads += static_cast<double>(sinks.integer(r, "heads"));
        s.largest = std::max(s.largest, sinks.number(r, "largest_attention"));
    }
    if (by_key.empty())
        return "<p>No secondary sink: no key after the first, among those seen by at least half "
               "of a window's query rows, has α(k) &gt; 0.3 in enough heads (" +
               code(sinks.path) + ").</p>\n";
    std::vector<std::vector<std::string>> rows;
    for (const auto& [key, s] : by_key)
        rows.push_back({std::to_string(key.first), std::to_string(key.second),
                        std::to_string(s.windows), short_number(s.heads / s.windows),
                        short_number(s.largest)});
    return "<p>Secondary sinks: keys after the first that collect α(k) &gt; 0.3 in many heads "
           "(from " +
           code(sinks.path) + ", gathered by position and token).</p>\n" +
           html_table({"position", "token id", "windows", "mean heads", "largest α(k)"}, rows);
}

std::string heads_table(const CsvTable& heads) {
    std::vector<std::vector<std::string>> rows;
    for (std::size_t r = 0; r < heads.rows.size(); ++r)
        rows.push_back({std::to_string(heads.integer(r, "layer")),
                        std::to_string(heads.integer(r, "head")), cell(heads, r, "sink_attention"),
                        cell(heads, r, "sink_share"), cell(heads, r, "key_norm_ratio"),
                        cell(heads, r, "cos_query_sink"), cell(heads, r, "cos_query_rest")});
    return "<details><summary>Every head's sink measures</summary>\n" +
           html_table({"layer", "head", "α(0)", "windows with α(0) > 0.3", "key-norm ratio",
                       "cos(q, k₀)", "cos(q, k_j)"},
                      rows) +
           "</details>\n";
}

// The λ and ρ0 rows and the recall rows at up to four N spread over the grid.
std::string relations_table(const CsvTable& relations) {
    std::vector<int> sizes;
    for (std::size_t r = 0; r < relations.rows.size(); ++r)
        if (relations.text(r, "quantity") == "recall")
            sizes.push_back(static_cast<int>(relations.integer(r, "N")));
    std::sort(sizes.begin(), sizes.end());
    sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
    const std::vector<int> shown = spread_four(sizes);
    std::vector<std::vector<std::string>> rows;
    auto interval = [&](std::size_t r, const char* lo, const char* hi) {
        return "[" + cell(relations, r, lo) + ", " + cell(relations, r, hi) + "]";
    };
    for (std::size_t r = 0; r < relations.rows.size(); ++r) {
        const std::string quantity = relations.text(r, "quantity");
        if (quantity == "recall" &&
            std::find(shown.begin(), shown.end(), relations.integer(r, "N")) == shown.end())
            continue;
        rows.push_back(
            {relations.text(r, "measure"),
             quantity == "recall" ? "R(r_min, N = " + relations.text(r, "N") + ")" : quantity,
             relations.text(r, "heads"), cell(relations, r, "corr"),
             interval(r, "head_lo", "head_hi"), cell(relations, r, "partial_layer"),
             interval(r, "partial_lo", "partial_hi")});
    }
    if (rows.empty())
        return "<p>No sink relation: the extract folder holds no measured sink (" +
               code(relations.path) + ").</p>\n";
    return "<p>The literature's sink measures against the paper's quantities, across heads: "
           "Pearson's r with the head-level interval of the max-|r| permutation test (over "
           "every N of the recall curve together), and the partial r given the layer. An "
           "interval excluding 0 is a relation these heads show (from " +
           code(relations.path) + "; every N there).</p>\n" +
           html_table(
               {"sink measure", "against", "heads", "r", "interval", "r | layer", "interval"},
               rows);
}

}  // namespace

Section sink_section(const std::string& prefix, const std::string& extract_dir,
                     const std::string& compare_dir) {
    Section section;
    section.title = "The attention sink as the literature measures it";
    for (const char* file :
         {schema::file::sink_layers, schema::file::sink_heads, schema::file::secondary_sinks})
        if (!std::filesystem::exists(path_in(extract_dir, file))) {
            section.html_before = "<p>" + code(path_in(extract_dir, file)) +
                                  " is missing (a folder not written by extract): the sink "
                                  "measures are not shown.</p>\n";
            return section;
        }
    const CsvTable layers = read_csv_table(path_in(extract_dir, schema::file::sink_layers));
    const CsvTable heads = read_csv_table(path_in(extract_dir, schema::file::sink_heads));
    const CsvTable sinks = read_csv_table(path_in(extract_dir, schema::file::secondary_sinks));
    bool measured = false;
    for (std::size_t r = 0; r < heads.rows.size(); ++r)
        measured = measured || std::isfinite(optional_number(heads, r, "sink_attention"));
    if (!measured) {
        section.html_before =
            "<p>This folder's windows were not measured for the sink (a "
            "planted or Python-made folder): " +
            code(heads.path) + " is empty of values.</p>\n";
        return section;
    }
    section.figures.push_back(sink_rate_figure(prefix, layers));
    section.figures.push_back(key_geometry_figure(prefix, heads));
    section.html_after = massive_table(layers) + secondary_table(sinks) + heads_table(heads);
    if (!compare_dir.empty() &&
        std::filesystem::exists(path_in(compare_dir, schema::file::sink_relations)))
        section.html_after +=
            relations_table(read_csv_table(path_in(compare_dir, schema::file::sink_relations)));
    return section;
}

}  // namespace attngeo::reports::empirical
