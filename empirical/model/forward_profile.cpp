// One profiled forward with extract's capture options (forward_profile.hpp): the named scopes of
// transformer.cpp and the aten operations inside them land in the trace.
#include "empirical/model/forward_profile.hpp"

#include <torch/csrc/autograd/profiler_legacy.h>
#include <torch/torch.h>

#include "empirical/model/transformer.hpp"

namespace attngeo::empirical {

void profile_forward(const std::string& model_path, std::int64_t tokens,
                     const std::string& trace_path) {
    const Transformer model = Transformer::load(model_path);
    torch::manual_seed(0);
    const auto ids = torch::randint(3, model.config().vocab_size, {1, tokens}, torch::kInt64);
    // What extract's engine asks for (forward_engine.cpp).
    CaptureOptions options;
    options.queries = QueryRows::last;
    options.all_logits = false;
    options.logits = false;
    options.sink_inputs = true;
    options.hidden_states = true;
    (void)model.forward(ids, options);  // warm-up: allocator, OpenBLAS buffers, page cache
    torch::autograd::profiler::RecordProfile profile(trace_path);
    (void)model.forward(ids, options);
}

}  // namespace attngeo::empirical
