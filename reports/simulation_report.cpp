// Sections for simulate and sweep runs: E[P], E[R], E[F] against N with the three envelopes
// and Table-2 regimes (the counterpart of the paper's Figure 5), sweep panels, Table 1, and
// the tables of parameters, realised statistics, κ and envelope agreement.
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
#include "common/run_schema.hpp"
#include "compare/table1.hpp"
#include "reports/csv_table.hpp"
#include "reports/palette.hpp"
#include "reports/report.hpp"
#include "reports/simulation_tables.hpp"
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

// Which envelope columns a figure draws: each side's κ* (`*_star`) for P and R, the row's
// main κ for F (which has no scan of its own).
std::string envelope_column(const std::string& metric, const std::string& side) {
    const bool scanned = metric == "P" || metric == "R";
    return metric + "_" + side + (scanned ? "_star" : "");
}

// A metric figure's .dat columns (gnuplot counts from 1): N, the mean and its interval, three
// per bound variant in variant_names() order (lower, upper, inverted flag), then whether the
// interval misses the paper envelope.
struct MetricColumns {
    static constexpr int kMean = 2, kCiLo = 3, kCiHi = 4;
    static constexpr int kFirstVariant = 5, kPerVariant = 3;
    static int lower(int variant) { return kFirstVariant + kPerVariant * variant; }
    static int upper(int variant) { return lower(variant) + 1; }
    static int inverted(int variant) { return lower(variant) + 2; }
    static int outside_paper() {
        return kFirstVariant + kPerVariant * static_cast<int>(variant_names().size());
    }
};

// What the caption says about the rows: the N whose interval misses the paper envelope and,
// per variant, how many N have an inverted envelope.
struct MetricCounts {
    int sizes = 0;  // rows (values of N) drawn
    int violations = 0;
    std::map<std::string, int> inverted;
};

std::string metric_figure_data(const MetricSpec& metric, const CsvTable& sim,
                               const CsvTable& bounds, const std::string& lower,
                               const std::string& upper, MetricCounts& counts) {
    struct Envelope {
        double lower = std::nan(""), upper = std::nan("");
    };
    std::map<std::string, std::map<int, Envelope>> envelope;  // variant → N → bounds
    for (std::size_t r = 0; r < bounds.rows.size(); ++r) {
        envelope[bounds.text(r, "variant")][static_cast<int>(bounds.integer(r, "N"))] = {
            bounds.number(r, lower), bounds.number(r, upper)};
    }
    std::ostringstream dat;
    dat << "# N mean ci_lo ci_hi, then per variant (";
    for (const auto& v : variant_names())
        dat << v << ' ';
    dat << "): lower upper inverted(lower > upper); then outside_paper (interval misses the "
           "paper envelope)\n";
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
        const Envelope& paper = envelope[theory::to_string(theory::BoundVariant::paper)][N];
        const bool outside = hi < paper.lower || lo > paper.upper;
        counts.violations += outside;
        counts.sizes += 1;
        dat << ' ' << (outside ? 1 : 0) << '\n';
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
    if (counts.violations > 0)
        s << ", \\\n       '' using 1:($" << C::outside_paper() << " > 0 ? $" << C::kMean
          << " : 1/0) with points pt 6 ps 1.1 lc rgb '" << palette::kSink
          << "' title 'outside the paper envelope'";
    s << "\n";
    return s.str();
}

// "2 of 11 values of N": a count with what it is out of.
std::string count_of_sizes(int count, int total) {
    return std::to_string(count) + " of " + std::to_string(total) + " value" +
           (total == 1 ? "" : "s") + " of N";
}

