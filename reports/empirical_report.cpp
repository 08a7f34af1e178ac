// Sections for extract and compare folders: the paper's empirical figures (Figures 2–8, 10, 11)
// and tables (model facts, per-layer summary, fitted parameters, κ, envelope agreement). The
// extract files reach 10^6 rows for 7B models, so they are streamed and aggregated over heads
// before anything is plotted: no figure draws one line per head.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <unordered_map>

#include "common/errors.hpp"
#include "common/format.hpp"
#include "common/json_file.hpp"
#include "reports/csv_table.hpp"
#include "reports/report.hpp"
#include "reports/verdict.hpp"
#include "theory/models.hpp"

namespace fs = std::filesystem;

namespace attngeo::reports {
namespace {

// The bound variants in theory::bound_variants() order, coloured as in reports/verdict.cpp.
const char* kVariants[4] = {"paper", "exact-mean", "scale-invariant", "corrected"};
const char* kVariantColor[4] = {"#d95f02", "#1b9e77", "#7570b3", "#66a61e"};
const char* kRegimes[3] = {"Retriever", "Mixer", "Reset"};
const char* kRegimeColor[3] = {"#e6550d", "#3182bd", "#31a354"};
const char* kGrid = "  set grid lc rgb '#e5e5e5'\n";

std::string path_in(const std::string& dir, const std::string& name) {
    return (fs::path(dir) / name).string();
}

std::string code(const std::string& text) {
    return "<code>" + html_escape(text) + "</code>";
}

int regime_index(const std::string& name, const std::string& file) {
    for (int r = 0; r < 3; ++r)
        if (name == kRegimes[r]) return r;
    throw InputError("'" + file + "': regime '" + name + "' is none of Retriever, Mixer, Reset");
}

// Streams the named numeric columns of a CSV row by row (CsvTable would keep every field of
// a million-row file as a string). Throws InputError naming the file on a missing column, a
// ragged line or a field that is not a number.
void stream_numeric_csv(const std::string& path, const std::vector<std::string>& columns,
                        const std::function<void(const std::vector<double>&)>& row) {
    std::ifstream in(path);
    if (!in) throw InputError("'" + path + "': cannot open");
    std::string line;
    if (!std::getline(in, line))
        throw InputError("'" + path + "': empty file, expected a CSV header");
    std::vector<std::string> header;
    {
        std::istringstream fields(line);
        std::string field;
        while (std::getline(fields, field, ','))
            header.push_back(field);
    }
    std::vector<std::size_t> wanted;
    for (const auto& name : columns) {
        const auto at = std::find(header.begin(), header.end(), name);
        if (at == header.end()) throw InputError("'" + path + "': no column '" + name + "'");
        wanted.push_back(static_cast<std::size_t>(at - header.begin()));
    }
    std::vector<std::size_t> starts;
    std::vector<double> values(columns.size());
    long number = 1;
    while (std::getline(in, line)) {
        ++number;
        if (line.empty()) continue;
        starts.assign(1, 0);
        for (std::size_t i = 0; i < line.size(); ++i)
            if (line[i] == ',') starts.push_back(i + 1);
        if (starts.size() != header.size()) {
            throw InputError("'" + path + "' line " + std::to_string(number) + ": " +
                             std::to_string(starts.size()) + " fields, expected " +
                             std::to_string(header.size()));
        }
        for (std::size_t c = 0; c < wanted.size(); ++c) {
            const std::size_t begin = starts[wanted[c]];
            const std::size_t end =
                wanted[c] + 1 < starts.size() ? starts[wanted[c] + 1] - 1 : line.size();
            const char* first = line.c_str() + begin;
            char* stop = nullptr;
            values[c] = std::strtod(first, &stop);
            if (end == begin || stop != line.c_str() + end) {
                throw InputError("'" + path + "' line " + std::to_string(number) + " column " +
                                 columns[c] + ": '" + line.substr(begin, end - begin) +
                                 "' is not a number");
            }
        }
        row(values);
    }
}

// Quantile q of the finite values (linear interpolation); nan when there are none.
double quantile(std::vector<double> values, double q) {
    values.erase(
        std::remove_if(values.begin(), values.end(), [](double v) { return !std::isfinite(v); }),
        values.end());
    if (values.empty()) return std::nan("");
    std::sort(values.begin(), values.end());
    const double at = q * static_cast<double>(values.size() - 1);
    const auto below = static_cast<std::size_t>(std::floor(at));
    const std::size_t above = std::min(below + 1, values.size() - 1);
    return values[below] + (at - static_cast<double>(below)) * (values[above] - values[below]);
}

double mean_of(const std::vector<double>& values) {
    double sum = 0;
    int count = 0;
    for (double v : values)
        if (std::isfinite(v)) sum += v, ++count;
    return count ? sum / count : std::nan("");
}

// Mean and interquartile range over heads, per position.
struct PositionStats {
    std::vector<double> mean, q25, q75;  // [positions]
    std::vector<int> heads;              // [positions]
};

PositionStats position_stats(const std::vector<std::vector<double>>& by_position) {
    PositionStats s;
    for (const auto& values : by_position) {
        s.mean.push_back(mean_of(values));
        s.q25.push_back(quantile(values, 0.25));
        s.q75.push_back(quantile(values, 0.75));
        s.heads.push_back(static_cast<int>(values.size()));
    }
    return s;
}

// Running means keyed by an integer (N or position).
struct MeanPR {
    double p = 0, r = 0;
    int heads = 0;
};

struct HeadRow {
    int layer = 0, head = 0, kv_head = 0, regime = 0;
    double cv_positional = 0, cv_pooled = 0, lambda = 0, rho0 = 0, norm_median = 0;
    double m_sink = 0, m_last = 0, m_rest = 0;
    double regime_margin_column = std::nan("");  // heads.csv regime_margin (nan: not recorded)
};

// A head whose regime_margin (the ratio of the two magnitudes deciding its label) is below
// this would change regime if one of them moved by 10%.
constexpr double kNearBoundaryMargin = 1.1;

// Missing values (an empty field, an undefined statistic) read "n/a" in the report.
std::string number_or_na(double x) {
    return std::isnan(x) ? "n/a" : short_number(x);
}

// A number from a CSV field that may be empty (undefined): NaN when empty.
double optional_number(const CsvTable& table, std::size_t row, const std::string& column) {
    return table.text(row, column).empty() ? std::nan("") : table.number(row, column);
}

// "Near the boundary (regime_margin < 1.1): … per regime and overall", from (regime, margin)
// pairs; "" when no margin was recorded (folders written before the column existed).
std::string near_boundary_text(const std::vector<std::pair<int, double>>& regime_margins) {
    std::array<int, 3> near{}, total{};
    int recorded = 0;
    for (const auto& [regime, margin] : regime_margins) {
        if (std::isnan(margin)) continue;
        ++recorded;
        ++total[regime];
        near[regime] += margin < kNearBoundaryMargin;
    }
    if (recorded == 0) return "";
    std::ostringstream out;
    out << " Near the boundary (regime_margin &lt; " << short_number(kNearBoundaryMargin)
        << ": the two magnitudes deciding the label within 10%): ";
    for (int r = 0; r < 3; ++r)
        out << near[r] << " of " << total[r] << ' ' << kRegimes[r] << ", ";
    out << near[0] + near[1] + near[2] << " of " << recorded << " overall.";
    return out.str();
}

// How clearly a head belongs to its regime: the gap between m_last and its neighbours in the
// order of (m_sink, m_last, m_rest), over their sum.
double regime_margin(const HeadRow& h) {
    const double total = h.m_sink + h.m_last + h.m_rest;
    const double lo = std::min(h.m_sink, h.m_rest), hi = std::max(h.m_sink, h.m_rest);
    double gap = 0;
    if (h.regime == 0) gap = h.m_last - hi;
    if (h.regime == 1) gap = std::min(h.m_last - lo, hi - h.m_last);
    if (h.regime == 2) gap = lo - h.m_last;
    return total > 0 ? gap / total : gap;
}

// Everything the extract figures need, aggregated over heads.
struct ExtractData {
    std::string dir;
    nlohmann::json manifest;
    std::vector<HeadRow> heads;
    std::unordered_map<long long, int> head_index;  // layer << 32 | head → heads[]
    PositionStats norm, alpha;
    std::array<std::vector<double>, 3> contrib_by_regime;  // [regime][positions]
    std::array<int, 3> regime_heads{};
    std::map<int, MeanPR> pr_global;
    std::array<std::map<int, MeanPR>, 3> pr_by_regime;
    int positions = 0;
    int max_n = 1;

