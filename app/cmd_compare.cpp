// `attngeo compare`: the fits, envelopes and correlations of an extract folder (docs/design.md §7,
// §9; docs/commands/compare.md). Torch-free: it reads extract's files, never a model. The work is
// in compare/compare_run.hpp.
#include <iostream>
#include <memory>

#include "app/commands.hpp"
#include "common/csv.hpp"
#include "compare/compare_run.hpp"

namespace attngeo::cli {

Runner register_compare(CLI::App& app) {
    auto r = std::make_shared<compare::CompareRequest>();
    auto kappa = std::make_shared<std::string>();
    app.add_option("--emp", r->emp,
                   "Folder written by attngeo extract; repeat for several models, each judged "
                   "in its own subfolder of --out with their universal kappa "
                   "(universal_kappa.csv)")
        ->required();
    app.add_option("--sim", r->sim, "Folder written by attngeo simulate, recorded for the report");
    app.add_option("--truth", r->truth,
                   "planted.csv of a planted extract folder (attngeo simulate --as-extract): "
                   "also writes recovery.csv and recovery_coverage.csv");
    app.add_option("--out", r->out, "Output folder")->required();
    app.add_option("--cosines", r->cosines,
                   "Envelope cosines: parametric (exp(-beta|j-k|) with the fitted beta) or "
                   "plug-in (the measured cosine by lag)")
        ->check(CLI::IsMember({"parametric", "plug-in"}))
        ->capture_default_str();
    app.add_option("--max-lag-fit", r->max_lag_fit,
                   "Fit beta on lags 1..K, K = min(this, context - 1, lags measured)")
        ->capture_default_str();
    app.add_option("--kappa", *kappa,
                   "Judge this concentration constant kappa alone (every variant); default: the "
                   "kappa set of each side by test inversion (docs/design.md section 7)");
    app.add_option("--count-per", r->count_per,
                   "Count value-state statistics (lambda, rho0, beta, MAE, CV) in medians, "
                   "histograms and corr(R, rho0) once per key/value head (kv) or once per query "
                   "head (query); they differ only for GQA models")
        ->check(CLI::IsMember({"kv", "query"}))
        ->capture_default_str();
    app.add_option("--replicates", r->replicates,
                   "Bootstrap resamples of documents for the corr(R, rho0) interval; the fit "
                   "intervals take 200 (0 turns both off)")
        ->capture_default_str();
    app.add_option("--seed", r->seed,
                   "Seed of the bootstraps (corr(R, rho0), the fit intervals, the verdict's band)")
        ->capture_default_str();
    app.add_option("--band-replicates", r->band_replicates,
                   "Bootstrap replicates of the verdict's simultaneous band (docs/design.md "
                   "section 7)")
        ->capture_default_str();
    app.add_flag("--quiet", r->quiet, "No progress lines on stderr");
    app.add_option("--threads", r->threads,
                   "OpenMP threads over heads (0 = all cores); results do not depend on it")
        ->capture_default_str();
    app.footer(
        "Writes fits.csv, profile.csv, profile_global.csv, bounds.csv, envelope.csv, "
        "agreement.csv, violations.csv,\n"
        "kappa_scan.csv, verdict.csv, kappa.json, corr_rho0.csv, regimes.csv, regime_counts.csv,\n"
        "pr_by_regime.csv, contrib_by_regime.csv, assumptions.csv, fitted_params.json and\n"
        "manifest.json; with --truth recovery.csv and recovery_coverage.csv; where Assumption 2\n"
        "fails in most heads verdict_plug_in.csv and kappa_scan_plug_in.csv; with several --emp\n"
        "one such folder per model and universal_kappa.csv (docs/commands/compare.md).");
    return [r, kappa] {
        if (!kappa->empty()) r->kappa = parse_finite_double(*kappa, "--kappa");
        r->command_line = command_line();
        compare::run_compare(*r);
        std::cout << "wrote '" << r->out << "'\n";
    };
}

}  // namespace attngeo::cli
