// `attngeo merge` for `attngeo truncate --shard i/n` folders: the shards of one run (same run
// fingerprint, 0..n−1 each once) become the unsharded run's folder — per-window arrays and
// windows concatenated in shard order, extract/ merged — so that the summary compare writes from
// it equals the unsharded run's byte for byte. Torch-free (attngeo::empirical_core).
#pragma once
#include <string>
#include <vector>

namespace attngeo::empirical {

// Whether `dir` holds a truncate run (its manifest's kind).
bool is_truncate_run(const std::string& dir);

// Writes per_doc.safetensors, windows.txt, manifest.json (and extract/) into `staging`;
// InputError naming the folder or file for shards that do not make one run.
void merge_truncate(const std::vector<std::string>& dirs, const std::string& staging,
                    const std::string& command_line);

}  // namespace attngeo::empirical
