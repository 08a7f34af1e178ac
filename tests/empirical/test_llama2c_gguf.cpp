// Tests for the llama2.c and GGUF readers: the real stories260K files (.bin, .gguf, tok512.bin)
// against each other, against the HF conversion's safetensors and against run.c's outputs,
// plus synthetic GGUF files for F16/BF16/Q8_0 and every malformed-input path.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <utility>

#include "common/errors.hpp"
#include "empirical/model/architecture.hpp"
#include "empirical/model/gguf.hpp"
#include "empirical/model/llama2c.hpp"
#include "empirical/tokenizers/llama2c_tokenizer.hpp"
#include "empirical/model/runc_forward.hpp"
#include "tests/support/shared_data.hpp"
#include "tests/support/test_files.hpp"

namespace fs = std::filesystem;
using namespace attngeo;
using namespace attngeo::empirical;

namespace {

using attngeo::test_support::expect_input_error;
using attngeo::test_support::shared_folder;

// ------------------------------------------------------------------------------------------
// Helpers

// A per-process folder for the malformed copies (several MB), removed at exit.
const fs::path& scratch() {
    struct Folder {
        fs::path path;
        Folder()
            : path(fs::temp_directory_path() /
                   ("attngeo_test_llama2c_gguf_" + std::to_string(::getpid()))) {
            fs::create_directories(path);
        }
        ~Folder() {
            std::error_code ignored;
            fs::remove_all(path, ignored);
        }
    };
    static const Folder folder;
    return folder.path;
}

std::string slurp(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

std::string write_scratch(const std::string& name, const std::string& bytes) {
    const fs::path path = scratch() / name;
    std::ofstream(path, std::ios::binary)
        .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    return path.string();
}

std::vector<float> floats_of(const HostTensor& t) {
    EXPECT_EQ(t.dtype, DType::F32) << t.name;
    EXPECT_EQ(t.bytes, static_cast<std::size_t>(t.numel()) * 4) << t.name;
    std::vector<float> out(static_cast<std::size_t>(t.numel()));
    std::memcpy(out.data(), t.data, t.bytes);
    return out;
}

float max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
    float m = 0;
    for (std::size_t i = 0; i < a.size() && i < b.size(); ++i)
        m = std::max(m, std::fabs(a[i] - b[i]));
    return m;
}

template <typename T>
std::string pod(T value) {
    std::string s(sizeof(T), '\0');
    std::memcpy(&s[0], &value, sizeof(T));
    return s;
}

template <typename T>
T pod_at(const std::string& bytes, std::size_t offset) {
    T v;
    std::memcpy(&v, bytes.data() + offset, sizeof(T));
    return v;
}

// Minimal independent safetensors reading (F32 only) for the HF conversion of stories260K.
struct MiniSafetensors {
    nlohmann::json header;
    std::string bytes;
    std::size_t data_start = 0;
    explicit MiniSafetensors(const fs::path& path) : bytes(slurp(path)) {
        const auto n = pod_at<std::uint64_t>(bytes, 0);
        header = nlohmann::json::parse(bytes.substr(8, n));
        data_start = 8 + n;
    }
    std::vector<std::string> names() const {
        std::vector<std::string> out;
        for (auto it = header.begin(); it != header.end(); ++it)
            if (it.key() != "__metadata__") out.push_back(it.key());
        return out;
    }
    std::vector<std::int64_t> shape(const std::string& name) const {
        return header.at(name).at("shape").get<std::vector<std::int64_t>>();
    }
    std::vector<float> floats(const std::string& name) const {
        const auto& entry = header.at(name);
        EXPECT_EQ(entry.at("dtype").get<std::string>(), "F32");
        const auto begin = entry.at("data_offsets")[0].get<std::size_t>();
        const auto end = entry.at("data_offsets")[1].get<std::size_t>();
        std::vector<float> out((end - begin) / 4);
        std::memcpy(out.data(), bytes.data() + data_start + begin, end - begin);
        return out;
    }
};

// "[403][407]..." as written by the golden run.c harness.
std::vector<int> parse_bracketed_ids(const std::string& text) {
    std::vector<int> ids;
    std::size_t pos = 0;
    while ((pos = text.find('[', pos)) != std::string::npos) {
        const std::size_t end = text.find(']', pos);
        ids.push_back(std::stoi(text.substr(pos + 1, end - pos - 1)));
        pos = end;
    }
    return ids;
}

// What run.c prints for generated tokens: each piece decoded against its predecessor (BOS
// first) and filtered by safe_printf, then a final newline.
std::string runc_stdout(const Llama2cTokenizer& tok, const std::vector<int>& ids) {
    std::string out;
    int previous = 1;
    for (int id : ids) {
        out += Llama2cTokenizer::printable(tok.decode(previous, id));
        previous = id;
    }
    return out + "\n";
}

// Independent IEEE half decoder (normal, subnormal), for the synthetic GGUF checks.
float reference_half(std::uint16_t h) {
    const int sign = h >> 15, exponent = (h >> 10) & 31, mantissa = h & 1023;
    const double magnitude =
        exponent == 0 ? std::ldexp(mantissa, -24) : std::ldexp(mantissa + 1024, exponent - 25);
    return static_cast<float>(sign ? -magnitude : magnitude);
}

// ------------------------------------------------------------------------------------------
// Synthetic GGUF files

struct GgufBuilder {
    struct Tensor {
        std::string name;
        std::vector<std::uint64_t> ne;
        std::uint32_t type = 0;
        std::string data;
        std::optional<std::uint64_t> offset_override;
    };
    std::string magic = "GGUF";
    std::uint32_t version = 3;
    std::uint64_t alignment = 32;
    std::string metadata;
    std::uint64_t n_kv = 0;
    std::vector<Tensor> tensors;

