// The compare pipeline; see compare_run.hpp. Everything is read, fitted and evaluated in
// memory first, so bad input stops the run before OUT is created or any file is written.
#include "compare/compare_run.hpp"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <exception>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "attngeo/version.hpp"
#include "common/atomic_file.hpp"
#include "common/errors.hpp"
#include "common/format.hpp"
#include "common/json_file.hpp"
#include "common/manifest_values.hpp"
#include "common/output_folder.hpp"
#include "common/progress.hpp"
#include "common/size_checks.hpp"
#include "compare/correlation.hpp"
#include "compare/emp_run.hpp"
#include "compare/envelopes.hpp"
#include "compare/fits.hpp"
#include "compare/parallel_for.hpp"
#include "simulate/generator.hpp"

namespace fs = std::filesystem;

namespace attngeo::compare {
namespace {

using Clock = std::chrono::steady_clock;

double median(std::vector<double> values) {
    std::sort(values.begin(), values.end());
    const std::size_t n = values.size();
    return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

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
    const fs::path manifest = fs::path(sim) / "manifest.json";
    if (!fs::exists(manifest))
        throw InputError("--sim '" + sim +
                         "': no manifest.json (expected an attngeo simulate folder)");
    const nlohmann::json json = read_json_file(manifest.string(), "a simulate manifest");
    if (!json.is_object() || !json.contains("kind") || json.at("kind") != "simulate")
        throw InputError(manifest.string() + ": kind is " +
                         (json.is_object() && json.contains("kind") ? json.at("kind").dump()
                                                                    : std::string("missing")) +
                         ", expected \"simulate\" (a folder written by attngeo simulate)");
    if (!fs::is_regular_file(fs::path(sim) / "simulate.csv"))
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
}

struct HeadFits {
    DecayFit decay;
    OffsetDecayFit offset;
    ProfileFit profile;
};

// A simulator parameter: the fitted value and the value the simulate command uses.
struct SimParameter {
    const char* flag;
    double fitted, used;
    std::string why;  // empty when used == fitted
};

const char* kRegimes[3] = {"Retriever", "Mixer", "Reset"};

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

}  // namespace

void run_compare(const CompareRequest& r) {
    const auto start = Clock::now();
    nlohmann::json timings;
    // ---- flags ----------------------------------------------------------------------------
    if (r.emp.empty()) throw InputError("--emp: an extract folder is required");
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
    const CosineSource cosines = parse_cosine_source(r.cosines);
    if (r.count_per != "kv" && r.count_per != "query")
        throw InputError("--count-per: '" + r.count_per + "', expected kv or query");
    const int threads = r.threads > 0 ? r.threads : omp_get_max_threads();
    if (!r.sim.empty()) check_sim_folder(r.sim);

    // ---- inputs ---------------------------------------------------------------------------
    auto stage = Clock::now();
    const EmpiricalRun run = read_empirical_run(r.emp);
    const std::string per_doc_path = (fs::path(r.emp) / "per_doc.safetensors").string();
    if (!fs::is_regular_file(per_doc_path))
        throw InputError(per_doc_path + ": missing (expected the per-document arrays of extract)");
    // Stages for people and logs: read, fits, envelopes (κ scan over variants), correlation,
    // write.
    Progress progress("compare", 5, "stages", r.quiet);
    const PerDocArrays per_doc = read_per_doc(per_doc_path);
    // Each bootstrap replicate keeps its S correlations twice (by replicate, then by N).
    if (per_doc.docs >= kBootstrapMinimumDocuments)
        check_allocation(static_cast<std::uint64_t>(r.replicates),
                         2 * (per_doc.sizes.size() * sizeof(double) + sizeof(std::vector<double>)),
                         "--replicates " + std::to_string(r.replicates));
    check_per_doc(per_doc, run, per_doc_path);
    const int K = std::min({r.max_lag_fit, run.context - 1, run.max_lag});
    if (K < 2)
        throw InputError((fs::path(r.emp) / "cos_by_lag.csv").string() + ": lags 1.." +
                         std::to_string(run.max_lag) + ", expected at least 2 lags to fit");
    const int group = gqa_group(run, (fs::path(r.emp) / "heads.csv").string());
    const bool per_kv = r.count_per == "kv";
    // counted[i]: head i enters medians and histograms (the first query head of each GQA
    // group per kv head; exact, since the group's value-state statistics are identical).
    std::vector<char> counted(run.rows.size());
    for (std::size_t i = 0; i < run.rows.size(); ++i)
        counted[i] = !per_kv || run.rows[i].head % group == 0;
    timings["read_s"] = seconds_since(stage);
    progress.update(1, "read " + std::to_string(run.rows.size()) + " heads; fitting");

    // ---- fits per head and of the mean profile ---------------------------------------------
    stage = Clock::now();
    const int heads = static_cast<int>(run.rows.size());
    const int n = run.context;
    std::vector<HeadFits> fits(heads);
    parallel_for(heads, threads, [&](int i) {
        const EmpiricalHead& h = run.rows[i];
        const std::vector<double> c(h.cos_by_lag.begin(), h.cos_by_lag.begin() + K);
        fits[i].decay = fit_exponential_decay(c);
        fits[i].offset = fit_offset_exponential_decay(c);
        try {
            fits[i].profile = fit_assumption3_profile(renormalised(h.alpha_by_position));
        } catch (const std::domain_error& e) {
            throw InputError((fs::path(r.emp) / "by_position.csv").string() + ": layer " +
                             std::to_string(h.layer) + " head " + std::to_string(h.head) +
                             ": alpha_mean cannot be fitted: " + e.what());
        }
    });
    std::vector<double> mean_alpha(n, 0.0);
    for (const auto& h : run.rows) {
        const auto a = renormalised(h.alpha_by_position);
        for (int i = 0; i < n; ++i)
            mean_alpha[i] += a[i] / heads;
    }
    const ProfileFit global_profile = fit_assumption3_profile(renormalised(mean_alpha));
    timings["fits_s"] = seconds_since(stage);
    progress.update(2, "fits done; envelopes and the kappa scan over variants");

    // ---- envelopes and correlation (A2's half of compare/) ---------------------------------
    stage = Clock::now();
    std::vector<HeadInput> inputs(heads);
    for (int i = 0; i < heads; ++i) {
        const EmpiricalHead& h = run.rows[i];
        HeadInput& in = inputs[i];
        in.layer = h.layer;
        in.head = h.head;
        in.alpha = renormalised(h.alpha_by_position);
        in.norms = h.norm_by_position;
        in.beta = fits[i].decay.beta;
        in.rho0 = h.rho0;
        in.cos_by_lag = h.cos_by_lag;
        in.sizes = run.sizes;
        in.P_mean = h.P_mean;
        in.R_mean = h.R_mean;
        for (const auto& se : h.P_se)  // a missing standard error has no interval
            in.P_se.push_back(se.value_or(std::numeric_limits<double>::quiet_NaN()));
        for (const auto& se : h.R_se)
            in.R_se.push_back(se.value_or(std::numeric_limits<double>::quiet_NaN()));
        in.documents = h.docs;
        in.profile_p_base = fits[i].profile.p_base;
        in.profile_eta = fits[i].profile.profile.eta;
    }
    EnvelopeSettings settings;
    settings.d = run.head_dim;
    settings.cosines = cosines;
    settings.kappa = r.kappa;
    settings.threads = threads;
    const EnvelopeResult envelopes = evaluate_envelopes(inputs, settings);
    timings["envelopes_s"] = seconds_since(stage);
    progress.update(3, "envelopes done; bootstrap correlation");
    stage = Clock::now();
    const auto correlation =
        recall_rho0_correlation(per_doc, r.replicates, r.seed, 1, per_kv ? group : 1);
    timings["correlation_s"] = seconds_since(stage);
    progress.update(4, "correlation done; writing");

    // ---- tables -------------------------------------------------------------------------------
    std::ostringstream fits_csv, profile_csv, regimes_csv, counts_csv, pr_csv, contrib_csv;
    fits_csv << "layer,head,beta,mae,beta_offset,c_inf,mae_offset,lambda,C,cv_positional,"
                "cv_pooled,rho0,kv_head,counted\n";
    profile_csv << "layer,head,p_sink,p_base,eta,omega,T1,T2,r2_log,rmse_log\n";
    auto profile_row = [&](int layer, int head, const ProfileFit& p) {
        profile_csv << layer << ',' << head << ',' << f(p.profile.p_sink) << ',' << f(p.p_base)
                    << ',' << f(p.profile.eta) << ',' << f(p.profile.omega) << ',' << p.profile.T1
                    << ',' << p.profile.T2 << ',' << f(p.r2_log) << ',' << f(p.rmse_log) << '\n';
    };
    regimes_csv << "layer,head,regime,regime_margin,m_sink,m_last,m_rest,sink_mass,last_mass\n";
    for (int i = 0; i < heads; ++i) {
        const EmpiricalHead& h = run.rows[i];
        const HeadFits& fit = fits[i];
        fits_csv << h.layer << ',' << h.head << ',' << f(fit.decay.beta) << ',' << f(fit.decay.mae)
                 << ',' << f(fit.offset.beta) << ',' << f(fit.offset.c_inf) << ','
                 << f(fit.offset.mae) << ',' << f(h.lambda) << ',' << f(h.norm_median) << ','
                 << f(h.cv_positional) << ',' << f(h.cv_pooled) << ',' << f(h.rho0) << ','
                 << h.kv_head << ',' << int(counted[i]) << '\n';
        profile_row(h.layer, h.head, fit.profile);
        regimes_csv << h.layer << ',' << h.head << ',' << h.regime << ',' << f(h.regime_margin)
                    << ',' << f(h.m_sink) << ',' << f(h.m_last) << ',' << f(h.m_rest) << ','
                    << f(h.sink_mass) << ',' << f(h.last_mass) << '\n';
    }
    profile_row(-1, -1, global_profile);

    counts_csv << "layer,Retriever,Mixer,Reset\n";
    for (int l = 0; l < run.layers; ++l) {
        int count[3] = {0, 0, 0};
        for (int h = 0; h < run.heads; ++h)
            for (int k = 0; k < 3; ++k)
                count[k] += run.at(l, h).regime == kRegimes[k];
        counts_csv << l << ',' << count[0] << ',' << count[1] << ',' << count[2] << '\n';
    }
    pr_csv << "regime,N,heads,P_mean,R_mean\n";
    contrib_csv << "regime,pos,heads,alpha_mean,contrib_mean\n";
    for (const char* regime : kRegimes) {
        std::vector<const EmpiricalHead*> members;
        for (const auto& h : run.rows)
            if (h.regime == regime) members.push_back(&h);
        if (members.empty()) continue;  // no row for a regime without heads
        const double m = static_cast<double>(members.size());
        for (std::size_t s = 0; s < run.sizes.size(); ++s) {
            double P = 0, R = 0;
            for (const auto* h : members)
                P += h->P_mean[s], R += h->R_mean[s];
            pr_csv << regime << ',' << run.sizes[s] << ',' << members.size() << ',' << f(P / m)
                   << ',' << f(R / m) << '\n';
        }
        for (int pos = 0; pos < n; ++pos) {
            double alpha = 0, contrib = 0;
            for (const auto* h : members)
                alpha += h->alpha_by_position[pos], contrib += h->contrib_by_position[pos];
            contrib_csv << regime << ',' << pos << ',' << members.size() << ',' << f(alpha / m)
                        << ',' << f(contrib / m) << '\n';
        }
    }

    // ---- fitted parameters and the simulate command -------------------------------------------
    std::vector<double> betas, lambdas, norms, rho0s, offsets, c_infs;
    for (int i = 0; i < heads; ++i) {
        if (!counted[i]) continue;
        betas.push_back(fits[i].decay.beta);
        offsets.push_back(fits[i].offset.beta);
        c_infs.push_back(fits[i].offset.c_inf);
        lambdas.push_back(run.rows[i].lambda);
        norms.push_back(run.rows[i].norm_median);
        rho0s.push_back(run.rows[i].rho0);
    }
    const int L = n - 1;
    const double beta = median(betas), lambda = median(lambdas), C = median(norms),
                 rho0 = median(rho0s);
    std::vector<SimParameter> sim;
    {
        SimParameter p{"--lambda", lambda, lambda, ""};
        if (!(lambda > 0 && lambda < 1)) {
            p.used = lambda >= 1 ? 0.999 : 0.001;
            p.why = "the simulator needs 0 < lambda < 1 (Assumption 1: a compressed sink)";
        }
        sim.push_back(p);
    }
    {
        SimParameter p{"--C", C, C, ""};
        if (!(C > 0)) p.used = 1, p.why = "the simulator needs C > 0";
        sim.push_back(p);
    }
    sim.push_back({"--beta", beta, beta, ""});
    {
        const double limit = simulate::max_feasible_rho0(L, beta);
        SimParameter p{"--rho0", rho0, rho0, ""};
        if (std::abs(rho0) > limit) {
            p.used = std::copysign(0.999 * limit, rho0);
            p.why = "|rho0| above the largest feasible value " + f(limit) + " for beta and L " +
                    "(SPEC 4); used 0.999 of it";
        }
        sim.push_back(p);
    }
    const auto& gp = global_profile.profile;
    std::ostringstream command;
    command << "attngeo simulate --d " << run.head_dim << " --L " << L;
    for (const auto& p : sim)
        command << ' ' << p.flag << ' ' << f(p.used);
    command << " --p-sink " << f(gp.p_sink) << " --T1 " << gp.T1 << " --T2 " << gp.T2 << " --eta "
            << f(gp.eta) << " --omega " << f(gp.omega) << " --out sim_fitted";
    nlohmann::json clamped = nlohmann::json::array();
    for (const auto& p : sim)
        if (!p.why.empty())
            clamped.push_back({{"parameter", std::string(p.flag).substr(2)},
                               {"fitted", json_number(p.fitted)},
                               {"used", json_number(p.used)},
                               {"why", p.why}});
    const nlohmann::json fitted_params = {
        {"d", run.head_dim},
        {"L", L},
        {"heads", heads},
        {"count_per", r.count_per},
        {"heads_counted", betas.size()},
        {"lags_fitted", K},
        {"median_over_heads",
         {{"beta", json_number(beta)},
          {"beta_offset", json_number(median(offsets))},
          {"c_inf", json_number(median(c_infs))},
          {"lambda", json_number(lambda)},
          {"C", json_number(C)},
          {"rho0", json_number(rho0)}}},
        {"profile",
         {{"p_sink", json_number(gp.p_sink)},
          {"p_base", json_number(global_profile.p_base)},
          {"T1", gp.T1},
          {"T2", gp.T2},
          {"eta", json_number(gp.eta)},
          {"omega", json_number(gp.omega)},
          {"r2_log", json_number(global_profile.r2_log)},
          {"rmse_log", json_number(global_profile.rmse_log)}}},
        {"clamped", clamped},
        {"simulate_command", command.str()},
    };

    // ---- manifest -----------------------------------------------------------------------------
    auto absolute = [](const std::string& p) {
        return fs::absolute(p).lexically_normal().string();
    };
    nlohmann::json manifest = {
        {"tool", "attngeo"},
        {"version", kVersion},
        {"git_commit", kGitCommit},
        {"kind", "compare"},
        {"command", r.command_line},
        {"emp", absolute(r.emp)},
        {"sim", r.sim.empty() ? nlohmann::json(nullptr) : nlohmann::json(absolute(r.sim))},
        {"parameters",
         {{"cosines", to_string(cosines)},
          {"max_lag_fit", r.max_lag_fit},
          {"lags_fitted", K},
          {"kappa", r.kappa ? nlohmann::json(*r.kappa) : nlohmann::json(nullptr)},
          {"count_per", r.count_per},
          {"replicates", r.replicates},
          {"seed", r.seed},
          {"threads", threads}}},
        {"emp_model", run.manifest.value("model", nlohmann::json::object())},
        {"emp_parameters", run.manifest.value("parameters", nlohmann::json::object())},
        {"envelopes", envelope_manifest(envelopes)},
        {"counting",
         {{"count_per", r.count_per},
          {"query_heads_per_kv_head", group},
          {"heads_counted", betas.size()},
          {"note", per_kv ? "value-state statistics (lambda, rho0, beta and its MAE, CV, cos by "
                            "lag) counted once per key/value head"
                          : "value-state statistics counted once per query head (a GQA group "
                            "repeats them)"}}},
        {"correlation",
         {{"documents", per_doc.docs},
          {"units",
           per_kv ? "key/value heads (R averaged over the group's query heads)" : "query heads"},
          {"bootstrap", per_doc.docs >= kBootstrapMinimumDocuments
                            ? nlohmann::json("percentile bootstrap over documents")
                            : nlohmann::json(bootstrap_note(per_doc.docs))}}},
        {"decisions",
         nlohmann::json::array({
             "beta per head: least squares of exp(-beta k) to cos_mean at lags k = 1..K, K = "
             "min(--max-lag-fit, context - 1, lags present); beta in [1e-6, 50] by a 241-point "
             "log scan then Brent in log beta. MAE = mean_k |c(k) - exp(-beta k)| (SPEC 7).",
             "Offset model c_inf + (1 - c_inf) exp(-beta k): c_inf in closed form for each beta "
             "(unconstrained), beta minimised like the plain model.",
             "Profile (Assumption 3) per head and for the mean alpha over heads (layer = head = "
             "-1): p_sink = alpha_0 exactly, p_base from the normalisation so the profile sums "
             "to 1; T1, T2, eta, omega minimise the squared log residuals over positions 1..n-1 "
             "(zeros left out): linearised grid search, then the exact objective by Brent and "
             "+-1 moves of T1, T2. With T1 = T2 omega is reported as 0.",
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
         })},
    };

    // ---- write --------------------------------------------------------------------------------
    stage = Clock::now();
    // Staged beside --out and moved in whole (SPEC §10): a full disk leaves no half folder.
    OutputFolder folder(r.out, "--out");
    const fs::path out(folder.staging());
    write_file_atomic((out / "fits.csv").string(), fits_csv.str());
    write_file_atomic((out / "profile.csv").string(), profile_csv.str());
    write_file_atomic((out / "regimes.csv").string(), regimes_csv.str());
    write_file_atomic((out / "regime_counts.csv").string(), counts_csv.str());
    write_file_atomic((out / "pr_by_regime.csv").string(), pr_csv.str());
    write_file_atomic((out / "contrib_by_regime.csv").string(), contrib_csv.str());
    write_envelope_files(envelopes, out.string());
    write_correlation_csv(correlation, (out / "corr_rho0.csv").string());
    write_file_atomic((out / "fitted_params.json").string(), fitted_params.dump(2) + "\n");
    timings["write_s"] = seconds_since(stage);
    timings["total_s"] = seconds_since(start);
    manifest["timings"] = timings;
    write_file_atomic((out / "manifest.json").string(), manifest.dump(2) + "\n");
    folder.commit();
    progress.finish("wrote '" + r.out + "'");
}

}  // namespace attngeo::compare
