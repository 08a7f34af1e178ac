// Writes the seed corpora of the fuzz targets into the build tree at build time: small valid
// inputs derived from ../shared (headers of real checkpoints, subsets of real tokenizers, the
// golden config.json files) plus synthetic files built here, never committed copies.
// Usage: make_seeds SHARED_DIR OUT_DIR (one sub-folder per target).
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "common/run_schema.hpp"
#include "common/safetensors.hpp"
#include "fuzz/fuzz_support.hpp"
#include "simulate/run.hpp"
#include "tests/support/tiny_run.hpp"

namespace fs = std::filesystem;
using attngeo::fuzz::kFileSeparator;

namespace {

fs::path g_out;
bool g_missing_shared = false;

std::string read_file(const fs::path& path, std::size_t limit = std::string::npos) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        std::cerr << "make_seeds: " << path << " not found, seed skipped\n";
        g_missing_shared = true;
        return "";
    }
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    return bytes.substr(0, limit);
}

void seed(const std::string& target, const std::string& name, const std::string& bytes) {
    if (bytes.empty()) return;
    fs::create_directories(g_out / target);
    std::ofstream(g_out / target / name, std::ios::binary) << bytes;
}

template <class T>
void put(std::string& out, T value) {
    out.append(reinterpret_cast<const char*>(&value), sizeof(T));
}

std::string floats(std::size_t count, float scale) {
    std::string out;
    for (std::size_t i = 0; i < count; ++i)
        put(out, scale * static_cast<float>((i * 37) % 17) / 17.0f - scale / 2);
    return out;
}

// A real safetensors file's header (8-byte length + JSON) and the first bytes of its data: the
// header exercises the real tensor table; offsets past the cut are rejected as truncation.
std::string safetensors_head(const fs::path& path, std::size_t data_bytes) {
    const std::string bytes = read_file(path);
    if (bytes.size() < 8) return "";
    std::uint64_t header = 0;
    std::memcpy(&header, bytes.data(), 8);
    return bytes.substr(0, static_cast<std::size_t>(8 + header + data_bytes));
}

std::string small_safetensors(const std::map<std::string, std::string>& metadata,
                              const std::vector<std::string>& names) {
    using namespace attngeo;
    static const float values[6] = {1, -2, 0.5f, 3, 0, -0.25f};
    static const std::uint16_t halves[4] = {0x3c00, 0xc000, 0x7bff, 0x0001};
    static const std::int64_t index[1] = {7};
    std::vector<HostTensor> tensors;
    for (std::size_t i = 0; i < names.size(); ++i) {
        HostTensor t;
        t.name = names[i];
        if (i % 3 == 0) t.dtype = DType::F32, t.shape = {2, 3}, t.data = values, t.bytes = 24;
        if (i % 3 == 1) t.dtype = DType::BF16, t.shape = {4}, t.data = halves, t.bytes = 8;
        if (i % 3 == 2) t.dtype = DType::I64, t.shape = {1}, t.data = index, t.bytes = 8;
        tensors.push_back(t);
    }
    const fs::path tmp = g_out / "tmp.safetensors";
    write_safetensors(tmp.string(), tensors, metadata);
    const std::string bytes = read_file(tmp);
    fs::remove(tmp);
    return bytes;
}

void safetensors_seeds(const fs::path& shared) {
    seed("safetensors_file", "small",
         small_safetensors({{"format", "pt"}}, {"a", "b.weight", "c"}));
    for (const char* family : {"gpt2", "llama-bf16", "gemma"})
        seed("safetensors_file", std::string(family) + "_head",
             safetensors_head(shared / "golden" / family / "model.safetensors", 256));
    const nlohmann::json index = {{"metadata", {{"total_size", 80}}},
                                  {"weight_map",
                                   {{"a", "shard-1.safetensors"},
                                    {"b", "shard-1.safetensors"},
                                    {"c", "shard-2.safetensors"}}}};
    seed("safetensors_index", "two_shards",
         index.dump(1) + kFileSeparator + small_safetensors({}, {"a", "b"}) + kFileSeparator +
             small_safetensors({}, {"c"}));
}

