// The report of an `attngeo normalization` folder (docs/commands/normalization.md): the
// predecessor paper's Figures 2–4 (docs/design.md §14) — d̃(N) against L and N beside a random
// selection, the critical N against L, separability per N across heads, and g(T, ε) on log–log.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "common/errors.hpp"
#include "common/format.hpp"
#include "common/json_file.hpp"
#include "common/run_columns.hpp"
#include "common/run_schema.hpp"
#include "reports/empirical_data.hpp"
#include "reports/html.hpp"
#include "reports/palette.hpp"
#include "reports/sections.hpp"
#include "reports/series_plot.hpp"

namespace attngeo::reports {
namespace {

using namespace empirical;

// The predecessor's finding: critical N ≈ 0.06·L (docs/design.md §14).
constexpr double kPredecessorCriticalFraction = 0.06;

std::vector<std::string> columns_of(const char* file) {
    return schema::csv_column_names(schema::page::normalization, file);
}

int integer_at(const CsvTable& table, std::size_t row, const char* column) {
    return static_cast<int>(table.integer(row, column));
}

// A length bin [lo, hi] of L = t + 1; ordered by lo, so the last is the largest.
using Bin = std::pair<int, int>;

std::string bin_text(const Bin& bin) {
    return "L ∈ [" + std::to_string(bin.first) + ", " + std::to_string(bin.second) + "]";
}

// A mean over the heads that have a finite value.
struct Mean {
    double sum = 0;
    int count = 0;
    void add(double x) {
        if (std::isfinite(x)) sum += x, ++count;
    }
    double value() const { return count ? sum / count : std::nan(""); }
};

// distance.csv at one (bin, N), over heads.
struct DistanceCell {
    Mean distance, random_mean, random_rms;
    double random_se_squares = 0;  // Σ random_se² over the heads counted in random_mean
    // The standard error of the mean over heads of random_mean: √(Σ se²) / heads (the heads'
    // Monte Carlo draws are independent).
    double random_mean_se() const {
        return random_mean.count ? std::sqrt(random_se_squares) / random_mean.count : std::nan("");
    }
};

using DistanceCells = std::map<Bin, std::map<int, DistanceCell>>;  // bin → N → over heads

DistanceCells read_distance(const CsvTable& table) {
    DistanceCells cells;
    for (std::size_t r = 0; r < table.rows.size(); ++r) {
        DistanceCell& cell = cells[{integer_at(table, r, "length_lo"),
                                    integer_at(table, r, "length_hi")}][integer_at(table, r, "N")];
        // Fields no figure draws are still checked: a damaged one names its file and line.
        (void)table.integer(r, "layer"), (void)table.integer(r, "head");
        (void)table.integer(r, "queries");
        cell.distance.add(table.number(r, "distance"));
        const double random_mean = table.number(r, "random_mean");
        const double random_se = table.number(r, "random_se");
        if (std::isfinite(random_mean) && std::isfinite(random_se)) {
            cell.random_mean.add(random_mean);
            cell.random_se_squares += random_se * random_se;
        }
        cell.random_rms.add(table.number(r, "random_rms_exact"));
    }
    return cells;
}

// ---- (a) d̃(N) against L at fixed N ------------------------------------------------------------

Figure distance_by_length(const std::string& prefix, const DistanceCells& cells,
                          const std::string& source) {
    std::map<int, int> bins_per_size;  // N → bins with a row
    for (const auto& [bin, by_n] : cells)
        for (const auto& [N, cell] : by_n)
            ++bins_per_size[N];
    const SizesAcrossBins sizes = sizes_across_bins(bins_per_size);
    const std::vector<int>& chosen = sizes.shown;

    Figure f;
    f.id = prefix + "normalization_distance_vs_length";
    f.title = "Distance to the complement against L at fixed N";
    std::ostringstream dat;
    dat << "# one block per N: L_mid (bin midpoint) mean_distance mean_random_mean heads\n";
    std::vector<std::string> parts;
    double x_lo = 0, x_hi = 1;
    bool first = true;
    for (std::size_t k = 0; k < chosen.size(); ++k) {
        dat << (k ? "\n\n" : "") << "# N = " << chosen[k] << '\n';
        for (const auto& [bin, by_n] : cells) {
            const auto cell = by_n.find(chosen[k]);
            if (cell == by_n.end()) continue;
            const double mid = 0.5 * (bin.first + bin.second);
            x_lo = first ? mid : std::min(x_lo, mid);
            x_hi = first ? mid : std::max(x_hi, mid);
            first = false;
            dat << format_double(mid) << ' ' << format_double(cell->second.distance.value()) << ' '
                << format_double(cell->second.random_mean.value()) << ' '
                << cell->second.distance.count << '\n';
        }
        const std::string block = "'" + f.id + ".dat' index " + std::to_string(k);
        parts.push_back(block + " using 1:2 with linespoints lw 2 pt 7 ps 1.1" + series_colour(k) +
                        " title 'd̃(N), N = " + std::to_string(chosen[k]) + "' noenhanced");
        parts.push_back(
            block + " using 1:3 with linespoints lw 1.5 dt 2 pt 6 ps 0.9" + series_colour(k) +
            " title 'random selection, N = " + std::to_string(chosen[k]) + "' noenhanced");
    }
    f.data.push_back({f.id + ".dat", dat.str()});
    const double pad = x_hi > x_lo ? 0.05 * (x_hi - x_lo) : 1.0;
    std::ostringstream s;
    s << kGrid << "  set xrange [" << format_double(x_lo - pad) << ":" << format_double(x_hi + pad)
      << "]\n  set yrange [0:*]\n  set key outside below center horizontal font ',11' samplen 3\n"
      << "  set xlabel 'context length L (midpoint of the length bin)'\n"
      << "  set ylabel 'mean over heads of d̃(N)' noenhanced\n"
      << plot_command(parts);
    f.script = s.str();
    f.caption =
        "d̃(N) = ‖Σ<sub>i∉I<sub>N</sub></sub> α<sub>i</sub>x<sub>i</sub> − s(N)‖ (solid), the "
        "mean over heads of each length bin's mean over its query positions, against the bin's "
        "midpoint, for " +
        sizes_across_bins_caption(sizes) +
        "; dashed in the same colour: the Monte Carlo mean of the same distance for N tokens "
        "chosen uniformly at random (<code>random_mean</code>). "
        "From " +
        code(source) + ".";
    return f;
}

// ---- (b) d̃(N) against N at fixed L ------------------------------------------------------------

Figure distance_by_n(const std::string& prefix, const DistanceCells& cells,
                     const std::string& source) {
    std::vector<Bin> bins;
    for (const auto& entry : cells)
        bins.push_back(entry.first);
    std::vector<Bin> chosen;
    if (bins.size() >= 3) chosen.push_back(bins[(bins.size() - 1) / 2]);
    if (!bins.empty()) chosen.push_back(bins.back());

    Figure f;
    f.id = prefix + "normalization_distance_vs_n";
    f.title = "Distance to the complement against N at fixed L";
    std::ostringstream dat;
    dat << "# one block per length bin: N mean_distance mean_random_mean random_lo random_hi "
           "(±2 SE) mean_random_rms_exact heads\n";
    std::vector<std::string> parts;
    int min_n = 1, max_n = 2;
    bool first = true;
    for (std::size_t k = 0; k < chosen.size(); ++k) {
        dat << (k ? "\n\n" : "") << "# " << bin_text(chosen[k]) << '\n';
        for (const auto& [N, cell] : cells.at(chosen[k])) {
            const double mean = cell.random_mean.value(), se = cell.random_mean_se();
            dat << N << ' ' << format_double(cell.distance.value()) << ' ' << format_double(mean)
                << ' ' << format_double(mean - 2 * se) << ' ' << format_double(mean + 2 * se) << ' '
                << format_double(cell.random_rms.value()) << ' ' << cell.distance.count << '\n';
            min_n = first ? N : std::min(min_n, N);
            max_n = first ? N : std::max(max_n, N);
            first = false;
        }
        const std::string block = "'" + f.id + ".dat' index " + std::to_string(k);
        const std::string bin = bin_text(chosen[k]);
        parts.push_back(block + " using 1:2 with linespoints lw 2 pt 7 ps 1.1" + series_colour(k) +
                        " title 'd̃(N), " + bin + "' noenhanced");
        parts.push_back(block + " using 1:3:4:5 with yerrorbars pt 6 ps 0.9 lw 1.2" +
                        series_colour(k) + " title 'random selection ±2 SE, " + bin +
                        "' noenhanced");
        parts.push_back(block + " using 1:3 with lines dt 2 lw 1.2" + series_colour(k) +
                        " notitle");
        parts.push_back(block + " using 1:6 with lines dt 3 lw 2" + series_colour(k) +
                        " title '√E‖·‖² (exact), " + bin + "' noenhanced");
    }
    f.data.push_back({f.id + ".dat", dat.str()});
    if (max_n <= min_n) max_n = min_n + 1;
    std::ostringstream s;
    s << kGrid << "  set logscale x 2\n  set xrange [" << format_double(std::max(0.5, min_n / 1.25))
      << ":" << format_double(max_n * 1.25)
      << "]\n  set yrange [0:*]\n  set key outside below center vertical maxrows 4 font ',11' "
         "samplen 3\n  set xlabel 'N (selected tokens, log scale)'\n"
      << "  set ylabel 'mean over heads of the distance'\n"
      << plot_command(parts) << "  unset logscale x\n";
    f.script = s.str();
    f.caption =
        "d̃(N) against N (solid), the mean over heads, for the " +
        std::string(chosen.size() > 1 ? "middle and the last length bins"
                                      : "last (largest) length bin") +
        "; with points and error bars, the Monte Carlo mean of the distance for a uniformly "
        "random N-subset, ±2 standard errors of the mean over heads (√(Σ "
        "<code>random_se</code>²) / heads); dotted, √E‖·‖² computed exactly "
        "(<code>random_rms_exact</code>, at least E‖·‖ by Jensen's inequality, which the "
        "predecessor bounds with). Log N. From " +
        code(source) + ".";
    return f;
}

// ---- (c) critical N against L -------------------------------------------------------------------

Figure critical_figure(const std::string& prefix, const CsvTable& by_length, double ks_level) {
    Figure f;
    f.id = prefix + "normalization_critical_n";
    f.title = "Critical N against L";
    std::ostringstream dat;
    dat << "# length_mean critical_N length_lo length_hi (bins without a critical N left out)\n";
    std::vector<std::string> omitted;
    int drawn = 0;
    double x_max = 1, y_max = 0;
    for (std::size_t r = 0; r < by_length.rows.size(); ++r) {
        const int lo = integer_at(by_length, r, "length_lo"),
                  hi = integer_at(by_length, r, "length_hi");
        const double mean = by_length.number(r, "length_mean"),
                     critical = by_length.number(r, "critical_N");
        (void)by_length.number(r, "fraction");
        x_max = std::max({x_max, static_cast<double>(hi), std::isfinite(mean) ? mean : 0.0});
        if (!std::isfinite(critical) || !std::isfinite(mean)) {
            omitted.push_back(bin_text({lo, hi}));
            continue;
        }
        dat << format_double(mean) << ' ' << format_double(critical) << ' ' << lo << ' ' << hi
            << '\n';
        y_max = std::max(y_max, critical);
        ++drawn;
    }
    f.data.push_back({f.id + ".dat", dat.str()});
    std::vector<std::string> parts;
    if (drawn)
        parts.push_back("'" + f.id + ".dat' using 1:2 with points pt 7 ps 1.6 lc rgb '" +
                        palette::kMeasured + "' title 'critical N (first N the KS test cannot " +
                        "tell from random)'");
    parts.push_back(format_double(kPredecessorCriticalFraction) +
                    "*x with lines dt 2 lw 2 lc rgb '" + palette::kGuide +
                    "' title '0.06 L (the predecessor''s finding)'");
    std::ostringstream s;
    // Room above the highest point and the reference line, so neither sits on the border.
    y_max = 1.15 * std::max({y_max, kPredecessorCriticalFraction * 1.05 * x_max, 1.0});
    s << kGrid << "  set xrange [0:" << format_double(1.05 * x_max)
      << "]\n  set yrange [0:" << format_double(y_max) << "]\n  set samples 200\n"
      << "  set key outside below center horizontal font ',11' samplen 3\n"
      << "  set xlabel 'context length L (mean of the bin)'\n  set ylabel 'critical N'\n"
      << plot_command(parts);
    f.script = s.str();
    std::string caption =
        "Per length bin, the first N of the grid at which a two-sample Kolmogorov–Smirnov test "
        "(level " +
        short_number(ks_level) +
        ", <code>parameters.ks_level</code>) cannot tell the heads' d̃(N) from their "
        "random-selection mean, against the bin's mean L; dashed, the predecessor's critical N "
        "≈ 0.06·L. From " +
        code(by_length.path) + ".";
    if (!omitted.empty()) {
        caption += " Left out (no N of the grid indistinguishable, <code>nan</code>):";
        for (std::size_t i = 0; i < omitted.size(); ++i)
            caption += (i ? ", " : " ") + html_escape(omitted[i]);
        caption += ".";
    }
    f.caption = caption;
    return f;
}

std::string critical_n_table(const CsvTable& by_length) {
    std::vector<std::vector<std::string>> rows;
    for (std::size_t r = 0; r < by_length.rows.size(); ++r) {
        const double critical = by_length.number(r, "critical_N");
        rows.push_back({std::to_string(by_length.integer(r, "length_lo")),
                        std::to_string(by_length.integer(r, "length_hi")),
                        short_number(by_length.number(r, "length_mean")),
                        std::isfinite(critical) ? short_number(critical) : "none",
                        number_or_na(by_length.number(r, "fraction"))});
    }
    return html_table({"length_lo", "length_hi", "mean L", "critical N", "critical N / mean L"},
                      rows);
}

// critical_n.csv as a grid: one row per bin, one column per N, the p-value (bold where the
// test cannot tell the two samples apart).
std::string p_value_table(const CsvTable& critical) {
    std::set<int> grid;
    std::map<Bin, std::map<int, std::string>> cells;
    for (std::size_t r = 0; r < critical.rows.size(); ++r) {
        const int N = integer_at(critical, r, "N");
        (void)critical.number(r, "length_mean"), (void)critical.integer(r, "heads");
        const std::string d = short_number(critical.number(r, "ks_statistic"));
        const std::string p = short_number(critical.number(r, "p_value"));
        const bool same = critical.integer(r, "indistinguishable") != 0;
        grid.insert(N);
        cells[{integer_at(critical, r, "length_lo"), integer_at(critical, r, "length_hi")}][N] =
            same ? "<b>" + p + "</b>" : p + " <small>(D " + d + ")</small>";
    }
    std::vector<std::string> header = {"length bin"};
    for (int N : grid)
        header.push_back("N = " + std::to_string(N));
    std::vector<std::vector<std::string>> rows;
    for (const auto& [bin, by_n] : cells) {
        std::vector<std::string> row = {html_escape(bin_text(bin))};
        for (int N : grid) {
            const auto cell = by_n.find(N);
            row.push_back(cell == by_n.end() ? "" : cell->second);
        }
        rows.push_back(row);
    }
    return html_table(header, rows);
}

Section critical_section(const std::string& prefix, const RunFolder& run) {
    Section section;
    section.title = "Critical N: where d̃(N) looks random";
    const std::string by_length_path = path_in(run.dir, schema::file::critical_n_by_length);
    const std::string critical_path = path_in(run.dir, schema::file::critical_n);
    if (!std::filesystem::exists(by_length_path) && !std::filesystem::exists(critical_path)) {
        section.html_before = "<p class=\"warn\">No critical N: the folder has neither " +
                              code(by_length_path) + " nor " + code(critical_path) +
                              " (the KS step of the run did not finish).</p>\n";
        return section;
    }
    const CsvTable by_length =
        read_table_with_columns(by_length_path, columns_of(schema::file::critical_n_by_length));
    const CsvTable critical =
        read_table_with_columns(critical_path, columns_of(schema::file::critical_n));
    const std::string manifest = path_in(run.dir, schema::file::manifest);
    const double ks_level = with_json_context(
        manifest, [&] { return run.manifest.at("parameters").at("ks_level").get<double>(); });
    section.html_before =
        "<p>The critical N of each length bin: the first N of the grid whose two-sample "
        "Kolmogorov–Smirnov test between the heads' mean d̃(N) and their mean "
        "random-selection distance has p ≥ " +
        short_number(ks_level) +
        " (the level, <code>parameters.ks_level</code>; the predecessor's text uses 0.01). From " +
        code(by_length_path) + ".</p>\n" + critical_n_table(by_length);
    section.figures.push_back(critical_figure(prefix, by_length, ks_level));
    section.html_after =
        "<p>The test per bin and N: the exact two-sided p-value (bold: indistinguishable at the "
        "level; otherwise with the KS statistic D). From " +
        code(critical_path) + ".</p>\n" + p_value_table(critical);
    return section;
}

// ---- (d) separability per N across heads
// ----------------------------------------------------------

Figure separability_figure(const std::string& prefix, const std::string& path) {
    const CsvTable table = read_table_with_columns(path, columns_of(schema::file::separability));
    // N → head → (Σ queries·separability, Σ queries): each head pooled over the bins.
    std::map<int, std::map<std::pair<int, int>, std::pair<double, double>>> pooled;
    for (std::size_t r = 0; r < table.rows.size(); ++r) {
        const int N = integer_at(table, r, "N");
        const std::pair<int, int> head = {integer_at(table, r, "layer"),
                                          integer_at(table, r, "head")};
        (void)table.integer(r, "length_lo"), (void)table.integer(r, "length_hi");
        const double queries = static_cast<double>(table.integer(r, "queries"));
        const double separability = table.number(r, "separability");
        if (!(queries > 0) || !std::isfinite(separability)) continue;
        auto& [weighted, weight] = pooled[N][head];
        weighted += queries * separability;
        weight += queries;
    }
    Figure f;
    f.id = prefix + "normalization_separability";
    f.title = "Separability N_s/N per N across heads";
    std::ostringstream dat, tics;
    dat << "# log2_N N min q25 median q75 max heads (over heads of each head's separability "
           "pooled over the length bins, weighted by queries; type-7 quartiles)\n";
    double x_lo = 0, x_hi = 1;
    bool first = true;
    for (const auto& [N, heads] : pooled) {
        std::vector<double> values;
        for (const auto& [head, sums] : heads)
            values.push_back(sums.first / sums.second);
        const auto [low, high] = std::minmax_element(values.begin(), values.end());
        const double x = std::log2(static_cast<double>(N));
        dat << format_double(x) << ' ' << N << ' ' << format_double(*low) << ' '
            << format_double(quantile(values, 0.25)) << ' ' << format_double(quantile(values, 0.5))
            << ' ' << format_double(quantile(values, 0.75)) << ' ' << format_double(*high) << ' '
            << values.size() << '\n';
        tics << (first ? "" : ", ") << "'" << N << "' " << format_double(x);
        x_lo = first ? x : std::min(x_lo, x);
        x_hi = first ? x : std::max(x_hi, x);
        first = false;
    }
    f.data.push_back({f.id + ".dat", dat.str()});
    const std::string file = "'" + f.id + ".dat'";
    std::ostringstream s;
    s << kGrid << "  set xrange [" << format_double(x_lo - 0.6) << ":" << format_double(x_hi + 0.6)
      << "]\n  set yrange [0:1.05]\n";
    if (!first) s << "  set xtics (" << tics.str() << ")\n";
    s << "  set boxwidth 0.45 absolute\n"
      << "  set key outside below center horizontal font ',11' samplen 3\n"
      << "  set xlabel 'N (selected tokens, log scale)'\n"
      << "  set ylabel 'N_s/N = R(r_{min}, N)'\n";
    std::vector<std::string> curves;
    if (!first) {
        const std::string measured = std::string(" lc rgb '") + palette::kMeasured + "'";
        curves = {file + " using 1:4:3:7:6 with candlesticks whiskerbars 0.5 lw 1.5" + measured +
                      " fs solid 0.35 border" + measured +
                      " title 'heads: quartiles, whiskers min to max'",
                  file + " using 1:5:5:5:5 with candlesticks lw 2.5" + measured + " notitle",
                  file + " using 1:5 with linespoints lw 2 pt 7 lc rgb '" + palette::kFit +
                      "' title 'median over heads'"};
    }
    s << plot_command(curves);
    s << "  set xtics autofreq\n  unset boxwidth\n";
    f.script = s.str();
    f.caption =
        "N<sub>s</sub>/N = R(r<sub>min</sub>, N): the share of the N selected tokens inside the "
        "ball of radius r<sub>min</sub> = min<sub>j∉I<sub>N</sub></sub>‖s(N) − "
        "α<sub>j</sub>x<sub>j</sub>‖ around s(N). Each head's value is pooled over the length "
        "bins, weighted by their query positions (<code>queries</code>); the boxes are the "
        "quartiles over heads (type-7 percentiles), the whiskers the smallest and largest head, "
        "and the line joins the medians. The predecessor finds it falls until N ≈ 16, then "
        "0.70–0.85. Log N. From " +
        code(path) + (first ? " (no rows with a value: nothing to draw)." : ".");
    return f;
}

// ---- (e) softmax sensitivity ------------------------------------------------------------------

Figure sensitivity_figure(const std::string& prefix, const std::string& path) {
    const CsvTable table = read_table_with_columns(path, columns_of(schema::file::sensitivity));
    struct OverHeads {
        double max = -1;
        Mean mean;
    };
    std::map<double, std::map<double, OverHeads>> by_epsilon;  // ε → T → over heads
    double t_lo = 0, t_hi = 0;
    bool any = false;
    for (std::size_t r = 0; r < table.rows.size(); ++r) {
        (void)table.integer(r, "layer"), (void)table.integer(r, "head");
        (void)table.integer(r, "queries");
        const double T = table.number(r, "temperature"), epsilon = table.number(r, "epsilon");
        const double g = table.number(r, "g");
        if (!(T > 0) || !std::isfinite(T))
            throw InputError(table.where(r, "temperature") + ": " + format_double(T) +
                             ", expected a positive temperature");
        OverHeads& cell = by_epsilon[epsilon][T];
        if (std::isfinite(g)) cell.max = std::max(cell.max, g);
        cell.mean.add(g);
        t_lo = any ? std::min(t_lo, T) : T;
        t_hi = any ? std::max(t_hi, T) : T;
        any = true;
    }
    Figure f;
    f.id = prefix + "normalization_sensitivity";
    f.title = "Softmax sensitivity g(T, ε) against T";
    std::ostringstream dat;
    dat << "# one block per epsilon: epsilon T max_g mean_g heads (over heads of g; 0 is not "
           "drawn on the log axis)\n";
    std::vector<std::string> parts;
    std::size_t k = 0;
    for (const auto& [epsilon, by_t] : by_epsilon) {
        dat << (k ? "\n\n" : "") << "# epsilon = " << format_double(epsilon) << '\n';
        for (const auto& [T, cell] : by_t)
            dat << format_double(epsilon) << ' ' << format_double(T) << ' '
                << format_double(cell.mean.count ? cell.max : std::nan("")) << ' '
                << format_double(cell.mean.value()) << ' ' << cell.mean.count << '\n';
        const std::string block = "'" + f.id + ".dat' index " + std::to_string(k);
        parts.push_back(block + " using 2:3 with linespoints lw 2.5 pt 7 ps 1" + series_colour(k) +
                        " title 'ε = " + short_number(epsilon) + ": max over heads' noenhanced");
        parts.push_back(block + " using 2:4 with lines lw 1" + series_colour(k) +
                        " title 'ε = " + short_number(epsilon) + ": mean' noenhanced");
        ++k;
    }
    f.data.push_back({f.id + ".dat", dat.str()});
    // The reference lines first, so they stay in the key's first column; the formula of the
    // predecessor's is in the caption (the key has no room for it beside three ε).
    std::vector<std::string> references;
    references.push_back("predecessor_reference(x) with lines dt 2 lw 2 lc rgb '" +
                         std::string(palette::kGuide) +
                         "' title 'predecessor''s reference' noenhanced");
    references.push_back("1/(2*x) with lines dt 3 lw 2 lc rgb '" + std::string(palette::kNeutral) +
                         "' title 'Jacobian bound 1/(2T)' noenhanced");
    parts.insert(parts.begin(), references.begin(), references.end());
    if (!any) t_lo = 0.01, t_hi = 100;
    std::ostringstream s;
    s << kGrid << "  set logscale xy\n  set format x '10^{%L}'\n  set format y '10^{%L}'\n"
      << "  set xrange [" << format_double(t_lo / 1.5) << ":" << format_double(t_hi * 1.5)
      << "]\n  set samples 400\n"
      << "  predecessor_reference(x) = 1/(4*x) < sqrt(2) ? 1/(4*x) : sqrt(2)\n"
      << "  set key outside below center vertical maxrows 2 font ',10' samplen 3\n"
      << "  set xlabel 'temperature T (log scale)'\n"
      << "  set ylabel 'g = ‖softmax((l + εv)/T) − softmax(l/T)‖₂ / ε' noenhanced\n"
      << plot_command(parts) << "  unset logscale xy\n  set format x\n  set format y\n";
    f.script = s.str();
    f.caption =
        "g(T, ε) = ‖softmax((l + εv)/T) − softmax(l/T)‖<sub>2</sub> / ε for a random unit "
        "direction v, averaged over every query position: thick, the maximum over heads; thin, "
        "the mean over heads; one colour per ε. Dashed, the predecessor's reference "
        "min{1/(4T), √2}; dotted, 1/(2T), the largest spectral norm the Jacobian of softmax(l/T) "
        "can have. Their 1/(4T) bounds only the Jacobian's diagonal (p<sub>i</sub>(1 − "
        "p<sub>i</sub>)/T ≤ 1/(4T)), so a head may exceed it; no head can exceed 1/(2T) at any ε "
        "(the mean value inequality). Log–log. From " +
        code(path) + ".";
    return f;
}

// ---- the folder ---------------------------------------------------------------------------------

std::string list_text(const nlohmann::json& value) {
    if (!value.is_array()) return json_text(value);
    std::string out;
    for (std::size_t i = 0; i < value.size(); ++i)
        out += (i ? ", " : "") + json_text(value[i]);
    return out;
}

// The settings table, every key as `attngeo normalization` writes it (a missing one or a value of
// the wrong type is a JSON error carrying its pointer).
std::vector<std::vector<std::string>> settings_rows(const nlohmann::json& m) {
    const nlohmann::json& model = m.at("model");
    const nlohmann::json& p = m.at("parameters");
    auto fact = [](const nlohmann::json& object, const char* key) {
        return html_escape(list_text(object.at(key)));
    };
    std::vector<std::vector<std::string>> rows;
    rows.push_back({"model", fact(model, "path") + " (" + fact(model, "family") + ", " +
                                 fact(model, "layers") + " layers × " + fact(model, "heads") +
                                 " heads, " + fact(model, "kv_heads") + " KV heads, head_dim " +
                                 fact(model, "head_dim") + ")"});
    const nlohmann::json& documents = m.at("documents");
    rows.push_back(
        {"windows", fact(documents, "windows") + " (skipped " + fact(documents, "skipped") + ")"});
    rows.push_back({"context", fact(p, "context")});
    rows.push_back({"query positions",
                    fact(p, "queries") + ": " +
                        std::to_string(p.at("positions").get<std::vector<std::int64_t>>().size()) +
                        " positions"});
    const nlohmann::json& length_bins = p.at("length_bins");
    if (!length_bins.is_array())
        throw nlohmann::json::type_error::create(
            302, "expected an array of length bins, found " + length_bins.dump(), &length_bins);
    std::string bins;
    for (const nlohmann::json& bin : length_bins)
        bins += (bins.empty() ? "" : ", ") + html_escape(json_text(bin));
    rows.push_back({"length bins", std::to_string(length_bins.size()) + ": " + bins});
    rows.push_back({"sizes N", fact(p, "sizes")});
    rows.push_back({"random subsets per query",
                    fact(p, "subsets") + " (seed " + fact(p, "random_seed") + ")"});
    const std::vector<double> temperatures = p.at("temperatures").get<std::vector<double>>();
    if (temperatures.empty())
        throw nlohmann::json::type_error::create(302, "expected temperatures, found none",
                                                 &p.at("temperatures"));
    const auto [lo, hi] = std::minmax_element(temperatures.begin(), temperatures.end());
    rows.push_back({"temperatures T", std::to_string(temperatures.size()) + " from " +
                                          short_number(*lo) + " to " + short_number(*hi)});
    rows.push_back({"ε", fact(p, "epsilons")});
    rows.push_back({"scores l", fact(p, "scores")});
    rows.push_back({"KS level", fact(p, "ks_level")});
    if (m.contains("command"))
        rows.push_back({"command", code(m.at("command").get<std::string>())});
    return rows;
}

Section parameters_section(const RunFolder& run) {
    const std::vector<std::vector<std::string>> rows = with_json_context(
        path_in(run.dir, schema::file::manifest), [&] { return settings_rows(run.manifest); });
    Section section;
    section.title = "Model and measurement";
    section.html_before =
        "<p>The predecessor paper's measurements (“Limitations of Normalization in Attention "
        "Mechanism”, docs/design.md §14) per head over the chosen query positions, a query at "
        "position t reading keys 0..t (L = t + 1); x<sub>i</sub> are the value states.</p>\n" +
        html_table({"setting", "value"}, rows);
    return section;
}

}  // namespace

std::vector<Section> normalization_limits_sections(const RunFolder& run) {
    const std::string prefix = "run" + std::to_string(run.index) + "_";
    const std::string distance_path = path_in(run.dir, schema::file::selection_distance);
    const DistanceCells cells = read_distance(
        read_table_with_columns(distance_path, columns_of(schema::file::selection_distance)));
    std::vector<Section> sections = {parameters_section(run)};

    Section distance;
    distance.title = "Distance to the complement: d̃(N) against L and N";
    distance.html_before =
        "<p>d̃(N) = ‖Σ<sub>i∉I<sub>N</sub></sub> y<sub>i</sub> − s(N)‖ with y<sub>i</sub> = "
        "α<sub>i</sub>x<sub>i</sub> and I<sub>N</sub> the N largest weights, beside the same "
        "distance for N tokens chosen uniformly at random: where the two meet, the weights no "
        "longer single out the tokens that matter.</p>\n";
    distance.figures.push_back(distance_by_length(prefix, cells, distance_path));
    distance.figures.push_back(distance_by_n(prefix, cells, distance_path));
    sections.push_back(std::move(distance));

    sections.push_back(critical_section(prefix, run));

    Section separability;
    separability.title = "Separability N_s/N";
    separability.figures.push_back(
        separability_figure(prefix, path_in(run.dir, schema::file::separability)));
    sections.push_back(std::move(separability));

    Section sensitivity;
    sensitivity.title = "Softmax sensitivity g(T, ε)";
    sensitivity.figures.push_back(
        sensitivity_figure(prefix, path_in(run.dir, schema::file::sensitivity)));
    sections.push_back(std::move(sensitivity));

    sections.push_back(decisions_section(run.manifest));
    return sections;
}

}  // namespace attngeo::reports
