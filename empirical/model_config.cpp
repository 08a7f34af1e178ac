// config.json to ModelConfig for the five families; see model_config.hpp.
#include "empirical/model_config.hpp"

#include <fstream>
#include <type_traits>

#include "common/errors.hpp"
#include "common/json_file.hpp"

namespace attngeo::empirical {
namespace {

struct Reader {
    const nlohmann::json& j;
    const std::string& path;
    template <class T>
    T required(const char* key) const {
        if (!j.contains(key) || j.at(key).is_null()) {
            throw InputError("'" + path + "': missing field '" + key + "'");
        }
        return convert<T>(key);
    }
    template <class T>
    T optional(const char* key, T fallback) const {
        if (!j.contains(key) || j.at(key).is_null()) return fallback;
        return convert<T>(key);
    }

  private:
    // Integers go through json_integer: a float such as 1.4e59 in an int field is a type
    // error, never an out-of-range conversion.
    template <class T>
    T convert(const char* key) const {
        try {
            if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>)
                return json_integer<T>(j.at(key));
            else
                return j.at(key).get<T>();
        } catch (const std::exception&) {
            throw InputError("'" + path + "': field '" + key + "' has the wrong type");
        }
    }
};

void check_positive(const std::string& path, const char* what, int value) {
    if (value <= 0)
        throw InputError("'" + path + "': " + what + " = " + std::to_string(value) +
                         ", expected > 0");
}

// transformers' LlamaConfig / MistralConfig / GemmaConfig field names and defaults.
void read_llama_like(const Reader& r, const std::string& type, ModelConfig& c) {
    c.vocab_size = r.required<int>("vocab_size");
    c.hidden_size = r.required<int>("hidden_size");
    c.num_layers = r.required<int>("num_hidden_layers");
    c.num_heads = r.required<int>("num_attention_heads");
    c.num_kv_heads = r.optional<int>("num_key_value_heads", c.num_heads);
    c.head_dim = r.optional<int>("head_dim", c.num_heads > 0 ? c.hidden_size / c.num_heads : 0);
    c.intermediate_size = r.required<int>("intermediate_size");
    c.max_positions = r.optional<int>("max_position_embeddings", 0);
    c.norm_eps = r.optional<double>("rms_norm_eps", 1e-6);
    c.rope_theta = r.optional<double>("rope_theta", 10000.0);
    c.tie_word_embeddings = r.optional<bool>("tie_word_embeddings", type == "gemma");
    c.hidden_act = type == "gemma" ? r.optional<std::string>(
                                         "hidden_activation",
                                         r.optional<std::string>("hidden_act", "gelu_pytorch_tanh"))
                                   : r.optional<std::string>("hidden_act", "silu");
    if (type == "gemma" && c.hidden_act == "gelu")
        c.hidden_act = "gelu_pytorch_tanh";  // HF Gemma 1 forces tanh
    if (type == "mistral") c.sliding_window = r.optional<int>("sliding_window", 0);
    if (r.j.contains("rope_scaling") && !r.j.at("rope_scaling").is_null()) {
        const auto& scaling = r.j.at("rope_scaling");
        const std::string kind =
            scaling.value("type", scaling.value("rope_type", std::string("?")));
        if (kind != "linear") {
            throw InputError("'" + r.path + "': rope_scaling type '" + kind +
                             "' is not supported (absent or linear)");
        }
        c.rope_scaling_factor = scaling.value("factor", 1.0);
    }
    if (r.optional<bool>("attention_bias", false)) {
        throw InputError("'" + r.path + "': attention_bias = true is not supported for " + type);
    }
}

// transformers' GPT2Config names (n_embd, n_layer, ...).
void read_gpt2(const Reader& r, ModelConfig& c) {
    c.vocab_size = r.required<int>("vocab_size");
    c.hidden_size = r.required<int>("n_embd");
    c.num_layers = r.required<int>("n_layer");
    c.num_heads = r.required<int>("n_head");
    c.num_kv_heads = c.num_heads;
    c.head_dim = c.num_heads > 0 ? c.hidden_size / c.num_heads : 0;
    c.intermediate_size = r.optional<int>("n_inner", 4 * c.hidden_size);
    c.max_positions = r.required<int>("n_positions");
    c.norm_eps = r.optional<double>("layer_norm_epsilon", 1e-5);
    c.tie_word_embeddings = true;
    c.hidden_act = r.optional<std::string>("activation_function", "gelu_new");
    if (r.optional<bool>("scale_attn_by_inverse_layer_idx", false) ||
        r.optional<bool>("reorder_and_upcast_attn", false)) {
        throw InputError(
            "'" + r.path +
            "': scale_attn_by_inverse_layer_idx / reorder_and_upcast_attn are not supported");
    }
}

void read_gpt_neox(const Reader& r, ModelConfig& c) {
    c.vocab_size = r.required<int>("vocab_size");
    c.hidden_size = r.required<int>("hidden_size");
    c.num_layers = r.required<int>("num_hidden_layers");
    c.num_heads = r.required<int>("num_attention_heads");
    c.num_kv_heads = c.num_heads;
    c.head_dim = c.num_heads > 0 ? c.hidden_size / c.num_heads : 0;
    c.intermediate_size = r.required<int>("intermediate_size");
    c.max_positions = r.optional<int>("max_position_embeddings", 0);
    c.norm_eps = r.optional<double>("layer_norm_eps", 1e-5);
    c.rope_theta = r.optional<double>("rotary_emb_base", r.optional<double>("rope_theta", 10000.0));
    c.rotary_pct = r.optional<double>("rotary_pct", 1.0);
    c.tie_word_embeddings = r.optional<bool>("tie_word_embeddings", false);
    c.hidden_act = r.optional<std::string>("hidden_act", "gelu");
    c.parallel_residual = r.optional<bool>("use_parallel_residual", true);
    if (r.j.contains("rope_scaling") && !r.j.at("rope_scaling").is_null()) {
        throw InputError("'" + r.path + "': rope_scaling is not supported for gpt_neox");
    }
}

// The checks every family shares, after its fields are read.
void check_consistent(const ModelConfig& c, const std::string& path) {
    check_positive(path, "vocab_size", c.vocab_size);
    check_positive(path, "hidden size", c.hidden_size);
    check_positive(path, "number of layers", c.num_layers);
    check_positive(path, "number of heads", c.num_heads);
    check_positive(path, "number of key/value heads", c.num_kv_heads);
    check_positive(path, "head_dim", c.head_dim);
    check_positive(path, "intermediate size", c.intermediate_size);
    if (c.num_heads % c.num_kv_heads != 0) {
        throw InputError("'" + path + "': " + std::to_string(c.num_heads) +
                         " query heads are not a multiple of " + std::to_string(c.num_kv_heads) +
                         " key/value heads");
    }
    if (!(c.norm_eps > 0)) throw InputError("'" + path + "': norm epsilon must be > 0");
    if (!(c.rope_scaling_factor > 0))
        throw InputError("'" + path + "': rope_scaling factor must be > 0");
    if (c.hidden_act != "silu" && c.hidden_act != "gelu_pytorch_tanh" &&
        c.hidden_act != "gelu_new" && c.hidden_act != "gelu") {
        throw InputError("'" + path + "': activation '" + c.hidden_act +
                         "' is not supported (silu, gelu_pytorch_tanh, gelu_new, gelu)");
    }
}

}  // namespace

