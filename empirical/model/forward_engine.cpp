// The two adapters of ForwardEngine: libtorch's Transformer (tensors copied to the host per
// layer) and the run.c port (its [T, kv_dim] value cache regrouped per kv head).
#include "empirical/model/forward_engine.hpp"

#include <algorithm>
#include <stdexcept>

#include "empirical/model/device_metrics.hpp"
#include "empirical/model/llama2c.hpp"
#include "empirical/model/query_row_recorder.hpp"
#include "empirical/model/runc_forward.hpp"
#include "empirical/model/transformer.hpp"

namespace attngeo::empirical {
namespace {

class TorchEngine : public ForwardEngine {
  public:
    TorchEngine(const Checkpoint& checkpoint, const LoadOptions& options,
                const std::vector<int>& query_positions)
        : ForwardEngine(checkpoint.config), model_(checkpoint.config, *checkpoint.store, options) {
        options_.queries = QueryRows::last;
        options_.all_logits = false;
        options_.logits = false;
        options_.sink_inputs = true;
        options_.hidden_states = true;
        if (!query_positions.empty()) {
            recorder_ = std::make_unique<QueryRowRecorder>(config_.num_layers, config_.num_heads,
                                                           query_positions);
            options_.edit = recorder_.get();
        }
    }

    void run(const std::vector<std::int64_t>& window) override {
        const auto ids = torch::tensor(window, torch::kInt64).unsqueeze(0);
        result_ = model_.forward(ids, options_);
    }

    LayerView layer(int index) override {
        attention_ = result_.layers[index].attention.to(torch::kCPU).contiguous();  // [1,H,1,T]
        values_ = result_.layers[index].values.to(torch::kCPU).contiguous();        // [1,Hkv,T,d]
        const LayerCapture& layer = result_.layers[index];
        key_attention_ = layer.key_attention.to(torch::kCPU).contiguous();    // [1,H,T]
        queries_ = layer.queries.to(torch::kCPU).contiguous();                // [1,H,T,d]
        keys_ = layer.keys.to(torch::kCPU).contiguous();                      // [1,Hkv,T,d]
        hidden_ = result_.layer_outputs[index].to(torch::kCPU).contiguous();  // [1,T,hidden]
        LayerView view{attention_.data_ptr<float>(), values_.data_ptr<float>(),
                       recorder_ ? recorder_->layer_rows(index) : nullptr};
        view.key_attention = key_attention_.data_ptr<double>();
        view.queries = queries_.data_ptr<float>();
        view.keys = keys_.data_ptr<float>();
        view.hidden = hidden_.data_ptr<float>();
        return view;
    }

    std::vector<Eigen::MatrixXd> ranked_grams(
        int layer, const std::vector<std::vector<int>>& orders) override {
        return ranked_gram_batched(result_.layers[layer].attention[0].select(1, 0),
                                   result_.layers[layer].values[0], orders);
    }

    std::string description() const override { return "libtorch"; }
    ForwardEngineKind kind() const override { return ForwardEngineKind::torch; }

  private:
    Transformer model_;
    std::unique_ptr<QueryRowRecorder> recorder_;  // extract --queries: the chosen rows
    CaptureOptions options_;
    CaptureResult result_;
    // The host copies layer() points into.
    torch::Tensor attention_, values_, key_attention_, queries_, keys_, hidden_;
};

class RunCEngine : public ForwardEngine {
  public:
    explicit RunCEngine(const Checkpoint& checkpoint)
        : ForwardEngine(checkpoint.config), forward_(*checkpoint.llama2c()) {}

    void run(const std::vector<std::int64_t>& window) override {
        row_ = forward_.run(window);
        tokens_ = static_cast<int>(window.size());
    }

    // run.c's caches are [T, heads · d] per layer; the statistics read [heads, T, d].
    LayerView layer(int index) override {
        const int T = tokens_, H = config_.num_heads, Hkv = config_.num_kv_heads;
        const std::size_t layer = static_cast<std::size_t>(index);
        LayerView view;
        view.attention = row_.attention.data() + layer * H * T;
        view.values = by_head(row_.values, layer, Hkv, values_);
        view.keys = by_head(row_.keys, layer, Hkv, keys_);
        view.queries = by_head(row_.queries, layer, H, queries_);
        view.key_attention = row_.key_attention.data() + layer * H * T;
        view.hidden = row_.hidden.data() + layer * T * config_.hidden_size;
        return view;
    }

    std::string description() const override {
        return "runc (scalar port of llama2.c's run.c, bit-identical to it)";
    }
    ForwardEngineKind kind() const override { return ForwardEngineKind::runc; }

  private:
    // Layer `layer` of a [layers, T, heads · d] cache regrouped into `target` [heads, T, d].
    const float* by_head(const std::vector<float>& cache, std::size_t layer, int heads,
                         std::vector<float>& target) const {
        const std::size_t T = static_cast<std::size_t>(tokens_), d = config_.head_dim,
                          width = heads * d;
        target.resize(heads * T * d);
        const float* first = cache.data() + layer * T * width;
        for (int h = 0; h < heads; ++h)
            for (std::size_t t = 0; t < T; ++t)
                std::copy_n(first + t * width + h * d, d, target.begin() + (h * T + t) * d);
        return target.data();
    }

    RunCForward forward_;
    RunCForward::LastRow row_;
    int tokens_ = 0;
    // [Hkv, T, d], [Hkv, T, d], [H, T, d] of the layer last asked for
    std::vector<float> values_, keys_, queries_;
};

}  // namespace

const char* to_string(ForwardEngineKind kind) {
    return kind == ForwardEngineKind::runc ? "runc" : "torch";
}

std::vector<Eigen::MatrixXd> ForwardEngine::ranked_grams(int,
                                                         const std::vector<std::vector<int>>&) {
    throw std::logic_error("ForwardEngine::ranked_grams: this engine has no device Gram path");
}

std::unique_ptr<ForwardEngine> make_forward_engine(const Checkpoint& checkpoint,
                                                   ForwardEngineKind kind, DeviceSpec device,
                                                   ComputeDtype dtype,
                                                   const std::vector<int>& query_positions) {
    if (kind == ForwardEngineKind::runc) {
        if (!checkpoint.llama2c() || !device.is_cpu() || dtype != ComputeDtype::float32 ||
            !query_positions.empty())
            throw std::logic_error(
                "make_forward_engine: runc needs a llama2.c checkpoint on the CPU in float32");
        return std::make_unique<RunCEngine>(checkpoint);
    }
    return std::make_unique<TorchEngine>(checkpoint, LoadOptions{device, dtype}, query_positions);
}

}  // namespace attngeo::empirical
