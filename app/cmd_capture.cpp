// `attngeo capture` and `attngeo generate`: real checkpoints through libtorch (docs/design.md §6);
// the work is in empirical/capture.hpp (the CLI stays free of torch headers).
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <thread>

#include "app/commands.hpp"
#include "common/errors.hpp"
#include "common/output_folder.hpp"
#include "compare/normalization_summary.hpp"
#include "compare/truncation_summary.hpp"
#include "empirical/capture.hpp"
#include "empirical/extract.hpp"
#include "empirical/normalization.hpp"
#include "empirical/truncate.hpp"

namespace attngeo::cli {
namespace {

// --threads K: a whole number >= 1 (the default, every core, is the flag left out).
int parse_thread_count(const std::string& text) {
    const bool digits =
        !text.empty() && text.size() <= 6 &&
        std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
    const int value = digits ? std::stoi(text) : 0;
    if (value < 1) throw InputError("--threads: '" + text + "', expected a whole number >= 1");
    return value;
}

}  // namespace

Runner register_capture(CLI::App& app) {
    auto r = std::make_shared<empirical::CaptureRequest>();
    app.add_option("--model", r->model,
                   "Hugging Face folder (config.json + safetensors), llama2.c .bin or .gguf")
        ->required();
    app.add_option("--tokens", r->tokens_file,
                   "Token ids: one sequence per line, space-separated, all lines the same length")
        ->required();
    app.add_option("--out", r->out, "Output FILE.safetensors")->required();
    app.add_option("--queries", r->queries, "Attention rows to capture: last or all")
        ->check(CLI::IsMember({"last", "all"}))
        ->capture_default_str();
    app.add_option("--dtype", r->dtype,
                   "Weights and activations: float32, bfloat16, float16 or float64 (alpha is "
                   "always float32)")
        ->check(CLI::IsMember({"float32", "bfloat16", "float16", "float64"}))
        ->capture_default_str();
    app.add_option("--device", r->device, "cpu, cuda or cuda:k")->capture_default_str();
    app.add_flag("--hidden-states", r->hidden_states,
                 "Also write hidden_states.{0..L} and layer_outputs.{l}");
    app.add_option("--sliding-window", r->sliding_window,
                   "Override the config's sliding window (keys per query; 0 = none)");
    app.add_option("--max-output-gb", r->max_output_gb,
                   "Refuse, before the forward, an output larger than this (--queries all "
                   "writes T^2 floats per head and layer)")
        ->check(CLI::PositiveNumber)
        ->capture_default_str();
    app.footer(
        "Writes logits [B,T,V], attentions.{l} [B,H,Tq,T], values.{l} [B,H_kv,T,d_head] (float32) "
        "and input_ids.");
    return [r] { empirical::run_capture(*r); };
}

Runner register_generate(CLI::App& app) {
    auto r = std::make_shared<empirical::GenerateRequest>();
    app.add_option("--model", r->model, "Hugging Face folder, llama2.c .bin or .gguf")->required();
    app.add_option("--prompt", r->prompt, "Prompt text (needs a llama2.c tokenizer)");
    app.add_option("--tokens", r->tokens_file,
                   "Prompt token ids (first line), instead of --prompt");
    app.add_option("--tokenizer", r->tokenizer,
                   "llama2.c tokenizer.bin (default: tokenizer.bin or tok*.bin beside the model)");
    app.add_option("-n,--steps", r->steps,
                   "Positions, counting BOS and the prompt (as llama2.c's run.c -n)")
        ->capture_default_str();
    app.add_option("--temperature", r->temperature,
                   "Sampling temperature; 0 = greedy (the only mode)")
        ->capture_default_str();
    app.add_option("--dtype", r->dtype, "float32, bfloat16 or float16")->capture_default_str();
    app.add_option("--device", r->device, "cpu, cuda or cuda:k")->capture_default_str();
    return [r] { empirical::run_generate(*r); };
}

}  // namespace attngeo::cli

namespace attngeo::cli {

namespace {

// What is read: model, documents, windows, dtype and device (extract and truncate).
void add_window_options(CLI::App& app, empirical::ExtractRequest* r) {
    app.add_option("--model", r->model, "Hugging Face folder, llama2.c .bin or .gguf")->required();
    app.add_option("--tokens", r->tokens_file,
                   "Pre-tokenised documents: one per line, space-separated ids");
    app.add_option("--corpus", r->corpus,
                   "Text corpus (blank-line separated) or JSONL with a text field");
    app.add_option("--out", r->out, "Output folder")->required();
    app.add_option("--context", r->context, "Window length: BOS + context - 1 tokens")
        ->capture_default_str();
    app.add_option("--docs", r->docs,
                   "Documents to use (0 = all); shorter ones are skipped and counted")
        ->capture_default_str();
    app.add_option("--bos", r->bos,
                   "auto: add the model's BOS unless the document starts with it; yes: always; "
                   "no: never (a model without a BOS id needs no)")
        ->check(CLI::IsMember({"auto", "yes", "no"}))
        ->capture_default_str();
    app.add_option("--stride", r->stride,
                   "More windows per document, this many tokens apart (0 = one)")
        ->capture_default_str();
    app.add_option("--seed", r->seed, "Document order: 0 = file order, else a seeded shuffle")
        ->capture_default_str();
    app.add_option("--dtype", r->dtype, "float32, bfloat16, float16 or float64")
        ->capture_default_str();
    app.add_option("--device", r->device, "cpu, cuda or cuda:k")->capture_default_str();
    app.add_flag("--quiet", r->quiet, "No progress on stderr");
}

// How extract's statistics are taken: N, ranking, distance, lags, the engine.
void add_extract_input_options(CLI::App& app, empirical::ExtractRequest* r) {
    add_window_options(app, r);
    app.add_option("--max-lag", r->max_lag, "Cosine by lag 1..max-lag")->capture_default_str();
    app.add_option("--N", r->sizes, "Selection sizes: all | pow2 | list")->capture_default_str();
    app.add_option("--rank", r->rank, "attn or contrib")
        ->check(CLI::IsMember({"attn", "contrib"}))
        ->capture_default_str();
    app.add_option("--distance", r->distance, "euclidean or cosine")
        ->check(CLI::IsMember({"euclidean", "cosine"}))
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
        "snapshot.csv, snapshot.json, contributions.csv (docs/extract-outputs.md). Ctrl-C "
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
        "docs/truncate-outputs.md.");
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

Runner register_normalization(CLI::App& app) {
    auto r = std::make_shared<empirical::NormalizationRequest>();
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
        "critical_n_by_length.csv and manifest.json (docs/normalization-outputs.md).");
    return [r, threads] {
        r->windows.command_line = command_line();
        if (!threads->empty()) r->threads = parse_thread_count(*threads);
        OutputFolder folder(r->windows.out, "--out");
        empirical::run_normalization(*r, folder.staging());
        compare::summarise_normalization(folder.staging());
        folder.commit();
    };
}

}  // namespace attngeo::cli
