// One profiled forward of extract's own engine (forward_profile.hpp): the named scopes of
// transformer.cpp and the aten operations inside them land in the trace.
#include "empirical/model/forward_profile.hpp"

#include <torch/csrc/autograd/profiler_legacy.h>

#include <random>
#include <vector>

#include "empirical/model/checkpoint.hpp"
#include "empirical/model/forward_engine.hpp"

namespace attngeo::empirical {

void profile_forward(const std::string& model_path, std::int64_t tokens,
                     const std::string& trace_path) {
    const std::unique_ptr<ForwardEngine> engine = make_forward_engine(
        open_checkpoint(model_path), ForwardEngineKind::torch, DeviceSpec{}, ComputeDtype::float32);
    std::mt19937_64 rng(0);
    std::uniform_int_distribution<std::int64_t> id(3, engine->config().vocab_size - 1);
    std::vector<std::int64_t> window(static_cast<std::size_t>(tokens));
    for (std::int64_t& token : window)
        token = id(rng);
    engine->run(window);  // warm-up: allocator, OpenBLAS buffers, page cache
    torch::autograd::profiler::RecordProfile profile(trace_path);
    engine->run(window);
}

}  // namespace attngeo::empirical