    static std::string str(const std::string& s) { return pod<std::uint64_t>(s.size()) + s; }
    void kv(const std::string& key, std::uint32_t type, const std::string& payload) {
        metadata += str(key) + pod(type) + payload;
        ++n_kv;
    }
    Tensor& tensor(const std::string& name) {
        for (auto& t : tensors)
            if (t.name == name) return t;
        throw std::logic_error("no tensor " + name);
    }
    std::string build() const {
        std::string out =
            magic + pod(version) + pod<std::uint64_t>(tensors.size()) + pod(n_kv) + metadata;
        std::string data;
        std::vector<std::uint64_t> offsets;
        for (const auto& t : tensors) {
            data.resize((data.size() + alignment - 1) / alignment * alignment, '\0');
            offsets.push_back(data.size());
            data += t.data;
        }
        for (std::size_t i = 0; i < tensors.size(); ++i) {
            const auto& t = tensors[i];
            out += str(t.name) + pod<std::uint32_t>(static_cast<std::uint32_t>(t.ne.size()));
            for (auto n : t.ne)
                out += pod(n);
            out += pod(t.type) + pod(t.offset_override.value_or(offsets[i]));
        }
        out.resize((out.size() + alignment - 1) / alignment * alignment, '\0');
        return out + data;
    }
};

constexpr std::uint32_t kF32 = 0, kF16 = 1, kQ8_0 = 8, kBF16 = 30;

// Deterministic tensor payloads with their independently decoded float values.
struct Payload {
    std::string bytes;
    std::vector<float> values;
};

Payload make_payload(std::uint32_t type, std::size_t numel, std::mt19937& rng) {
    Payload p;
    std::uniform_int_distribution<int> small(-120, 120);
    for (std::size_t i = 0; i < numel; ++i) {
        if (type == kF32) {
            const float v = static_cast<float>(small(rng)) / 37.0f;
            p.bytes += pod(v);
            p.values.push_back(v);
        } else if (type == kF16) {
            // Any finite half, including subnormals (exponent 0) and negative zero.
            std::uint16_t bits;
            do {
                bits = static_cast<std::uint16_t>(rng());
            } while (((bits >> 10) & 31) == 31);
            if (i == 0) bits = 0x0001;  // smallest subnormal
            if (i == 1) bits = 0x8000;  // −0
            p.bytes += pod(bits);
            p.values.push_back(reference_half(bits));
        } else if (type == kBF16) {
            const float v = static_cast<float>(small(rng)) / 8.0f;  // exact in bf16
            std::uint32_t bits;
            std::memcpy(&bits, &v, 4);
            p.bytes += pod(static_cast<std::uint16_t>(bits >> 16));
            p.values.push_back(v);
        }
    }
    if (type == kQ8_0) {
        for (std::size_t block = 0; block < numel / 32; ++block) {
            const auto scale_bits = static_cast<std::uint16_t>(0x2000 + rng() % 0x1000);
            p.bytes += pod(scale_bits);
            for (int j = 0; j < 32; ++j) {
                const auto q = static_cast<std::int8_t>(j == 0 ? -128 : small(rng));
                p.bytes += pod(q);
                p.values.push_back(reference_half(scale_bits) * static_cast<float>(q));
            }
        }
    }
    return p;
}

// A one-layer LLaMA (d 32, 2 heads of 16, 1 kv head, ffn 64, vocab 8) using every supported
// ggml type, every metadata value type, alignment 64 and no output.weight (tied); BOS 1 and EOS 2
// unless `with_bos_eos` is false, which leaves their keys out.
struct TinyGguf {
    GgufBuilder builder;
    std::map<std::string, std::vector<float>> values;  // GGUF name -> decoded, GGUF row order
};

TinyGguf tiny_llama_gguf(bool with_bos_eos = true) {
    TinyGguf tiny;
    GgufBuilder& b = tiny.builder;
    b.alignment = 64;
    b.kv("general.architecture", 8, GgufBuilder::str("llama"));
    b.kv("general.alignment", 4, pod<std::uint32_t>(64));
    b.kv("llama.embedding_length", 10, pod<std::uint64_t>(32));
    b.kv("llama.block_count", 4, pod<std::uint32_t>(1));
    b.kv("llama.feed_forward_length", 5, pod<std::int32_t>(64));
    b.kv("llama.attention.head_count", 2, pod<std::uint16_t>(2));
    b.kv("llama.attention.head_count_kv", 0, pod<std::uint8_t>(1));
    b.kv("llama.attention.layer_norm_rms_epsilon", 6, pod<float>(1e-6f));
    b.kv("llama.rope.freq_base", 6, pod<float>(500000.0f));
    b.kv("llama.context_length", 11, pod<std::int64_t>(128));
    b.kv("test.i8", 1, pod<std::int8_t>(-5));
    b.kv("test.i16", 3, pod<std::int16_t>(-300));
    b.kv("test.bool", 7, pod<std::uint8_t>(1));
    b.kv("test.f64", 12, pod<double>(0.125));
    b.kv("test.u16_array", 9,
         pod<std::uint32_t>(2) + pod<std::uint64_t>(3) + pod<std::uint16_t>(7) +
             pod<std::uint16_t>(8) + pod<std::uint16_t>(65535));
    b.kv("test.nested", 9,
         pod<std::uint32_t>(9) + pod<std::uint64_t>(2) +  // array of arrays
             pod<std::uint32_t>(8) + pod<std::uint64_t>(1) + GgufBuilder::str("x") +
             pod<std::uint32_t>(8) + pod<std::uint64_t>(0));
    std::string tokens = pod<std::uint32_t>(8) + pod<std::uint64_t>(8);
    std::string scores = pod<std::uint32_t>(6) + pod<std::uint64_t>(8);
    std::string types = pod<std::uint32_t>(5) + pod<std::uint64_t>(8);
    for (int i = 0; i < 8; ++i) {
        tokens += GgufBuilder::str(i == 3 ? "\xe2\x96\x81hi" : "t" + std::to_string(i));
        scores += pod<float>(-static_cast<float>(i));
        types += pod<std::int32_t>(1);
    }
    b.kv("tokenizer.ggml.tokens", 9, tokens);
    b.kv("tokenizer.ggml.scores", 9, scores);
    b.kv("tokenizer.ggml.token_type", 9, types);
    if (with_bos_eos) {
        b.kv("tokenizer.ggml.bos_token_id", 4, pod<std::uint32_t>(1));
        b.kv("tokenizer.ggml.eos_token_id", 4, pod<std::uint32_t>(2));
    }

    std::mt19937 rng(20240611);
    const std::pair<const char*, std::pair<std::vector<std::uint64_t>, std::uint32_t>> specs[] = {
        {"token_embd.weight", {{32, 8}, kF16}},
        {"output_norm.weight", {{32}, kF32}},
        {"blk.0.attn_norm.weight", {{32}, kBF16}},
        {"blk.0.attn_q.weight", {{32, 32}, kQ8_0}},
        {"blk.0.attn_k.weight", {{32, 16}, kF16}},
        {"blk.0.attn_v.weight", {{32, 16}, kF32}},
        {"blk.0.attn_output.weight", {{32, 32}, kBF16}},
        {"blk.0.ffn_norm.weight", {{32}, kF32}},
        {"blk.0.ffn_gate.weight", {{32, 64}, kQ8_0}},
        {"blk.0.ffn_down.weight", {{64, 32}, kQ8_0}},
        {"blk.0.ffn_up.weight", {{32, 64}, kF32}},
    };
    for (const auto& [name, spec] : specs) {
        std::size_t numel = 1;
        for (auto n : spec.first)
            numel *= n;
        Payload p = make_payload(spec.second, numel, rng);
        b.tensors.push_back({name, spec.first, spec.second, p.bytes, std::nullopt});
        tiny.values[name] = std::move(p.values);
    }
    return tiny;
}

// Rows of a [heads·head_dim, cols] matrix in interleaved-RoPE order, re-ordered by the
// rotate_half rule written out directly: HF row h·hd + j·hd/2 + i = original row h·hd + 2i + j.
std::vector<float> reference_rotate_half_rows(const std::vector<float>& w, int heads, int hd,
                                              int cols) {
    std::vector<float> out(w.size());
    for (int h = 0; h < heads; ++h)
        for (int i = 0; i < hd / 2; ++i)
            for (int j = 0; j < 2; ++j)
                for (int c = 0; c < cols; ++c)
                    out[static_cast<std::size_t>((h * hd + j * hd / 2 + i) * cols + c)] =
                        w[static_cast<std::size_t>((h * hd + 2 * i + j) * cols + c)];
    return out;
}

const fs::path stories_dir() {
    return shared_folder() / "models" / "stories260K";
}

}  // namespace

// ------------------------------------------------------------------------------------------
// llama2.c checkpoint

