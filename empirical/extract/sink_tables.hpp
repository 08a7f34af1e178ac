// An extract folder's attention-sink files (docs/design.md §15) from the per-window arrays of
// per_doc.safetensors: sinks.csv per head, sink_layers.csv per layer (the sink rate and the
// massive activation), secondary_sinks.csv per window. Torch-free; extract and merge both write
// them from the same arrays, so a merged folder equals the unsharded one.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace attngeo::empirical {

// The sink tensors of per_doc.safetensors (PerDocLayout), float32, D windows; NaN where a
// window was not measured.
struct SinkArrays {
    std::int64_t windows = 0, layers = 0, heads = 0;
    std::vector<float> sink_attention;  // [D, L, H] α(0), Gu et al.'s mean attention on token 0
    std::vector<float> key_norm_ratio;  // [D, L, H]
    std::vector<float> cos_query_sink;  // [D, L, H]
    std::vector<float> cos_query_rest;  // [D, L, H]
    std::vector<float> massive;         // [D, L, 5] largest, median, position, dim, token id
    std::vector<float> secondary;       // [D, 4, 4] position, token id, heads, largest α(k)
};

// The three files' contents (headers from the run-column table).
struct SinkTables {
    std::string heads;      // sinks.csv
    std::string layers;     // sink_layers.csv
    std::string secondary;  // secondary_sinks.csv
};

// `group` = H / H_kv (a query head's key head is h / group).
SinkTables sink_tables(const SinkArrays& arrays, int group);

}  // namespace attngeo::empirical
