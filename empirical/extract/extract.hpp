// `attngeo extract`: a checkpoint and a corpus (or token ids) to the per-head statistics
// folder of docs/design.md §6 — heads.csv, pr.csv, by_position.csv, cos_by_lag.csv, diag.csv,
// per_doc.safetensors, sums.safetensors, manifest.json. Torch-free header; the pipeline's parts
// are extract_plan (flags), extract_windows (documents), forward_engine (the forward),
// extract_state (resume, spill, checkpoint) and extract_folder (the files, merge).
#pragma once
#include <cstdint>
#include <string>

#include "empirical/extract/extract_folder.hpp"
#include "empirical/extract/extract_windows.hpp"

namespace attngeo::empirical {

// The flags of `attngeo extract` as given; plan_extract (extract_plan.hpp) checks and parses
// them once.
struct ExtractRequest {
    std::string model;
    std::string tokens_file;  // one document per line (token ids)
    std::string corpus;       // text (blank-line separated) or JSONL with "text"
    std::string out;
    int context = 1024;
    std::int64_t docs = 0;     // 0 = every document
    std::string bos = "auto";  // auto | yes | no
    int stride = 0;            // > 0: more windows per document, this many tokens apart
    std::uint64_t seed = 0;    // 0: file order; otherwise a seeded shuffle of the documents
    int max_lag = 128;
    std::string sizes = "all";  // all | pow2 | list
    std::string rank = "attn", distance = "euclidean";
    // --queries: last (the final row only) | all | every:K | positions:a,b,… — the other query
    // positions t ≥ 1 also measured over keys 0..t, averaged in --length-bins bins of L = t + 1
    // (by_length.csv, heads_by_length.csv; docs/design.md §14).
    std::string queries = "last";
    int length_bins = 8;
    std::string dtype = "float32", device = "cpu";
    // auto: the run.c port for llama2.c .bin checkpoints on CPU in float32, libtorch otherwise.
    std::string engine = "auto";
    bool quiet = false;
    bool resume = false;             // continue from OUT/.partial/ (checkpointed exact state)
    std::string shard = "0/1";       // i/n: windows [i W/n, (i+1) W/n)
    double checkpoint_seconds = 30;  // write the checkpoint at most this often (0 = every window)
    std::int64_t stop_after = 0;     // > 0: stop (resumably) after this many windows
    bool metrics_on_device = false;  // all-N Gram matrices batched in libtorch; else theory/
    std::string snapshot = "auto";   // --snapshot: Figures 1 and 10 (head_snapshot.hpp)
    int threads = 0;                 // the heads of a layer in parallel; 0: every core
    std::string command_line;
};

// Runs the request; throws Interrupted (after checkpointing) on Ctrl-C/SIGTERM or --stop-after.
void run_extract(const ExtractRequest& request);

}  // namespace attngeo::empirical