std::string metric_figure_caption(const MetricSpec& metric, const std::string& lower,
                                  const std::string& upper, bool at_star,
                                  const nlohmann::json& regimes, const MetricCounts& counts) {
    std::ostringstream caption;
    caption << "Monte Carlo estimate with its 95% Student-t interval ("
            << (metric.has_interval ? "shaded" : "F has no interval column; the mean is drawn")
            << ") and the lower (dashed) and upper (solid) envelopes of the four bound variants, "
               "each in "
               "its own line width and dash, widest first, so a variant that coincides with "
               "another shows as a coloured rim "
            << (at_star ? "at the κ* of each side (the <code>" + lower + "</code>, <code>" + upper +
                              "</code> columns of bounds.csv)"
                        : std::string("at the row's κ (<code>kappa</code> of bounds.csv; κ* is "
                                      "scanned for P and R only)"))
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
    const char* interval = metric.has_interval ? "'s 95% interval" : "";
    if (counts.violations > 0) {
        caption << "<span class=\"bad\">The estimate" << interval
                << " lies outside the paper envelope drawn here at "
                << count_of_sizes(counts.violations, counts.sizes) << " (red circles)</span>.";
    } else {
        caption << "The estimate" << interval << " meets the paper envelope drawn here at every N.";
    }
    return caption.str();
}

Figure metric_figure(const RunFolder& run, const MetricSpec& metric, const CsvTable& sim,
                     const CsvTable& bounds, int n, const nlohmann::json& regimes) {
    const std::string lower = envelope_column(metric.key, "lower"),
                      upper = envelope_column(metric.key, "upper");
    const bool at_star = lower != metric.key + "_lower";
    MetricCounts counts;
    Figure f;
    f.id = "run" + std::to_string(run.index) + "_" + metric.key;
    f.title = metric.title;
    const std::string data_name = f.id + ".dat";
    f.data.push_back({data_name, metric_figure_data(metric, sim, bounds, lower, upper, counts)});
    f.script = metric_figure_script(data_name, metric, n, regimes, counts);
    f.caption = metric_figure_caption(metric, lower, upper, at_star, regimes, counts);
    return f;
}

// The manifest writes d = ∞ as the string "inf" (json_number); accept a number too.
bool infinite_d(const nlohmann::json& d) {
    if (d.is_string()) return d.get<std::string>() == "inf" || d.get<std::string>() == "infinity";
    return d.is_number() && std::isinf(d.get<double>());
}