// The GGUF seed's key-value section: the LLaMA sizes and an 8-token vocabulary with scores.
// Returns the bytes; `kv_count` receives how many keys they hold (the header states it first).
std::string small_gguf_metadata(std::uint64_t& kv_count) {
    std::string kv;
    kv_count = 0;
    auto key = [&](const std::string& name, std::uint32_t type) {
        put<std::uint64_t>(kv, name.size());
        kv += name;
        put(kv, type);
        ++kv_count;
    };
    auto text = [&](const std::string& value) {
        put<std::uint64_t>(kv, value.size());
        kv += value;
    };
    key("general.architecture", 8), text("llama");
    key("general.alignment", 4), put<std::uint32_t>(kv, 32);
    for (auto [name, value] :
         std::vector<std::pair<std::string, std::uint32_t>>{{"llama.embedding_length", 32},
                                                            {"llama.block_count", 1},
                                                            {"llama.feed_forward_length", 32},
                                                            {"llama.attention.head_count", 2},
                                                            {"llama.attention.head_count_kv", 2},
                                                            {"llama.context_length", 16}})
        key(name, 4), put(kv, value);
    key("llama.attention.layer_norm_rms_epsilon", 6), put(kv, 1e-5f);
    key("llama.rope.freq_base", 6), put(kv, 10000.0f);
    const std::vector<std::string> tokens = {"<unk>",
                                             "<s>",
                                             "</s>",
                                             "\xe2\x96\x81",
                                             "a",
                                             "b",
                                             "ab",
                                             "\xe2\x96\x81"
                                             "ab"};
    key("tokenizer.ggml.tokens", 9), put<std::uint32_t>(kv, 8), put<std::uint64_t>(kv, 8);
    for (const auto& t : tokens)
        text(t);
    key("tokenizer.ggml.scores", 9), put<std::uint32_t>(kv, 6), put<std::uint64_t>(kv, 8);
    for (int i = 0; i < 8; ++i)
        put(kv, -static_cast<float>(i));
    return kv;
}

struct GgufSeedTensor {
    std::string name;
    std::vector<std::uint64_t> ne;  // ggml order: ne[0] is the row length
    std::uint32_t type;             // ggml type: 0 F32, 1 F16, 8 Q8_0, 30 BF16
};

// The seed model's tensors: every LLaMA weight of one layer, spread over the four types.
std::vector<GgufSeedTensor> small_gguf_tensors() {
    return {{"token_embd.weight", {32, 8}, 0},         {"output_norm.weight", {32}, 0},
            {"blk.0.attn_norm.weight", {32}, 0},       {"blk.0.attn_q.weight", {32, 32}, 8},
            {"blk.0.attn_k.weight", {32, 32}, 1},      {"blk.0.attn_v.weight", {32, 32}, 30},
            {"blk.0.attn_output.weight", {32, 32}, 0}, {"blk.0.ffn_norm.weight", {32}, 0},
            {"blk.0.ffn_gate.weight", {32, 32}, 0},    {"blk.0.ffn_down.weight", {32, 32}, 1},
            {"blk.0.ffn_up.weight", {32, 32}, 0}};
}

// One tensor's bytes in its ggml type: small varied F32, constant halves near 0.1, or Q8_0
// blocks (a half scale, then 32 int8 values).
std::string gguf_tensor_bytes(const GgufSeedTensor& t) {
    std::uint64_t count = 1;
    for (auto n : t.ne)
        count *= n;
    std::string bytes;
    if (t.type == 0) bytes += floats(count, 0.2f);
    if (t.type == 1 || t.type == 30)
        for (std::uint64_t i = 0; i < count; ++i)
            put<std::uint16_t>(bytes, t.type == 1 ? 0x2e66 : 0x3dcc);  // ≈ 0.1
    if (t.type == 8)
        for (std::uint64_t block = 0; block < count / 32; ++block) {
            put<std::uint16_t>(bytes, 0x2000);  // scale ≈ 0.0078
            for (int i = 0; i < 32; ++i)
                bytes += static_cast<char>((block + i) % 9 - 4);
        }
    return bytes;
}

