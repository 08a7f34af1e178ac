// GPT-2 (transformers' GPT2LMHeadModel): LayerNorm with biases, learned positions, one fused
// [q | k | v] projection stored [in, out] (Conv1D, transposed on load), biases everywhere, a
// plain gelu_new MLP and a classifier tied to the embedding.
#include "empirical/model/families/families.hpp"

namespace attngeo::empirical::family_tables {
namespace {

using T = TensorId;

double four_times_hidden(const ModelConfig& c) {
    return 4.0 * c.hidden_size;
}

// Hub checkpoints use either GPT2LMHeadModel's names or the unprefixed base-model names.
std::vector<std::string> both(const std::string& name) {
    return {"transformer." + name, name};
}

std::vector<TensorName> tensor_rows() {
    const std::string p = "h.{i}.";
    return {
        model_tensor(T::embed, both("wte.weight")),
        model_tensor(T::position_embed, both("wpe.weight")),
        model_tensor(T::final_norm, both("ln_f.weight")),
        model_tensor(T::final_norm_bias, both("ln_f.bias")),
        model_tensor(T::lm_head, {"lm_head.weight"}, /*optional=*/true),
        layer_tensor(T::attn_norm, both(p + "ln_1.weight")),
        layer_tensor(T::attn_norm_bias, both(p + "ln_1.bias")),
        layer_tensor(T::qkv, both(p + "attn.c_attn.weight"), /*transpose (Conv1D)=*/true),
        layer_tensor(T::qkv_bias, both(p + "attn.c_attn.bias")),
        layer_tensor(T::o, both(p + "attn.c_proj.weight"), true),
        layer_tensor(T::o_bias, both(p + "attn.c_proj.bias")),
        layer_tensor(T::mlp_norm, both(p + "ln_2.weight")),
        layer_tensor(T::mlp_norm_bias, both(p + "ln_2.bias")),
        layer_tensor(T::up, both(p + "mlp.c_fc.weight"), true),
        layer_tensor(T::up_bias, both(p + "mlp.c_fc.bias")),
        layer_tensor(T::down, both(p + "mlp.c_proj.weight"), true),
        layer_tensor(T::down_bias, both(p + "mlp.c_proj.bias")),
    };
}

// transformers' GPT2Config names (n_embd, n_layer, ...).
std::vector<ConfigKey> config_rows() {
    using C = ModelConfig;
    return {
        count("vocab_size", &C::vocab_size),
        count("n_embd", &C::hidden_size),
        count("n_layer", &C::num_layers),
        count("n_head", &C::num_heads),
        count_fixed("num_key_value_heads", &C::num_kv_heads, same_as_heads, "n_head"),
        count_fixed("head_dim", &C::head_dim, hidden_over_heads, "n_embd / n_head"),
        count_derived("n_inner", &C::intermediate_size, four_times_hidden, "4 * n_embd"),
        count("n_positions", &C::max_positions),
        positive("layer_norm_epsilon", &C::norm_eps, 1e-5),
        activation("activation_function", "gelu_new"),
        must_be_false("scale_attn_by_inverse_layer_idx"),
        must_be_false("reorder_and_upcast_attn"),
    };
}

}  // namespace

const Architecture& gpt2() {
    static const Architecture a = [] {
        Architecture a;
        a.family = "gpt2";
        a.tensors = tensor_rows();
        a.config = config_rows();
        a.norm = NormKind::layer_norm;
        a.qkv = QkvLayout::blocks;
        a.qkv_bias = true;
        a.rotary = false;
        a.learned_positions = true;
        a.gated_mlp = false;
        a.always_tied = true;
        return a;
    }();
    return a;
}

}  // namespace attngeo::empirical::family_tables