    int find(int layer, int head) const {
        const auto it = head_index.find((static_cast<long long>(layer) << 32) | head);
        return it == head_index.end() ? -1 : it->second;
    }
};

ExtractData load_extract(const std::string& dir) {
    ExtractData e;
    e.dir = dir;
    {
        std::ifstream in(path_in(dir, "manifest.json"));
        if (in) {
            try {
                in >> e.manifest;
            } catch (const std::exception&) {
                throw InputError("'" + path_in(dir, "manifest.json") + "': not valid JSON");
            }
        }
    }
    const std::string heads_path = path_in(dir, "heads.csv");
    const CsvTable heads = read_csv_table(heads_path);
    for (std::size_t r = 0; r < heads.rows.size(); ++r) {
        HeadRow h;
        h.layer = static_cast<int>(heads.number(r, "layer"));
        h.head = static_cast<int>(heads.number(r, "head"));
        h.regime = regime_index(heads.text(r, "regime"), heads_path);
        h.cv_positional = heads.number(r, "cv_positional");
        h.cv_pooled = heads.number(r, "cv_pooled");
        h.lambda = heads.number(r, "lambda");
        h.rho0 = heads.number(r, "rho0");
        h.norm_median = heads.number(r, "norm_median");
        h.m_sink = heads.number(r, "m_sink");
        h.m_last = heads.number(r, "m_last");
        h.m_rest = heads.number(r, "m_rest");
        if (heads.has_column("kv_head")) h.kv_head = static_cast<int>(heads.number(r, "kv_head"));
        if (heads.has_column("regime_margin"))
            h.regime_margin_column = heads.number(r, "regime_margin");
        e.head_index[(static_cast<long long>(h.layer) << 32) | h.head] =
            static_cast<int>(e.heads.size());
        e.regime_heads[h.regime]++;
        e.heads.push_back(h);
    }

    std::vector<std::vector<double>> norms, alphas;
    std::array<std::vector<double>, 3> contrib_sum;
    std::array<std::vector<int>, 3> contrib_count;
    const std::string by_position = path_in(dir, "by_position.csv");
    stream_numeric_csv(by_position,
                       {"layer", "head", "pos", "norm_mean", "alpha_mean", "contrib_mean"},
                       [&](const std::vector<double>& v) {
                           const double pos = v[2];
                           if (!(pos >= 0 && pos < 1e8)) {
                               throw InputError("'" + by_position + "': position " +
                                                format_double(pos) + " out of range");
                           }
                           const auto p = static_cast<std::size_t>(pos);
                           if (p >= norms.size()) {
                               norms.resize(p + 1);
                               alphas.resize(p + 1);
                               for (int r = 0; r < 3; ++r) {
                                   contrib_sum[r].resize(p + 1, 0.0);
                                   contrib_count[r].resize(p + 1, 0);
                               }
                           }
                           norms[p].push_back(v[3]);
                           alphas[p].push_back(v[4]);
                           const int h = e.find(static_cast<int>(v[0]), static_cast<int>(v[1]));
                           if (h >= 0 && std::isfinite(v[5])) {
                               contrib_sum[e.heads[h].regime][p] += v[5];
                               contrib_count[e.heads[h].regime][p]++;
                           }
                       });
    e.positions = static_cast<int>(norms.size());
    e.norm = position_stats(norms);
    e.alpha = position_stats(alphas);
    for (int r = 0; r < 3; ++r) {
        e.contrib_by_regime[r].resize(norms.size());
        for (std::size_t p = 0; p < norms.size(); ++p)
            e.contrib_by_regime[r][p] =
                contrib_count[r][p] ? contrib_sum[r][p] / contrib_count[r][p] : std::nan("");
    }

    stream_numeric_csv(path_in(dir, "pr.csv"), {"layer", "head", "N", "P_mean", "R_mean"},
                       [&](const std::vector<double>& v) {
                           const int N = static_cast<int>(v[2]);
                           e.max_n = std::max(e.max_n, N);
                           auto add = [&](MeanPR& m) {
                               m.p += v[3];
                               m.r += v[4];
                               m.heads++;
                           };
                           add(e.pr_global[N]);
                           const int h = e.find(static_cast<int>(v[0]), static_cast<int>(v[1]));
                           if (h >= 0) add(e.pr_by_regime[e.heads[h].regime][N]);
                       });
    auto finish = [](std::map<int, MeanPR>& series) {
        for (auto& [N, m] : series)
            if (m.heads) m.p /= m.heads, m.r /= m.heads;
    };
    finish(e.pr_global);
    for (auto& series : e.pr_by_regime)
        finish(series);
    return e;
}

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

// ---- Figures shared by the extract and compare sections ------------------------------------

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
      << "  plot '" << f.id
      << ".dat' using 1:3:4 with filledcurves lc rgb '#9ecae1' fs transparent solid 0.5 title "
         "'interquartile range over heads', \\\n"
      << "       '' using 1:2 with lines lw 2 lc rgb '#08519c' title 'mean over heads', \\\n"
      << "       '' every ::0::0 using 1:2 with points pt 7 ps 1.6 lc rgb '#b00020' title "
         "'sink (position 0)'\n";
    f.script = s.str();
    std::ostringstream caption;
    caption << "Mean over all " << e.heads.size()
            << " heads of the document-mean value norm ‖v<sub>i</sub>‖ at each position "
               "(line) with the interquartile range over heads (band); the sink (position 0) "
               "is marked in red. Mean norm at the sink "
            << short_number(e.positions ? e.norm.mean[0] : std::nan(""))
            << ", median over positions ≥ 1 "
            << short_number(
                   quantile(std::vector<double>(e.norm.mean.begin() + std::min(1, e.positions),
                                                e.norm.mean.end()),
                            0.5))
            << ". From " << code(path_in(e.dir, "by_position.csv")) << " (norm_mean).";
    f.caption = caption.str();
    return f;
}

// Figure 2 (right): histograms of the coefficient of variation of the non-sink norms.
Figure cv_figure(const std::string& prefix, const std::vector<double>& cv_positional,
                 const std::vector<double>& cv_pooled, const std::string& source,
                 const std::string& unit = "heads") {
    Figure f;
    f.id = prefix + "fig2_cv_histogram";
    f.title = "Figure 2 (right): coefficient of variation of the non-sink value norms";
    const int bins = std::clamp(static_cast<int>(std::sqrt(cv_positional.size()) * 2), 8, 40);
    const Histogram positional = histogram(cv_positional, bins),
                    pooled = histogram(cv_pooled, bins);
    f.data.push_back({f.id + "_positional.dat", histogram_data(positional, "cv_positional")});
    f.data.push_back({f.id + "_pooled.dat", histogram_data(pooled, "cv_pooled")});
    std::ostringstream s;
    s << "  set multiplot layout 1,2\n  set style fill solid 0.75 border lc rgb '#ffffff'\n"
      << kGrid << "  unset key\n  set ylabel 'heads'\n"
      << "  set title 'cv\\_positional' font ',12'\n  set yrange " << histogram_yrange(positional)
      << "\n  set xlabel 'CV over positions of the mean norm profile'\n"
      << "  plot '" << f.id << "_positional.dat' using 1:4:($3-$2) with boxes lc rgb '#3182bd'\n"
      << "  set title 'cv\\_pooled' font ',12'\n  set yrange " << histogram_yrange(pooled)
      << "\n  set xlabel 'CV pooled over tokens'\n"
      << "  plot '" << f.id << "_pooled.dat' using 1:4:($3-$2) with boxes lc rgb '#e6550d'\n"
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

// A fitted Assumption-3 profile to overlay on Figure 4: α at positions 0..L.
struct FittedProfile {
    std::vector<double> alpha;
    std::string description;  // HTML
};

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
                         "'#9ecae1' fs transparent solid 0.5 title 'interquartile range over "
                         "heads'");
        curves.push_back("'" + f.id +
                         ".dat' using 1:($2>0?$2:1/0) with lines lw 2 lc rgb '#08519c' title "
                         "'mean over heads'");
    }
    if (fit) {
        curves.push_back("'" + f.id +
                         ".dat' using 1:($5>0?$5:1/0) with lines lw 2 dt 2 lc rgb '#d95f02' "
                         "title 'fitted Assumption-3 profile'");
    }
    for (std::size_t c = 0; c < curves.size(); ++c)
        s << (c ? ", \\\n       " : "") << curves[c];
    s << "\n";
    f.script = s.str();
    std::ostringstream caption;
    if (e) {
        caption << "Mean over all " << e->heads.size()
                << " heads of the document-mean attention weight α<sub>i</sub> of the final "
                   "query (log scale), with the interquartile range over heads. Mean sink mass "
                << short_number(e->positions ? e->alpha.mean[0] : std::nan("")) << ". From "
                << code(path_in(e->dir, "by_position.csv")) << " (alpha_mean).";
    }
    if (!e) caption << "The extract folder is missing, so only the fit is drawn.";
    if (fit) caption << " Dashed: " << fit->description << " from " << code(fit_source) << ".";
    f.caption = caption.str();
    return f;
}

