// The figures against context length of an extract run with --queries other than last
// (docs/design.md §14): P(r_max, N) and R(r_min, N) per length bin at up to four N, and the
// shares of the head regimes per bin — from the extract's by_length.csv and heads_by_length.csv,
// or from a compare folder's by_length_summary.csv and regimes_by_length.csv.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <sstream>

#include "common/errors.hpp"
#include "common/format.hpp"
#include "common/run_columns.hpp"
#include "common/run_schema.hpp"
#include "reports/csv_table.hpp"
#include "reports/empirical_figures.hpp"
#include "reports/series_plot.hpp"

namespace fs = std::filesystem;

namespace attngeo::reports::empirical {
namespace {

const std::vector<std::string> kHeadsByLengthColumns = {
    "layer", "head",      "length_lo", "length_hi", "queries", "lambda",
    "rho0",  "sink_mass", "m_sink",    "m_last",    "m_rest",  "regime"};

LengthBinKey bin_at(const CsvTable& table, std::size_t row) {
    return {static_cast<int>(table.integer(row, "length_lo")),
            static_cast<int>(table.integer(row, "length_hi"))};
}

// The extract manifest's parameters.length_bins: (lo, hi) → length_mean; empty when absent.
std::map<LengthBinKey, double> manifest_lengths(const nlohmann::json& manifest) {
    std::map<LengthBinKey, double> lengths;
    const auto parameters = manifest.find("parameters");
    if (manifest.is_null() || parameters == manifest.end() || !parameters->is_object() ||
        !parameters->contains("length_bins") || !parameters->at("length_bins").is_array())
        return lengths;
    for (const auto& bin : parameters->at("length_bins"))
        if (bin.is_object() && bin.contains("lo") && bin.contains("hi") &&
            bin.contains("length_mean") && bin.at("lo").is_number_integer() &&
            bin.at("hi").is_number_integer() && bin.at("length_mean").is_number())
            lengths[{bin.at("lo").get<int>(), bin.at("hi").get<int>()}] =
                bin.at("length_mean").get<double>();
    return lengths;
}

// The x range over the bins' length_mean, padded.
std::string x_range(const std::map<LengthBinKey, double>& lengths) {
    double lo = 0, hi = 1;
    bool first = true;
    for (const auto& [bin, x] : lengths) {
        lo = first ? x : std::min(lo, x);
        hi = first ? x : std::max(hi, x);
        first = false;
    }
    const double pad = hi > lo ? 0.05 * (hi - lo) : 1.0;
    return "  set xrange [" + format_double(lo - pad) + ":" + format_double(hi + pad) + "]\n";
}

std::string x_label(const LengthCurves& c) {
    return c.length_is_midpoint ? "context length L (midpoint of the length bin)"
                                : "context length L (mean over the query positions of the bin)";
}

Figure pr_vs_length_figure(const std::string& prefix, const LengthCurves& c) {
    std::map<int, int> bins_per_size;
    for (const auto& [N, by_bin] : c.pr)
        bins_per_size[N] = static_cast<int>(by_bin.size());
    const SizesAcrossBins sizes = sizes_across_bins(bins_per_size);
    const std::vector<int>& chosen = sizes.shown;

    Figure f;
    f.id = prefix + "precision_recall_vs_length";
    f.title = "P(r_max,N) and R(r_min,N) against L";
    std::ostringstream dat;
    dat << "# one block per N: length_mean P_mean R_mean heads length_lo length_hi "
           "(means over heads)\n";
    std::vector<std::string> parts;
    for (std::size_t k = 0; k < chosen.size(); ++k) {
        dat << (k ? "\n\n" : "") << "# N = " << chosen[k] << '\n';
        for (const auto& [bin, mean] : c.pr.at(chosen[k]))
            dat << format_double(c.length_mean.at(bin)) << ' ' << format_double(mean.p) << ' '
                << format_double(mean.r) << ' ' << mean.heads << ' ' << bin.first << ' '
                << bin.second << '\n';
        const std::string block = "'" + f.id + ".dat' index " + std::to_string(k);
        const std::string n = std::to_string(chosen[k]);
        parts.push_back(block + " using 1:2 with linespoints lw 2 pt 7 ps 1.1" + series_colour(k) +
                        " title 'P(r_max, N), N = " + n + "' noenhanced");
        parts.push_back(block + " using 1:3 with linespoints lw 2 dt 2 pt 6 ps 1.0" +
                        series_colour(k) + " title 'R(r_min, N), N = " + n + "' noenhanced");
    }
    f.data.push_back({f.id + ".dat", dat.str()});
    std::ostringstream s;
    s << kGrid << x_range(c.length_mean) << "  set yrange [0:1.05]\n"
      << "  set key outside below center horizontal font ',11' samplen 3\n"
      << "  set xlabel '" << x_label(c) << "'\n"
      << "  set ylabel 'mean over heads'\n"
      << plot_command(parts);
    f.script = s.str();
    f.caption =
        "P(r<sub>max</sub>, N) (solid) and R(r<sub>min</sub>, N) (dashed, same colour per N): "
        "the mean over heads of each head's mean over the queries of a length bin of L = t + 1, "
        "against the bin's " +
        std::string(c.length_is_midpoint ? "midpoint (the manifest lists no length_mean)"
                                         : "mean L") +
        ", for " + sizes_across_bins_caption(sizes) +
        "; an N enters a bin only when it is at most the bin's shortest measured L. From " +
        code(c.pr_source) + ".";
    return f;
}

Figure regimes_vs_length_figure(const std::string& prefix, const LengthCurves& c) {
    Figure f;
    f.id = prefix + "regime_shares_vs_length";
    f.title = "Regime shares against L";
    std::ostringstream dat;
    dat << "# length_mean";
    for (int r = 0; r < kRegimeCount; ++r)
        dat << ' ' << regime_name(r);
    dat << " heads length_lo length_hi (share of heads in each regime)\n";
    for (const auto& [bin, shares] : c.regimes) {
        dat << format_double(c.length_mean.at(bin));
        for (double share : shares.first)
            dat << ' ' << format_double(share);
        dat << ' ' << shares.second << ' ' << bin.first << ' ' << bin.second << '\n';
    }
    f.data.push_back({f.id + ".dat", dat.str()});
    std::vector<std::string> parts;
    for (int r = 0; r < kRegimeCount; ++r)
        parts.push_back("'" + f.id + ".dat' using 1:" + std::to_string(2 + r) +
                        " with linespoints lw 2 pt 7 ps 1.0 lc rgb '" + palette::kRegime[r] +
                        "' title '" + regime_name(r) + "'");
    std::ostringstream s;
    s << kGrid << x_range(c.length_mean) << "  set yrange [0:1.05]\n"
      << "  set key outside below center horizontal font ',11' samplen 3\n"
      << "  set xlabel '" << x_label(c) << "'\n"
      << "  set ylabel 'share of heads'\n"
      << plot_command(parts);
    f.script = s.str();
    f.caption =
        "The share of heads in each regime (Retriever, Mixer, Reset: docs/design.md §6, from the "
        "mean magnitudes ‖α<sub>0</sub>v<sub>0</sub>‖, ‖α<sub>t</sub>v<sub>t</sub>‖, "
        "‖Σ<sub>0&lt;i&lt;t</sub> α<sub>i</sub>v<sub>i</sub>‖ over the queries of each length "
        "bin) against the bin's " +
        std::string(c.length_is_midpoint ? "midpoint" : "mean L") + ". From " +
        code(c.regime_source) + ".";
    return f;
}

}  // namespace

std::optional<LengthCurves> extract_length_curves(const ExtractData& e) {
    const std::string by_length = path_in(e.dir, schema::file::by_length);
    if (!fs::exists(by_length)) return std::nullopt;
    LengthCurves c;
    c.pr_source = by_length;
    c.regime_source = path_in(e.dir, schema::file::heads_by_length);
    const auto lengths = manifest_lengths(e.manifest);
    c.length_is_midpoint = lengths.empty();
    auto length_of = [&](const LengthBinKey& bin) {
        const auto it = lengths.find(bin);
        if (it != lengths.end()) return it->second;
        c.length_is_midpoint = true;
        return 0.5 * (bin.first + bin.second);
    };
    // N → bin → sums over heads.
    std::map<int, std::map<LengthBinKey, MeanPR>> sums;
    {
        // The standard errors may be empty (fewer than 2 queries): present, but not streamed.
        const CsvReader header(by_length, "a table written by attngeo extract");
        (void)header.column("P_se"), (void)header.column("R_se");
    }
    stream_numeric_csv(by_length,
                       schema::csv_column_names(schema::page::extract, schema::file::by_length,
                                                {"layer", "head", "length_lo", "length_hi", "N",
                                                 "queries", "P_mean", "R_mean"}),
                       [&](const std::vector<double>& v) {
                           const LengthBinKey bin{static_cast<int>(v[2]), static_cast<int>(v[3])};
                           MeanPR& at = sums[static_cast<int>(v[4])][bin];
                           at.p += v[6];
                           at.r += v[7];
                           ++at.heads;
                       });
    for (auto& [N, by_bin] : sums)
        for (auto& [bin, at] : by_bin) {
            at.p /= at.heads;
            at.r /= at.heads;
            c.length_mean[bin] = length_of(bin);
        }
    c.pr = std::move(sums);
    if (!fs::exists(c.regime_source))
        throw InputError("'" + c.regime_source +
                         "': missing, expected it beside by_length.csv (extract --queries "
                         "writes both)");
    const CsvTable heads = read_table_with_columns(c.regime_source, kHeadsByLengthColumns);
    std::map<LengthBinKey, PerRegime<int>> counts;
    for (std::size_t r = 0; r < heads.rows.size(); ++r) {
        const LengthBinKey bin = bin_at(heads, r);
        ++counts[bin][regime_index(parse_regime(heads.text(r, "regime"), heads.path))];
    }
    for (const auto& [bin, count] : counts) {
        int total = 0;
        for (int n : count)
            total += n;
        auto& at = c.regimes[bin];
        at.second = total;
        for (int r = 0; r < kRegimeCount; ++r)
            at.first[r] = static_cast<double>(count[r]) / total;
        c.length_mean[bin] = length_of(bin);
    }
    return c;
}

std::optional<LengthCurves> compare_length_curves(const std::string& dir) {
    const std::string summary_path = path_in(dir, schema::file::by_length_summary);
    if (!fs::exists(summary_path)) return std::nullopt;
    LengthCurves c;
    c.pr_source = summary_path;
    c.regime_source = path_in(dir, schema::file::regimes_by_length);
    const CsvTable summary = read_table_with_columns(
        summary_path,
        schema::csv_column_names(schema::page::compare, schema::file::by_length_summary));
    for (std::size_t r = 0; r < summary.rows.size(); ++r) {
        const LengthBinKey bin = bin_at(summary, r);
        c.length_mean[bin] = summary.number(r, "length_mean");
        c.pr[static_cast<int>(summary.integer(r, "N"))][bin] = {
            summary.number(r, "P_mean"), summary.number(r, "R_mean"),
            static_cast<int>(summary.integer(r, "heads"))};
    }
    if (!fs::exists(c.regime_source))
        throw InputError("'" + c.regime_source +
                         "': missing, expected it beside by_length_summary.csv (compare writes "
                         "both)");
    const CsvTable regimes = read_table_with_columns(
        c.regime_source,
        schema::csv_column_names(schema::page::compare, schema::file::regimes_by_length));
    for (std::size_t r = 0; r < regimes.rows.size(); ++r) {
        const LengthBinKey bin = bin_at(regimes, r);
        c.length_mean[bin] = regimes.number(r, "length_mean");
        auto& at = c.regimes[bin];
        at.second = static_cast<int>(regimes.integer(r, "heads"));
        for (int k = 0; k < kRegimeCount; ++k)
            at.first[k] = regimes.number(r, regime_name(k));
    }
    return c;
}

Section length_section(const std::string& prefix, const LengthCurves& curves) {
    Section section;
    section.title = "Against the context length L (extract --queries)";
    section.figures.push_back(pr_vs_length_figure(prefix, curves));
    section.figures.push_back(regimes_vs_length_figure(prefix, curves));
    return section;
}

}  // namespace attngeo::reports::empirical