// What a d = ∞ run is, for its report.
const char* kExpectedGeometryNote =
    "<p class=\"warn\">d = ∞: this is the expected-geometry limit, not a Monte Carlo run. No "
    "trials are drawn; the metrics are those of the expected Gram matrix "
    "a<sub>k</sub>a<sub>l</sub>K<sub>kl</sub>, with exact ties (many tail tokens sit at the same "
    "expected distance) counted by the closed-ball convention. It is therefore not the large-d "
    "limit of the estimate at large N, where random directions break those ties; the bounds are "
    "evaluated at κd = ∞.</p>\n";

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
        rows.push_back({key, v.is_null() ? "fitted per variant" : html_escape(json_text(v)),
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

// Mean width upper − lower of each variant's P and R envelopes at the row's κ, over N.
std::map<std::string, std::pair<double, double>> mean_widths(const CsvTable& bounds) {
    std::map<std::string, std::array<double, 3>> sums;  // variant → (P, R, rows)
    for (std::size_t r = 0; r < bounds.rows.size(); ++r) {
        auto& sum = sums[bounds.text(r, "variant")];
        sum[0] += bounds.number(r, "P_upper") - bounds.number(r, "P_lower");
        sum[1] += bounds.number(r, "R_upper") - bounds.number(r, "R_lower");
        sum[2] += 1;
    }
    std::map<std::string, std::pair<double, double>> out;
    for (const auto& [v, sum] : sums)
        out[v] = {sum[0] / sum[2], sum[1] / sum[2]};
    return out;
}

std::string kappa_cell(const nlohmann::json& e) {
    return json_text(e.at("kappa")) + " (" + html_escape(e.at("kappa_rule").get<std::string>()) +
           ")";
}

std::string envelope_table(const nlohmann::json& point, const CsvTable& bounds) {
    const auto widths = mean_widths(bounds);
    std::vector<std::vector<std::string>> rows;
    for (const auto& v : variant_names()) {
        if (!point.at("envelopes").contains(v)) continue;
        const auto& e = point.at("envelopes").at(v);
        const auto& worst = e.at("largest_violation");
        const double value = worst.at("value").get<double>();
        const auto width =
            widths.count(v) ? widths.at(v) : std::make_pair(std::nan(""), std::nan(""));
        rows.push_back({"<code>" + v + "</code>", kappa_cell(e),
                        short_number(e.at("fraction_inside_P").get<double>()) + " / " +
                            short_number(width.first),
                        short_number(e.at("fraction_inside_R").get<double>()) + " / " +
                            short_number(width.second),
                        value > 0
                            ? "<span class=\"bad\">" + short_number(value) + " (" +
                                  worst.at("metric").get<std::string>() + ", N = " +
                                  std::to_string(json_integer<int>(worst.at("N"))) + ")</span>"
                            : "none"});
    }
    return "<p>At the single κ of each variant (the <code>kappa</code> column of bounds.csv): "
           "the fraction of N whose 95% interval meets the envelope, always next to the "
           "envelope's mean width — a [0, 1] envelope contains everything, so the fraction "
           "alone says nothing (the verdict above judges each side at its own κ*).</p>\n" +
           html_table({"variant", "κ (rule)", "P: fraction inside / mean width",
                       "R: fraction inside / mean width", "largest violation"},
                      rows);
}

std::string violation_table(const CsvTable& sim, const CsvTable& bounds) {
    struct Row {
        double size;
        std::vector<std::string> cells;
    };
    std::vector<Row> found;
    std::map<int, std::size_t> sim_row;
    for (std::size_t r = 0; r < sim.rows.size(); ++r)
        sim_row[static_cast<int>(sim.integer(r, "N"))] = r;
    for (std::size_t r = 0; r < bounds.rows.size(); ++r) {
        for (const char* m : {"P", "R"}) {
            const double violation = bounds.number(r, std::string(m) + "_violation");
            if (violation <= 0) continue;
            const int N = static_cast<int>(bounds.integer(r, "N"));
            const auto in_sim = sim_row.find(N);
            if (in_sim == sim_row.end())
                throw InputError("'" + bounds.path + "' has N = " + std::to_string(N) + " but '" +
                                 sim.path + "' has no row for it");
            const std::size_t s = in_sim->second;
            found.push_back(
                {violation,
                 {bounds.text(r, "variant"), std::to_string(N), bounds.text(r, "regime"), m,
                  short_number(sim.number(s, std::string(m) + "_mean")) + " [" +
                      short_number(sim.number(s, std::string(m) + "_ci_lo")) + ", " +
                      short_number(sim.number(s, std::string(m) + "_ci_hi")) + "]",
                  short_number(bounds.number(r, std::string(m) + "_lower")),
                  short_number(bounds.number(r, std::string(m) + "_upper")),
                  short_number(violation)}});
        }
    }
    if (found.empty()) return "<p>No estimate lies outside any envelope.</p>\n";
    std::stable_sort(found.begin(), found.end(),
                     [](const Row& a, const Row& b) { return a.size > b.size; });
    std::vector<std::vector<std::string>> rows;
    for (std::size_t i = 0; i < found.size() && i < 20; ++i)
        rows.push_back(found[i].cells);
    std::ostringstream out;
    out << "<p>" << found.size()
        << " (variant, N, metric) points lie outside their envelope — the 95% interval misses "
        << "[lower, upper] entirely. The largest " << rows.size() << ":</p>\n"
        << html_table({"variant", "N", "regime", "metric", "estimate [95% interval]", "lower",
                       "upper", "violation"},
                      rows)
        << "<p>The literal <code>paper</code> upper bound on P is expected to fail at small N: in "
           "eq. (10) the sink's "
           "M<sub>0</sub> has no self term, so μ<sub>0j</sub> is about 2a<sub>0</sub><sup>2</sup> "
           "too small (docs/design.md §3). "
           "Note too that the paper's scale B is linear in the value scale while the margins Δ, "
           "Δ<sub>0</sub> are "
           "quadratic, so the <code>paper</code> bounds change when every v is multiplied by c; "
           "the "
           "<code>scale-invariant</code> variant does not.</p>\n";
    return out.str();
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

// The sentences' inputs of each variant at one grid point: the manifest's envelopes entry and,
// with bounds.csv, the N at which each metric's κ* envelope is inverted.
std::map<std::string, VariantFacts> variant_facts(const nlohmann::json& point,
                                                  const CsvTable* bounds) {
    std::map<std::string, VariantFacts> facts = variant_facts_of_all(point.at("envelopes"));
    for (auto& [v, f] : facts)
        f.kappa_irrelevant = infinite_d(point.at("d"));
    if (!bounds) return facts;
    for (const char* metric : {"P", "R"}) {
        const std::string column = std::string(metric) + "_inverted";
        for (std::size_t r = 0; r < bounds->rows.size(); ++r)
            if (bounds->text(r, column) == "1")
                facts[bounds->text(r, "variant")].inverted_at[metric].push_back(
                    static_cast<int>(bounds->integer(r, "N")));
    }
    return facts;
}

// The verdict section (docs/design.md §7), first in every simulate and sweep report.
Section verdict_section(const RunFolder& run, const CsvTable* bounds) {
    Section verdict;
    verdict.title = "The verdict: does each bound hold, and does it say anything?";
    const fs::path verdict_path = fs::path(run.dir) / schema::file::verdict;
    const VerdictTable table = read_verdict(verdict_path.string());
    const auto& points = run.manifest.at("points");
    const bool sweep = run.manifest.value("kind", "") == "sweep";
    const int first_grid = table.rows.empty() ? 0 : table.rows.front().grid;
    const auto& point = points.at(0);
    std::ostringstream html;
    if (infinite_d(point.at("d"))) html << kExpectedGeometryNote;
    if (sweep) {
        html << sweep_verdict_html(table);
    } else {
        html << verdict_html(rows_of_grid(table, first_grid), variant_facts(point, bounds), "N",
                             realised_assumptions_opening(point));
    }
    verdict.html_before = html.str();
    const fs::path scan_path = fs::path(run.dir) / schema::file::kappa_scan;
    const CsvTable scan = read_csv_table(scan_path.string());
    const auto rows = rows_of_grid(table, first_grid);
    for (const auto& v : variant_names())
        verdict.figures.push_back(
            kappa_scan_figure("run" + std::to_string(run.index) + "_kappa_" + v, v, scan, rows,
                              sweep ? first_grid : -1));
    return verdict;
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
        << " then, per line, mean ci_lo ci_hi paper_lower paper_upper (joint kappa*)\n";
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
                    const double value = sweep.number(found->second, metric + column);
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

// The paper variant's joint κ* of both sides of `metric` (manifest "joint_kappa"); a side
// whose bound does not move with κ says so instead of naming the grid's first κ.
std::string joint_kappa_text(const nlohmann::json& manifest, const std::string& metric) {
    const auto& paper = manifest.at("joint_kappa").at("paper");
    auto side = [&](const std::string& name) {
        const auto& fit = paper.at(metric + "_" + name);
        return (fit.value("kappa_free", false) ? std::string("κ-free")
                                               : "κ* = " + json_text(fit.at("kappa"))) +
               " (" + name + ")";
    };
    return side("lower") + ", " + side("upper");
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
                "bound, thin solid line: its upper bound, both at one κ for the whole sweep (" +
                joint_kappa_text(run.manifest, metric) + ", fitted jointly over every grid point).";
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
        ". The bounds are the paper variant's at the κ* of each side fitted once over the whole "
        "grid (<code>*_joint</code> columns of sweep.csv, manifest <code>joint_kappa</code>), so "
        "their change along x is the parameter's effect, not a refitted κ.</p>\n";
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
            row.push_back(kappa_cell(e) + " / " +
                          short_number(e.at("fraction_inside").get<double>()) + " / " +
                          short_number(width[0] / width[2]) + ", " +
                          short_number(width[1] / width[2]));
        }
        rows.push_back(row);
    }
    std::vector<std::string> header = {"grid", "values"};
    for (const auto& v : variant_names())
        header.push_back("<code>" + v + "</code>: κ / inside / mean width P, R");
    agreement.html_before =
        "<p>At the single κ of each variant: the fraction of (N, metric) points inside, next to "
        "the mean width of the P and R envelopes over N (sweep.csv) — the fraction alone says "
        "nothing about a wide envelope; the verdict above judges each side at its own κ*.</p>\n" +
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

    std::vector<Section> sections = {verdict_section(run, &bounds)};
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
    agreement.html_before = envelope_table(point, bounds) + violation_table(sim, bounds);
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
    std::vector<Section> sections = {verdict_section(run, nullptr)};
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
