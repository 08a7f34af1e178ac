// The report of an `attngeo truncate` folder (docs/commands/truncate.md): what keeping only N
// keys costs (ΔNLL and KL against N), the effective sizes N*_τ, and for scope `head` how each
// head's cost follows its geometry; several truncate folders overlay their ΔNLL curves.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <optional>
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

namespace attngeo::reports {
namespace {

using namespace empirical;

const double kNan = std::nan("");

// ---- truncate.csv --------------------------------------------------------------------------

const std::vector<std::string> kTruncationColumns = {
    "policy", "renorm",    "scope",        "layer",        "head",         "N",
    "docs",   "delta_nll", "delta_nll_se", "delta_nll_lo", "delta_nll_hi", "kl",
    "kl_se",  "top1",      "dropped_mass", "output_error"};

// Every documented column of `table` must be there, even where the report does not draw it:
// a file without one was not written by `attngeo truncate`.
void require_columns(const CsvTable& table, const std::vector<std::string>& columns) {
    for (const std::string& name : columns)
        table.column(name);
}

struct TruncationRow {
    std::string policy, renorm;
    int layer = -1, head = -1, N = 0;
    double delta_nll = 0, delta_nll_lo = kNan, delta_nll_hi = kNan, kl = 0;
};

// (policy, renorm): one curve of a figure.
using CurveKey = std::pair<std::string, std::string>;

std::string curve_name(const CurveKey& key) {
    return key.first + ", renorm " + key.second;
}

int integer_at(const CsvTable& table, std::size_t row, const char* column) {
    return static_cast<int>(table.integer(row, column));
}

// The manifest's parameters.scope: all, layer or head.
std::string scope_of(const RunFolder& run) {
    const std::string manifest = path_in(run.dir, schema::file::manifest);
    const std::string scope = with_json_context(
        manifest, [&] { return run.manifest.at("parameters").at("scope").get<std::string>(); });
    if (scope != "all" && scope != "layer" && scope != "head")
        throw InputError("'" + manifest + "': parameters.scope '" + scope +
                         "' is none of all, layer, head");
    return scope;
}

std::vector<TruncationRow> read_truncation(const std::string& path, const std::string& scope) {
    const CsvTable table = read_csv_table(path);
    require_columns(table, kTruncationColumns);
    std::vector<TruncationRow> rows;
    for (std::size_t r = 0; r < table.rows.size(); ++r) {
        if (table.text(r, "scope") != scope)
            throw InputError(table.where(r, "scope") + ": '" + table.text(r, "scope") +
                             "', expected the manifest's scope '" + scope + "'");
        TruncationRow row;
        row.policy = table.text(r, "policy");
        row.renorm = table.text(r, "renorm");
        row.layer = integer_at(table, r, "layer");
        row.head = integer_at(table, r, "head");
        row.N = integer_at(table, r, "N");
        row.delta_nll = table.number(r, "delta_nll");
        row.delta_nll_lo = optional_number(table, r, "delta_nll_lo");
        row.delta_nll_hi = optional_number(table, r, "delta_nll_hi");
        row.kl = table.number(r, "kl");
        rows.push_back(row);
    }
    return rows;
}

// ---- curves against N ------------------------------------------------------------------------

struct CurvePoint {
    double value = kNan, lo = kNan, hi = kNan;
};
using Curve = std::map<int, CurvePoint>;
// In the order the file first names them (policy-major, then renorm, as truncate writes).
using Curves = std::vector<std::pair<CurveKey, Curve>>;

Curve& curve_of(Curves& curves, const CurveKey& key) {
    for (auto& [k, curve] : curves)
        if (k == key) return curve;
    return curves.emplace_back(key, Curve{}).second;
}

enum class Metric { delta_nll, kl };

// Scope all: the rows as they are, with ΔNLL's interval. Scopes layer and head: the mean over
// the units at each N (no interval: the units' intervals do not combine into one).
Curves metric_curves(const std::vector<TruncationRow>& rows, Metric metric) {
    Curves curves;
    std::vector<std::pair<CurveKey, std::map<int, std::pair<double, int>>>> sums;
    for (const TruncationRow& row : rows) {
        const CurveKey key{row.policy, row.renorm};
        const double value = metric == Metric::delta_nll ? row.delta_nll : row.kl;
        if (row.layer < 0 && row.head < 0) {
            const bool with_interval = metric == Metric::delta_nll;
            curve_of(curves, key)[row.N] = {value, with_interval ? row.delta_nll_lo : kNan,
                                            with_interval ? row.delta_nll_hi : kNan};
            continue;
        }
        auto found = std::find_if(sums.begin(), sums.end(),
                                  [&](const auto& entry) { return entry.first == key; });
        if (found == sums.end()) found = sums.insert(sums.end(), {key, {}});
        auto& [sum, count] = found->second[row.N];
        sum += value;
        ++count;
    }
    for (const auto& [key, by_n] : sums)
        for (const auto& [N, sum_count] : by_n)
            curve_of(curves, key)[N].value = sum_count.first / sum_count.second;
    return curves;
}

// One line of a figure: its key entry, style and points.
struct Series {
    std::string title, colour;
    int dash = 1, point = 7;
    Curve curve;
};

bool any_finite(const Curve& curve, double CurvePoint::*field) {
    for (const auto& [N, point] : curve)
        if (std::isfinite(point.*field)) return true;
    return false;
}

std::string series_data(const Series& series, const std::string& what) {
    std::ostringstream dat;
    dat << "# " << series.title << ": N " << what << " lo hi (nan: no interval)\n";
    for (const auto& [N, point] : series.curve)
        dat << N << ' ' << format_double(point.value) << ' ' << format_double(point.lo) << ' '
            << format_double(point.hi) << '\n';
    return dat.str();
}

// A label inside a single-quoted gnuplot string (a quote is written twice).
std::string gnuplot_text(const std::string& text) {
    std::string out;
    for (char c : text)
        out += c == '\'' ? std::string("''") : std::string(1, c);
    return out;
}

// The plot command: every series as points and lines, with its interval as error bars where
// it has one. A series without a finite value is left out (gnuplot refuses a curve of
// undefined points) and named in `missing`.
std::string series_plot(const std::string& id, const std::vector<Series>& series,
                        std::vector<std::string>& missing) {
    std::vector<std::string> parts;
    for (std::size_t k = 0; k < series.size(); ++k) {
        const Series& s = series[k];
        if (!any_finite(s.curve, &CurvePoint::value)) {
            missing.push_back(s.title);
            continue;
        }
        const std::string file = "'" + id + "_s" + std::to_string(k) + ".dat'";
        const std::string colour = " lc rgb '" + s.colour + "'";
        // The bars first, so the line's points stay on top of them.
        if (any_finite(s.curve, &CurvePoint::lo) && any_finite(s.curve, &CurvePoint::hi))
            parts.push_back(file + " using 1:2:3:4 with yerrorbars pt -1 lw 1.2" + colour +
                            " notitle");
        parts.push_back(file + " using 1:2 with linespoints lw 2 pt " + std::to_string(s.point) +
                        " ps 1.1 dt " + std::to_string(s.dash) + colour + " title '" +
                        gnuplot_text(s.title) + "' noenhanced");
    }
    if (parts.empty()) parts.push_back("1/0 notitle");
    std::string plot = "  plot ";
    for (std::size_t i = 0; i < parts.size(); ++i)
        plot += (i ? ", \\\n       " : "") + parts[i];
    return plot + "\n";
}

// A figure of `series` against log N with a zero line; `caption` is completed with the
// series left out.
Figure series_figure(const std::string& id, const std::string& title, const std::string& ylabel,
                     const std::string& what, const std::vector<Series>& series,
                     std::string caption) {
    Figure f;
    f.id = id;
    f.title = title;
    int min_n = 1, max_n = 2;
    bool first = true;
    for (std::size_t k = 0; k < series.size(); ++k) {
        f.data.push_back({id + "_s" + std::to_string(k) + ".dat", series_data(series[k], what)});
        if (series[k].curve.empty()) continue;
        min_n = first ? series[k].curve.begin()->first
                      : std::min(min_n, series[k].curve.begin()->first);
        max_n = first ? series[k].curve.rbegin()->first
                      : std::max(max_n, series[k].curve.rbegin()->first);
        first = false;
    }
    if (max_n <= min_n) max_n = min_n + 1;
    std::vector<std::string> missing;
    std::ostringstream s;
    s << "  set logscale x 2\n  set xrange [" << format_double(std::max(0.5, min_n / 1.25)) << ":"
      << format_double(max_n * 1.25) << "]\n"
      << kGrid << "  set key outside below center horizontal font ',11' samplen 3\n"
      << "  set xlabel 'N (keys kept per query, log scale)'\n  set ylabel '" << ylabel << "'\n"
      << "  set arrow 1 from graph 0, first 0 to graph 1, first 0 nohead lc rgb '"
      << palette::kGuide << "'\n"
      << series_plot(id, series, missing) << "  unset arrow 1\n";
    f.script = s.str();
    if (!missing.empty()) {
        caption += " Not drawn (no defined value at any N):";
        for (std::size_t i = 0; i < missing.size(); ++i)
            caption += (i ? ", " : " ") + html_escape(missing[i]);
        caption += ".";
    }
    f.caption = caption;
    return f;
}

// The index of `name` in `names`, appended when new: gives each policy its point type.
int index_in(std::vector<std::string>& names, const std::string& name) {
    const auto at = std::find(names.begin(), names.end(), name);
    if (at != names.end()) return static_cast<int>(at - names.begin());
    names.push_back(name);
    return static_cast<int>(names.size() - 1);
}

const int kPointTypes[5] = {7, 5, 9, 11, 13};  // circle, square, triangles, diamond

// One run's curves as series: a colour per curve, dashed where the weights are renormalised.
std::vector<Series> run_series(const Curves& curves) {
    std::vector<Series> series;
    std::vector<std::string> policies;
    for (const auto& [key, curve] : curves) {
        Series s;
        s.title = curve_name(key);
        s.colour = palette::kModel[series.size() % palette::kModel.size()];
        s.dash = key.second == "yes" ? 2 : 1;
        s.point = kPointTypes[index_in(policies, key.first) % 5];
        s.curve = curve;
        series.push_back(std::move(s));
    }
    return series;
}

std::string what_curves_are(const std::string& scope) {
    return scope == "all"
               ? std::string("every head truncated at once (scope all)")
               : "the mean over the " + std::string(scope == "layer" ? "layers" : "heads") +
                     " truncated one at a time (scope " + scope +
                     "; each unit's own curve is in the CSV)";
}

std::vector<Figure> cost_figures(const std::string& prefix, const std::vector<TruncationRow>& rows,
                                 const std::string& scope, const std::string& source) {
    const bool all = scope == "all";
    Figure nll = series_figure(
        prefix + "truncate_delta_nll", "ΔNLL against N", "ΔNLL (nats per token)", "delta_nll",
        run_series(metric_curves(rows, Metric::delta_nll)),
        "The mean increase of the next-token loss when a head keeps only N keys, " +
            what_curves_are(scope) +
            ", one line per policy and renormalisation (dashed: " + "renormalised)" +
            (all ? ", with the 95% t-interval over windows as error bars where there is one"
                 : std::string()) +
            ". From " + code(source) + ". Log N.");
    Figure kl = series_figure(
        prefix + "truncate_kl", "KL against N", "KL(full || truncated) (nats)", "kl",
        run_series(metric_curves(rows, Metric::kl)),
        "The mean KL divergence of the truncated next-token distribution from the full one, " +
            what_curves_are(scope) + ", one line per policy and renormalisation (dashed: " +
            "renormalised). From " + code(source) + ". Log N.");
    return {nll, kl};
}

// ---- effective_size.csv ----------------------------------------------------------------------

// What a cell says where effective_size.csv leaves a field empty: the value, its interval's ends.
struct EmptyWords {
    const char* value;
    const char* lo;
    const char* hi;
};

// "VALUE [LO, HI]" from COLUMN, COLUMN_lo and COLUMN_hi of row r.
std::string with_interval(const CsvTable& table, std::size_t r, const std::string& column,
                          const EmptyWords& empty) {
    if (table.text(r, column).empty()) return empty.value;
    const auto end = [&](const std::string& name, const char* word) {
        return table.text(r, name).empty() ? std::string(word)
                                           : short_number(table.number(r, name));
    };
    return short_number(table.number(r, column)) + " [" + end(column + "_lo", empty.lo) + ", " +
           end(column + "_hi", empty.hi) + "]";
}

// N*_τ: empty where no N reaches τ, and so is an interval's upper end.
std::string n_star_text(const CsvTable& table, std::size_t r) {
    return with_interval(table, r, "N_star", {"none ≤ τ", "?", "∞"});
}

// 1 − N*/T: compression_lo is empty where N_star_hi is (at worst no key can be dropped: 0).
std::string compression_text(const CsvTable& table, std::size_t r) {
    return with_interval(table, r, "compression", {"—", "0", "?"});
}

std::string effective_rows_table(const CsvTable& table) {
    std::vector<std::vector<std::string>> rows;
    for (std::size_t r = 0; r < table.rows.size(); ++r)
        rows.push_back({html_escape(table.text(r, "policy")), html_escape(table.text(r, "renorm")),
                        short_number(table.number(r, "tau")), n_star_text(table, r),
                        compression_text(table, r), html_escape(table.text(r, "replicates"))});
    return html_table({"policy", "renorm", "τ", "N*<sub>τ</sub> [95% bootstrap interval]",
                       "KV compression 1 − N*<sub>τ</sub>/T [interval]", "replicates"},
                      rows);
}

// Layer and head scopes have one N* per unit: the median over the units that reach τ, and how
// many do not.
std::string effective_summary_table(const CsvTable& table, const std::string& scope) {
    struct Units {
        std::string policy, renorm, tau;
        std::vector<double> n_star;
        int without = 0;
    };
    std::vector<Units> groups;
    for (std::size_t r = 0; r < table.rows.size(); ++r) {
        const std::string tau = short_number(table.number(r, "tau"));
        auto group = std::find_if(groups.begin(), groups.end(), [&](const Units& u) {
            return u.policy == table.text(r, "policy") && u.renorm == table.text(r, "renorm") &&
                   u.tau == tau;
        });
        if (group == groups.end())
            group = groups.insert(groups.end(),
                                  {table.text(r, "policy"), table.text(r, "renorm"), tau, {}, 0});
        if (table.text(r, "N_star").empty())
            ++group->without;
        else
            group->n_star.push_back(table.number(r, "N_star"));
    }
    std::vector<std::vector<std::string>> rows;
    for (const Units& u : groups) {
        const auto [low, high] = std::minmax_element(u.n_star.begin(), u.n_star.end());
        rows.push_back({html_escape(u.policy), html_escape(u.renorm), u.tau,
                        std::to_string(u.n_star.size() + u.without),
                        number_or_na(quantile(u.n_star, 0.5)),
                        u.n_star.empty() ? "n/a" : short_number(*low) + " – " + short_number(*high),
                        std::to_string(u.without)});
    }
    const std::string unit = scope == "layer" ? "layers" : "heads";
    return "<p>One N*<sub>τ</sub> per " + std::string(scope) +
           ", summarised: the median over the " + unit +
           " whose mean ΔNLL reaches τ at some N, their range, and how many never do (their own "
           "bootstrap intervals are in the CSV).</p>\n" +
           html_table({"policy", "renorm", "τ", unit, "median N*<sub>τ</sub>", "range",
                       unit + " with none ≤ τ"},
                      rows);
}

Section effective_size_section(const RunFolder& run, const std::string& scope) {
    const CsvTable table = read_csv_table(path_in(run.dir, schema::file::effective_size));
    require_columns(table,
                    schema::csv_column_names(schema::page::truncate, schema::file::effective_size));
    Section section;
    section.title = "Effective size N*_τ";
    section.html_before =
        "<p>N*<sub>τ</sub>: the smallest N of the grid whose mean ΔNLL is at most τ, with the "
        "2.5 and 97.5 percentiles over bootstrap resamples of the windows (∞: some resample "
        "never reaches τ). From " +
        code(table.path) + ".</p>\n" +
        (scope == "all" ? effective_rows_table(table) : effective_summary_table(table, scope));
    return section;
}

// ---- scope head: ΔNLL and the geometry --------------------------------------------------------

const std::vector<std::string> kHeadLinkColumns = {
    "policy",  "renorm",       "layer",        "head",   "N",    "delta_nll", "precision", "recall",
    "f_score", "dropped_mass", "output_error", "lambda", "rho0", "beta",      "regime"};
const std::vector<std::string> kGeometryLinkColumns = {
    "policy", "renorm", "N",          "quantity", "heads",   "spearman",
    "ci_lo",  "ci_hi",  "replicates", "p_value",  "head_lo", "head_hi",
    "family", "tests",  "p_holm",     "adj_lo",   "adj_hi",  "excludes_zero"};
// The quantities head_link.csv holds per head, which link_summary.json may name.
const std::set<std::string> kPredictors = {"precision",    "recall", "f_score", "dropped_mass",
                                           "output_error", "lambda", "rho0",    "beta"};

// The family test of smallest Holm p (link_summary.json's `strongest`).
struct StrongestLink {
    std::string quantity;
    int N = 0;
    double spearman = kNan, p_holm = kNan, adj_lo = kNan, adj_hi = kNan;
};

// One (policy, renorm) entry of link_summary.json (docs/commands/truncate.md).
struct LinkSummary {
    std::optional<std::string> best;  // named only when its adjusted interval excludes 0
    int heads = 0, tests = 0, excluding = 0;
    std::optional<StrongestLink> strongest;
    std::optional<int> largest_f, largest_f_lo, largest_f_hi, knee;
    std::optional<bool> before_knee;

