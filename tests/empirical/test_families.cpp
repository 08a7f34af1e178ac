// The family registry and the config tables: each family once, its flags consistent with its
// tensor table, every golden config.json read, and every value outside its row's range an
// InputError of one line naming the file and the key (before anything reaches libtorch).
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>

#include "common/errors.hpp"
#include "empirical/model/architecture.hpp"
#include "empirical/model/model_config.hpp"
#include "empirical/model/transformer.hpp"
#include "tests/support/shared_data.hpp"

namespace fs = std::filesystem;
using namespace attngeo;
using namespace attngeo::empirical;

namespace {

using attngeo::test_support::shared_folder;

bool names_tensor(const Architecture& a, TensorId id) {
    return std::any_of(a.tensors.begin(), a.tensors.end(),
                       [&](const TensorName& t) { return t.id == id; });
}

// A small valid config.json of each family (the golden models' sizes).
nlohmann::json base_config(const std::string& family) {
    if (family == "gpt2")
        return {{"model_type", "gpt2"}, {"vocab_size", 256}, {"n_embd", 64},
                {"n_layer", 3},         {"n_head", 4},       {"n_positions", 64}};
    nlohmann::json j = {{"model_type", family},     {"vocab_size", 256},
                        {"hidden_size", 64},        {"num_hidden_layers", 3},
                        {"num_attention_heads", 4}, {"intermediate_size", 160}};
    if (family == "gpt_neox") j["rotary_pct"] = 0.25;
    return j;
}

}  // namespace

TEST(FamilyRegistry, ListsEachFamilyOnceAndFindsItByModelType) {
    std::set<std::string> seen;
    for (const Architecture* a : families()) {
        EXPECT_TRUE(seen.insert(a->family).second) << a->family;
        EXPECT_EQ(&architecture_for(a->family), a);
        EXPECT_NE(family_names().find(a->family), std::string::npos);
    }
    EXPECT_EQ(seen,
              (std::set<std::string>{"llama", "mistral", "gemma", "gpt2", "gpt_neox", "qwen2"}));
    EXPECT_EQ(find_architecture("mamba"), nullptr);
    EXPECT_THROW(architecture_for("mamba"), InputError);
}

// The qkv_bias flag is the table's: a family has it exactly when its table names a q/k/v bias,
// and each tensor id is named once.
TEST(FamilyRegistry, FlagsAgreeWithTheTensorTables) {
    for (const Architecture* a : families()) {
        const bool bias =
            names_tensor(*a, TensorId::q_bias) || names_tensor(*a, TensorId::qkv_bias);
        EXPECT_EQ(a->qkv_bias, bias) << a->family;
        EXPECT_EQ(names_tensor(*a, TensorId::qkv), a->qkv != QkvLayout::separate) << a->family;
        EXPECT_EQ(names_tensor(*a, TensorId::gate), a->gated_mlp) << a->family;
        EXPECT_EQ(names_tensor(*a, TensorId::position_embed), a->learned_positions) << a->family;
        std::set<TensorId> ids;
        for (const TensorName& t : a->tensors)
            EXPECT_TRUE(ids.insert(t.id).second) << a->family << " names a tensor id twice";
        std::set<std::string> keys;
        for (const ConfigKey& k : a->config)
            EXPECT_TRUE(keys.insert(k.name).second) << a->family << " reads " << k.name << " twice";
    }
    EXPECT_FALSE(architecture_for("llama").qkv_bias);
    EXPECT_TRUE(architecture_for("qwen2").qkv_bias);
}

TEST(FamilyConfig, ReadsEveryGoldenConfig) {
    struct Case {
        const char* folder;
        const char* family;
        int head_dim, kv_heads;
        double rope_theta;
    } cases[] = {{"llama-gqa", "llama", 16, 2, 1e4},   {"mistral-swa", "mistral", 16, 2, 1e4},
                 {"gemma", "gemma", 32, 1, 1e4},       {"gpt2", "gpt2", 16, 4, 1e4},
                 {"gpt-neox", "gpt_neox", 16, 4, 1e4}, {"qwen2", "qwen2", 16, 2, 1e6}};
    for (const Case& c : cases) {
        const fs::path config = shared_folder() / "golden" / c.folder / "config.json";
        REQUIRE_SHARED_FILE(config);
        const ModelConfig m = read_hf_config(config.string());
        EXPECT_EQ(m.family, c.family);
        EXPECT_EQ(m.head_dim, c.head_dim) << c.folder;
        EXPECT_EQ(m.num_kv_heads, c.kv_heads) << c.folder;
        EXPECT_EQ(m.rope_theta, c.rope_theta) << c.folder;
    }
    // Qwen2 never reads a sliding window it does not use (its files state 4096 or 32768).
    const ModelConfig q = read_hf_config((shared_folder() / "golden/qwen2/config.json").string());
    EXPECT_EQ(q.sliding_window, 0);
    EXPECT_EQ(q.hidden_act, "silu");
    EXPECT_FALSE(q.tie_word_embeddings);
}

