// config.json to ModelConfig through the table of the family its model_type names (the rows
// and their ranges live in empirical/model/families/); see model_config.hpp.
#include "empirical/model/model_config.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <type_traits>

#include "common/errors.hpp"
#include "common/format.hpp"
#include "common/json_file.hpp"
#include "empirical/model/architecture.hpp"

namespace attngeo::empirical {
namespace {

struct Reader {
    const nlohmann::json& j;
    const std::string& path;
    // The value of `key` ("a.b": key b of the object a), nullptr when missing or null.
    const nlohmann::json* find(const std::string& key) const {
        const nlohmann::json* at = &j;
        std::size_t begin = 0;
        while (true) {
            const std::size_t dot = key.find('.', begin);
            const std::string part = key.substr(begin, dot - begin);
            if (!at->is_object() || !at->contains(part)) return nullptr;
            at = &at->at(part);
            if (dot == std::string::npos) break;
            begin = dot + 1;
        }
        return at->is_null() ? nullptr : at;
    }
    template <class T>
    T required(const std::string& key) const {
        const nlohmann::json* value = find(key);
        if (!value) throw InputError("'" + path + "': missing field '" + key + "'");
        return convert<T>(*value, key);
    }
    template <class T>
    T optional(const std::string& key, T fallback) const {
        const nlohmann::json* value = find(key);
        return value ? convert<T>(*value, key) : fallback;
    }

