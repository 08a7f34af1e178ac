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
        return {attention_.data_ptr<float>(), values_.data_ptr<float>(),
                recorder_ ? recorder_->layer_rows(index) : nullptr};
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
    torch::Tensor attention_, values_;  // the host copies layer() points into
};

class RunCEngine : public ForwardEngine {
  public:
    explicit RunCEngine(const Checkpoint& checkpoint)
        : ForwardEngine(checkpoint.config), forward_(*checkpoint.llama2c()) {}

    void run(const std::vector<std::int64_t>& window) override {
        row_ = forward_.run(window);
        tokens_ = static_cast<int>(window.size());
    }

    // run.c's cache is [T, kv_dim] per layer; the statistics read [Hkv, T, d].
    LayerView layer(int index) override {
        const int T = tokens_, Hkv = config_.num_kv_heads, d = config_.head_dim, kv_dim = Hkv * d;
        values_.resize(static_cast<std::size_t>(Hkv) * T * d);
        const float* cache = row_.values.data() + static_cast<std::size_t>(index) * T * kv_dim;
        for (int kv = 0; kv < Hkv; ++kv)
            for (int t = 0; t < T; ++t)
                std::copy_n(cache + static_cast<std::size_t>(t) * kv_dim + kv * d, d,
                            values_.begin() + (static_cast<std::size_t>(kv) * T + t) * d);
        const float* attention =
            row_.attention.data() + static_cast<std::size_t>(index) * config_.num_heads * T;
        return {attention, values_.data()};
    }

    std::string description() const override {
        return "runc (scalar port of llama2.c's run.c, bit-identical to it)";
    }
    ForwardEngineKind kind() const override { return ForwardEngineKind::runc; }

  private:
    RunCForward forward_;
    RunCForward::LastRow row_;
    int tokens_ = 0;
    std::vector<float> values_;  // [Hkv, T, d] of the layer last asked for
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
