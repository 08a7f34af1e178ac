// `attngeo extract`: a checkpoint and a corpus (or token ids) to the per-head statistics
// folder of SPEC §6 / issue 6 — heads.csv, pr.csv, by_position.csv, cos_by_lag.csv, diag.csv,
// per_doc.safetensors, manifest.json. Torch-free header; the work runs in extract.cpp.
#pragma once
#include <cstdint>
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
    bool quiet = false;
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

void run_extract(const ExtractRequest& request);

}  // namespace attngeo::empirical
