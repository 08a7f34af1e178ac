// Sections for simulate and sweep runs: the verdict first (simulation_verdict), then E[P], E[R],
// E[F] against N with the four envelopes and Table-2 regimes (the counterpart of the paper's
// Figure 5), sweep panels, Table 1, and the tables of parameters, realised statistics, κ and
// envelope agreement.
#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "common/errors.hpp"
#include "common/format.hpp"
#include "common/json_file.hpp"
#include "common/manifest_values.hpp"
#include "common/run_schema.hpp"
#include "compare/table1.hpp"
#include "reports/csv_table.hpp"
#include "reports/palette.hpp"
#include "reports/sections.hpp"
#include "reports/html.hpp"
#include "reports/simulation_tables.hpp"
#include "reports/simulation_verdict.hpp"
#include "reports/verdict.hpp"
#include "reports/verdict_text.hpp"
#include "simulate/run.hpp"
#include "theory/bounds.hpp"
#include "theory/parametric.hpp"

namespace fs = std::filesystem;

namespace attngeo::reports {
namespace {

struct MetricSpec {
    std::string key;    // column prefix in the CSVs: P, R, Fmax, Fmin
    std::string label;  // axis label (gnuplot enhanced text)
    std::string title;
    bool has_interval;  // simulate.csv has its CI columns
};

const std::vector<MetricSpec>& metric_specs() {
    static const std::vector<MetricSpec> specs = {
        // one figure each
        {"P", "E[P(r_{max}, N)]", "Precision E[P(r_max, N)] against N", true},
        {"R", "E[R(r_{min}, N)]", "Recall E[R(r_min, N)] against N", true},
        {"Fmax", "E[F(r_{max}, N)]", "F-score E[F(r_max, N)] against N", false},
        {"Fmin", "E[F(r_{min}, N)]", "F-score E[F(r_min, N)] against N", false},
    };
    return specs;
}

// Table-2 regime bands: II before m1, III until m2, IV until m3, V after (α sorted, so the
// regimes are contiguous in N).
std::string regime_shading(const nlohmann::json& regimes, int n) {
    if (regimes.is_null()) return "";
    const int m1 = regimes.value("m1", 0), m2 = regimes.value("m2", 0), m3 = regimes.value("m3", 0);
    std::vector<std::pair<std::string, int>> starts = {{"II", 1}};
    if (m1 > 0) starts.push_back({"III", m1});
    if (m2 > 0) starts.push_back({"IV", m2});
    if (m3 > 0) starts.push_back({"V", m3});
    std::ostringstream out;
    for (std::size_t r = 0; r < starts.size(); ++r) {
        const double from = starts[r].second;
        const double to = r + 1 < starts.size() ? starts[r + 1].second : n;
        if (to <= from) continue;
        out << "  set object " << r + 1 << " rect from " << from << ", graph 0 to " << to
            << ", graph 1 fc rgb '" << palette::kTable2Band[r % palette::kTable2Band.size()]
            << "' fs solid 1.0 noborder behind\n";
        out << "  set label " << r + 1 << " '" << starts[r].first << "' at "
            << std::sqrt(from * std::max(to, from + 1.0)) << ", graph 0.04 center tc rgb '"
            << palette::kBandLabel << "'\n";
    }
    const char* names[3] = {"m_1", "m_2", "m_3"};
    const int marks[3] = {m1, m2, m3};
    for (int k = 0; k < 3; ++k) {
        if (marks[k] <= 0) continue;
        out << "  set arrow " << k + 1 << " from " << marks[k] << ", graph 0 to " << marks[k]
            << ", graph 1 nohead dt 3 lc rgb '" << palette::kGuide << "'\n";
        // Inside the frame, staggered downwards (the m's can be close), beside the mark on the
        // side with room: left of it in the right-most sixth of the log axis.
        const bool near_right = std::log(marks[k]) > 0.83 * std::log(std::max(n, 2));
        out << "  set label " << 10 + k << " '" << names[k] << "=" << marks[k] << "' at "
            << marks[k] << ", graph " << 0.96 - 0.05 * k
            << (near_right ? " right offset char -0.3, 0" : " left offset char 0.3, 0")
            << " tc rgb '" << palette::kMarkLabel << "' font ',11' front\n";
    }
    return out.str();
}

// Which envelope columns a figure draws: each side at its judged κ (`*_edge`) for P and R, the
// row's κ for F (which has no scan of its own).
std::string envelope_column(const std::string& metric, const std::string& side) {
    const bool scanned = metric == "P" || metric == "R";
    return metric + "_" + side + (scanned ? "_edge" : "");
}

// A metric figure's .dat columns (gnuplot counts from 1): N, the mean and its interval, three
// per bound variant in variant_names() order (lower, upper, inverted flag), then whether the
// verdict falsified (or found contradicted) either side of the paper envelope there.
struct MetricColumns {
    static constexpr int kMean = 2, kCiLo = 3, kCiHi = 4;
    static constexpr int kFirstVariant = 5, kPerVariant = 3;
    static int lower(int variant) { return kFirstVariant + kPerVariant * variant; }
    static int upper(int variant) { return lower(variant) + 1; }
    static int inverted(int variant) { return lower(variant) + 2; }
    static int paper_falsified() {
        return kFirstVariant + kPerVariant * static_cast<int>(variant_names().size());
    }
};

// What the caption says about the rows: the N where a side of the paper envelope is falsified
// and, per variant, how many N have an inverted envelope.
struct MetricCounts {
    int sizes = 0;  // rows (values of N) drawn
    int falsified = 0;
    std::map<std::string, int> inverted;
};

std::string metric_figure_data(const MetricSpec& metric, const CsvTable& sim,
                               const CsvTable& bounds, const std::string& lower,
                               const std::string& upper, MetricCounts& counts) {
    struct Envelope {
        double lower = std::nan(""), upper = std::nan("");
        bool falsified = false;  // a side falsified or contradicted at its judged κ
    };
    // Only P and R are judged: bounds.csv's falsified_<metric>_<side> columns.
    const bool judged = metric.key == "P" || metric.key == "R";
    std::map<std::string, std::map<int, Envelope>> envelope;  // variant → N → bounds
    for (std::size_t r = 0; r < bounds.rows.size(); ++r) {
        Envelope e{bounds.number(r, lower), bounds.number(r, upper), false};
        if (judged)
            for (const char* kind : {"falsified_", "contradicted_"})
                for (const char* side : {"_lower", "_upper"})
                    e.falsified = e.falsified || bounds.text(r, kind + metric.key + side) == "1";
        envelope[bounds.text(r, "variant")][static_cast<int>(bounds.integer(r, "N"))] = e;
    }
    std::ostringstream dat;
    dat << "# N mean ci_lo ci_hi, then per variant (";
    for (const auto& v : variant_names())
        dat << v << ' ';
    dat << "): lower upper inverted(lower > upper); then paper_falsified (a side of the paper "
           "envelope falsified or contradicted at its judged kappa)\n";
    const std::string mean_col = metric.key + "_mean";
    for (std::size_t r = 0; r < sim.rows.size(); ++r) {
        const int N = static_cast<int>(sim.integer(r, "N"));
        const double mean = sim.number(r, mean_col);
        const double lo = metric.has_interval ? sim.number(r, metric.key + "_ci_lo") : mean;
        const double hi = metric.has_interval ? sim.number(r, metric.key + "_ci_hi") : mean;
        dat << N << ' ' << format_double(mean) << ' ' << format_double(lo) << ' '
            << format_double(hi);
        for (const auto& v : variant_names()) {
            const Envelope e = envelope[v][N];
            const bool flipped = e.lower > e.upper;
            counts.inverted[v] += flipped;
            dat << ' ' << format_double(e.lower) << ' ' << format_double(e.upper) << ' '
                << (flipped ? 1 : 0);
        }
        const bool falsified =
            envelope[theory::to_string(theory::BoundVariant::paper)][N].falsified;
        counts.falsified += falsified;
        counts.sizes += 1;
        dat << ' ' << (falsified ? 1 : 0) << '\n';
    }
    return dat.str();
}

// The plot: regime bands, the estimate (and its interval where there is one), each variant's
// envelope in its own width and dash (palette.hpp, widest first so coinciding lines stay
// visible), and key entries for marks only when some are drawn.
std::string metric_figure_script(const std::string& data_name, const MetricSpec& metric, int n,
                                 const nlohmann::json& regimes, const MetricCounts& counts) {
    using C = MetricColumns;
    std::ostringstream s;
    s << "  set logscale x 2\n  set xrange [1:" << n << "]\n  set yrange [-0.03:1.08]\n"
      << "  set xlabel 'N (selected tokens, log scale)'\n  set ylabel '" << metric.label << "'\n"
      << "  set key outside below horizontal maxrows 4 font ',11' spacing 1.05\n  set grid xtics "
         "ytics lc rgb '"
      << palette::kGridLine << "'\n"
      << regime_shading(regimes, n) << "  plot ";
    if (metric.has_interval)
        s << "'" << data_name << "' using 1:" << C::kCiLo << ":" << C::kCiHi
          << " with filledcurves lc rgb '" << palette::kMeasuredBand
          << "' fs transparent solid 0.6 title '95% interval', \\\n       ";
    s << "'" << data_name << "' using 1:" << C::kMean << " with lines lw 2.5 lc rgb '"
      << palette::kMeasured << "' title 'Monte Carlo'";
    bool any_inverted = false;
    for (int v = 0; v < static_cast<int>(variant_names().size()); ++v) {
        const std::string& name = variant_names()[v];
        const std::string& colour = variant_color(v);
        s << ", \\\n       '' using 1:" << C::lower(v) << " with lines lw "
          << palette::variant_width(v) << " dt " << palette::variant_lower_dash(v) << " lc rgb '"
          << colour << "' title '" << name << " lower'";
        s << ", \\\n       '' using 1:" << C::upper(v) << " with lines lw "
          << palette::variant_width(v) << " dt 1 lc rgb '" << colour << "' title '" << name
          << " upper'";
        if (counts.inverted.count(name) && counts.inverted.at(name) > 0) {
            any_inverted = true;
            s << ", \\\n       '' using 1:($" << C::inverted(v) << " > 0 ? $" << C::lower(v)
              << " : 1/0) with points pt 13 ps 1.3 lc rgb '" << colour << "' notitle";
        }
    }
    if (any_inverted)
        s << ", \\\n       1/0 with points pt 13 ps 1.3 lc rgb '" << palette::kNeutral
          << "' title 'inverted: lower > upper'";
    if (counts.falsified > 0)
        s << ", \\\n       '' using 1:($" << C::paper_falsified() << " > 0 ? $" << C::kMean
          << " : 1/0) with points pt 6 ps 1.1 lc rgb '" << palette::kSink
          << "' title 'paper envelope falsified'";
    s << "\n";
    return s.str();
}

// "2 of 11 values of N": a count with what it is out of.
std::string count_of_sizes(int count, int total) {
    return std::to_string(count) + " of " + std::to_string(total) + " value" +
           (total == 1 ? "" : "s") + " of N";
}

std::string metric_figure_caption(const MetricSpec& metric, const std::string& lower,
                                  const std::string& upper, bool at_edge,
                                  const nlohmann::json& regimes, const MetricCounts& counts) {
    std::ostringstream caption;
    caption << "Monte Carlo estimate with its 95% Student-t interval ("
            << (metric.has_interval ? "shaded" : "F has no interval column; the mean is drawn")
            << ") and the lower (dashed) and upper (solid) envelopes of the four bound variants, "
               "each in "
               "its own line width and dash, widest first, so a variant that coincides with "
               "another shows as a coloured rim "
            << (at_edge ? "at the judged κ of each side (κ_edge where it has one; the <code>" +
                              lower + "</code>, <code>" + upper + "</code> columns of bounds.csv)"
                        : std::string("at the row's κ (<code>kappa</code> of bounds.csv, or each "
                                      "side's own where the sides share none; only P and R are "
                                      "scanned)"))
            << ". ";
    if (!regimes.is_null())
        caption << "Background bands: Table-2 regimes II–V, with m<sub>1</sub>, m<sub>2</sub>, "
                   "m<sub>3</sub> marked. ";
    std::vector<std::string> flipped;
    for (const auto& v : variant_names())
        if (counts.inverted.count(v) && counts.inverted.at(v) > 0)
            flipped.push_back("<code>" + v + "</code> at " +
                              count_of_sizes(counts.inverted.at(v), counts.sizes));
    if (!flipped.empty()) {
        caption << "<span class=\"bad\">Inverted envelopes (lower > upper; diamonds on the "
                   "lower bound):</span> ";
        for (std::size_t i = 0; i < flipped.size(); ++i)
            caption << (i ? ", " : "") << flipped[i];
        caption << ". ";
    } else {
        caption << "No envelope is inverted. ";
    }
    if (metric.key != "P" && metric.key != "R") {
        caption << "F is not judged by the verdict (its bounds follow P's and R's through "
                   "Corollary 1).";
    } else if (counts.falsified > 0) {
        caption << "<span class=\"bad\">The verdict falsifies a side of the paper envelope at "
                << count_of_sizes(counts.falsified, counts.sizes)
                << " (red circles: the simultaneous band lies wholly beyond the bound, "
                   "bounds.csv's falsified_* and contradicted_* columns)</span>. The 95% "
                   "interval is per point and descriptive only.";
    } else {
        caption << "The verdict falsifies no side of the paper envelope drawn here (the 95% "
                   "interval is per point and descriptive only).";
    }
    return caption.str();
}

Figure metric_figure(const RunFolder& run, const MetricSpec& metric, const CsvTable& sim,
                     const CsvTable& bounds, int n, const nlohmann::json& regimes) {
    const std::string lower = envelope_column(metric.key, "lower"),
                      upper = envelope_column(metric.key, "upper");
    const bool at_edge = lower != metric.key + "_lower";
    MetricCounts counts;
    Figure f;
    f.id = "run" + std::to_string(run.index) + "_" + metric.key;
    f.title = metric.title;
    const std::string data_name = f.id + ".dat";
    f.data.push_back({data_name, metric_figure_data(metric, sim, bounds, lower, upper, counts)});
    f.script = metric_figure_script(data_name, metric, n, regimes, counts);
    f.caption = metric_figure_caption(metric, lower, upper, at_edge, regimes, counts);
    return f;
}

std::string parameter_table(const nlohmann::json& manifest) {
    const auto& config = manifest.at("config");
    std::vector<std::vector<std::string>> rows;
    std::set<std::string> from_preset;
    if (manifest.contains("from_preset"))
        for (const auto& p : manifest.at("from_preset"))
            from_preset.insert(p.get<std::string>());
    for (const auto& [key, value] : config.at("model").items()) {
        if (value.is_string() && value.get<std::string>().empty()) continue;
        rows.push_back(
            {key, html_escape(json_text(value)), from_preset.count(key) ? "preset" : ""});
    }
    const bool expected_geometry = infinite_d(config.at("d"));
    for (const char* key :
         {"d", "kappa", "trials", "seed", "N", "rank", "distance", "sink_mode", "norm_cv"}) {
        // d = ∞ draws nothing: no trials (and the seed is unused).
        if (expected_geometry && (key == std::string("trials") || key == std::string("seed")))
            continue;
        const auto& v = config.at(key);
        rows.push_back({key,
                        v.is_null() ? "judged per side (its κ set by test inversion)"
                                    : html_escape(json_text(v)),
                        from_preset.count(key) ? "preset" : ""});
    }
    rows.push_back({"threads", json_text(manifest.at("threads")), ""});
    rows.push_back({"version / commit",
                    html_escape(json_text(manifest.at("version")) + " / " +
                                json_text(manifest.at("git_commit"))),
                    ""});
    if (manifest.contains("command"))
        rows.push_back(
            {"command", "<code>" + html_escape(json_text(manifest.at("command"))) + "</code>", ""});
    return html_table({"parameter", "value", "source"}, rows);
}

std::string realised_table(const nlohmann::json& point) {
    if (!point.contains("realised")) return "<p>d = ∞: no sampling, nothing realised.</p>\n";
    const auto& realised = point.at("realised");
    std::vector<std::vector<std::string>> rows;
    for (const auto& lag : realised.at("cos_by_lag")) {
        rows.push_back(
            {"mean cos(v<sub>i</sub>, v<sub>i+" + std::to_string(json_integer<int>(lag.at("lag"))) +
                 "</sub>)",
             lag.contains("requested") ? json_text(lag.at("requested")) : "explicit matrix",
             lag.contains("expected_after_normalisation")
                 ? json_text(lag.at("expected_after_normalisation"))
                 : "",
             json_text(lag.at("mean")), json_text(lag.at("se"))});
    }
    const auto& sink = realised.at("cos_to_sink");
    rows.push_back({"mean cos(v<sub>0</sub>, v<sub>j</sub>)",
                    sink.contains("requested") ? json_text(sink.at("requested")) : "",
                    sink.contains("expected_after_normalisation")
                        ? json_text(sink.at("expected_after_normalisation"))
                        : "",
                    json_text(sink.at("mean")), json_text(sink.at("se"))});
    rows.push_back({"mean ‖v<sub>i</sub>‖ / nominal (i ≥ 1)", "1", "",
                    json_text(realised.at("norm_ratio_mean").at("mean")),
                    json_text(realised.at("norm_ratio_mean").at("se"))});
    rows.push_back({"CV of ‖v<sub>i</sub>‖ over i ≥ 1", "", "",
                    json_text(realised.at("norm_ratio_cv").at("mean")),
                    json_text(realised.at("norm_ratio_cv").at("se"))});
    return html_table({"statistic", "requested", "expected after normalisation at this d",
                       "realised mean", "standard error"},
                      rows);
}

// ---- sweeps -----------------------------------------------------------------------------

// A few N to follow across each parameter, by the rule that picks table1.csv's N
// (compare::followed_sizes) over the N present.
std::vector<int> followed_sizes(const CsvTable& sweep) {
    std::vector<int> sizes;
    for (std::size_t r = 0; r < sweep.rows.size(); ++r)
        sizes.push_back(static_cast<int>(sweep.integer(r, "N")));
    return compare::followed_sizes(sizes);
}

// sweep.csv is long (one row per grid point, N and variant); the panels read the paper
// variant's rows, keyed by (grid, N).
std::map<std::pair<int, int>, std::size_t> paper_rows(const CsvTable& sweep) {
    std::map<std::pair<int, int>, std::size_t> rows;
    for (std::size_t r = 0; r < sweep.rows.size(); ++r)
        if (sweep.text(r, "variant") == theory::to_string(theory::BoundVariant::paper))
            rows[{static_cast<int>(sweep.integer(r, "grid")),
                  static_cast<int>(sweep.integer(r, "N"))}] = r;
    return rows;
}

// Which swept parameters a figure shows: x on the axis, one line per value of `line` (none
// with a single swept parameter).
struct PanelAxes {
    std::size_t x = 0;
    std::optional<std::size_t> line;
};

// One small panel of a sweep figure: the N it shows and the values of the other parameters.
struct PanelCell {
    int N = 0;
    std::vector<double> held;  // [swept parameters] read for all but x and the line parameter
    std::string title;
};

// The grid point whose value of x is `x_value`, of the line parameter `line_value` and of
// every other parameter the cell's; -1 when the grid has none.
int grid_index(const simulate::RunConfig& config, const PanelAxes& axes, const PanelCell& cell,
               double x_value, double line_value) {
    for (const simulate::GridPoint& point : simulate::grid_points(config)) {
        bool match = true;
        for (std::size_t q = 0; q < point.values.size() && match; ++q) {
            double want = cell.held[q];
            if (q == axes.x) want = x_value;
            if (axes.line && q == *axes.line) want = line_value;
            match = point.values[q].second == want;
        }
        if (match) return point.index;
    }
    return -1;
}

// The values of the line parameter, or one placeholder when there is none.
std::vector<double> line_values(const simulate::RunConfig& config, const PanelAxes& axes) {
    return axes.line ? config.sweep[*axes.line].second : std::vector<double>{0.0};
}

// A sweep figure's .dat: one gnuplot index block per panel cell; in each, a row per value of
// x with five columns per line value: mean ci_lo ci_hi lower_joint upper_joint.
struct PanelColumns {
    static constexpr int kFirstLine = 2, kPerLine = 5;
    static int mean(int j) { return kFirstLine + kPerLine * j; }
    static int ci_lo(int j) { return mean(j) + 1; }
    static int ci_hi(int j) { return mean(j) + 2; }
    static int lower(int j) { return mean(j) + 3; }
    static int upper(int j) { return mean(j) + 4; }
};

// The data and, per cell, the smallest and largest value drawn (for the y range).
std::string panel_data(const CsvTable& sweep, const simulate::RunConfig& config,
                       const PanelAxes& axes, const std::string& metric,
                       const std::vector<PanelCell>& cells,
                       std::vector<std::pair<double, double>>& y_extent) {
    const auto rows = paper_rows(sweep);
    std::ostringstream dat;
    dat << "# one block per panel; " << config.sweep[axes.x].first
        << " then, per line, mean ci_lo ci_hi paper_lower paper_upper (each side at the joint "
           "kappa_edge; nan where the joint set is empty)\n";
    for (const PanelCell& cell : cells) {
        double lo = std::numeric_limits<double>::infinity(), hi = -lo;
        dat << "# " << cell.title << '\n';
        for (double x : config.sweep[axes.x].second) {
            dat << format_double(x);
            for (double line : line_values(config, axes)) {
                const auto found = rows.find({grid_index(config, axes, cell, x, line), cell.N});
                if (found == rows.end()) {
                    dat << " nan nan nan nan nan";
                    continue;
                }
                for (const char* column :
                     {"_mean", "_ci_lo", "_ci_hi", "_lower_joint", "_upper_joint"}) {
                    const std::string name = metric + column;
                    const double value = sweep.text(found->second, name).empty()
                                             ? std::nan("")
                                             : sweep.number(found->second, name);
                    if (std::isfinite(value)) lo = std::min(lo, value), hi = std::max(hi, value);
                    dat << ' ' << format_double(value);
                }
            }
            dat << '\n';
        }
        dat << "\n\n";
        y_extent.push_back({lo, hi});
    }
    return dat.str();
}

// gnuplot ranges that hold the data: x from the swept values (log when they span a decade),
// y from what each panel draws, padded, within [-0.03, 1.08].
std::string x_range(const std::vector<double>& values) {
    const auto [lo, hi] = std::minmax_element(values.begin(), values.end());
    std::ostringstream s;
    if (*lo > 0 && *hi / *lo >= 10) {
        s << "  set logscale x\n  set xrange [" << format_double(*lo / 1.2) << ":"
          << format_double(*hi * 1.2) << "]\n";
    } else {
        const double pad = *hi > *lo ? 0.06 * (*hi - *lo) : std::max(0.5 * std::abs(*lo), 0.5);
        s << "  set xrange [" << format_double(*lo - pad) << ":" << format_double(*hi + pad)
          << "]\n";
    }
    return s.str();
}

std::string y_range(std::pair<double, double> extent) {
    auto [lo, hi] = extent;
    if (!(lo <= hi)) lo = 0, hi = 1;
    const double pad = std::max(0.06 * (hi - lo), 0.01);
    std::ostringstream s;
    s << "  set yrange [" << format_double(std::max(-0.03, lo - pad)) << ":"
      << format_double(std::min(1.08, hi + pad)) << "]\n";
    return s.str();
}

std::string panel_script(const std::string& data_name, const simulate::RunConfig& config,
                         const PanelAxes& axes, const std::string& metric,
                         const std::vector<PanelCell>& cells,
                         const std::vector<std::pair<double, double>>& y_extent) {
    const int columns = cells.size() > 4 ? 3 : cells.size() > 1 ? 2 : 1;
    const int panel_rows = static_cast<int>((cells.size() + columns - 1) / columns);
    std::ostringstream s;
    s << "  set multiplot layout " << panel_rows << "," << columns << "\n"
      << x_range(config.sweep[axes.x].second) << "  set xlabel '" << config.sweep[axes.x].first
      << "'\n  set ylabel '" << (metric == "P" ? "E[P(r_{max}, N)]" : "E[R(r_{min}, N)]")
      << "'\n  set key below horizontal font ',10'\n  set grid lc rgb '" << palette::kGridLine
      << "'\n";
    using C = PanelColumns;
    const std::vector<double> lines = line_values(config, axes);
    for (std::size_t k = 0; k < cells.size(); ++k) {
        s << "  set title '" << cells[k].title << "'\n" << y_range(y_extent[k]) << "  plot ";
        for (std::size_t j = 0; j < lines.size(); ++j) {
            const int i = static_cast<int>(j);
            const char* colour = palette::kSeries[j % palette::kSeries.size()];
            const std::string title =
                axes.line ? config.sweep[*axes.line].first + " = " + format_double(lines[j])
                          : std::string("Monte Carlo");
            s << (j ? ", \\\n       " : "") << "'" << data_name << "' index " << k
              << " using 1:" << C::mean(i) << ":" << C::ci_lo(i) << ":" << C::ci_hi(i)
              << " with yerrorlines lw 2 pt 7 ps 0.7 lc rgb '" << colour << "' title '" << title
              << "', \\\n       '' index " << k << " using 1:" << C::lower(i)
              << " with lines dt 2 lw 1.2 lc rgb '" << colour << "' notitle, \\\n       '' index "
              << k << " using 1:" << C::upper(i) << " with lines dt 1 lw 0.8 lc rgb '" << colour
              << "' notitle";
        }
        s << "\n";
    }
    s << "  unset multiplot\n";
    return s.str();
}

// "beta = 0.01, d = 64": the parameters a cell holds (all but x and the line parameter).
std::string held_text(const simulate::RunConfig& config, const PanelAxes& axes,
                      const std::vector<double>& held) {
    std::string text;
    for (std::size_t q = 0; q < config.sweep.size(); ++q) {
        if (q == axes.x || (axes.line && q == *axes.line)) continue;
        text += (text.empty() ? "" : ", ") + config.sweep[q].first + " = " + format_double(held[q]);
    }
    return text;
}

// The paper variant's joint κ of both sides of `metric` (manifest "joint_kappa": the
// intersection of the grid points' κ sets and its κ_edge), or why there is none.
std::string joint_kappa_text(const nlohmann::json& manifest, const std::string& metric) {
    const auto& paper = manifest.at("joint_kappa").at("paper");
    if (paper.is_string()) return "no joint κ: " + html_escape(paper.get<std::string>());
    auto side = [&](const std::string& name) {
        const auto& joint = paper.at(metric).at(name);
        const std::string set = joint.at("kappa_set").get<std::string>();
        const std::string edge = joint.at("kappa_edge").is_null()
                                     ? std::string(set == "none" ? "not drawn" : "κ-free")
                                     : "κ_edge = " + json_text(joint.at("kappa_edge"));
        return name + ": κ set " + html_escape(set) + ", " + edge;
    };
    return side("lower") + "; " + side("upper");
}

// The first value of every swept parameter.
std::vector<double> first_values(const simulate::RunConfig& config) {
    std::vector<double> first;
    for (const auto& [name, values] : config.sweep)
        first.push_back(values.front());
    return first;
}

// Metric `metric` (P or R) against the swept parameter axes.x, one line per value of the line
// parameter, one small panel per cell; `suffix` and `layout` name and describe the cells.
Figure sweep_figure(const RunFolder& run, const CsvTable& sweep, const simulate::RunConfig& config,
                    const PanelAxes& axes, const std::string& metric,
                    const std::vector<PanelCell>& cells, const std::string& suffix,
                    const std::string& layout) {
    const std::string& name = config.sweep[axes.x].first;
    Figure f;
    f.id = "run" + std::to_string(run.index) + "_sweep_" + name + "_" + metric + suffix;
    f.title = std::string(metric == "P" ? "Precision" : "Recall") + " against " + name +
              (axes.line ? ", one line per " + config.sweep[*axes.line].first : std::string());
    std::vector<std::pair<double, double>> y_extent;
    f.data.push_back({f.id + ".dat", panel_data(sweep, config, axes, metric, cells, y_extent)});
    f.script = panel_script(f.id + ".dat", config, axes, metric, cells, y_extent);
    f.caption = layout + ", " + name + " on the x axis" +
                (axes.line ? ", one colour per value of " + config.sweep[*axes.line].first
                           : std::string()) +
                ". Points: Monte Carlo means with 95% intervals; dashed line: the paper lower "
                "bound, thin solid line: its upper bound, each at one κ for the whole sweep, the "
                "κ_edge of the intersection of the grid points' κ sets (" +
                joint_kappa_text(run.manifest, metric) + ").";
    return f;
}

// The standard figure: one panel per followed N, other parameters at their first value.
Figure sweep_panel(const RunFolder& run, const CsvTable& sweep, const simulate::RunConfig& config,
                   const PanelAxes& axes, const std::string& metric,
                   const std::vector<int>& follow) {
    std::vector<PanelCell> cells;
    for (int N : follow)
        cells.push_back({N, first_values(config), "N = " + std::to_string(N)});
    const std::string held = held_text(config, axes, first_values(config));
    return sweep_figure(run, sweep, config, axes, metric, cells, "",
                        "One panel per followed N (" + std::to_string(follow.size()) + ")" +
                            (held.empty() ? std::string() : "; held: " + held));
}

// With more than two swept parameters, the small-multiple page: the first two parameters as x
// and lines, one panel per combination of the others' values, at one followed N.
Figure sweep_small_multiples(const RunFolder& run, const CsvTable& sweep,
                             const simulate::RunConfig& config, const std::string& metric, int N) {
    const PanelAxes axes{0, std::size_t{1}};
    std::vector<std::vector<double>> combos = {first_values(config)};
    for (std::size_t q = 2; q < config.sweep.size(); ++q) {
        std::vector<std::vector<double>> next;
        for (const auto& combo : combos)
            for (double value : config.sweep[q].second) {
                next.push_back(combo);
                next.back()[q] = value;
            }
        combos = next;
    }
    std::vector<PanelCell> cells;
    for (const auto& combo : combos)
        cells.push_back({N, combo, held_text(config, axes, combo) + ", N = " + std::to_string(N)});
    return sweep_figure(run, sweep, config, axes, metric, cells, "_grid",
                        "At N = " + std::to_string(N) +
                            ", one panel per combination of the "
                            "other swept parameters (" +
                            std::to_string(cells.size()) + ")");
}

Section sweep_panels_section(const RunFolder& run, const CsvTable& sweep,
                             const simulate::RunConfig& config, const std::vector<int>& follow) {
    Section panels;
    panels.title = "Metrics against each swept parameter";
    const std::size_t count = config.sweep.size();
    panels.html_before =
        "<p>Each figure puts one swept parameter on the x axis and draws one line per value of "
        "the next swept parameter, so every grid point of the two appears; further swept "
        "parameters are held at their first value (the caption says which)" +
        std::string(count > 2 ? ", and the last figures show every combination of them" : "") +
        ". The bounds are the paper variant's, each side at the κ_edge of the κ consistent at "
        "every grid point (<code>*_joint</code> columns of sweep.csv, manifest "
        "<code>joint_kappa</code>; not drawn where no κ is), so their change along x is the "
        "parameter's effect, not a re-chosen κ.</p>\n";
    for (std::size_t p = 0; p < count; ++p) {
        PanelAxes axes{p, std::nullopt};
        if (count > 1) axes.line = (p + 1) % count;
        for (const char* metric : {"P", "R"})
            panels.figures.push_back(sweep_panel(run, sweep, config, axes, metric, follow));
    }
    if (count > 2 && !follow.empty())
        for (const char* metric : {"P", "R"})
            panels.figures.push_back(
                sweep_small_multiples(run, sweep, config, metric, follow[follow.size() / 2]));
    return panels;
}

// Table 1 as the sweep wrote it (table1.csv and the manifest's "table1").
Section sweep_table1_section(const RunFolder& run) {
    Section table1;
    table1.title = "Table 1: sensitivity of the bounds, d(bound)/d(log parameter)";
    table1.html_before = table1_html(run.dir, run.manifest, "at the first grid point (");
    return table1;
}

Section sweep_agreement_section(const RunFolder& run, const CsvTable& sweep) {
    Section agreement;
    agreement.title = "κ and envelope agreement per grid point";
    // (grid, variant) → sums of the P width, the R width, and the count of N.
    std::map<std::pair<int, std::string>, std::array<double, 3>> widths;
    for (std::size_t r = 0; r < sweep.rows.size(); ++r) {
        auto& w = widths[{static_cast<int>(sweep.integer(r, "grid")), sweep.text(r, "variant")}];
        w[0] += sweep.number(r, "P_upper") - sweep.number(r, "P_lower");
        w[1] += sweep.number(r, "R_upper") - sweep.number(r, "R_lower");
        w[2] += 1;
    }
    std::vector<std::vector<std::string>> rows;
    for (const auto& point : run.manifest.at("points")) {
        std::string values;
        for (const auto& [k, v] : point.at("values").items())
            values += k + "=" + json_text(v) + " ";
        std::vector<std::string> row = {std::to_string(json_integer<int>(point.at("grid"))),
                                        html_escape(values)};
        const int grid = json_integer<int>(point.at("grid"));
        for (const auto& v : variant_names()) {
            if (!point.at("envelopes").contains(v)) {
                row.push_back("");
                continue;
            }
            const auto& e = point.at("envelopes").at(v);
            const auto& width = widths[{grid, v}];
            const auto& share = e.at("information_share").at("both");
            row.push_back(
                rows_kappa_cell(e) + " / " +
                (share.is_null() ? std::string("–") : short_number(json_number_value(share))) +
                " / " + short_number(width[0] / width[2]) + ", " +
                short_number(width[1] / width[2]));
        }
        rows.push_back(row);
    }
    std::vector<std::string> header = {"grid", "values"};
    for (const auto& v : variant_names())
        header.push_back("<code>" + v +
                         "</code>: rows' κ (rule) / information share / mean width "
                         "P, R");
    agreement.html_before =
        "<p>Per grid point and variant: the κ of sweep.csv's bound rows (one κ consistent on all "
        "four sides, or — when none is — each side at its own), the envelope's information "
        "share (manifest) and the mean width of the P and R envelopes over N (sweep.csv); the "
        "verdict above judges each side by its κ set.</p>\n" +
        html_table(header, rows);
    return agreement;
}

}  // namespace

std::vector<Section> simulation_sections(const RunFolder& run) {
    const SimulateTables tables = read_simulate_tables(run);
    const CsvTable& sim = tables.estimates;
    const CsvTable& bounds = tables.bounds;
    const auto& point = run.manifest.at("points").at(0);
    const int n = json_integer<int>(point.at("n"));
    const nlohmann::json regimes =
        point.contains("regimes") ? point.at("regimes") : nlohmann::json(nullptr);

    const bool expected_geometry = infinite_d(point.at("d"));

    std::vector<Section> sections = simulation_verdict_sections(run, &bounds);
    Section overview;
    overview.title = "Parameters";
    overview.html_before =
        (expected_geometry ? kExpectedGeometryNote : "") + parameter_table(run.manifest);
    sections.push_back(overview);

    Section metrics;
    metrics.title = "Precision and Recall against N with the envelopes (cf. the paper's Figure 5)";
    std::ostringstream intro;
    intro << "<p>n = " << n << " tokens, d = " << json_text(point.at("d")) << ", ";
    if (expected_geometry)
        intro << "the expected-geometry limit (no trials, no interval)";
    else
        intro << json_integer<long long>(point.at("trials")) << " trials per N";
    if (!regimes.is_null()) {
        intro << "; Table-2 regimes: m<sub>1</sub> = " << regimes.value("m1", 0)
              << ", m<sub>2</sub> = " << regimes.value("m2", 0)
              << ", m<sub>3</sub> = " << regimes.value("m3", 0)
              << " (p<sub>base</sub> = " << short_number(regimes.at("p_base").get<double>()) << ")";
    }
    intro << ".</p>\n";
    metrics.html_before = intro.str();
    for (const auto& spec : metric_specs())
        metrics.figures.push_back(metric_figure(run, spec, sim, bounds, n, regimes));
    sections.push_back(metrics);

    Section agreement;
    agreement.title = "κ and envelope agreement";
    agreement.html_before = simulate_agreement_html(point, sim, bounds);
    sections.push_back(agreement);

    Section realised;
    realised.title = "What the generator realised";
    realised.html_before = realised_table(point);
    sections.push_back(realised);

    sections.push_back(decisions_section(run.manifest));
    return sections;
}

std::vector<Section> sweep_sections(const RunFolder& run) {
    const CsvTable sweep = read_sweep_table(run);
    const simulate::RunConfig config = simulate::run_config_from_json(run.manifest.at("config"));
    std::vector<Section> sections = simulation_verdict_sections(run, nullptr);
    Section overview;
    overview.title = "Parameters";
    overview.html_before = parameter_table(run.manifest);
    sections.push_back(overview);
    const std::vector<int> follow = followed_sizes(sweep);
    sections.push_back(sweep_panels_section(run, sweep, config, follow));
    sections.push_back(sweep_table1_section(run));
    sections.push_back(sweep_agreement_section(run, sweep));
    sections.push_back(decisions_section(run.manifest));
    return sections;
}

}  // namespace attngeo::reports