// The tensor-info section (name, dimensions, type, offset) into `infos` and the data section,
// each tensor starting at a multiple of the 32-byte alignment, into `data`.
void small_gguf_tensor_sections(const std::vector<GgufSeedTensor>& tensors, std::string& infos,
                                std::string& data) {
    for (const auto& t : tensors) {
        while (data.size() % 32)
            data += '\0';
        put<std::uint64_t>(infos, t.name.size());
        infos += t.name;
        put<std::uint32_t>(infos, static_cast<std::uint32_t>(t.ne.size()));
        for (auto n : t.ne)
            put(infos, n);
        put(infos, t.type);
        put<std::uint64_t>(infos, data.size());
        data += gguf_tensor_bytes(t);
    }
}

// GGUF v3, as ggml's docs/gguf.md lays it out: a tiny LLaMA (dim 32, 1 layer, 2 heads) with
// F32, F16, BF16 and Q8_0 tensors and an 8-token vocabulary. Header, key-values, tensor infos,
// padding to the alignment, then the data.
std::string small_gguf() {
    std::uint64_t kv_count = 0;
    const std::string kv = small_gguf_metadata(kv_count);
    const std::vector<GgufSeedTensor> tensors = small_gguf_tensors();
    std::string infos, data;
    small_gguf_tensor_sections(tensors, infos, data);
    std::string file = "GGUF";
    put<std::uint32_t>(file, 3);
    put<std::uint64_t>(file, tensors.size());
    put<std::uint64_t>(file, kv_count);
    file += kv + infos;
    while (file.size() % 32)
        file += '\0';
    return file + data;
}

// llama2.c's legacy layout (run.c): 7 int32 header, then the float32 tensors in run.c's order
// including the freq_cis block; dim 8, hidden 16, 1 layer, 2 heads, vocab 6, seq_len 4.
std::string small_llama2c(bool shared_classifier) {
    const int dim = 8, hidden = 16, layers = 1, heads = 2, kv_heads = 2, vocab = 6, seq = 4;
    std::string file;
    for (int v : {dim, hidden, layers, heads, kv_heads, shared_classifier ? vocab : -vocab, seq})
        put<std::int32_t>(file, v);
    const int head = dim / heads, kv_dim = kv_heads * head;
    std::size_t count = static_cast<std::size_t>(vocab) * dim +
                        layers * (2 * dim + 2 * dim * dim + 2 * dim * kv_dim + 3 * dim * hidden) +
                        dim + seq * head;
    if (!shared_classifier) count += static_cast<std::size_t>(vocab) * dim;
    return file + floats(count, 0.3f);
}

// tokenizer.model cut to its first `keep` pieces, the trainer and normaliser specs kept whole
// (protobuf wire format: field 1 = pieces, 2 = TrainerSpec, 3 = NormalizerSpec).
std::string sentencepiece_subset(const std::string& model, int keep) {
    std::string out;
    std::size_t at = 0;
    int pieces = 0;
    auto varint = [&](std::uint64_t& value) {
        value = 0;
        for (int shift = 0; at < model.size() && shift < 64; shift += 7) {
            const auto byte = static_cast<unsigned char>(model[at++]);
            value |= static_cast<std::uint64_t>(byte & 0x7f) << shift;
            if (!(byte & 0x80)) return true;
        }
        return false;
    };
    while (at < model.size()) {
        const std::size_t start = at;
        std::uint64_t key = 0, length = 0;
        if (!varint(key) || (key & 7) != 2 || !varint(length) || at + length > model.size())
            return "";  // not the layout expected: no seed rather than a wrong one
        at += length;
        if ((key >> 3) == 1 && ++pieces > keep) continue;
        out += model.substr(start, at - start);
    }
    return out;
}

