// Internal to empirical/model/families/: each family file's entry point (the registry lists them)
// and the row builders the family tables are written with, so a table reads as data.
#pragma once
#include <string>
#include <vector>

#include "empirical/model/architecture.hpp"

namespace attngeo::empirical::family_tables {

// One per family file; registry.cpp lists them.
const Architecture& llama();
const Architecture& mistral();
const Architecture& gemma();
const Architecture& gpt2();
const Architecture& gpt_neox();
const Architecture& qwen2();

// The llama block's parts the llama-like families (mistral, gemma, qwen2) start from: the
// tensor table in transformers' names and the config rows of LlamaConfig, with the classifier
// tied by default or not.
std::vector<TensorName> llama_tensor_rows();
std::vector<ConfigKey> llama_config_rows(bool tied_by_default);

// Tensor rows: a model-level tensor (optional: absent when tied) and a per-layer one
// ("{i}" = layer; transpose: stored [in, out] as GPT-2's Conv1D).
TensorName model_tensor(TensorId id, std::vector<std::string> names, bool optional = false);
TensorName layer_tensor(TensorId id, std::vector<std::string> names, bool transpose = false);

// Config rows. A count is an integer ≥ 1 (≥ 0 with `zero_allowed`); required unless a fallback
// is given (`derive` with its formula in the family's key names, or a constant).
ConfigKey count(const std::string& name, int ModelConfig::*field);
ConfigKey count_or(const std::string& name, int ModelConfig::*field, double fallback,
                   bool zero_allowed = false);
ConfigKey count_derived(const std::string& name, int ModelConfig::*field,
                        double (*derive)(const ModelConfig&), const std::string& derive_doc);
// A count the family never reads: always `derive`d, `name` labels it in messages.
ConfigKey count_fixed(const std::string& name, int ModelConfig::*field,
                      double (*derive)(const ModelConfig&), const std::string& derive_doc);
// A finite real > 0 (epsilons, rope θ), missing: `fallback`; `aliases` read in order when
// `name` is absent ("rope_parameters.rope_theta": a key inside an object).
ConfigKey positive(const std::string& name, double ModelConfig::*field, double fallback,
                   std::vector<std::string> aliases = {});
// A finite real in [0, 1].
ConfigKey fraction(const std::string& name, double ModelConfig::*field, double fallback,
                   std::vector<std::string> aliases = {});
ConfigKey flag(const std::string& name, bool ModelConfig::*field, bool fallback);
// A flag whose `true` the shared blocks cannot honour: accepted when false, missing or null.
ConfigKey must_be_false(const std::string& name);
// A key the shared blocks cannot honour at all: accepted only when missing or null.
ConfigKey must_be_absent(const std::string& name);
// hidden_act-like text: one of the activations the shared MLP computes.
ConfigKey activation(const std::string& name, const std::string& fallback,
                     std::vector<std::string> aliases = {});
// rope_scaling (transformers 5: rope_parameters): missing, null, "default", or linear with a
// factor > 0 (positions / factor).
ConfigKey linear_rope_scaling();

// Derived fallbacks, named by what they compute.
double hidden_over_heads(const ModelConfig& c);  // d_head = hidden_size / num_heads
double same_as_heads(const ModelConfig& c);      // H_kv = H (no grouped-query attention)

}  // namespace attngeo::empirical::family_tables
