// Sharded bfloat16 checkpoints as the Hugging Face hub stores large models: a tiny LLaMA written
// as 2+ bf16 shards with model.safetensors.index.json loads equal to the same weights in one
// float32 file (exactly when those are the bf16 values, within bf16 rounding otherwise), and a
// broken index or a tensor of the wrong shape is one InputError line naming what is wrong.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "common/errors.hpp"
#include "common/safetensors.hpp"
#include "empirical/model/architecture.hpp"
#include "empirical/model/model_config.hpp"
#include "empirical/model/transformer.hpp"

namespace fs = std::filesystem;
using namespace attngeo;
using namespace attngeo::empirical;

namespace {

// 2 layers, hidden 32, 4 heads of 8 sharing 2 kv heads, vocabulary 64: every LLaMA block.
ModelConfig tiny_config() {
    LlamaSizes sizes;
    sizes.vocab_size = 64;
    sizes.hidden_size = 32;
    sizes.num_layers = 2;
    sizes.num_heads = 4;
    sizes.num_kv_heads = 2;
    sizes.intermediate_size = 48;
    sizes.max_positions = 16;
    ModelConfig config = llama_config(sizes);
    config.bos_token_id = 1;
    return config;
}

struct NamedWeights {
    std::vector<std::string> names;     // [tensors] in the order they are written
    std::vector<torch::Tensor> values;  // [tensors], float32 or bfloat16, contiguous
};

// Every tensor of the tiny model, N(0, 1/fan_in) (embedding N(0, 1), norm gains around 1).
NamedWeights random_weights(const ModelConfig& config) {
    torch::manual_seed(7);
    NamedWeights w;
    auto add = [&](TensorId id, int layer) {
        const auto shape = llama_tensor_shape(id, config);
        const double scale = shape.size() == 1       ? 0.1
                             : id == TensorId::embed ? 1.0
                                                     : 1.0 / std::sqrt(double(shape[1]));
        auto t = torch::randn(shape) * scale;
        if (shape.size() == 1) t = t + 1.0;
        w.names.push_back(llama_hf_name(id, layer));
        w.values.push_back(t.contiguous());
    };
    for (TensorId id : {TensorId::embed, TensorId::final_norm, TensorId::lm_head})
        add(id, 0);
    for (int l = 0; l < config.num_layers; ++l)
        for (TensorId id : {TensorId::attn_norm, TensorId::mlp_norm, TensorId::q, TensorId::k,
                            TensorId::v, TensorId::o, TensorId::gate, TensorId::up, TensorId::down})
            add(id, l);
    return w;
}

NamedWeights converted(const NamedWeights& w, torch::Dtype dtype) {
    NamedWeights out{w.names, {}};
    for (const auto& t : w.values)
        out.values.push_back(t.to(dtype).contiguous());
    return out;
}

void write_config(const fs::path& dir, const ModelConfig& c) {
    const nlohmann::json j = {{"model_type", "llama"},
                              {"vocab_size", c.vocab_size},
                              {"hidden_size", c.hidden_size},
                              {"num_hidden_layers", c.num_layers},
                              {"num_attention_heads", c.num_heads},
                              {"num_key_value_heads", c.num_kv_heads},
                              {"intermediate_size", c.intermediate_size},
                              {"max_position_embeddings", c.max_positions},
                              {"rms_norm_eps", 1e-5},
                              {"bos_token_id", 1},
                              {"tie_word_embeddings", false}};
    std::ofstream(dir / "config.json") << j.dump();
}

std::vector<TensorSpec> specs_of(const NamedWeights& w) {
    std::vector<TensorSpec> specs;
    for (std::size_t i = 0; i < w.names.size(); ++i) {
        const auto dtype = w.values[i].scalar_type() == torch::kBFloat16 ? DType::BF16 : DType::F32;
        specs.push_back({w.names[i], dtype, w.values[i].sizes().vec()});
    }
    return specs;
}

// A model folder with `w` in one model.safetensors (shard_bytes 0) or sharded.
fs::path write_model(const fs::path& dir, const ModelConfig& config, const NamedWeights& w,
                     std::uint64_t shard_bytes) {
    fs::create_directories(dir);
    write_config(dir, config);
    auto bytes_of = [&](std::size_t i, std::ostream& out) {
        const auto& t = w.values[i];
        out.write(static_cast<const char*>(t.data_ptr()),
                  static_cast<std::streamsize>(t.numel() * t.element_size()));
    };
    if (shard_bytes == 0)
        write_safetensors_streamed((dir / "model.safetensors").string(), specs_of(w), bytes_of);
    else
        write_safetensors_sharded(dir.string(), specs_of(w), shard_bytes, bytes_of);
    return dir;
}

class ShardedCheckpoint : public ::testing::Test {
  protected:
    void SetUp() override {
        root_ = fs::temp_directory_path() /
                ("attngeo_sharded_" + std::to_string(::getpid()) + "_" +
                 ::testing::UnitTest::GetInstance()->current_test_info()->name());
        fs::remove_all(root_);
    }
    void TearDown() override { fs::remove_all(root_); }
    fs::path root_;
};

double max_abs_diff(const torch::Tensor& a, const torch::Tensor& b) {
    EXPECT_EQ(a.sizes(), b.sizes());
    return (a.to(torch::kFloat64) - b.to(torch::kFloat64)).abs().max().item<double>();
}

CaptureResult run(const fs::path& dir, const std::string& dtype) {
    const Transformer model = Transformer::load(dir.string(), LoadOptions{"cpu", dtype});
    CaptureOptions options;
    options.queries = QueryRows::all;
    const auto ids =
        torch::tensor({1, 5, 9, 33, 2, 60, 17, 8, 41, 3, 12, 50}, torch::kInt64).view({1, 12});
    return model.forward(ids, options);
}

// The largest difference of logits, attention rows and value states between two forwards.
struct Differences {
    double logits = 0, attention = 0, values = 0;
};
Differences compare(const CaptureResult& a, const CaptureResult& b) {
    Differences d;
    d.logits = max_abs_diff(a.logits, b.logits);
    for (std::size_t l = 0; l < a.layers.size(); ++l) {
        d.attention =
            std::max(d.attention, max_abs_diff(a.layers[l].attention, b.layers[l].attention));
        d.values = std::max(d.values, max_abs_diff(a.layers[l].values, b.layers[l].values));
    }
    return d;
}

}  // namespace