TEST(Llama2c, HeaderAndConfigOfStories260K) {
    const fs::path bin = stories_dir() / "stories260K.bin";
    REQUIRE_SHARED_FILE(bin);
    const Llama2cCheckpoint ckpt(bin.string());
    const Llama2cHeader& h = ckpt.header();
    EXPECT_EQ(h.dim, 64);
    EXPECT_EQ(h.hidden_dim, 172);
    EXPECT_EQ(h.n_layers, 5);
    EXPECT_EQ(h.n_heads, 8);
    EXPECT_EQ(h.n_kv_heads, 4);
    EXPECT_EQ(h.vocab_size, 512);
    EXPECT_EQ(h.seq_len, 512);
    EXPECT_TRUE(h.shared_classifier);

    const ModelConfig c = ckpt.config();
    EXPECT_EQ(c.family, "llama");
    EXPECT_EQ(c.hidden_size, 64);
    EXPECT_EQ(c.intermediate_size, 172);
    EXPECT_EQ(c.num_layers, 5);
    EXPECT_EQ(c.num_heads, 8);
    EXPECT_EQ(c.num_kv_heads, 4);
    EXPECT_EQ(c.head_dim, 8);
    EXPECT_EQ(c.vocab_size, 512);
    EXPECT_EQ(c.max_positions, 512);
    EXPECT_EQ(c.norm_eps, 1e-5);
    EXPECT_EQ(c.rope_theta, 10000);
    EXPECT_TRUE(c.tie_word_embeddings);
    EXPECT_EQ(c.hidden_act, "silu");
    EXPECT_EQ(c.bos_token_id, 1);
    EXPECT_EQ(c.eos_token_id, 2);

    EXPECT_EQ(ckpt.names().size(), 2u + 5u * 9u);
    EXPECT_FALSE(ckpt.contains("lm_head.weight"));
    expect_input_error([&] { ckpt.get("lm_head.weight"); },
                       {bin.string(), "lm_head.weight", "shared with the embedding"});
    EXPECT_EQ(ckpt.get("model.embed_tokens.weight").shape, (std::vector<std::int64_t>{512, 64}));
    EXPECT_EQ(ckpt.get("model.layers.4.self_attn.k_proj.weight").shape,
              (std::vector<std::int64_t>{32, 64}));
    EXPECT_EQ(ckpt.get("model.layers.0.mlp.down_proj.weight").shape,
              (std::vector<std::int64_t>{64, 172}));
    EXPECT_EQ(ckpt.get("model.norm.weight").file, bin.string());
}

// The key check of the q/k permutation: the HF-format conversion of the same weights (made by
// transformers' conversion rules) must equal our tensors, and the raw file rows must differ.
TEST(Llama2c, MatchesHuggingFaceConversionIncludingQkPermutation) {
    const fs::path bin = stories_dir() / "stories260K.bin";
    const fs::path hf = shared_folder() / "golden" / "stories260k-hf" / "model.safetensors";
    REQUIRE_SHARED_FILE(bin);
    REQUIRE_SHARED_FILE(hf);
    const Llama2cCheckpoint ckpt(bin.string());
    const MiniSafetensors reference(hf);
    ASSERT_EQ(reference.names().size(), ckpt.names().size());
    float largest = 0;
    for (const auto& name : reference.names()) {
        ASSERT_TRUE(ckpt.contains(name)) << name;
        const HostTensor t = ckpt.get(name);
        EXPECT_EQ(t.shape, reference.shape(name)) << name;
        const std::vector<float> ours = floats_of(t), theirs = reference.floats(name);
        ASSERT_EQ(ours.size(), theirs.size()) << name;
        largest = std::max(largest, max_abs_diff(ours, theirs));
        EXPECT_EQ(0, std::memcmp(ours.data(), theirs.data(), ours.size() * 4)) << name;
    }
    std::cout << "[          ] largest |llama2.c − HF safetensors| = " << largest << "\n";

    // The raw layer-0 wq rows straight from the file (after embedding and rms_att) are the
    // interleaved layout; an identity "permutation" would not match HF.
    const std::string bytes = slurp(bin);
    const std::size_t wq0 = 28 + (512 * 64 + 5 * 64) * 4;
    std::vector<float> raw(64 * 64);
    std::memcpy(raw.data(), bytes.data() + wq0, raw.size() * 4);
    const auto hf_q = reference.floats("model.layers.0.self_attn.q_proj.weight");
    EXPECT_NE(0, std::memcmp(raw.data(), hf_q.data(), raw.size() * 4));
    EXPECT_EQ(reference_rotate_half_rows(raw, 8, 8, 64), hf_q);
    EXPECT_EQ(rope_interleaved_to_half(raw, 8, 8, 64), hf_q);
}

TEST(Llama2c, RopePermutationPlainCases) {
    // One head of 4 rows: interleaved pairs (0,1), (2,3) become halves (0,2), (1,3).
    const std::vector<float> w = {0, 0, 1, 1, 2, 2, 3, 3};  // [4, 2]
    EXPECT_EQ(rope_interleaved_to_half(w, 1, 4, 2), (std::vector<float>{0, 0, 2, 2, 1, 1, 3, 3}));
    EXPECT_EQ(rope_interleaved_to_half(w, 2, 2, 2), w);  // head_dim 2: identity
    EXPECT_THROW(rope_interleaved_to_half(w, 1, 3, 2), std::invalid_argument);
    EXPECT_THROW(rope_interleaved_to_half(w, 1, 4, 3), std::invalid_argument);
}

TEST(Llama2c, UnsharedClassifierAndRejectsMalformedFiles) {
    const fs::path bin = stories_dir() / "stories260K.bin";
    REQUIRE_SHARED_FILE(bin);
    const std::string bytes = slurp(bin);
    auto with_header = [&](int index, std::int32_t value, const std::string& tail) {
        std::string b = bytes;
        std::memcpy(&b[static_cast<std::size_t>(index) * 4], &value, 4);
        return b + tail;
    };

    {  // negative vocab_size: a separate classifier follows freq_cis
        std::string wcls(512 * 64 * 4, '\0');
        for (std::size_t i = 0; i < 512 * 64; ++i) {
            const float v = static_cast<float>(i);
            std::memcpy(&wcls[i * 4], &v, 4);
        }
        const Llama2cCheckpoint c(write_scratch("unshared.bin", with_header(5, -512, wcls)));
        EXPECT_FALSE(c.header().shared_classifier);
        EXPECT_EQ(c.header().vocab_size, 512);
        EXPECT_FALSE(c.config().tie_word_embeddings);
        const auto head = floats_of(c.get("lm_head.weight"));
        EXPECT_EQ(head[0], 0.0f);
        EXPECT_EQ(head[512 * 64 - 1], 512.0f * 64 - 1);
        EXPECT_EQ(c.get("lm_head.weight").shape, (std::vector<std::int64_t>{512, 64}));
    }
    const std::string truncated = write_scratch("truncated.bin", bytes.substr(0, bytes.size() - 4));
    expect_input_error([&] { Llama2cCheckpoint c(truncated); },
                       {truncated, "1056536 bytes", "implies 1056540", "truncated"});
    const std::string tiny = write_scratch("tiny.bin", bytes.substr(0, 20));
    expect_input_error([&] { Llama2cCheckpoint c(tiny); }, {tiny, "28-byte header"});
    const std::string longer = write_scratch("longer.bin", bytes + "xxxx");
    expect_input_error([&] { Llama2cCheckpoint c(longer); }, {longer, "implies 1056540"});
    const std::string kv = write_scratch("kv.bin", with_header(4, 3, ""));
    expect_input_error([&] { Llama2cCheckpoint c(kv); }, {kv, "n_heads divisible by n_kv_heads"});
    const std::string heads = write_scratch("heads.bin", with_header(3, 6, ""));
    expect_input_error([&] { Llama2cCheckpoint c(heads); }, {heads, "dim divisible by n_heads"});
    const std::string odd = write_scratch("odd.bin", with_header(3, 64, ""));
    // dim 64 / 64 heads = head size 1 (64 % 4 kv heads is fine): odd head sizes cannot rotate.
    expect_input_error([&] { Llama2cCheckpoint c(odd); }, {odd, "even head size"});
    const std::string negative = write_scratch("negative.bin", with_header(2, -5, ""));
    expect_input_error([&] { Llama2cCheckpoint c(negative); }, {negative, "positive sizes"});
    const std::string zero_vocab = write_scratch("zero_vocab.bin", with_header(5, 0, ""));
    expect_input_error([&] { Llama2cCheckpoint c(zero_vocab); }, {zero_vocab, "vocab_size 0"});
    const std::string huge = write_scratch("huge.bin", with_header(0, 0x7ffffff0, ""));
    expect_input_error([&] { Llama2cCheckpoint c(huge); }, {huge, "over 2^64 bytes"});
    const std::string versioned = write_scratch("v1.bin", with_header(0, 0x616b3432, ""));
    expect_input_error([&] { Llama2cCheckpoint c(versioned); }, {versioned, "export version"});
    const std::string missing = (scratch() / "missing.bin").string();
    expect_input_error([&] { Llama2cCheckpoint c(missing); }, {missing, "cannot open"});
    expect_input_error([&] { Llama2cCheckpoint c(scratch().string()); }, {"cannot open"});
}

