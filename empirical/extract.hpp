// `attngeo extract`: a checkpoint and a corpus (or token ids) to the per-head statistics
// folder of SPEC §6 / issue 6 — heads.csv, pr.csv, by_position.csv, cos_by_lag.csv, diag.csv,
// per_doc.safetensors, manifest.json. Torch-free header; the work runs in extract.cpp.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace attngeo::empirical {

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
    std::string dtype = "float32", device = "cpu";
    // auto: the run.c port for llama2.c .bin checkpoints on CPU in float32, libtorch otherwise.
    std::string engine = "auto";
    bool quiet = false;
    bool resume = false;             // continue from OUT/.partial/ (checkpointed exact state)
    std::string shard = "0/1";       // i/n: windows [i W/n, (i+1) W/n)
    double checkpoint_seconds = 30;  // write the checkpoint at most this often (0 = every window)
    std::int64_t stop_after = 0;     // > 0: stop (resumably) after this many windows
    bool metrics_on_device = false;  // all-N Gram matrices batched in libtorch; else theory/
    std::string command_line;
};

// Cuts documents into windows: BOS + the next context − 1 tokens (bos = auto adds it unless
// the document starts with it; a document that starts with BOS and has exactly `context` ids is
// one window as given), skipping documents that are too short. Returns the windows and sets
// `skipped`.
std::vector<std::vector<std::int64_t>> make_windows(
    const std::vector<std::vector<std::int64_t>>& documents, int context, int bos_id,
    const std::string& bos, int stride, std::int64_t max_docs, std::int64_t& skipped);

// Documents of a corpus: plain text separated by blank lines, or JSONL (.jsonl) with "text".
std::vector<std::string> read_corpus(const std::string& path);

// Runs the request; throws Interrupted (after checkpointing) on Ctrl-C/SIGTERM or --stop-after.
void run_extract(const ExtractRequest& request);

// Combines shard folders of one run (same fingerprint, shards 0..n−1 each once) into `out`:
// the exact sums are added and the per-document arrays concatenated, so every output file
// except manifest.json equals the unsharded run's byte for byte. Returns the manifest.
nlohmann::json merge_extract(const std::vector<std::string>& dirs, const std::string& out,
                             const std::string& command_line);

}  // namespace attngeo::empirical
