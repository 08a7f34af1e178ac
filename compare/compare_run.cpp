// The compare pipeline; see compare_run.hpp. Everything is read, fitted and evaluated in
// memory first, so bad input stops the run before OUT is created or any file is written. The
// steps, in order: validate the flags, read the extract folder, fit every head, evaluate the
// envelopes, bootstrap the correlation, format the tables, summarise the fits, write.
#include "compare/compare_run.hpp"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/atomic_file.hpp"
#include "common/errors.hpp"
#include "common/format.hpp"
#include "common/json_file.hpp"
#include "common/manifest_values.hpp"
#include "common/order_statistics.hpp"
#include "common/output_folder.hpp"
#include "common/progress.hpp"
#include "common/run_schema.hpp"
#include "common/size_checks.hpp"
#include "compare/assumptions.hpp"
#include "compare/claims.hpp"
#include "compare/correlation.hpp"
#include "compare/emp_run.hpp"
#include "compare/envelopes.hpp"
#include "compare/fit_intervals.hpp"
#include "compare/fits.hpp"
#include "compare/fixed_bound_sample.hpp"
#include "compare/length_summary.hpp"
#include "compare/parallel_for.hpp"
#include "compare/recovery.hpp"
#include "compare/regime_rules.hpp"
#include "compare/separability_peak.hpp"
#include "compare/table1.hpp"
#include "theory/cosine_geometry.hpp"
#include "theory/head_regime.hpp"
#include "theory/metrics.hpp"

namespace fs = std::filesystem;

