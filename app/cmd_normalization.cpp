// `attngeo normalization`: the predecessor paper's measurements (docs/design.md §14), the
// estimate in empirical/normalization_limits/, the critical N in
// compare/normalization_limits_summary.
#include "app/commands.hpp"
#include "app/window_options.hpp"
#include "common/output_folder.hpp"
#include "compare/normalization_limits_summary.hpp"
#include "empirical/normalization_limits/normalization_limits.hpp"

namespace attngeo::cli {

Runner register_normalization(CLI::App& app) {
    auto r = std::make_shared<empirical::NormalizationLimitsRequest>();
    r->windows.context = 256;
    add_window_options(app, &r->windows);
    app.add_option("--queries", r->queries,
                   "Query positions t measured in each window (keys 0..t, L = t + 1): last, "
                   "all, every:K (the last and every K-th before it) or positions:a,b,...")
        ->capture_default_str();
    app.add_option("--length-bins", r->length_bins,
                   "Bins of equal width over L = 1..context that the rows are averaged in")
        ->capture_default_str();
    app.add_option("--N", r->sizes, "Selection sizes: all | pow2 | list")->capture_default_str();
    app.add_option("--subsets", r->subsets,
                   "Random N-subsets per query for the Monte Carlo expectation E")
        ->capture_default_str();
    app.add_option("--random-seed", r->random_seed,
                   "Seed of the random subsets and of the sensitivity's directions")
        ->capture_default_str();
    app.add_option("--temperatures", r->temperatures,
                   "Temperatures T of the sensitivity g(T, eps): lo:hi:count (a log grid) or a "
                   "comma list")
        ->capture_default_str();
    app.add_option("--epsilons", r->epsilons, "Step sizes eps of g(T, eps), comma-separated")
        ->capture_default_str();
    app.add_option("--ks-level", r->ks_level,
                   "Level of the KS test behind the critical N (the predecessor's text: 0.01; "
                   "its pseudocode: 0.05)")
        ->capture_default_str();
    auto threads = std::make_shared<std::string>();
    app.add_option("--threads", *threads,
                   "Threads over a layer's heads (default: every core); the outputs do not "
                   "depend on it");
    app.footer(
        "The measurements of 'Limitations of Normalization in Attention Mechanism' (NeurIPS "
        "2025): writes distance.csv, separability.csv, sensitivity.csv, critical_n.csv, "
        "critical_n_by_length.csv and manifest.json (docs/commands/normalization.md).");
    return [r, threads] {
        r->windows.command_line = command_line();
        if (!threads->empty()) r->threads = parse_thread_count(*threads);
        OutputFolder folder(r->windows.out, "--out");
        empirical::run_normalization_limits(*r, folder.staging());
        compare::summarise_normalization_limits(folder.staging());
        folder.commit();
    };
}

}  // namespace attngeo::cli
