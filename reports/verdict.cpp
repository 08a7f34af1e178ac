// The verdict section shared by simulate, sweep and compare reports (docs/design.md §7):
// verdict.csv to a table, sentences generated from its numbers and the manifest's degenerate
// fractions, and the κ-scan figure of each variant from kappa_scan.csv.
#include "reports/verdict.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <sstream>

#include "common/csv.hpp"
#include "common/errors.hpp"
#include "common/format.hpp"
#include "common/json_file.hpp"
#include "common/manifest_values.hpp"
#include "common/order_statistics.hpp"
#include "common/run_schema.hpp"
#include "reports/palette.hpp"
#include "reports/report.hpp"
#include "reports/verdict_text.hpp"
#include "theory/bounds.hpp"

namespace attngeo::reports {
namespace {

const char* kRegimeNames[5] = {"I", "II", "III", "IV", "V"};

bool flag_field(const CsvTable& table, std::size_t row, const std::string& name) {
    const std::string& text = table.text(row, name);
    if (text == "1" || text == "true") return true;
    if (text == "0" || text == "false") return false;
    throw InputError("'" + table.path + "' row " + std::to_string(row + 2) + " column " + name +
                     ": '" + text + "' is not 0 or 1");
}

double optional_number(const CsvTable& table, std::size_t row, const std::string& name) {
    return table.text(row, name).empty() ? std::nan("") : table.number(row, name);
}

using verdict_words::digits;
// The verdict's numbers to a few significant digits: fifteen columns must fit the page, and a
// sentence reads better with three (verdict.csv keeps 17).
std::string cell_number(double x) {
    return digits(x, 4);
}
std::string sentence_number(double x) {
    return digits(x, 3);
}

using verdict_words::side_label;
std::string join_words(const std::vector<std::string>& words) {
    return verdict_words::join(words);
}

double fraction_of(const nlohmann::json& degenerate, const char* key) {
    return json_number_value(degenerate.at(key));
}

// "1023 of 1023 N": a fraction of the M points (the non-convention points) as a count.
std::string share_of(double fraction, const std::vector<VerdictSide>& rows,
                     const std::string& points) {
    return std::to_string(std::lround(fraction * rows.front().points)) + " of " +
           std::to_string(rows.front().points) + " " + points;
}

// The κ-free sides of one kind (lower or upper) and why, from the margin fractions.
std::string kappa_free_sentence(const std::string& variant, const std::vector<VerdictSide>& rows,
                                const std::string& side, const VariantFacts& facts,
                                const std::string& points) {
    std::vector<std::string> metrics;
    for (const auto& r : rows)
        if (r.side == side && r.kappa_free) metrics.push_back(r.metric);
    if (metrics.empty()) return "";
    const bool plural = metrics.size() > 1;
    std::ostringstream s;
    s << "The " << join_words(metrics) << " " << side << " bound" << (plural ? "s" : "")
      << " of <code>" << html_escape(variant) << "</code> " << (plural ? "are" : "is")
      << " κ-free (unchanged over the whole scanned grid)";
    if (side == "lower") {
        const double delta = fraction_of(facts.degenerate, "delta_le0");
        const double delta0 = fraction_of(facts.degenerate, "delta0_le0");
        if (delta > 0) {
            s << ": Δ ≤ 0 at " << share_of(delta, rows, points) << " (tail factor 1)";
            if (delta0 > 0) s << " and Δ<sub>0</sub> ≤ 0 at " << share_of(delta0, rows, points);
            // With both tails at 1 the lower bounds collapse to the union-bound counts alone;
            // said only of the metrics whose lower bound the scan found κ-free.
            std::vector<std::string> collapsed;
            for (const auto& m : metrics)
                collapsed.push_back((m == "P" ? "1/(1 + (n − N)(1 + 1/N))-like" : "0") +
                                    (plural ? " for " + m : std::string()));
            if (delta >= 0.99 && delta0 >= 0.99)
                s << ", so there the " << join_words(metrics) << " lower bound"
                  << (plural ? "s are " : " is ") << join_words(collapsed) << " whatever κ is";
        }
    } else {
        const double xi = fraction_of(facts.degenerate, "xi_le0");
        if (xi > 0)
            s << ": " << (plural ? "they are" : "it is") << " decided by a pair with ξ ≤ 0 at "
              << share_of(xi, rows, points) << " (p⁻ = 1/2 for every κ)";
    }
    s << "; " << (plural ? "they say" : "it says") << " nothing about κ. ";
    return s.str();
}

// "1 of 11", "N = 2 and 3": where a side's bound moves with κ, from verdict.csv's columns.
std::string moving_where(const VerdictSide& r, const std::string& points) {
    std::vector<std::string> sizes;
    std::stringstream list(r.moving_sizes);
    for (std::string n; std::getline(list, n, ';');)
        if (!n.empty()) sizes.push_back(n);
    if (!sizes.empty() && sizes.size() <= 8) return "N = " + join_words(sizes);
    return std::to_string(r.points_moving) + " of " + std::to_string(r.points) + " " + points;
}

// The sides that move with κ, but by at most 1e-3 anywhere: where and by how much.
std::string nearly_kappa_free_sentence(const std::string& variant,
                                       const std::vector<VerdictSide>& rows,
                                       const std::string& points) {
    std::ostringstream s;
    for (const auto& r : rows) {
        if (!r.nearly_kappa_free) continue;
        s << "The " << side_label(r) << " bound of <code>" << html_escape(variant)
          << "</code> is nearly κ-free, not κ-free: over κ ∈ [10<sup>−8</sup>, 10<sup>8</sup>] "
             "it moves only at "
          << moving_where(r, points) << ", by at most " << sentence_number(r.largest_move) << ". ";
    }
    return s.str();
}

std::string trivial_sentence(const VariantFacts& facts, const std::vector<VerdictSide>& rows,
                             const std::string& points) {
    std::vector<std::string> parts;
    const std::pair<const char*, const char*> keys[4] = {{"P_trivial_lower", "P lower (≤ 0.01)"},
                                                         {"P_trivial_upper", "P upper (≥ 0.99)"},
                                                         {"R_trivial_lower", "R lower (≤ 0.01)"},
                                                         {"R_trivial_upper", "R upper (≥ 0.99)"}};
    for (const auto& [key, label] : keys) {
        const double f = fraction_of(facts.degenerate, key);
        if (f >= 0.5)
            parts.push_back(std::string("the ") + label + " at " + share_of(f, rows, points));
    }
    if (parts.empty()) return "";
    return "At κ* the bound is trivial for " + join_words(parts) + ". ";
}

std::string list_of_sizes(const std::vector<int>& sizes) {
    std::string out;
    const std::size_t shown = std::min<std::size_t>(sizes.size(), 8);
    for (std::size_t i = 0; i < shown; ++i)
        out += (i ? ", " : "") + std::to_string(sizes[i]);
    if (shown < sizes.size()) out += ", … (" + std::to_string(sizes.size()) + " N in all)";
    return out;
}

std::string inverted_sentence(const VariantFacts& facts, const std::vector<VerdictSide>& rows,
                              const std::string& points) {
    std::vector<std::string> parts;
    for (const char* metric : {"P", "R"}) {
        const auto it = facts.inverted_at.find(metric);
        if (it != facts.inverted_at.end() && !it->second.empty()) {
            parts.push_back(std::string(metric) + " at N = " + list_of_sizes(it->second));
            continue;
        }
        const double f = fraction_of(facts.degenerate, (std::string(metric) + "_inverted").c_str());
        if (f > 0) parts.push_back(std::string(metric) + " at " + share_of(f, rows, points));
    }
    if (parts.empty()) return "";
    return "<span class=\"bad\">The envelope at κ* is inverted (lower > upper)</span> for " +
           join_words(parts) + ". ";
}

// The sentences of one judged variant, its name written as `variant` (a placeholder the caller
// replaces), each entry one unit so the sentences every variant shares can be said once.
std::vector<std::string> judged_sentences(const std::string& variant,
                                          const std::vector<VerdictSide>& rows,
                                          const VariantFacts& facts, const std::string& points) {
    std::vector<std::string> out;
    auto add = [&](const std::string& text) {
        if (!text.empty()) out.push_back(text);
    };
    if (facts.kappa_irrelevant) {
        add("At d = ∞ the bounds are taken at κd = ∞, so no side depends on κ: κ* is arbitrary "
            "and κ-free says nothing about the margins. ");
    } else {
        add(kappa_free_sentence(variant, rows, "lower", facts, points));
        add(kappa_free_sentence(variant, rows, "upper", facts, points));
        add(nearly_kappa_free_sentence(variant, rows, points));
        for (const VerdictSide& r : rows)
            for (const std::string& sentence : kappa_star_sentences(r))
                add(sentence);
    }
    add(trivial_sentence(facts, rows, points));
    add(inverted_sentence(facts, rows, points));
    add(interval_score_sentence(facts));
    if (facts.kappa_rule == "given" && !facts.kappa_irrelevant)
        add("κ was given (<code>--kappa</code>), so every side uses it: κ* is that κ, and the "
            "scan shows what other κ would give. ");
    return out;
}

std::string regime_cell(const VerdictSide& row, int regime) {
    if (row.points_by_regime[regime] == 0 || std::isnan(row.gap_by_regime[regime])) return "–";
    return cell_number(row.gap_by_regime[regime]) + " (" +
           std::to_string(row.points_by_regime[regime]) + ")";
}

// Mean gap at κ* per Table-2 regime (count in brackets), a row per variant × side; nothing
// when no point has a regime.
std::string regime_gap_table(const std::vector<VerdictSide>& rows) {
    std::vector<std::vector<std::string>> cells;
    bool any = false;
    for (const VerdictSide& r : rows) {
        std::vector<std::string> row = {html_escape(r.variant), r.metric, r.side};
        for (int k = 0; k < 5; ++k) {
            row.push_back(regime_cell(r, k));
            any = any || r.points_by_regime[k] > 0;
        }
        cells.push_back(row);
    }
    if (!any) return "";
    return "<p>Mean gap at κ* by Table-2 regime (points in brackets):</p>\n"
           "<div style=\"overflow-x: auto; font-size: .85em\">" +
           html_table(
               {"variant", "metric", "side", "gap I", "gap II", "gap III", "gap IV", "gap V"},
               cells) +
           "</div>\n";
}

// The point counts of docs/design.md §7's verdict: M, the violations against their chance
// allowance, κ₀ and the informative points.
void read_judgement(const CsvTable& table, std::size_t r, VerdictSide& v) {
    auto count = [&](const char* name) { return static_cast<int>(table.number(r, name)); };
    v.points = count("points");
    v.convention_points = count("convention_points");
    v.violations = count("violations");
    v.violations_allowed = count("violations_allowed");
    v.within_allowance = flag_field(table, r, "within_allowance");
    v.largest_excess = table.number(r, "largest_excess");
    v.kappa_zero = optional_number(table, r, "kappa_zero");
    v.gap_at_kappa_zero = optional_number(table, r, "gap_at_kappa_zero");
    v.saturates = table.text(r, "kappa_star_saturates");
    if (v.saturates != "" && v.saturates != "above" && v.saturates != "below")
        throw InputError("'" + table.path + "' row " + std::to_string(r + 2) +
                         " column kappa_star_saturates: '" + v.saturates +
                         "' is not empty, above or below");
    v.informative_points = count("informative_points");
    v.informative_fraction = table.number(r, "informative_fraction");
    v.informative_sizes = table.text(r, "informative_N");
    v.identity_contradicted = count("identity_contradicted");
    v.at_limit_points = count("at_limit_points");
    v.n_only_points = count("n_only_points");
}

}  // namespace

const std::vector<std::string>& variant_names() {
    return theory::bound_variant_names();
}

const std::string& variant_color(std::size_t variant_index) {
    static const std::vector<std::string> colors(palette::kVariant.begin(),
                                                 palette::kVariant.end());
    return colors.at(variant_index % colors.size());
}

VerdictTable read_verdict(const std::string& path) {
    const CsvTable table = read_csv_table(path);
    VerdictTable out;
    out.path = path;
    const bool has_grid = !table.header.empty() && table.header.front() == "grid";
    if (has_grid) {
        for (std::size_t c = 1; c < table.header.size() && table.header[c] != "variant"; ++c)
            out.swept.push_back(table.header[c]);
    }
    for (std::size_t r = 0; r < table.rows.size(); ++r) {
        VerdictSide v;
        v.grid = has_grid ? static_cast<int>(table.number(r, "grid")) : -1;
        v.variant = table.text(r, "variant");
        v.metric = table.text(r, "metric");
        v.side = table.text(r, "side");
        v.kappa_star = table.number(r, "kappa_star");
        v.coverage = table.number(r, "coverage");
        v.mean_gap = table.number(r, "mean_gap");
        v.mean_width = table.number(r, "mean_width");
        v.median_width = table.number(r, "median_width");
        for (int k = 0; k < 5; ++k) {
            v.gap_by_regime[k] = optional_number(table, r, std::string("gap_") + kRegimeNames[k]);
            const double count =
                optional_number(table, r, std::string("points_") + kRegimeNames[k]);
            v.points_by_regime[k] = std::isnan(count) ? 0 : static_cast<int>(count);
        }
        v.fraction_degenerate = table.number(r, "fraction_degenerate");
        v.informative = flag_field(table, r, "informative");
        v.at_grid_edge = flag_field(table, r, "at_grid_edge");
        v.kappa_free = flag_field(table, r, "kappa_free");
        v.points_moving = static_cast<int>(table.number(r, "points_moving"));
        v.largest_move = table.number(r, "largest_move");
        v.nearly_kappa_free = flag_field(table, r, "nearly_kappa_free");
        v.moving_sizes = table.text(r, "moving_N");
        read_judgement(table, r, v);
        out.rows.push_back(v);
        std::map<std::string, std::string> values;
        for (const auto& name : out.swept)
            values[name] = table.text(r, name);
        out.swept_values.push_back(values);
    }
    return out;
}

std::vector<VerdictSide> rows_of_grid(const VerdictTable& verdict, int grid) {
    std::vector<VerdictSide> out;
    for (const auto& r : verdict.rows)
        if (grid < 0 || r.grid == grid) out.push_back(r);
    return out;
}

std::string verdict_html(const std::vector<VerdictSide>& rows,
                         const std::map<std::string, VariantFacts>& facts,
                         const std::string& points, const std::string& opening) {
    if (rows.empty()) return opening;
    return judged_verdict_html(rows, facts, points, opening, judged_sentences) +
           regime_gap_table(rows);
}

namespace {

// One (variant, "metric side") of a sweep, over its grid points.
struct SideAggregate {
    std::vector<double> kappa_star;  // [grid points]
    double gap_sum = 0, degenerate_sum = 0, min_coverage = 1;
    int grid_points = 0, kappa_free = 0, at_edge = 0, met = 0, informative = 0;
};
// variant → ("P lower", aggregate) in the file's order of sides.
using SweepAggregates = std::map<std::string, std::vector<std::pair<std::string, SideAggregate>>>;

SweepAggregates aggregate_sides(const VerdictTable& verdict) {
    SweepAggregates groups;
    for (const auto& r : verdict.rows) {
        auto& list = groups[r.variant];
        const std::string key = side_label(r);
        auto it =
            std::find_if(list.begin(), list.end(), [&](const auto& p) { return p.first == key; });
        if (it == list.end()) it = list.insert(list.end(), {key, SideAggregate{}});
        SideAggregate& a = it->second;
        a.kappa_star.push_back(r.kappa_star);
        a.gap_sum += r.mean_gap;
        a.degenerate_sum += r.fraction_degenerate;
        a.min_coverage = std::min(a.min_coverage, r.coverage);
        ++a.grid_points;
        a.kappa_free += r.kappa_free;
        a.at_edge += r.at_grid_edge;
        a.met += r.within_allowance;
        a.informative += r.informative;
    }
    return groups;
}

// "P upper (1/2)": a side and at how many of the grid points something holds.
std::string side_count(const std::string& key, int count, int of) {
    return key + " (" + std::to_string(count) + "/" + std::to_string(of) + ")";
}

std::string sweep_paragraph(const std::string& variant,
                            const std::vector<std::pair<std::string, SideAggregate>>& sides) {
    std::vector<std::string> free_sides, unmet, edge, useless;
    for (const auto& [key, a] : sides) {
        if (a.kappa_free > 0) free_sides.push_back(side_count(key, a.kappa_free, a.grid_points));
        if (a.met < a.grid_points)
            unmet.push_back(side_count(key, a.grid_points - a.met, a.grid_points));
        if (a.at_edge > 0) edge.push_back(side_count(key, a.at_edge, a.grid_points));
        if (a.informative < a.grid_points)
            useless.push_back(side_count(key, a.grid_points - a.informative, a.grid_points));
    }
    std::ostringstream s;
    s << "<p><b><code>" << html_escape(variant) << "</code></b>: ";
    if (!free_sides.empty())
        s << "κ-free sides (at how many grid points): " << join_words(free_sides)
          << " — there the bound says nothing about κ. ";
    if (!unmet.empty())
        s << "More violations than chance allows at every κ: " << join_words(unmet) << ". ";
    if (!edge.empty()) s << "κ* at the grid's edge: " << join_words(edge) << ". ";
    if (!useless.empty())
        s << "Not informative (fewer than 5 % of the N): " << join_words(useless) << ". ";
    if (free_sides.empty() && unmet.empty() && edge.empty() && useless.empty())
        s << "every side depends on κ, holds within its allowance and is informative at every "
             "grid point. ";
    s << "</p>\n";
    return s.str();
}

// Rows (grid point, values, variant) with the κ* of each side, flags marked.
std::vector<std::vector<std::string>> kappa_star_per_point(const VerdictTable& verdict) {
    std::map<std::pair<int, std::string>, std::map<std::string, std::string>> per_point;
    std::map<int, std::string> point_values;
    for (std::size_t i = 0; i < verdict.rows.size(); ++i) {
        const auto& r = verdict.rows[i];
        std::string cell = short_number(r.kappa_star);
        if (r.kappa_free) cell += " ‡";
        if (r.at_grid_edge) cell += " †";
        if (!r.within_allowance) cell += " *";
        per_point[{r.grid, r.variant}][side_label(r)] = cell;
        std::string values;
        for (const auto& [name, text] : verdict.swept_values[i])
            values += (values.empty() ? "" : ", ") + name + " = " +
                      short_number(std::strtod(text.c_str(), nullptr));
        point_values[r.grid] = values;
    }
    std::vector<std::vector<std::string>> rows;
    for (const auto& [grid, values] : point_values) {
        for (const auto& variant : variant_names()) {
            const auto it = per_point.find({grid, variant});
            if (it == per_point.end()) continue;
            auto cell = [&](const char* key) {
                return it->second.count(key) ? it->second.at(key) : std::string("");
            };
            rows.push_back({std::to_string(grid), html_escape(values),
                            "<code>" + html_escape(variant) + "</code>", cell("P lower"),
                            cell("P upper"), cell("R lower"), cell("R upper")});
        }
    }
    return rows;
}

}  // namespace

std::string sweep_verdict_html(const VerdictTable& verdict) {
    const SweepAggregates groups = aggregate_sides(verdict);
    std::vector<std::vector<std::string>> cells;
    std::string paragraphs;
    for (const auto& variant : variant_names()) {
        if (!groups.count(variant)) continue;
        for (const auto& [key, a] : groups.at(variant)) {
            const double n = a.grid_points;
            cells.push_back({"<code>" + html_escape(variant) + "</code>", key,
                             short_number(median(a.kappa_star)), short_number(a.min_coverage),
                             short_number(a.gap_sum / n), short_number(a.kappa_free / n),
                             short_number(a.at_edge / n), short_number(a.met / n),
                             short_number(a.degenerate_sum / n), short_number(a.informative / n)});
        }
        paragraphs += sweep_paragraph(variant, groups.at(variant));
    }
    std::ostringstream out;
    out << "<p>Per variant × metric × side, aggregated over the sweep's grid points ("
        << html_escape(verdict.path)
        << "): each grid point has its own κ* per side (docs/design.md §7).</p>\n"
        << html_table({"variant", "side", "median κ*", "min coverage", "mean gap",
                       "fraction κ-free", "fraction at grid edge", "fraction within allowance",
                       "mean fraction degenerate", "fraction informative"},
                      cells)
        << paragraphs
        << "<p>κ* per grid point (‡ κ-free, † at the grid's edge, * more violations than "
           "allowed):</p>\n"
        << html_table({"grid", "values", "variant", "P lower", "P upper", "R lower", "R upper"},
                      kappa_star_per_point(verdict));
    return out.str();
}

Figure kappa_scan_figure(const std::string& id, const std::string& variant, const CsvTable& scan,
                         const std::vector<VerdictSide>& rows, int grid) {
    const std::pair<const char*, const char*> sides[4] = {
        {"P", "lower"}, {"P", "upper"}, {"R", "lower"}, {"R", "upper"}};
    const bool has_grid = scan.has_column("grid");
    std::ostringstream dat, stars;
    dat << "# kappa coverage mean_width; blocks (gnuplot index): P lower, P upper, R lower, "
           "R upper\n";
    stars << "# side kappa_star coverage (rows: P lower, P upper, R lower, R upper)\n";
    for (int k = 0; k < 4; ++k) {
        if (k) dat << "\n\n";
        for (std::size_t r = 0; r < scan.rows.size(); ++r) {
            if (scan.text(r, "variant") != variant || scan.text(r, "metric") != sides[k].first ||
                scan.text(r, "side") != sides[k].second)
                continue;
            if (has_grid && grid >= 0 && static_cast<int>(scan.number(r, "grid")) != grid) continue;
            dat << scan.text(r, "kappa") << ' ' << scan.text(r, "coverage") << ' '
                << scan.text(r, "mean_width") << '\n';
        }
        const auto star = std::find_if(rows.begin(), rows.end(), [&](const VerdictSide& v) {
            return v.variant == variant && v.metric == sides[k].first && v.side == sides[k].second;
        });
        stars << k << ' '
              << (star != rows.end() ? format_double(star->kappa_star) : std::string("nan")) << ' '
              << (star != rows.end() ? format_double(star->coverage) : std::string("nan")) << '\n';
    }
    Figure f;
    f.id = id;
    f.title = "κ scan of the " + variant + " bounds: coverage and envelope width against κ";
    f.data.push_back({id + ".dat", dat.str()});
    f.data.push_back({id + "_star.dat", stars.str()});
    // One panel per (metric, side): the four curves overlap too often to share one.
    std::ostringstream s;
    s << "  set multiplot layout 2,2\n  set logscale x 10\n  set format x '10^{%L}'\n"
      << "  set xrange [1e-8:1e8]\n  set xtics 1e-8, 1e4, 1e8\n  set yrange [-0.03:1.08]\n"
      << "  set key bottom left font ',10' samplen 2\n  set grid lc rgb '" << palette::kGridLine
      << "'\n"
      << "  set xlabel 'κ (log scale)' font ',11'\n";
    for (int k = 0; k < 4; ++k) {
        const std::string label = std::string(sides[k].first) + " " + sides[k].second;
        s << "  set title '" << label << "' font ',12'\n"
          << "  set arrow 1 from graph 0, first 0.95 to graph 1, first 0.95 nohead dt 3 lc rgb '"
          << palette::kGuide << "'\n"
          << "  plot '" << id << ".dat' index " << k << " using 1:2 with lines lw 2 lc rgb '"
          << palette::kScanSide[k] << "' title 'coverage', \\\n       '' index " << k
          << " using 1:3 with lines lw 1.4 dt 2 lc rgb '" << palette::kScanSide[k]
          << "' title 'mean width', \\\n       '" << id << "_star.dat' every ::" << k << "::" << k
          << " using 2:3 with points pt 7 ps 1.8 lc rgb '" << palette::kOptimum
          << "' title 'κ*', \\\n"
          << "       '' every ::" << k << "::" << k
          << " using 2:(-0.03):(0):(1.11) with vectors nohead dt 4 lc rgb '" << palette::kOptimum
          << "' notitle\n";
    }
    s << "  unset multiplot\n";
    f.script = s.str();
    std::ostringstream caption;
    caption << "One panel per (metric, side) of <code>" << html_escape(variant)
            << "</code>: the coverage (solid; the fraction of points whose 95 % interval does not "
               "contradict that side's bound) and the mean width of the metric's envelope "
               "(dashed) against κ; the dotted line is 95 %; the black dot and vertical line mark "
               "κ* (";
    std::vector<std::string> marks;
    for (const auto& r : rows)
        if (r.variant == variant)
            marks.push_back(side_label(r) + " " + short_number(r.kappa_star) +
                            (r.kappa_free ? " (κ-free)" : ""));
    caption << join_words(marks) << ")";
    if (grid >= 0) caption << "; grid point " << grid << " of the sweep";
    caption << ". From " << html_escape(scan.path) << ".";
    f.caption = caption.str();
    return f;
}

VariantFacts variant_facts_of(const nlohmann::json& block) {
    // Checked in place, before the copies, so an error carries the value's JSON pointer.
    const nlohmann::json& degenerate = block.at("degenerate");  // a fraction per margin flag
    for (const std::string& key : schema::bound_flag_columns())
        (void)json_number_value(degenerate.at(key));
    const nlohmann::json& interval_score = block.at("interval_score");
    for (const char* key : {"kappa", "coverage", "mean_width", "violations"})
        (void)json_number_value(interval_score.at(key));
    const nlohmann::json& hypotheses = block.at("hypotheses");
    for (const char* key : {"points", "delta_positive", "sink_points", "delta0_positive"})
        (void)json_integer<int>(hypotheses.at(key));
    VariantFacts f;
    f.kappa_rule = block.at("kappa_rule").get<std::string>();
    f.degenerate = degenerate;
    f.interval_score = interval_score;
    f.hypotheses = hypotheses;
    return f;
}

std::map<std::string, VariantFacts> variant_facts_of_all(const nlohmann::json& variants) {
    std::map<std::string, VariantFacts> facts;
    for (const auto& v : variant_names())
        facts[v] = variant_facts_of(variants.at(v));
    return facts;
}

Section compare_verdict_section(const std::string& dir, const std::string& prefix,
                                const nlohmann::json& kappa, const std::string& opening) {
    Section verdict;
    verdict.title = "The verdict: does each bound hold on real heads, and does it say anything?";
    const std::filesystem::path verdict_path = std::filesystem::path(dir) / schema::file::verdict;
    const VerdictTable table = read_verdict(verdict_path.string());
    const std::string kappa_path = (std::filesystem::path(dir) / schema::file::kappa).string();
    const std::map<std::string, VariantFacts> facts =
        with_json_context(kappa_path, [&] { return variant_facts_of_all(kappa.at("variants")); });
    verdict.html_before = verdict_html(table.rows, facts, "(head, N) points", opening);
    const std::filesystem::path scan_path = std::filesystem::path(dir) / schema::file::kappa_scan;
    const CsvTable scan = read_csv_table(scan_path.string());
    for (const auto& v : variant_names())
        verdict.figures.push_back(
            kappa_scan_figure(prefix + "kappa_" + v, v, scan, table.rows, -1));
    return verdict;
}

namespace {

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

std::map<std::string, std::map<int, std::array<double, 4>>> mean_star_envelopes(
    const std::string& bounds_path) {
    std::map<std::string, std::map<int, std::array<double, 5>>> sums;  // + count
    stream_bounds(bounds_path,
                  {"N", "P_lower_star", "P_upper_star", "R_lower_star", "R_upper_star"},
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