void tokenizer_seeds(const fs::path& shared) {
    const std::string tok512 = read_file(shared / "models" / "stories260K" / "tok512.bin");
    if (!tok512.empty()) seed("llama2c_tokenizer", "tok512", std::string("\x00\x02", 2) + tok512);
    const std::string model = read_file(shared / "tokenizers" / "llama2" / "tokenizer.model");
    seed("sentencepiece", "llama2_400_pieces", sentencepiece_subset(model, 400));

    // GPT-2: the 256 byte tokens, then the first merges whose parts are already kept.
    const std::string vocab_text = read_file(shared / "tokenizers" / "gpt2" / "vocab.json");
    const std::string merges_text = read_file(shared / "tokenizers" / "gpt2" / "merges.txt");
    if (vocab_text.empty() || merges_text.empty()) return;
    const auto full = nlohmann::json::parse(vocab_text);
    nlohmann::json vocab = nlohmann::json::object();
    for (const auto& [token, id] : full.items())
        if (id.get<int>() < 256) vocab[token] = id;
    std::istringstream lines(merges_text);
    std::string line, merges = "#version: 0.2\n";
    nlohmann::json merge_list = nlohmann::json::array();
    int next_id = 256;
    while (std::getline(lines, line) && next_id < 400) {
        const auto space = line.find(' ');
        if (line.empty() || line[0] == '#' || space == std::string::npos) continue;
        const std::string a = line.substr(0, space), b = line.substr(space + 1);
        if (!vocab.contains(a) || !vocab.contains(b) || vocab.contains(a + b)) continue;
        vocab[a + b] = next_id++;
        merges += line + "\n";
        merge_list.push_back(line);
    }
    vocab["<|endoftext|>"] = next_id;
    seed("gpt2_vocab_merges", "gpt2_subset", vocab.dump() + kFileSeparator + merges);
    const nlohmann::json tokenizer_json = {
        {"version", "1.0"},
        {"added_tokens", {{{"id", next_id}, {"content", "<|endoftext|>"}, {"special", true}}}},
        {"pre_tokenizer",
         {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}}},
        {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", merge_list}}}};
    seed("tokenizer_json", "gpt2_subset", tokenizer_json.dump(1));
}

void text_seeds(const fs::path& shared) {
    for (const char* family : {"gpt2", "gemma", "gpt-neox", "llama-bf16", "llama-gqa",
                               "llama-rope500k", "mistral-swa", "stories260k-hf"})
        seed("hf_config", family, read_file(shared / "golden" / family / "config.json"));
    seed("numeric_csv", "points", "# alpha,v1,v2\n0.5,1,2\n0.25,-1e-3,3.5\n0.25,0,1e300\n");
    seed("numeric_csv", "column", "0.1\n0.2\n\n0.7 # comment\n");
    seed("numeric_csv", "whitespace", "1 2 3\n4\t5 6\r\n");

    // An extract folder of 1 layer, 2 heads, context 4, N ∈ {1, 2}, lags 1..2.
    std::string heads =
        "layer,head,kv_head,docs,norm_mean,norm_median,cv_positional,cv_pooled,"
        "lambda,rho0,sink_mass,last_mass,m_sink,m_last,m_rest,regime,regime_margin\n";
    std::string pr = "layer,head,N,P_mean,P_se,R_mean,R_se,Fmax_mean,Fmin_mean\n";
    std::string position = "layer,head,pos,norm_mean,alpha_mean,contrib_mean\n";
    std::string lags = "layer,head,lag,cos_mean,pairs\n";
    for (int h = 0; h < 2; ++h) {
        const std::string lh = "0," + std::to_string(h) + ",";
        heads += lh + "0,3,1.5,1.4,0.1,0.2,0.3,0.05,0.6,0.1,0.2,0.1,0.3,Retriever," +
                 (h ? "inf" : "1.5") + "\n";
        for (int N = 1; N <= 2; ++N)
            pr += lh + std::to_string(N) + ",0.9,0.01,0.8,0.02,0.95,0.9\n";
        for (int pos = 0; pos < 4; ++pos)
            position += lh + std::to_string(pos) + ",1.2,0.25,0.3\n";
        for (int lag = 1; lag <= 2; ++lag)
            lags += lh + std::to_string(lag) + ",0.5," + std::to_string(4 - lag) + "\n";
    }
    const nlohmann::json manifest = {{"format_version", attngeo::schema::kFormatVersion},
                                     {"kind", "extract"},
                                     {"model", {{"layers", 1}, {"heads", 2}, {"head_dim", 4}}},
                                     {"parameters", {{"context", 4}}}};
    seed("extract_folder", "small",
         manifest.dump(1) + kFileSeparator + heads + kFileSeparator + pr + kFileSeparator +
             position + kFileSeparator + lags);
}

// A simulate run folder written by the library the CLI uses (n = 16, d = 8, 4 trials), and a
// one-point sweep, so the seeds hold what `attngeo simulate` writes today.
void run_folder_seeds() {
    using namespace attngeo::simulate;
    for (const bool sweep : {false, true}) {
        const RunConfig config =
            attngeo::test_support::tiny_run_config(sweep ? "sweep" : "simulate");
        RunTimings timings;
        const auto sums = run_grid(config, 1, nullptr, timings);
        const fs::path dir = g_out / "tmp_run";
        write_run(dir.string(), config, sums, 1, nlohmann::json::object(), timings);
        // merge reads the configuration and a few provenance keys; the large sections
        // (realised parameters, decisions) only slow the fuzzer down.
        nlohmann::json manifest = nlohmann::json::parse(read_file(dir / "manifest.json"));
        for (auto it = manifest.begin(); it != manifest.end();)
            it = it.key() != "config" && it.value().dump().size() > 400 ? manifest.erase(it)
                                                                        : std::next(it);
        seed("run_folder", sweep ? "sweep" : "simulate",
             manifest.dump(1) + kFileSeparator + read_file(dir / "sums.csv") + kFileSeparator +
                 read_file(dir / "per_trial.safetensors"));
        fs::remove_all(dir);
    }
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 3) {
        std::cerr << "usage: make_seeds SHARED_DIR OUT_DIR\n";
        return 2;
    }
    const fs::path shared = argv[1];
    g_out = argv[2];
    fs::remove_all(g_out);
    fs::create_directories(g_out);
    safetensors_seeds(shared);
    seed("gguf", "tiny_llama", small_gguf());
    seed("gguf", "stories260K_head",
         read_file(shared / "models" / "stories260K" / "stories260K.gguf", 16384));
    seed("llama2c_checkpoint", "tiny_shared", small_llama2c(true));
    seed("llama2c_checkpoint", "tiny_unshared", small_llama2c(false));
    seed("llama2c_checkpoint", "stories260K_head",
         read_file(shared / "models" / "stories260K" / "stories260K.bin", 4096));
    tokenizer_seeds(shared);
    text_seeds(shared);
    run_folder_seeds();
    seed("token_file", "batch", "1 403 407 261 378\n1 29 30 31 32\n");
    seed("token_file", "documents", "1 2 3\n\n4 5 6 7 8 9\n");
    seed("planted_truth", "two_heads",
         "layer,head,L,d,C,lambda,beta,rho0,p_sink,p_base,eta,omega,T1,T2,norm_cv,alpha_noise\n"
         "0,0,127,64,1,0.2,0.1,0.05,0.3,0.005,0.05,0.3,20,100,0,0.1\n"
         "1,2,127,64,1,0.4,0.25,0,0.5,0.004,0.05,0.3,20,100,0,0.1\n");
    seed("planted_truth", "hand_written", "layer,head,beta\n0,1,0.5\n");
    if (g_missing_shared)
        std::cerr << "make_seeds: some shared files were missing (ATTNGEO_SHARED = " << shared
                  << "); those targets start from the synthetic seeds only\n";
    return 0;
}