// Each case: a family's valid config with one key changed; the error names the file, the key
// and (where there is one) the range, on one line.
TEST(FamilyConfig, ValuesOutsideTheirRangeAreInputErrorsNamingFileAndKey) {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    const double inf = std::numeric_limits<double>::infinity();
    struct Case {
        std::string family;
        nlohmann::json patch;
        std::string needle;
    } cases[] = {
        {"gpt_neox", {{"rotary_pct", 1e12}}, "rotary_pct = 1e+12, expected a finite 0 <= "},
        {"gpt_neox", {{"rotary_pct", -0.25}}, "rotary_pct = -0.25"},
        {"gpt_neox", {{"rotary_pct", 0.3125}}, "expected an even number"},  // 5 of 16
        {"gpt_neox", {{"rope_scaling", {{"type", "dynamic"}, {"factor", 2}}}}, "rope_scaling"},
        {"llama",
         {{"rope_parameters", {{"rope_type", "yarn"}, {"factor", 4}}}},
         "rope_parameters type 'yarn'"},
        {"qwen2", {{"rope_parameters", {{"rope_theta", -1}}}}, "rope_parameters.rope_theta = -1"},
        {"gpt_neox", {{"hidden_size", 66}}, "head_dim = hidden_size / num_attention_heads = 16.5"},
        {"llama", {{"num_attention_heads", -4}}, "num_attention_heads = -4"},
        {"llama", {{"num_key_value_heads", 0}}, "num_key_value_heads = 0"},
        {"llama", {{"num_key_value_heads", 3}}, "num_key_value_heads = 3"},
        {"llama", {{"hidden_size", 65}}, "head_dim = hidden_size / num_attention_heads = 16.25"},
        {"llama", {{"head_dim", -16}}, "head_dim = -16"},
        {"llama", {{"vocab_size", 3000000000LL}}, "vocab_size = 3000000000"},
        {"llama", {{"max_position_embeddings", -1}}, "max_position_embeddings = -1"},
        {"llama", {{"rms_norm_eps", nan}}, "rms_norm_eps = nan"},
        {"llama", {{"rms_norm_eps", inf}}, "rms_norm_eps = inf"},
        {"llama", {{"rms_norm_eps", 0}}, "rms_norm_eps = 0, expected a finite rms_norm_eps > 0"},
        {"llama", {{"rope_theta", -1e4}}, "rope_theta = -10000"},
        {"llama",
         {{"rope_scaling", {{"type", "linear"}, {"factor", 0}}}},
         "rope_scaling.factor = 0"},
        {"llama",
         {{"rope_scaling", {{"type", "yarn"}, {"factor", 4}}}},
         "rope_scaling type 'yarn'"},
        {"llama", {{"hidden_act", "relu"}}, "hidden_act = 'relu', expected one of silu"},
        {"llama", {{"attention_bias", true}}, "attention_bias = true is not supported for llama"},
        {"mistral", {{"sliding_window", -8}}, "sliding_window = -8"},
        {"gemma", {{"hidden_activation", "tanh"}}, "hidden_activation = 'tanh'"},
        {"gpt2", {{"n_head", -1}}, "n_head = -1"},
        {"gpt2", {{"n_embd", 65}}, "head_dim = n_embd / n_head = 16.25"},
        {"gpt2", {{"n_embd", 1000000000}}, "n_inner = 4 * n_embd = 4e+09"},
        {"gpt2", {{"layer_norm_epsilon", -inf}}, "layer_norm_epsilon = -inf"},
        {"gpt2", {{"n_positions", 0}}, "n_positions = 0"},
        {"gpt2", {{"reorder_and_upcast_attn", true}}, "reorder_and_upcast_attn = true"},
        {"qwen2", {{"num_hidden_layers", 0}}, "num_hidden_layers = 0"},
        {"qwen2", {{"hidden_size", 66}}, "head_dim = hidden_size / num_attention_heads = 16.5"},
        {"qwen2", {{"use_sliding_window", true}}, "use_sliding_window = true is not supported"},
    };
    const std::string path = "/models/x/config.json";
    for (const Case& c : cases) {
        nlohmann::json j = base_config(c.family);
        ASSERT_NO_THROW(parse_hf_config(j, path)) << c.family;
        for (const auto& [key, value] : c.patch.items())
            j[key] = value;
        try {
            parse_hf_config(j, path);
            ADD_FAILURE() << c.family << " " << c.patch.dump() << ": no error";
        } catch (const InputError& e) {
            const std::string m = e.what();
            EXPECT_EQ(m.rfind("'" + path + "': ", 0), 0u) << m;
            EXPECT_NE(m.find(c.needle), std::string::npos) << "expected '" << c.needle << "' in\n"
                                                           << m;
            EXPECT_EQ(m.find('\n'), std::string::npos) << m;
        }
    }
}

