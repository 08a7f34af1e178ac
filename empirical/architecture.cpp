// The five families as tables (one screen each); see architecture.hpp.
#include "empirical/architecture.hpp"

#include <stdexcept>

#include "common/errors.hpp"

namespace attngeo::empirical {
namespace {

using T = TensorId;

TensorName model(T id, std::vector<std::string> names, bool optional = false) {
    return {id, std::move(names), false, false, optional};
}
TensorName layer(T id, std::vector<std::string> names, bool transpose = false) {
    return {id, std::move(names), true, transpose, false};
}

Architecture llama_like(const std::string& family) {
    Architecture a;
    a.family = family;
    for (const LlamaTensor& t : llama_tensors())
        a.tensors.push_back(t.per_layer ? layer(t.id, {"model.layers.{i}." + t.hf_suffix})
                                        : model(t.id, {t.hf_suffix}, t.optional));
    return a;
}

Architecture gemma() {
    Architecture a = llama_like("gemma");
    a.norm = NormKind::rms_one_plus_weight;
    a.embed_scale = true;
    return a;
}

Architecture gpt2() {
    Architecture a;
    a.family = "gpt2";
    a.norm = NormKind::layer_norm;
    a.qkv = QkvLayout::blocks;
    a.rotary = false;
    a.learned_positions = true;
    a.gated_mlp = false;
    a.biases = true;
    // Hub checkpoints use either GPT2LMHeadModel names or the unprefixed base-model names.
    auto both = [](const std::string& s) {
        return std::vector<std::string>{"transformer." + s, s};
    };
    const std::string p = "h.{i}.";
    a.tensors = {
        {T::embed, both("wte.weight"), false, false, false},
        {T::position_embed, both("wpe.weight"), false, false, false},
        {T::final_norm, both("ln_f.weight"), false, false, false},
        {T::final_norm_bias, both("ln_f.bias"), false, false, false},
        model(T::lm_head, {"lm_head.weight"}, true),
        layer(T::attn_norm, both(p + "ln_1.weight")),
        layer(T::attn_norm_bias, both(p + "ln_1.bias")),
        layer(T::qkv, both(p + "attn.c_attn.weight"), /*Conv1D*/ true),
        layer(T::qkv_bias, both(p + "attn.c_attn.bias")),
        layer(T::o, both(p + "attn.c_proj.weight"), true),
        layer(T::o_bias, both(p + "attn.c_proj.bias")),
        layer(T::mlp_norm, both(p + "ln_2.weight")),
        layer(T::mlp_norm_bias, both(p + "ln_2.bias")),
        layer(T::up, both(p + "mlp.c_fc.weight"), true),
        layer(T::up_bias, both(p + "mlp.c_fc.bias")),
        layer(T::down, both(p + "mlp.c_proj.weight"), true),
        layer(T::down_bias, both(p + "mlp.c_proj.bias")),
    };
    return a;
}

Architecture gpt_neox() {
    Architecture a;
    a.family = "gpt_neox";
    a.norm = NormKind::layer_norm;
    a.qkv = QkvLayout::per_head;
    a.gated_mlp = false;
    a.biases = true;
    const std::string p = "gpt_neox.layers.{i}.";
    a.tensors = {
        model(T::embed, {"gpt_neox.embed_in.weight"}),
        model(T::final_norm, {"gpt_neox.final_layer_norm.weight"}),
        model(T::final_norm_bias, {"gpt_neox.final_layer_norm.bias"}),
        model(T::lm_head, {"embed_out.weight"}, true),
        layer(T::attn_norm, {p + "input_layernorm.weight"}),
        layer(T::attn_norm_bias, {p + "input_layernorm.bias"}),
        layer(T::qkv, {p + "attention.query_key_value.weight"}),
        layer(T::qkv_bias, {p + "attention.query_key_value.bias"}),
        layer(T::o, {p + "attention.dense.weight"}),
        layer(T::o_bias, {p + "attention.dense.bias"}),
        layer(T::mlp_norm, {p + "post_attention_layernorm.weight"}),
        layer(T::mlp_norm_bias, {p + "post_attention_layernorm.bias"}),
        layer(T::up, {p + "mlp.dense_h_to_4h.weight"}),
        layer(T::up_bias, {p + "mlp.dense_h_to_4h.bias"}),
        layer(T::down, {p + "mlp.dense_4h_to_h.weight"}),
        layer(T::down_bias, {p + "mlp.dense_4h_to_h.bias"}),
    };
    return a;
}

}  // namespace

const std::vector<LlamaTensor>& llama_tensors() {
    static const std::vector<LlamaTensor> table = {
        {T::embed, "model.embed_tokens.weight", "token_embd.weight", false, false, false},
        {T::final_norm, "model.norm.weight", "output_norm.weight", false, false, false},
        {T::lm_head, "lm_head.weight", "output.weight", false, true, false},
        {T::attn_norm, "input_layernorm.weight", "attn_norm.weight", true, false, false},
        {T::q, "self_attn.q_proj.weight", "attn_q.weight", true, false, true},
        {T::k, "self_attn.k_proj.weight", "attn_k.weight", true, false, true},
        {T::v, "self_attn.v_proj.weight", "attn_v.weight", true, false, false},
        {T::o, "self_attn.o_proj.weight", "attn_output.weight", true, false, false},
        {T::mlp_norm, "post_attention_layernorm.weight", "ffn_norm.weight", true, false, false},
        {T::gate, "mlp.gate_proj.weight", "ffn_gate.weight", true, false, false},
        {T::down, "mlp.down_proj.weight", "ffn_down.weight", true, false, false},
        {T::up, "mlp.up_proj.weight", "ffn_up.weight", true, false, false},
    };
    return table;
}

const LlamaTensor& llama_tensor(TensorId id) {
    for (const LlamaTensor& t : llama_tensors())
        if (t.id == id) return t;
    throw std::out_of_range("llama_tensor: tensor id " + std::to_string(static_cast<int>(id)) +
                            " is not a LLaMA tensor");
}

std::size_t llama_tensors_per_layer() {
    std::size_t count = 0;
    for (const LlamaTensor& t : llama_tensors())
        count += t.per_layer;
    return count;
}

std::string llama_hf_name(TensorId id, int layer) {
    const LlamaTensor& t = llama_tensor(id);
    return t.per_layer ? "model.layers." + std::to_string(layer) + "." + t.hf_suffix : t.hf_suffix;
}

std::string llama_gguf_name(TensorId id, int layer) {
    const LlamaTensor& t = llama_tensor(id);
    return t.per_layer ? "blk." + std::to_string(layer) + "." + t.gguf_suffix : t.gguf_suffix;
}

std::vector<std::int64_t> llama_tensor_shape(TensorId id, const ModelConfig& c) {
    const std::int64_t d = c.hidden_size, vocab = c.vocab_size, mlp = c.intermediate_size,
                       q = static_cast<std::int64_t>(c.num_heads) * c.head_dim,
                       kv = static_cast<std::int64_t>(c.num_kv_heads) * c.head_dim;
    switch (id) {
        case T::embed:
        case T::lm_head:
            return {vocab, d};
        case T::final_norm:
        case T::attn_norm:
        case T::mlp_norm:
            return {d};
        case T::q:
            return {q, d};
        case T::k:
        case T::v:
            return {kv, d};
        case T::o:
            return {d, q};
        case T::gate:
        case T::up:
            return {mlp, d};
        case T::down:
            return {d, mlp};
        default:
            break;
    }
    throw std::out_of_range("llama_tensor_shape: tensor id " +
                            std::to_string(static_cast<int>(id)) + " is not a LLaMA tensor");
}

const Architecture& architecture_for(const std::string& family) {
    static const Architecture llama = llama_like("llama"), mistral = llama_like("mistral"),
                              gem = gemma(), g2 = gpt2(), neox = gpt_neox();
    if (family == "llama") return llama;
    if (family == "mistral") return mistral;
    if (family == "gemma") return gem;
    if (family == "gpt2") return g2;
    if (family == "gpt_neox") return neox;
    throw InputError("unknown architecture '" + family +
                     "' (supported: llama, mistral, gemma, gpt2, gpt_neox)");
}

}  // namespace attngeo::empirical
