// The compare pipeline; see compare_run.hpp. Everything is read, fitted and evaluated in
// memory first, so bad input stops the run before OUT is created or any file is written. The
// steps, in order: validate the flags, read the extract folder, fit every head, evaluate the
// envelopes, bootstrap the correlation, summarise the fits, write. What the steps hand each
// other is compare_steps.hpp; the CSV tables are compare_tables.cpp's, the JSON files
// compare_manifest.cpp's.
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
#include "compare/compare_manifest.hpp"
#include "compare/compare_steps.hpp"
#include "compare/compare_tables.hpp"
#include "compare/correlation.hpp"
#include "compare/envelopes.hpp"
#include "compare/extract_folder_reader.hpp"
#include "compare/fit_intervals.hpp"
#include "compare/fits.hpp"
#include "compare/fixed_bound_sample.hpp"
#include "compare/length_summary.hpp"
#include "compare/parallel_for.hpp"
#include "compare/recovery.hpp"
#include "compare/regime_rules.hpp"
#include "compare/separability_peak.hpp"
#include "compare/sink_relations.hpp"
#include "compare/table1.hpp"
#include "theory/cosine_geometry.hpp"
#include "theory/head_regime.hpp"
#include "theory/metrics.hpp"

namespace fs = std::filesystem;

namespace attngeo::compare {
namespace {

using Clock = std::chrono::steady_clock;

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
        throw InputError("--kappa: " + format_double(*r.kappa) + ", expected a finite number > 0");
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

// ---- step 5: fitted parameters, the simulate command, Table 1, the assumption checks ------

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
        rho0.why = "|rho0| above the largest feasible value " + format_double(limit) +
                   " for beta and L " + "(docs/design.md section 4); used 0.999 of it";
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
        command << ' ' << p.flag << ' ' << format_double(p.used);
    command << " --p-sink " << format_double(gp.p_sink) << " --T1 " << gp.T1 << " --T2 " << gp.T2
            << " --eta " << format_double(gp.eta) << " --omega " << format_double(gp.omega)
            << " --out sim_fitted";
    s.simulate_command = command.str();
    return s;
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

// ---- step 6: the files (tables: compare_tables.cpp; JSON: compare_manifest.cpp) ------------

// Everything one model's folder holds before it is written.
struct ModelStage {
    CompareInputs in;
    FitResults fits;
    std::optional<ByLengthRun> by_length;
    std::vector<PlantedTruth> truth;  // --truth: the planted heads; else empty
    AssumptionResults checked;
    std::vector<CorrelationRow> correlation;
    std::vector<SinkRelationRow> sink_relations;  // the literature's sink measures (§15)
    RegimeLabels labels;                          // both rules and their stability (claim C3)
    std::array<SeparabilityPeak, 2> peaks{};      // F(r_max), F(r_min) (claim C4)
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
    write_sink_relations_csv(m.sink_relations, (staged / schema::file::sink_relations).string());
    put(schema::file::claims, claims_csv(model_claims(settings, m, envelopes)));
    const nlohmann::json fitted = fitted_params_json(r, in, m.fits, summary, m.checked);
    put(schema::file::fitted_params, fitted.dump(2) + "\n");
    put(schema::file::table1, table1_csv(table1));
    nlohmann::json manifest =
        compare_manifest(r, settings, in, m.fits, summary, envelopes, table1, m.checked);
    if (plug_in) manifest["plug_in"] = plug_in_manifest(*plug_in, in.run.rows.size(), m.checked);
    manifest["correlation"]["head_level"] = head_level_json(head_level_family(m.correlation));
    if (m.by_length) {
        put(schema::file::by_length_summary, by_length_summary_csv(*m.by_length));
        put(schema::file::regimes_by_length, regimes_by_length_csv(*m.by_length));
        add_by_length(manifest, *m.by_length, in.run);
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
    m.sink_relations = sink_relations(m.in.per_doc, settings.per_kv ? m.in.group : 1, r.seed);
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
    std::vector<std::string> emps, folders;
    for (std::size_t k = 0; k < models.size(); ++k) {
        emps.push_back(models[k].in.emp);
        folders.push_back(model_folder_name(k, models[k].in.emp));
    }
    const nlohmann::json manifest = compare_set_manifest(r, emps, folders, envelopes);
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
