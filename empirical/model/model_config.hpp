// A model's architecture hyper-parameters, from a Hugging Face config.json or from a
// llama2.c / GGUF header, in one struct the shared blocks read.
#pragma once
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

namespace attngeo::empirical {

struct ModelConfig {
    std::string family;  // a model_type of the registry (family_names()), e.g. llama, qwen2
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
    std::string hidden_act = "silu";           // silu | gelu_pytorch_tanh | gelu_new | gelu
    bool parallel_residual = false;            // GPT-NeoX
    int bos_token_id = -1, eos_token_id = -1;  // -1: none the model can use
    // Why bos_token_id is -1 although the file states one ("config.json's bos_token_id = 50256
    // lies outside vocab_size = 256"): transformers loads such a config, so it is an error only
    // where attngeo needs the token (--bos, --prompt). Empty otherwise.
    std::string bos_token_note;
};
// Why `config` has no BOS token, for a message: its note, or that no file states one.
std::string missing_bos_reason(const ModelConfig& config);

// What a config.json key holds. `absent`: a key the shared blocks cannot honour, accepted only
// when missing or null; `linear_rope_scaling`: absent, null, or {"type" (or "rope_type"):
// "default" | "linear", "factor": a number within the row's range}.
enum class ConfigValue { integer, real, flag, text, absent, linear_rope_scaling };

// One row of a family's config table: a config.json key, the ModelConfig field it fills (one
// of the member pointers, or none for a key that is only checked), its valid range, and what
// stands in when it is missing or null. Rows are read in order, so a derived fallback may use
// the fields of earlier rows. A value outside the range is an InputError naming the file and
// the key; so is a derived value (e.g. head_dim = hidden_size / num_attention_heads = 16.25).
struct ConfigKey {
    std::string name;    // the key in config.json (with `fixed`: only the value's label)
    bool fixed = false;  // never read from config.json: always `derive`d (GPT-2's head_dim)
    // Keys read in order when `name` is missing; "a.b" is key b of the object a (transformers 5
    // writes rope_theta and partial_rotary_factor into rope_parameters).
    std::vector<std::string> aliases;
    ConfigValue value = ConfigValue::integer;
    int ModelConfig::*integer = nullptr;
    double ModelConfig::*real = nullptr;
    bool ModelConfig::*flag = nullptr;
    std::string ModelConfig::*text = nullptr;
    // Numbers (and flags as 0/1): min ≤ value ≤ max, or min < value when min_open; reals must
    // also be finite. A flag with max 0 must be false.
    double min = -std::numeric_limits<double>::infinity();
    double max = std::numeric_limits<double>::infinity();
    bool min_open = false;
    std::vector<std::string> choices;                          // text: the accepted values
    std::vector<std::pair<std::string, std::string>> read_as;  // text: value read as another
    bool required = false;
    double fallback = 0;        // missing: this number (or flag), unless `derive` is set
    std::string fallback_text;  // missing: this text
    double (*derive)(const ModelConfig&) = nullptr;  // missing: computed from earlier fields
    std::string derive_doc;  // `derive` in the family's own key names: "n_embd / n_head"
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

// Reads config.json through the table of the family its model_type names (architecture.hpp);
// throws attngeo::InputError naming the file and the key for an unknown model_type, a missing
// key, a value of the wrong type or outside its row's range, or inconsistent values.
ModelConfig parse_hf_config(const nlohmann::json& config, const std::string& path);
ModelConfig read_hf_config(const std::string& path);

}  // namespace attngeo::empirical