TEST_F(ShardedCheckpoint, WriterCutsShardsAndTheIndexNamesEveryTensor) {
    const ModelConfig config = tiny_config();
    const NamedWeights bf16 = converted(random_weights(config), torch::kBFloat16);
    const fs::path dir = write_model(root_ / "bf16", config, bf16, 8192);
    const SafetensorsCheckpoint checkpoint(dir.string());
    const auto files = checkpoint.files();
    std::cout << "tiny bf16 model in " << files.size() << " shards\n";
    ASSERT_GE(files.size(), 2u);
    EXPECT_EQ(fs::path(files.front()).filename(),
              "model-00001-of-0000" + std::to_string(files.size()) + ".safetensors");
    for (std::size_t i = 0; i < bf16.names.size(); ++i) {
        const HostTensor h = checkpoint.get(bf16.names[i]);
        EXPECT_EQ(h.dtype, DType::BF16);
        EXPECT_EQ(h.shape, bf16.values[i].sizes().vec());
        ASSERT_EQ(h.bytes, static_cast<std::size_t>(bf16.values[i].numel() * 2));
        EXPECT_EQ(std::memcmp(h.data, bf16.values[i].data_ptr(), h.bytes), 0) << bf16.names[i];
    }
}

TEST_F(ShardedCheckpoint, Bf16ShardsLoadAsTheSameWeightsInOneFloat32File) {
    const ModelConfig config = tiny_config();
    const NamedWeights original = random_weights(config);
    const NamedWeights bf16 = converted(original, torch::kBFloat16);
    const fs::path sharded = write_model(root_ / "bf16", config, bf16, 8192);
    const fs::path widened =
        write_model(root_ / "widened", config, converted(bf16, torch::kFloat32), 0);
    const fs::path float32 = write_model(root_ / "float32", config, original, 0);

    // The bf16 values stored as float32: bit for bit the same forward, in either compute dtype
    // (bfloat16 computes straight from the mapped shards, float32 widens them).
    for (const char* dtype : {"float32", "bfloat16"}) {
        const Differences exact = compare(run(sharded, dtype), run(widened, dtype));
        std::cout << dtype << " sharded bf16 vs float32 file of the bf16 values: logits "
                  << exact.logits << ", attention " << exact.attention << ", values "
                  << exact.values << "\n";
        EXPECT_EQ(exact.logits, 0.0);
        EXPECT_EQ(exact.attention, 0.0);
        EXPECT_EQ(exact.values, 0.0);
    }
    // Against the unrounded float32 weights: each weight moved by ≤ 2^-9 relative, which moves
    // α rows (sums of 1) and O(1) logits by a few 2^-9 over two layers.
    const Differences rounded = compare(run(sharded, "float32"), run(float32, "float32"));
    const double logit_range = run(float32, "float32").logits.abs().max().item<double>();
    std::cout << "sharded bf16 vs original float32: logits " << rounded.logits << " (range "
              << logit_range << "), attention " << rounded.attention << ", values "
              << rounded.values << "\n";
    EXPECT_GT(rounded.logits, 0.0);  // the rounding is really there
    EXPECT_LE(rounded.attention, 8 * std::pow(2.0, -9));
    EXPECT_LE(rounded.logits, 16 * std::pow(2.0, -9) * logit_range);
    EXPECT_LE(rounded.values, 16 * std::pow(2.0, -9) * 4.0);
}

