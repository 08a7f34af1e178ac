// `attngeo extract`: the per-head statistics of a checkpoint over a corpus (docs/design.md §6);
// the work is in empirical/extract/extract.hpp.
#include <algorithm>
#include <string>
#include <thread>

#include "app/commands.hpp"
#include "app/window_options.hpp"
#include "empirical/extract/extract.hpp"

namespace attngeo::cli {

namespace {

// How extract's statistics are taken: N, ranking, distance, lags, the engine.
void add_extract_input_options(CLI::App& app, empirical::ExtractRequest* r) {
    add_window_options(app, r);
    app.add_option("--max-lag", r->max_lag, "Cosine by lag 1..max-lag")->capture_default_str();
    app.add_option("--N", r->sizes, "Selection sizes: all | pow2 | list")->capture_default_str();
    app.add_option("--rank", r->rank, "attn or contrib")
        ->check(CLI::IsMember(choice_list(theory::kRankingChoices)))
        ->capture_default_str();
    app.add_option("--distance", r->distance, "euclidean or cosine")
        ->check(CLI::IsMember(choice_list(theory::kDistanceChoices)))
        ->capture_default_str();
    app.add_option("--queries", r->queries,
                   "Query positions measured besides the final row, over keys 0..t: last (only "
                   "the final row), all, every:K (the last and every K-th before it) or "
                   "positions:a,b,...; writes by_length.csv and heads_by_length.csv")
        ->capture_default_str();
    app.add_option("--length-bins", r->length_bins,
                   "With --queries: bins of equal width over L = t + 1 = 1..context")
        ->capture_default_str();
    app.add_option("--engine", r->engine,
                   "Forward: torch (libtorch, any family and device), runc (llama2.c .bin on "
                   "CPU: a scalar port of run.c, bit-identical to it), auto (runc where it "
                   "applies)")
        ->check(CLI::IsMember({"auto", "torch", "runc"}))
        ->capture_default_str();
}

// How the run proceeds: progress, resuming, sharding, checkpoints, the snapshot, stopping early.
void add_extract_run_options(CLI::App& app, empirical::ExtractRequest* r) {
    app.add_flag("--resume", r->resume,
                 "Continue an interrupted run in --out from its last checkpoint");
    app.add_option("--shard", r->shard,
                   "Run shard i of n (i/n): windows [i W/n, (i+1) W/n); combine with attngeo merge")
        ->capture_default_str();
    app.add_option("--checkpoint-every", r->checkpoint_seconds,
                   "Seconds between checkpoints of the exact state (0 = after every window)")
        ->capture_default_str();
    app.add_option("--snapshot", r->snapshot,
                   "One window's head for Figures 1 and 10: L:H:N:DOC (layer, head, N, window "
                   "in run order), auto:N:DOC, auto (the head with the largest sink mass of "
                   "window 0, N = 8) or off")
        ->capture_default_str();
    app.add_option("--stop-after", r->stop_after,
                   "Stop (resumably, exit 130) after this many windows in this invocation; for "
                   "time-limited jobs")
        ->capture_default_str();
}

}  // namespace

Runner register_extract(CLI::App& app) {
    auto r = std::make_shared<empirical::ExtractRequest>();
    add_extract_input_options(app, r.get());
    add_extract_run_options(app, r.get());
    auto metrics = std::make_shared<std::string>("auto");
    app.add_option("--metrics", *metrics,
                   "Where the all-N Gram matrices are formed: device (batched over heads in "
                   "libtorch on --device), cpu (per head in theory/), auto (device on CUDA, cpu "
                   "otherwise); the counts are the same either way")
        ->check(CLI::IsMember({"auto", "device", "cpu"}))
        ->capture_default_str();
    auto threads = std::make_shared<std::string>();
    app.add_option("--threads", *threads,
                   "OpenMP threads over a layer's heads for the statistics (default: every core, " +
                       std::to_string(std::max(1u, std::thread::hardware_concurrency())) +
                       " here); the outputs do not depend on it");
    app.footer(
        "Writes heads.csv, pr.csv, by_position.csv, cos_by_lag.csv, diag.csv, per_doc.safetensors, "
        "sums.safetensors (exact state, for merge), manifest.json and, for --snapshot, "
        "snapshot.csv, snapshot.json, contributions.csv (docs/commands/extract.md). Ctrl-C "
        "checkpoints and "
        "stops; --resume continues.");
    return [r, metrics, threads] {
        r->command_line = command_line();
        if (!threads->empty()) r->threads = parse_thread_count(*threads);
        r->metrics_on_device =
            *metrics == "device" || (*metrics == "auto" && r->device.rfind("cuda", 0) == 0);
        empirical::run_extract(*r);
    };
}

}  // namespace attngeo::cli
