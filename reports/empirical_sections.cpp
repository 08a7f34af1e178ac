// The sections of extract and compare reports (the paper's Section 4): which figures and
// tables appear, in which order, with which overlays. The data comes from the loaders
// (extract_loader.cpp), the figures from empirical_figures.cpp, the tables from
// empirical_tables.cpp; a compare report embeds its extract folder's sections.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/errors.hpp"
#include "common/json_file.hpp"
#include "common/run_schema.hpp"
#include "reports/empirical_data.hpp"
#include "reports/empirical_figures.hpp"
#include "reports/empirical_tables.hpp"
#include "reports/html.hpp"
#include "reports/sections.hpp"
#include "reports/sink_section.hpp"
#include "reports/verdict.hpp"
#include "reports/verdict_text.hpp"

namespace fs = std::filesystem;

namespace attngeo::reports {
namespace {

using namespace empirical;

std::string prefix_of(const RunFolder& run) {
    return figure_prefix(run);
}

// What a compare report adds to the extract sections: `fit` and `pr` are overlaid on Figures
// 4 and 5, and the after_* sections follow Figures 2, 4 and 5.
struct Overlays {
    std::optional<FittedProfile> fit;
    std::string fit_source;
    PrOverlays pr;
    std::vector<Section> after_norms, after_alpha, after_pr;
    bool per_kv = true;  // compare --count-per kv (an extract folder alone: kv too)
    // The figures against L from the compare folder's summaries; empty: from the extract's
    // by_length.csv when it has one.
    std::optional<Section> by_length;
    std::string compare_dir;  // a compare report's folder: the sink section's relations
};

Section titled(const std::string& title) {
    Section section;
    section.title = title;
    return section;
}

// Figures 7, 8, 10, 11 and the per-layer table of an extract folder.
Section extract_regimes_section(const std::string& prefix, const ExtractData& e) {
    Section regimes = titled("Head regimes (Figures 7, 8, 10, 11)");
    std::string note;
    if (auto fig7 = diagnostics_figure(prefix, e, note)) regimes.figures.push_back(*fig7);
    regimes.html_before = note;
    regimes.figures.push_back(regime_counts_figure(
        prefix, regime_counts(e), path_in(e.dir, schema::file::heads), near_boundary_of(e)));
    regimes.figures.push_back(contrib_figure(prefix, e.contrib_by_regime, e.regime_heads,
                                             path_in(e.dir, schema::file::by_position)));
    if (auto scatter = contribution_scatter_figure(prefix, e, most_typical_heads(e)))
        regimes.figures.push_back(*scatter);
    regimes.figures.push_back(pr_by_regime_figure(prefix, e.pr_by_regime,
                                                  path_in(e.dir, schema::file::precision_recall)));
    regimes.html_after = layer_table(e);
    return regimes;
}

std::vector<Section> extract_sections_of(const std::string& prefix, const ExtractData& e,
                                         const Overlays& o) {
    std::vector<Section> sections;
    Section facts = titled("Model and extraction");
    facts.html_before =
        with_json_context(path_in(e.dir, schema::file::manifest), [&] { return model_table(e); });
    sections.push_back(facts);
    const auto snapshot = with_json_context(path_in(e.dir, schema::file::snapshot_scalars),
                                            [&] { return snapshot_figure(prefix, e.dir); });
    if (snapshot) {
        Section geometry = titled("One head in value-state space (Figure 1)");
        geometry.figures.push_back(*snapshot);
        sections.push_back(geometry);
    }

    Section norms = titled("Value-state norms (Figure 2)");
    norms.figures.push_back(norm_figure(prefix, e));
    norms.figures.push_back(
        cv_figure(prefix, head_column(e, &compare::EmpiricalHead::cv_positional, o.per_kv),
                  head_column(e, &compare::EmpiricalHead::cv_pooled, o.per_kv),
                  path_in(e.dir, schema::file::heads), counting_unit(o.per_kv)));
    sections.push_back(norms);
    sections.insert(sections.end(), o.after_norms.begin(), o.after_norms.end());

    Section alpha = titled("Attention mass by position (Figure 4)");
    alpha.figures.push_back(alpha_figure(prefix, &e, o.fit, o.fit_source));
    sections.push_back(alpha);
    sections.insert(sections.end(), o.after_alpha.begin(), o.after_alpha.end());

    Section pr = titled("Precision and Recall against N (Figure 5)");
    pr.figures.push_back(
        pr_figure(prefix, e.pr_global, path_in(e.dir, schema::file::precision_recall), o.pr));
    sections.push_back(pr);
    sections.insert(sections.end(), o.after_pr.begin(), o.after_pr.end());

    sections.push_back(extract_regimes_section(prefix, e));
    sections.push_back(sink_section(prefix, e.dir, o.compare_dir));
    if (o.by_length)
        sections.push_back(*o.by_length);
    else if (const auto curves = extract_length_curves(e))
        sections.push_back(length_section(prefix, *curves));
    return sections;
}

// ---- compare reports -------------------------------------------------------------------------

// The extract folder named by the manifest's "emp"; a warning when it is gone.
std::optional<ExtractData> named_extract(const RunFolder& run, std::string& warnings) {
    const std::string emp = run.manifest.contains("emp") && run.manifest.at("emp").is_string()
                                ? run.manifest.at("emp").get<std::string>()
                                : std::string();
    if (!emp.empty() && fs::exists(path_in(emp, schema::file::heads))) return load_extract(emp);
    warnings += "<p class=\"warn\">The extract folder this comparison was made from (" +
                (emp.empty() ? std::string("manifest.json has no \"emp\"") : code(emp)) +
                ") is missing or has no heads.csv: Figures 2 (left), 3 (examples) and 7 "
                "are not drawn, and Figures 4, 5, 8, 10 and 11 are drawn from the compare "
                "folder alone.</p>\n";
    return std::nullopt;
}

// The simulation named by the manifest's "sim", if any; `sim_csv` its simulate.csv.
std::optional<std::map<int, MeanPR>> named_simulation(const RunFolder& run, std::string& sim_csv,
                                                      std::string& warnings) {
    if (!run.manifest.contains("sim") || !run.manifest.at("sim").is_string()) return std::nullopt;
    const std::string sim_dir = run.manifest.at("sim").get<std::string>();
    sim_csv = path_in(sim_dir, schema::file::simulate_estimates);
    if (fs::exists(sim_csv)) return read_simulation(sim_dir);
    warnings += "<p class=\"warn\">The simulation named by \"sim\" has no " + code(sim_csv) +
                ": Figure 5 is drawn without it.</p>\n";
    return std::nullopt;
}

// The context length L the fitted profile is drawn over: from the extract folder, else from
// fitted_params.json; 0 when neither says.
int context_length(const ExtractData* e, const std::string& dir) {
    if (e) return e->positions - 1;
    const std::string path = path_in(dir, schema::file::fitted_params);
    nlohmann::json p;
    try {
        p = read_json(path);
    } catch (const InputError&) {
        return 0;
    }
    return with_json_context(path, [&] {
        return p.contains("L") && p.at("L").is_number_integer() ? json_integer<int>(p.at("L")) : 0;
    });
}

// The sections a compare folder adds whether or not its extract folder is there.
struct CompareParts {
    Section cosines, profile, kappa, corr, margins;
    std::optional<FittedProfile> fit;
};

CompareParts compare_parts(const RunFolder& run, const CompareFolder& c, const ExtractData* e) {
    const std::string prefix = prefix_of(run);
    const std::string manifest_path = run_manifest_path(run.dir),
                      kappa_path = path_in(run.dir, schema::file::kappa);
    CompareParts parts;
    parts.cosines = titled("Cosine decay fits (Figure 3)");
    parts.cosines.figures.push_back(mae_figure(prefix, c.mae, c.fits.path, c.unit));
    if (e) {
        const int lags = fit_lag_count(run.manifest, manifest_path);
        if (auto examples = fit_examples_figure(prefix, *e, c.fit_rows, lags, c.fits.path))
            parts.cosines.figures.push_back(*examples);
    }
    parts.cosines.html_after = fits_table(c.fits, c.unit);

    parts.kappa = titled("κ and envelope agreement");
    parts.kappa.html_before =
        with_json_context(kappa_path, [&] { return kappa_table(c.kappa, kappa_path); }) +
        agreement_tables(c.agreement,
                         mean_widths_by_layer(path_in(run.dir, schema::file::bounds))) +
        violations_table(c.violations);

    parts.margins = titled("Margins against N (Table 2)");
    if (auto trend = margin_trend_figure(prefix, path_in(run.dir, schema::file::bounds)))
        parts.margins.figures.push_back(*trend);
    else
        parts.margins.html_before =
            "<p class=\"warn\">bounds.csv has no paper row with a defined "
            "margin: Table 2's trend is not drawn.</p>\n";

    parts.corr = titled("Recall and the sink similarity ρ0 (Figure 6)");
    parts.corr.figures.push_back(with_json_context(
        manifest_path, [&] { return corr_figure(prefix, c.corr, run.manifest); }));

    const int L = context_length(e, run.dir);
    parts.fit = L >= 1 ? global_profile(c.profile_global, L) : std::optional<FittedProfile>();
    parts.profile = titled("Profile fit");
    parts.profile.html_before = profile_table(c.profile, c.profile_global);
    if (!parts.fit)
        parts.profile.html_before +=
            "<p class=\"warn\">The global profile (profile_global.csv) is missing or not a valid "
            "Assumption-3 profile, or the context length is unknown: Figure 4 has no fitted "
            "curve.</p>\n";
    return parts;
}

// Figures 8, 10, 11 from compare's own regime tables (no extract folder).
Section compare_regimes_section(const std::string& prefix, const std::string& dir) {
    const CsvTable counts_csv = read_csv_table(path_in(dir, schema::file::regime_counts));
    const CsvTable pr_regime = read_csv_table(path_in(dir, schema::file::pr_by_regime));
    const CsvTable contrib = read_csv_table(path_in(dir, schema::file::contrib_by_regime));
    Section regimes = titled("Head regimes (Figures 8, 10, 11)");
    std::map<int, PerRegime<int>> counts;
    for (std::size_t r = 0; r < counts_csv.rows.size(); ++r) {
        auto& c = counts[static_cast<int>(counts_csv.number(r, "layer"))];
        for (int k = 0; k < kRegimeCount; ++k)
            c[k] = static_cast<int>(counts_csv.number(r, regime_name(k)));
    }
    std::vector<std::pair<int, double>> margins;
    const CsvTable regimes_csv = read_csv_table(path_in(dir, schema::file::regimes));
    for (std::size_t r = 0; r < regimes_csv.rows.size(); ++r)
        margins.push_back(
            {regime_index(parse_regime(regimes_csv.text(r, "regime"), regimes_csv.path)),
             regimes_csv.number(r, "regime_margin")});
    regimes.figures.push_back(
        regime_counts_figure(prefix, counts, counts_csv.path, near_boundary_text(margins)));
    PerRegime<std::vector<double>> curves;
    PerRegime<int> heads{};
    for (std::size_t r = 0; r < contrib.rows.size(); ++r) {
        const int k = regime_index(parse_regime(contrib.text(r, "regime"), contrib.path));
        const auto pos = static_cast<std::size_t>(contrib.number(r, "pos"));
        if (curves[k].size() <= pos) curves[k].resize(pos + 1, std::nan(""));
        curves[k][pos] = contrib.number(r, "contrib_mean");
        heads[k] = std::max(heads[k], static_cast<int>(contrib.number(r, "heads")));
    }
    regimes.figures.push_back(contrib_figure(prefix, curves, heads, contrib.path));
    PerRegime<std::map<int, MeanPR>> series;
    for (std::size_t r = 0; r < pr_regime.rows.size(); ++r) {
        const int k = regime_index(parse_regime(pr_regime.text(r, "regime"), pr_regime.path));
        series[k][static_cast<int>(pr_regime.number(r, "N"))] = {
            pr_regime.number(r, "P_mean"), pr_regime.number(r, "R_mean"),
            static_cast<int>(pr_regime.number(r, "heads"))};
    }
    regimes.figures.push_back(pr_by_regime_figure(prefix, series, pr_regime.path));
    return regimes;
}

// Everything from the compare folder alone, in the order the extract-based report has it.
std::vector<Section> compare_only_sections(const RunFolder& run, const CompareFolder& c,
                                           const CompareParts& parts, const PrOverlays& pr_over,
                                           const std::optional<Section>& by_length) {
    const std::string prefix = prefix_of(run);
    std::vector<Section> sections;
    Section norms = titled("Value-state norms (Figure 2)");
    norms.figures.push_back(cv_figure(prefix, c.cv_positional, c.cv_pooled, c.fits.path, c.unit));
    sections.push_back(norms);
    sections.push_back(parts.cosines);
    Section alpha = titled("Attention mass by position (Figure 4)");
    if (parts.fit)
        alpha.figures.push_back(alpha_figure(prefix, nullptr, parts.fit, c.profile_global.path));
    sections.push_back(alpha);
    sections.push_back(parts.profile);
    Section pr = titled("Precision and Recall against N (Figure 5)");
    pr.figures.push_back(pr_figure(prefix, c.envelope_means, c.envelope.path, pr_over));
    sections.push_back(pr);
    sections.push_back(parts.kappa);
    sections.push_back(parts.margins);
    sections.push_back(parts.corr);
    sections.push_back(compare_regimes_section(prefix, run.dir));
    if (by_length) sections.push_back(*by_length);
    return sections;
}

Section table1_section(const RunFolder& run) {
    Section table1 = titled(
        "Table 1: sensitivity of the bounds at the fitted parameters, d(bound)/d(log "
        "parameter)");
    table1.html_before = with_json_context(run_manifest_path(run.dir),
                                           [&] { return table1_html(run.dir, run.manifest); });
    return table1;
}

}  // namespace

std::vector<Section> extract_sections(const RunFolder& run) {
    const ExtractData e = load_extract(run.dir);
    std::vector<Section> sections = extract_sections_of(prefix_of(run), e, Overlays{});
    sections.push_back(with_json_context(run_manifest_path(run.dir),
                                         [&] { return decisions_section(run.manifest); }));
    return sections;
}

std::vector<Section> compare_sections(const RunFolder& run) {
    // The compare folder's own files are required; read them all before drawing anything.
    const CompareFolder c = load_compare(run);
    std::string warnings;
    const std::optional<ExtractData> e = named_extract(run, warnings);
    std::string sim_csv;
    const std::optional<std::map<int, MeanPR>> simulation =
        named_simulation(run, sim_csv, warnings);

    const std::string manifest_path = run_manifest_path(run.dir);
    const std::string opening =
        with_json_context(manifest_path, [&] { return assumptions_opening(run.manifest); });
    std::vector<Section> sections =
        compare_verdict_sections(run.dir, prefix_of(run), c.kappa, run.manifest, opening);
    Section overview = titled("Comparison parameters");
    overview.html_before =
        warnings +
        with_json_context(manifest_path, [&] { return parameters_table(run.manifest); }) +
        fitted_params_html(path_in(run.dir, schema::file::fitted_params));
    sections.push_back(overview);

    const CompareParts parts = compare_parts(run, c, e ? &*e : nullptr);
    PrOverlays pr_over;
    pr_over.envelopes = &c.envelopes;
    pr_over.envelope_source = c.envelope_source;
    if (simulation) {
        pr_over.simulation = &*simulation;
        pr_over.simulation_source = sim_csv;
    }
    std::optional<Section> by_length;
    if (const auto curves = compare_length_curves(run.dir))
        by_length = length_section(prefix_of(run), *curves);
    std::vector<Section> body;
    if (e) {
        Overlays o;
        o.per_kv = c.per_kv;
        o.fit = parts.fit;
        o.fit_source = c.profile_global.path;
        o.pr = pr_over;
        o.after_norms = {parts.cosines};
        o.after_alpha = {parts.profile};
        o.after_pr = {parts.kappa, parts.margins, parts.corr};
        o.by_length = by_length;
        o.compare_dir = run.dir;
        body = extract_sections_of(prefix_of(run), *e, o);
    } else {
        body = compare_only_sections(run, c, parts, pr_over, by_length);
    }
    sections.insert(sections.end(), body.begin(), body.end());
    if (fs::exists(path_in(run.dir, schema::file::recovery_coverage))) {
        Section recovery = titled("Planted-parameter recovery");
        recovery.html_before =
            recovery_table(read_csv_table(path_in(run.dir, schema::file::recovery_coverage)));
        sections.push_back(recovery);
    }
    sections.push_back(table1_section(run));

    Section decisions =
        with_json_context(manifest_path, [&] { return decisions_section(run.manifest); });
    if (e && !e->manifest.is_null())
        decisions.html_before += "<p>By the extraction:</p>\n" +
                                 with_json_context(path_in(e->dir, schema::file::manifest),
                                                   [&] { return decisions_list(e->manifest); });
    sections.push_back(decisions);
    return sections;
}

}  // namespace attngeo::reports
