// An extract folder (docs/design.md §6): heads.csv, pr.csv, by_position.csv, cos_by_lag.csv,
// diag.csv, per_doc.safetensors, sums.safetensors (the exact state, for merge) and manifest.json,
// written from a finished statistics grid. Torch-free (attngeo::empirical_core): `attngeo extract`,
// `attngeo merge` and callers without libtorch (a Python module) all write through here, so
// `attngeo compare` reads the same files whoever wrote them.
#pragma once
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "empirical/extract/extract_state.hpp"

namespace attngeo::empirical {

// The model the statistics came from (manifest "model", and the settings of sums.safetensors).
struct ExtractModelInfo {
    std::string path;    // the checkpoint as given
    std::string family;  // a model_type of the family registry (family_names(), architecture.hpp)
    int layers = 0, heads = 0, kv_heads = 0, head_dim = 0, vocab = 0;
    std::string engine_description;  // e.g. "libtorch"
    std::string dtype = "float32", device = "cpu";
};

// The run's parameters as the user gave them (manifest "parameters"); the statistics'
// own settings (context, max_lag, sizes, ranking, distance) come from StatisticsSettings.
struct ExtractParameters {
    std::int64_t docs = 0;  // 0 = every document
    std::string bos = "auto";
    int stride = 0;
    std::uint64_t seed = 0;
    std::string sizes_spec = "all";  // --N as given (all | pow2 | list)
    std::string engine = "torch";    // torch | runc | another forward's short name
    std::string metrics;             // how P/R were formed, in words
    std::string shard = "0/1";       // i/n
    std::string tokens_file, corpus;
    std::string queries = "last";  // --queries as given (docs/design.md §14)
};

// How many documents and windows went into the run (manifest "documents").
struct ExtractDocumentsInfo {
    std::int64_t windows_used = 0;       // D: windows of this shard, one per_doc row each
    std::int64_t windows_in_run = 0;     // W: windows of the whole run (all shards)
    std::int64_t skipped_too_short = 0;  // documents shorter than one window
    std::int64_t in_file = 0;            // documents read
};

// Everything an extract folder says about its run besides the statistics.
struct ExtractRunInfo {
    std::string command;  // the command line; empty leaves "command" out of the manifest
    ExtractModelInfo model;
    ExtractParameters parameters;
    ExtractDocumentsInfo documents;
    std::string tokenizer = "none (--tokens)";
    std::string run_fingerprint;  // run_fingerprint(extract_settings_text(...), windows)
    nlohmann::json timings = nlohmann::json::object();
};

// The "settings" metadata of sums.safetensors (and the fingerprint's first input): the
// statistics settings with the model's shape, as compact JSON text.
std::string extract_settings_text(const StatisticsSettings& settings,
                                  const ExtractModelInfo& model);
// sums.safetensors' metadata: run_fingerprint, shard, windows, settings.
std::map<std::string, std::string> extract_state_metadata(const StatisticsSettings& settings,
                                                          const ExtractRunInfo& run);
nlohmann::json extract_manifest(const StatisticsSettings& settings, const ExtractRunInfo& run);

// Streams tensor `tensor` (PerDocLayout order: P, R, rho0, lambda, cos_by_lag, alpha, C,
// m_sink, m_last, m_rest, Fmax, Fmin, cos_s_v0, cos_s_vL) for every window.
using PerDocWriter = std::function<void(int tensor, std::ostream& stream)>;

// Writes every file of the folder into `out` (staged, then moved in whole; docs/design.md §10) from
// the grid, its `documents` windows' per-document arrays, the state metadata and the manifest.
// group = H / H_kv, for heads.csv's kv_head column. `extra_files` (name → contents) are
// written into the same staged folder, so they appear together with the rest or not at all
// (planted.csv of a planted folder, simulate/planted.hpp).
void write_extract_outputs(const std::string& out, const StatisticsSettings& settings,
                           const StatisticsGrid& grid, int group, std::int64_t documents,
                           const PerDocWriter& per_doc,
                           const std::map<std::string, std::string>& state_metadata,
                           const nlohmann::json& manifest,
                           const std::map<std::string, std::string>& extra_files = {});

// The per-document arrays of a whole run, collected window by window.
class PerDocArrays {
  public:
    explicit PerDocArrays(const PerDocLayout& layout) : layout_(layout) {}
    void append(const WindowRecord& record);
    std::int64_t windows() const { return windows_; }
    const PerDocLayout& layout() const { return layout_; }
    void write(int tensor, std::ostream& stream) const;

  private:
    PerDocLayout layout_;
    std::int64_t windows_ = 0;
    std::vector<float> records_;  // [windows, record_floats]
};

// The entry point for callers that form the statistics themselves (no libtorch): the grid
// [layers][heads] after every window of the run (or shard), the settings it was made with, the
// per-document arrays of those windows in order, and the run's description. Writes a folder
// `attngeo compare` and `attngeo merge` accept. InputError naming --out, or when the grid,
// the arrays and run.documents.windows_used disagree.
void write_extract_folder(const std::string& out, const StatisticsGrid& grid,
                          const StatisticsSettings& settings, const ExtractRunInfo& run,
                          const PerDocArrays& per_doc);

// Combines shard folders of one run (same fingerprint, shards 0..n−1 each once) into `out`:
// the exact sums are added and the per-document arrays concatenated, so every output file
// except manifest.json equals the unsharded run's byte for byte. Returns the manifest.
nlohmann::json merge_extract(const std::vector<std::string>& dirs, const std::string& out,
                             const std::string& command_line);

}  // namespace attngeo::empirical