// ------------------------------------------------------------------------------------------
// llama2.c tokenizer

TEST(Llama2cTokenizer, DecodesRunCOutputsExactly) {
    const fs::path tok_path = stories_dir() / "tok512.bin";
    const fs::path golden = shared_folder() / "golden" / "stories260k-llama2c";
    REQUIRE_SHARED_FILE(tok_path);
    REQUIRE_SHARED_FILE(golden / "runc_greedy_n40.ids.txt");
    const Llama2cTokenizer tok(tok_path.string(), 512);
    EXPECT_EQ(tok.vocab_size(), 512);
    EXPECT_EQ(tok.max_token_length(), 7);
    EXPECT_EQ(tok.piece(1), "\n<s>\n");
    for (const char* stem :
         {"runc_greedy_n40", "runc_greedy_n256", "runc_sample_t1_p0.9_s133742_n40"}) {
        const auto ids = parse_bracketed_ids(slurp(golden / (std::string(stem) + ".ids.txt")));
        ASSERT_FALSE(ids.empty()) << stem;
        EXPECT_EQ(runc_stdout(tok, ids), slurp(golden / (std::string(stem) + ".txt"))) << stem;
    }
    EXPECT_EQ(tok.decode(1, 403), "Once");  // leading space stripped after BOS
    EXPECT_EQ(tok.decode(5, 403), " Once");
    EXPECT_EQ(tok.decode(0, 3 + 'A'), "A");  // <0x41>
    EXPECT_EQ(tok.decode(0, 3), "");         // <0x00> is an empty C string in run.c
    EXPECT_EQ(Llama2cTokenizer::printable("\x01"), "");
    EXPECT_EQ(Llama2cTokenizer::printable("\n"), "\n");
    expect_input_error([&] { tok.decode(1, 512); }, {tok_path.string(), "512"});
    expect_input_error([&] { tok.decode(1, -1); }, {tok_path.string(), "-1"});
}

TEST(Llama2cTokenizer, EncodesLikeRunCAndRoundTrips) {
    const fs::path tok_path = stories_dir() / "tok512.bin";
    const fs::path ref =
        shared_folder() / "golden" / "llama2c-stories260K" / "stories260K_ref_once.tokens.i32";
    REQUIRE_SHARED_FILE(tok_path);
    REQUIRE_SHARED_FILE(ref);
    const Llama2cTokenizer tok(tok_path.string(), 512);
    // run.c's own tokens for BOS + "Once upon a time" (5 prompt tokens).
    const std::string ref_bytes = slurp(ref);
    std::vector<int> expected(5);
    std::memcpy(expected.data(), ref_bytes.data(), 5 * 4);
    EXPECT_EQ(tok.encode("Once upon a time", true, false), expected);
    expected.push_back(2);
    EXPECT_EQ(tok.encode("Once upon a time", true, true), expected);
    EXPECT_EQ(tok.encode("", true, false), (std::vector<int>{1}));
    EXPECT_EQ(tok.encode("", false, true), (std::vector<int>{2}));

    for (const std::string& text :
         {std::string("Once upon a time, there was a little girl named Lily."),
          std::string("Lily's mom said, \"Don't worry!\"\nThe end."), std::string("  two spaces"),
          std::string("caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x98\x80 ~[]\t"),
          std::string("x")}) {
        const std::vector<int> ids = tok.encode(text, true, false);
        ASSERT_EQ(ids.front(), 1);
        std::string decoded;
        for (std::size_t i = 1; i < ids.size(); ++i)
            decoded += tok.decode(ids[i - 1], ids[i]);
        EXPECT_EQ(decoded, text);
        for (int id : ids)
            EXPECT_TRUE(id >= 0 && id < 512);
    }
    // Characters outside the vocabulary fall back to byte tokens (byte + 3).
    const auto emoji = tok.encode("\xf0\x9f\x98\x80", false, false);
    EXPECT_EQ(emoji, (std::vector<int>{410, 0xf0 + 3, 0x9f + 3, 0x98 + 3, 0x80 + 3}));
}

TEST(Llama2cTokenizer, RejectsMalformedFiles) {
    const fs::path tok_path = stories_dir() / "tok512.bin";
    REQUIRE_SHARED_FILE(tok_path);
    const std::string bytes = slurp(tok_path);
    const std::string path = tok_path.string();
    expect_input_error([&] { Llama2cTokenizer t(path, 513); }, {path, "truncated", "513"});
    expect_input_error([&] { Llama2cTokenizer t(path, 511); }, {path, "after token 510"});
    expect_input_error([&] { Llama2cTokenizer t(path, 0); }, {path, "vocab_size"});
    const std::string cut = write_scratch("tok_cut.bin", bytes.substr(0, 100));
    expect_input_error([&] { Llama2cTokenizer t(cut, 512); }, {cut, "truncated"});
    std::string negative = bytes;
    const std::int32_t minus_one = -1;
    std::memcpy(&negative[8], &minus_one, 4);  // length of token 0
    const std::string neg = write_scratch("tok_negative.bin", negative);
    expect_input_error([&] { Llama2cTokenizer t(neg, 512); }, {neg, "token 0", "length -1"});
    expect_input_error([&] { Llama2cTokenizer t((scratch() / "none.bin").string(), 512); },
                       {"none.bin", "cannot open"});
}

// ------------------------------------------------------------------------------------------
// GGUF: the real file against the llama2.c one

