// Writes a random-weight LLaMA as a Hugging Face folder (config.json + model.safetensors, or
// sharded safetensors with model.safetensors.index.json) and a file of random token windows, so
// `attngeo extract` can be benchmarked without downloading anything (bench/bench_extract.sh).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "common/safetensors.hpp"
#include "common/tensor_store.hpp"
#include "empirical/model/architecture.hpp"
#include "empirical/model/model_config.hpp"

namespace {

using attngeo::empirical::ModelConfig;
using attngeo::empirical::TensorId;

struct Options {
    std::filesystem::path out;
    int windows = 0, context = 0;
    std::string shape = "small";    // small | llama2-7b
    std::string dtype = "float32";  // float32 | bfloat16
    std::uint64_t shard_bytes = 0;  // 0: one model.safetensors (small) or 5 GB shards (7b)
};

// The two shapes: the synthetic configuration of bench_capture (8 layers, hidden 512, 8 heads,
// 2 kv heads), and LLaMA-2-7B's published config.json.
ModelConfig shape_config(const Options& options) {
    attngeo::empirical::LlamaSizes sizes;
    sizes.vocab_size = 32000;
    if (options.shape == "small") {
        sizes.hidden_size = 512;
        sizes.num_layers = 8;
        sizes.num_heads = 8;
        sizes.num_kv_heads = 2;
        sizes.intermediate_size = 1376;
        sizes.max_positions = options.context;
    } else if (options.shape == "llama2-7b") {
        sizes.hidden_size = 4096;
        sizes.num_layers = 32;
        sizes.num_heads = 32;
        sizes.num_kv_heads = 32;
        sizes.intermediate_size = 11008;
        sizes.max_positions = std::max(4096, options.context);
    } else {
        throw std::invalid_argument("--shape: '" + options.shape +
                                    "', expected small or llama2-7b");
    }
    ModelConfig config = attngeo::empirical::llama_config(sizes);  // θ 10000, eps 1e-5
    config.bos_token_id = 1;
    config.eos_token_id = 2;
    return config;
}

void write_config(const std::filesystem::path& out, const ModelConfig& config,
                  const std::string& dtype) {
    std::ofstream(out / "config.json")
        << "{\"model_type\": \"llama\", \"vocab_size\": " << config.vocab_size
        << ", \"hidden_size\": " << config.hidden_size
        << ", \"num_hidden_layers\": " << config.num_layers
        << ", \"num_attention_heads\": " << config.num_heads
        << ", \"num_key_value_heads\": " << config.num_kv_heads
        << ", \"intermediate_size\": " << config.intermediate_size
        << ", \"max_position_embeddings\": " << config.max_positions
        << ", \"rms_norm_eps\": 1e-5, \"rope_theta\": 10000.0, \"torch_dtype\": \"" << dtype
        << "\", \"bos_token_id\": " << config.bos_token_id
        << ", \"eos_token_id\": " << config.eos_token_id << ", \"tie_word_embeddings\": false}\n";
}

// Round to nearest even, as torch's float → bfloat16 conversion (no NaN can occur here).
std::uint16_t to_bfloat16(float value) {
    std::uint32_t bits;
    std::memcpy(&bits, &value, 4);
    bits += 0x7fffu + ((bits >> 16) & 1u);
    return static_cast<std::uint16_t>(bits >> 16);
}

// Norm gains are ones; every other tensor is N(0, 1/fan_in), the embedding N(0, 1): each
// projection then keeps unit-RMS inputs at unit RMS, so attention logits q·k/√d_head stay O(1)
// and the residual stream grows like √layers even at 32 layers. Drawn one row at a time so a
// 7B tensor never sits in memory as float32.
void write_random_tensor(const attngeo::TensorSpec& spec, attngeo::DType dtype,
                         std::mt19937_64& rng, std::ostream& out) {
    const bool gain = spec.shape.size() == 1;
    const std::int64_t rows = gain ? 1 : spec.shape[0], columns = spec.shape.back();
    const double scale = spec.name == attngeo::empirical::llama_hf_name(TensorId::embed, 0)
                             ? 1.0
                             : 1.0 / std::sqrt(static_cast<double>(columns));
    std::normal_distribution<float> normal(0.0f, static_cast<float>(scale));
    std::vector<float> row(static_cast<std::size_t>(columns), 1.0f);
    std::vector<std::uint16_t> half(row.size());
    for (std::int64_t r = 0; r < rows; ++r) {
        if (!gain)
            for (auto& x : row)
                x = normal(rng);
        if (dtype == attngeo::DType::F32) {
            out.write(reinterpret_cast<const char*>(row.data()),
                      static_cast<std::streamsize>(row.size() * 4));
        } else {
            for (std::size_t i = 0; i < row.size(); ++i)
                half[i] = to_bfloat16(row[i]);
            out.write(reinterpret_cast<const char*>(half.data()),
                      static_cast<std::streamsize>(half.size() * 2));
        }
    }
}

// Drawn in the order the files were always drawn in (model-level, then per layer: the norms,
// q, k, v, o, gate, up, down), so the same seed gives the same weights in any dtype or sharding.
std::vector<attngeo::TensorSpec> tensor_specs(const ModelConfig& config, attngeo::DType dtype) {
    std::vector<attngeo::TensorSpec> specs;
    auto add = [&](TensorId id, int layer) {
        specs.push_back({attngeo::empirical::llama_hf_name(id, layer), dtype,
                         attngeo::empirical::llama_tensor_shape(id, config)});
    };
    for (const TensorId id : {TensorId::embed, TensorId::final_norm, TensorId::lm_head})
        add(id, 0);
    for (int l = 0; l < config.num_layers; ++l)
        for (const TensorId id :
             {TensorId::attn_norm, TensorId::mlp_norm, TensorId::q, TensorId::k, TensorId::v,
              TensorId::o, TensorId::gate, TensorId::up, TensorId::down})
            add(id, l);
    return specs;
}

void write_windows(const std::filesystem::path& path, const Options& options,
                   const ModelConfig& config, std::mt19937_64& rng) {
    std::ofstream ids(path);
    std::uniform_int_distribution<int> token(3, config.vocab_size - 1);
    for (int d = 0; d < options.windows; ++d) {
        ids << 1;
        for (int t = 1; t < options.context; ++t)
            ids << ' ' << token(rng);
        ids << '\n';
    }
}

Options parse_options(int argc, char** argv) {
    if (argc < 4) throw std::invalid_argument("expected OUT_DIR WINDOWS CONTEXT");
    Options options;
    options.out = argv[1];
    options.windows = std::stoi(argv[2]);
    options.context = std::stoi(argv[3]);
    for (int i = 4; i < argc; i += 2) {
        const std::string flag = argv[i];
        if (i + 1 >= argc) throw std::invalid_argument(flag + ": missing value");
        const std::string value = argv[i + 1];
        if (flag == "--shape") {
            options.shape = value;
        } else if (flag == "--dtype") {
            if (value != "float32" && value != "bfloat16")
                throw std::invalid_argument("--dtype: '" + value +
                                            "', expected float32 or bfloat16");
            options.dtype = value;
        } else if (flag == "--shard-bytes") {
            options.shard_bytes = std::stoull(value);
        } else {
            throw std::invalid_argument("unknown flag '" + flag + "'");
        }
    }
    return options;
}

}  // namespace

