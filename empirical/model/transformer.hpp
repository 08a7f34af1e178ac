// A decoder-only transformer in libtorch for the registry's families, built from a
// checkpoint's tensors and the family's table (empirical/model/families/), with the attention rows
// and value states captured per head. α for captured rows is computed explicitly in float32:
// softmax(q·kᵀ/√d_head + mask). (Internal to empirical/: the only place that includes torch
// headers.)
#pragma once
#include <torch/torch.h>

#include <memory>
#include <string>
#include <vector>

#include "common/tensor_store.hpp"
#include "empirical/model/architecture.hpp"
#include "empirical/model/compute_options.hpp"
#include "empirical/model/model_config.hpp"

namespace attngeo::empirical {

// Where the model runs and in which type (weights and activations; α is float32 regardless).
struct LoadOptions {
    DeviceSpec device;                           // cpu | cuda | cuda:k
    ComputeDtype dtype = ComputeDtype::float32;  // float32 | bfloat16 | float16 | float64
    LoadOptions() = default;
    LoadOptions(DeviceSpec device_spec, ComputeDtype compute_dtype)
        : device(device_spec), dtype(compute_dtype) {}
    // From the flags' text (parse_device, parse_compute_dtype): InputError naming the flag.
    LoadOptions(const std::string& device_text, const std::string& dtype_text)
        : device(parse_device(device_text)), dtype(parse_compute_dtype(dtype_text)) {}
};

enum class QueryRows { last, all };

// A change to the attention weights inside the forward (truncation, truncating_edit.hpp): called
// for each layer and block of query rows after the softmax, it returns the weights that multiply
// the values in place of `probs`. Everything else in the forward is unchanged.
class AttentionEdit {
  public:
    virtual ~AttentionEdit() = default;
    // A block of `rows` query rows first_row.. of a sequence of `tokens` sees keys 0..K−1 only
    // (causal; the forward passes K = first_row + rows, any K up to `tokens` is valid): scores: [B,
    // H, rows, K] float32 q·kᵀ/√d with −inf where the mask forbids a key; probs: their softmax
    // rows; values: [B, H, K, d_head] the value states of those keys each query head reads (GQA
    // repeated), in the model's dtype. Every key from K on is masked for the whole block. Returns
    // [B, H, rows, K] float32.
    virtual torch::Tensor edit(int layer, std::int64_t first_row, std::int64_t tokens,
                               const torch::Tensor& scores, const torch::Tensor& probs,
                               const torch::Tensor& values) = 0;
};

struct CaptureOptions {
    QueryRows queries = QueryRows::last;
    bool capture = true;            // false: a plain forward (α and values not kept)
    bool hidden_states = false;     // embeddings, each layer's output, the final-normed output
    bool all_logits = true;         // logits for every position, else only the last
    bool logits = true;             // false: no output head at all (extract reads no logits)
    int query_chunk = 64;           // rows of attention computed at once: memory O(chunk·T)
    AttentionEdit* edit = nullptr;  // when set, the weights every layer's values are mixed with
    // The attention-sink measures' inputs per layer (LayerCapture's key_attention, queries,
    // keys; docs/design.md §15); with hidden_states for the layer outputs.
    bool sink_inputs = false;
};

// What one forward returns, float32 on the host-or-device of the model.
struct LayerCapture {
    torch::Tensor attention;  // [B, H, Tq, T] softmax probabilities of the captured query rows
    torch::Tensor values;     // [B, H_kv, T, d_head] value states before any GQA repeat
    // With sink_inputs (float64 / float32, on the model's device):
    // [B, H, T] Σ over every query row t of α_t[k] (α of the softmax): float32 sums over each
    // block of query rows, accumulated over the blocks in float64
    torch::Tensor key_attention;
    torch::Tensor queries;  // [B, H, T, d_head] after the rotary embedding
    torch::Tensor keys;     // [B, H_kv, T, d_head] after the rotary embedding
};
struct CaptureResult {
    torch::Tensor logits;  // [B, T, V] (or [B, 1, V] without all_logits; undefined without logits)
    std::vector<LayerCapture> layers;          // [layers]
    std::vector<torch::Tensor> hidden_states;  // [layers + 1] of [B, T, hidden] when asked
    std::vector<torch::Tensor> layer_outputs;  // [layers] of [B, T, hidden] when asked
};

class Transformer {
  public:
    // `path`: a Hugging Face folder (config.json + safetensors), a llama2.c .bin or a .gguf
    // (open_checkpoint decides which).
    static Transformer load(const std::string& path, const LoadOptions& options = {});
    // From a tensor store and config (tests, other formats).
    Transformer(const ModelConfig& config, const TensorStore& store, const LoadOptions& options);