TEST(Gguf, Stories260KEqualsLlama2cCheckpointExactly) {
    const fs::path bin = stories_dir() / "stories260K.bin";
    const fs::path gguf_path = stories_dir() / "stories260K.gguf";
    REQUIRE_SHARED_FILE(bin);
    REQUIRE_SHARED_FILE(gguf_path);
    const Llama2cCheckpoint ckpt(bin.string());
    const GgufCheckpoint gguf(gguf_path.string());
    EXPECT_EQ(gguf.version(), 3u);
    EXPECT_EQ(gguf.alignment(), 32u);

    float largest = 0;
    for (const auto& name : ckpt.names()) {
        ASSERT_TRUE(gguf.contains(name)) << name;
        const HostTensor a = ckpt.get(name), b = gguf.get(name);
        EXPECT_EQ(a.shape, b.shape) << name;
        const auto fa = floats_of(a), fb = floats_of(b);
        ASSERT_EQ(fa.size(), fb.size()) << name;
        largest = std::max(largest, max_abs_diff(fa, fb));
        EXPECT_EQ(0, std::memcmp(fa.data(), fb.data(), fa.size() * 4)) << name;
        EXPECT_EQ(b.file, gguf_path.string());
    }
    std::cout << "[          ] largest |llama2.c − GGUF| = " << largest << "\n";
    // This GGUF stores the shared classifier again as output.weight.
    EXPECT_EQ(gguf.names().size(), ckpt.names().size() + 1);
    EXPECT_EQ(floats_of(gguf.get("lm_head.weight")),
              floats_of(ckpt.get("model.embed_tokens.weight")));
    EXPECT_EQ(gguf.gguf_name("model.layers.3.self_attn.q_proj.weight"), "blk.3.attn_q.weight");
    EXPECT_EQ(gguf.gguf_name("lm_head.weight"), "output.weight");

    const ModelConfig c = gguf.config(), l = ckpt.config();
    EXPECT_EQ(c.family, l.family);
    EXPECT_EQ(c.hidden_size, l.hidden_size);
    EXPECT_EQ(c.intermediate_size, l.intermediate_size);
    EXPECT_EQ(c.num_layers, l.num_layers);
    EXPECT_EQ(c.num_heads, l.num_heads);
    EXPECT_EQ(c.num_kv_heads, l.num_kv_heads);
    EXPECT_EQ(c.head_dim, l.head_dim);
    EXPECT_EQ(c.vocab_size, 512);
    EXPECT_EQ(c.max_positions, 2048);  // the file's context_length key
    EXPECT_EQ(c.norm_eps, static_cast<double>(1e-5f));
    EXPECT_EQ(c.rope_theta, 10000);
    EXPECT_FALSE(c.tie_word_embeddings);  // output.weight present
    EXPECT_EQ(c.bos_token_id, 1);
    EXPECT_EQ(c.eos_token_id, 2);
    EXPECT_EQ(gguf.metadata_string("general.name", ""), "llama");
    EXPECT_EQ(gguf.metadata_integer("llama.rope.dimension_count"), 8);
}

TEST(Gguf, VocabularyMatchesLlama2cTokenizer) {
    const fs::path gguf_path = stories_dir() / "stories260K.gguf";
    const fs::path tok_path = stories_dir() / "tok512.bin";
    REQUIRE_SHARED_FILE(gguf_path);
    REQUIRE_SHARED_FILE(tok_path);
    const GgufCheckpoint gguf(gguf_path.string());
    const Llama2cTokenizer tok(tok_path.string(), 512);
    ASSERT_EQ(gguf.vocabulary().size(), 512u);
    ASSERT_EQ(gguf.scores().size(), 512u);
    ASSERT_EQ(gguf.token_types().size(), 512u);
    EXPECT_EQ(gguf.vocabulary()[1], "<s>");
    EXPECT_EQ(gguf.token_types()[3], 6);       // byte token
    const std::string space = "\xe2\x96\x81";  // SentencePiece's "▁"
    for (int id = 3; id < 512; ++id) {
        std::string piece = gguf.vocabulary()[static_cast<std::size_t>(id)];
        for (std::size_t p; (p = piece.find(space)) != std::string::npos;)
            piece.replace(p, space.size(), " ");
        EXPECT_EQ(piece, tok.piece(id)) << id;
        EXPECT_EQ(gguf.scores()[static_cast<std::size_t>(id)], tok.score(id)) << id;
    }
}

// A decoder built from the GGUF's own vocabulary reproduces run.c's text as well.
TEST(Gguf, VocabularyBuildsARunCDecoder) {
    const fs::path gguf_path = stories_dir() / "stories260K.gguf";
    const fs::path golden = shared_folder() / "golden" / "stories260k-llama2c";
    REQUIRE_SHARED_FILE(gguf_path);
    REQUIRE_SHARED_FILE(golden / "runc_greedy_n256.ids.txt");
    const GgufCheckpoint gguf(gguf_path.string());
    std::vector<std::string> pieces = gguf.vocabulary();
    const std::string space = "\xe2\x96\x81";
    for (auto& piece : pieces)
        for (std::size_t p; (p = piece.find(space)) != std::string::npos;)
            piece.replace(p, space.size(), " ");
    const Llama2cTokenizer tok(pieces, gguf.scores(), gguf_path.string());
    EXPECT_EQ(tok.vocab_size(), 512);
    EXPECT_EQ(tok.max_token_length(), 7);
    const auto ids = parse_bracketed_ids(slurp(golden / "runc_greedy_n256.ids.txt"));
    EXPECT_EQ(runc_stdout(tok, ids), slurp(golden / "runc_greedy_n256.txt"));
    EXPECT_EQ(tok.encode("Once upon a time", true, false),
              (std::vector<int>{1, 403, 407, 261, 378}));
    expect_input_error(
        [] {
            Llama2cTokenizer t({"a", "b"}, {0.0f}, "vocab.src");
        },
        {"vocab.src", "2 pieces, 1 scores"});
}

TEST(Gguf, RejectsMalformedStories260K) {
    const fs::path gguf_path = stories_dir() / "stories260K.gguf";
    REQUIRE_SHARED_FILE(gguf_path);
    const std::string bytes = slurp(gguf_path);
    std::string bad_magic = bytes;
    bad_magic[0] = 'X';
    const std::string magic = write_scratch("magic.gguf", bad_magic);
    expect_input_error([&] { GgufCheckpoint g(magic); }, {magic, "magic"});
    // Cut inside the magic, header, token array, tensor infos, and data section.
    for (std::size_t cut : {std::size_t{2}, std::size_t{20}, std::size_t{100}, std::size_t{14000},
                            std::size_t{14176}, bytes.size() - 1}) {
        const std::string path =
            write_scratch("cut" + std::to_string(cut) + ".gguf", bytes.substr(0, cut));
        expect_input_error([&] { GgufCheckpoint g(path); }, {path});
    }
    const std::string tail = write_scratch("tail.gguf", bytes.substr(0, bytes.size() - 1));
    expect_input_error([&] { GgufCheckpoint g(tail); },
                       {tail, "blk.4.ffn_norm.weight", "beyond the end"});
    const std::string infos = write_scratch("infos.gguf", bytes.substr(0, 14000));
    expect_input_error([&] { GgufCheckpoint g(infos); }, {infos, "truncated"});
    std::string v1 = bytes;
    v1[4] = 1;
    const std::string version = write_scratch("v1.gguf", v1);
    expect_input_error([&] { GgufCheckpoint g(version); }, {version, "version 1"});
    std::string big = bytes;
    const std::uint32_t big_endian_3 = 0x03000000u;
    std::memcpy(&big[4], &big_endian_3, 4);
    const std::string be = write_scratch("be.gguf", big);
    expect_input_error([&] { GgufCheckpoint g(be); }, {be, "big-endian"});
    const std::string empty = write_scratch("empty.gguf", "");
    expect_input_error([&] { GgufCheckpoint g(empty); }, {empty, "empty"});
    expect_input_error([&] { GgufCheckpoint g((scratch() / "none.gguf").string()); },
                       {"none.gguf", "cannot open"});
}

// ------------------------------------------------------------------------------------------
// GGUF: synthetic files for the conversions and the validation

