// The JSON files of a compare folder; see compare_manifest.hpp.
#include "compare/compare_manifest.hpp"

#include <filesystem>

#include "common/format.hpp"
#include "common/manifest_values.hpp"
#include "common/run_schema.hpp"
#include "compare/assumptions.hpp"
#include "theory/assumption_checks.hpp"
#include "theory/metrics.hpp"

namespace fs = std::filesystem;

namespace attngeo::compare {
namespace {

// The manifest's "by_length" block: what the by-length summaries cover.
nlohmann::json by_length_manifest(const ByLengthRun& by_length, const EmpiricalRun& run) {
    const nlohmann::json& parameters = run.manifest.value("parameters", nlohmann::json::object());
    nlohmann::json bins = nlohmann::json::array();
    for (const auto& bin : by_length.bins)
        bins.push_back({{"lo", bin.lo}, {"hi", bin.hi}, {"length_mean", bin.length_mean}});
    return {{"queries",
             parameters.contains("queries") ? parameters.at("queries") : nlohmann::json(nullptr)},
            {"bins", bins},
            {"heads", run.rows.size()},
            {"files", {schema::file::by_length_summary, schema::file::regimes_by_length}}};
}

nlohmann::json compare_decisions() {
    return nlohmann::json::array({
        "beta per head: least squares of exp(-beta k) to cos_mean at lags k = 1..K, K = "
        "min(--max-lag-fit, context - 1, lags present); beta in [1e-6, 50] by a 241-point "
        "log scan then Brent in log beta. MAE = mean_k |c(k) - exp(-beta k)| "
        "(docs/design.md section 7).",
        "Offset model c_inf + (1 - c_inf) exp(-beta k): c_inf in closed form for each beta "
        "(unconstrained), beta minimised like the plain model.",
        "Profile (Assumption 3) per head (profile.csv) and for the mean alpha over heads "
        "(profile_global.csv): p_sink = alpha_0 exactly, p_base from the normalisation so the "
        "profile sums "
        "to 1; T1, T2, eta, omega minimise the squared log residuals over positions 1..n-1 "
        "(zeros left out): linearised grid search, then the exact objective by Brent and "
        "+-1 moves of T1, T2. With T1 = T2 omega is reported as 0. at_bound flags: beta at 1e-6 "
        "or 50, eta at its limit, omega at 0 or pi with T1 < T2, p_sink below 1e-9. A head "
        "whose alpha_mean cannot be fitted (e.g. alpha_0 = 0: by_position.csv's mean is 2^-64 "
        "fixed point) gets fit_failed = 1 and empty fields in profile.csv, no Table-2 regime "
        "in bounds.csv, and is listed in manifest.json's profile_fits_failed; the run goes on.",
        "lambda, C = norm_median, cv_*, rho0 and the regime are copied from the extract's "
        "heads.csv.",
        "pr_by_regime.csv and contrib_by_regime.csv: plain means over the heads of each "
        "regime; a regime without heads has no rows.",
        "fitted_params.json: medians over heads of beta, lambda, C, rho0; the profile of "
        "the mean alpha; values outside the simulator's domain are clamped and listed "
        "under \"clamped\".",
        "--count-per kv (default): beta, lambda, C, rho0, the CVs and the MAE are "
        "properties of the value states, which the query heads of a GQA group share, so "
        "medians (and the report's histograms: fits.csv counted = 1) take each key/value "
        "head once; --count-per query takes every query head. Without GQA both agree.",
        "corr_rho0.csv: see compare/correlation.hpp; bootstrap over documents with "
        "--replicates resamples and --seed (none with fewer than 2 documents: the "
        "interval is then empty). Per key/value head (--count-per kv) x is R(r_min, N) "
        "averaged over the group's query heads and y its rho0.",
        "regimes.csv regime_margin: copied from heads.csv (>= 1; the ratio of the two "
        "magnitudes whose order decides the regime).",
        "Intervals (fits.csv, profile.csv, profile_global.csv <name>_lo/<name>_hi): 95 % "
        "percentile bootstrap over documents, 200 replicates keyed by --seed, the profile's "
        "shape refitted in full on the first 50 of them (none with "
        "--replicates 0, fewer than 2 documents, or an extract without per_doc.safetensors' "
        "cos_by_lag, alpha, C). unidentified lists the parameters whose interval reaches a "
        "clamp of the search, spans more than a factor 10 (positive parameters) or is wider "
        "than 1 (c_inf, rho0) or pi/2 (omega), omega whose fits on the two halves of the "
        "documents leave its interval, and T1 with an unidentified omega; p_base's interval "
        "is then widened to every oscillation mass over omega in [0, pi] and T1 in [0, T2].",
        "assumptions.csv: A1 = 0 < lambda < 1 and cv_positional <= 0.05; A2 = the exp(-beta k) "
        "fit's MAE <= 0.8 x min(MAE of the median constant, MAE of 0) over the fitted lags "
        "(else beta_uninformative); A3 = p_sink > p_base, r2_log >= 0.9 and no profile "
        "parameter clamped or unidentified. Counts in manifest.json assumptions are over every "
        "query head; fitted_params.json from_failed_checks names the global parameters whose "
        "median comes from mostly failing heads (A2: beta, beta_offset, c_inf; A1: lambda, C) "
        "or whose global profile fails A3.",
        table1_decision("the parametric head of fitted_params.json's simulate "
                        "command (the clamped values), d = head_dim, kappa = the "
                        "paper variant's bound rows' kappa (1 when its sides share none)"),
        theory::kBallConventionDecision,
        "corr_rho0.csv head_lo/head_hi: heads (key/value heads with --count-per kv) as the "
        "sample, simultaneous over the N whose correlation is defined: tanh(atanh r +- atanh c) "
        "with c the 5 % critical value of max over N of |r| under 9999 permutations of rho0 "
        "across the units (seeded by --seed; Westfall and Young's max-T, exact however "
        "correlated the N are), so an interval excludes 0 exactly when that test rejects at "
        "its N; partial_layer: x and y centred on their layer's means (layer as a categorical "
        "covariate), its interval likewise with rho0 permuted within layers. ci_lo/ci_hi stay "
        "the document bootstrap with heads fixed.",
        "regimes.csv regime_wording: the paper's wording (section 5.4) read as a rule: Retriever "
        "= m_last largest and cos(s(N), v_L) >= 0.5 at >= 80 % of the N; Mixer = cos(s, v_0) > "
        "cos(s, v_L) at the first N and cos(s, v_L) above cos(s, v_0) at some N <= n/2; Reset = "
        "m_last not largest and, at every N <= n/2, cos(s, v_0) >= cos(s, v_L) and cos(s, v_L) "
        "< 0.5; none otherwise. The cosines are the means over documents of per_doc.safetensors' "
        "cos_s_v0 and cos_s_vL. stability / stability_wording: the share of 200 document "
        "resamples (--seed; none with --replicates 0 or fewer than 2 documents) that keep the "
        "head's label.",
        "claims.csv: the paper's claims answered yes / no / can't tell by the rules of "
        "docs/design.md section 7 (each row states its rule); C4's argmax runs over 2 <= N < n "
        "of the mean over every query head and document of F, its interval the 2.5 and 97.5 "
        "percentiles of the argmax over 200 document resamples.",
    });
}

// Everything of the manifest but the timings.
// The heads whose profile could not be fitted, and why (profile.csv's fit_failed rows).
nlohmann::json failed_profiles_json(const CompareInputs& in, const FitResults& fits) {
    nlohmann::json heads = nlohmann::json::array();
    for (std::size_t i = 0; i < fits.heads.size(); ++i)
        if (!fits.heads[i].profile_failure.empty())
            heads.push_back({{"layer", in.run.rows[i].layer},
                             {"head", in.run.rows[i].head},
                             {"why", fits.heads[i].profile_failure}});
    return {{"count", heads.size()}, {"heads", heads}};
}

// The manifest's "intervals": whether fits.csv, profile.csv and profile_global.csv carry them.
nlohmann::json intervals_json(const CompareRequest& r, const FitIntervals& intervals) {
    return {{"available", intervals.available},
            {"replicates", intervals.replicates},
            {"seed", r.seed},
            {"level", 0.95},
            {"profile_replicates", intervals.profile_replicates},
            {"method",
             "expanded percentile bootstrap over documents (type 7 at Phi(-sqrt(D/(D-1)) t(D-1, "
             "0.975)) and its complement, Hesterberg 2015); each replicate "
             "refits every head on the resampled per-document arrays, the profile's shape "
             "(p_base, eta, omega, T1, T2) by the full fit in the first profile_replicates; "
             "lambda and C by a ratio transfer; see docs/commands/compare.md"},
            {"note",
             intervals.note.empty() ? nlohmann::json(nullptr) : nlohmann::json(intervals.note)}};
}

// The global fits at a clamp of their search range, beside the simulator's clamps: the median
// β (either model) at 1e-6 or 50 and the global profile's η, ω or p_sink (profile_clamps).
void add_fit_clamps(const FitResults& fits, const FittedSummary& s, nlohmann::json& clamped) {
    auto add = [&](const char* name, double value, const std::string& why) {
        clamped.push_back({{"parameter", name},
                           {"fitted", json_number(value)},
                           {"used", json_number(value)},
                           {"why", why}});
    };
    const std::string beta_why = "median over heads at a bound of the search range [1e-6, 50]";
    if (beta_at_bound(s.beta)) add("beta", s.beta, beta_why);
    if (beta_at_bound(s.beta_offset)) add("beta_offset", s.beta_offset, beta_why);
    const ProfileFit& g = fits.global_profile;
    const ProfileClamps clamps = profile_clamps(g);
    if (clamps.eta) add("eta", g.profile.eta, "global profile: eta at its limit " + format_double(g.eta_limit));
    if (clamps.omega)
        add("omega", g.profile.omega,
            "global profile: omega at 0 or pi with an oscillatory phase (T1 < T2)");
    if (clamps.p_sink)
        add("p_sink", g.profile.p_sink, "global profile: p_sink below 1e-9 (no sink mass)");
}

// The global parameters drawn from fits that failed their assumption check: β, β_offset, c∞
// when most counted heads fail A2, λ and C when most fail A1 (each is a median over those
// heads), the profile parameters when the global profile fails A3.
nlohmann::json from_failed_checks(const CompareInputs& in,
                                  const std::vector<theory::AssumptionCheck>& checks,
                                  const theory::AssumptionCheck& global) {
    std::size_t counted = 0, a1_failed = 0, a2_failed = 0;
    for (std::size_t i = 0; i < checks.size(); ++i) {
        if (!in.counted[i]) continue;
        ++counted;
        a1_failed += !checks[i].a1;
        a2_failed += !checks[i].a2;
    }
    nlohmann::json names = nlohmann::json::array();
    if (2 * a2_failed > counted)
        for (const char* name : {"beta", "beta_offset", "c_inf"})
            names.push_back(name);
    if (2 * a1_failed > counted)
        for (const char* name : {"lambda", "C"})
            names.push_back(name);
    if (!global.a3)
        for (int p = kPSink; p <= kT2; ++p)
            names.push_back(parameter_name(p));
    return names;
}

// fitted_params.json's "intervals_95": [lo, hi] per global parameter, null without one.
nlohmann::json global_intervals_json(const FitResults& fits) {
    nlohmann::json out = nlohmann::json::object();
    for (int p = 0; p < kFitParameters; ++p) {
        const Interval i = fits.intervals.available ? fits.intervals.global[p] : Interval();
        out[parameter_name(p)] = i.available()
                                     ? nlohmann::json::array({json_number(i.lo), json_number(i.hi)})
                                     : nlohmann::json(nullptr);
    }
    return out;
}

}  // namespace

nlohmann::json compare_manifest(const CompareRequest& r, const CompareSettings& settings,
                                const CompareInputs& in, const FitResults& fits,
                                const FittedSummary& s, const EnvelopeResult& envelopes,
                                const Table1& table1, const AssumptionResults& checked) {
    auto absolute = [](const std::string& p) {
        return fs::absolute(p).lexically_normal().string();
    };
    nlohmann::json assumptions = theory::assumptions_summary(checked.heads);
    assumptions["strongest_sinks"] = strongest_sinks(in.run, checked.heads);
    nlohmann::json manifest = manifest_header("compare", r.command_line);
    manifest["command"] = r.command_line;  // present even when empty (library callers)
    manifest.update({
        {"emp", absolute(in.emp)},
        {"sim", r.sim.empty() ? nlohmann::json(nullptr) : nlohmann::json(absolute(r.sim))},
        {"parameters",
         {{"cosines", to_string(settings.cosines)},
          {"max_lag_fit", r.max_lag_fit},
          {"lags_fitted", in.lags_fitted},
          {"kappa", r.kappa ? nlohmann::json(*r.kappa) : nlohmann::json(nullptr)},
          {"count_per", r.count_per},
          {"replicates", r.replicates},
          {"seed", r.seed},
          {"band_replicates", r.band_replicates},
          {"threads", settings.threads}}},
        {"emp_model", in.run.manifest.value("model", nlohmann::json::object())},
        {"emp_parameters", in.run.manifest.value("parameters", nlohmann::json::object())},
        {"envelopes", envelope_manifest(envelopes)},
        {"counting",
         {{"count_per", r.count_per},
          {"query_heads_per_kv_head", in.group},
          {"heads_counted", s.heads_counted},
          {"note", settings.per_kv
                       ? "value-state statistics (lambda, rho0, beta and its MAE, CV, cos by "
                         "lag) counted once per key/value head"
                       : "value-state statistics counted once per query head (a GQA group "
                         "repeats them)"}}},
        {"correlation",
         {{"documents", in.per_doc.docs},
          {"units", settings.per_kv ? "key/value heads (R averaged over the group's query heads)"
                                    : "query heads"},
          {"bootstrap", in.per_doc.docs >= kBootstrapMinimumDocuments
                            ? nlohmann::json("percentile bootstrap over documents")
                            : nlohmann::json(bootstrap_note(in.per_doc.docs))}}},
        {"profile_fits_failed", failed_profiles_json(in, fits)},
        {"intervals", intervals_json(r, fits.intervals)},
        {"assumptions", assumptions},
        {"table1", table1_manifest(table1)},
        {"decisions", compare_decisions()},
    });
    return manifest;
}

nlohmann::json plug_in_manifest(const EnvelopeResult& plug_in, std::size_t heads,
                                const AssumptionResults& checked) {
    std::size_t failing = 0;
    for (const theory::AssumptionCheck& c : checked.heads)
        failing += !c.a2;
    nlohmann::json variants = envelope_manifest(plug_in)["kappa"];
    return {{"reason", "Assumption 2 fails in " + std::to_string(failing) + " of " +
                           std::to_string(heads) +
                           " heads: the verdict with the measured cosines by lag (--cosines "
                           "plug-in) beside the parametric one"},
            {"files", {"verdict_plug_in.csv", "kappa_scan_plug_in.csv"}},
            {"variants", variants}};
}

nlohmann::json head_level_json(const HeadLevelFamily& family) {
    return {{"method",
             "tanh(atanh r +- atanh c), c the 5 % critical |r| of the max-|r| over the N under "
             "permutations of rho0 across units (within layers for the partial): Westfall-Young "
             "single-step max-T"},
            {"family", family.family},
            {"permutations", family.permutations},
            {"critical", json_number(family.critical)},
            {"partial_critical", json_number(family.partial_critical)}};
}

void add_by_length(nlohmann::json& manifest, const ByLengthRun& by_length,
                   const EmpiricalRun& run) {
    manifest["by_length"] = by_length_manifest(by_length, run);
    manifest["decisions"].push_back(
        "by_length_summary.csv and regimes_by_length.csv (the extract ran with --queries "
        "other than last): per length bin of L = t + 1, the mean and the standard deviation "
        "(n - 1 divisor) over every query head of the heads' P_mean and R_mean from "
        "by_length.csv, and the share of heads in each regime of heads_by_length.csv; no "
        "bound or fit is evaluated per bin.");
}

nlohmann::json fitted_params_json(const CompareRequest& r, const CompareInputs& in,
                                  const FitResults& fits, const FittedSummary& s,
                                  const AssumptionResults& checked) {
    nlohmann::json clamped = nlohmann::json::array();
    for (const auto& p : s.sim)
        if (!p.why.empty())
            clamped.push_back({{"parameter", std::string(p.flag).substr(2)},
                               {"fitted", json_number(p.fitted)},
                               {"used", json_number(p.used)},
                               {"why", p.why}});
    add_fit_clamps(fits, s, clamped);
    nlohmann::json unidentified = nlohmann::json::array();
    for (int p = 0; fits.intervals.available && p < kFitParameters; ++p)
        if (fits.intervals.global[p].unidentified) unidentified.push_back(parameter_name(p));
    const ProfileFit& global = fits.global_profile;
    return {
        {"d", in.run.head_dim},
        {"L", s.L},
        {"heads", in.run.rows.size()},
        {"count_per", r.count_per},
        {"heads_counted", s.heads_counted},
        {"lags_fitted", in.lags_fitted},
        {"median_over_heads",
         {{"beta", json_number(s.beta)},
          {"beta_offset", json_number(s.beta_offset)},
          {"c_inf", json_number(s.c_inf)},
          {"lambda", json_number(s.lambda)},
          {"C", json_number(s.C)},
          {"rho0", json_number(s.rho0)}}},
        {"profile",
         {{"p_sink", json_number(global.profile.p_sink)},
          {"p_base", json_number(global.p_base)},
          {"T1", global.profile.T1},
          {"T2", global.profile.T2},
          {"eta", json_number(global.profile.eta)},
          {"omega", json_number(global.profile.omega)},
          {"r2_log", json_number(global.r2_log)},
          {"rmse_log", json_number(global.rmse_log)}}},
        {"clamped", clamped},
        {"intervals_95", global_intervals_json(fits)},
        {"unidentified", unidentified},
        {"from_failed_checks", from_failed_checks(in, checked.heads, checked.global)},
        {"simulate_command", s.simulate_command},
    };
}

nlohmann::json compare_set_manifest(const CompareRequest& r, const std::vector<std::string>& emps,
                                    const std::vector<std::string>& folders,
                                    const EnvelopeResults& envelopes) {
    nlohmann::json listed = nlohmann::json::array();
    for (std::size_t k = 0; k < emps.size(); ++k)
        listed.push_back({{"emp", fs::absolute(emps[k]).lexically_normal().string()},
                          {"folder", folders[k]}});
    nlohmann::json manifest = manifest_header(schema::kind::compare_set, r.command_line);
    manifest.update(
        {{"command", r.command_line},
         {"models", listed},
         {"universal_kappa", universal_kappa_json(envelopes)},
         {"decisions",
          nlohmann::json::array(
              {"universal_kappa.csv: per variant, metric and side, the intersection of the "
               "models' kappa sets (each at 95 %, on the kappa grid they share, refined where "
               "the intersection changes) and "
               "its kappa_edge (the smallest mean gap over the models); no-universal-kappa "
               "when it is empty (the paper's claim is one kappa for every model and head).",
               "Each model's folder is a compare folder of its own (docs/commands/compare.md)."})}});
    return manifest;
}

}  // namespace attngeo::compare
