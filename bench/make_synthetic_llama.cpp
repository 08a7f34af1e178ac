// Writes a random-weight LLaMA as a Hugging Face folder (config.json + model.safetensors) and a
// file of random token windows, so `attngeo extract` can be benchmarked on the synthetic 8-layer
// configuration at context 1024 without downloading anything (bench/bench_extract.sh uses it).
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "common/safetensors.hpp"

namespace {

attngeo::HostTensor random_tensor(const std::string& name, std::vector<std::int64_t> shape,
                                  double scale, std::mt19937_64& rng, bool ones = false) {
    std::int64_t numel = 1;
    for (auto e : shape)
        numel *= e;
    auto data = std::make_shared<std::vector<float>>(numel);
    std::normal_distribution<float> normal(0.0f, static_cast<float>(scale));
    for (auto& x : *data)
        x = ones ? 1.0f : normal(rng);
    attngeo::HostTensor t;
    t.name = name;
    t.dtype = attngeo::DType::F32;
    t.shape = std::move(shape);
    t.data = data->data();
    t.bytes = data->size() * sizeof(float);
    t.owner = std::shared_ptr<const void>(data, data->data());
    return t;
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
    const int layers = 8, hidden = 512, heads = 8, kv_heads = 2, intermediate = 1376, vocab = 32000,
              head_dim = hidden / heads;
    std::filesystem::create_directories(out);
    std::ofstream(out / "config.json")
        << "{\"model_type\": \"llama\", \"vocab_size\": " << vocab
        << ", \"hidden_size\": " << hidden << ", \"num_hidden_layers\": " << layers
        << ", \"num_attention_heads\": " << heads << ", \"num_key_value_heads\": " << kv_heads
        << ", \"intermediate_size\": " << intermediate
        << ", \"max_position_embeddings\": " << context << ", \"rms_norm_eps\": 1e-5"
        << ", \"bos_token_id\": 1, \"eos_token_id\": 2, \"tie_word_embeddings\": false}\n";
    std::mt19937_64 rng(1);
    const double w = 1.0 / std::sqrt(static_cast<double>(hidden));
    std::vector<attngeo::HostTensor> tensors = {
        random_tensor("model.embed_tokens.weight", {vocab, hidden}, 1.0, rng),
        random_tensor("model.norm.weight", {hidden}, 0, rng, true),
        random_tensor("lm_head.weight", {vocab, hidden}, w, rng)};
    for (int l = 0; l < layers; ++l) {
        const std::string p = "model.layers." + std::to_string(l) + ".";
        tensors.push_back(random_tensor(p + "input_layernorm.weight", {hidden}, 0, rng, true));
        tensors.push_back(
            random_tensor(p + "post_attention_layernorm.weight", {hidden}, 0, rng, true));
        tensors.push_back(random_tensor(p + "self_attn.q_proj.weight", {hidden, hidden}, w, rng));
        tensors.push_back(
            random_tensor(p + "self_attn.k_proj.weight", {kv_heads * head_dim, hidden}, w, rng));
        tensors.push_back(
            random_tensor(p + "self_attn.v_proj.weight", {kv_heads * head_dim, hidden}, w, rng));
        tensors.push_back(random_tensor(p + "self_attn.o_proj.weight", {hidden, hidden}, w, rng));
        tensors.push_back(
            random_tensor(p + "mlp.gate_proj.weight", {intermediate, hidden}, w, rng));
        tensors.push_back(random_tensor(p + "mlp.up_proj.weight", {intermediate, hidden}, w, rng));
        tensors.push_back(random_tensor(p + "mlp.down_proj.weight", {hidden, intermediate},
                                        1.0 / std::sqrt(static_cast<double>(intermediate)), rng));
    }
    attngeo::write_safetensors((out / "model.safetensors").string(), tensors, {{"format", "pt"}});
    std::ofstream ids(out / "windows.txt");
    std::uniform_int_distribution<int> token(3, vocab - 1);
    for (int d = 0; d < windows; ++d) {
        ids << 1;
        for (int t = 1; t < context; ++t)
            ids << ' ' << token(rng);
        ids << '\n';
    }
    return 0;
}
