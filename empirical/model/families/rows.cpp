// The row builders of the family tables; see families.hpp. The ranges here are the ones the
// shared blocks need (a count ≥ 1, a finite ε > 0, a rotary fraction in [0, 1]).
#include "empirical/model/families/families.hpp"

#include <limits>

namespace attngeo::empirical::family_tables {

TensorName model_tensor(TensorId id, std::vector<std::string> names, bool optional) {
    return {id, std::move(names), false, false, optional};
}

TensorName layer_tensor(TensorId id, std::vector<std::string> names, bool transpose) {
    return {id, std::move(names), true, transpose, false};
}

ConfigKey count(const std::string& name, int ModelConfig::*field) {
    ConfigKey k;
    k.name = name;
    k.value = ConfigValue::integer;
    k.integer = field;
    k.min = 1;
    k.max = std::numeric_limits<int>::max();
    k.required = true;
    return k;
}

ConfigKey count_or(const std::string& name, int ModelConfig::*field, double fallback,
                   bool zero_allowed) {
    ConfigKey k = count(name, field);
    k.required = false;
    k.fallback = fallback;
    if (zero_allowed) k.min = 0;
    return k;
}

ConfigKey count_derived(const std::string& name, int ModelConfig::*field,
                        double (*derive)(const ModelConfig&), const std::string& derive_doc) {
    ConfigKey k = count(name, field);
    k.required = false;
    k.derive = derive;
    k.derive_doc = derive_doc;
    return k;
}

ConfigKey count_fixed(const std::string& name, int ModelConfig::*field,
                      double (*derive)(const ModelConfig&), const std::string& derive_doc) {
    ConfigKey k = count_derived(name, field, derive, derive_doc);
    k.fixed = true;
    return k;
}

ConfigKey positive(const std::string& name, double ModelConfig::*field, double fallback,
                   std::vector<std::string> aliases) {
    ConfigKey k;
    k.name = name;
    k.aliases = std::move(aliases);
    k.value = ConfigValue::real;
    k.real = field;
    k.min = 0;
    k.min_open = true;
    k.fallback = fallback;
    return k;
}

ConfigKey fraction(const std::string& name, double ModelConfig::*field, double fallback,
                   std::vector<std::string> aliases) {
    ConfigKey k = positive(name, field, fallback, std::move(aliases));
    k.min_open = false;
    k.max = 1;
    return k;
}

ConfigKey flag(const std::string& name, bool ModelConfig::*field, bool fallback) {
    ConfigKey k;
    k.name = name;
    k.value = ConfigValue::flag;
    k.flag = field;
    k.min = 0;
    k.max = 1;
    k.fallback = fallback;
    return k;
}

ConfigKey must_be_false(const std::string& name) {
    ConfigKey k = flag(name, nullptr, false);
    k.max = 0;
    return k;
}

ConfigKey must_be_absent(const std::string& name) {
    ConfigKey k;
    k.name = name;
    k.value = ConfigValue::absent;
    return k;
}

ConfigKey activation(const std::string& name, const std::string& fallback,
                     std::vector<std::string> aliases) {
    ConfigKey k;
    k.name = name;
    k.aliases = std::move(aliases);
    k.value = ConfigValue::text;
    k.text = &ModelConfig::hidden_act;
    k.choices = {"silu", "gelu_pytorch_tanh", "gelu_new", "gelu"};
    k.fallback_text = fallback;
    return k;
}

ConfigKey linear_rope_scaling() {
    ConfigKey k =
        positive("rope_scaling", &ModelConfig::rope_scaling_factor, 1, {"rope_parameters"});
    k.value = ConfigValue::linear_rope_scaling;
    return k;
}

double hidden_over_heads(const ModelConfig& c) {
    return static_cast<double>(c.hidden_size) / c.num_heads;
}

double same_as_heads(const ModelConfig& c) {
    return c.num_heads;
}

}  // namespace attngeo::empirical::family_tables