    // The quantity the scatter draws: the best predictor, else the strongest test's; "" when
    // no test was made.
    std::string predictor() const {
        return best ? *best : strongest ? strongest->quantity : std::string();
    }
};

std::optional<int> optional_int(const nlohmann::json& entry, const char* key) {
    const nlohmann::json& value = entry.at(key);
    if (value.is_null()) return std::nullopt;
    return value.get<int>();
}

double number_or_nan(const nlohmann::json& value) {
    return value.is_null() ? kNan : value.get<double>();
}

LinkSummary parse_link_entry(const nlohmann::json& entry, const std::string& path) {
    LinkSummary s;
    const nlohmann::json& best = entry.at("best_predictor");
    if (!best.is_null()) s.best = best.get<std::string>();
    s.heads = entry.at("heads").get<int>();
    s.tests = entry.at("tests").get<int>();
    s.excluding = entry.at("tests_excluding_zero").get<int>();
    const nlohmann::json& top = entry.at("strongest");
    if (!top.is_null())
        s.strongest =
            StrongestLink{top.at("quantity").get<std::string>(), top.at("N").get<int>(),
                          top.at("spearman").get<double>(),      top.at("p_holm").get<double>(),
                          number_or_nan(top.at("adj_lo")),       number_or_nan(top.at("adj_hi"))};
    s.largest_f = optional_int(entry, "N_largest_F");
    s.largest_f_lo = optional_int(entry, "N_largest_F_lo");
    s.largest_f_hi = optional_int(entry, "N_largest_F_hi");
    s.knee = optional_int(entry, "N_knee");
    const nlohmann::json& before = entry.at("largest_F_before_knee");
    if (!before.is_null()) s.before_knee = before.get<bool>();
    const std::string predictor = s.predictor();
    if (!predictor.empty() && !kPredictors.count(predictor))
        throw InputError("'" + path + "': '" + predictor + "' is not a column of head_link.csv");
    if (s.best && (!s.strongest || s.strongest->quantity != *s.best))
        throw InputError("'" + path + "': best_predictor '" + *s.best +
                         "' is not the strongest test's quantity");
    return s;
}

// link_summary.json: a list of entries, one per (policy, renorm), each with its policy, renorm
// ("no" | "yes") and the keys parse_link_entry reads.
std::map<CurveKey, LinkSummary> read_link_summary(const std::string& path) {
    const nlohmann::json summary = read_json(path);
    std::map<CurveKey, LinkSummary> found;
    with_json_context(path, [&] {
        if (!summary.is_array())
            throw InputError("'" + path + "': expected a list of entries per policy and renorm");
        for (const nlohmann::json& entry : summary) {
            const CurveKey key{entry.at("policy").get<std::string>(),
                               entry.at("renorm").get<std::string>()};
            if (!found.emplace(key, parse_link_entry(entry, path)).second)
                throw InputError("'" + path + "': two entries for policy " + key.first +
                                 ", renorm " + key.second);
        }
        return 0;
    });
    return found;
}

struct HeadPoint {
    int layer = 0, head = 0;
    double delta_nll = 0, predictor = kNan;
    int regime = 0;  // theory::kHeadRegimes index
};

// The smallest N at which ΔNLL differs between heads (the first N when it never does).
int first_varying_n(const std::map<int, std::vector<HeadPoint>>& by_n, bool& varies) {
    for (const auto& [N, heads] : by_n) {
        const auto [low, high] = std::minmax_element(
            heads.begin(), heads.end(),
            [](const HeadPoint& a, const HeadPoint& b) { return a.delta_nll < b.delta_nll; });
        varies = heads.size() >= 2 && low->delta_nll != high->delta_nll;
        if (varies) return N;
    }
    varies = false;
    return by_n.begin()->first;
}

// A number for a sentence: three significant digits.
std::string brief(double x) {
    if (!std::isfinite(x)) return "n/a";
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%.3g", x);
    return buffer;
}

std::string interval_text(double lo, double hi) {
    return std::isnan(lo) || std::isnan(hi) ? std::string("n/a")
                                            : "[" + brief(lo) + ", " + brief(hi) + "]";
}

// What the scatter's predictor is, for its caption.
std::string predictor_role(const LinkSummary& s) {
    if (s.best)
        return ", the best predictor of link_summary.json (its simultaneous interval, adjusted "
               "for the " +
               std::to_string(s.tests) + " tests, excludes 0)";
    return ", the strongest test of link_summary.json — not a finding: its simultaneous "
           "interval, adjusted for the " +
           std::to_string(s.tests) + " tests, contains 0";
}

Figure link_scatter(const std::string& id, const CurveKey& key, const LinkSummary& summary, int N,
                    const std::string& why_n, const std::vector<HeadPoint>& heads,
                    const std::string& source) {
    const std::string predictor = summary.predictor();
    Figure f;
    f.id = id;
    f.title = "Per-head ΔNLL against " + predictor + " (" + curve_name(key) + ")";
    std::ostringstream dat, plot;
    dat << "# layer head " << predictor << " delta_nll at N = " << N
        << "; one block per regime present:";
    std::vector<std::string> parts;
    int block = 0, undefined = 0;
    std::ostringstream blocks;
    for (int r = 0; r < kRegimeCount; ++r) {
        std::ostringstream rows;
        for (const HeadPoint& h : heads)
            if (h.regime == r) {
                if (!std::isfinite(h.predictor) || !std::isfinite(h.delta_nll)) {
                    ++undefined;
                    continue;
                }
                rows << h.layer << ' ' << h.head << ' ' << format_double(h.predictor) << ' '
                     << format_double(h.delta_nll) << '\n';
            }
        if (rows.str().empty()) continue;
        dat << ' ' << regime_name(r);
        blocks << (block ? "\n\n" : "") << rows.str();
        parts.push_back("'" + id + ".dat' index " + std::to_string(block++) +
                        " using 3:4 with points pt 7 ps 1.6 lc rgb '" + palette::kRegime[r] +
                        "' title '" + regime_name(r) + "'");
    }
    dat << "\n" << blocks.str();
    f.data.push_back({id + ".dat", dat.str()});
    if (parts.empty()) parts.push_back("1/0 notitle");
    std::ostringstream s;
    s << kGrid << "  set offsets graph 0.05, graph 0.05, graph 0.08, graph 0.08\n"
      << "  set key outside below center horizontal font ',11'\n  set xlabel '" << predictor
      << "' noenhanced\n  set ylabel 'ΔNLL at N = " << N << " (nats per token)'\n"
      << "  plot ";
    for (std::size_t i = 0; i < parts.size(); ++i)
        s << (i ? ", \\\n       " : "") << parts[i];
    f.script = s.str() + "\n  set offsets\n";
    f.caption = "Each truncated head's mean ΔNLL at N = " + std::to_string(N) + " (" + why_n +
                ") against " + code(predictor) + predictor_role(summary) +
                ", coloured by extract's regime. " +
                (undefined ? std::to_string(undefined) + " heads without a value are left out. "
                           : std::string()) +
                "From " + code(source) + ".";
    return f;
}

// Why a row of geometry_link.csv is or is not in the Holm family; `context` is the window's
// length n (P, R, F are 1 for every head at N = 1 and N ≥ n).
std::string family_text(const CsvTable& table, std::size_t r, int context) {
    if (table.text(r, "family") == "1") return "yes";
    const std::string q = table.text(r, "quantity");
    if (q == "dropped_mass" || q == "output_error") return "reference";
    const auto N = table.integer(r, "N");
    if ((N == 1 || N >= context) && (q == "precision" || q == "recall" || q == "f_score"))
        return "identity at N = " + std::to_string(N);
    return "undefined";
}

std::string spearman_table(const CsvTable& table, const CurveKey& key, int N, int context,
                           const LinkSummary& summary) {
    const std::string predictor = summary.predictor();
    std::vector<std::vector<std::string>> rows;
    for (std::size_t r = 0; r < table.rows.size(); ++r) {
        if (table.text(r, "policy") != key.first || table.text(r, "renorm") != key.second ||
            table.integer(r, "N") != N)
            continue;
        const std::string quantity = table.text(r, "quantity");
        const bool excludes = table.text(r, "excludes_zero") == "1";
        const std::string adjusted =
            interval_text(optional_number(table, r, "adj_lo"), optional_number(table, r, "adj_hi"));
        rows.push_back(
            {quantity == predictor ? "<b>" + code(quantity) + "</b>" : code(quantity),
             html_escape(table.text(r, "heads")),
             number_or_na(optional_number(table, r, "spearman")),
             interval_text(optional_number(table, r, "ci_lo"), optional_number(table, r, "ci_hi")),
             interval_text(optional_number(table, r, "head_lo"),
                           optional_number(table, r, "head_hi")),
             number_or_na(optional_number(table, r, "p_value")),
             number_or_na(optional_number(table, r, "p_holm")),
             excludes ? "<b>" + adjusted + "</b>" : adjusted, family_text(table, r, context)});
    }
    const std::string m = std::to_string(summary.tests);
    return "<p>Spearman's ρ across heads between ΔNLL and each quantity at N = " +
           std::to_string(N) + " (" + html_escape(curve_name(key)) +
           (predictor.empty() ? std::string() : "; bold: the quantity drawn above") +
           "): the 95% bootstrap interval over windows (heads fixed), the 95% head-level interval "
           "and p-value (heads as the sample, on Fisher's z: from the permutation null of "
           "Spearman's ρ below 50 heads, the Fieller–Hartley–Pearson normal approximation "
           "from 50), Holm's adjusted p over the family of " +
           m +
           " tests (the geometric quantities at every N) and the simultaneous interval at "
           "level 1 − 0.05/" +
           m +
           " (bold where it excludes 0). dropped_mass and output_error are reference "
           "predictors outside the family; P, R and F at N = 1 and at N = n are identities (1 "
           "for every head). From " +
           code(table.path) + ".</p>\n" +
           html_table({"quantity", "heads", "Spearman ρ", "95% bootstrap (windows)",
                       "95% head-level", "p", "Holm p", "simultaneous interval", "in the family"},
                      rows);
}

// The sentence on the link: a best predictor only with its adjusted interval.
std::string predictor_sentence(const LinkSummary& s) {
    const std::string m = std::to_string(s.tests),
                      of = std::to_string(s.excluding) + " of the " + m + " tests";
    if (s.tests == 0 || !s.strongest)
        return "no head-level test could be made (" + std::to_string(s.heads) +
               " heads: a test needs at least 10 and a quantity that varies between them), so no "
               "geometric quantity is named as a predictor of a head's ΔNLL.";
    const StrongestLink& t = *s.strongest;
    const std::string numbers = "Spearman ρ = " + brief(t.spearman) +
                                " at N = " + std::to_string(t.N) + " across " +
                                std::to_string(s.heads) + " heads, simultaneous interval " +
                                interval_text(t.adj_lo, t.adj_hi) + " (level 1 − 0.05/" + m +
                                ", Holm p = " + brief(t.p_holm) + ")";
    if (s.best)
        return "the best predictor of a head's ΔNLL is " + code(*s.best) + ": " + numbers +
               ", which excludes 0 after adjustment for the " + m +
               " tests (the geometric quantities P, R, F, λ, ρ0, β at every N); " + of +
               (s.excluding == 1 ? " excludes 0." : " exclude 0.");
    return "no geometric quantity predicts a head's ΔNLL after adjustment for the " + m +
           " tests (P, R, F, λ, ρ0, β at every N): the strongest, " + code(t.quantity) + ", has " +
           numbers + ", which contains 0.";
}

// The sentence on the N of largest F: over N ≥ 2, with the interval of the argmax.
std::string separability_sentence(const LinkSummary& s) {
    if (!s.largest_f)
        return "The grid has no N with 2 ≤ N &lt; n, so no F is compared (F = 1 at N = 1 and at N "
               "= "
               "n).";
    const std::string interval = s.largest_f_lo && s.largest_f_hi
                                     ? " [95% bootstrap interval " +
                                           std::to_string(*s.largest_f_lo) + ", " +
                                           std::to_string(*s.largest_f_hi) + "]"
                                     : std::string(" (no bootstrap interval)");
    std::string placed;
    if (!s.knee)
        placed = "has no knee to compare with";
    else if (s.before_knee)
        placed = *s.before_knee ? "comes before the knee (its whole interval does)"
                                : "does not come before the knee";
    else if (s.largest_f_lo && s.largest_f_hi)
        placed = "cannot be placed before or after the knee: its interval reaches across it";
    else
        placed = "cannot be placed without an interval";
    return "Over 2 ≤ N &lt; n (at N = 1 and at N = n, every token kept, F = 1 for every head: "
           "identities) the head-mean F is largest at N = " +
           std::to_string(*s.largest_f) + interval +
           "; the knee (ΔNLL at most 10% of its first value) " +
           (s.knee ? "is at N = " + std::to_string(*s.knee) : std::string("is not reached")) +
           ", so the largest F " + placed + ".";
}

std::string link_sentence(const CurveKey& key, const LinkSummary& s, const std::string& path) {
    return "<p>" + html_escape(curve_name(key)) + ": " + predictor_sentence(s) + " " +
           separability_sentence(s) + " From " + code(path) + ".</p>\n";
}

std::map<CurveKey, std::map<int, std::vector<HeadPoint>>> read_head_link(
    const std::string& path, const std::map<CurveKey, LinkSummary>& summaries,
    const std::string& summary_path) {
    const CsvTable table = read_csv_table(path);
    require_columns(table, kHeadLinkColumns);
    std::map<CurveKey, std::map<int, std::vector<HeadPoint>>> heads;
    for (std::size_t r = 0; r < table.rows.size(); ++r) {
        const CurveKey key{table.text(r, "policy"), table.text(r, "renorm")};
        const auto summary = summaries.find(key);
        if (summary == summaries.end())
            throw InputError("'" + summary_path + "': no entry for " + curve_name(key) +
                             ", which " + path + " has");
        const std::string predictor = summary->second.predictor();
        HeadPoint h;
        h.layer = integer_at(table, r, "layer");
        h.head = integer_at(table, r, "head");
        h.delta_nll = table.number(r, "delta_nll");
        if (!predictor.empty()) h.predictor = optional_number(table, r, predictor);
        h.regime = regime_index(parse_regime(table.text(r, "regime"), path));
        heads[key][integer_at(table, r, "N")].push_back(h);
    }
    return heads;
}

std::vector<Section> head_link_sections(const std::string& prefix, const RunFolder& run) {
    const std::string summary_path = path_in(run.dir, schema::file::link_summary);
    const std::string head_path = path_in(run.dir, schema::file::head_link);
    const auto summaries = read_link_summary(summary_path);
    const auto heads = read_head_link(head_path, summaries, summary_path);
    const CsvTable geometry = read_csv_table(path_in(run.dir, schema::file::geometry_link));
    require_columns(geometry, kGeometryLinkColumns);
    // The window's length n (manifest parameters.context): P, R, F are identities at N ≥ n.
    const int context = with_json_context(path_in(run.dir, schema::file::manifest), [&] {
        return run.manifest.at("parameters").at("context").get<int>();
    });
    std::vector<Section> sections;
    int k = 0;
    for (const auto& curve : heads) {
        // Named copies: a lambda cannot capture a structured binding in C++17 (clang refuses).
        const CurveKey& key = curve.first;
        const auto& by_n = curve.second;
        const LinkSummary& summary = summaries.at(key);
        // The strongest test's N where head_link.csv has it, else the first N where heads differ.
        bool varies = false;
        int N = first_varying_n(by_n, varies);
        std::string why_n = varies
                                ? "the smallest N of the grid where it differs between heads"
                                : "the grid's first N; ΔNLL is the same for every head at every N";
        if (summary.strongest && by_n.count(summary.strongest->N)) {
            N = summary.strongest->N;
            why_n = "the N of the strongest test";
        }
        Section section;
        section.title = "Heads' ΔNLL and their geometry (" + curve_name(key) + ")";
        section.html_before = link_sentence(key, summary, summary_path);
        if (!summary.predictor().empty())
            section.figures.push_back(link_scatter(prefix + "truncate_link" + std::to_string(k),
                                                   key, summary, N, why_n, by_n.at(N), head_path));
        ++k;
        section.html_after = spearman_table(geometry, key, N, context, summary);
        sections.push_back(std::move(section));
    }
    return sections;
}

// ---- the folder ------------------------------------------------------------------------------

Section facts_section(const RunFolder& run) {
    const nlohmann::json& m = run.manifest;
    std::vector<std::vector<std::string>> rows;
    for (const char* object : {"model", "parameters", "documents"})
        if (m.contains(object) && m.at(object).is_object())
            for (const auto& [key, value] : m.at(object).items())
                rows.push_back(
                    {std::string(object) + "." + html_escape(key), html_escape(json_text(value))});
    for (const char* key : {"tokenizer", "configurations"})
        if (m.contains(key)) rows.push_back({key, html_escape(json_text(m.at(key)))});
    if (m.contains("version"))
        rows.push_back({"version / commit",
                        html_escape(json_text(m.at("version")) + " / " +
                                    (m.contains("git_commit") ? json_text(m.at("git_commit"))
                                                              : std::string()))});
    if (m.contains("command")) rows.push_back({"command", code(json_text(m.at("command")))});
    Section section;
    section.title = "Model and truncation";
    section.html_before = html_table({"fact", "value"}, rows);
    return section;
}

std::string prefix_of(const RunFolder& run) {
    return "run" + std::to_string(run.index) + "_";
}

bool is_truncate(const RunFolder& run) {
    const auto kind = run.manifest.find("kind");
    return kind != run.manifest.end() && kind->is_string() &&
           kind->get<std::string>() == schema::kind::truncate;
}

}  // namespace

std::vector<Section> truncate_sections(const RunFolder& run) {
    const std::string scope = scope_of(run);
    const std::string source = path_in(run.dir, schema::file::truncation);
    const std::vector<TruncationRow> rows = read_truncation(source, scope);
    std::vector<Section> sections = {facts_section(run)};
    Section cost;
    cost.title = "What truncation costs: ΔNLL and KL against N";
    cost.figures = cost_figures(prefix_of(run), rows, scope, source);
    sections.push_back(cost);
    sections.push_back(effective_size_section(run, scope));
    if (scope == "head" &&
        std::filesystem::is_regular_file(path_in(run.dir, schema::file::head_link)) &&
        std::filesystem::is_regular_file(path_in(run.dir, schema::file::link_summary))) {
        const auto linked = head_link_sections(prefix_of(run), run);
        sections.insert(sections.end(), linked.begin(), linked.end());
    }
    return sections;
}

std::vector<Section> truncate_overlay_sections(const std::vector<RunFolder>& runs,
                                               const std::vector<std::string>& labels) {
    std::vector<Series> series;
    std::vector<std::vector<std::string>> legend;
    std::vector<std::string> policies, sources;
    int folders = 0;
    for (const RunFolder& run : runs) {
        if (!is_truncate(run)) continue;
        const std::string colour = palette::kModel[folders++ % palette::kModel.size()];
        const std::string source = path_in(run.dir, schema::file::truncation);
        const std::string scope = scope_of(run);
        for (const auto& [key, curve] :
             metric_curves(read_truncation(source, scope), Metric::delta_nll)) {
            Series s;
            s.title = labels.at(run.index) + ": " + curve_name(key);
            s.colour = colour;
            s.dash = key.second == "yes" ? 2 : 1;
            s.point = kPointTypes[index_in(policies, key.first) % 5];
            s.curve = curve;
            series.push_back(std::move(s));
        }
        legend.push_back(
            {"<span style=\"color:" + colour + "\">■</span> " + html_escape(labels.at(run.index)),
             html_escape(scope), code(run.dir)});
        sources.push_back(html_escape(labels.at(run.index)) + ": " + code(source));
    }
    if (folders < 2) return {};
    std::string from;
    for (std::size_t i = 0; i < sources.size(); ++i)
        from += (i ? "; " : "") + sources[i];
    Section across;
    across.title = "Truncation compared: ΔNLL against N";
    across.html_before =
        "<p>The truncate folders drawn together, one colour per folder (name from its manifest "
        "or <code>--label</code>):</p>\n" +
        html_table({"folder", "scope", "path"}, legend);
    across.figures.push_back(series_figure(
        "models_truncate_delta_nll", "ΔNLL against N across truncate folders",
        "ΔNLL (nats per token)", "delta_nll", series,
        "The mean increase of the next-token loss against N, one colour per folder and one "
        "point type per policy (dashed: renormalised); scope all draws its rows with the 95% "
        "interval as error bars, scopes layer and head the mean over their units. From " +
            from + ". Log N."));
    return {across};
}

}  // namespace attngeo::reports