    const ModelConfig& config() const { return config_; }
    torch::Device device() const { return device_; }
    // Overrides the sliding window (keys per query; 0 = full causal).
    void set_sliding_window(int keys) { config_.sliding_window = keys; }

    // ids: [B, T] int64 token ids (T ≤ max_positions when known).
    CaptureResult forward(const torch::Tensor& ids, const CaptureOptions& options) const;

  private:
    struct Layer {
        torch::Tensor attn_norm, attn_norm_bias, q, k, v, q_bias, k_bias, v_bias, o, o_bias;
        torch::Tensor mlp_norm, mlp_norm_bias, gate, up, up_bias, down, down_bias;
        // The weights above that are views of a read-only file mapping (no copy), whose pages
        // leave the resident set after each use.
        std::vector<torch::Tensor> mapped_views;
    };
    torch::Tensor norm(const torch::Tensor& x, const torch::Tensor& weight,
                       const torch::Tensor& bias) const;
    torch::Tensor mlp(const torch::Tensor& x, const Layer& layer) const;
    torch::Tensor activation(const torch::Tensor& x) const;
    // The checks of forward's input: [B, T] ids within the vocabulary and the positions.
    torch::Tensor checked_ids(const torch::Tensor& ids) const;
    // cos and signed sin (the first half negated) of the rotary angles for positions 0..T−1,
    // [T, rotary dims] in dtype_.
    std::pair<torch::Tensor, torch::Tensor> rotary_tables(std::int64_t T) const;
    // One layer's attention block: the output projection of softmax(q kᵀ/√d) v, with the
    // captured α rows and values in `capture` as options ask.                     [B, T, hidden]
    torch::Tensor attention(const torch::Tensor& x, int layer_index, const Layer& layer,
                            const torch::Tensor& cos, const torch::Tensor& signed_sin,
                            const CaptureOptions& options, LayerCapture& capture) const;
    // One layer's attention operands after the projections and the rotary embedding.
    struct AttentionOperands {
        torch::Tensor queries;          // [B, H, T, d_head] float32, divided by √d when exact
        bool divide_scores = false;     // the scores still need the division by √d
        double scale = 1;               // √d_head
        torch::Tensor keys;             // [B, H_kv, T, d_head] float32
        torch::Tensor values;           // [B, H_kv, T, d_head] model dtype
        torch::Tensor values_per_head;  // [B, H, T, d_head] (GQA repeated) for the edit only
    };
    // q [B, H, T, d], k and v [B, H_kv, T, d] as the projections and rotary leave them.
    static AttentionOperands attention_operands(const torch::Tensor& q, const torch::Tensor& k,
                                                const torch::Tensor& v, bool for_edit);
    // Query rows first_row..first_row + rows − 1 against keys 0..K−1 (K = first_row + rows):
    // scores, mask, softmax, the edit, the capture of α and the sink sums; returns the mixed
    // values [B, H, rows, d_head].
    torch::Tensor attention_block(const AttentionOperands& in, std::int64_t first_row,
                                  std::int64_t rows, int layer_index, const CaptureOptions& options,
                                  LayerCapture& capture) const;
    // scores: [B, H, rows, K] of query rows first_row.. over keys 0..K−1; −inf where the causal
    // mask (and a sliding window) forbids a key.
    void mask_future_keys(torch::Tensor& scores, std::int64_t first_row) const;
    // InputError naming the checkpoint, layer and tensor when `t` holds NaN or inf.
    void require_finite(const torch::Tensor& t, std::size_t layer, const char* tensor) const;

    ModelConfig config_;
    std::string source_;  // the checkpoint's path(s), named by the non-finite activation check
    const Architecture* arch_;
    torch::Device device_;
    torch::Dtype dtype_;
    torch::Tensor embed_, position_embed_, final_norm_, final_norm_bias_, lm_head_;
    std::vector<torch::Tensor> mapped_views_;  // model-level weights mapped from the file
    std::vector<Layer> layers_;
    int rotary_dims_ = 0;
};

}  // namespace attngeo::empirical
