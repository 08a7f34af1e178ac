// The κ-scan figure of one bound variant (docs/design.md §7): per (metric, side) the largest z
// of any point and the band's critical value against κ, the falsified points on a second axis,
// the consistent κ (the 95 % confidence set) shaded and κ_edge marked — all from kappa_scan.csv
// and verdict.csv as the run wrote them.
#include <algorithm>
#include <cmath>
#include <sstream>

#include "common/format.hpp"
#include "compare/verdict_tables.hpp"
#include "reports/palette.hpp"
#include "reports/verdict.hpp"
#include "reports/verdict_text.hpp"
#include "reports/html.hpp"

namespace attngeo::reports {
namespace {

// z below this is drawn at it: a bound far inside the band says nothing more by being farther.
constexpr double kLowestZ = -10;

const std::pair<const char*, const char*> kSides[4] = {
    {"P", "lower"}, {"P", "upper"}, {"R", "lower"}, {"R", "upper"}};

// One scan row of a side, as drawn.
struct ScanPoint {
    double kappa, max_z, critical;
    int falsified, contradicted;
    bool consistent;
};

double field_or_nan(const CsvTable& scan, std::size_t r, const char* name) {
    return scan.text(r, name).empty() ? std::nan("") : scan.number(r, name);
}

std::vector<ScanPoint> side_points(const CsvTable& scan, const std::string& variant, int side,
                                   int grid) {
    const bool has_grid = scan.has_column("grid");
    std::vector<ScanPoint> out;
    for (std::size_t r = 0; r < scan.rows.size(); ++r) {
        if (scan.text(r, "variant") != variant || scan.text(r, "metric") != kSides[side].first ||
            scan.text(r, "side") != kSides[side].second)
            continue;
        if (has_grid && grid >= 0 && scan.integer(r, "grid") != grid) continue;
        out.push_back({scan.number(r, "kappa"), field_or_nan(scan, r, "max_z"),
                       field_or_nan(scan, r, "critical_value"),
                       static_cast<int>(scan.integer(r, "falsified_points")),
                       static_cast<int>(scan.integer(r, "contradicted_points")),
                       scan.integer(r, "consistent") == 1});
    }
    std::sort(out.begin(), out.end(),
              [](const ScanPoint& a, const ScanPoint& b) { return a.kappa < b.kappa; });
    return out;
}

// The consistent κ as runs [first, last] of consecutive consistent scan rows.
std::vector<std::pair<double, double>> consistent_runs(const std::vector<ScanPoint>& points) {
    std::vector<std::pair<double, double>> runs;
    for (std::size_t i = 0; i < points.size(); ++i) {
        if (!points[i].consistent) continue;
        if (i > 0 && points[i - 1].consistent)
            runs.back().second = points[i].kappa;
        else
            runs.push_back({points[i].kappa, points[i].kappa});
    }
    return runs;
}

// The y range of a panel: every finite z (from kLowestZ) and critical value, padded.
std::pair<double, double> z_range(const std::vector<ScanPoint>& points) {
    double lo = HUGE_VAL, hi = -HUGE_VAL;
    for (const ScanPoint& p : points)
        for (double y : {p.max_z, p.critical})
            if (std::isfinite(y)) {
                lo = std::min(lo, std::max(y, kLowestZ));
                hi = std::max(hi, y);
            }
    if (!(lo <= hi)) return {-1, 5};
    const double pad = std::max(0.08 * (hi - lo), 0.5);
    return {lo - pad, hi + pad};
}

const VerdictSide* row_of(const std::vector<VerdictSide>& rows, const std::string& variant,
                          int side) {
    for (const VerdictSide& v : rows)
        if (v.variant == variant && v.metric == kSides[side].first && v.side == kSides[side].second)
            return &v;
    return nullptr;
}

std::string panel_script(const std::string& id, int k, const std::vector<ScanPoint>& points,
                         const VerdictSide* row) {
    const auto [lo, hi] = z_range(points);
    int most = 1;
    for (const ScanPoint& p : points)
        most = std::max(most, p.falsified + p.contradicted);
    std::ostringstream s;
    s << "  unset object\n  unset arrow\n  set title '" << kSides[k].first << " "
      << kSides[k].second << (row ? " — " + row->state : std::string()) << "' font ',12'\n"
      << "  set yrange [" << format_double(lo) << ":" << format_double(hi) << "]\n"
      << "  set y2range [0:" << most * 1.15 << "]\n";
    int object = 1;
    for (const auto& [from, to] : consistent_runs(points)) {
        // a run of one κ is drawn a tenth of a decade wide so it shows
        const double a = from == to ? from / 1.12 : from, b = from == to ? to * 1.12 : to;
        s << "  set object " << object++ << " rect from " << format_double(a) << ", graph 0 to "
          << format_double(b) << ", graph 1 fc rgb '" << palette::kConsistent
          << "' fs solid 1.0 noborder behind\n";
    }
    if (row && std::isfinite(row->kappa_edge))
        s << "  set arrow 1 from " << format_double(row->kappa_edge) << ", graph 0 to "
          << format_double(row->kappa_edge) << ", graph 1 nohead lw 2 lc rgb '" << palette::kOptimum
          << "'\n";
    s << "  plot '" << id << ".dat' index " << k << " using 1:($2 < " << kLowestZ << " ? "
      << kLowestZ << " : $2) with lines lw 2 lc rgb '" << palette::kScanSide[k]
      << "' title 'largest z', \\\n       '' index " << k
      << " using 1:3 with lines lw 1.4 dt 2 lc rgb '" << palette::kNeutral
      << "' title 'critical value', \\\n       '' index " << k
      << " using 1:($4 + $5) axes x1y2 with steps lw 1 lc rgb '" << palette::kSink
      << "' title 'falsified points', \\\n"
      << "       keyentry with boxes fs solid 1.0 lc rgb '" << palette::kConsistent
      << "' title 'consistent κ', \\\n       keyentry with lines lw 2 lc rgb '" << palette::kOptimum
      << "' title 'κ_{edge}'\n";
    return s.str();
}

std::string figure_caption(const std::string& variant, const CsvTable& scan,
                           const std::vector<VerdictSide>& rows, int grid) {
    std::ostringstream caption;
    caption << "One panel per (metric, side) of <code>" << html_escape(variant)
            << "</code> against κ (log scale): the largest z of any point (excess of the bound "
               "beyond the measurement over its standard error; below "
            << kLowestZ << " drawn at " << kLowestZ
            << "), the simultaneous band's critical value (dashed: a point is falsified when its "
               "z passes it), and the falsified and contradicted points (steps, right axis). "
               "Shaded: "
               "the consistent κ, the side's 95 % confidence set; the vertical line marks "
               "κ_edge (";
    std::vector<std::string> marks;
    for (const auto& r : rows)
        if (r.variant == variant)
            marks.push_back(verdict_words::side_label(r) + " " +
                            (std::isnan(r.kappa_edge)
                                 ? std::string(r.kappa_free ? "κ-free" : "none")
                                 : short_number(r.kappa_edge)));
    caption << verdict_words::join(marks) << ")";
    if (grid >= 0) caption << "; grid point " << grid << " of the sweep";
    caption << ". From " << html_escape(scan.path) << ".";
    return caption.str();
}

}  // namespace

CsvTable read_kappa_scan(const std::string& path) {
    return read_table_with_columns(path, column_list(compare::kKappaScanColumns));
}

Figure kappa_scan_figure(const std::string& id, const std::string& variant, const CsvTable& scan,
                         const std::vector<VerdictSide>& rows, int grid) {
    std::ostringstream dat, edges;
    dat << "# kappa max_z critical_value falsified_points contradicted_points consistent; "
           "blocks (gnuplot index): P lower, P upper, R lower, R upper\n";
    edges << "# side kappa_edge (rows: P lower, P upper, R lower, R upper; nan: none)\n";
    std::ostringstream script;
    script << "  set multiplot layout 2,2\n  set logscale x 10\n  set format x '10^{%L}'\n"
           << "  set xrange [1e-8:1e8]\n  set xtics 1e-8, 1e4, 1e8\n  set y2tics nomirror\n"
           << "  set ytics nomirror\n  set y2label 'points' font ',10'\n"
           << "  set key outside below horizontal maxrows 2 font ',9' samplen 2\n"
           << "  set grid lc rgb '" << palette::kGridLine << "'\n"
           << "  set ylabel 'z' font ',11'\n";
    for (int k = 0; k < 4; ++k) {
        if (k) dat << "\n\n";
        const std::vector<ScanPoint> points = side_points(scan, variant, k, grid);
        for (const ScanPoint& p : points)
            dat << format_double(p.kappa) << ' ' << format_double(p.max_z) << ' '
                << format_double(p.critical) << ' ' << p.falsified << ' ' << p.contradicted << ' '
                << int(p.consistent) << '\n';
        const VerdictSide* row = row_of(rows, variant, k);
        edges << k << ' ' << format_double(row ? row->kappa_edge : std::nan("")) << '\n';
        script << panel_script(id, k, points, row);
    }
    script << "  unset multiplot\n";
    Figure f;
    f.id = id;
    f.title = "κ scan of the " + variant + " bounds: where each side is falsified";
    f.data.push_back({id + ".dat", dat.str()});
    f.data.push_back({id + "_edge.dat", edges.str()});
    f.script = script.str();
    f.caption = figure_caption(variant, scan, rows, grid);
    return f;
}

}  // namespace attngeo::reports
