// An extract request checked and parsed once (docs/design.md §6, §9): the engine, BOS handling,
// dtype and device as values, the checkpoint's format, the statistics settings and the shard. Every
// later stage reads the plan, never the request's strings. Torch-free header.
#pragma once
#include <cstdint>
#include <string>

#include "common/shard.hpp"
#include "empirical/model/checkpoint.hpp"
#include "empirical/model/compute_options.hpp"
#include "empirical/extract/extract.hpp"
#include "empirical/extract/extract_windows.hpp"
#include "empirical/model/forward_engine.hpp"
#include "empirical/extract/statistics.hpp"

namespace attngeo::empirical {

struct ExtractPlan {
    std::string model;  // the checkpoint as given
    CheckpointFormat format = CheckpointFormat::hugging_face;
    ForwardEngineKind engine = ForwardEngineKind::torch;  // --engine auto resolved
    BosPolicy bos = BosPolicy::automatic;
    ComputeDtype dtype = ComputeDtype::float32;
    DeviceSpec device;
    StatisticsSettings settings;  // context, max_lag (≤ context − 2), the N grid, rank, distance
    std::string sizes_spec;       // --N as given, for the manifest
    std::string queries_spec = "last";  // --queries as given, for the manifest
    bool device_gram = false;           // all-N Gram matrices formed by the engine on its device
    int threads = 1;                    // OpenMP threads over a layer's heads (statistics_threads)
    Shard shard;
    // Documents: exactly one of tokens_file and corpus.
    std::string tokens_file, corpus;
    std::int64_t docs = 0;
    int stride = 0;
    std::uint64_t seed = 0;
    // The run's operation.
    std::string out;
    bool resume = false, quiet = false;
    double checkpoint_seconds = 30;
    std::int64_t stop_after = 0;
    std::string command_line;

    // What names the document source in messages: "--tokens 'FILE" or "--corpus 'FILE".
    std::string documents_flag() const;
};

// Checks every flag of `request` (InputError naming the flag) and the output folder, and
// decides the checkpoint's format and the engine, before any model is read.
ExtractPlan plan_extract(const ExtractRequest& request);

}  // namespace attngeo::empirical
