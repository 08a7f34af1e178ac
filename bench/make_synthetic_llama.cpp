// Writes a random-weight LLaMA as a Hugging Face folder (config.json + model.safetensors) and a
// file of random token windows, so `attngeo extract` can be benchmarked on the synthetic 8-layer
// configuration at context 1024 without downloading anything (bench/bench_extract.sh uses it).
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "common/safetensors.hpp"
#include "common/tensor_store.hpp"
#include "empirical/architecture.hpp"
#include "empirical/model_config.hpp"

namespace {

// Norm gains are ones; every other tensor is N(0, 1/fan_in), the embedding N(0, 1).
attngeo::HostTensor random_tensor(attngeo::empirical::TensorId id, int layer,
                                  const attngeo::empirical::ModelConfig& config,
                                  std::mt19937_64& rng) {
    using attngeo::empirical::TensorId;
    std::vector<std::int64_t> shape = attngeo::empirical::llama_tensor_shape(id, config);
    std::int64_t numel = 1;
    for (auto e : shape)
        numel *= e;
    std::vector<float> values(static_cast<std::size_t>(numel), 1.0f);
    const bool gain = shape.size() == 1;
    if (!gain) {
        const double scale =
            id == TensorId::embed ? 1.0 : 1.0 / std::sqrt(static_cast<double>(shape[1]));
        std::normal_distribution<float> normal(0.0f, static_cast<float>(scale));
        for (auto& x : values)
            x = normal(rng);
    }
    return attngeo::owned_float_tensor(attngeo::empirical::llama_hf_name(id, layer), "",
                                       std::move(shape), std::move(values));
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 4) {
        std::fprintf(stderr, "usage: make_synthetic_llama OUT_DIR WINDOWS CONTEXT\n");
        return 2;
    }
    const std::filesystem::path out = argv[1];
    const int windows = std::stoi(argv[2]), context = std::stoi(argv[3]);
    // The synthetic configuration of bench_capture: 8 layers, hidden 512, 8 heads, 2 kv heads.
    attngeo::empirical::LlamaSizes sizes;
    sizes.vocab_size = 32000;
    sizes.hidden_size = 512;
    sizes.num_layers = 8;
    sizes.num_heads = 8;
    sizes.num_kv_heads = 2;
    sizes.intermediate_size = 1376;
    sizes.max_positions = context;
    attngeo::empirical::ModelConfig config = attngeo::empirical::llama_config(sizes);
    config.bos_token_id = 1;
    config.eos_token_id = 2;
    std::filesystem::create_directories(out);
    std::ofstream(out / "config.json")
        << "{\"model_type\": \"llama\", \"vocab_size\": " << config.vocab_size
        << ", \"hidden_size\": " << config.hidden_size
        << ", \"num_hidden_layers\": " << config.num_layers
        << ", \"num_attention_heads\": " << config.num_heads
        << ", \"num_key_value_heads\": " << config.num_kv_heads
        << ", \"intermediate_size\": " << config.intermediate_size
        << ", \"max_position_embeddings\": " << config.max_positions
        << ", \"rms_norm_eps\": 1e-5, \"bos_token_id\": " << config.bos_token_id
        << ", \"eos_token_id\": " << config.eos_token_id << ", \"tie_word_embeddings\": false}\n";
    // Drawn in the order the files were always drawn in (model-level, then per layer: the norms,
    // q, k, v, o, gate, up, down), so the same seed gives the same weights.
    using attngeo::empirical::TensorId;
    std::mt19937_64 rng(1);
    std::vector<attngeo::HostTensor> tensors;
    for (const TensorId id : {TensorId::embed, TensorId::final_norm, TensorId::lm_head})
        tensors.push_back(random_tensor(id, 0, config, rng));
    for (int l = 0; l < config.num_layers; ++l)
        for (const TensorId id :
             {TensorId::attn_norm, TensorId::mlp_norm, TensorId::q, TensorId::k, TensorId::v,
              TensorId::o, TensorId::gate, TensorId::up, TensorId::down})
            tensors.push_back(random_tensor(id, l, config, rng));
    attngeo::write_safetensors((out / "model.safetensors").string(), tensors, {{"format", "pt"}});
    std::ofstream ids(out / "windows.txt");
    std::uniform_int_distribution<int> token(3, config.vocab_size - 1);
    for (int d = 0; d < windows; ++d) {
        ids << 1;
        for (int t = 1; t < context; ++t)
            ids << ' ' << token(rng);
        ids << '\n';
    }
    return 0;
}
