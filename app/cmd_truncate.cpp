// `attngeo truncate`: each head keeps its top-N tokens and the next-token loss says what that
// costs (docs/design.md §12): the forward in empirical/truncate/, the summary in
// compare/truncation_summary.
#include <filesystem>

#include "app/commands.hpp"
#include "app/window_options.hpp"
#include "common/output_folder.hpp"
#include "compare/truncation_summary.hpp"
#include "empirical/extract/extract.hpp"
#include "empirical/truncate/truncate.hpp"

namespace attngeo::cli {

Runner register_truncate(CLI::App& app) {
    auto r = std::make_shared<empirical::TruncateRequest>();
    r->windows.context = 256;
    add_window_options(app, &r->windows);
    app.add_option("--N", r->sizes, "Tokens kept per head and query: all | pow2 | list")
        ->capture_default_str();
    app.add_option("--policy", r->policies,
                   "Which N keys a head keeps (comma-separated): attn (largest alpha), contrib "
                   "(largest alpha*|v|), random (seeded), window (token 0 + the N-1 most recent), "
                   "recent (the N most recent, no sink)")
        ->capture_default_str();
    app.add_option("--renorm", r->renorm,
                   "no: keep the original weights (the output is s(N)); yes: divide them by "
                   "their sum; both")
        ->capture_default_str();
    app.add_option("--scope", r->scope,
                   "all: every head at once; layer: one layer at a time; head: one head at a "
                   "time (with each head's geometry on the same windows)")
        ->capture_default_str();
    app.add_option("--heads", r->heads,
                   "The units to truncate: L:H,... with --scope head, L,... with --scope layer "
                   "(default: every one)");
    app.add_option("--eval-positions", r->eval_positions,
                   "Positions whose next token is scored: all or last:K")
        ->capture_default_str();
    app.add_option("--tau", r->tau, "Loss thresholds (nats) for the effective size N*_tau")
        ->capture_default_str();
    app.add_option("--random-seed", r->random_seed, "Seed of the random policy's draws")
        ->capture_default_str();
    auto threads = std::make_shared<std::string>();
    app.add_option("--threads", *threads,
                   "libtorch threads (default: libtorch's); the outputs do not depend on it");
    app.add_option("--replicates", r->replicates,
                   "Bootstrap resamples of the documents for the intervals of N*_tau and the "
                   "geometry link (0: none)")
        ->capture_default_str();
    app.add_option("--shard", r->windows.shard,
                   "Run shard i of n (i/n): windows [i W/n, (i+1) W/n); combine with attngeo merge")
        ->capture_default_str();
    app.add_flag("--resume", r->windows.resume,
                 "Continue an interrupted run in --out from its last finished window");
    app.add_option("--stop-after", r->windows.stop_after,
                   "Stop (resumably, exit 130) after this many windows in this invocation")
        ->capture_default_str();
    app.footer(
        "Writes truncate.csv, effective_size.csv, per_doc.safetensors, windows.txt, "
        "manifest.json and, with --scope head, geometry_link.csv, head_link.csv, "
        "link_summary.json and extract/ (the geometry of the same windows); "
        "docs/commands/truncate.md.");
    return [r, threads] {
        r->windows.command_line = command_line();
        if (!threads->empty()) r->threads = parse_thread_count(*threads);
        OutputFolder folder(r->windows.out, "--out");
        const empirical::ExtractRequest geometry = empirical::run_truncate(*r, folder.staging());
        if (r->scope == "head") empirical::run_extract(geometry);
        std::filesystem::remove(geometry.tokens_file);
        compare::summarise_truncation(folder.staging());
        folder.commit();
        empirical::remove_truncate_partial(r->windows.out);
    };
}

}  // namespace attngeo::cli
