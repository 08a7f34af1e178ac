// `attngeo truncate` (docs/design.md §12, docs/commands/truncate.md): each head keeps only its
// top-N tokens at every query, and the next-token loss says what that costs. This is the
// estimate half: the forward runs, per window and configuration, into per_doc.safetensors and
// manifest.json; compare/truncation_summary judges them (means, intervals, N*_τ, the geometry
// link). Torch-free header.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "empirical/extract/extract.hpp"

namespace attngeo::empirical {

// The flags of `attngeo truncate` as given.
struct TruncateRequest {
    // Model, documents and windows exactly as extract takes them (model, tokens_file, corpus,
    // context, docs, bos, stride, seed, dtype, device, quiet, shard, resume, stop_after,
    // command_line; out is the final folder, checked before anything runs).
    ExtractRequest windows;
    std::string sizes = "pow2";          // --N: all | pow2 | list, within 1..context
    std::string policies = "attn";       // --policy: attn,contrib,random,window
    std::string renorm = "no";           // --renorm: no | yes | both
    std::string scope = "all";           // --scope: all | layer | head
    std::string heads;                   // --heads L:H,... (scope head) or L,... (scope layer)
    std::string eval_positions = "all";  // --eval-positions: all | last:K
    std::string tau = "0.01,0.1";        // --tau: N*_τ thresholds in nats
    std::uint64_t random_seed = 1;       // --random-seed: the random policy's draws
    int threads = 0;                     // libtorch intra-op threads; 0: libtorch's default
    int replicates = 2000;  // --replicates: bootstrap resamples for compare's summary (manifest)
};

// The configurations one run measures, in per_doc.safetensors' order: policy-major, then renorm
// (false before true), the unit (layer, head: −1 where the scope does not name one), N.
struct TruncationConfig {
    std::string policy;
    bool renorm = false;
    int layer = -1, head = -1, N = 1;
};

// Checks every flag (InputError naming it), runs the full and the truncated forwards over the
// shard's windows and writes per_doc.safetensors, windows.txt and manifest.json into `staging`
// (an OutputFolder's staging folder for request.windows.out). Returns the extract request that
// measures the geometry of the same windows (scope head), with its out inside `staging`.
// Ctrl-C, SIGTERM or --stop-after: Interrupted, with the finished windows in OUT/.partial/ for
// --resume.
ExtractRequest run_truncate(const TruncateRequest& request, const std::string& staging);

// Removes OUT/.partial/ once the folder is committed.
void remove_truncate_partial(const std::string& out);

}  // namespace attngeo::empirical