TEST(Gguf, SyntheticTypesConvertAndPermute) {
    TinyGguf tiny = tiny_llama_gguf();
    const std::string path = write_scratch("tiny.gguf", tiny.builder.build());
    const GgufCheckpoint g(path);
    EXPECT_EQ(g.alignment(), 64u);
    const ModelConfig c = g.config();
    EXPECT_EQ(c.hidden_size, 32);
    EXPECT_EQ(c.num_layers, 1);
    EXPECT_EQ(c.intermediate_size, 64);
    EXPECT_EQ(c.num_heads, 2);
    EXPECT_EQ(c.num_kv_heads, 1);
    EXPECT_EQ(c.head_dim, 16);
    EXPECT_EQ(c.vocab_size, 8);
    EXPECT_EQ(c.max_positions, 128);
    EXPECT_EQ(c.norm_eps, static_cast<double>(1e-6f));
    EXPECT_EQ(c.rope_theta, 500000);
    EXPECT_TRUE(c.tie_word_embeddings);
    EXPECT_FALSE(g.contains("lm_head.weight"));
    expect_input_error([&] { g.get("lm_head.weight"); }, {path, "tied"});

    float largest = 0;
    for (const auto& [gguf_name, values] : tiny.values) {
        const GgufBuilder::Tensor& spec = tiny.builder.tensor(gguf_name);
        std::string hf;
        for (const auto& n : g.names())
            if (g.gguf_name(n) == gguf_name) hf = n;
        ASSERT_FALSE(hf.empty()) << gguf_name;
        const HostTensor t = g.get(hf);
        const std::vector<std::int64_t> shape(spec.ne.rbegin(), spec.ne.rend());
        EXPECT_EQ(t.shape, shape) << gguf_name;
        std::vector<float> want = values;
        if (gguf_name == "blk.0.attn_q.weight")
            want = reference_rotate_half_rows(values, 2, 16, 32);
        if (gguf_name == "blk.0.attn_k.weight")
            want = reference_rotate_half_rows(values, 1, 16, 32);
        const auto got = floats_of(t);
        largest = std::max(largest, max_abs_diff(got, want));
        EXPECT_EQ(0, std::memcmp(got.data(), want.data(), want.size() * 4)) << gguf_name;
    }
    std::cout << "[          ] largest |GGUF conversion − reference| = " << largest << "\n";
    EXPECT_NE(floats_of(g.get("model.layers.0.self_attn.q_proj.weight")),
              tiny.values["blk.0.attn_q.weight"]);  // the permutation is not the identity here

    // Every metadata type reads back.
    EXPECT_EQ(g.metadata_integer("test.i8"), -5);
    EXPECT_EQ(g.metadata_integer("test.i16"), -300);
    EXPECT_EQ(g.find("test.bool")->type, GgufType::BOOL);
    EXPECT_EQ(g.find("test.bool")->integer, 1);
    EXPECT_EQ(g.metadata_real("test.f64", 0), 0.125);
    EXPECT_EQ(g.metadata_real("llama.embedding_length", 0), 32);
    EXPECT_EQ(g.metadata_real("absent", 7.5), 7.5);
    const GgufValue* u16 = g.find("test.u16_array");
    ASSERT_NE(u16, nullptr);
    EXPECT_EQ(u16->element_type, GgufType::U16);
    ASSERT_EQ(u16->elements.size(), 3u);
    EXPECT_EQ(u16->elements[2].integer, 65535);
    const GgufValue* nested = g.find("test.nested");
    ASSERT_NE(nested, nullptr);
    ASSERT_EQ(nested->elements.size(), 2u);
    EXPECT_EQ(nested->elements[0].elements[0].string, "x");
    EXPECT_TRUE(nested->elements[1].elements.empty());
    EXPECT_EQ(g.vocabulary()[3], "\xe2\x96\x81hi");
    EXPECT_EQ(g.scores()[7], -7.0f);
    expect_input_error([&] { g.metadata_integer("test.f64"); }, {path, "test.f64", "integer"});
    expect_input_error([&] { g.metadata_integer("absent.key"); }, {path, "absent.key", "missing"});
    expect_input_error([&] { g.metadata_string("test.i8", ""); }, {path, "test.i8", "string"});
}

// The BOS and EOS ids come from the tokenizer keys; without them the model has none (-1), as
// for a config.json without bos_token_id, never llama2.c's 1 and 2 (extract then refuses
// --bos auto|yes: CaptureCli.GgufWithoutBosIdIsRefusedUnlessBosNo).
TEST(Gguf, BosAndEosIdsOnlyFromTheirKeys) {
    const std::string with_path = write_scratch("with_ids.gguf", tiny_llama_gguf().builder.build());
    const ModelConfig with_ids = GgufCheckpoint(with_path).config();
    EXPECT_EQ(with_ids.bos_token_id, 1);
    EXPECT_EQ(with_ids.eos_token_id, 2);
    const std::string without_path =
        write_scratch("without_ids.gguf", tiny_llama_gguf(false).builder.build());
    const ModelConfig without_ids = GgufCheckpoint(without_path).config();
    EXPECT_EQ(without_ids.bos_token_id, -1);
    EXPECT_EQ(without_ids.eos_token_id, -1);
}

