// Figures drawn from single heads and single (head, N) points rather than means: the paper's
// Figure 1 (one head's contributions in their principal plane with s(N), r_min and r_max, from
// extract's snapshot files), Figure 10 as a scatter coloured by cos(v_i, s(N)) (contributions.csv)
// and Table 2's margin trend (Δ/B and Δ0/B against N by regime, from compare's bounds.csv).
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <map>
#include <sstream>

#include "common/csv.hpp"
#include "common/errors.hpp"
#include "common/format.hpp"
#include "common/json_file.hpp"
#include "common/manifest_values.hpp"
#include "common/run_columns.hpp"
#include "common/run_schema.hpp"
#include "reports/empirical_figures.hpp"
#include "reports/html.hpp"
#include "reports/palette.hpp"
#include "theory/bounds.hpp"

namespace fs = std::filesystem;

namespace attngeo::reports::empirical {
namespace {

// Table 2's regimes as bounds.csv names them, each with a colour (kSeries has five).
constexpr const char* kTable2Regimes[] = {"I", "II", "III", "IV", "V"};

// A number of snapshot.json (r_min is "nan" when N = n): a missing key or another type is a
// JSON error carrying its pointer (the caller's with_json_context names the file).
double json_double(const nlohmann::json& j, const char* key) {
    return json_number_value(j.at(key));
}

// A circle of radius r around (x, y) as 181 points, for a key entry with a real path.
std::string circle_points(double x, double y, double r) {
    std::ostringstream dat;
    for (int k = 0; k <= 180; ++k) {
        const double t = 2 * M_PI * k / 180;
        dat << format_double(x + r * std::cos(t)) << ' ' << format_double(y + r * std::sin(t))
            << '\n';
    }
    return dat.str();
}

// The snapshot's token table as .dat lines: pc1 pc2 for the selected or the other tokens.
std::string token_points(const CsvTable& tokens, bool selected, double& reach, double sx,
                         double sy) {
    std::ostringstream dat;
    dat << "# pc1 pc2 pos\n";
    for (std::size_t r = 0; r < tokens.rows.size(); ++r) {
        if ((tokens.text(r, "selected") == "1") != selected) continue;
        const double x = tokens.number(r, "pc1"), y = tokens.number(r, "pc2");
        reach = std::max(reach, std::hypot(x - sx, y - sy));
        dat << format_double(x) << ' ' << format_double(y) << ' ' << tokens.text(r, "pos") << '\n';
    }
    return dat.str();
}

// The circles around s(N) the snapshot defines: r_max always, r_min when finite (N < n).
struct SnapshotCircles {
    double r_min = 0, r_max = 0;
    bool has_r_min = false;
};

std::string snapshot_script(const std::string& id, const SnapshotCircles& c, double sx, double sy,
                            double reach) {
    std::ostringstream s;
    s << "  set size ratio -1\n  set xlabel 'principal axis 1'\n  set ylabel 'principal axis 2'\n"
      << kGrid << "  set key outside right top font ',10'\n"
      << "  set xrange [" << format_double(sx - reach) << ":" << format_double(sx + reach) << "]\n"
      << "  set yrange [" << format_double(sy - reach) << ":" << format_double(sy + reach) << "]\n"
      << "  plot '" << id << "_others.dat' using 1:2 with points pt 7 ps 0.6 lc rgb '"
      << palette::kNeutral << "' title 'not selected', \\\n"
      << "       '" << id << "_selected.dat' using 1:2 with points pt 3 ps 1.6 lw 1.5 lc rgb '"
      << palette::kSelected << "' title 'selected (I_N)', \\\n"
      << "       '" << id << "_rmax.dat' using 1:2 with lines lw 2 dt 2 lc rgb '" << palette::kFit
      << "' title 'r_{max} = " << short_number(c.r_max) << "', \\\n";
    if (c.has_r_min)
        s << "       '" << id << "_rmin.dat' using 1:2 with lines lw 2 lc rgb '"
          << palette::kMeasured << "' title 'r_{min} = " << short_number(c.r_min) << "', \\\n";
    s << "       '" << id << "_s.dat' using 1:2 with points pt 9 ps 2 lc rgb '" << palette::kSink
      << "' title 's(N)'\n";
    return s.str();
}

}  // namespace

std::optional<Figure> snapshot_figure(const std::string& prefix, const std::string& dir) {
    const std::string csv_path = path_in(dir, schema::file::snapshot_table),
                      json_path = path_in(dir, schema::file::snapshot_scalars);
    const bool has_table = fs::exists(csv_path), has_scalars = fs::exists(json_path);
    if (!has_table && !has_scalars) return std::nullopt;  // extract --snapshot off
    if (has_table != has_scalars)
        throw InputError("'" + (has_table ? json_path : csv_path) + "': missing beside '" +
                         (has_table ? csv_path : json_path) +
                         "' (extract writes snapshot.csv and snapshot.json together)");
    const CsvTable tokens = read_csv_table(csv_path);
    const nlohmann::json meta = read_json(json_path);
    const double sx = json_double(meta, "s_pc1"), sy = json_double(meta, "s_pc2");
    SnapshotCircles c;
    c.r_max = json_double(meta, "r_max");
    c.r_min = json_double(meta, "r_min");
    c.has_r_min = std::isfinite(c.r_min);
    Figure f;
    f.id = prefix + "fig1_snapshot";
    f.title = "Figure 1: one head's contributions α_i v_i around s(N)";
    double reach = std::max(c.r_max, c.has_r_min ? c.r_min : 0.0);
    f.data.push_back({f.id + "_selected.dat", token_points(tokens, true, reach, sx, sy)});
    f.data.push_back({f.id + "_others.dat", token_points(tokens, false, reach, sx, sy)});
    f.data.push_back({f.id + "_rmax.dat", circle_points(sx, sy, c.r_max)});
    if (c.has_r_min) f.data.push_back({f.id + "_rmin.dat", circle_points(sx, sy, c.r_min)});
    f.data.push_back({f.id + "_s.dat", format_double(sx) + " " + format_double(sy) + "\n"});
    f.script = snapshot_script(f.id, c, sx, sy, reach * 1.08 + 1e-300);
    const auto& explained = meta.at("explained_variance");
    if (explained.size() != 2)
        throw nlohmann::json::type_error::create(
            302, "expected the two leading shares, found " + explained.dump(), &explained);
    std::ostringstream caption;
    caption << "The contributions y<sub>i</sub> = α<sub>i</sub>v<sub>i</sub> of layer "
            << meta.at("layer").get<int>() << ", head " << meta.at("head").get<int>()
            << " in window " << meta.at("document").get<std::int64_t>() << " ("
            << meta.at("chosen_by").get<std::string>()
            << "), projected on their two leading principal axes"
            << " (" << short_number(100 * json_number_value(explained.at(0))) << " % and "
            << short_number(100 * json_number_value(explained.at(1))) << " % of the variance)";
    caption << ", with s(N) for N = " << meta.at("N").get<int>() << " (the N tokens of largest "
            << "weight, stars) and circles of radius r<sub>max</sub> (dashed) and "
            << "r<sub>min</sub> (solid" << (c.has_r_min ? "" : "; none at N = n")
            << ") around it. The radii are distances in the full " << meta.at("d").get<int>()
            << "-dimensional space; a projection only shortens distances, so a point drawn "
               "outside a circle is outside the ball, while one drawn inside may not be. "
               "P(r<sub>max</sub>, N) = "
            << short_number(json_double(meta, "precision_at_rmax"))
            << ", R(r<sub>min</sub>, N) = " << short_number(json_double(meta, "recall_at_rmin"))
            << ". From " << code(csv_path) << " and " << code(json_path)
            << " (extract --snapshot).";
    f.caption = caption.str();
    return f;
}

std::optional<Figure> contribution_scatter_figure(const std::string& prefix, const ExtractData& e,
                                                  const PerRegime<int>& chosen) {
    const std::string path = path_in(e.dir, schema::file::contributions);
    if (!fs::exists(path)) return std::nullopt;
    std::map<long long, int> wanted;  // layer << 32 | head → regime
    for (int r = 0; r < kRegimeCount; ++r)
        if (chosen[r] >= 0)
            wanted[(static_cast<long long>(e.run.rows[chosen[r]].layer) << 32) |
                   e.run.rows[chosen[r]].head] = r;
    PerRegime<std::ostringstream> dat;
    PerRegime<int> points{};
    stream_numeric_csv(
        path,
        schema::csv_column_names(schema::page::extract, schema::file::contributions,
                                 {"layer", "head", "pos", "contrib_norm", "cos_to_s"}),
        [&](const std::vector<double>& v) {
            const auto it =
                wanted.find((static_cast<long long>(v[0]) << 32) | static_cast<long long>(v[1]));
            if (it == wanted.end() || !(v[3] > 0)) return;
            dat[it->second] << format_double(v[2]) << ' ' << format_double(v[3]) << ' '
                            << format_double(v[4]) << '\n';
            ++points[it->second];
        });
    Figure f;
    f.id = prefix + "fig10_contribution_scatter";
    f.title = "Figure 10: contributions ‖α_i v_i‖ by position, coloured by cos(v_i, s(N))";
    std::vector<int> drawn;
    for (int r = 0; r < kRegimeCount; ++r)
        if (points[r] > 0) drawn.push_back(r);
    if (drawn.empty()) return std::nullopt;
    std::ostringstream s, heads;
    s << "  set multiplot layout 1," << drawn.size() << "\n  set logscale y\n"
      << "  set format y '10^{%L}'\n  set xlabel 'token position i'\n"
      << kGrid << "  set cbrange [-1:1]\n  set palette defined (-1 '" << palette::kCosineScale[0]
      << "', 0 '" << palette::kCosineScale[1] << "', 1 '" << palette::kCosineScale[2] << "')\n"
      << "  set cblabel 'cos(v_i, s(N))'\n  unset key\n";
    for (int r : drawn) {
        const compare::EmpiricalHead& h = e.run.rows[chosen[r]];
        f.data.push_back({f.id + "_" + regime_name(r) + ".dat", dat[r].str()});
        s << "  set title '" << regime_name(r) << " (layer " << h.layer << ", head " << h.head
          << ")' font ',12'\n  set ylabel '‖α_i v_i‖'\n  plot '" << f.id << "_" << regime_name(r)
          << ".dat' using 1:2:3 with points pt 7 ps 0.7 lc palette\n";
        heads << (heads.tellp() > 0 ? "; " : "") << regime_name(r) << " = layer " << h.layer
              << " head " << h.head;
    }
    s << "  unset multiplot\n";
    f.script = s.str();
    f.caption =
        "One point per token position of the snapshot window: its contribution "
        "‖α<sub>i</sub>v<sub>i</sub>‖ (log scale) coloured by the cosine between "
        "v<sub>i</sub> and s(N) at the snapshot's N, for the head of each regime with "
        "the largest normalised margin (as in Figure 7): " +
        heads.str() + ". Regimes without a head are left out. From " + code(path) +
        " (extract --snapshot), regimes from " + code(path_in(e.dir, schema::file::heads)) + ".";
    return f;
}

namespace {

// One (head, N) point of bounds.csv's `paper` rows: the margins over B and the Table-2 regime.
struct MarginPoint {
    int N = 0, regime = -1;  // regime: index into kTable2Regimes
    double delta = 0, delta0 = 0;
};

std::vector<MarginPoint> read_margins(const std::string& path) {
    CsvReader in(path, "a compare bounds.csv");
    const std::size_t variant = in.column("variant"), N = in.column("N"),
                      regime = in.column("regime"), delta = in.column("Delta"),
                      delta0 = in.column("Delta0"), B = in.column("B");
    std::vector<MarginPoint> points;
    while (in.next()) {
        const CsvRow& row = in.row();
        if (row.text(variant) != theory::to_string(theory::BoundVariant::paper)) continue;
        // Undefined margins (trivial rows) are empty.
        const auto value = [&](std::size_t column) {
            return row.text(column).empty() ? std::nan("") : row.number(column);
        };
        const double b = value(B), d = value(delta), d0 = value(delta0);
        if (!(b > 0) || !std::isfinite(b) || !std::isfinite(d) || !std::isfinite(d0)) continue;
        MarginPoint p;
        p.N = static_cast<int>(row.integer(N));
        for (int r = 0; r < 5; ++r)
            if (row.text(regime) == kTable2Regimes[r]) p.regime = r;
        p.delta = d / b, p.delta0 = d0 / b;
        points.push_back(p);
    }
    return points;
}

double quantile_of(std::vector<double> v, double q) {
    if (v.empty()) return std::nan("");
    std::sort(v.begin(), v.end());
    const double at = q * static_cast<double>(v.size() - 1);
    const std::size_t lo = static_cast<std::size_t>(std::floor(at));
    const std::size_t hi = std::min(lo + 1, v.size() - 1);
    return v[lo] + (at - static_cast<double>(lo)) * (v[hi] - v[lo]);
}

// .dat of the per-N medians: N, median Δ/B, median Δ0/B.
std::string median_lines(const std::vector<MarginPoint>& points) {
    std::map<int, std::pair<std::vector<double>, std::vector<double>>> by_n;
    for (const MarginPoint& p : points)
        by_n[p.N].first.push_back(p.delta), by_n[p.N].second.push_back(p.delta0);
    std::ostringstream dat;
    dat << "# N median_delta_over_B median_delta0_over_B\n";
    for (const auto& [N, v] : by_n)
        dat << N << ' ' << format_double(quantile_of(v.first, 0.5)) << ' '
            << format_double(quantile_of(v.second, 0.5)) << '\n';
    return dat.str();
}

std::string margin_script(const std::string& id, const std::vector<int>& regimes, double lo,
                          double hi, int max_n) {
    std::ostringstream s;
    s << "  set multiplot layout 1,2\n  set logscale x 2\n  set xrange [1:" << max_n << "]\n"
      << "  set yrange [" << format_double(lo) << ":" << format_double(hi) << "]\n"
      << kGrid << "  set xlabel 'N'\n  set key bottom left font ',10' spacing 0.9\n"
      << "  set arrow from 1,0 to " << max_n << ",0 nohead lc rgb '" << palette::kGuide << "'\n";
    for (int panel = 0; panel < 2; ++panel) {
        const int column = 2 + panel;
        s << "  set title '" << (panel == 0 ? "Δ/B" : "Δ_0/B") << "' font ',12'\n  set ylabel '"
          << (panel == 0 ? "Δ/B" : "Δ_0/B") << "'\n  plot ";
        for (std::size_t k = 0; k < regimes.size(); ++k)
            s << (k ? ", \\\n       " : "") << "'" << id << "_" << kTable2Regimes[regimes[k]]
              << ".dat' using 1:" << column << " with points pt 7 ps 0.4 lc rgb '"
              << palette::kSeries[regimes[k]] << "' title 'regime " << kTable2Regimes[regimes[k]]
              << "'";
        s << (regimes.empty() ? "" : ", \\\n       ") << "'" << id
          << "_median.dat' using 1:" << column << " with lines lw 2.5 lc rgb '" << palette::kNeutral
          << "' title 'median over heads'\n";
    }
    s << "  unset multiplot\n";
    return s.str();
}

}  // namespace

std::optional<Figure> margin_trend_figure(const std::string& prefix,
                                          const std::string& bounds_path) {
    const std::vector<MarginPoint> points = read_margins(bounds_path);
    if (points.empty()) return std::nullopt;
    Figure f;
    f.id = prefix + "table2_margin_trend";
    f.title = "Table 2's trend: the margins Δ/B and Δ_0/B against N, by regime";
    // At most ~20 000 points drawn (every k-th in file order); the medians use all of them.
    const std::size_t stride = std::max<std::size_t>(1, points.size() / 20000);
    std::vector<std::ostringstream> dat(5);
    std::vector<int> counts(5, 0);
    std::vector<double> all;
    int max_n = 2;
    for (std::size_t k = 0; k < points.size(); ++k) {
        const MarginPoint& p = points[k];
        all.push_back(p.delta), all.push_back(p.delta0);
        max_n = std::max(max_n, p.N);
        if (p.regime < 0) continue;
        ++counts[p.regime];
        if (k % stride == 0)
            dat[p.regime] << p.N << ' ' << format_double(p.delta) << ' ' << format_double(p.delta0)
                          << '\n';
    }
    std::vector<int> regimes;
    for (int r = 0; r < 5; ++r)
        if (counts[r] > 0) {
            regimes.push_back(r);
            f.data.push_back({f.id + "_" + kTable2Regimes[r] + ".dat", dat[r].str()});
        }
    f.data.push_back({f.id + "_median.dat", median_lines(points)});
    // The y range holds the central 96 % of the values (and 0), so a few extreme heads do not
    // flatten the trend; the caption says so.
    const double lo = std::min(0.0, quantile_of(all, 0.02)),
                 hi = std::max(0.0, quantile_of(all, 0.98));
    const double pad = 0.05 * std::max(hi - lo, 1e-12);
    f.script = margin_script(f.id, regimes, lo - pad, hi + pad, max_n);
    std::ostringstream caption;
    caption << "Each point is one (head, N) of the <code>paper</code> variant: the margins "
               "Δ/B (left) and Δ<sub>0</sub>/B (right) of Theorems 1–2, coloured by the "
               "Table-2 regime of N for that head's fitted profile (II: α<sub>(N)</sub> above "
               "p<sub>base</sub>(1+η); III: within the oscillation; IV: at p<sub>base</sub>; V: "
               "below it); the line is the median over heads. Table 2 predicts Δ/B large in II, "
               "declining slowly through III, often ≤ 0 in IV and small in V. Rows with an "
               "undefined margin (N = 1 with the sink on top) are left out; the y range shows "
               "the central 96 % of the values and 0"
            << (stride > 1 ? "; every " + std::to_string(stride) + "th point is drawn" : "")
            << ". Points per regime: ";
    for (std::size_t k = 0; k < regimes.size(); ++k)
        caption << (k ? ", " : "") << kTable2Regimes[regimes[k]] << " " << counts[regimes[k]];
    caption << ". From " << code(bounds_path) << ".";
    f.caption = caption.str();
    return f;
}

}  // namespace attngeo::reports::empirical
