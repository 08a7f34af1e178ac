// A model's architecture hyper-parameters, from a Hugging Face config.json or from a
// llama2.c / GGUF header, in one struct the shared blocks read.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

namespace attngeo::empirical {

struct ModelConfig {
    std::string family;  // llama | mistral | gemma | gpt2 | gpt_neox
    int vocab_size = 0;
    int hidden_size = 0;
    int num_layers = 0;
    int num_heads = 0;     // query heads H
    int num_kv_heads = 0;  // key/value heads H_kv (H % H_kv == 0)
    int head_dim = 0;      // d_head (Gemma: independent of hidden/heads)
    int intermediate_size = 0;
    int max_positions = 0;
    double norm_eps = 1e-5;
    double rope_theta = 10000;
    double rope_scaling_factor = 1;  // linear position interpolation: positions / factor
    double rotary_pct = 1;           // GPT-NeoX: fraction of head_dim that is rotated
    int sliding_window = 0;          // keys per query (i − W < j ≤ i); 0 = full causal
    bool tie_word_embeddings = false;
    std::string hidden_act = "silu";  // silu | gelu_pytorch_tanh | gelu_new | gelu
    bool parallel_residual = false;   // GPT-NeoX
    int bos_token_id = -1, eos_token_id = -1;
};

// The sizes that define a LLaMA-family model: what a llama2.c header, a GGUF header or a
// synthetic benchmark states.
struct LlamaSizes {
    int vocab_size = 0;
    int hidden_size = 0;  // d
    int num_layers = 0;
    int num_heads = 0;     // H
    int num_kv_heads = 0;  // H_kv
    int head_dim = 0;      // 0: hidden_size / num_heads
    int intermediate_size = 0;
    int max_positions = 0;
};
// family llama with LLaMA's defaults (SiLU, RoPE θ 10000, eps 1e-5, untied classifier, no BOS
// or EOS id); callers set what their format states beyond the sizes. Validates nothing: each
// reader checks its own header and names its file.
ModelConfig llama_config(const LlamaSizes& sizes);

// Reads config.json's fields for the five families; throws attngeo::InputError naming the
// file and the field for an unknown model_type, a missing field or inconsistent values.
ModelConfig parse_hf_config(const nlohmann::json& config, const std::string& path);
ModelConfig read_hf_config(const std::string& path);

}  // namespace attngeo::empirical