TEST(Gguf, SyntheticMalformedFilesAreInputErrors) {
    auto expect_rejected = [](const std::string& name, const std::function<void(TinyGguf&)>& edit,
                              std::initializer_list<std::string> needles) {
        TinyGguf tiny = tiny_llama_gguf();
        edit(tiny);
        const std::string path = write_scratch(name, tiny.builder.build());
        SCOPED_TRACE(name);
        std::vector<std::string> all(needles);
        all.push_back(path);
        try {
            GgufCheckpoint g(path);
            ADD_FAILURE() << "expected InputError";
        } catch (const InputError& e) {
            const std::string message = e.what();
            EXPECT_EQ(message.find('\n'), std::string::npos);
            for (const auto& needle : all)
                EXPECT_NE(message.find(needle), std::string::npos)
                    << "message '" << message << "' lacks '" << needle << "'";
        }
    };
    expect_rejected("type99.gguf",
                    [](TinyGguf& t) { t.builder.tensor("blk.0.attn_v.weight").type = 99; },
                    {"blk.0.attn_v.weight", "unknown ggml type 99"});
    expect_rejected("q4.gguf",
                    [](TinyGguf& t) { t.builder.tensor("blk.0.attn_v.weight").type = 2; },
                    {"blk.0.attn_v.weight", "Q4_0", "not supported"});
    expect_rejected(
        "misaligned.gguf",
        [](TinyGguf& t) { t.builder.tensor("blk.0.ffn_up.weight").offset_override = 4; },
        {"blk.0.ffn_up.weight", "alignment 64"});
    expect_rejected(
        "beyond.gguf",
        [](TinyGguf& t) { t.builder.tensor("blk.0.ffn_up.weight").offset_override = 1u << 20; },
        {"blk.0.ffn_up.weight", "beyond the end"});
    expect_rejected("huge_offset.gguf",
                    [](TinyGguf& t) {
                        t.builder.tensor("blk.0.ffn_up.weight").offset_override =
                            0xffffffffffffffc0ull;
                    },
                    {"blk.0.ffn_up.weight", "beyond the end"});
    expect_rejected(
        "overlap.gguf",
        [](TinyGguf& t) { t.builder.tensor("blk.0.ffn_up.weight").offset_override = 0; },
        {"overlap"});
    expect_rejected("q8_rows.gguf",
                    [](TinyGguf& t) {
                        auto& x = t.builder.tensor("blk.0.ffn_gate.weight");
                        x.ne = {16, 128};
                    },
                    {"blk.0.ffn_gate.weight", "multiple of 32"});
    expect_rejected("shape.gguf",
                    [](TinyGguf& t) {
                        auto& x = t.builder.tensor("blk.0.ffn_up.weight");
                        x.ne = {64, 32};
                    },
                    {"blk.0.ffn_up.weight", "[32, 64]", "expected [64, 32]"});
    expect_rejected("missing.gguf",
                    [](TinyGguf& t) {
                        auto& v = t.builder.tensors;
                        v.erase(v.begin() + 1);  // output_norm.weight
                    },
                    {"model.norm.weight", "output_norm.weight"});
    expect_rejected(
        "layer.gguf",
        [](TinyGguf& t) { t.builder.tensor("blk.0.ffn_up.weight").name = "blk.1.ffn_up.weight"; },
        {"blk.1.ffn_up.weight", "block_count"});
    // Fuzz finding: a block count of 10⁸ with a dozen tensors sized the expected-name tables
    // by the header (a timeout at 1.8 GB); it must be refused against the tensor table.
    expect_rejected("many_layers.gguf",
                    [](TinyGguf& t) {
                        const std::string key =
                            GgufBuilder::str("llama.block_count") + pod<std::uint32_t>(4);
                        std::string& m = t.builder.metadata;
                        const std::size_t at = m.find(key + pod<std::uint32_t>(1));
                        ASSERT_NE(at, std::string::npos);
                        m.replace(at, key.size() + 4, key + pod<std::uint32_t>(100000000));
                    },
                    {"llama.block_count is 100000000", "fewer than 9 per layer"});
    expect_rejected(
        "dup_tensor.gguf",
        [](TinyGguf& t) { t.builder.tensor("blk.0.ffn_up.weight").name = "blk.0.ffn_norm.weight"; },
        {"blk.0.ffn_norm.weight", "twice"});
    expect_rejected("dims.gguf",
                    [](TinyGguf& t) {
                        t.builder.tensor("output_norm.weight").ne = {32, 1, 1, 1, 1};
                    },
                    {"output_norm.weight", "5 dimensions"});
    expect_rejected("dup_key.gguf",
                    [](TinyGguf& t) { t.builder.kv("test.i8", 1, pod<std::int8_t>(1)); },
                    {"test.i8", "twice"});
    expect_rejected("value_type.gguf", [](TinyGguf& t) { t.builder.kv("test.bad", 13, ""); },
                    {"test.bad", "unknown value type 13"});
    expect_rejected("bool.gguf",
                    [](TinyGguf& t) { t.builder.kv("test.bool2", 7, pod<std::uint8_t>(2)); },
                    {"test.bool2", "0 or 1"});
    expect_rejected("array_count.gguf",
                    [](TinyGguf& t) {
                        t.builder.kv("test.big", 9,
                                     pod<std::uint32_t>(10) + pod<std::uint64_t>(1ull << 60));
                    },
                    {"test.big", "truncated"});
    expect_rejected("string_length.gguf",
                    [](TinyGguf& t) { t.builder.kv("test.s", 8, pod<std::uint64_t>(1ull << 62)); },
                    {"test.s", "truncated"});
    expect_rejected("arch.gguf",
                    [](TinyGguf& t) {
                        t.builder = GgufBuilder{};
                        t.builder.kv("general.architecture", 8, GgufBuilder::str("gpt2"));
                    },
                    {"'gpt2'", "expected 'llama'"});
    expect_rejected(
        "alignment.gguf",
        [](TinyGguf& t) { t.builder.kv("general.alignment", 4, pod<std::uint32_t>(3)); },
        {"twice"});  // a second general.alignment key is a duplicate
    // The minimal llama metadata again, with a chosen head_count_kv and one key left out.
    auto fresh_metadata = [](TinyGguf& t, std::uint32_t head_count_kv, const std::string& omit) {
        GgufBuilder fresh = t.builder;
        fresh.metadata.clear();
        fresh.n_kv = 0;
        fresh.kv("general.architecture", 8, GgufBuilder::str("llama"));
        fresh.kv("general.alignment", 4, pod<std::uint32_t>(64));
        const std::pair<const char*, std::uint32_t> sizes[] = {
            {"llama.embedding_length", 32},
            {"llama.block_count", 1},
            {"llama.feed_forward_length", 64},
            {"llama.attention.head_count", 2},
            {"llama.attention.head_count_kv", head_count_kv},
            {"llama.context_length", 128}};
        for (const auto& [key, value] : sizes)
            if (key != omit) fresh.kv(key, 4, pod<std::uint32_t>(value));
        const std::string eps = "llama.attention.layer_norm_rms_epsilon";
        if (eps != omit) fresh.kv(eps, 6, pod<float>(1e-6f));
        t.builder = fresh;
    };
    expect_rejected("kv_heads.gguf", [&](TinyGguf& t) { fresh_metadata(t, 3, ""); },
                    {"head_count_kv 3"});
    expect_rejected(
        "no_eps.gguf",
        [&](TinyGguf& t) { fresh_metadata(t, 2, "llama.attention.layer_norm_rms_epsilon"); },
        {"layer_norm_rms_epsilon"});

    {  // a non-power-of-two alignment, on its own
        GgufBuilder b;
        b.kv("general.alignment", 4, pod<std::uint32_t>(3));
        const std::string path = write_scratch("align3.gguf", b.build());
        expect_input_error([&] { GgufCheckpoint g(path); }, {path, "power of two"});
    }
    {  // a vocabulary that disagrees with the embedding rows
        TinyGguf tiny = tiny_llama_gguf();
        tiny.builder.tensor("token_embd.weight").ne = {32, 4};
        tiny.builder.tensor("token_embd.weight").data.resize(32 * 4 * 2);
        const std::string path = write_scratch("vocab.gguf", tiny.builder.build());
        expect_input_error([&] { GgufCheckpoint g(path); }, {path, "4 rows", "8 tokens"});
    }
}

namespace {

// Floats of `ours` whose bit patterns differ from `theirs` at the same index (a NaN, or +0 vs
// −0, counts as a difference: exact equality means the same bits).
std::size_t differing_floats(const float* ours, const float* theirs, std::size_t count) {
    std::size_t differ = 0;
    for (std::size_t i = 0; i < count; ++i)
        differ += std::memcmp(ours + i, theirs + i, sizeof(float)) != 0;
    return differ;
}

}  // namespace

// RunCForward reproduces llama2.c run.c's own dumps bit for bit at the last position: the
// attention row of every (layer, head), the whole value cache and the logits.
TEST(RunCForward, EqualsRunCDumpsBitForBit) {
    const fs::path ref = attngeo::test_support::shared_folder() / "golden" / "llama2c-stories260K";
    const fs::path model =
        attngeo::test_support::shared_folder() / "models" / "stories260K" / "stories260K.bin";
    REQUIRE_SHARED_FILE(ref);
    REQUIRE_SHARED_FILE(model);
    auto read_floats = [](const fs::path& path) {
        const std::string bytes = attngeo::test_support::slurp(path);
        std::vector<float> out(bytes.size() / 4);
        std::memcpy(out.data(), bytes.data(), out.size() * 4);
        return out;
    };
    const std::string token_bytes =
        attngeo::test_support::slurp(ref / "stories260K_ref_once.tokens.i32");
    std::vector<std::int32_t> ids(token_bytes.size() / 4);
    std::memcpy(ids.data(), token_bytes.data(), ids.size() * 4);
    const std::size_t T = ids.size();
    const Llama2cCheckpoint checkpoint(model.string());
    const RunCForward forward(checkpoint);
    const auto row = forward.run(std::vector<std::int64_t>(ids.begin(), ids.end()));
    const auto attn = read_floats(ref / "stories260K_ref_once.attn.f32");      // [5, 8, T, T]
    const auto vcache = read_floats(ref / "stories260K_ref_once.vcache.f32");  // [5, T, 4, 8]
    const auto logits = read_floats(ref / "stories260K_ref_once.logits.f32");  // [T, 512]
    ASSERT_EQ(attn.size(), 5 * 8 * T * T);
    ASSERT_EQ(row.attention.size(), 5 * 8 * T);
    ASSERT_EQ(row.values.size(), vcache.size());
    ASSERT_EQ(row.logits.size(), 512u);
    std::size_t attention_differ = 0;
    for (std::size_t layer_head = 0; layer_head < 5 * 8; ++layer_head)
        attention_differ += differing_floats(&row.attention[layer_head * T],
                                             &attn[(layer_head * T + (T - 1)) * T], T);
    const std::size_t values_differ =
        differing_floats(row.values.data(), vcache.data(), vcache.size());
    const std::size_t logits_differ =
        differing_floats(row.logits.data(), &logits[(T - 1) * 512], 512);
    std::cout << "RunCForward vs run.c dumps, differing floats: attention " << attention_differ
              << " of " << 5 * 8 * T << ", values " << values_differ << " of " << vcache.size()
              << ", logits " << logits_differ << " of 512\n";
    RecordProperty("differing_floats",
                   static_cast<int>(attention_differ + values_differ + logits_differ));
    EXPECT_EQ(attention_differ, 0u);
    EXPECT_EQ(values_differ, 0u);
    EXPECT_EQ(logits_differ, 0u);
    // The dumps are not all zeros (a test that cannot fail would pass on empty rows too).
    EXPECT_GT(*std::max_element(row.logits.begin(), row.logits.end()), 1.0f);
    EXPECT_THROW(forward.run({1, 600}), InputError);
}

