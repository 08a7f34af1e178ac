// A model family as data: which checkpoint tensor is which of our tensor ids (with the
// transpose / fused / optional / tied flags) and which shared blocks the forward uses. The
// block code in transformer.cpp is common to all families.
#pragma once
#include <string>
#include <vector>

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
    std::string family;
    std::vector<TensorName> tensors;
    NormKind norm = NormKind::rms;
    QkvLayout qkv = QkvLayout::separate;
    bool rotary = true;              // RoPE (rotate_half) on q, k (GPT-NeoX: partial)
    bool learned_positions = false;  // GPT-2
    bool gated_mlp = true;           // down(act(gate(x)) · up(x)) vs down(act(up(x)))
    bool embed_scale = false;        // Gemma: embeddings × √hidden
    bool biases = false;             // linear layers carry biases
};

// Throws attngeo::InputError for an unknown family.
const Architecture& architecture_for(const std::string& family);

}  // namespace attngeo::empirical