  private:
    // Integers go through json_integer: a float such as 1.4e59 in an int field is a type
    // error, never an out-of-range conversion.
    template <class T>
    T convert(const nlohmann::json& value, const std::string& key) const {
        try {
            if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>)
                return json_integer<T>(value);
            else
                return value.get<T>();
        } catch (const std::exception&) {
            throw InputError("'" + path + "': field '" + key + "' has the wrong type");
        }
    }
};

// "expected 0 <= rotary_pct <= 1", "expected a finite rms_norm_eps > 0".
std::string range_text(const ConfigKey& key) {
    std::string text = "expected ";
    if (key.value == ConfigValue::integer && key.derive) text += "a whole number with ";
    if (key.value == ConfigValue::real) text += "a finite ";
    const bool above = std::isfinite(key.max);
    if (above) text += format_double(key.min) + (key.min_open ? " < " : " <= ") + key.name;
    if (!above) text += key.name + (key.min_open ? " > " : " >= ") + format_double(key.min);
    if (above) text += " <= " + format_double(key.max);
    return text;
}

bool in_range(const ConfigKey& key, double x) {
    const bool whole = key.value != ConfigValue::integer || std::floor(x) == x;
    const bool finite = key.value != ConfigValue::real || std::isfinite(x);
    return whole && finite && (key.min_open ? x > key.min : x >= key.min) && x <= key.max;
}

void check_number(const ConfigKey& key, double x, const std::string& shown,
                  const std::string& path) {
    if (!in_range(key, x)) throw InputError("'" + path + "': " + shown + ", " + range_text(key));
}

void store_number(const ConfigKey& key, double x, ModelConfig& c) {
    if (key.integer) c.*key.integer = static_cast<int>(x);
    if (key.real) c.*key.real = x;
    if (key.flag) c.*key.flag = x != 0;
}

// rope_scaling: {"type" (or "rope_type"): "linear", "factor": x}; its factor is the number.
// "default" (transformers 5's rope_parameters when no scaling is asked) is factor 1.
double linear_factor(const nlohmann::json& scaling, const ConfigKey& key, const std::string& name,
                     const std::string& path) {
    if (!scaling.is_object())
        throw InputError("'" + path + "': " + name + " = " + scaling.dump() +
                         ", expected null or an object {\"type\": \"linear\", \"factor\": x}");
    // transformers 5's rope_parameters may state only θ: no scaling.
    const std::string unstated = name == "rope_parameters" ? "default" : "?";
    const std::string kind = scaling.value("type", scaling.value("rope_type", unstated));
    if (kind == "default") return 1;
    if (kind != "linear")
        throw InputError("'" + path + "': " + name + " type '" + kind +
                         "' is not supported (absent, default or linear)");
    const nlohmann::json factor = scaling.value("factor", nlohmann::json(1.0));
    if (!factor.is_number())
        throw InputError("'" + path + "': " + name + ".factor has the wrong type");
    const double x = factor.get<double>();
    check_number(key, x, name + ".factor = " + format_double(x), path);
    return x;
}

void read_text(const Reader& r, const ConfigKey& key, const std::string& name, ModelConfig& c) {
    std::string text = name.empty() ? key.fallback_text : r.required<std::string>(name);
    for (const auto& [from, to] : key.read_as)
        if (text == from) text = to;
    if (std::find(key.choices.begin(), key.choices.end(), text) == key.choices.end()) {
        std::string choices;
        for (const std::string& choice : key.choices)
            choices += (choices.empty() ? "" : ", ") + choice;
        throw InputError("'" + r.path + "': " + (name.empty() ? key.name : name) + " = '" + text +
                         "', expected one of " + choices);
    }
    c.*key.text = text;
}

// A key that is missing or null: required, derived from earlier fields, or the fallback.
void read_missing(const Reader& r, const ConfigKey& key, ModelConfig& c) {
    if (key.required) throw InputError("'" + r.path + "': missing field '" + key.name + "'");
    if (key.value == ConfigValue::text) return read_text(r, key, "", c);
    if (!key.derive) return store_number(key, key.fallback, c);
    const double x = key.derive(c);
    check_number(key, x, key.name + " = " + key.derive_doc + " = " + format_double(x), r.path);
    store_number(key, x, c);
}

// The key a row is read from: its name, else the first alias present; "" when none is (or the
// row is fixed).
std::string present_name(const Reader& r, const ConfigKey& key) {
    if (key.fixed) return "";
    if (r.find(key.name)) return key.name;
    for (const std::string& alias : key.aliases)
        if (r.find(alias)) return alias;
    return "";
}

// One row of the family's table: read, checked against its range, stored.
void read_key(const Reader& r, const ConfigKey& key, ModelConfig& c) {
    const std::string name = present_name(r, key);
    if (name.empty()) return read_missing(r, key, c);
    const std::string& k = name;
    switch (key.value) {
        case ConfigValue::absent:
            throw InputError("'" + r.path + "': " + name + " is not supported for " + c.family +
                             " (expected it absent or null)");
        case ConfigValue::linear_rope_scaling:
            return store_number(key, linear_factor(*r.find(name), key, name, r.path), c);
        case ConfigValue::text:
            return read_text(r, key, name, c);
        case ConfigValue::flag: {
            const bool on = r.required<bool>(k);
            if (!in_range(key, on))
                throw InputError("'" + r.path + "': " + name + " = true is not supported for " +
                                 c.family + " (expected false)");
            return store_number(key, on, c);
        }
        case ConfigValue::integer: {
            const auto x = r.required<long long>(k);
            check_number(key, static_cast<double>(x), name + " = " + std::to_string(x), r.path);
            return store_number(key, static_cast<double>(x), c);
        }
        case ConfigValue::real: {
            const double x = r.required<double>(k);
            check_number(key, x, name + " = " + format_double(x), r.path);
            return store_number(key, x, c);
        }
    }
}

// A special token id every family may state: -1 when missing, null, or not an id of the
// vocabulary (`note` then says so). transformers accepts any value here (GPT2Config keeps its
// default 50256 at every vocab_size; some configs list several), so only a caller that needs the
// token refuses the model.
int token_id(const Reader& r, const char* key, int vocab_size, std::string* note) {
    const nlohmann::json* found = r.find(key);
    if (!found) return -1;
    const nlohmann::json& value = *found;
    if (value.is_number_integer()) {
        const std::int64_t id = value.get<std::int64_t>();
        if (id >= 0 && id < vocab_size) return static_cast<int>(id);
    }
    if (note)
        *note = "'" + r.path + "' states " + key + " = " + value.dump() +
                ", not an id below vocab_size = " + std::to_string(vocab_size);
    return -1;
}

// The name a family's table gives `field` (GPT-2: n_head for num_heads).
std::string key_name(const Architecture& a, int ModelConfig::*field, const char* fallback) {
    for (const ConfigKey& key : a.config)
        if (key.integer == field) return key.name;
    return fallback;
}

// The checks across keys, after the family's rows are read.
void check_consistent(const ModelConfig& c, const Architecture& a, const std::string& path) {
    if (c.num_heads % c.num_kv_heads != 0) {
        throw InputError("'" + path +
                         "': " + key_name(a, &ModelConfig::num_heads, "num_attention_heads") +
                         " = " + std::to_string(c.num_heads) + " is not a multiple of " +
                         key_name(a, &ModelConfig::num_kv_heads, "num_key_value_heads") + " = " +
                         std::to_string(c.num_kv_heads));
    }
    const long long rotated = a.rotary ? static_cast<long long>(c.head_dim * c.rotary_pct) : 0;
    if (rotated % 2 != 0) {
        throw InputError("'" + path + "': rotary_pct = " + format_double(c.rotary_pct) +
                         " rotates " + std::to_string(rotated) + " of the " +
                         std::to_string(c.head_dim) +
                         " dimensions of a head, expected an even number");
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
    const Architecture* family = find_architecture(type);
    if (!family) {
        throw InputError("'" + path + "': unknown architecture model_type '" + type +
                         "' (supported: " + family_names() + ")");
    }
    c.family = type;
    for (const ConfigKey& key : family->config)
        read_key(r, key, c);
    c.bos_token_id = token_id(r, "bos_token_id", c.vocab_size, &c.bos_token_note);
    // A list of end ids (newer configs) is not an error: attngeo only reports one.
    c.eos_token_id = token_id(r, "eos_token_id", c.vocab_size, nullptr);
    check_consistent(c, *family, path);
    return c;
}

std::string missing_bos_reason(const ModelConfig& config) {
    if (!config.bos_token_note.empty()) return config.bos_token_note;
    return "no bos_token_id in its config.json, no tokenizer.ggml.bos_token_id in its GGUF";
}

ModelConfig read_hf_config(const std::string& path) {
    const nlohmann::json j =
        read_json_file(path, "a Hugging Face config.json (a model folder needs one)");
    return with_json_context(path, [&] { return parse_hf_config(j, path); });
}

}  // namespace attngeo::empirical