// The one LLaMA table: the readers name every tensor through it, the safetensors family table
// is built from it, and its shapes are the ones the files hold.
TEST(LlamaTensors, ReadersAndFamilyTableAgreeWithTheFiles) {
    const fs::path dir = attngeo::test_support::shared_folder() / "models" / "stories260K";
    REQUIRE_SHARED_FILE(dir / "stories260K.bin");
    REQUIRE_SHARED_FILE(dir / "stories260K.gguf");
    const Llama2cCheckpoint bin((dir / "stories260K.bin").string());
    const GgufCheckpoint gguf((dir / "stories260K.gguf").string());
    const Architecture& family = architecture_for("llama");
    EXPECT_EQ(llama_tensors_per_layer(), 9u);
    int checked = 0;
    for (const LlamaTensor& t : llama_tensors()) {
        const int layers = t.per_layer ? bin.header().n_layers : 1;
        for (int layer = 0; layer < layers; ++layer) {
            const std::string hf = llama_hf_name(t.id, layer);
            const std::string expected_hf =
                t.per_layer ? "model.layers." + std::to_string(layer) + "." + t.hf_suffix
                            : t.hf_suffix;
            EXPECT_EQ(hf, expected_hf);
            if (t.optional) {  // lm_head: present exactly when the classifier is not shared
                EXPECT_EQ(bin.contains(hf), !bin.header().shared_classifier);
                EXPECT_EQ(gguf.contains(hf), !gguf.config().tie_word_embeddings);
                if (!bin.contains(hf)) continue;
            }
            // Shapes from the header, written out independently of llama_tensor_shape.
            const Llama2cHeader& h = bin.header();
            const std::map<TensorId, std::vector<std::int64_t>> by_header = {
                {TensorId::embed, {h.vocab_size, h.dim}},
                {TensorId::lm_head, {h.vocab_size, h.dim}},
                {TensorId::final_norm, {h.dim}},
                {TensorId::attn_norm, {h.dim}},
                {TensorId::mlp_norm, {h.dim}},
                {TensorId::q, {h.dim, h.dim}},
                {TensorId::k, {h.kv_dim(), h.dim}},
                {TensorId::v, {h.kv_dim(), h.dim}},
                {TensorId::o, {h.dim, h.dim}},
                {TensorId::gate, {h.hidden_dim, h.dim}},
                {TensorId::up, {h.hidden_dim, h.dim}},
                {TensorId::down, {h.dim, h.hidden_dim}}};
            EXPECT_EQ(bin.get(hf).shape, by_header.at(t.id)) << hf;
            EXPECT_EQ(llama_tensor_shape(t.id, bin.config()), by_header.at(t.id)) << hf;
            EXPECT_EQ(gguf.get(hf).shape, by_header.at(t.id)) << hf;
            EXPECT_EQ(gguf.gguf_name(hf), llama_gguf_name(t.id, layer));
            ++checked;
        }
        const bool in_family =
            std::any_of(family.tensors.begin(), family.tensors.end(), [&](const TensorName& n) {
                return n.id == t.id && n.per_layer == t.per_layer && n.optional == t.optional &&
                       n.patterns == std::vector<std::string>{
                                         (t.per_layer ? "model.layers.{i}." : "") + t.hf_suffix};
            });
        EXPECT_TRUE(in_family) << t.hf_suffix;
    }
    EXPECT_EQ(checked, 2 + !bin.header().shared_classifier + 9 * bin.header().n_layers);
    EXPECT_EQ(bin.names().size(), static_cast<std::size_t>(checked));
    EXPECT_EQ(llama_gguf_name(TensorId::q, 3), "blk.3.attn_q.weight");
    EXPECT_THROW(llama_tensor(TensorId::qkv), std::out_of_range);
    EXPECT_THROW(llama_tensor_shape(TensorId::position_embed, bin.config()), std::out_of_range);
    // Absent tensors name the file and its format.
    const std::string beyond = llama_hf_name(TensorId::up, bin.header().n_layers);
    expect_input_error([&] { bin.get(beyond); }, {(dir / "stories260K.bin").string(),
                                                  "llama2.c checkpoint has no tensor", beyond});
    expect_input_error([&] { gguf.get(beyond); },
                       {(dir / "stories260K.gguf").string(), "GGUF file has no tensor", beyond});
}

TEST(LlamaConfig, FillsSizesAndLlamaDefaults) {
    LlamaSizes sizes;
    sizes.vocab_size = 512;
    sizes.hidden_size = 64;
    sizes.num_layers = 5;
    sizes.num_heads = 8;
    sizes.num_kv_heads = 4;
    sizes.intermediate_size = 172;
    sizes.max_positions = 256;
    const ModelConfig c = llama_config(sizes);
    EXPECT_EQ(c.family, "llama");
    EXPECT_EQ(c.head_dim, 8);  // 64 / 8
    EXPECT_EQ(c.vocab_size, 512);
    EXPECT_EQ(c.num_kv_heads, 4);
    EXPECT_EQ(c.intermediate_size, 172);
    EXPECT_EQ(c.max_positions, 256);
    EXPECT_EQ(c.hidden_act, "silu");
    EXPECT_EQ(c.rope_theta, 10000.0);
    EXPECT_EQ(c.norm_eps, 1e-5);
    EXPECT_FALSE(c.tie_word_embeddings);
    EXPECT_EQ(c.bos_token_id, -1);
    sizes.head_dim = 32;  // stated (GGUF key_length): kept, not derived
    EXPECT_EQ(llama_config(sizes).head_dim, 32);
    sizes.num_heads = 0;  // degenerate: no division by zero, nothing derived
    sizes.head_dim = 0;
    EXPECT_EQ(llama_config(sizes).head_dim, 0);
    // The llama2.c reader builds its config through it and adds run.c's constants.
    const fs::path model =
        attngeo::test_support::shared_folder() / "models" / "stories260K" / "stories260K.bin";
    REQUIRE_SHARED_FILE(model);
    const ModelConfig from_bin = Llama2cCheckpoint(model.string()).config();
    EXPECT_EQ(from_bin.bos_token_id, 1);
    EXPECT_EQ(from_bin.eos_token_id, 2);
    EXPECT_TRUE(from_bin.tie_word_embeddings);
    EXPECT_EQ(from_bin.head_dim, 8);
}
