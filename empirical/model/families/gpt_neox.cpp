// GPT-NeoX / Pythia (transformers' GPTNeoXForCausalLM): LayerNorm with biases, one fused qkv
// projection interleaved per head ([H, 3, d_head, …]), RoPE on the first rotary_pct of each
// head, biases everywhere, a plain MLP and (by default) the parallel residual.
#include "empirical/model/families/families.hpp"

namespace attngeo::empirical::family_tables {
namespace {

using T = TensorId;

std::vector<TensorName> tensor_rows() {
    const std::string p = "gpt_neox.layers.{i}.";
    return {
        model_tensor(T::embed, {"gpt_neox.embed_in.weight"}),
        model_tensor(T::final_norm, {"gpt_neox.final_layer_norm.weight"}),
        model_tensor(T::final_norm_bias, {"gpt_neox.final_layer_norm.bias"}),
        model_tensor(T::lm_head, {"embed_out.weight"}, /*optional=*/true),
        layer_tensor(T::attn_norm, {p + "input_layernorm.weight"}),
        layer_tensor(T::attn_norm_bias, {p + "input_layernorm.bias"}),
        layer_tensor(T::qkv, {p + "attention.query_key_value.weight"}),
        layer_tensor(T::qkv_bias, {p + "attention.query_key_value.bias"}),
        layer_tensor(T::o, {p + "attention.dense.weight"}),
        layer_tensor(T::o_bias, {p + "attention.dense.bias"}),
        layer_tensor(T::mlp_norm, {p + "post_attention_layernorm.weight"}),
        layer_tensor(T::mlp_norm_bias, {p + "post_attention_layernorm.bias"}),
        layer_tensor(T::up, {p + "mlp.dense_h_to_4h.weight"}),
        layer_tensor(T::up_bias, {p + "mlp.dense_h_to_4h.bias"}),
        layer_tensor(T::down, {p + "mlp.dense_4h_to_h.weight"}),
        layer_tensor(T::down_bias, {p + "mlp.dense_4h_to_h.bias"}),
    };
}

// transformers' GPTNeoXConfig names and defaults.
std::vector<ConfigKey> config_rows() {
    using C = ModelConfig;
    return {
        count("vocab_size", &C::vocab_size),
        count("hidden_size", &C::hidden_size),
        count("num_hidden_layers", &C::num_layers),
        count("num_attention_heads", &C::num_heads),
        count_fixed("num_key_value_heads", &C::num_kv_heads, same_as_heads, "num_attention_heads"),
        count_fixed("head_dim", &C::head_dim, hidden_over_heads,
                    "hidden_size / num_attention_heads"),
        count("intermediate_size", &C::intermediate_size),
        count_or("max_position_embeddings", &C::max_positions, 0, /*zero_allowed=*/true),
        positive("layer_norm_eps", &C::norm_eps, 1e-5),
        positive("rotary_emb_base", &C::rope_theta, 10000.0,
                 {"rope_theta", "rope_parameters.rope_theta"}),
        fraction("rotary_pct", &C::rotary_pct, 1.0, {"rope_parameters.partial_rotary_factor"}),
        flag("tie_word_embeddings", &C::tie_word_embeddings, false),
        activation("hidden_act", "gelu"),
        flag("use_parallel_residual", &C::parallel_residual, true),
        linear_rope_scaling(),
    };
}

}  // namespace

const Architecture& gpt_neox() {
    static const Architecture a = [] {
        Architecture a;
        a.family = "gpt_neox";
        a.tensors = tensor_rows();
        a.config = config_rows();
        a.norm = NormKind::layer_norm;
        a.qkv = QkvLayout::per_head;
        a.qkv_bias = true;
        a.gated_mlp = false;
        return a;
    }();
    return a;
}

}  // namespace attngeo::empirical::family_tables