ModelConfig llama_config(const LlamaSizes& sizes) {
    ModelConfig c;
    c.family = "llama";
    c.vocab_size = sizes.vocab_size;
    c.hidden_size = sizes.hidden_size;
    c.num_layers = sizes.num_layers;
    c.num_heads = sizes.num_heads;
    c.num_kv_heads = sizes.num_kv_heads;
    c.head_dim = sizes.head_dim > 0 || sizes.num_heads <= 0 ? sizes.head_dim
                                                            : sizes.hidden_size / sizes.num_heads;
    c.intermediate_size = sizes.intermediate_size;
    c.max_positions = sizes.max_positions;
    c.norm_eps = 1e-5;
    c.rope_theta = 10000;
    c.hidden_act = "silu";
    c.tie_word_embeddings = false;
    return c;
}

ModelConfig parse_hf_config(const nlohmann::json& j, const std::string& path) {
    if (!j.is_object()) throw InputError("'" + path + "': expected a JSON object");
    const Reader r{j, path};
    ModelConfig c;
    const std::string type = r.required<std::string>("model_type");
    if (type == "llama" || type == "mistral" || type == "gemma") {
        read_llama_like(r, type, c);
    } else if (type == "gpt2") {
        read_gpt2(r, c);
    } else if (type == "gpt_neox") {
        read_gpt_neox(r, c);
    } else {
        throw InputError("'" + path + "': unknown architecture model_type '" + type +
                         "' (supported: llama, mistral, gemma, gpt2, gpt_neox)");
    }
    c.family = type;
    c.bos_token_id = r.optional<int>("bos_token_id", -1);
    // A list of end ids (newer configs) is not an error: attngeo only needs one to report.
    c.eos_token_id = j.contains("eos_token_id") && j.at("eos_token_id").is_number_integer()
                         ? r.required<int>("eos_token_id")
                         : -1;
    check_consistent(c, path);
    return c;
}

ModelConfig read_hf_config(const std::string& path) {
    const nlohmann::json j =
        read_json_file(path, "a Hugging Face config.json (a model folder needs one)");
    return with_json_context(path, [&] { return parse_hf_config(j, path); });
}

}  // namespace attngeo::empirical