// Special token ids transformers accepts and attngeo cannot use (GPT2Config's default 50256 at a
// vocabulary of 256, a negative id, a list, a float) load as "no such token", and the BOS note
// names the file and the key for the caller that needs one.
TEST(FamilyConfig, TokenIdsOutsideTheVocabularyLoadAsNone) {
    const std::string path = "/models/x/config.json";
    const nlohmann::json cases[] = {50256, 256,    -2,           nlohmann::json::array({1, 2}),
                                    1.5,   -1e300, 99999999999LL};
    for (const std::string family : {"gpt2", "qwen2", "llama"})
        for (const nlohmann::json& id : cases) {
            nlohmann::json j = base_config(family);
            j["bos_token_id"] = id;
            j["eos_token_id"] = id;
            ModelConfig c;
            ASSERT_NO_THROW(c = parse_hf_config(j, path)) << family << " " << id.dump();
            EXPECT_EQ(c.bos_token_id, -1) << id.dump();
            EXPECT_EQ(c.eos_token_id, -1) << id.dump();
            const std::string reason = missing_bos_reason(c);
            EXPECT_NE(reason.find("'" + path + "' states bos_token_id = " + id.dump()),
                      std::string::npos)
                << reason;
            EXPECT_NE(reason.find("vocab_size = 256"), std::string::npos) << reason;
        }
    nlohmann::json j = base_config("gpt2");
    j["bos_token_id"] = 255;
    EXPECT_EQ(parse_hf_config(j, path).bos_token_id, 255);
    EXPECT_TRUE(parse_hf_config(j, path).bos_token_note.empty());
}

// A missing required key names itself; an unknown model_type lists the registry.
TEST(FamilyConfig, MissingKeysAndUnknownTypesNameThemselves) {
    nlohmann::json j = base_config("qwen2");
    j.erase("intermediate_size");
    try {
        parse_hf_config(j, "c.json");
        ADD_FAILURE() << "no error";
    } catch (const InputError& e) {
        EXPECT_NE(std::string(e.what()).find("'intermediate_size'"), std::string::npos) << e.what();
    }
    j = base_config("llama");
    j["model_type"] = "mamba";
    try {
        parse_hf_config(j, "c.json");
        ADD_FAILURE() << "no error";
    } catch (const InputError& e) {
        EXPECT_NE(std::string(e.what()).find(family_names()), std::string::npos) << e.what();
    }
}

// Qwen2's q/k/v biases are part of its table: a qwen2 config over weights without them (the
// llama-gqa golden, same sizes) names the first missing bias and its file.
TEST(FamilyConfig, Qwen2WithoutItsBiasesNamesTheMissingTensor) {
    const fs::path golden = shared_folder() / "golden" / "llama-gqa";
    REQUIRE_SHARED_FILE(golden);
    const fs::path folder =
        fs::temp_directory_path() / ("attngeo_families_" + std::to_string(::getpid()));
    fs::remove_all(folder);
    fs::create_directories(folder);
    fs::create_symlink(fs::absolute(golden / "model.safetensors"), folder / "model.safetensors");
    nlohmann::json config = nlohmann::json::parse(std::ifstream(golden / "config.json"));
    config["model_type"] = "qwen2";
    std::ofstream(folder / "config.json") << config.dump();
    try {
        Transformer::load(folder.string());
        ADD_FAILURE() << "no error";
    } catch (const InputError& e) {
        EXPECT_NE(
            std::string(e.what()).find("missing tensor 'model.layers.0.self_attn.q_proj.bias'"),
            std::string::npos)
            << e.what();
    }
    fs::remove_all(folder);
}