int main(int argc, char** argv) {
    Options options;
    try {
        options = parse_options(argc, argv);
    } catch (const std::exception& e) {
        std::fprintf(stderr,
                     "make_synthetic_llama: %s\nusage: make_synthetic_llama OUT_DIR WINDOWS "
                     "CONTEXT [--shape small|llama2-7b] [--dtype float32|bfloat16] "
                     "[--shard-bytes BYTES]\n",
                     e.what());
        return 2;
    }
    const ModelConfig config = shape_config(options);
    const attngeo::DType dtype =
        options.dtype == "bfloat16" ? attngeo::DType::BF16 : attngeo::DType::F32;
    std::filesystem::create_directories(options.out);
    write_config(options.out, config, options.dtype);
    const std::vector<attngeo::TensorSpec> specs = tensor_specs(config, dtype);
    std::mt19937_64 rng(1);
    auto write_tensor = [&](std::size_t i, std::ostream& out) {
        write_random_tensor(specs[i], dtype, rng, out);
    };
    // The hub's convention: one file for a small model, ≤ 5 GB shards for a large one.
    const std::uint64_t shard_bytes = options.shard_bytes > 0
                                          ? options.shard_bytes
                                          : (options.shape == "small" ? 0 : 5'000'000'000ull);
    if (shard_bytes == 0) {
        attngeo::write_safetensors_streamed((options.out / "model.safetensors").string(), specs,
                                            write_tensor, {{"format", "pt"}});
    } else {
        attngeo::write_safetensors_sharded(options.out.string(), specs, shard_bytes, write_tensor,
                                           {{"format", "pt"}});
    }
    write_windows(options.out / "windows.txt", options, config, rng);
    return 0;
}
