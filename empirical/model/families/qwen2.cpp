// Qwen2 (transformers' Qwen2ForCausalLM): the llama block with biases on the q, k and v
// projections (none on o), rope_theta from config.json (Qwen2's own files state 1e6) and
// d_head = hidden_size / num_attention_heads always. Sliding-window layers are not supported.
#include "empirical/model/families/families.hpp"

namespace attngeo::empirical::family_tables {
namespace {

using T = TensorId;

std::vector<TensorName> tensor_rows() {
    std::vector<TensorName> rows = llama_tensor_rows();
    const std::string p = "model.layers.{i}.self_attn.";
    rows.push_back(layer_tensor(T::q_bias, {p + "q_proj.bias"}));
    rows.push_back(layer_tensor(T::k_bias, {p + "k_proj.bias"}));
    rows.push_back(layer_tensor(T::v_bias, {p + "v_proj.bias"}));
    return rows;
}

// Qwen2Config: LlamaConfig's names; no head_dim key (transformers v4.40 derives it and ignores
// one) and no attention_bias (the q/k/v biases are always there). use_sliding_window = true
// windows only the layers from max_window_layers on, which the shared attention cannot do.
std::vector<ConfigKey> config_rows() {
    std::vector<ConfigKey> rows;
    for (const ConfigKey& key : llama_config_rows(/*tied_by_default=*/false)) {
        if (key.name == "attention_bias") continue;
        if (key.name == "head_dim") {
            rows.push_back(count_fixed("head_dim", &ModelConfig::head_dim, hidden_over_heads,
                                       "hidden_size / num_attention_heads"));
            continue;
        }
        rows.push_back(key);
    }
    rows.push_back(must_be_false("use_sliding_window"));
    return rows;
}

}  // namespace

const Architecture& qwen2() {
    static const Architecture a = [] {
        Architecture a;
        a.family = "qwen2";
        a.tensors = tensor_rows();
        a.config = config_rows();
        a.qkv_bias = true;
        return a;  // otherwise llama's: RMSNorm, separate q/k/v, full RoPE, gated MLP
    }();
    return a;
}

}  // namespace attngeo::empirical::family_tables
