// LLaMA (transformers' LlamaForCausalLM; llama2.c and GGUF files too): RMSNorm, rotate_half
// RoPE, SwiGLU MLP, grouped-query attention, no biases. Its tensor table is the one behind the
// safetensors, GGUF and llama2.c readers; mistral, gemma and qwen2 start from its rows.
#include <stdexcept>

#include "empirical/model/families/families.hpp"

namespace attngeo::empirical {

using T = TensorId;

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

namespace family_tables {

std::vector<TensorName> llama_tensor_rows() {
    std::vector<TensorName> rows;
    for (const LlamaTensor& t : llama_tensors())
        rows.push_back(t.per_layer ? layer_tensor(t.id, {"model.layers.{i}." + t.hf_suffix})
                                   : model_tensor(t.id, {t.hf_suffix}, t.optional));
    return rows;
}

// transformers' LlamaConfig names and defaults.
std::vector<ConfigKey> llama_config_rows(bool tied_by_default) {
    using C = ModelConfig;
    return {
        count("vocab_size", &C::vocab_size),
        count("hidden_size", &C::hidden_size),
        count("num_hidden_layers", &C::num_layers),
        count("num_attention_heads", &C::num_heads),
        count_derived("num_key_value_heads", &C::num_kv_heads, same_as_heads,
                      "num_attention_heads"),
        count_derived("head_dim", &C::head_dim, hidden_over_heads,
                      "hidden_size / num_attention_heads"),
        count("intermediate_size", &C::intermediate_size),
        count_or("max_position_embeddings", &C::max_positions, 0, /*zero_allowed=*/true),
        positive("rms_norm_eps", &C::norm_eps, 1e-6),
        positive("rope_theta", &C::rope_theta, 10000.0, {"rope_parameters.rope_theta"}),
        flag("tie_word_embeddings", &C::tie_word_embeddings, tied_by_default),
        activation("hidden_act", "silu"),
        linear_rope_scaling(),
        must_be_false("attention_bias"),
        must_be_false("mlp_bias"),  // transformers ≥ 4.41: biases on gate/up/down
    };
}

const Architecture& llama() {
    static const Architecture a = [] {
        Architecture a;
        a.family = "llama";
        a.tensors = llama_tensor_rows();
        a.config = llama_config_rows(/*tied_by_default=*/false);
        return a;  // the defaults: RMSNorm, separate q/k/v, full RoPE, gated MLP
    }();
    return a;
}

}  // namespace family_tables
}  // namespace attngeo::empirical