TEST_F(ShardedCheckpoint, IndexNamingAMissingShardIsOneInputErrorLine) {
    const ModelConfig config = tiny_config();
    const fs::path dir = write_model(root_ / "bf16", config,
                                     converted(random_weights(config), torch::kBFloat16), 8192);
    const SafetensorsCheckpoint before(dir.string());
    const std::string lost = fs::path(before.files().back()).filename().string();
    fs::remove(dir / lost);
    try {
        Transformer::load(dir.string(), LoadOptions{"cpu", "bfloat16"});
        FAIL() << "no error for a missing shard";
    } catch (const InputError& e) {
        const std::string message = e.what();
        std::cout << message << "\n";
        EXPECT_NE(message.find("model.safetensors.index.json"), std::string::npos);
        EXPECT_NE(message.find(lost), std::string::npos);
        EXPECT_NE(message.find("model.layers."), std::string::npos);  // a tensor it holds
        EXPECT_EQ(message.find('\n'), std::string::npos);
    }
}

TEST_F(ShardedCheckpoint, TensorOfTheWrongShapeNamesFileTensorAndBothShapes) {
    const ModelConfig config = tiny_config();
    NamedWeights bf16 = converted(random_weights(config), torch::kBFloat16);
    const std::string q = llama_hf_name(TensorId::q, 1);
    std::size_t at = 0;
    while (bf16.names[at] != q)
        ++at;
    bf16.values[at] = torch::zeros({32, 31}, torch::kBFloat16);  // one input column short
    const fs::path dir = write_model(root_ / "bf16", config, bf16, 8192);
    const std::string shard = SafetensorsCheckpoint(dir.string()).get(q).file;
    EXPECT_THROW(Transformer::load(dir.string(), LoadOptions{"cpu", "float32"}), InputError);
    try {
        Transformer::load(dir.string(), LoadOptions{"cpu", "bfloat16"});
        FAIL() << "no error for a tensor of the wrong shape";
    } catch (const InputError& e) {
        const std::string message = e.what();
        std::cout << message << "\n";
        EXPECT_NE(message.find(shard), std::string::npos);
        EXPECT_NE(message.find("'" + q + "'"), std::string::npos);
        EXPECT_NE(message.find("[32, 31]"), std::string::npos);
        EXPECT_NE(message.find("[32, 32]"), std::string::npos);
        EXPECT_EQ(message.find('\n'), std::string::npos);
    }
}
