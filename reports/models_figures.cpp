// Cross-model overlays: each model's folder is read into a few curves (P and R against N with
// the paper and corrected envelopes, corr(R, ρ0) against N, regime shares by depth; for
// simulations E[P], E[R] with their intervals and envelopes), then every figure draws all models
// on one set of axes. One data file per model and figure keeps each script's `using` columns
// fixed.
#include "reports/models_figures.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>

#include "common/errors.hpp"
#include "common/format.hpp"
#include "common/json_file.hpp"
#include "common/run_schema.hpp"
#include "reports/empirical_data.hpp"
#include "reports/empirical_tables.hpp"
#include "reports/palette.hpp"
#include "reports/series_plot.hpp"
#include "reports/simulation_tables.hpp"
#include "reports/verdict.hpp"
#include "theory/bounds.hpp"
#include "reports/html.hpp"

namespace fs = std::filesystem;

namespace attngeo::reports {
namespace {

using namespace empirical;

// The envelopes the P and R overlays draw, in their data files' column order: the paper's own
// (its Figure 5, Theorems 1–2 as printed) and the corrected variant. More would crowd a figure
// that already has one colour per model; the single-run figures show all four.
const std::array<std::string, 2> kEnvelopeVariants = {
    theory::to_string(theory::BoundVariant::paper),
    theory::to_string(theory::BoundVariant::corrected)};

std::string kind_of(const RunFolder& run) {
    const auto kind = run.manifest.find("kind");
    return kind != run.manifest.end() && kind->is_string() ? kind->get<std::string>() : "";
}

bool is_empirical(const RunFolder& run) {
    const std::string kind = kind_of(run);
    return kind == "extract" || kind == "compare";
}

// Folders labelled by their model: a truncate folder's manifest names its model as extract's
// does (model.path, parameters.context).
bool named_by_model(const RunFolder& run) {
    return is_empirical(run) || kind_of(run) == schema::kind::truncate;
}

// The folder's own name ("runs/a/" → "a").
std::string folder_name(const std::string& dir) {
    fs::path path = fs::path(dir).lexically_normal();
    if (!path.has_filename()) path = path.parent_path();
    return path.filename().string();
}

// A value of the manifest at `object`.`key`, or null.
nlohmann::json member(const nlohmann::json& manifest, const char* object, const char* key) {
    if (!manifest.contains(object) || !manifest.at(object).is_object()) return nullptr;
    const auto& o = manifest.at(object);
    return o.contains(key) ? o.at(key) : nlohmann::json(nullptr);
}

// The model's name: its checkpoint file without the extension, or its Hugging Face folder
// ("Mistral-7B-v0.1" keeps its ".1"); the run folder's name when the manifest has no path.
std::string model_name(const RunFolder& run) {
    const bool compare = kind_of(run) == "compare";
    const nlohmann::json path = member(run.manifest, compare ? "emp_model" : "model", "path");
    if (!path.is_string() || path.get<std::string>().empty()) return folder_name(run.dir);
    fs::path model = fs::path(path.get<std::string>()).lexically_normal();
    if (!model.has_filename()) model = model.parent_path();
    const std::string extension = model.extension().string();
    for (const char* file_type : {".bin", ".gguf", ".safetensors", ".pt"})
        if (extension == file_type) return model.stem().string();
    return model.filename().string();
}

std::string context_of(const RunFolder& run) {
    const bool compare = kind_of(run) == "compare";
    const nlohmann::json context =
        member(run.manifest, compare ? "emp_parameters" : "parameters", "context");
    return context.is_number_integer() ? std::to_string(context.get<long long>()) : "";
}

// A simulate run's settings, key → text: the Assumption-model parameters and d.
std::map<std::string, std::string> simulate_settings(const RunFolder& run) {
    std::map<std::string, std::string> settings;
    if (!run.manifest.contains("config") || !run.manifest.at("config").is_object()) return settings;
    const auto& config = run.manifest.at("config");
    if (config.contains("model") && config.at("model").is_object())
        for (const auto& [key, value] : config.at("model").items())
            if (key != "L_given" && key.find("_file") == std::string::npos)
                settings[key] = json_text(value);
    if (config.contains("d")) settings["d"] = json_text(config.at("d"));
    return settings;
}

// For each simulate run, the settings that differ between the simulate runs ("beta=0.05,
// d=64"); the folder's name when none differ.
std::map<int, std::string> simulate_names(const std::vector<RunFolder>& runs) {
    std::map<int, std::map<std::string, std::string>> settings;
    std::set<std::string> keys;
    for (const auto& run : runs)
        if (kind_of(run) == "simulate")
            for (const auto& [key, value] : settings[run.index] = simulate_settings(run))
                keys.insert(key);
    std::map<int, std::string> names;
    for (const auto& [index, mine] : settings) {
        std::string name;
        for (const std::string& key : keys) {
            const auto value = mine.count(key) ? mine.at(key) : std::string("?");
            bool differs = false;
            for (const auto& [other, theirs] : settings)
                differs |= !theirs.count(key) || theirs.at(key) != value;
            if (differs) name += (name.empty() ? "" : ", ") + key + "=" + value;
        }
        names[index] = name.empty() ? folder_name(runs[index].dir) : name;
    }
    return names;
}

// Appends `suffix(i)` to every label that another label equals.
template <typename Suffix>
void separate_equal_labels(std::vector<std::string>& labels, Suffix suffix) {
    std::map<std::string, int> seen;
    for (const auto& label : labels)
        seen[label]++;
    for (std::size_t i = 0; i < labels.size(); ++i)
        if (seen[labels[i]] > 1) labels[i] += suffix(i);
}

}  // namespace

std::vector<std::string> run_labels(const std::vector<RunFolder>& runs,
                                    const std::vector<std::string>& given) {
    if (!given.empty()) {
        if (given.size() != runs.size())
            throw InputError("--label: " + std::to_string(given.size()) + " given for " +
                             std::to_string(runs.size()) +
                             " --in folders; give one --label per --in folder, in order");
        for (const auto& label : given)
            if (label.empty() || label.find_first_of("\n\r") != std::string::npos)
                throw InputError("--label: empty or multi-line name; give one line of text");
        return given;
    }
    const std::map<int, std::string> simulations = simulate_names(runs);
    std::vector<std::string> labels;
    for (const auto& run : runs)
        labels.push_back(kind_of(run) == "simulate" ? simulations.at(run.index)
                         : named_by_model(run)      ? model_name(run)
                                                    : folder_name(run.dir));
    separate_equal_labels(labels, [&](std::size_t i) {
        const std::string context = named_by_model(runs[i]) ? context_of(runs[i]) : "";
        return context.empty() ? std::string() : " (context " + context + ")";
    });
    separate_equal_labels(labels, [](std::size_t i) { return " #" + std::to_string(i + 1); });
    return labels;
}

namespace {

// ---- what each model contributes ----------------------------------------------------------

// One model's curve on a panel against N: N → [value, band_lo, band_hi, then lower, upper per
// kEnvelopeVariants entry]; NaN where the model has no band (no interval) or no envelope.
constexpr std::size_t kRowValues = 3 + 2 * kEnvelopeVariants.size();
using CurveRow = std::array<double, kRowValues>;
using CurveRows = std::map<int, CurveRow>;
struct CurveColumns {  // the per-model .dat files' columns (gnuplot counts from 1)
    static constexpr int kN = 1, kValue = 2, kBandLow = 3, kBandHigh = 4;
    // The lower and upper envelope of a panel's envelope `pair` (kEnvelopeVariants order).
    static int lower(std::size_t pair) { return 5 + 2 * static_cast<int>(pair); }
    static int upper(std::size_t pair) { return lower(pair) + 1; }
};

struct ModelCurves {
    std::string label, colour, dash;  // dash: "" or " dt 4" once the colours repeat
    // Line width and point type: earlier models are drawn wider underneath later ones, so a
    // model whose curve equals another's still shows as a coloured edge around it.
    double width = 2.5;
    int point = 7;
    std::array<CurveRows, 2> pr;  // [P, R]: the measured or simulated mean, envelopes
    std::string pr_source, envelope_source;
    CurveRows corr;  // corr(R, ρ0) and its bootstrap interval
    std::string corr_source;
    bool corr_computed_here = false;        // from an extract folder's heads.csv and pr.csv
    std::map<int, PerRegime<int>> regimes;  // layer → heads per regime
    std::string regimes_source;
};

const double kNan = std::nan("");

CurveRow nan_row() {
    CurveRow row;
    row.fill(kNan);
    return row;
}

// A row holding `value` and its band; no envelope.
CurveRow curve_row(double value, double band_low = kNan, double band_high = kNan) {
    CurveRow row = nan_row();
    row[0] = value;
    row[1] = band_low;
    row[2] = band_high;
    return row;
}

// The row of `rows` at N, made all-NaN when new.
CurveRow& row_at(CurveRows& rows, int N) {
    return rows.try_emplace(N, nan_row()).first->second;
}

// Where a row holds the lower envelope of kEnvelopeVariants[pair] (the upper one follows).
std::size_t lower_index(std::size_t pair) {
    return static_cast<std::size_t>(CurveColumns::lower(pair) - CurveColumns::kValue);
}

// The measured means, and the drawn variants' envelopes where the folder has them (variant →
// N → [P_lower, P_upper, R_lower, R_upper]), as P and R curves.
void set_pr_curves(ModelCurves& m, const std::map<int, MeanPR>& measured,
                   const Envelopes* envelopes) {
    for (const auto& [N, mean] : measured)
        for (int metric = 0; metric < 2; ++metric)
            m.pr[metric][N] = curve_row(metric ? mean.r : mean.p);
    if (!envelopes) return;
    for (std::size_t pair = 0; pair < kEnvelopeVariants.size(); ++pair) {
        const auto envelope = envelopes->find(kEnvelopeVariants[pair]);
        if (envelope == envelopes->end()) continue;
        for (const auto& [N, b] : envelope->second)
            for (int metric = 0; metric < 2; ++metric) {
                CurveRow& row = row_at(m.pr[metric], N);
                row[lower_index(pair)] = b[2 * metric];
                row[lower_index(pair) + 1] = b[2 * metric + 1];
            }
    }
}

bool drawn_variant(const std::string& variant) {
    return std::find(kEnvelopeVariants.begin(), kEnvelopeVariants.end(), variant) !=
           kEnvelopeVariants.end();
}

std::map<int, PerRegime<int>> read_regime_counts(const std::string& path) {
    const CsvTable counts = read_csv_table(path);
    std::map<int, PerRegime<int>> by_layer;
    for (std::size_t r = 0; r < counts.rows.size(); ++r) {
        auto& layer = by_layer[static_cast<int>(counts.number(r, "layer"))];
        for (int k = 0; k < kRegimeCount; ++k)
            layer[k] = static_cast<int>(counts.number(r, regime_name(k)));
    }
    return by_layer;
}

void read_compare_model(const RunFolder& run, ModelCurves& m) {
    const CompareFolder c = load_compare(run);
    set_pr_curves(m, c.envelope_means, &c.envelopes);
    m.pr_source = c.envelope.path;
    for (const auto& [variant, unused] : c.envelopes)
        if (drawn_variant(variant)) m.envelope_source = c.envelope_source;
    for (std::size_t r = 0; r < c.corr.rows.size(); ++r)
        m.corr[static_cast<int>(c.corr.number(r, "N"))] =
            curve_row(optional_number(c.corr, r, "corr"), optional_number(c.corr, r, "ci_lo"),
                      optional_number(c.corr, r, "ci_hi"));
    m.corr_source = c.corr.path;
    m.regimes_source = path_in(run.dir, schema::file::regime_counts);
    m.regimes = read_regime_counts(m.regimes_source);
}

// Pearson's correlation of two equally long samples; NaN when either does not vary.
double pearson(const std::vector<double>& x, const std::vector<double>& y) {
    if (x.size() < 2) return kNan;
    const double mx = mean_of(x), my = mean_of(y);
    double sxy = 0, sxx = 0, syy = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
        sxy += (x[i] - mx) * (y[i] - my);
        sxx += (x[i] - mx) * (x[i] - mx);
        syy += (y[i] - my) * (y[i] - my);
    }
    return sxx > 0 && syy > 0 ? sxy / std::sqrt(sxx * syy) : kNan;
}

// corr(R(r_min, N), ρ0) across key/value heads, as compare counts it (R averaged over each
// group's query heads; ρ0 is a value-state statistic, one per group), without an interval:
// the bootstrap needs compare's per-document sums.
CurveRows extract_correlation(const ExtractData& e) {
    std::map<long long, std::size_t> group_of;  // layer << 32 | kv_head → group
    std::vector<double> rho0;                   // [groups]
    for (const compare::EmpiricalHead& h : e.run.rows) {
        const long long key = (static_cast<long long>(h.layer) << 32) | h.kv_head;
        if (group_of.emplace(key, rho0.size()).second) rho0.push_back(h.rho0);
    }
    std::map<int, std::vector<std::pair<double, int>>> recall;  // N → [groups] (sum, heads)
    for (const compare::EmpiricalHead& head : e.run.rows) {
        for (std::size_t k = 0; k < e.run.sizes.size(); ++k) {
            auto& sums = recall[e.run.sizes[k]];
            sums.resize(rho0.size());
            auto& group =
                sums[group_of.at((static_cast<long long>(head.layer) << 32) | head.kv_head)];
            group.first += head.R_mean[k];
            group.second++;
        }
    }
    CurveRows corr;
    for (const auto& [N, sums] : recall) {
        std::vector<double> r, rho;
        for (std::size_t g = 0; g < sums.size(); ++g)
            if (sums[g].second > 0)
                r.push_back(sums[g].first / sums[g].second), rho.push_back(rho0[g]);
        corr[N] = curve_row(pearson(r, rho));
    }
    return corr;
}

void read_extract_model(const RunFolder& run, ModelCurves& m) {
    const ExtractData e = load_extract(run.dir);
    set_pr_curves(m, e.pr_global, nullptr);
    m.pr_source = path_in(run.dir, schema::file::precision_recall);
    m.corr = extract_correlation(e);
    m.corr_source = path_in(run.dir, schema::file::heads);
    m.corr_computed_here = true;
    m.regimes = regime_counts(e);
    m.regimes_source = path_in(run.dir, schema::file::heads);
}

// simulate.csv's means and 95% intervals with bounds.csv's paper and corrected envelopes (at
// each side's judged κ, the *_edge columns), as P and R curves.
void read_simulate_model(const RunFolder& run, ModelCurves& m) {
    const SimulateTables tables = read_simulate_tables(run);
    const CsvTable& sim = tables.estimates;
    const CsvTable& bounds = tables.bounds;
    const char* metrics[2] = {"P", "R"};
    for (std::size_t r = 0; r < sim.rows.size(); ++r)
        for (int k = 0; k < 2; ++k) {
            const std::string metric = metrics[k];
            m.pr[k][static_cast<int>(sim.number(r, "N"))] =
                curve_row(sim.number(r, metric + "_mean"), sim.number(r, metric + "_ci_lo"),
                          sim.number(r, metric + "_ci_hi"));
        }
    const std::string suffix = "_edge";
    for (std::size_t r = 0; r < bounds.rows.size(); ++r) {
        const auto variant = std::find(kEnvelopeVariants.begin(), kEnvelopeVariants.end(),
                                       bounds.text(r, "variant"));
        if (variant == kEnvelopeVariants.end()) continue;
        const std::size_t at =
            lower_index(static_cast<std::size_t>(variant - kEnvelopeVariants.begin()));
        const int N = static_cast<int>(bounds.number(r, "N"));
        for (int k = 0; k < 2; ++k) {
            CurveRow& row = row_at(m.pr[k], N);
            row[at] = bounds.number(r, std::string(metrics[k]) + "_lower" + suffix);
            row[at + 1] = bounds.number(r, std::string(metrics[k]) + "_upper" + suffix);
        }
    }
    m.pr_source = sim.path;
    m.envelope_source = bounds.path;
}

// The runs of one family (empirical or simulate) with their labels and colours, read.
std::vector<ModelCurves> read_models(const std::vector<RunFolder>& runs,
                                     const std::vector<std::string>& labels, bool simulations) {
    std::vector<ModelCurves> models;
    for (const auto& run : runs) {
        if (simulations ? kind_of(run) != "simulate" : !is_empirical(run)) continue;
        ModelCurves m;
        const std::size_t k = models.size();
        m.label = labels.at(run.index);
        m.colour = palette::kModel[k % palette::kModel.size()];
        m.dash = k < palette::kModel.size()
                     ? ""
                     : " dt " + std::to_string(2 + k / palette::kModel.size());
        with_json_context(run.dir, [&] {
            if (simulations)
                read_simulate_model(run, m);
            else if (kind_of(run) == "compare")
                read_compare_model(run, m);
            else
                read_extract_model(run, m);
            return 0;
        });
        models.push_back(std::move(m));
    }
    const int point_types[5] = {7, 5, 9, 11, 13};  // circle, square, triangles, diamond
    for (std::size_t k = 0; k < models.size(); ++k) {
        models[k].width =
            2.0 + 0.9 * static_cast<double>(std::min<std::size_t>(models.size() - 1 - k, 4));
        models[k].point = point_types[k % 5];
    }
    return models;
}

// ---- drawing ------------------------------------------------------------------------------

// A label inside a single-quoted gnuplot string (a quote is written twice).
std::string gnuplot_text(const std::string& text) {
    std::string out;
    for (char c : text)
        out += c == '\'' ? std::string("''") : std::string(1, c);
    return out;
}

bool any_finite(const CurveRows& rows, int column) {
    for (const auto& [N, row] : rows)
        if (std::isfinite(row[column - 2])) return true;
    return false;
}

// What a panel of curves against N shows and says.
struct CurvePanel {
    std::string id, title, what, ylabel, yrange;
    std::string band_title;  // the key entry of the band
    // The variant of each envelope pair the rows carry (kEnvelopeVariants, a prefix of it); ""
    // names a pair that is never drawn (Figure 6 keeps one in its files' layout).
    std::vector<std::string> envelopes;
};

std::string curve_data(const CurveRows& rows, const std::string& label, const CurvePanel& p) {
    std::ostringstream dat;
    dat << "# " << label << ": N " << p.what << " band_lo band_hi";
    for (const std::string& variant : p.envelopes)
        dat << (variant.empty() ? " lower upper" : " " + variant + "_lower " + variant + "_upper");
    dat << " (nan: none)\n";
    const std::size_t values = 3 + 2 * p.envelopes.size();
    for (const auto& [N, row] : rows) {
        dat << N;
        for (std::size_t i = 0; i < values; ++i)
            dat << ' ' << format_double(row[i]);
        dat << '\n';
    }
    return dat.str();
}

// Upper envelopes are dash-dot in every variant: solid is the model's own curve, and each
// variant's lower envelope has palette.hpp's dash.
const char* const kUpperDash = "(10,4,2,4)";

// The line style of a variant's lower or upper envelope: the variant's width and dash from
// palette.hpp (as the single-run figures draw them), so coinciding variants stay apart.
std::string envelope_style(const std::string& variant, bool upper) {
    const auto& names = variant_names();
    const std::size_t v =
        static_cast<std::size_t>(std::find(names.begin(), names.end(), variant) - names.begin());
    return " lw " + format_double(palette::variant_width(v)) + " dt " +
           (upper ? kUpperDash : palette::variant_lower_dash(v));
}

// Whether any model draws the panel's envelope `pair` on its lower (or upper) side.
bool envelope_drawn(const CurvePanel& p, const std::vector<const CurveRows*>& rows,
                    std::size_t pair, bool upper) {
    if (p.envelopes[pair].empty()) return false;
    const int column = upper ? CurveColumns::upper(pair) : CurveColumns::lower(pair);
    for (const CurveRows* r : rows)
        if (any_finite(*r, CurveColumns::kValue) && any_finite(*r, column)) return true;
    return false;
}

// The plot command of one panel: every model's band (under everything), then its line and
// envelopes (widest variant first), then one key entry per line style drawn. Models without a
// finite value are left out (gnuplot refuses a curve of undefined points) and listed in
// `missing`.
std::string curve_plot(const CurvePanel& p, const std::vector<ModelCurves>& models,
                       const std::vector<const CurveRows*>& rows,
                       std::vector<std::string>& missing) {
    using C = CurveColumns;
    std::vector<std::string> parts;
    bool band = false;
    for (std::size_t k = 0; k < models.size(); ++k) {
        const std::string file = "'" + p.id + "_m" + std::to_string(k) + ".dat'";
        if (any_finite(*rows[k], C::kValue) && any_finite(*rows[k], C::kBandLow)) {
            parts.push_back(file + " using 1:" + std::to_string(C::kBandLow) + ":" +
                            std::to_string(C::kBandHigh) + " with filledcurves lc rgb '" +
                            models[k].colour + "' fs transparent solid 0.18 noborder notitle");
            band = true;
        }
    }
    for (std::size_t k = 0; k < models.size(); ++k) {
        const std::string file = "'" + p.id + "_m" + std::to_string(k) + ".dat'";
        const std::string style = " lc rgb '" + models[k].colour + "'";
        if (!any_finite(*rows[k], C::kValue)) {
            missing.push_back(models[k].label);
            continue;
        }
        parts.push_back(file + " using 1:" + std::to_string(C::kValue) + " with lines lw " +
                        format_double(models[k].width) + style + models[k].dash + " title '" +
                        gnuplot_text(models[k].label) + "' noenhanced");
        for (std::size_t pair = 0; pair < p.envelopes.size(); ++pair)
            for (const bool upper : {false, true}) {
                const int column = upper ? C::upper(pair) : C::lower(pair);
                if (p.envelopes[pair].empty() || !any_finite(*rows[k], column)) continue;
                parts.push_back(file + " using 1:" + std::to_string(column) + " with lines" +
                                envelope_style(p.envelopes[pair], upper) + style + " notitle");
            }
    }
    const std::string neutral = palette::kNeutral;
    for (std::size_t pair = 0; pair < p.envelopes.size(); ++pair)
        for (const bool upper : {true, false})
            if (envelope_drawn(p, rows, pair, upper))
                parts.push_back("1/0 with lines" + envelope_style(p.envelopes[pair], upper) +
                                " lc rgb '" + neutral + "' title '" +
                                (upper ? "upper envelope (" : "lower envelope (") +
                                p.envelopes[pair] + ")'");
    if (band)
        parts.push_back("1/0 with boxes fs transparent solid 0.3 noborder lc rgb '" + neutral +
                        "' title '" + p.band_title + "'");
    return plot_command(parts);
}

// A figure of one curve per model against log N (Figures 5 and 6 across models, the
// simulations' E[P] and E[R]); `caption` is completed with the models left out.
Figure curve_figure(const CurvePanel& p, const std::vector<ModelCurves>& models,
                    const std::vector<const CurveRows*>& rows, const std::string& caption,
                    const std::string& extra_script = "") {
    Figure f;
    f.id = p.id;
    f.title = p.title;
    int max_n = 2;
    for (std::size_t k = 0; k < models.size(); ++k) {
        f.data.push_back(
            {p.id + "_m" + std::to_string(k) + ".dat", curve_data(*rows[k], models[k].label, p)});
        if (!rows[k]->empty()) max_n = std::max(max_n, rows[k]->rbegin()->first);
    }
    std::vector<std::string> missing;
    std::ostringstream s;
    s << "  set logscale x 2\n  set xrange [1:" << max_n << "]\n  set yrange " << p.yrange << "\n"
      << kGrid
      << "  set key outside below center horizontal font ',11' samplen 3 width 8 height 1.5\n"
         "  set xlabel 'N (selected tokens, log scale)'\n  set ylabel '"
      << p.ylabel << "'\n"
      << extra_script << curve_plot(p, models, rows, missing);
    f.script = s.str();
    f.caption = caption;
    if (!missing.empty()) {
        f.caption += " Not drawn (no defined value at any N):";
        for (std::size_t i = 0; i < missing.size(); ++i)
            f.caption += (i ? ", " : " ") + html_escape(missing[i]);
        f.caption += ".";
    }
    return f;
}

// "label: <code>path</code>; …" for captions.
std::string sources(const std::vector<ModelCurves>& models, std::string ModelCurves::*source) {
    std::string out;
    for (const auto& m : models)
        if (!(m.*source).empty())
            out += (out.empty() ? "" : "; ") + html_escape(m.label) + ": " + code(m.*source);
    return out;
}

// "<code>paper</code> and <code>corrected</code>": the variants named in a caption.
std::string variant_list(const std::vector<std::string>& variants) {
    std::string out;
    for (std::size_t i = 0; i < variants.size(); ++i)
        out += std::string(i == 0                     ? ""
                           : i + 1 == variants.size() ? " and "
                                                      : ", ") +
               code(variants[i]);
    return out;
}

// Which envelopes the panel draws, in whose style, at which κ and from where; the models that
// lack a variant another model draws are named.
std::string envelope_words(const std::vector<ModelCurves>& models, const CurvePanel& p,
                           const std::vector<const CurveRows*>& rows) {
    int with = 0;
    for (const auto& m : models)
        with += !m.envelope_source.empty();
    if (with == 0) return " No model has envelopes (extract folders; compare computes them).";
    std::vector<std::string> shown, lacking;
    for (std::size_t pair = 0; pair < p.envelopes.size(); ++pair) {
        if (!envelope_drawn(p, rows, pair, false) && !envelope_drawn(p, rows, pair, true)) continue;
        shown.push_back(p.envelopes[pair]);
        for (std::size_t k = 0; k < models.size(); ++k)
            if (!models[k].envelope_source.empty() &&
                !any_finite(*rows[k], CurveColumns::lower(pair)) &&
                !any_finite(*rows[k], CurveColumns::upper(pair)))
                lacking.push_back(html_escape(models[k].label) + " has no " +
                                  code(p.envelopes[pair]) + " envelope");
    }
    if (shown.empty()) return " No envelope has a defined value at any N.";
    std::string words =
        " Envelopes in the model's colour, lower dashed and upper dash-dot: the " +
        variant_list(shown) + (shown.size() == 1 ? " variant" : " variants") +
        (shown.size() == 1 ? "" : ", each in its own line width and lower dash, widest first") +
        ", each side at its judged κ, from " + sources(models, &ModelCurves::envelope_source) + ".";
    for (const std::string& lack : lacking)
        words += " " + lack + ".";
    if (with < static_cast<int>(models.size()))
        words += " Models without envelopes are extract folders (compare computes them).";
    return words;
}

// The P (metric 0) or R (metric 1) panel both overlays draw: only the names differ; the range,
// the key entries and the curves (each model's pr[metric]) are the same.
CurvePanel pr_panel(int metric, std::string id, std::string title, std::string ylabel) {
    return {std::move(id),
            std::move(title),
            metric == 0 ? "P_mean" : "R_mean",
            std::move(ylabel),
            "[-0.03:1.08]",
            "95% interval",
            {kEnvelopeVariants.begin(), kEnvelopeVariants.end()}};
}

std::vector<const CurveRows*> pr_rows(const std::vector<ModelCurves>& models, int metric) {
    std::vector<const CurveRows*> rows;
    for (const auto& m : models)
        rows.push_back(&m.pr[metric]);
    return rows;
}

Figure fig5_across_models(const std::vector<ModelCurves>& models, int metric) {
    const bool p = metric == 0;
    const CurvePanel panel =
        pr_panel(metric, p ? "models_fig5_P" : "models_fig5_R",
                 p ? "Figure 5 across models: Precision against N with the envelopes"
                   : "Figure 5 across models: Recall against N with the envelopes",
                 p ? "mean P(r_{max}, N) over heads" : "mean R(r_{min}, N) over heads");
    const std::vector<const CurveRows*> rows = pr_rows(models, metric);
    const std::string caption =
        std::string(p ? "Precision P(r<sub>max</sub>, N)" : "Recall R(r<sub>min</sub>, N)") +
        " of each model (thick line, one colour per model): the mean over heads of the document "
        "means, from " +
        sources(models, &ModelCurves::pr_source) + "." + envelope_words(models, panel, rows) +
        " Log N.";
    return curve_figure(panel, models, rows, caption);
}

Figure fig6_across_models(const std::vector<ModelCurves>& models) {
    CurvePanel panel{"models_fig6",
                     "Figure 6 across models: correlation of Recall with ρ0 across heads",
                     "corr",
                     "corr(R(r_{min}, N), ρ_0)",
                     "[-1.05:1.05]",
                     "95% bootstrap interval",
                     {""}};
    std::vector<const CurveRows*> rows;
    bool computed_here = false;
    for (const auto& m : models) {
        rows.push_back(&m.corr);
        computed_here |= m.corr_computed_here;
    }
    std::string caption =
        "Pearson correlation across key/value heads of the mean Recall R(r<sub>min</sub>, N) "
        "and ρ<sub>0</sub> (mean cos(v<sub>0</sub>, v<sub>j</sub>)), one line per model, with "
        "the 95% percentile bootstrap interval over documents where compare computed one "
        "(band). From " +
        sources(models, &ModelCurves::corr_source) + ".";
    if (computed_here)
        caption +=
            " For extract folders the correlation is computed here from heads.csv (ρ0) and "
            "pr.csv (R, averaged over each key/value group's query heads), without an interval.";
    const std::string zero_line =
        "  set arrow 1 from graph 0, first 0 to graph 1, first 0 nohead lc rgb '" +
        std::string(palette::kGuide) + "'\n";
    Figure f = curve_figure(panel, models, rows, caption + " Log N.", zero_line);
    f.script += "  unset arrow 1\n";
    return f;
}

// Figure 8's per-model .dat columns: layer, relative depth, heads, then the share of the
// layer's heads in each regime (kHeadRegimes order).
struct RegimeColumns {
    static constexpr int kDepth = 2, kHeads = 3, kFirstShare = 4;
};

std::string regime_data(const ModelCurves& m) {
    std::ostringstream dat;
    dat << "# " << m.label << ": layer depth heads";
    for (int r = 0; r < kRegimeCount; ++r)
        dat << " share_" << regime_name(r);
    dat << " (depth = layer / (layers - 1); share of the layer's heads)\n";
    const int last = m.regimes.empty() ? 0 : m.regimes.rbegin()->first;
    for (const auto& [layer, counts] : m.regimes) {
        int heads = 0;
        for (int c : counts)
            heads += c;
        dat << layer << ' ' << format_double(last > 0 ? static_cast<double>(layer) / last : 0.0)
            << ' ' << heads;
        for (int c : counts)
            dat << ' ' << format_double(heads > 0 ? static_cast<double>(c) / heads : kNan);
        dat << '\n';
    }
    return dat.str();
}

Figure fig8_across_models(const std::vector<ModelCurves>& models) {
    Figure f;
    f.id = "models_fig8";
    f.title = "Figure 8 across models: the head regimes by relative depth";
    for (std::size_t k = 0; k < models.size(); ++k)
        f.data.push_back({f.id + "_m" + std::to_string(k) + ".dat", regime_data(models[k])});
    std::ostringstream s;
    s << "  set multiplot layout 1," << kRegimeCount
      << "\n  set xrange [-0.04:1.04]\n  set yrange [-0.03:1.08]\n"
      << kGrid << "  set bmargin " << 5 + 1.4 * static_cast<double>(models.size())
      << "\n  set xlabel 'relative depth (layer / last layer)'\n";
    for (int r = 0; r < kRegimeCount; ++r) {
        // One key for the three panels, under them.
        s << (r == 0 ? "  set key at screen 0.5, screen 0.015 center bottom horizontal font "
                       "',11' samplen 3 width 1\n"
                     : "  unset key\n")
          << "  set title '" << regime_name(r) << "' font ',12'\n  set ylabel '"
          << (r == 0 ? "share of the layer''s heads" : "") << "'\n  plot ";
        for (std::size_t k = 0; k < models.size(); ++k)
            s << (k ? ", \\\n       " : "") << "'" << f.id << "_m" << k << ".dat' using "
              << RegimeColumns::kDepth << ":" << RegimeColumns::kFirstShare + r
              << " with linespoints lw " << format_double(models[k].width) << " pt "
              << models[k].point << " ps " << format_double(0.4 + 0.2 * models[k].width)
              << " lc rgb '" << models[k].colour << "'" << models[k].dash << " title '"
              << gnuplot_text(models[k].label) << "' noenhanced";
        s << "\n";
    }
    s << "  unset multiplot\n  set bmargin\n";
    f.script = s.str();
    f.caption =
        "The share of each layer's heads in each regime (Retriever: m<sub>last</sub> the "
        "largest of m<sub>sink</sub>, m<sub>last</sub>, m<sub>rest</sub>; Mixer: the middle "
        "one; Reset: the smallest), one line per model, against the layer's relative depth so "
        "that models with different numbers of layers share the axis; where models coincide, "
        "the earlier one shows as the wider line underneath. From " +
        sources(models, &ModelCurves::regimes_source) + ".";
    return f;
}

Figure simulation_across_runs(const std::vector<ModelCurves>& models, int metric) {
    const bool p = metric == 0;
    const CurvePanel panel = pr_panel(metric, p ? "models_sim_P" : "models_sim_R",
                                      p ? "Simulations compared: E[P] against N with the envelopes"
                                        : "Simulations compared: E[R] against N with the envelopes",
                                      p ? "E[P(r_{max}, N)]" : "E[R(r_{min}, N)]");
    const std::vector<const CurveRows*> rows = pr_rows(models, metric);
    const std::string caption =
        std::string("The Monte Carlo mean of ") +
        (p ? "Precision P(r<sub>max</sub>, N)" : "Recall R(r<sub>min</sub>, N)") +
        " of each simulation (thick line, one colour per run) with its 95% interval (band), "
        "from " +
        sources(models, &ModelCurves::pr_source) + "." + envelope_words(models, panel, rows) +
        " Log N.";
    return curve_figure(panel, models, rows, caption);
}

std::string legend_table(const std::vector<ModelCurves>& models, const std::vector<RunFolder>& runs,
                         const std::vector<std::string>& labels, bool simulations) {
    std::vector<std::vector<std::string>> rows;
    std::size_t k = 0;
    for (const auto& run : runs) {
        if (simulations ? kind_of(run) != "simulate" : !is_empirical(run)) continue;
        rows.push_back({"<span style=\"color:" + models[k++].colour + "\">■</span> " +
                            html_escape(labels.at(run.index)),
                        html_escape(kind_of(run)), code(run.dir)});
    }
    return html_table({"model", "kind", "folder"}, rows);
}

}  // namespace

