// The forward pass as extract's statistics see it, whichever engine runs it: per window, per
// layer, the final query row of every head and the value states, in one layout. The libtorch
// Transformer and the run.c port are adapters behind this interface. Torch-free header.
#pragma once
#include <Eigen/Dense>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "empirical/model/checkpoint.hpp"
#include "empirical/model/compute_options.hpp"

namespace attngeo::empirical {

enum class ForwardEngineKind {
    torch,  // libtorch Transformer: any family, device and dtype
    runc,   // the scalar port of llama2.c's run.c: llama2.c checkpoints, CPU, float32
};
const char* to_string(ForwardEngineKind kind);  // "torch" | "runc"

// One layer of the last window run, float32, row-major; valid until the next layer() or run().
struct LayerView {
    const float* attention = nullptr;  // [H, T] final query row of each query head
    const float* values =
        nullptr;  // [H_kv, T, d_head] value states (query head h reads h / (H/H_kv))
    // [H, P, T] the weights of the engine's query positions (make_forward_engine), row p over
    // keys 0..positions[p] (zero beyond); null without positions.
    const float* query_rows = nullptr;
    // The attention-sink measures' inputs of the same forward (docs/design.md §15), every query
    // row of the window measured:
    const double* key_attention = nullptr;  // [H, T] Σ_{t≥k} α_t[k]
    const float* queries = nullptr;         // [H, T, d_head] after the rotary embedding
    const float* keys = nullptr;            // [H_kv, T, d_head] after the rotary embedding
    const float* hidden = nullptr;          // [T, hidden] the residual stream after the layer
};

class ForwardEngine {
  public:
    virtual ~ForwardEngine() = default;
    // One window (batch 1) of token ids [T]; InputError for a non-finite activation.
    virtual void run(const std::vector<std::int64_t>& window) = 0;
    virtual LayerView layer(int index) = 0;
    // G_h[k, l] = ⟨y_{π_k}, y_{π_l}⟩, y_i = α_i v_i, for every head of `layer` of the last
    // window, with orders [H][T] the rank order π of each head (head_order).       [H] of [T, T]
    virtual std::vector<Eigen::MatrixXd> ranked_grams(int layer,
                                                      const std::vector<std::vector<int>>& orders);
    const ModelConfig& config() const { return config_; }
    // The engine in words, for the manifest.
    virtual std::string description() const = 0;
    virtual ForwardEngineKind kind() const = 0;

  protected:
    explicit ForwardEngine(ModelConfig config) : config_(std::move(config)) {}
    ModelConfig config_;
};

// The engine of `kind` for `checkpoint` (runc: a llama2.c checkpoint, on the CPU in float32;
// the caller's plan has checked that). The engine keeps what it needs: the checkpoint may go.
// query_positions (extract --queries; the torch engine only): the positions whose rows
// LayerView::query_rows holds besides the final row.
std::unique_ptr<ForwardEngine> make_forward_engine(const Checkpoint& checkpoint,
                                                   ForwardEngineKind kind, DeviceSpec device,
                                                   ComputeDtype dtype,
                                                   const std::vector<int>& query_positions = {});

}  // namespace attngeo::empirical
