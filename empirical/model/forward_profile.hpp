// The forward's time by stage, for bench/forward_profile: one warm-up window through extract's
// own forward engine (its capture options), then one under libtorch's profiler, written as a
// Chrome trace.
// (Torch-free header: the bench program does not include torch.)
#pragma once
#include <cstdint>
#include <string>

namespace attngeo::empirical {

// `model`: a checkpoint open_checkpoint accepts (CPU, float32); `tokens`: the window length
// (random ids, seed 0); the trace goes to `trace_path`. Throws on a bad model or an unwritable
// path.
void profile_forward(const std::string& model, std::int64_t tokens, const std::string& trace_path);

}  // namespace attngeo::empirical