// Envelope lines for Figure 5: variant → N → (P_lower, P_upper, R_lower, R_upper).
using Envelopes = std::map<std::string, std::map<int, std::array<double, 4>>>;

// Side-by-side P and R panels over log-scale N up to x_max (Figure 5 and P/R by regime).
std::string pr_panels_preamble(int x_max, const char* bottom_margin) {
    std::ostringstream s;
    s << "  set multiplot layout 1,2\n  set logscale x 2\n  set xrange [1:" << x_max
      << "]\n  set yrange [-0.03:1.08]\n"
      << kGrid << "  set bmargin " << bottom_margin
      << "\n  set xlabel 'N (selected tokens, log scale)'\n";
    return s.str();
}
// Figure 5: global mean P and R against N, optionally with envelopes and a simulation.
Figure pr_figure(const std::string& prefix, const std::map<int, MeanPR>& measured,
                 const std::string& measured_source, const Envelopes* envelopes,
                 const std::string& envelope_source, const std::map<int, MeanPR>* simulation,
                 const std::string& simulation_source, bool envelopes_at_star = false) {
    Figure f;
    f.id = prefix + "fig5_precision_recall";
    f.title = envelopes ? "Figure 5: Precision and Recall against N with the envelopes"
                        : "Figure 5: Precision and Recall against N (global means)";
    std::map<int, bool> sizes;
    for (const auto& [N, m] : measured)
        sizes[N] = true;
    if (envelopes)
        for (const auto& [v, series] : *envelopes)
            for (const auto& [N, b] : series)
                sizes[N] = true;
    if (simulation)
        for (const auto& [N, m] : *simulation)
            sizes[N] = true;
    const double nan = std::nan("");
    std::ostringstream dat;
    std::map<std::string, int> inverted;  // variant → N whose drawn P or R envelope is inverted
    dat << "# N P_mean R_mean then per variant (paper exact-mean scale-invariant corrected): "
           "P_lower "
           "P_upper R_lower R_upper; then sim_P sim_R\n";
    int max_n = 1;
    for (const auto& [N, unused] : sizes) {
        max_n = std::max(max_n, N);
        const auto m = measured.find(N);
        dat << N << ' ' << format_double(m != measured.end() ? m->second.p : nan) << ' '
            << format_double(m != measured.end() ? m->second.r : nan);
        for (const char* v : kVariants) {
            std::array<double, 4> b = {nan, nan, nan, nan};
            if (envelopes && envelopes->count(v) && envelopes->at(v).count(N))
                b = envelopes->at(v).at(N);
            inverted[v] += b[0] > b[1] || b[2] > b[3];
            for (double x : b)
                dat << ' ' << format_double(x);
        }
        const bool sim_here = simulation && simulation->count(N);
        dat << ' ' << format_double(sim_here ? simulation->at(N).p : nan) << ' '
            << format_double(sim_here ? simulation->at(N).r : nan) << '\n';
    }
    f.data.push_back({f.id + ".dat", dat.str()});
    std::ostringstream s;
    s << pr_panels_preamble(std::max(2, max_n), "7.5");
    for (int metric = 0; metric < 2; ++metric) {
        // One key for both panels, under them.
        s << (metric == 0 ? "  set key at screen 0.5, screen 0.015 center bottom horizontal "
                            "maxrows 2 font ',11' samplen 3 width 1\n"
                          : "  unset key\n");
        s << "  set ylabel '"
          << (metric == 0 ? "mean P(r_{max}, N) over heads" : "mean R(r_{min}, N) over heads")
          << "'\n  plot '" << f.id << ".dat' using 1:" << 2 + metric
          << " with lines lw 2.5 lc rgb '#08519c' title 'measured (mean over heads)'";
        if (envelopes) {
            for (int v = 0; v < 4; ++v) {
                if (!envelopes->count(kVariants[v])) continue;
                const int lower = 4 + 4 * v + 2 * metric;
                s << ", \\\n       '' using 1:" << lower << " with lines lw 1.5 dt 2 lc rgb '"
                  << kVariantColor[v] << "' notitle, \\\n       '' using 1:" << lower + 1
                  << " with lines lw 1.5 lc rgb '" << kVariantColor[v] << "' title '"
                  << kVariants[v] << "', \\\n       '' using 1:($" << lower << " > $" << lower + 1
                  << " ? $" << lower << " : 1/0) with points pt 13 ps 1.2 lc rgb '"
                  << kVariantColor[v] << "' notitle";
            }
            s << ", \\\n       1/0 with points pt 13 ps 1.2 lc rgb '#444444' title 'inverted "
                 "(lower > upper)'";
            s << ", \\\n       1/0 with lines lw 1.5 lc rgb '#444444' title 'upper envelope', "
                 "\\\n       1/0 with lines lw 1.5 dt 2 lc rgb '#444444' title 'lower envelope'";
        }
        if (simulation) {
            s << ", \\\n       '' using 1:" << 20 + metric
              << " with lines lw 2 dt 4 lc rgb '#e7298a' title 'simulation'";
        }
        s << "\n";
    }
    s << "  unset multiplot\n  set bmargin\n";
    f.script = s.str();
    std::ostringstream caption;
    caption << "Left Precision P(r<sub>max</sub>, N), right Recall R(r<sub>min</sub>, N): the "
               "mean over heads of the document means (blue), from "
            << code(measured_source) << " (P_mean, R_mean).";
    if (envelopes) {
        caption << " Per bound variant (all four), the mean over heads of the lower (dashed) "
                   "and upper (solid) envelopes "
                << (envelopes_at_star ? "at the κ* of each side (the *_star columns)"
                                      : "at the variant's single κ")
                << ", from " << code(envelope_source) << ".";
        std::vector<std::string> flipped;
        for (const char* v : kVariants)
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
    if (simulation) {
        caption << " Magenta dash-dot: the simulation at the fitted parameters (E[P], E[R]), from "
                << code(simulation_source) << ".";
    }
    f.caption = caption.str();
    return f;
}

// Figure 7: ‖s(N)‖ with leave-one-out variants, and cos(s, v_0), cos(s, v_L), for the most
// typical head of each regime.
std::optional<Figure> diagnostics_figure(const std::string& prefix, const ExtractData& e,
                                         std::string& note) {
    std::array<int, 3> chosen = {-1, -1, -1};
    for (std::size_t h = 0; h < e.heads.size(); ++h) {
        const int r = e.heads[h].regime;
        if (chosen[r] < 0 || regime_margin(e.heads[h]) > regime_margin(e.heads[chosen[r]]))
            chosen[r] = static_cast<int>(h);
    }
    std::vector<int> regimes;
    for (int r = 0; r < 3; ++r)
        if (chosen[r] >= 0) regimes.push_back(r);
    if (regimes.empty()) {
        note = "<p class=\"warn\">Figure 7 not drawn: heads.csv lists no heads.</p>\n";
        return std::nullopt;
    }
    // N → the five diagnostics, per chosen head.
    std::array<std::map<int, std::array<double, 5>>, 3> rows;
    const std::string diag = path_in(e.dir, "diag.csv");
    stream_numeric_csv(diag,
                       {"layer", "head", "N", "s_norm", "s_norm_no_sink", "s_norm_no_last",
                        "cos_s_v0", "cos_s_vL"},
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
        const HeadRow& h = e.heads[chosen[r]];
        dat << "# " << kRegimes[r] << " head: layer " << h.layer << " head " << h.head
            << "\n# N s_norm s_norm_no_sink s_norm_no_last cos_s_v0 cos_s_vL\n";
        for (const auto& [N, d] : rows[r]) {
            max_n = std::max(max_n, N);
            dat << N;
            for (double x : d)
                dat << ' ' << format_double(x);
            dat << '\n';
        }
        f.data.push_back({f.id + "_" + kRegimes[r] + ".dat", dat.str()});
    }
    std::ostringstream s;
    s << "  set multiplot layout 2," << regimes.size()
      << "\n  set logscale x 2\n  set xrange [1:" << max_n << "]\n"
      << kGrid << "  set key top left font ',10' spacing 0.9 samplen 2.5\n";
    for (int r : regimes) {
        const HeadRow& h = e.heads[chosen[r]];
        s << "  set title '" << kRegimes[r] << " (layer " << h.layer << ", head " << h.head
          << ")' font ',12'\n  set xlabel 'N'\n  set ylabel '‖s(N)‖'\n  set yrange [0:*]\n"
          << "  plot '" << f.id << "_" << kRegimes[r]
          << ".dat' using 1:2 with lines lw 2 lc rgb '#08519c' title 's(N)', \\\n"
          << "       '' using 1:3 with lines lw 1.5 dt 4 lc rgb '#b00020' title 'without sink', "
             "\\\n"
          << "       '' using 1:4 with lines lw 1.5 dt 2 lc rgb '#31a354' title 'without last'\n";
    }
    for (int r : regimes) {
        s << "  unset title\n  set ylabel 'cosine'\n  set yrange [-1.05:1.05]\n"
          << "  plot '" << f.id << "_" << kRegimes[r]
          << ".dat' using 1:5 with lines lw 2 lc rgb '#08519c' title 'cos(s, v_0)', \\\n"
          << "       '' using 1:6 with lines lw 1.5 dt 2 lc rgb '#e6550d' title 'cos(s, v_L)'\n";
    }
    s << "  unset multiplot\n";
    f.script = s.str();
    std::ostringstream caption;
    caption << "For the head of each regime with the largest normalised margin between "
               "m<sub>last</sub> and its neighbours in the order of (m<sub>sink</sub>, "
               "m<sub>last</sub>, m<sub>rest</sub>): top, ‖s(N)‖ (solid) and the leave-one-out "
               "norms without the sink (dash-dot) and without the last token (dashed); bottom, "
               "cos(s(N), v<sub>0</sub>) (solid) and cos(s(N), v<sub>L</sub>) (dashed); log N. "
               "Heads: ";
    for (std::size_t k = 0; k < regimes.size(); ++k) {
        const HeadRow& h = e.heads[chosen[regimes[k]]];
        caption << (k ? "; " : "") << kRegimes[regimes[k]] << " = layer " << h.layer << " head "
                << h.head << " (m<sub>sink</sub>, m<sub>last</sub>, m<sub>rest</sub> = "
                << short_number(h.m_sink) << ", " << short_number(h.m_last) << ", "
                << short_number(h.m_rest) << ")";
    }
    caption << ". From " << code(diag) << ", heads chosen from "
            << code(path_in(e.dir, "heads.csv")) << ".";
    if (regimes.size() < 3) caption << " Regimes without any head are left out.";
    f.caption = caption.str();
    return f;
}

// Figure 8: regime counts per layer, stacked.
Figure regime_counts_figure(const std::string& prefix,
                            const std::map<int, std::array<int, 3>>& counts,
                            const std::string& source, const std::string& boundary_note = "") {
    Figure f;
    f.id = prefix + "fig8_regimes_by_layer";
    f.title = "Figure 8: head regimes by layer";
    std::ostringstream dat;
    dat << "# layer Retriever Mixer Reset (heads)\n";
    std::array<int, 3> total{};
    for (const auto& [layer, c] : counts) {
        dat << layer << ' ' << c[0] << ' ' << c[1] << ' ' << c[2] << '\n';
        for (int r = 0; r < 3; ++r)
            total[r] += c[r];
    }
    f.data.push_back({f.id + ".dat", dat.str()});
    const int every = std::max<int>(1, static_cast<int>(counts.size()) / 16);
    std::ostringstream s;
    s << "  set style data histograms\n  set style histogram rowstacked\n"
      << "  set style fill solid 0.85 border lc rgb '#ffffff'\n  set boxwidth 0.8\n"
      << "  set xlabel 'layer'\n  set ylabel 'heads'\n  set yrange [0:*]\n"
      << "  set grid ytics lc rgb '#e5e5e5'\n  set key outside right top\n"
      << "  plot '" << f.id << ".dat' using 2:xtic(int($0) % " << every
      << " == 0 ? stringcolumn(1) : '') lc rgb '" << kRegimeColor[0] << "' title 'Retriever', \\\n"
      << "       '' using 3 lc rgb '" << kRegimeColor[1] << "' title 'Mixer', \\\n"
      << "       '' using 4 lc rgb '" << kRegimeColor[2] << "' title 'Reset'\n";
    f.script = s.str();
    std::ostringstream caption;
    caption << "Number of heads of each regime per layer (Retriever: m<sub>last</sub> the "
               "largest of the three magnitudes; Mixer: the middle one; Reset: the smallest). "
               "In all: "
            << total[0] << " Retriever, " << total[1] << " Mixer, " << total[2] << " Reset."
            << boundary_note << " From " << code(source) << ".";
    f.caption = caption.str();
    return f;
}

// Figure 10: mean contribution ‖α_i v_i‖ by position per regime (log y).
Figure contrib_figure(const std::string& prefix, const std::array<std::vector<double>, 3>& curves,
                      const std::array<int, 3>& heads, const std::string& source) {
    Figure f;
    f.id = prefix + "fig10_contribution_by_regime";
    f.title = "Figure 10: contribution ‖α_i v_i‖ by position, per regime";
    std::size_t positions = 0;
    for (const auto& c : curves)
        positions = std::max(positions, c.size());
    std::ostringstream dat;
    dat << "# pos Retriever Mixer Reset (mean contrib over the heads of each regime)\n";
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
    for (int r = 0; r < 3; ++r) {
        if (!heads[r]) continue;
        s << (first ? "" : ", \\\n       ") << "'" << f.id << ".dat' using 1:($" << r + 2 << ">0?$"
          << r + 2 << ":1/0) with lines lw 2 lc rgb '" << kRegimeColor[r] << "' title '"
          << kRegimes[r] << " (" << heads[r] << (heads[r] == 1 ? " head)'" : " heads)'");
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

int heads_of(const std::map<int, MeanPR>& series) {
    int heads = 0;
    for (const auto& [N, m] : series)
        heads = std::max(heads, m.heads);
    return heads;
}

// Figure 11: mean P and R against N per regime.
Figure pr_by_regime_figure(const std::string& prefix,
                           const std::array<std::map<int, MeanPR>, 3>& series,
                           const std::string& source) {
    Figure f;
    f.id = prefix + "fig11_precision_recall_by_regime";
    f.title = "Figure 11: Precision and Recall against N, per regime";
    std::map<int, bool> sizes;
    for (const auto& m : series)
        for (const auto& [N, unused] : m)
            sizes[N] = true;
    std::ostringstream dat;
    dat << "# N then per regime (Retriever Mixer Reset): P_mean R_mean heads\n";
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
        for (int r = 0; r < 3; ++r) {
            if (series[r].empty()) continue;
            s << (first ? "" : ", \\\n       ") << "'" << f.id
              << ".dat' using 1:" << 2 + 3 * r + metric << " with lines lw 2 lc rgb '"
              << kRegimeColor[r] << "' title '" << kRegimes[r] << " (" << heads_of(series[r])
              << (heads_of(series[r]) == 1 ? " head)'" : " heads)'");
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

// ---- Tables --------------------------------------------------------------------------------

std::string model_table(const ExtractData& e) {
    const auto& m = e.manifest;
    std::vector<std::vector<std::string>> rows;
    if (m.contains("model") && m.at("model").is_object())
        for (const auto& [key, value] : m.at("model").items())
            rows.push_back({"model." + key, html_escape(json_text(value))});
    if (m.contains("tokenizer"))
        rows.push_back({"tokenizer", html_escape(json_text(m.at("tokenizer")))});
    if (m.contains("parameters") && m.at("parameters").is_object()) {
        for (const char* key :
             {"context", "corpus", "dtype", "device", "bos", "rank", "distance", "N"})
            if (m.at("parameters").contains(key))
                rows.push_back({key, html_escape(json_text(m.at("parameters").at(key)))});
    }
    if (m.contains("documents") && m.at("documents").is_object())
        for (const auto& [key, value] : m.at("documents").items())
            rows.push_back({"documents." + key, html_escape(json_text(value))});
    rows.push_back({"heads in heads.csv", std::to_string(e.heads.size())});
    rows.push_back({"positions in by_position.csv", std::to_string(e.positions)});
    if (m.contains("timings") && m.at("timings").contains("total_s"))
        rows.push_back({"extract time (s)", json_text(m.at("timings").at("total_s"))});
    if (m.contains("version"))
        rows.push_back({"version / commit", html_escape(json_text(m.at("version")) + " / " +
                                                        json_text(m.value("git_commit", "")))});
    if (m.contains("command")) rows.push_back({"command", code(json_text(m.at("command")))});
    return html_table({"fact", "value"}, rows);
}

std::string layer_table(const ExtractData& e) {
    struct Acc {
        std::vector<double> lambda, rho0, cv_positional, cv_pooled;
        std::array<int, 3> counts{};
    };
    std::map<int, Acc> layers;
    for (const auto& h : e.heads) {
        Acc& a = layers[h.layer];
        a.lambda.push_back(h.lambda);
        a.rho0.push_back(h.rho0);
        a.cv_positional.push_back(h.cv_positional);
        a.cv_pooled.push_back(h.cv_pooled);
        a.counts[h.regime]++;
    }
    std::vector<std::vector<std::string>> rows;
    for (const auto& [layer, a] : layers) {
        rows.push_back({std::to_string(layer), std::to_string(a.lambda.size()),
                        short_number(mean_of(a.lambda)), short_number(mean_of(a.rho0)),
                        short_number(mean_of(a.cv_positional)), short_number(mean_of(a.cv_pooled)),
                        std::to_string(a.counts[0]), std::to_string(a.counts[1]),
                        std::to_string(a.counts[2])});
    }
    return "<p>Per layer, means over its heads of " + code("heads.csv") +
           " columns, and the regime counts.</p>\n" +
           html_table({"layer", "heads", "mean λ", "mean ρ0", "mean cv_positional",
                       "mean cv_pooled", "Retriever", "Mixer", "Reset"},
                      rows);
}

std::map<int, std::array<int, 3>> regime_counts(const ExtractData& e) {
    std::map<int, std::array<int, 3>> counts;
    for (const auto& h : e.heads)
        counts[h.layer][h.regime]++;
    return counts;
}

// One value per head, or with per_kv one per key/value head (the first query head of each
// (layer, kv_head) group: value-state statistics are the same for the whole group).
std::vector<double> head_column(const ExtractData& e, double HeadRow::*field, bool per_kv = false) {
    std::vector<double> out;
    std::set<std::pair<int, int>> seen;
    for (const auto& h : e.heads)
        if (!per_kv || seen.insert({h.layer, h.kv_head}).second) out.push_back(h.*field);
    return out;
}

// The unit histograms and medians count in, for captions.
std::string counting_unit(bool per_kv) {
    return per_kv ? "key/value heads (value-state statistics counted once per key/value head: "
                    "the query heads of a GQA group share them; compare --count-per kv)"
                  : "query heads (counted once per query head: a GQA group repeats its "
                    "key/value head's statistics; compare --count-per query)";
}

std::string near_boundary_of(const ExtractData& e) {
    std::vector<std::pair<int, double>> pairs;
    for (const auto& h : e.heads)
        pairs.push_back({h.regime, h.regime_margin_column});
    return near_boundary_text(pairs);
}

std::string prefix_of(const RunFolder& run) {
    return "run" + std::to_string(run.index) + "_";
}

// What a compare report adds to the extract sections: `fit`, `envelopes`, `simulation` are
// overlaid on Figures 4 and 5, and the after_* sections follow Figures 2, 4 and 5.
struct Overlays {
    std::optional<FittedProfile> fit;
    std::string fit_source;
    const Envelopes* envelopes = nullptr;
    std::string envelope_source;
    bool envelopes_at_star = false;  // drawn at each side's κ* (bounds.csv *_star columns)
    const std::map<int, MeanPR>* simulation = nullptr;
    std::string simulation_source;
    std::vector<Section> after_norms, after_alpha, after_pr;
    bool per_kv = true;  // compare --count-per kv (an extract folder alone: kv too)
};

std::vector<Section> extract_sections_of(const std::string& prefix, const ExtractData& e,
                                         const Overlays& o) {
    std::vector<Section> sections;
    Section facts;
    facts.title = "Model and extraction";
    facts.html_before = model_table(e);
    sections.push_back(facts);

    Section norms;
    norms.title = "Value-state norms (Figure 2)";
    norms.figures.push_back(norm_figure(prefix, e));
    norms.figures.push_back(cv_figure(prefix, head_column(e, &HeadRow::cv_positional, o.per_kv),
                                      head_column(e, &HeadRow::cv_pooled, o.per_kv),
                                      path_in(e.dir, "heads.csv"), counting_unit(o.per_kv)));
    sections.push_back(norms);
    sections.insert(sections.end(), o.after_norms.begin(), o.after_norms.end());

    Section alpha;
    alpha.title = "Attention mass by position (Figure 4)";
    alpha.figures.push_back(alpha_figure(prefix, &e, o.fit, o.fit_source));
    sections.push_back(alpha);
    sections.insert(sections.end(), o.after_alpha.begin(), o.after_alpha.end());

    Section pr;
    pr.title = "Precision and Recall against N (Figure 5)";
    pr.figures.push_back(pr_figure(prefix, e.pr_global, path_in(e.dir, "pr.csv"), o.envelopes,
                                   o.envelope_source, o.simulation, o.simulation_source,
                                   o.envelopes_at_star));
    sections.push_back(pr);
    sections.insert(sections.end(), o.after_pr.begin(), o.after_pr.end());

    Section regimes;
    regimes.title = "Head regimes (Figures 7, 8, 10, 11)";
    std::string note;
    if (auto fig7 = diagnostics_figure(prefix, e, note)) regimes.figures.push_back(*fig7);
    regimes.html_before = note;
    regimes.figures.push_back(regime_counts_figure(
        prefix, regime_counts(e), path_in(e.dir, "heads.csv"), near_boundary_of(e)));
    regimes.figures.push_back(contrib_figure(prefix, e.contrib_by_regime, e.regime_heads,
                                             path_in(e.dir, "by_position.csv")));
    regimes.figures.push_back(
        pr_by_regime_figure(prefix, e.pr_by_regime, path_in(e.dir, "pr.csv")));
    regimes.html_after = layer_table(e);
    sections.push_back(regimes);
    return sections;
}

// ---- Compare-only figures and tables ---------------------------------------------------------

nlohmann::json read_json(const std::string& path) {
    return read_json_file(path, "a JSON file of an attngeo run folder");
}

struct FitRow {
    int layer, head;
    double beta, mae, beta_offset, c_inf, mae_offset;
};

// Figure 3 (left): histogram of the exponential fit's MAE over heads.
Figure mae_figure(const std::string& prefix, const std::vector<double>& mae,
                  const std::string& source, const std::string& unit = "heads") {
    Figure f;
    f.id = prefix + "fig3_mae_histogram";
    f.title = "Figure 3 (left): error of the exponential cosine fit over heads";
    const int bins = std::clamp(static_cast<int>(std::sqrt(mae.size()) * 2), 8, 40);
    const Histogram h = histogram(mae, bins);
    f.data.push_back({f.id + ".dat", histogram_data(h, "mae")});
    std::ostringstream s;
    s << "  set style fill solid 0.75 border lc rgb '#ffffff'\n"
      << kGrid << "  set xlabel 'MAE of e^{-βk} to the mean cos by lag'\n  set ylabel 'heads'\n"
      << "  set yrange " << histogram_yrange(h) << "\n  unset key\n  plot '" << f.id
      << ".dat' using 1:4:($3-$2) with boxes lc rgb '#3182bd'\n";
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
    const std::string cos_path = path_in(e.dir, "cos_by_lag.csv");
    stream_numeric_csv(cos_path, {"layer", "head", "lag", "cos_mean"},
                       [&](const std::vector<double>& v) {
                           for (int k = 0; k < 3; ++k)
                               if (picked[k]->layer == static_cast<int>(v[0]) &&
                                   picked[k]->head == static_cast<int>(v[1]))
                                   measured[k][static_cast<int>(v[2])] = v[3];
                       });
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
          << ", graph 1 nohead dt 3 lc rgb '#888888'\n";
    for (int k = 0; k < 3; ++k) {
        const FitRow& r = *picked[k];
        s << "  set title 'layer " << r.layer << ", head " << r.head << ": MAE "
          << short_number(r.mae) << "' font ',11'\n  set ylabel '"
          << (k == 0 ? "mean cos(v_i, v_{i+k})" : "") << "'\n  plot '" << f.id << "_" << k
          << ".dat' using 1:2 with points pt 7 ps 0.5 lc rgb '#444444' title 'measured', \\\n"
          << "       '' using 1:3 with lines lw 2 lc rgb '#08519c' title 'e^{-βk}', \\\n"
          << "       '' using 1:4 with lines lw 1.5 dt 2 lc rgb '#d95f02' title 'offset model'\n";
    }
    s << "  unset arrow 1\n  set offsets\n  unset multiplot\n";
    f.script = s.str();
    std::ostringstream caption;
    caption << "Measured mean cos(v<sub>i</sub>, v<sub>i+k</sub>) by lag (points, from "
            << code(cos_path)
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
    dat << "# N corr ci_lo ci_hi heads (nan: undefined, an empty field in corr_rho0.csv)\n";
    int max_n = 2, undefined = 0, intervals = 0;
    for (std::size_t r = 0; r < corr.rows.size(); ++r) {
        const int N = static_cast<int>(corr.number(r, "N"));
        max_n = std::max(max_n, N);
        const double value = optional_number(corr, r, "corr"),
                     lo = optional_number(corr, r, "ci_lo"), hi = optional_number(corr, r, "ci_hi");
        undefined += std::isnan(value);
        intervals += !std::isnan(lo) && !std::isnan(hi);
        dat << N << ' ' << format_double(value) << ' ' << format_double(lo) << ' '
            << format_double(hi) << ' ' << corr.text(r, "heads") << '\n';
    }
    f.data.push_back({f.id + ".dat", dat.str()});
    std::ostringstream s;
    s << "  set logscale x 2\n  set xrange [1:" << max_n << "]\n  set yrange [-1.05:1.05]\n"
      << kGrid << "  set key bottom left\n  set xlabel 'N (selected tokens, log scale)'\n"
      << "  set ylabel 'corr(R(r_{min}, N), ρ_0)'\n"
      << "  set arrow 1 from 1, 0 to " << max_n << ", 0 nohead lc rgb '#888888'\n"
      << "  plot ";
    // gnuplot stops on a plot whose points are all undefined, so such series are left out.
    if (intervals > 0)
        s << "'" << f.id
          << ".dat' using 1:3:4 with filledcurves lc rgb '#9ecae1' fs transparent solid 0.5 "
             "title '95% bootstrap interval', \\\n       ";
    if (undefined < static_cast<int>(corr.rows.size()))
        s << "'" << f.id
          << ".dat' using 1:2 with lines lw 2.5 lc rgb '#08519c' title 'Pearson correlation'\n";
    else
        s << "0 with lines lc rgb '#888888' title 'no defined correlation'\n";
    s << "  unset arrow 1\n";
    f.script = s.str();
    std::string replicates = corr.rows.empty() ? "?" : corr.text(0, "replicates");
    const nlohmann::json correlation = manifest.value("correlation", nlohmann::json::object());
    const std::string units = correlation.contains("units") && correlation.at("units").is_string()
                                  ? correlation.at("units").get<std::string>()
                                  : std::string("heads");
    std::string interval = "with a 95% percentile bootstrap interval over documents (" +
                           html_escape(replicates) + " replicates; band)";
    if (intervals == 0) {
        const auto note = correlation.find("bootstrap");
        interval = "bootstrap interval n/a";
        if (note != correlation.end() && note->is_string() &&
            note->get<std::string>().find("needs") != std::string::npos)
            interval += ": " + html_escape(note->get<std::string>());
    }
    f.caption = "Pearson correlation across " + html_escape(units) +
                " of the mean Recall R(r<sub>min</sub>, N) and ρ<sub>0</sub> (mean "
                "cos(v<sub>0</sub>, v<sub>j</sub>)), " +
                interval + ". N where Recall does not vary across heads have no correlation" +
                (undefined ? " (n/a at " + std::to_string(undefined) + " of " +
                                 std::to_string(corr.rows.size()) + " N)"
                           : std::string()) +
                ". From " + code(corr.path) + ".";
    return f;
}

std::string fits_table(const CsvTable& fits, const std::string& unit) {
    std::vector<std::vector<std::string>> rows;
    for (const char* column : {"beta", "mae", "beta_offset", "c_inf", "mae_offset", "lambda", "C",
                               "rho0", "cv_positional", "cv_pooled"}) {
        if (!fits.has_column(column)) continue;
        std::vector<double> v;
        for (std::size_t r = 0; r < fits.rows.size(); ++r)
            if (!fits.has_column("counted") || fits.number(r, "counted") != 0)
                v.push_back(fits.number(r, column));
        int finite = 0;
        for (double x : v)
            finite += std::isfinite(x);
        rows.push_back({column, number_or_na(quantile(v, 0.5)), number_or_na(quantile(v, 0.25)),
                        number_or_na(quantile(v, 0.75)), number_or_na(quantile(v, 0)),
                        number_or_na(quantile(v, 1)), std::to_string(finite)});
    }
    std::ostringstream out;
    out << "<p>Distribution over " << unit << " of the fitted and measured parameters ("
        << code(fits.path) << ").</p>\n"
        << html_table({"parameter", "median", "25%", "75%", "min", "max", "finite heads"}, rows);
    std::vector<std::vector<std::string>> first;
    for (std::size_t r = 0; r < fits.rows.size() && r < 8; ++r) {
        std::vector<std::string> row;
        for (std::size_t c = 0; c < fits.header.size(); ++c) {
            const std::string& t = fits.rows[r][c];
            char* end = nullptr;
            const double x = std::strtod(t.c_str(), &end);
            row.push_back(!t.empty() && end == t.c_str() + t.size() ? short_number(x)
                                                                    : html_escape(t));
        }
        first.push_back(row);
    }
    out << "<p>The first " << first.size() << " of " << fits.rows.size() << " rows:</p>\n"
        << html_table(fits.header, first);
    return out.str();
}

std::string profile_table(const CsvTable& profile) {
    std::vector<std::vector<std::string>> rows;
    std::vector<double> r2;
    for (std::size_t r = 0; r < profile.rows.size(); ++r) {
        if (profile.text(r, "layer") == "-1") {
            std::vector<std::string> row = {"global (mean over heads)"};
            for (const char* c :
                 {"p_sink", "p_base", "eta", "omega", "T1", "T2", "r2_log", "rmse_log"})
                row.push_back(short_number(profile.number(r, c)));
            rows.push_back(row);
        } else {
            r2.push_back(profile.number(r, "r2_log"));
        }
    }
    std::ostringstream out;
    out << "<p>Assumption-3 profile fitted to the mean α by position (" << code(profile.path)
        << ").";
    if (!r2.empty())
        out << " Per-head fits: median R² of log α " << short_number(quantile(r2, 0.5))
            << " (interquartile " << short_number(quantile(r2, 0.25)) << "–"
            << short_number(quantile(r2, 0.75)) << ", " << r2.size() << " heads).";
    out << "</p>\n"
        << html_table(
               {"fit", "p_sink", "p_base", "η", "ω", "T1", "T2", "R² (log α)", "RMSE (log α)"},
               rows);
    return out.str();
}

std::string kappa_table(const nlohmann::json& kappa, const std::string& source) {
    std::vector<std::vector<std::string>> rows;
    const bool listed = kappa.contains("variants") && kappa.at("variants").is_object();
    for (const char* name : kVariants) {
        if (!listed || !kappa.at("variants").contains(name)) continue;
        const auto& v = kappa.at("variants").at(name);
        auto field = [&](const char* key) {
            return v.contains(key) ? html_escape(json_text(v.at(key))) : std::string("");
        };
        const std::string how = v.contains("kappa_rule")
                                    ? " (" + html_escape(json_text(v.at("kappa_rule"))) + ")"
                                : v.contains("kappa_fitted")
                                    ? (v.value("kappa_fitted", false) ? " (fitted)" : " (given)")
                                    : "";
        // The fraction inside only next to the width: a [0, 1] envelope contains everything.
        rows.push_back({code(name), field("kappa") + how,
                        field("fraction_inside") + " / " + field("mean_width")});
    }
    return "<p>The single κ of each bound variant (" + code(source) + "; cosines: " +
           html_escape(kappa.contains("cosines") ? json_text(kappa.at("cosines")) : "?") +
           "), used for the <code>kappa</code> columns; κ per bound variant and side is the "
           "verdict's κ*.</p>\n" +
           html_table({"variant", "κ (rule)", "fraction of points inside / mean envelope width"},
                      rows);
}

// `widths`: (variant, layer) → mean envelope width (mean_widths_by_layer; layer −1: global).
std::string agreement_tables(const CsvTable& agreement,
                             const std::map<std::pair<std::string, int>, double>& widths) {
    const auto width = [&](const std::string& variant, int layer) {
        const auto it = widths.find({variant, layer});
        return it == widths.end() ? std::string("?") : short_number(it->second);
    };
    std::vector<std::vector<std::string>> global;
    std::map<int, std::map<std::string, std::string>> by_layer;
    for (std::size_t r = 0; r < agreement.rows.size(); ++r) {
        const double worst = agreement.number(r, "worst_excess");
        const std::string worst_text =
            worst > 0 ? "<span class=\"bad\">" + short_number(worst) + "</span>"
                      : short_number(worst);
        if (agreement.text(r, "scope") == "global") {
            global.push_back({html_escape(agreement.text(r, "variant")),
                              agreement.text(r, "points"), agreement.text(r, "inside"),
                              short_number(agreement.number(r, "fraction")),
                              width(agreement.text(r, "variant"), -1), worst_text});
        } else {
            const int layer = static_cast<int>(agreement.number(r, "layer"));
            by_layer[layer][agreement.text(r, "variant")] =
                short_number(agreement.number(r, "fraction")) + " / " +
                width(agreement.text(r, "variant"), layer) + " (" + worst_text + ")";
        }
    }
    std::ostringstream out;
    out << "<p>Envelope agreement (" << code(agreement.path)
        << "): a point is one (head, N, metric P or R); inside means lower ≤ value ≤ upper, at "
           "the variant's single κ. The fraction inside always stands next to the envelope's "
           "mean width (bounds.csv): a [0, 1] envelope contains everything.</p>\n"
        << html_table({"variant", "points", "inside", "fraction inside", "mean envelope width",
                       "worst excess"},
                      global);
    if (!by_layer.empty()) {
        std::vector<std::vector<std::string>> rows;
        for (const auto& [layer, cells] : by_layer) {
            std::vector<std::string> row = {std::to_string(layer)};
            for (const char* v : kVariants)
                row.push_back(cells.count(v) ? cells.at(v) : "");
            rows.push_back(row);
        }
        out << "<p>Per layer: fraction inside / mean envelope width (worst excess).</p>\n"
            << html_table({"layer", "paper", "exact-mean", "scale-invariant", "corrected"}, rows);
    }
    return out.str();
}

std::string violations_table(const CsvTable& violations) {
    if (violations.rows.empty()) return "<p>No point lies outside any envelope.</p>\n";
    std::map<std::string, int> shown;
    std::vector<std::vector<std::string>> rows;
    for (std::size_t r = 0; r < violations.rows.size(); ++r) {
        const std::string variant = violations.text(r, "variant");
        if (shown[variant]++ >= 8) continue;
        rows.push_back({html_escape(variant), violations.text(r, "layer"),
                        violations.text(r, "head"), violations.text(r, "N"),
                        html_escape(violations.text(r, "metric")),
                        short_number(violations.number(r, "value")),
                        short_number(violations.number(r, "lower")),
                        short_number(violations.number(r, "upper")),
                        short_number(violations.number(r, "excess"))});
    }
    return "<p>The largest violations, at most 8 per variant (" + code(violations.path) +
           " keeps 20 per variant, excess descending).</p>\n" +
           html_table(
               {"variant", "layer", "head", "N", "metric", "value", "lower", "upper", "excess"},
               rows);
}

std::string fitted_params_html(const std::string& path) {
    if (!fs::exists(path)) return "";
    const nlohmann::json j = read_json(path);
    std::vector<std::vector<std::string>> rows;
    std::string command;
    for (const auto& [key, value] : j.items()) {
        if (key == "simulate_command") {
            command = json_text(value);
            continue;
        }
        if (value.is_object()) {
            for (const auto& [inner, v] : value.items())
                rows.push_back({html_escape(key + "." + inner), html_escape(json_text(v))});
        } else {
            rows.push_back({html_escape(key), html_escape(json_text(value))});
        }
    }
    std::string out = "<p>Global fitted parameters (" + code(path) + ").</p>\n" +
                      html_table({"parameter", "value"}, rows);
    if (!command.empty()) out += "<p>To simulate them: " + code(command) + "</p>\n";
    return out;
}

std::string parameters_table(const nlohmann::json& manifest) {
    std::vector<std::vector<std::string>> rows;
    for (const char* key : {"emp", "sim"}) {
        const bool given = manifest.contains(key) && !manifest.at(key).is_null();
        rows.push_back({key, given ? code(json_text(manifest.at(key))) : "none"});
    }
    if (manifest.contains("parameters") && manifest.at("parameters").is_object())
        for (const auto& [key, value] : manifest.at("parameters").items())
            rows.push_back({html_escape(key), html_escape(json_text(value))});
    if (manifest.contains("version"))
        rows.push_back(
            {"version / commit", html_escape(json_text(manifest.at("version")) + " / " +
                                             json_text(manifest.value("git_commit", "")))});
    if (manifest.contains("command"))
        rows.push_back({"command", code(json_text(manifest.at("command")))});
    return html_table({"parameter", "value"}, rows);
}

// The fitted global profile (profile.csv row layer −1) evaluated at positions 0..L with
// theory's Assumption-3 shape: α_0 = p_sink, α_i = p_base · w_i.
std::optional<FittedProfile> global_profile(const CsvTable& profile, int L) {
    for (std::size_t r = 0; r < profile.rows.size(); ++r) {
        if (profile.text(r, "layer") != "-1") continue;
        theory::Assumption3Profile p;
        p.L = L;
        p.p_sink = profile.number(r, "p_sink");
        p.T1 = static_cast<int>(std::lround(profile.number(r, "T1")));
        p.T2 = static_cast<int>(std::lround(profile.number(r, "T2")));
        p.eta = profile.number(r, "eta");
        p.omega = profile.number(r, "omega");
        const double p_base = profile.number(r, "p_base");
        FittedProfile fit;
        try {
            p.T2 = std::min(p.T2, L);
            p.T1 = std::min(p.T1, p.T2);
            theory::validate_assumption3(p, "global_profile");
            fit.alpha.push_back(p.p_sink);
            for (int i = 1; i <= L; ++i)
                fit.alpha.push_back(p_base * theory::assumption3_shape(p, i));
        } catch (const std::domain_error&) {
            return std::nullopt;
        }
        std::ostringstream d;
        d << "the Assumption-3 profile fitted to the mean over heads (p<sub>sink</sub> = "
          << short_number(p.p_sink) << ", p<sub>base</sub> = " << short_number(p_base)
          << ", η = " << short_number(p.eta) << ", ω = " << short_number(p.omega)
          << ", T<sub>1</sub> = " << p.T1 << ", T<sub>2</sub> = " << p.T2
          << ", R² of log α = " << short_number(profile.number(r, "r2_log")) << ")";
        fit.description = d.str();
        return fit;
    }
    return std::nullopt;
}

// A fit-lag count from the compare manifest's parameters, whatever its spelling.
int fit_lag_count(const nlohmann::json& manifest) {
    if (manifest.contains("parameters") && manifest.at("parameters").is_object()) {
        for (const char* key : {"max_lag_fit", "max-lag-fit", "max_lag"}) {
            const auto& p = manifest.at("parameters");
            if (p.contains(key) && p.at(key).is_number_integer())
                return json_integer<int>(p.at(key));
        }
    }
    return 64;
}

std::map<int, MeanPR> read_simulation(const std::string& path) {
    const CsvTable sim = read_csv_table(path);
    std::map<int, MeanPR> out;
    for (std::size_t r = 0; r < sim.rows.size(); ++r) {
        MeanPR& m = out[static_cast<int>(sim.number(r, "N"))];
        m.p = sim.number(r, "P_mean");
        m.r = sim.number(r, "R_mean");
        m.heads = 1;
    }
    return out;
}

}  // namespace

std::vector<Section> extract_sections(const RunFolder& run) {
    const ExtractData e = load_extract(run.dir);
    std::vector<Section> sections = extract_sections_of(prefix_of(run), e, Overlays{});
    sections.push_back(decisions_section(run.manifest));
    return sections;
}

std::vector<Section> compare_sections(const RunFolder& run) {
    const std::string& dir = run.dir;
    const std::string prefix = prefix_of(run);
    // The compare folder's own files are required; read them all before drawing anything.
    const CsvTable fits = read_csv_table(path_in(dir, "fits.csv"));
    const CsvTable profile = read_csv_table(path_in(dir, "profile.csv"));
    const CsvTable envelope = read_csv_table(path_in(dir, "envelope.csv"));
    const CsvTable agreement = read_csv_table(path_in(dir, "agreement.csv"));
    const CsvTable violations = read_csv_table(path_in(dir, "violations.csv"));
    const CsvTable corr = read_csv_table(path_in(dir, "corr_rho0.csv"));
    const nlohmann::json kappa = read_json(path_in(dir, "kappa.json"));

    // compare --count-per: a folder from before the option counted every query head.
    const nlohmann::json parameters = run.manifest.value("parameters", nlohmann::json::object());
    const bool per_kv = parameters.value("count_per", std::string("query")) == "kv";
    const std::string unit = counting_unit(per_kv);
    std::vector<FitRow> fit_rows;
    std::vector<double> mae, cv_positional, cv_pooled;
    for (std::size_t r = 0; r < fits.rows.size(); ++r) {
        fit_rows.push_back({static_cast<int>(fits.number(r, "layer")),
                            static_cast<int>(fits.number(r, "head")), fits.number(r, "beta"),
                            fits.number(r, "mae"), fits.number(r, "beta_offset"),
                            fits.number(r, "c_inf"), fits.number(r, "mae_offset")});
        if (fits.has_column("counted") && fits.number(r, "counted") == 0) continue;
        mae.push_back(fit_rows.back().mae);
        cv_positional.push_back(fits.number(r, "cv_positional"));
        cv_pooled.push_back(fits.number(r, "cv_pooled"));
    }
    Envelopes envelopes;
    std::map<int, MeanPR> envelope_means;
    for (std::size_t r = 0; r < envelope.rows.size(); ++r) {
        const int N = static_cast<int>(envelope.number(r, "N"));
        envelopes[envelope.text(r, "variant")][N] = {
            envelope.number(r, "P_lower"), envelope.number(r, "P_upper"),
            envelope.number(r, "R_lower"), envelope.number(r, "R_upper")};
        MeanPR& m = envelope_means[N];
        if (m.heads == 0)
            m = {envelope.number(r, "P_mean"), envelope.number(r, "R_mean"),
                 static_cast<int>(envelope.number(r, "heads"))};
    }

    // Figure 5 draws each side at its own κ* where bounds.csv has the star columns.
    const std::string bounds_path = path_in(dir, "bounds.csv");
    std::string envelope_source = envelope.path;
    const bool at_star = [&] {
        Envelopes star = mean_star_envelopes(bounds_path);
        if (star.empty()) return false;
        envelopes = std::move(star);
        envelope_source = bounds_path;
        return true;
    }();

    std::string warnings;
    // The extract folder named by "emp".
    const std::string emp = run.manifest.contains("emp") && run.manifest.at("emp").is_string()
                                ? run.manifest.at("emp").get<std::string>()
                                : std::string();
    std::optional<ExtractData> e;
    if (!emp.empty() && fs::exists(path_in(emp, "heads.csv"))) {
        e = load_extract(emp);
    } else {
        warnings += "<p class=\"warn\">The extract folder this comparison was made from (" +
                    (emp.empty() ? std::string("manifest.json has no \"emp\"") : code(emp)) +
                    ") is missing or has no heads.csv: Figures 2 (left), 3 (examples) and 7 "
                    "are not drawn, and Figures 4, 5, 8, 10 and 11 are drawn from the compare "
                    "folder alone.</p>\n";
    }
    // The simulation named by "sim", if any.
    std::optional<std::map<int, MeanPR>> simulation;
    std::string sim_csv;
    if (run.manifest.contains("sim") && run.manifest.at("sim").is_string()) {
        sim_csv = path_in(run.manifest.at("sim").get<std::string>(), "simulate.csv");
        if (fs::exists(sim_csv)) {
            simulation = read_simulation(sim_csv);
        } else {
            warnings += "<p class=\"warn\">The simulation named by \"sim\" has no " +
                        code(sim_csv) + ": Figure 5 is drawn without it.</p>\n";
        }
    }

    std::vector<Section> sections = {compare_verdict_section(dir, prefix, kappa)};
    Section overview;
    overview.title = "Comparison parameters";
    overview.html_before = warnings + parameters_table(run.manifest) +
                           fitted_params_html(path_in(dir, "fitted_params.json"));
    sections.push_back(overview);

    Section cosines;
    cosines.title = "Cosine decay fits (Figure 3)";
    cosines.figures.push_back(mae_figure(prefix, mae, fits.path, unit));
    if (e) {
        if (auto examples =
                fit_examples_figure(prefix, *e, fit_rows, fit_lag_count(run.manifest), fits.path))
            cosines.figures.push_back(*examples);
    }
    cosines.html_after = fits_table(fits, unit);

    Section kappa_section;
    kappa_section.title = "κ and envelope agreement";
    kappa_section.html_before = kappa_table(kappa, path_in(dir, "kappa.json")) +
                                agreement_tables(agreement, mean_widths_by_layer(bounds_path)) +
                                violations_table(violations);

    Section corr_section;
    corr_section.title = "Recall and the sink similarity ρ0 (Figure 6)";
    corr_section.figures.push_back(corr_figure(prefix, corr, run.manifest));

    const int L = e ? e->positions - 1 : [&] {
        try {
            const nlohmann::json p = read_json(path_in(dir, "fitted_params.json"));
            return p.contains("L") && p.at("L").is_number_integer() ? json_integer<int>(p.at("L"))
                                                                    : 0;
        } catch (const InputError&) {
            return 0;
        }
    }();
    const std::optional<FittedProfile> fit =
        L >= 1 ? global_profile(profile, L) : std::optional<FittedProfile>();

    Section profile_section;
    profile_section.title = "Profile fit";
    profile_section.html_before = profile_table(profile);
    if (!fit)
        profile_section.html_before +=
            "<p class=\"warn\">The global profile row (layer −1) is missing or not a valid "
            "Assumption-3 profile, or the context length is unknown: Figure 4 has no fitted "
            "curve.</p>\n";

    if (e) {
        Overlays o;
        o.per_kv = per_kv;
        o.fit = fit;
        o.fit_source = profile.path;
        o.envelopes = &envelopes;
        o.envelope_source = envelope_source;
        o.envelopes_at_star = at_star;
        if (simulation) {
            o.simulation = &*simulation;
            o.simulation_source = sim_csv;
        }
        o.after_norms.push_back(cosines);
        o.after_alpha.push_back(profile_section);
        o.after_pr.push_back(kappa_section);
        o.after_pr.push_back(corr_section);
        auto emp_sections = extract_sections_of(prefix, *e, o);
        sections.insert(sections.end(), emp_sections.begin(), emp_sections.end());
    } else {
        // Only what the compare folder holds.
        const CsvTable counts_csv = read_csv_table(path_in(dir, "regime_counts.csv"));
        const CsvTable pr_regime = read_csv_table(path_in(dir, "pr_by_regime.csv"));
        const CsvTable contrib = read_csv_table(path_in(dir, "contrib_by_regime.csv"));
        Section norms;
        norms.title = "Value-state norms (Figure 2)";
        norms.figures.push_back(cv_figure(prefix, cv_positional, cv_pooled, fits.path, unit));
        sections.push_back(norms);
        sections.push_back(cosines);
        Section alpha;
        alpha.title = "Attention mass by position (Figure 4)";
        if (fit) alpha.figures.push_back(alpha_figure(prefix, nullptr, fit, profile.path));
        sections.push_back(alpha);
        sections.push_back(profile_section);
        Section pr;
        pr.title = "Precision and Recall against N (Figure 5)";
        pr.figures.push_back(pr_figure(prefix, envelope_means, envelope.path, &envelopes,
                                       envelope_source, simulation ? &*simulation : nullptr,
                                       sim_csv, at_star));
        sections.push_back(pr);
        sections.push_back(kappa_section);
        sections.push_back(corr_section);

        Section regimes;
        regimes.title = "Head regimes (Figures 8, 10, 11)";
        std::map<int, std::array<int, 3>> counts;
        for (std::size_t r = 0; r < counts_csv.rows.size(); ++r) {
            auto& c = counts[static_cast<int>(counts_csv.number(r, "layer"))];
            for (int k = 0; k < 3; ++k)
                c[k] = static_cast<int>(counts_csv.number(r, kRegimes[k]));
        }
        std::vector<std::pair<int, double>> margins;
        const CsvTable regimes_csv = read_csv_table(path_in(dir, "regimes.csv"));
        if (regimes_csv.has_column("regime_margin"))
            for (std::size_t r = 0; r < regimes_csv.rows.size(); ++r)
                margins.push_back({regime_index(regimes_csv.text(r, "regime"), regimes_csv.path),
                                   regimes_csv.number(r, "regime_margin")});
        regimes.figures.push_back(
            regime_counts_figure(prefix, counts, counts_csv.path, near_boundary_text(margins)));
        std::array<std::vector<double>, 3> curves;
        std::array<int, 3> heads{};
        for (std::size_t r = 0; r < contrib.rows.size(); ++r) {
            const int k = regime_index(contrib.text(r, "regime"), contrib.path);
            const auto pos = static_cast<std::size_t>(contrib.number(r, "pos"));
            if (curves[k].size() <= pos) curves[k].resize(pos + 1, std::nan(""));
            curves[k][pos] = contrib.number(r, "contrib_mean");
            heads[k] = std::max(heads[k], static_cast<int>(contrib.number(r, "heads")));
        }
        regimes.figures.push_back(contrib_figure(prefix, curves, heads, contrib.path));
        std::array<std::map<int, MeanPR>, 3> series;
        for (std::size_t r = 0; r < pr_regime.rows.size(); ++r) {
            const int k = regime_index(pr_regime.text(r, "regime"), pr_regime.path);
            series[k][static_cast<int>(pr_regime.number(r, "N"))] = {
                pr_regime.number(r, "P_mean"), pr_regime.number(r, "R_mean"),
                static_cast<int>(pr_regime.number(r, "heads"))};
        }
        regimes.figures.push_back(pr_by_regime_figure(prefix, series, pr_regime.path));
        sections.push_back(regimes);
    }

    Section decisions = decisions_section(run.manifest);
    if (e && !e->manifest.is_null()) {
        decisions.html_before += "<p>By the extraction:</p>\n" + decisions_list(e->manifest);
    }
    sections.push_back(decisions);
    return sections;
}

}  // namespace attngeo::reports
