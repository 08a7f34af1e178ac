// A model family as data: which checkpoint tensor is which of our tensor ids (with the
// transpose / fused / optional / tied flags), which config.json keys it reads and their ranges,
// and its quirks as flags over the shared blocks of transformer.cpp. Each family is one file
// in empirical/model/families/; families/registry.cpp lists them (docs/adding-a-family.md).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "empirical/model/model_config.hpp"

namespace attngeo::empirical {

enum class TensorId {
    embed,
    position_embed,
    final_norm,
    final_norm_bias,
    lm_head,  // model-level
    attn_norm,
    attn_norm_bias,
    q,
    k,
    v,
    q_bias,
    k_bias,
    v_bias,  // per layer
    qkv,
    qkv_bias,
    o,
    o_bias,
    mlp_norm,
    mlp_norm_bias,
    gate,
    up,
    up_bias,
    down,
    down_bias,
};

enum class NormKind { rms, rms_one_plus_weight, layer_norm };
// separate: q, k, v tensors; blocks: one [q|k|v] tensor (GPT-2); per_head: one tensor viewed as
// [H, 3, d_head, …] (GPT-NeoX).
enum class QkvLayout { separate, blocks, per_head };

struct TensorName {
    TensorId id;
    std::vector<std::string> patterns;  // "{i}" = layer index; alternatives tried in order
    bool per_layer = false;
    bool transpose = false;  // stored [in, out] (GPT-2 Conv1D): transposed to nn.Linear's [out, in]
    bool optional = false;   // absent when tied (lm_head) or unused
};

struct Architecture {
    std::string family;               // config.json's model_type
    std::vector<TensorName> tensors;  // an id the table lacks is an absent (undefined) tensor
    std::vector<ConfigKey> config;    // the config.json keys read, in order, with their ranges
    NormKind norm = NormKind::rms;
    QkvLayout qkv = QkvLayout::separate;
    bool qkv_bias = false;           // q, k, v projections add a bias (GPT-2, GPT-NeoX, Qwen2)
    bool rotary = true;              // RoPE (rotate_half) on q, k; config rotary_pct of d_head
    bool learned_positions = false;  // GPT-2: position embeddings added to the token embeddings
    bool gated_mlp = true;           // down(act(gate(x)) · up(x)) vs down(act(up(x)))
    bool embed_scale = false;        // Gemma: embeddings × √hidden
    bool always_tied = false;  // GPT-2: the classifier is the embedding when lm_head is absent
};

// The supported families, each once, in the order error messages list them.
const std::vector<const Architecture*>& families();
// "llama, mistral, …": the registry's model_types for messages.
std::string family_names();
// nullptr for a model_type no family has.
const Architecture* find_architecture(const std::string& family);
// Throws attngeo::InputError for an unknown family.
const Architecture& architecture_for(const std::string& family);

// One LLaMA tensor in each naming this project reads: the one table behind the safetensors
// family table, the GGUF and llama2.c readers and the synthetic stores.
struct LlamaTensor {
    TensorId id;
    std::string hf_suffix;    // transformers' name; per layer, after "model.layers.{i}."
    std::string gguf_suffix;  // llama.cpp's name; per layer, after "blk.{i}."
    bool per_layer = false;
    bool optional = false;     // lm_head: absent when the classifier is the embedding
    bool rotary_rows = false;  // q, k: llama2.c and GGUF store each head's rows interleaved
};
// Model-level tensors first (embedding, final norm, classifier), then the per-layer ones in
// the order a llama2.c checkpoint stores them (attention norm, q, k, v, o, MLP norm, gate,
// down, up).
const std::vector<LlamaTensor>& llama_tensors();
const LlamaTensor& llama_tensor(TensorId id);  // std::out_of_range for a non-LLaMA id
std::size_t llama_tensors_per_layer();
// Full names; `layer` is ignored for model-level tensors.
std::string llama_hf_name(TensorId id, int layer);
std::string llama_gguf_name(TensorId id, int layer);
// The shape a LLaMA tensor has under `config`, PyTorch order ([out, in] for a projection):
// embed/lm_head [V, d], norms [d], q [H·d_head, d], k/v [H_kv·d_head, d], o [d, H·d_head],
// gate/up [I, d], down [d, I].
std::vector<std::int64_t> llama_tensor_shape(TensorId id, const ModelConfig& config);

}  // namespace attngeo::empirical
