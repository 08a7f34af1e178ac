// The empirical report's figures (the paper's Figures 2–8, 10, 11): each builds its data
// files, gnuplot script and caption from what the loaders aggregated (empirical_data.hpp).
// The column layouts of the multi-series .dat files are named beside the figure that writes
// them, so a script's `using` columns follow from the layout, not from arithmetic.
#include "reports/empirical_figures.hpp"

#include <algorithm>
#include <cmath>
#include <set>
#include <sstream>

#include "common/format.hpp"
#include "common/run_columns.hpp"
#include "common/run_schema.hpp"
#include "reports/html.hpp"
#include "reports/palette.hpp"
#include "reports/verdict.hpp"

namespace attngeo::reports::empirical {
namespace {

// Histogram of finite values: `bins` equal bins over [min, max] (widened when they agree).
struct Histogram {
    double lo = 0, width = 1;
    std::vector<int> counts;
};

Histogram histogram(const std::vector<double>& values, int bins) {
    Histogram h;
    double lo = 1e300, hi = -1e300;
    for (double v : values)
        if (std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
    if (lo > hi) lo = 0, hi = 1;
    if (hi - lo < 1e-12 * std::max(1.0, std::fabs(hi))) {
        const double pad = std::max(std::fabs(hi) * 0.05, 1e-3);
        lo -= pad;
        hi += pad;
    }
    h.lo = lo;
    h.width = (hi - lo) / bins;
    h.counts.assign(bins, 0);
    for (double v : values) {
        if (!std::isfinite(v)) continue;
        int b = static_cast<int>((v - lo) / h.width);
        h.counts[std::clamp(b, 0, bins - 1)]++;
    }
    return h;
}

// A y range for a histogram with headroom above its tallest bar.
std::string histogram_yrange(const Histogram& h) {
    const int tallest = h.counts.empty() ? 1 : *std::max_element(h.counts.begin(), h.counts.end());
    return "[0:" + std::to_string(static_cast<int>(std::max(1.0, std::ceil(tallest * 1.12)))) + "]";
}

std::string histogram_data(const Histogram& h, const std::string& what) {
    std::ostringstream dat;
    dat << "# " << what << ": bin_center bin_lo bin_hi heads\n";
    for (std::size_t b = 0; b < h.counts.size(); ++b) {
        const double from = h.lo + h.width * b;
        dat << format_double(from + h.width / 2) << ' ' << format_double(from) << ' '
            << format_double(from + h.width) << ' ' << h.counts[b] << '\n';
    }
    return dat.str();
}

// Side-by-side P and R panels over log-scale N up to x_max (Figure 5 and P/R by regime).
std::string pr_panels_preamble(int x_max, const char* bottom_margin) {
    std::ostringstream s;
    s << "  set multiplot layout 1,2\n  set logscale x 2\n  set xrange [1:" << x_max
      << "]\n  set yrange [-0.03:1.08]\n"
      << kGrid << "  set bmargin " << bottom_margin
      << "\n  set xlabel 'N (selected tokens, log scale)'\n";
    return s.str();
}

// Figure 5's .dat columns (gnuplot counts from 1): N, the measured P and R, four per bound
// variant in variant_names() order (P_lower, P_upper, R_lower, R_upper), then the
// simulation's P and R. `metric` is 0 for P, 1 for R.
struct PrColumns {
    static constexpr int kMeasured = 2;      // + metric
    static constexpr int kFirstVariant = 4;  // the first variant's P_lower
    static constexpr int kPerVariant = 4;
    static int lower(int variant, int metric) {
        return kFirstVariant + kPerVariant * variant + 2 * metric;
    }
    static int upper(int variant, int metric) { return lower(variant, metric) + 1; }
    static int simulation(int metric) {
        return kFirstVariant + kPerVariant * static_cast<int>(variant_names().size()) + metric;
    }
};

// Figure 5's data rows over every N any series has; counts per variant the N whose P or R
// envelope is inverted.
std::string pr_figure_data(const std::map<int, MeanPR>& measured, const PrOverlays& o,
                           std::map<std::string, int>& inverted, int& max_n) {
    std::map<int, bool> sizes;
    for (const auto& [N, m] : measured)
        sizes[N] = true;
    if (o.envelopes)
        for (const auto& [v, series] : *o.envelopes)
            for (const auto& [N, b] : series)
                sizes[N] = true;
    if (o.simulation)
        for (const auto& [N, m] : *o.simulation)
            sizes[N] = true;
    const double nan = std::nan("");
    std::ostringstream dat;
    dat << "# N P_mean R_mean then per variant (";
    for (std::size_t v = 0; v < variant_names().size(); ++v)
        dat << (v ? " " : "") << variant_names()[v];
    dat << "): P_lower P_upper R_lower R_upper; then sim_P sim_R\n";
    max_n = 1;
    for (const auto& [N, unused] : sizes) {
        max_n = std::max(max_n, N);
        const auto m = measured.find(N);
        dat << N << ' ' << format_double(m != measured.end() ? m->second.p : nan) << ' '
            << format_double(m != measured.end() ? m->second.r : nan);
        for (const std::string& v : variant_names()) {
            std::array<double, 4> b = {nan, nan, nan, nan};
            if (o.envelopes && o.envelopes->count(v) && o.envelopes->at(v).count(N))
                b = o.envelopes->at(v).at(N);
            inverted[v] += b[0] > b[1] || b[2] > b[3];
            for (double x : b)
                dat << ' ' << format_double(x);
        }
        const bool sim_here = o.simulation && o.simulation->count(N);
        dat << ' ' << format_double(sim_here ? o.simulation->at(N).p : nan) << ' '
            << format_double(sim_here ? o.simulation->at(N).r : nan) << '\n';
    }
    return dat.str();
}

// One variant's lower (dashed), upper (solid) and inverted-point curves on one panel.
std::string envelope_curves(int variant, int metric) {
    const int lower = PrColumns::lower(variant, metric), upper = PrColumns::upper(variant, metric);
    const char* colour = palette::variant(variant);
    std::ostringstream s;
    s << ", \\\n       '' using 1:" << lower << " with lines lw 1.5 dt 2 lc rgb '" << colour
      << "' notitle, \\\n       '' using 1:" << upper << " with lines lw 1.5 lc rgb '" << colour
      << "' title '" << variant_names()[variant] << "', \\\n       '' using 1:($" << lower << " > $"
      << upper << " ? $" << lower << " : 1/0) with points pt 13 ps 1.2 lc rgb '" << colour
      << "' notitle";
    return s.str();
}

std::string pr_figure_script(const std::string& id, const PrOverlays& o, int max_n) {
    std::ostringstream s;
    s << pr_panels_preamble(std::max(2, max_n), "7.5");
    for (int metric = 0; metric < 2; ++metric) {
        // One key for both panels, under them.
        s << (metric == 0 ? "  set key at screen 0.5, screen 0.015 center bottom horizontal "
                            "maxrows 2 font ',11' samplen 3 width 1\n"
                          : "  unset key\n");
        s << "  set ylabel '"
          << (metric == 0 ? "mean P(r_{max}, N) over heads" : "mean R(r_{min}, N) over heads")
          << "'\n  plot '" << id << ".dat' using 1:" << PrColumns::kMeasured + metric
          << " with lines lw 2.5 lc rgb '" << palette::kMeasured
          << "' title 'measured (mean over heads)'";
        if (o.envelopes) {
            for (std::size_t v = 0; v < variant_names().size(); ++v)
                if (o.envelopes->count(variant_names()[v]))
                    s << envelope_curves(static_cast<int>(v), metric);
            const std::string neutral = palette::kNeutral;
            s << ", \\\n       1/0 with points pt 13 ps 1.2 lc rgb '" << neutral
              << "' title 'inverted (lower > upper)'";
            s << ", \\\n       1/0 with lines lw 1.5 lc rgb '" << neutral
              << "' title 'upper envelope', \\\n       1/0 with lines lw 1.5 dt 2 lc rgb '"
              << neutral << "' title 'lower envelope'";
        }
        if (o.simulation) {
            s << ", \\\n       '' using 1:" << PrColumns::simulation(metric)
              << " with lines lw 2 dt 4 lc rgb '" << palette::kSimulation << "' title 'simulation'";
        }
        s << "\n";
    }
    s << "  unset multiplot\n  set bmargin\n";
    return s.str();
}

std::string pr_figure_caption(const std::string& measured_source, const PrOverlays& o,
                              std::map<std::string, int>& inverted) {
    std::ostringstream caption;
    caption << "Left Precision P(r<sub>max</sub>, N), right Recall R(r<sub>min</sub>, N): the "
               "mean over heads of the document means (blue), from "
            << code(measured_source) << " (P_mean, R_mean).";
    if (o.envelopes) {
        caption << " Per bound variant (all four), the mean over heads of the lower (dashed) "
                   "and upper (solid) envelopes "
                << "at the judged κ of each side (κ_edge where it has one; the *_edge columns)"
                << ", from " << code(o.envelope_source) << ".";
        std::vector<std::string> flipped;
        for (const std::string& v : variant_names())
            if (inverted[v] > 0)
                flipped.push_back(code(v) + " at " + std::to_string(inverted[v]) + " N");
        if (flipped.empty()) {
            caption << " No drawn envelope is inverted.";
        } else {
            caption << " <span class=\"bad\">Inverted (lower > upper; diamonds):</span> ";
            for (std::size_t i = 0; i < flipped.size(); ++i)
                caption << (i ? ", " : "") << flipped[i];
            caption << ".";
        }
    }
    if (o.simulation) {
        caption << " Magenta dash-dot: the simulation at the fitted parameters (E[P], E[R]), from "
                << code(o.simulation_source) << ".";
    }
    return caption.str();
}

// Figure 7's .dat columns: N, then the five diagnostics in diag.csv's order.
struct DiagnosticsColumns {
    static constexpr int kNorm = 2, kNormNoSink = 3, kNormNoLast = 4, kCosSink = 5, kCosLast = 6;
};

// How clearly a head belongs to its regime: the gap between m_last and its neighbours in the
// order of (m_sink, m_last, m_rest), over their sum.
double regime_margin(const compare::EmpiricalHead& h) {
    const double total = h.m_sink + h.m_last + h.m_rest;
    const double lo = std::min(h.m_sink, h.m_rest), hi = std::max(h.m_sink, h.m_rest);
    double gap = 0;
    switch (h.regime) {
        case theory::HeadRegime::retriever:
            gap = h.m_last - hi;
            break;
        case theory::HeadRegime::mixer:
            gap = std::min(h.m_last - lo, hi - h.m_last);
            break;
        case theory::HeadRegime::reset:
            gap = lo - h.m_last;
            break;
    }
    return total > 0 ? gap / total : gap;
}

// The head of each regime with the largest regime_margin (−1 where a regime has none).
PerRegime<int> typical_heads(const ExtractData& e) {
    PerRegime<int> chosen;
    chosen.fill(-1);
    for (std::size_t h = 0; h < e.run.rows.size(); ++h) {
        const int r = regime_index(e.run.rows[h].regime);
        if (chosen[r] < 0 || regime_margin(e.run.rows[h]) > regime_margin(e.run.rows[chosen[r]]))
            chosen[r] = static_cast<int>(h);
    }
    return chosen;
}

std::string diagnostics_script(const std::string& id, const ExtractData& e,
                               const PerRegime<int>& chosen, const std::vector<int>& regimes,
                               int max_n) {
    using C = DiagnosticsColumns;
    std::ostringstream s;
    s << "  set multiplot layout 2," << regimes.size()
      << "\n  set logscale x 2\n  set xrange [1:" << max_n << "]\n"
      << kGrid << "  set key top left font ',10' spacing 0.9 samplen 2.5\n";
    for (int r : regimes) {
        const compare::EmpiricalHead& h = e.run.rows[chosen[r]];
        s << "  set title '" << regime_name(r) << " (layer " << h.layer << ", head " << h.head
          << ")' font ',12'\n  set xlabel 'N'\n  set ylabel '‖s(N)‖'\n  set yrange [0:*]\n"
          << "  plot '" << id << "_" << regime_name(r) << ".dat' using 1:" << C::kNorm
          << " with lines lw 2 lc rgb '" << palette::kMeasured << "' title 's(N)', \\\n"
          << "       '' using 1:" << C::kNormNoSink << " with lines lw 1.5 dt 4 lc rgb '"
          << palette::kSink << "' title 'without sink', \\\n"
          << "       '' using 1:" << C::kNormNoLast << " with lines lw 1.5 dt 2 lc rgb '"
          << palette::kWithoutLast << "' title 'without last'\n";
    }
    for (int r : regimes) {
        s << "  unset title\n  set ylabel 'cosine'\n  set yrange [-1.05:1.05]\n"
          << "  plot '" << id << "_" << regime_name(r) << ".dat' using 1:" << C::kCosSink
          << " with lines lw 2 lc rgb '" << palette::kMeasured << "' title 'cos(s, v_0)', \\\n"
          << "       '' using 1:" << C::kCosLast << " with lines lw 1.5 dt 2 lc rgb '"
          << palette::kLastToken << "' title 'cos(s, v_L)'\n";
    }
    s << "  unset multiplot\n";
    return s.str();
}

std::string diagnostics_caption(const ExtractData& e, const PerRegime<int>& chosen,
                                const std::vector<int>& regimes, const std::string& diag) {
    std::ostringstream caption;
    caption << "For the head of each regime with the largest normalised margin between "
               "m<sub>last</sub> and its neighbours in the order of (m<sub>sink</sub>, "
               "m<sub>last</sub>, m<sub>rest</sub>): top, ‖s(N)‖ (solid) and the leave-one-out "
               "norms without the sink (dash-dot) and without the last token (dashed); bottom, "
               "cos(s(N), v<sub>0</sub>) (solid) and cos(s(N), v<sub>L</sub>) (dashed); log N. "
               "Heads: ";
    for (std::size_t k = 0; k < regimes.size(); ++k) {
        const compare::EmpiricalHead& h = e.run.rows[chosen[regimes[k]]];
        caption << (k ? "; " : "") << regime_name(regimes[k]) << " = layer " << h.layer << " head "
                << h.head << " (m<sub>sink</sub>, m<sub>last</sub>, m<sub>rest</sub> = "
                << short_number(h.m_sink) << ", " << short_number(h.m_last) << ", "
                << short_number(h.m_rest) << ")";
    }
    caption << ". From " << code(diag) << ", heads chosen from "
            << code(path_in(e.dir, schema::file::heads)) << ".";
    if (static_cast<int>(regimes.size()) < kRegimeCount)
        caption << " Regimes without any head are left out.";
    return caption.str();
}

int heads_of(const std::map<int, MeanPR>& series) {
    int heads = 0;
    for (const auto& [N, m] : series)
        heads = std::max(heads, m.heads);
    return heads;
}

// "Retriever (3 heads)" for a key entry.
std::string regime_title(int regime, int heads) {
    return std::string(regime_name(regime)) + " (" + std::to_string(heads) +
           (heads == 1 ? " head)" : " heads)");
}

// Figure 11's .dat columns: N, then per regime (P_mean, R_mean, heads).
int pr_by_regime_column(int regime, int metric) {
    return 2 + 3 * regime + metric;
}

}  // namespace

PerRegime<int> most_typical_heads(const ExtractData& e) {
    return typical_heads(e);
}

// Figure 2 (left): mean value norm by position over all heads, with the interquartile band.
Figure norm_figure(const std::string& prefix, const ExtractData& e) {
    Figure f;
    f.id = prefix + "fig2_norm_by_position";
    f.title = "Figure 2 (left): value-state norm by position, over all heads";
    std::ostringstream dat;
    dat << "# pos mean_norm q25 q75 heads (over heads of by_position.csv norm_mean)\n";
    for (int p = 0; p < e.positions; ++p) {
        dat << p << ' ' << format_double(e.norm.mean[p]) << ' ' << format_double(e.norm.q25[p])
            << ' ' << format_double(e.norm.q75[p]) << ' ' << e.norm.heads[p] << '\n';
    }
    f.data.push_back({f.id + ".dat", dat.str()});
    std::ostringstream s;
    s << "  set xlabel 'token position i'\n  set ylabel 'mean ‖v_i‖ over heads'\n"
      << kGrid << "  set key top right\n  set xrange [-" << std::max(1, e.positions / 50) << ":"
      << std::max(1, e.positions - 1) << "]\n"
      << "  plot '" << f.id << ".dat' using 1:3:4 with filledcurves lc rgb '"
      << palette::kMeasuredBand
      << "' fs transparent solid 0.5 title "
         "'interquartile range over heads', \\\n"
      << "       '' using 1:2 with lines lw 2 lc rgb '" << palette::kMeasured
      << "' title 'mean over heads', \\\n"
      << "       '' every ::0::0 using 1:2 with points pt 7 ps 1.6 lc rgb '" << palette::kSink
      << "' title "
         "'sink (position 0)'\n";
    f.script = s.str();
    std::ostringstream caption;
    caption << "Mean over all " << e.run.rows.size()
            << " heads of the document-mean value norm ‖v<sub>i</sub>‖ at each position "
               "(line) with the interquartile range over heads (band); the sink (position 0) "
               "is marked in red. Mean norm at the sink "
            << short_number(e.positions ? e.norm.mean[0] : std::nan(""))
            << ", median over positions ≥ 1 "
            << short_number(
                   quantile(std::vector<double>(e.norm.mean.begin() + std::min(1, e.positions),
                                                e.norm.mean.end()),
                            0.5))
            << ". From " << code(path_in(e.dir, schema::file::by_position)) << " (norm_mean).";
    f.caption = caption.str();
    return f;
}

// Figure 2 (right): histograms of the coefficient of variation of the non-sink norms.
Figure cv_figure(const std::string& prefix, const std::vector<double>& cv_positional,
                 const std::vector<double>& cv_pooled, const std::string& source,
                 const std::string& unit) {
    Figure f;
    f.id = prefix + "fig2_cv_histogram";
    f.title = "Figure 2 (right): coefficient of variation of the non-sink value norms";
    const int bins = std::clamp(static_cast<int>(std::sqrt(cv_positional.size()) * 2), 8, 40);
    const Histogram positional = histogram(cv_positional, bins),
                    pooled = histogram(cv_pooled, bins);
    f.data.push_back({f.id + "_positional.dat", histogram_data(positional, "cv_positional")});
    f.data.push_back({f.id + "_pooled.dat", histogram_data(pooled, "cv_pooled")});
    std::ostringstream s;
    s << "  set multiplot layout 1,2\n  set style fill solid 0.75 border lc rgb '"
      << palette::kBarBorder << "'\n"
      << kGrid << "  unset key\n  set ylabel 'heads'\n"
      << "  set title 'cv\\_positional' font ',12'\n  set yrange " << histogram_yrange(positional)
      << "\n  set xlabel 'CV over positions of the mean norm profile'\n"
      << "  plot '" << f.id << "_positional.dat' using 1:4:($3-$2) with boxes lc rgb '"
      << palette::kHistogram << "'\n"
      << "  set title 'cv\\_pooled' font ',12'\n  set yrange " << histogram_yrange(pooled)
      << "\n  set xlabel 'CV pooled over tokens'\n"
      << "  plot '" << f.id << "_pooled.dat' using 1:4:($3-$2) with boxes lc rgb '"
      << palette::kHistogramOther << "'\n"
      << "  unset title\n  unset multiplot\n";
    f.script = s.str();
    std::ostringstream caption;
    caption << "Over " << cv_positional.size() << ' ' << unit
            << ": left, the CV of the document-mean norm profile over positions i ≥ 1 "
               "(median "
            << short_number(quantile(cv_positional, 0.5))
            << "); right, the CV pooled over every token i ≥ 1 of every document (median "
            << short_number(quantile(cv_pooled, 0.5)) << "). From " << code(source)
            << " (cv_positional, cv_pooled).";
    f.caption = caption.str();
    return f;
}

// Figure 4: mean α by position over heads (log y), optionally with the fitted profile.
Figure alpha_figure(const std::string& prefix, const ExtractData* e,
                    const std::optional<FittedProfile>& fit, const std::string& fit_source) {
    Figure f;
    f.id = prefix + "fig4_alpha_by_position";
    f.title = "Figure 4: attention mass by position, over all heads";
    const int positions =
        std::max(e ? e->positions : 0, fit ? static_cast<int>(fit->alpha.size()) : 0);
    std::ostringstream dat;
    dat << "# pos mean_alpha q25 q75 fitted_alpha\n";
    for (int p = 0; p < positions; ++p) {
        const bool measured = e && p < e->positions;
        dat << p << ' ' << format_double(measured ? e->alpha.mean[p] : std::nan("")) << ' '
            << format_double(measured ? e->alpha.q25[p] : std::nan("")) << ' '
            << format_double(measured ? e->alpha.q75[p] : std::nan("")) << ' '
            << format_double(fit && p < static_cast<int>(fit->alpha.size()) ? fit->alpha[p]
                                                                            : std::nan(""))
            << '\n';
    }
    f.data.push_back({f.id + ".dat", dat.str()});
    std::ostringstream s;
    s << "  set logscale y\n  set format y '10^{%L}'\n  set xlabel 'token position i'\n"
      << "  set ylabel 'α_i'\n"
      << kGrid << "  set key top center font ',11'\n  set xrange [-" << std::max(1, positions / 50)
      << ":" << std::max(1, positions - 1) << "]\n  plot ";
    std::vector<std::string> curves;
    if (e) {
        curves.push_back("'" + f.id +
                         ".dat' using 1:($3>0?$3:1/0):($4>0?$4:1/0) with filledcurves lc rgb "
                         "'" +
                         std::string(palette::kMeasuredBand) +
                         "' fs transparent solid 0.5 title 'interquartile range over "
                         "heads'");
        curves.push_back("'" + f.id + ".dat' using 1:($2>0?$2:1/0) with lines lw 2 lc rgb '" +
                         std::string(palette::kMeasured) +
                         "' title "
                         "'mean over heads'");
    }
    if (fit) {
        curves.push_back("'" + f.id + ".dat' using 1:($5>0?$5:1/0) with lines lw 2 dt 2 lc rgb '" +
                         std::string(palette::kFit) +
                         "' "
                         "title 'fitted Assumption-3 profile'");
    }
    for (std::size_t c = 0; c < curves.size(); ++c)
        s << (c ? ", \\\n       " : "") << curves[c];
    s << "\n";
    f.script = s.str();
    std::ostringstream caption;
    if (e) {
        caption << "Mean over all " << e->run.rows.size()
                << " heads of the document-mean attention weight α<sub>i</sub> of the final "
                   "query (log scale), with the interquartile range over heads. Mean sink mass "
                << short_number(e->positions ? e->alpha.mean[0] : std::nan("")) << ". From "
                << code(path_in(e->dir, schema::file::by_position)) << " (alpha_mean).";
    }
    if (!e) caption << "The extract folder is missing, so only the fit is drawn.";
    if (fit) caption << " Dashed: " << fit->description << " from " << code(fit_source) << ".";
    f.caption = caption.str();
    return f;
}

std::optional<Figure> diagnostics_figure(const std::string& prefix, const ExtractData& e,
                                         std::string& note) {
    const PerRegime<int> chosen = typical_heads(e);
    std::vector<int> regimes;
    for (int r = 0; r < kRegimeCount; ++r)
        if (chosen[r] >= 0) regimes.push_back(r);
    if (regimes.empty()) {
        note = "<p class=\"warn\">Figure 7 not drawn: heads.csv lists no heads.</p>\n";
        return std::nullopt;
    }
    // N → the five diagnostics, per chosen head.
    PerRegime<std::map<int, std::array<double, 5>>> rows;
    const std::string diag = path_in(e.dir, schema::file::diagnostics);
    stream_numeric_csv(diag,
                       schema::csv_column_names(schema::page::extract, schema::file::diagnostics,
                                                {"layer", "head", "N", "s_norm", "s_norm_no_sink",
                                                 "s_norm_no_last", "cos_s_v0", "cos_s_vL"}),
                       [&](const std::vector<double>& v) {
                           const int h = e.find(static_cast<int>(v[0]), static_cast<int>(v[1]));
                           for (int r : regimes) {
                               if (chosen[r] == h)
                                   rows[r][static_cast<int>(v[2])] = {v[3], v[4], v[5], v[6], v[7]};
                           }
                       });
    Figure f;
    f.id = prefix + "fig7_regime_diagnostics";
    f.title = "Figure 7: geometry of s(N) for a typical head of each regime";
    int max_n = 2;
    for (int r : regimes) {
        std::ostringstream dat;
        const compare::EmpiricalHead& h = e.run.rows[chosen[r]];
        dat << "# " << regime_name(r) << " head: layer " << h.layer << " head " << h.head
            << "\n# N s_norm s_norm_no_sink s_norm_no_last cos_s_v0 cos_s_vL\n";
        for (const auto& [N, d] : rows[r]) {
            max_n = std::max(max_n, N);
            dat << N;
            for (double x : d)
                dat << ' ' << format_double(x);
            dat << '\n';
        }
        f.data.push_back({f.id + "_" + regime_name(r) + ".dat", dat.str()});
    }
    f.script = diagnostics_script(f.id, e, chosen, regimes, max_n);
    f.caption = diagnostics_caption(e, chosen, regimes, diag);
    return f;
}

Figure regime_counts_figure(const std::string& prefix, const std::map<int, PerRegime<int>>& counts,
                            const std::string& source, const std::string& boundary_note) {
    Figure f;
    f.id = prefix + "fig8_regimes_by_layer";
    f.title = "Figure 8: head regimes by layer";
    std::ostringstream dat;
    dat << "# layer";
    for (int r = 0; r < kRegimeCount; ++r)
        dat << ' ' << regime_name(r);
    dat << " (heads)\n";
    PerRegime<int> total{};
    for (const auto& [layer, c] : counts) {
        dat << layer;
        for (int r = 0; r < kRegimeCount; ++r) {
            dat << ' ' << c[r];
            total[r] += c[r];
        }
        dat << '\n';
    }
    f.data.push_back({f.id + ".dat", dat.str()});
    const int every = std::max<int>(1, static_cast<int>(counts.size()) / 16);
    std::ostringstream s;
    s << "  set style data histograms\n  set style histogram rowstacked\n"
      << "  set style fill solid 0.85 border lc rgb '" << palette::kBarBorder
      << "'\n  set boxwidth 0.8\n"
      << "  set xlabel 'layer'\n  set ylabel 'heads'\n  set yrange [0:*]\n"
      << "  set grid ytics lc rgb '" << palette::kGridLine << "'\n  set key outside right top\n"
      << "  plot '" << f.id << ".dat' using 2:xtic(int($0) % " << every
      << " == 0 ? stringcolumn(1) : '')";
    for (int r = 0; r < kRegimeCount; ++r)  // column 2 + r: regime r's count
        s << (r ? ", \\\n       '' using " + std::to_string(2 + r) : std::string()) << " lc rgb '"
          << palette::kRegime[r] << "' title '" << regime_name(r) << "'";
    s << "\n";
    f.script = s.str();
    std::ostringstream caption;
    caption << "Number of heads of each regime per layer (Retriever: m<sub>last</sub> the "
               "largest of the three magnitudes; Mixer: the middle one; Reset: the smallest). "
               "In all: ";
    for (int r = 0; r < kRegimeCount; ++r)
        caption << (r ? ", " : "") << total[r] << ' ' << regime_name(r);
    caption << "." << boundary_note << " From " << code(source) << ".";
    f.caption = caption.str();
    return f;
}

Figure contrib_figure(const std::string& prefix, const PerRegime<std::vector<double>>& curves,
                      const PerRegime<int>& heads, const std::string& source) {
    Figure f;
    f.id = prefix + "fig10_contribution_by_regime";
    f.title = "Figure 10: contribution ‖α_i v_i‖ by position, per regime";
    std::size_t positions = 0;
    for (const auto& c : curves)
        positions = std::max(positions, c.size());
    std::ostringstream dat;
    dat << "# pos";
    for (int r = 0; r < kRegimeCount; ++r)
        dat << ' ' << regime_name(r);
    dat << " (mean contrib over the heads of each regime)\n";
    for (std::size_t p = 0; p < positions; ++p) {
        dat << p;
        for (const auto& c : curves)
            dat << ' ' << format_double(p < c.size() ? c[p] : std::nan(""));
        dat << '\n';
    }
    f.data.push_back({f.id + ".dat", dat.str()});
    std::ostringstream s;
    s << "  set logscale y\n  set format y '10^{%L}'\n  set xlabel 'token position i'\n"
      << "  set ylabel 'mean ‖α_i v_i‖'\n"
      << kGrid << "  set key top center font ',11'\n  set xrange [-"
      << std::max<std::size_t>(1, positions / 50) << ":" << std::max<std::size_t>(1, positions - 1)
      << "]\n  plot ";
    bool first = true;
    for (int r = 0; r < kRegimeCount; ++r) {
        if (!heads[r]) continue;
        const int column = 2 + r;  // pos, then one column per regime
        s << (first ? "" : ", \\\n       ") << "'" << f.id << ".dat' using 1:($" << column << ">0?$"
          << column << ":1/0) with lines lw 2 lc rgb '" << palette::kRegime[r] << "' title '"
          << regime_title(r, heads[r]) << "'";
        first = false;
    }
    if (first) s << "1/0 notitle";
    s << "\n";
    f.script = s.str();
    f.caption =
        "Mean over the heads of each regime of the document-mean contribution "
        "‖α<sub>i</sub>v<sub>i</sub>‖ at each position (log scale); position 0 is the "
        "sink, the last position the query's own token. From " +
        code(source) + " (contrib_mean).";
    return f;
}

Figure pr_by_regime_figure(const std::string& prefix,
                           const PerRegime<std::map<int, MeanPR>>& series,
                           const std::string& source) {
    Figure f;
    f.id = prefix + "fig11_precision_recall_by_regime";
    f.title = "Figure 11: Precision and Recall against N, per regime";
    std::map<int, bool> sizes;
    for (const auto& m : series)
        for (const auto& [N, unused] : m)
            sizes[N] = true;
    std::ostringstream dat;
    dat << "# N then per regime (";
    for (int r = 0; r < kRegimeCount; ++r)
        dat << (r ? " " : "") << regime_name(r);
    dat << "): P_mean R_mean heads\n";
    int max_n = 2;
    for (const auto& [N, unused] : sizes) {
        max_n = std::max(max_n, N);
        dat << N;
        for (const auto& m : series) {
            const auto it = m.find(N);
            if (it == m.end()) {
                dat << " nan nan 0";
            } else {
                dat << ' ' << format_double(it->second.p) << ' ' << format_double(it->second.r)
                    << ' ' << it->second.heads;
            }
        }
        dat << '\n';
    }
    f.data.push_back({f.id + ".dat", dat.str()});
    std::ostringstream s;
    s << pr_panels_preamble(max_n, "6");
    for (int metric = 0; metric < 2; ++metric) {
        // One key for both panels, under them.
        s << (metric == 0 ? "  set key at screen 0.5, screen 0.015 center bottom horizontal "
                            "font ',12' samplen 3 width 2\n"
                          : "  unset key\n");
        s << "  set ylabel '" << (metric == 0 ? "mean P(r_{max}, N)" : "mean R(r_{min}, N)")
          << "'\n  plot ";
        bool first = true;
        for (int r = 0; r < kRegimeCount; ++r) {
            if (series[r].empty()) continue;
            s << (first ? "" : ", \\\n       ") << "'" << f.id
              << ".dat' using 1:" << pr_by_regime_column(r, metric) << " with lines lw 2 lc rgb '"
              << palette::kRegime[r] << "' title '" << regime_title(r, heads_of(series[r])) << "'";
            first = false;
        }
        if (first) s << "1/0 notitle";
        s << "\n";
    }
    s << "  unset multiplot\n  set bmargin\n";
    f.script = s.str();
    f.caption =
        "Mean over the heads of each regime of the document-mean Precision "
        "P(r<sub>max</sub>, N) (left) and Recall R(r<sub>min</sub>, N) (right); log N. "
        "From " +
        code(source) + ".";
    return f;
}

Figure pr_figure(const std::string& prefix, const std::map<int, MeanPR>& measured,
                 const std::string& measured_source, const PrOverlays& overlays) {
    Figure f;
    f.id = prefix + "fig5_precision_recall";
    f.title = overlays.envelopes ? "Figure 5: Precision and Recall against N with the envelopes"
                                 : "Figure 5: Precision and Recall against N (global means)";
    std::map<std::string, int> inverted;  // variant → N whose drawn P or R envelope is inverted
    int max_n = 1;
    f.data.push_back({f.id + ".dat", pr_figure_data(measured, overlays, inverted, max_n)});
    f.script = pr_figure_script(f.id, overlays, max_n);
    f.caption = pr_figure_caption(measured_source, overlays, inverted);
    return f;
}

// Figure 3 (left): histogram of the exponential fit's MAE over heads.
Figure mae_figure(const std::string& prefix, const std::vector<double>& mae,
                  const std::string& source, const std::string& unit) {
    Figure f;
    f.id = prefix + "fig3_mae_histogram";
    f.title = "Figure 3 (left): error of the exponential cosine fit over heads";
    const int bins = std::clamp(static_cast<int>(std::sqrt(mae.size()) * 2), 8, 40);
    const Histogram h = histogram(mae, bins);
    f.data.push_back({f.id + ".dat", histogram_data(h, "mae")});
    std::ostringstream s;
    s << "  set style fill solid 0.75 border lc rgb '" << palette::kBarBorder << "'\n"
      << kGrid << "  set xlabel 'MAE of e^{-βk} to the mean cos by lag'\n  set ylabel 'heads'\n"
      << "  set yrange " << histogram_yrange(h) << "\n  unset key\n  plot '" << f.id
      << ".dat' using 1:4:($3-$2) with boxes lc rgb '" << palette::kHistogram << "'\n";
    f.script = s.str();
    std::ostringstream caption;
    caption << "MAE = mean<sub>k</sub> |c(k) − e<sup>−βk</sup>| over the fitted lags, for "
            << mae.size() << ' ' << unit << ": median " << short_number(quantile(mae, 0.5))
            << ", mean " << short_number(mean_of(mae)) << ", 90th percentile "
            << short_number(quantile(mae, 0.9)) << ". From " << code(source) << " (mae).";
    f.caption = caption.str();
    return f;
}

// Figure 3 (right): measured cos by lag with both fitted models, for the heads at the 10th,
// 50th and 90th percentile of the MAE.
std::optional<Figure> fit_examples_figure(const std::string& prefix, const ExtractData& e,
                                          const std::vector<FitRow>& fits, int fit_lags,
                                          const std::string& fits_source) {
    std::vector<const FitRow*> usable;
    for (const auto& r : fits)
        if (std::isfinite(r.mae) && std::isfinite(r.beta)) usable.push_back(&r);
    if (usable.empty()) return std::nullopt;
    std::stable_sort(usable.begin(), usable.end(),
                     [](const FitRow* a, const FitRow* b) { return a->mae < b->mae; });
    const double quantiles[3] = {0.1, 0.5, 0.9};
    std::array<const FitRow*, 3> picked{};
    for (int k = 0; k < 3; ++k)
        picked[k] = usable[static_cast<std::size_t>(
            std::lround(quantiles[k] * static_cast<double>(usable.size() - 1)))];
    std::array<std::map<int, double>, 3> measured;
    for (int k = 0; k < 3; ++k) {
        const int h = e.find(picked[k]->layer, picked[k]->head);
        if (h < 0) continue;
        const auto& cosines = e.run.rows[static_cast<std::size_t>(h)].cos_by_lag;  // lags 1..K
        for (std::size_t lag = 1; lag <= cosines.size(); ++lag)
            measured[k][static_cast<int>(lag)] = cosines[lag - 1];
    }
    Figure f;
    f.id = prefix + "fig3_fit_examples";
    f.title = "Figure 3 (right): cosine by lag and the fitted decay, three example heads";
    int max_lag = 1;
    for (const auto& m : measured)
        if (!m.empty()) max_lag = std::max(max_lag, m.rbegin()->first);
    const int shown = std::max(2, std::min(max_lag, 2 * fit_lags));
    for (int k = 0; k < 3; ++k) {
        const FitRow& r = *picked[k];
        std::ostringstream dat;
        dat << "# layer " << r.layer << " head " << r.head << " (MAE percentile "
            << quantiles[k] * 100 << ")\n# lag cos_mean exp(-beta k) offset_model\n";
        for (int lag = 1; lag <= shown; ++lag) {
            const auto it = measured[k].find(lag);
            const double offset = r.c_inf + (1 - r.c_inf) * std::exp(-r.beta_offset * lag);
            dat << lag << ' ' << format_double(it == measured[k].end() ? std::nan("") : it->second)
                << ' ' << format_double(std::exp(-r.beta * lag)) << ' ' << format_double(offset)
                << '\n';
        }
        f.data.push_back({f.id + "_" + std::to_string(k) + ".dat", dat.str()});
    }
    std::ostringstream s;
    s << "  set multiplot layout 1,3\n  set xrange [0:" << shown << "]\n  set autoscale y\n"
      << "  set offsets 0, 0, graph 0.1, graph 0.05\n"
      << kGrid << "  set key top right font ',10' spacing 0.9 samplen 2.5\n  set xlabel 'lag k'\n";
    if (fit_lags < shown)
        s << "  set arrow 1 from " << fit_lags << ", graph 0 to " << fit_lags
          << ", graph 1 nohead dt 3 lc rgb '" << palette::kGuide << "'\n";
    for (int k = 0; k < 3; ++k) {
        const FitRow& r = *picked[k];
        s << "  set title 'layer " << r.layer << ", head " << r.head << ": MAE "
          << short_number(r.mae) << "' font ',11'\n  set ylabel '"
          << (k == 0 ? "mean cos(v_i, v_{i+k})" : "") << "'\n  plot '" << f.id << "_" << k
          << ".dat' using 1:2 with points pt 7 ps 0.5 lc rgb '" << palette::kNeutral
          << "' title 'measured', \\\n"
          << "       '' using 1:3 with lines lw 2 lc rgb '" << palette::kMeasured
          << "' title 'e^{-βk}', \\\n"
          << "       '' using 1:4 with lines lw 1.5 dt 2 lc rgb '" << palette::kFit
          << "' title 'offset model'\n";
    }
    s << "  unset arrow 1\n  set offsets\n  unset multiplot\n";
    f.script = s.str();
    std::ostringstream caption;
    caption << "Measured mean cos(v<sub>i</sub>, v<sub>i+k</sub>) by lag (points, from "
            << code(path_in(e.dir, schema::file::cos_by_lag))
            << ") with the fitted e<sup>−βk</sup> (solid) and the offset "
               "model c<sub>∞</sub> + (1 − c<sub>∞</sub>)e<sup>−βk</sup> (dashed), from "
            << code(fits_source)
            << ", for the heads at the 10th, 50th and 90th percentile of the MAE (left to "
               "right). The fit used lags 1.."
            << fit_lags << (fit_lags < shown ? " (dotted line)" : "") << ".";
    f.caption = caption.str();
    return f;
}

// Figure 6: corr(R(r_min, N), ρ0) across heads against N, with the bootstrap interval.
Figure corr_figure(const std::string& prefix, const CsvTable& corr,
                   const nlohmann::json& manifest) {
    Figure f;
    f.id = prefix + "fig6_corr_recall_rho0";
    f.title = "Figure 6: correlation of Recall with ρ0 across heads";
    std::ostringstream dat;
    dat << "# N corr ci_lo ci_hi heads head_lo head_hi partial_layer (nan: undefined, an empty "
           "field in corr_rho0.csv)\n";
    int max_n = 2, undefined = 0, intervals = 0, head_level = 0, partials = 0;
    for (std::size_t r = 0; r < corr.rows.size(); ++r) {
        const int N = static_cast<int>(corr.number(r, "N"));
        max_n = std::max(max_n, N);
        const double value = optional_number(corr, r, "corr"),
                     lo = optional_number(corr, r, "ci_lo"), hi = optional_number(corr, r, "ci_hi");
        undefined += std::isnan(value);
        intervals += !std::isnan(lo) && !std::isnan(hi);
        const double head_lo = optional_number(corr, r, "head_lo"),
                     head_hi = optional_number(corr, r, "head_hi"),
                     partial = optional_number(corr, r, "partial_layer");
        head_level += !std::isnan(head_lo) && !std::isnan(head_hi);
        partials += !std::isnan(partial);
        dat << N << ' ' << format_double(value) << ' ' << format_double(lo) << ' '
            << format_double(hi) << ' ' << corr.text(r, "heads") << ' ' << format_double(head_lo)
            << ' ' << format_double(head_hi) << ' ' << format_double(partial) << '\n';
    }
    f.data.push_back({f.id + ".dat", dat.str()});
    std::ostringstream s;
    s << "  set logscale x 2\n  set xrange [1:" << max_n << "]\n  set yrange [-1.05:1.05]\n"
      << kGrid << "  set key bottom left\n  set xlabel 'N (selected tokens, log scale)'\n"
      << "  set ylabel 'corr(R(r_{min}, N), ρ_0)'\n"
      << "  set arrow 1 from 1, 0 to " << max_n << ", 0 nohead lc rgb '" << palette::kGuide << "'\n"
      << "  plot ";
    // gnuplot stops on a plot whose points are all undefined, so such series are left out.
    if (intervals > 0)
        s << "'" << f.id << ".dat' using 1:3:4 with filledcurves lc rgb '" << palette::kMeasuredBand
          << "' fs transparent solid 0.5 "
             "title '95% bootstrap interval', \\\n       ";
    if (head_level > 0)
        s << "'" << f.id << ".dat' using 1:6 with lines dt 2 lw 1.5 lc rgb '" << palette::kMeasured
          << "' title 'heads as the sample (simultaneous over N)', \\\n       '" << f.id
          << ".dat' using 1:7 with lines dt 2 lw 1.5 lc rgb '" << palette::kMeasured
          << "' notitle, \\\n       ";
    if (partials > 0)
        s << "'" << f.id << ".dat' using 1:8 with lines dt 3 lw 2 lc rgb '" << palette::kGuide
          << "' title 'partial given the layer', \\\n       ";
    if (undefined < static_cast<int>(corr.rows.size()))
        s << "'" << f.id << ".dat' using 1:2 with lines lw 2.5 lc rgb '" << palette::kMeasured
          << "' title 'Pearson correlation'\n";
    else
        s << "0 with lines lc rgb '" << palette::kGuide << "' title 'no defined correlation'\n";
    s << "  unset arrow 1\n";
    f.script = s.str();
    // compare's manifest says what a unit is and, without intervals, why (too few documents).
    const nlohmann::json& correlation = manifest.at("correlation");
    const std::string units = correlation.at("units").get<std::string>();
    const std::string bootstrap = correlation.at("bootstrap").get<std::string>();
    std::string interval;
    if (intervals > 0) {
        interval = "with a 95% percentile bootstrap interval over documents (" +
                   html_escape(corr.text(0, "replicates")) + " replicates; band)";
    } else {
        interval = "bootstrap interval n/a";
        if (bootstrap.find("needs") != std::string::npos) interval += ": " + html_escape(bootstrap);
    }
    f.caption = "Pearson correlation across " + html_escape(units) +
                " of the mean Recall R(r<sub>min</sub>, N) and ρ<sub>0</sub> (mean "
                "cos(v<sub>0</sub>, v<sub>j</sub>)), " +
                interval +
                "; dashed: the interval with the heads as the sample (Fisher z, simultaneous "
                "over the N shown), which the claims table's C2 reads; dotted: the partial "
                "correlation given the layer. N where Recall does not vary across heads have no "
                "correlation" +
                (undefined ? " (n/a at " + std::to_string(undefined) + " of " +
                                 std::to_string(corr.rows.size()) + " N)"
                           : std::string()) +
                ". From " + code(corr.path) + ".";
    return f;
}

}  // namespace attngeo::reports::empirical