namespace attngeo::compare {
namespace {

using Clock = std::chrono::steady_clock;

std::string f(double x) {
    return format_double(x);
}

std::vector<double> renormalised(const std::vector<double>& alpha) {
    double total = 0;
    for (double a : alpha)
        total += a;
    std::vector<double> out(alpha.size());
    for (std::size_t i = 0; i < alpha.size(); ++i)
        out[i] = alpha[i] / total;
    return out;
}

void check_sim_folder(const std::string& sim) {
    const fs::path manifest = fs::path(sim) / schema::file::manifest;
    if (!fs::exists(manifest))
        throw InputError("--sim '" + sim +
                         "': no manifest.json (expected an attngeo simulate folder)");
    (void)read_run_manifest(sim, {schema::kind::simulate});  // its kind and format_version
    if (!fs::is_regular_file(fs::path(sim) / schema::file::simulate_estimates))
        throw InputError("--sim '" + sim +
                         "': no simulate.csv (expected an attngeo simulate folder)");
}

void check_per_doc(const PerDocArrays& a, const EmpiricalRun& run, const std::string& path) {
    if (a.layers != run.layers || a.heads != run.heads)
        throw InputError(path + ": " + std::to_string(a.layers) + " layers x " +
                         std::to_string(a.heads) + " heads, expected " +
                         std::to_string(run.layers) + " x " + std::to_string(run.heads) +
                         " like manifest.json");
    if (a.sizes != run.sizes)
        throw InputError(path + ": tensor \"N\" has " + std::to_string(a.sizes.size()) +
                         " sizes, expected the N grid of pr.csv (" +
                         std::to_string(run.sizes.size()) + " sizes)");
    if (a.docs < 1) throw InputError(path + ": no documents");
    if (a.context != run.context)
        throw InputError(path + ": tensor \"alpha\" has " + std::to_string(a.context) +
                         " positions, expected the context " + std::to_string(run.context) +
                         " of manifest.json");
}

// Query heads per key/value head, from heads.csv's kv_head, which must be head / group (the
// GQA layout extract writes) in every layer.
int gqa_group(const EmpiricalRun& run, const std::string& heads_path) {
    int kv_heads = 0;
    for (const auto& h : run.rows)
        kv_heads = std::max(kv_heads, h.kv_head + 1);
    const int group = kv_heads > 0 && run.heads % kv_heads == 0 ? run.heads / kv_heads : 0;
    for (const auto& h : run.rows)
        if (group == 0 || h.kv_head != h.head / group)
            throw InputError(heads_path + ": layer " + std::to_string(h.layer) + " head " +
                             std::to_string(h.head) + " has kv_head " + std::to_string(h.kv_head) +
                             ", expected head / (heads / kv_heads)" +
                             " with kv_heads = " + std::to_string(kv_heads) +
                             " dividing heads = " + std::to_string(run.heads));
    return group;
}

// ---- step 1: the flags ---------------------------------------------------------------------

// The request's flags, checked and resolved.
struct CompareSettings {
    CosineSource cosines = CosineSource::parametric;
    int threads = 1;     // resolved: never 0
    bool per_kv = true;  // --count-per kv
};

CompareSettings validate_request(const CompareRequest& r) {
    if (r.emp.empty()) throw InputError("--emp: an extract folder is required");
    if (r.emp.size() > 1 && !r.truth.empty())
        throw InputError("--truth: one planted folder goes with one --emp, not " +
                         std::to_string(r.emp.size()));
    if (r.band_replicates < 100)
        throw InputError("--band-replicates: " + std::to_string(r.band_replicates) +
                         ", expected >= 100 (the band's 95 % quantile needs them)");
    if (r.out.empty()) throw InputError("--out: an output folder is required");
    check_output_folder(r.out, "--out");
    if (r.max_lag_fit < 2)
        throw InputError("--max-lag-fit: " + std::to_string(r.max_lag_fit) +
                         ", expected >= 2 (the offset model has two parameters)");
    if (r.replicates < 0)
        throw InputError("--replicates: " + std::to_string(r.replicates) + ", expected >= 0");
    if (r.threads < 0)
        throw InputError("--threads: " + std::to_string(r.threads) + ", expected >= 0");
    if (r.kappa && !(*r.kappa > 0 && std::isfinite(*r.kappa)))
        throw InputError("--kappa: " + f(*r.kappa) + ", expected a finite number > 0");
    CompareSettings settings;
    settings.cosines = parse_cosine_source(r.cosines);
    if (r.count_per != "kv" && r.count_per != "query")
        throw InputError("--count-per: '" + r.count_per + "', expected kv or query");
    settings.threads = r.threads > 0 ? r.threads : omp_get_max_threads();
    settings.per_kv = r.count_per == "kv";
    if (!r.sim.empty()) check_sim_folder(r.sim);
    return settings;
}

// ---- step 2: the extract folder ----------------------------------------------------------

// The extract folder, checked against itself, and how its heads are counted.
struct CompareInputs {
    std::string emp;  // the folder, as given
    EmpiricalRun run;
    PerDocArrays per_doc;
    int lags_fitted = 0;  // K = min(--max-lag-fit, context − 1, lags present)
    int group = 1;        // query heads per key/value head
    // [heads] head i enters medians and histograms (the first query head of each GQA group
    // per kv head; exact, since the group's value-state statistics are identical).
    std::vector<char> counted;
};

std::string per_doc_path(const std::string& emp) {
    return (fs::path(emp) / schema::file::per_document).string();
}

// Reads the per-document arrays beside an already read extract folder and checks them.
CompareInputs read_inputs(const CompareRequest& r, const std::string& emp, EmpiricalRun run,
                          bool per_kv) {
    CompareInputs in;
    in.emp = emp;
    in.per_doc = read_per_doc(per_doc_path(emp));
    // Each bootstrap replicate keeps its S correlations twice (by replicate, then by N).
    if (in.per_doc.docs >= kBootstrapMinimumDocuments)
        check_allocation(
            static_cast<std::uint64_t>(r.replicates),
            2 * (in.per_doc.sizes.size() * sizeof(double) + sizeof(std::vector<double>)),
            "--replicates " + std::to_string(r.replicates));
    check_per_doc(in.per_doc, run, per_doc_path(emp));
    in.lags_fitted = std::min({r.max_lag_fit, run.context - 1, run.max_lag});
    if (in.lags_fitted < 2)
        throw InputError((fs::path(emp) / schema::file::cos_by_lag).string() + ": lags 1.." +
                         std::to_string(run.max_lag) + ", expected at least 2 lags to fit");
    in.group = gqa_group(run, (fs::path(emp) / schema::file::heads).string());
    in.counted.resize(run.rows.size());
    for (std::size_t i = 0; i < run.rows.size(); ++i)
        in.counted[i] = !per_kv || run.rows[i].head % in.group == 0;
    in.run = std::move(run);
    return in;
}

// ---- step 3: fits per head and of the mean profile ---------------------------------------

struct HeadFits {
    DecayFit decay;
    OffsetDecayFit offset;
    ProfileFit profile;
    // Why the profile could not be fitted (e.g. α_0 read as 0: the extract stores the mean α
    // in 2^-64 fixed point); empty when it was. One such head must not stop the comparison.
    std::string profile_failure;
};

struct FitResults {
    std::vector<HeadFits> heads;  // [heads]
    ProfileFit global_profile;    // of the mean α over heads
    FitIntervals intervals;       // bootstrap intervals (step 3b), when there can be any
};

// The point fits of every head as fit_intervals and the assumption checks read them. [heads]
std::vector<PointFits> point_fits(const EmpiricalRun& run, const FitResults& fits) {
    std::vector<PointFits> points(run.rows.size());
    for (std::size_t i = 0; i < run.rows.size(); ++i) {
        PointFits& p = points[i];
        p.decay = fits.heads[i].decay;
        p.offset = fits.heads[i].offset;
        p.lambda = run.rows[i].lambda;
        p.C = run.rows[i].norm_median;
        p.rho0 = run.rows[i].rho0;
        p.has_profile = fits.heads[i].profile_failure.empty();
        p.profile = fits.heads[i].profile;
    }
    return points;
}

PointFits global_point_fits(const FitResults& fits) {
    PointFits global;
    global.has_profile = true;
    global.profile = fits.global_profile;
    return global;
}

// Step 3b: the bootstrap intervals of every fit (fit_intervals.hpp); --replicates 0 turns them
// off with the correlation's interval. An extract folder without the per-document fit arrays
// gets no intervals and one line on stderr unless --quiet (the manifest's "intervals" says it
// too).
FitIntervals bootstrap_fits(const CompareRequest& r, const CompareInputs& in,
                            const FitResults& fits, int threads) {
    FitIntervalSettings settings;
    settings.lags = in.lags_fitted;
    settings.replicates = r.replicates > 0 ? kFitReplicates : 0;
    settings.seed = r.seed;
    settings.threads = threads;
    settings.counted = in.counted;
    if (in.lags_fitted > in.per_doc.max_lag)
        throw InputError(per_doc_path(in.emp) + ": tensor \"cos_by_lag\" has " +
                         std::to_string(in.per_doc.max_lag) + " lags, compare fits " +
                         std::to_string(in.lags_fitted) + " (cos_by_lag.csv's)");
    FitIntervals intervals =
        fit_intervals(in.per_doc, point_fits(in.run, fits), global_point_fits(fits), settings);
    if (!intervals.available && !r.quiet)
        std::fprintf(stderr, "compare: note: %s\n", intervals.note.c_str());
    return intervals;
}

std::size_t failed_profile_fits(const FitResults& fits) {
    std::size_t failed = 0;
    for (const HeadFits& h : fits.heads)
        failed += !h.profile_failure.empty();
    return failed;
}

FitResults fit_heads(const CompareInputs& in, int threads) {
    const EmpiricalRun& run = in.run;
    const int heads = static_cast<int>(run.rows.size());
    FitResults fits;
    fits.heads.resize(heads);
    parallel_for(heads, threads, [&](int i) {
        const EmpiricalHead& h = run.rows[i];
        const std::vector<double> c(h.cos_by_lag.begin(), h.cos_by_lag.begin() + in.lags_fitted);
        fits.heads[i].decay = fit_exponential_decay(c);
        fits.heads[i].offset = fit_offset_exponential_decay(c);
        try {
            fits.heads[i].profile = fit_assumption3_profile(renormalised(h.alpha_by_position));
        } catch (const std::domain_error& e) {
            fits.heads[i].profile_failure = e.what();
        }
    });
    std::vector<double> mean_alpha(run.context, 0.0);
    for (const auto& h : run.rows) {
        const auto a = renormalised(h.alpha_by_position);
        for (int i = 0; i < run.context; ++i)
            mean_alpha[i] += a[i] / heads;
    }
    fits.global_profile = fit_assumption3_profile(renormalised(mean_alpha));
    return fits;
}

// ---- step 4: envelopes ------------------------------------------------------------------------

std::vector<HeadInput> envelope_heads(const EmpiricalRun& run, const FitResults& fits) {
    std::vector<HeadInput> inputs(run.rows.size());
    for (std::size_t i = 0; i < run.rows.size(); ++i) {
        const EmpiricalHead& h = run.rows[i];
        HeadInput& in = inputs[i];
        in.layer = h.layer;
        in.head = h.head;
        in.alpha = renormalised(h.alpha_by_position);
        in.norms = h.norm_by_position;
        in.beta = fits.heads[i].decay.beta;
        in.rho0 = h.rho0;
        in.cos_by_lag = h.cos_by_lag;
        in.sizes = run.sizes;
        in.P_mean = h.P_mean;
        in.R_mean = h.R_mean;
        if (fits.heads[i].profile_failure.empty()) {  // else NaN: no Table-2 regime
            in.profile_p_base = fits.heads[i].profile.p_base;
            in.profile_eta = fits.heads[i].profile.profile.eta;
            in.profile_iv_tolerance = theory::fitted_regime_iv_tolerance(
                fits.heads[i].profile.profile.eta, fits.heads[i].profile.rmse_log);
        }
    }
    return inputs;
}

// The per-document values the verdict's test reads, from per_doc.safetensors (float32, laid out
// [docs, layers, heads, …], so a head's index is layer · heads + head as in run.rows).
ModelInput model_input(const CompareInputs& in, const FitResults& fits) {
    ModelInput m;
    m.name = in.emp;
    m.heads = envelope_heads(in.run, fits);
    m.documents = in.per_doc.docs;
    m.alpha.assign(in.per_doc.alpha.begin(), in.per_doc.alpha.end());
    const int points = static_cast<int>(m.heads.size() * in.run.sizes.size());
    for (auto [target, source] : {std::pair{&m.P, &in.per_doc.P}, std::pair{&m.R, &in.per_doc.R}}) {
        target->units = m.documents;
        target->points = points;
        target->values.assign(source->begin(), source->end());
    }
    // The measurements' ranges per point: P(r_max,N) in [N/n, 1], R in [0, 1].
    const std::vector<double> widths = metric_widths(in.run.sizes, in.run.context);
    for (std::size_t h = 0; h < m.heads.size(); ++h) {
        m.P.width.insert(m.P.width.end(), widths.begin(), widths.end());
        m.R.width.insert(m.R.width.end(), widths.size(), 1.0);
    }
    return m;
}

EnvelopeSettings envelope_settings(const CompareRequest& r, const CompareSettings& settings,
                                   double d, CosineSource cosines) {
    EnvelopeSettings envelope;
    envelope.d = d;
    envelope.cosines = cosines;
    envelope.kappa = r.kappa;
    envelope.threads = settings.threads;
    envelope.replicates = r.band_replicates;
    envelope.seed = r.seed;
    return envelope;
}

// Every model's envelopes in lockstep over κ (a universal κ when there are several).
EnvelopeResults evaluate_model_envelopes(const CompareRequest& r, const CompareSettings& settings,
                                         const std::vector<ModelInput>& models, double d,
                                         CosineSource cosines) {
    EnvelopeSettings envelope = envelope_settings(r, settings, d, cosines);
    // The longest stage: its own progress lines, one per bound variant.
    Progress progress(std::string("compare envelopes (") + to_string(cosines) + ")",
                      static_cast<std::int64_t>(theory::bound_variants().size()), "variants",
                      r.quiet);
    envelope.on_variant = [&](std::int64_t done, std::int64_t) { progress.update(done); };
    EnvelopeResults result = evaluate_envelopes(models, envelope);
    progress.finish(std::to_string(models.size()) + " model" + (models.size() == 1 ? "" : "s") +
                    ", " + std::to_string(models.front().heads.size()) + " heads");
    return result;
}

// ---- step 5: the per-head and per-regime tables --------------------------------------------

// fits.csv, profile.csv, profile_global.csv, regimes.csv, regime_counts.csv, pr_by_regime.csv
// and contrib_by_regime.csv (docs/compare-outputs.md).
struct CompareTables {
    std::string fits, profile, profile_global, regimes, regime_counts, pr_by_regime,
        contrib_by_regime, assumptions;
};

// The interval columns of parameters [first, last]: <name>_lo,<name>_hi each, then
// "unidentified" (the unidentified parameters' names joined by ';').
std::string interval_header(int first, int last) {
    std::string header;
    for (int p = first; p <= last; ++p)
        header += std::string(",") + parameter_name(p) + "_lo," + parameter_name(p) + "_hi";
    return header + ",unidentified";
}

// The fields of interval_header; all empty without intervals.
std::string interval_fields(const ParameterIntervals* intervals, int first, int last) {
    auto field = [](double x) { return std::isfinite(x) ? f(x) : std::string(); };
    std::string fields, names;
    for (int p = first; p <= last; ++p) {
        const Interval none;
        const Interval& i = intervals ? (*intervals)[p] : none;
        fields += "," + field(i.lo) + "," + field(i.hi);
        if (i.unidentified) names += (names.empty() ? "" : ";") + std::string(parameter_name(p));
    }
    return fields + "," + names;
}

const ParameterIntervals* head_intervals(const FitResults& fits, std::size_t i) {
    return fits.intervals.available ? &fits.intervals.heads[i] : nullptr;
}

std::string fits_csv(const CompareInputs& in, const FitResults& fits) {
    std::ostringstream csv;
    csv << "layer,head,beta,mae,beta_offset,c_inf,mae_offset,lambda,C,cv_positional,"
           "cv_pooled,rho0,kv_head,counted,beta_at_bound,beta_offset_at_bound"
        << interval_header(kBeta, kRho0) << "\n";
    for (std::size_t i = 0; i < in.run.rows.size(); ++i) {
        const EmpiricalHead& h = in.run.rows[i];
        const HeadFits& fit = fits.heads[i];
        csv << h.layer << ',' << h.head << ',' << f(fit.decay.beta) << ',' << f(fit.decay.mae)
            << ',' << f(fit.offset.beta) << ',' << f(fit.offset.c_inf) << ',' << f(fit.offset.mae)
            << ',' << f(h.lambda) << ',' << f(h.norm_median) << ',' << f(h.cv_positional) << ','
            << f(h.cv_pooled) << ',' << f(h.rho0) << ',' << h.kv_head << ',' << int(in.counted[i])
            << ',' << int(beta_at_bound(fit.decay.beta)) << ','
            << int(beta_at_bound(fit.offset.beta))
            << interval_fields(head_intervals(fits, i), kBeta, kRho0) << '\n';
    }
    return csv.str();
}

// The columns of a profile fit and its clamp flags, shared by profile.csv (one row per head)
// and profile_global.csv (the fit to the mean over heads, one row).
constexpr const char* kProfileColumns =
    "p_sink,p_base,eta,omega,T1,T2,r2_log,rmse_log,eta_at_bound,omega_at_bound,"
    "p_sink_at_bound,at_bound\n";

std::string profile_fields(const ProfileFit& p) {
    const ProfileClamps clamps = profile_clamps(p);
    std::ostringstream row;
    row << f(p.profile.p_sink) << ',' << f(p.p_base) << ',' << f(p.profile.eta) << ','
        << f(p.profile.omega) << ',' << p.profile.T1 << ',' << p.profile.T2 << ',' << f(p.r2_log)
        << ',' << f(p.rmse_log) << ',' << int(clamps.eta) << ',' << int(clamps.omega) << ','
        << int(clamps.p_sink) << ',' << int(clamps.any()) << '\n';
    return row.str();
}

// One row per head; a head whose profile could not be fitted has empty fitted fields, zero
// clamp flags and fit_failed = 1 (the manifest's profile_fits_failed says why).
std::string profile_csv(const EmpiricalRun& run, const FitResults& fits) {
    std::string columns = kProfileColumns;
    columns.insert(columns.size() - 1, ",fit_failed" + interval_header(kPSink, kT2));
    std::ostringstream csv;
    csv << "layer,head," << columns;
    for (std::size_t i = 0; i < run.rows.size(); ++i) {
        std::string fields = profile_fields(fits.heads[i].profile);
        const bool failed = !fits.heads[i].profile_failure.empty();
        if (failed) fields = ",,,,,,,,0,0,0,0\n";
        fields.insert(fields.size() - 1,
                      (failed ? ",1" : ",0") +
                          interval_fields(failed ? nullptr : head_intervals(fits, i), kPSink, kT2));
        csv << run.rows[i].layer << ',' << run.rows[i].head << ',' << fields;
    }
    return csv.str();
}

std::string regimes_csv(const EmpiricalRun& run, const RegimeLabels& labels) {
    auto field = [](double x) { return std::isnan(x) ? std::string() : f(x); };
    std::ostringstream csv;
    csv << "layer,head,regime,regime_margin,m_sink,m_last,m_rest,sink_mass,last_mass,"
           "regime_wording,rules_agree,stability,stability_wording\n";
    for (std::size_t i = 0; i < run.rows.size(); ++i) {
        const EmpiricalHead& h = run.rows[i];
        const HeadLabels& label = labels.heads[i];
        csv << h.layer << ',' << h.head << ',' << theory::to_string(h.regime) << ','
            << f(h.regime_margin) << ',' << f(h.m_sink) << ',' << f(h.m_last) << ',' << f(h.m_rest)
            << ',' << f(h.sink_mass) << ',' << f(h.last_mass) << ','
            << theory::to_string(label.wording) << ','
            << int(theory::same_label(label.magnitudes, label.wording)) << ','
            << field(label.stability) << ',' << field(label.stability_wording) << '\n';
    }
    return csv.str();
}

bool in_regime(const EmpiricalHead& h, theory::HeadRegime regime) {
    return h.regime == regime;
}

std::string regime_counts_csv(const EmpiricalRun& run) {
    std::ostringstream csv;
    csv << "layer";
    for (theory::HeadRegime regime : theory::kHeadRegimes)
        csv << ',' << theory::to_string(regime);
    csv << '\n';
    for (int l = 0; l < run.layers; ++l) {
        csv << l;
        for (theory::HeadRegime regime : theory::kHeadRegimes) {
            int count = 0;
            for (int h = 0; h < run.heads; ++h)
                count += in_regime(run.at(l, h), regime);
            csv << ',' << count;
        }
        csv << '\n';
    }
    return csv.str();
}

// Plain means over the heads of each regime: P and R by N, α and the contribution by position.
// A regime without heads has no rows.
void regime_mean_csvs(const EmpiricalRun& run, CompareTables& tables) {
    std::ostringstream pr, contrib;
    pr << "regime,N,heads,P_mean,R_mean\n";
    contrib << "regime,pos,heads,alpha_mean,contrib_mean\n";
    for (theory::HeadRegime regime : theory::kHeadRegimes) {
        const char* name = theory::to_string(regime);
        std::vector<const EmpiricalHead*> members;
        for (const auto& h : run.rows)
            if (in_regime(h, regime)) members.push_back(&h);
        if (members.empty()) continue;
        const double m = static_cast<double>(members.size());
        for (std::size_t s = 0; s < run.sizes.size(); ++s) {
            double P = 0, R = 0;
            for (const auto* h : members)
                P += h->P_mean[s], R += h->R_mean[s];
            pr << name << ',' << run.sizes[s] << ',' << members.size() << ',' << f(P / m) << ','
               << f(R / m) << '\n';
        }
        for (int pos = 0; pos < run.context; ++pos) {
            double alpha = 0, sum = 0;
            for (const auto* h : members)
                alpha += h->alpha_by_position[pos], sum += h->contrib_by_position[pos];
            contrib << name << ',' << pos << ',' << members.size() << ',' << f(alpha / m) << ','
                    << f(sum / m) << '\n';
        }
    }
    tables.pr_by_regime = pr.str();
    tables.contrib_by_regime = contrib.str();
}

CompareTables compare_tables(const CompareInputs& in, const FitResults& fits,
                             const RegimeLabels& labels) {
    CompareTables tables;
    tables.fits = fits_csv(in, fits);
    tables.profile = profile_csv(in.run, fits);
    std::string header = kProfileColumns, row = profile_fields(fits.global_profile);
    header.insert(header.size() - 1, interval_header(kPSink, kT2));
    row.insert(
        row.size() - 1,
        interval_fields(fits.intervals.available ? &fits.intervals.global : nullptr, kPSink, kT2));
    tables.profile_global = header + row;
    tables.regimes = regimes_csv(in.run, labels);
    tables.regime_counts = regime_counts_csv(in.run);
    regime_mean_csvs(in.run, tables);
    return tables;
}

// ---- step 6: fitted parameters, the simulate command and Table 1 ---------------------------

// A simulator parameter: the fitted value and the value the simulate command uses.
struct SimParameter {
    const char* flag;
    double fitted, used;
    std::string why;  // empty when used == fitted
};

// Medians over the counted heads and the global profile, as the simulator takes them.
struct FittedSummary {
    int L = 0;
    std::size_t heads_counted = 0;
    double beta = 0, beta_offset = 0, c_inf = 0, lambda = 0, C = 0, rho0 = 0;
    std::vector<SimParameter> sim;  // --lambda, --C, --beta, --rho0 (clamped into the domain)
    std::string simulate_command;
};

std::vector<SimParameter> simulator_parameters(const FittedSummary& s) {
    std::vector<SimParameter> sim;
    SimParameter lambda{"--lambda", s.lambda, s.lambda, ""};
    if (!(s.lambda > 0 && s.lambda < 1)) {
        lambda.used = s.lambda >= 1 ? 0.999 : 0.001;
        lambda.why = "the simulator needs 0 < lambda < 1 (Assumption 1: a compressed sink)";
    }
    sim.push_back(lambda);
    SimParameter C{"--C", s.C, s.C, ""};
    if (!(s.C > 0)) C.used = 1, C.why = "the simulator needs C > 0";
    sim.push_back(C);
    sim.push_back({"--beta", s.beta, s.beta, ""});
    const double limit = theory::max_feasible_rho0(s.L, s.beta);
    SimParameter rho0{"--rho0", s.rho0, s.rho0, ""};
    if (std::abs(s.rho0) > limit) {
        rho0.used = std::copysign(0.999 * limit, s.rho0);
        rho0.why = "|rho0| above the largest feasible value " + f(limit) + " for beta and L " +
                   "(docs/design.md section 4); used 0.999 of it";
    }
    sim.push_back(rho0);
    return sim;
}

FittedSummary summarise_fits(const CompareInputs& in, const FitResults& fits) {
    std::vector<double> betas, lambdas, norms, rho0s, offsets, c_infs;
    for (std::size_t i = 0; i < in.run.rows.size(); ++i) {
        if (!in.counted[i]) continue;
        betas.push_back(fits.heads[i].decay.beta);
        offsets.push_back(fits.heads[i].offset.beta);
        c_infs.push_back(fits.heads[i].offset.c_inf);
        lambdas.push_back(in.run.rows[i].lambda);
        norms.push_back(in.run.rows[i].norm_median);
        rho0s.push_back(in.run.rows[i].rho0);
    }
    FittedSummary s;
    s.L = in.run.context - 1;
    s.heads_counted = betas.size();
    s.beta = median(betas), s.beta_offset = median(offsets), s.c_inf = median(c_infs);
    s.lambda = median(lambdas), s.C = median(norms), s.rho0 = median(rho0s);
    s.sim = simulator_parameters(s);
    const auto& gp = fits.global_profile.profile;
    std::ostringstream command;
    command << "attngeo simulate --d " << in.run.head_dim << " --L " << s.L;
    for (const auto& p : s.sim)
        command << ' ' << p.flag << ' ' << f(p.used);
    command << " --p-sink " << f(gp.p_sink) << " --T1 " << gp.T1 << " --T2 " << gp.T2 << " --eta "
            << f(gp.eta) << " --omega " << f(gp.omega) << " --out sim_fitted";
    s.simulate_command = command.str();
    return s;
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
    if (clamps.eta) add("eta", g.profile.eta, "global profile: eta at its limit " + f(g.eta_limit));
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

nlohmann::json fitted_params_json(const CompareRequest& r, const CompareInputs& in,
                                  const FitResults& fits, const FittedSummary& s,
                                  const nlohmann::json& failed_checks) {
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
        {"from_failed_checks", failed_checks},
        {"simulate_command", s.simulate_command},
    };
}

// Table 1 at the parameters the simulate command uses, with the paper variant's κ.
Table1 fitted_table1(const CompareInputs& in, const FitResults& fits, const FittedSummary& s,
                     const EnvelopeResult& envelopes) {
    // The paper variant's bound rows' κ; 1 when its four sides share none (bound_variants()
    // starts with paper).
    const double rows_kappa = envelopes.variants.front().scan.rows_kappa;
    theory::ModelParameters params;
    params.profile = fits.global_profile.profile;
    params.profile.L = s.L;
    for (const SimParameter& p : s.sim) {
        const std::string flag = p.flag;
        if (flag == "--lambda") params.lambda = p.used;
        if (flag == "--C") params.C = p.used;
        if (flag == "--beta") params.beta = p.used;
        if (flag == "--rho0") params.rho0 = p.used;
    }
    theory::BoundSettings settings;
    settings.d = in.run.head_dim;
    settings.kappa = std::isnan(rows_kappa) ? 1.0 : rows_kappa;
    settings.variant = theory::BoundVariant::paper;
    return sensitivity_table(params, followed_sizes(in.run.sizes), settings);
}

// The assumption checks of every head and of the global profile (A3 only matters there).
struct AssumptionResults {
    std::vector<PointFits> points;               // [heads]
    std::vector<theory::AssumptionCheck> heads;  // [heads]
    theory::AssumptionCheck global;
};

AssumptionResults check_all(const CompareInputs& in, const FitResults& fits) {
    AssumptionResults out;
    out.points = point_fits(in.run, fits);
    out.heads = check_heads(
        in.run, out.points,
        fits.intervals.available ? fits.intervals.heads : std::vector<ParameterIntervals>());
    const PointFits global = global_point_fits(fits);
    theory::AssumptionInputs g;
    g.has_profile = true;
    g.p_sink = global.profile.profile.p_sink;
    g.p_base = global.profile.p_base;
    g.r2_log = global.profile.r2_log;
    g.profile_identified =
        profile_identified(global, fits.intervals.available ? &fits.intervals.global : nullptr);
    out.global = theory::check_assumptions(g);
    return out;
}

// ---- step 7: the manifest and the files ------------------------------------------------------

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
             "lambda and C by a ratio transfer; see docs/compare-outputs.md"},
            {"note",
             intervals.note.empty() ? nlohmann::json(nullptr) : nlohmann::json(intervals.note)}};
}

