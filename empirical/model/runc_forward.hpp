// A scalar float32 LLaMA forward for llama2.c checkpoints whose every rounding happens in the
// order of llama2.c's reference program run.c, so that attention rows and value states equal
// run.c's own bit for bit (P and R are counts: a 1e-6 difference in α can swap two near-equal
// tokens, and the checks against run.c's dumps need exact equality). Torch-free.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "empirical/model/llama2c.hpp"

namespace attngeo::empirical {

class RunCForward {
  public:
    // Shares the checkpoint's buffers (they outlive the checkpoint object).
    explicit RunCForward(const Llama2cCheckpoint& checkpoint);

    // What the last position of one sequence sees.
    struct LastRow {
        std::vector<float> attention;  // [layers, H, T] post-softmax row of the last query
        std::vector<float> values;  // [layers, T, kv_dim] value cache (head h reads h / (H/H_kv))
        std::vector<float> logits;  // [vocab] at the last position
        // The attention-sink measures' inputs (docs/design.md §15); q and k rotated, each head
        // in rotate_half order (a permutation within the head: norms and cosines are unchanged).
        std::vector<float> queries;         // [layers, T, n_heads · head_size]
        std::vector<float> keys;            // [layers, T, kv_dim] key cache
        std::vector<double> key_attention;  // [layers, H, T] Σ over every position t of α_t[k]
        std::vector<float> hidden;          // [layers, T, dim] residual stream after the layer
    };
    // tokens: [T] ids, T ≤ seq_len; throws InputError for an id outside the vocabulary, and
    // InputError naming the checkpoint, layer and tensor when an activation is NaN or inf.
    LastRow run(const std::vector<std::int64_t>& tokens) const;

    const Llama2cHeader& header() const { return header_; }

  private:
    // One decoder layer's weights as the checkpoint holds them: row-major, [out, in], q and k
    // rows in rotate_half order (each head's pair i is rows i and i + head_size/2).
    struct LayerWeights {
        const float* attention_norm;  // [dim]
        const float* query;           // [n_heads · head_size, dim]
        const float* key;             // [kv_dim, dim]
        const float* value;           // [kv_dim, dim]
        const float* output;          // [dim, n_heads · head_size]
        const float* mlp_norm;        // [dim]
        const float* gate;            // [hidden, dim]
        const float* up;              // [hidden, dim]
        const float* down;            // [dim, hidden]
    };
    struct Workspace;  // per-call activations and caches, see runc_forward.cpp

    const float* weights_of(const Llama2cCheckpoint& checkpoint, const std::string& name);
    void attention_block(int layer, int position, Workspace& w) const;
    void mlp_block(int layer, Workspace& w) const;

    Llama2cHeader header_;
    std::string source_;                 // the checkpoint's path, for messages
    std::vector<HostTensor> held_;       // keeps the buffers below alive
    const float* embedding_ = nullptr;   // [vocab, dim]
    std::vector<LayerWeights> layers_;   // [n_layers]
    const float* final_norm_ = nullptr;  // [dim]
    const float* classifier_ = nullptr;  // [vocab, dim]: lm_head, or the embedding when shared
};

}  // namespace attngeo::empirical