std::vector<Section> models_sections(const std::vector<RunFolder>& runs,
                                     const std::vector<std::string>& labels) {
    std::vector<Section> sections;
    const std::vector<ModelCurves> empirical = read_models(runs, labels, false);
    if (empirical.size() >= 2) {
        Section across;
        across.title = "Figures 5, 6 and 8 across models";
        across.html_before =
            "<p>The extract and compare folders drawn together, one colour per model (name "
            "from its manifest or <code>--label</code>):</p>\n" +
            legend_table(empirical, runs, labels, false);
        across.figures = {fig5_across_models(empirical, 0), fig5_across_models(empirical, 1),
                          fig6_across_models(empirical), fig8_across_models(empirical)};
        sections.push_back(across);
    }
    const std::vector<ModelCurves> simulations = read_models(runs, labels, true);
    if (simulations.size() >= 2) {
        Section across;
        across.title = "Simulations compared";
        across.html_before =
            "<p>The simulate folders drawn together, one colour per run (named by the settings "
            "that differ between them or <code>--label</code>):</p>\n" +
            legend_table(simulations, runs, labels, true);
        across.figures = {simulation_across_runs(simulations, 0),
                          simulation_across_runs(simulations, 1)};
        sections.push_back(across);
    }
    return sections;
}

}  // namespace attngeo::reports