nlohmann::json compare_manifest(const CompareRequest& r, const CompareSettings& settings,
                                const CompareInputs& in, const FitResults& fits,
                                const FittedSummary& s, const EnvelopeResult& envelopes,
                                const Table1& table1, const nlohmann::json& assumptions) {
    auto absolute = [](const std::string& p) {
        return fs::absolute(p).lexically_normal().string();
    };
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

// Everything one model's folder holds before it is written.
struct ModelStage {
    CompareInputs in;
    FitResults fits;
    std::optional<ByLengthRun> by_length;
    std::vector<PlantedTruth> truth;  // --truth: the planted heads; else empty
    AssumptionResults checked;
    std::vector<CorrelationRow> correlation;
    RegimeLabels labels;                      // both rules and their stability (claim C3)
    std::array<SeparabilityPeak, 2> peaks{};  // F(r_max), F(r_min) (claim C4)
    nlohmann::json timings = nlohmann::json::object();
};

// recovery.csv and recovery_coverage.csv from the staged fits.csv and profile.csv, so that
// every column those tables have (intervals included) reaches the recovery; returns the
// manifest's "recovery" block.
nlohmann::json write_recovery(const CompareRequest& r, const std::vector<PlantedTruth>& truth,
                              int lags_fitted, const fs::path& staged) {
    const CsvTable fits = read_csv_table((staged / schema::file::fits).string());
    const CsvTable profile = read_csv_table((staged / schema::file::profile).string());
    const std::vector<RecoveryRow> rows = recovery_rows(truth, fits, profile, lags_fitted);
    const std::vector<RecoveryCoverage> coverage = recovery_coverage(rows);
    write_file_atomic((staged / schema::file::recovery).string(), recovery_csv(rows));
    write_file_atomic((staged / schema::file::recovery_coverage).string(),
                      recovery_coverage_csv(coverage));
    return recovery_manifest(fs::absolute(r.truth).lexically_normal().string(), coverage);
}

// The share of heads where Assumption 2 fails, and whether that is more than half of them:
// then the plug-in cosines' verdict goes beside the parametric one.
bool most_heads_fail_A2(const AssumptionResults& checked) {
    std::size_t failing = 0;
    for (const theory::AssumptionCheck& c : checked.heads)
        failing += !c.a2;
    return 2 * failing > checked.heads.size();
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

// "16 heads; 120 documents": what a claim about this model's heads is counted in.
std::string head_units(std::size_t heads, int documents) {
    return std::to_string(heads) + " heads; " + std::to_string(documents) + " documents";
}

// claims.csv's rows of one model: C1 per variant, C2, C3 per rule, C4 per F-score, C5 per
// assumption (docs/design.md §7 "The paper's claims, each answered").
std::vector<ClaimRow> model_claims(const CompareSettings& settings, const ModelStage& m,
                                   const EnvelopeResult& envelopes) {
    const int documents = m.in.per_doc.docs;
    const std::string heads = head_units(m.in.run.rows.size(), documents);
    std::vector<ClaimRow> rows;
    for (const VariantResult& v : envelopes.variants)
        rows.push_back(envelopes_claim(v.variant, v.scan, heads));
    const int units = m.correlation.empty() ? 0 : m.correlation.front().heads;
    rows.push_back(sink_recall_claim(
        m.correlation, head_units(units, documents) +
                           (settings.per_kv && m.in.group > 1 ? " (key/value heads)" : "")));
    for (ClaimRow& row : regimes_claims(m.labels, heads))
        rows.push_back(row);
    for (const SeparabilityPeak& peak : m.peaks)
        rows.push_back(separability_claim(peak, m.in.run.context, heads));
    for (ClaimRow& row : assumption_claims(m.checked.heads, m.in.counted))
        rows.push_back(row);
    return rows;
}

// One model's files into `staged` (an existing folder), manifest last.
void write_model_folder(const CompareRequest& r, const CompareSettings& settings,
                        const ModelStage& m, const EnvelopeResult& envelopes,
                        const EnvelopeResult* plug_in, const fs::path& staged,
                        nlohmann::json timings, Clock::time_point start) {
    const auto stage = Clock::now();
    const CompareInputs& in = m.in;
    const FittedSummary summary = summarise_fits(in, m.fits);
    const Table1 table1 = fitted_table1(in, m.fits, summary, envelopes);
    CompareTables tables = compare_tables(in, m.fits, m.labels);
    tables.assumptions = assumptions_csv(in.run, m.checked.points, m.checked.heads, in.counted);
    auto put = [&](const char* name, const std::string& text) {
        write_file_atomic((staged / name).string(), text);
    };
    put(schema::file::fits, tables.fits);
    put(schema::file::profile, tables.profile);
    put(schema::file::profile_global, tables.profile_global);
    put(schema::file::regimes, tables.regimes);
    put(schema::file::regime_counts, tables.regime_counts);
    put(schema::file::pr_by_regime, tables.pr_by_regime);
    put(schema::file::contrib_by_regime, tables.contrib_by_regime);
    put(schema::file::assumptions, tables.assumptions);
    write_envelope_files(envelopes, staged.string());
    if (plug_in) write_verdict_files(*plug_in, staged.string(), "_plug_in");
    write_correlation_csv(m.correlation, (staged / schema::file::corr_rho0).string());
    put(schema::file::claims, claims_csv(model_claims(settings, m, envelopes)));
    const nlohmann::json fitted = fitted_params_json(
        r, in, m.fits, summary, from_failed_checks(in, m.checked.heads, m.checked.global));
    put(schema::file::fitted_params, fitted.dump(2) + "\n");
    put(schema::file::table1, table1_csv(table1));
    nlohmann::json assumptions = theory::assumptions_summary(m.checked.heads);
    assumptions["strongest_sinks"] = strongest_sinks(in.run, m.checked.heads);
    nlohmann::json manifest =
        compare_manifest(r, settings, in, m.fits, summary, envelopes, table1, assumptions);
    if (plug_in) manifest["plug_in"] = plug_in_manifest(*plug_in, in.run.rows.size(), m.checked);
    const HeadLevelFamily family = head_level_family(m.correlation);
    manifest["correlation"]["head_level"] = {
        {"method",
         "tanh(atanh r +- atanh c), c the 5 % critical |r| of the max-|r| over the N under "
         "permutations of rho0 across units (within layers for the partial): Westfall-Young "
         "single-step max-T"},
        {"family", family.family},
        {"permutations", family.permutations},
        {"critical", json_number(family.critical)},
        {"partial_critical", json_number(family.partial_critical)}};
    if (m.by_length) {
        put(schema::file::by_length_summary, by_length_summary_csv(*m.by_length));
        put(schema::file::regimes_by_length, regimes_by_length_csv(*m.by_length));
        manifest["by_length"] = by_length_manifest(*m.by_length, in.run);
        manifest["decisions"].push_back(
            "by_length_summary.csv and regimes_by_length.csv (the extract ran with --queries "
            "other than last): per length bin of L = t + 1, the mean and the standard deviation "
            "(n - 1 divisor) over every query head of the heads' P_mean and R_mean from "
            "by_length.csv, and the share of heads in each regime of heads_by_length.csv; no "
            "bound or fit is evaluated per bin.");
    }
    if (!m.truth.empty()) manifest["recovery"] = write_recovery(r, m.truth, in.lags_fitted, staged);
    timings.update(m.timings);
    timings["write_s"] = seconds_since(stage);
    timings["total_s"] = seconds_since(start);
    manifest["timings"] = timings;
    put(schema::file::manifest, manifest.dump(2) + "\n");
}

// Step 2 of one extract folder: read and check everything, before any progress line, so a
// bad folder gives one line.
ModelStage read_model(const CompareRequest& r, const CompareSettings& settings,
                      const std::string& emp) {
    ModelStage m;
    const auto stage = Clock::now();
    EmpiricalRun run = read_empirical_run(emp);
    if (!fs::is_regular_file(per_doc_path(emp)))
        throw InputError(per_doc_path(emp) +
                         ": missing (expected the per-document arrays of extract)");
    if (!r.truth.empty()) m.truth = read_planted_truth(r.truth, run.layers, run.heads);
    m.by_length = read_by_length(run);
    m.in = read_inputs(r, emp, std::move(run), settings.per_kv);
    m.timings["read_s"] = seconds_since(stage);
    return m;
}

// Steps 3 and 5 of one read folder: fit, check the assumptions, the correlation.
void fit_model(const CompareRequest& r, const CompareSettings& settings, ModelStage& m,
               Progress& progress) {
    progress.update(1, "read " + std::to_string(m.in.run.rows.size()) + " heads of '" + m.in.emp +
                           "'; fitting");
    auto stage = Clock::now();
    m.fits = fit_heads(m.in, settings.threads);
    m.timings["fits_s"] = seconds_since(stage);
    stage = Clock::now();
    m.fits.intervals = bootstrap_fits(r, m.in, m.fits, settings.threads);
    m.timings["intervals_s"] = seconds_since(stage);
    m.checked = check_all(m.in, m.fits);
    stage = Clock::now();
    m.correlation = recall_rho0_correlation(m.in.per_doc, r.replicates, r.seed, 1,
                                            settings.per_kv ? m.in.group : 1);
    m.timings["correlation_s"] = seconds_since(stage);
    stage = Clock::now();
    const int claim_replicates = r.replicates > 0 ? kFitReplicates : 0;
    m.labels = label_heads(m.in.run, m.in.per_doc, claim_replicates, r.seed, settings.threads);
    m.peaks = separability_peaks(m.in.per_doc, m.in.run.context, claim_replicates, r.seed,
                                 settings.threads);
    m.timings["claims_s"] = seconds_since(stage);
    const std::size_t failed = failed_profile_fits(m.fits);
    progress.update(2, "fits done" + (failed > 0 ? " (" + std::to_string(failed) +
                                                       " head profiles not fitted: manifest.json "
                                                       "profile_fits_failed)"
                                                 : std::string()));
}

// The folder name of model k of several: its index and the extract folder's name.
std::string model_folder_name(std::size_t k, const std::string& emp) {
    std::string name = fs::path(emp).lexically_normal().filename().string();
    if (name.empty() || name == "." || name == "..")
        name = fs::absolute(emp).lexically_normal().filename().string();
    for (char& c : name)
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_')) c = '_';
    char prefix[16];
    std::snprintf(prefix, sizeof prefix, "%02zu-", k + 1);
    return prefix + name;
}

// Several models: the universal κ table and the set's manifest beside their folders.
void write_model_set(const CompareRequest& r, const std::vector<ModelStage>& models,
                     const EnvelopeResults& envelopes, const fs::path& staged) {
    write_file_atomic((staged / schema::file::universal_kappa).string(),
                      universal_kappa_csv(envelopes));
    nlohmann::json listed = nlohmann::json::array();
    for (std::size_t k = 0; k < models.size(); ++k)
        listed.push_back({{"emp", fs::absolute(models[k].in.emp).lexically_normal().string()},
                          {"folder", model_folder_name(k, models[k].in.emp)}});
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
               "Each model's folder is a compare folder of its own (docs/compare-outputs.md)."})}});
    write_file_atomic((staged / schema::file::manifest).string(), manifest.dump(2) + "\n");
}

}  // namespace

void run_compare(const CompareRequest& r) {
    const auto start = Clock::now();
    const CompareSettings settings = validate_request(r);
    std::vector<ModelStage> models;
    for (const std::string& emp : r.emp)
        models.push_back(read_model(r, settings, emp));
    const int head_dim = models.front().in.run.head_dim;
    for (const ModelStage& m : models)
        if (m.in.run.head_dim != head_dim)
            throw InputError("--emp '" + m.in.emp + "': head_dim " +
                             std::to_string(m.in.run.head_dim) + ", expected " +
                             std::to_string(head_dim) + " like '" + models.front().in.emp +
                             "' (one d for every model's bounds)");
    // Stages for people and logs: read, fits (with the correlation), envelopes (the κ scan over
    // variants), write; started once the inputs validate, so a bad folder gives one line.
    Progress progress("compare", 4, "stages", r.quiet);
    for (ModelStage& m : models)
        fit_model(r, settings, m, progress);

    auto stage = Clock::now();
    std::vector<ModelInput> inputs;
    for (const ModelStage& m : models)
        inputs.push_back(model_input(m.in, m.fits));
    const EnvelopeResults envelopes =
        evaluate_model_envelopes(r, settings, inputs, head_dim, settings.cosines);
    // Beside the parametric verdict, the plug-in one where A2 fails in most heads.
    std::vector<std::optional<EnvelopeResult>> plug_in(models.size());
    for (std::size_t k = 0; k < models.size(); ++k)
        if (settings.cosines == CosineSource::parametric && most_heads_fail_A2(models[k].checked))
            plug_in[k] =
                evaluate_model_envelopes(r, settings, {inputs[k]}, head_dim, CosineSource::plug_in)
                    .models.front();
    const double envelopes_s = seconds_since(stage);
    progress.update(3, "envelopes done; writing");

    OutputFolder folder(r.out, "--out");
    const fs::path out(folder.staging());
    for (std::size_t k = 0; k < models.size(); ++k) {
        fs::path target = out;
        if (models.size() > 1) {
            target = out / model_folder_name(k, models[k].in.emp);
            fs::create_directories(target);
        }
        nlohmann::json timings = {{"envelopes_s", envelopes_s}};
        write_model_folder(r, settings, models[k], envelopes.models[k],
                           plug_in[k] ? &*plug_in[k] : nullptr, target, timings, start);
    }
    if (models.size() > 1) write_model_set(r, models, envelopes, out);
    folder.commit();
    progress.finish("wrote '" + r.out + "'");
}

}  // namespace attngeo::compare
