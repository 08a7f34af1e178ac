// Choosing a tokenizer for a checkpoint; see tokenizer_lookup.hpp.
#include "empirical/tokenizers/tokenizer_lookup.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <vector>

#include "common/errors.hpp"
#include "common/json_file.hpp"
#include "empirical/tokenizers/gpt2_bpe_tokenizer.hpp"
#include "empirical/tokenizers/llama2c_tokenizer.hpp"
#include "empirical/tokenizers/sentencepiece_tokenizer.hpp"
#include "empirical/tokenizers/tokenizer_files.hpp"

namespace attngeo::empirical {

namespace fs = std::filesystem;
using tokenizer_files::file_label;
using tokenizer_files::read_json;
using tokenizer_files::require_file;

namespace {

// Records in a tokenizer.bin: u32 max_token_length, then (f32 score, i32 length, bytes)*.
int count_llama2c_tokens(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in)
        throw InputError(file_label(path) + ": cannot open (expected a llama2.c tokenizer.bin)");
    in.seekg(4);
    int count = 0;
    while (true) {
        char record[8];
        if (!in.read(record, 8)) break;
        std::int32_t length = 0;
        std::memcpy(&length, record + 4, 4);
        if (length < 0) break;
        in.seekg(length, std::ios::cur);
        if (!in) break;
        ++count;
    }
    return count;
}

int llama2c_vocab_size(const fs::path& folder, const fs::path& model_path, const fs::path& tok) {
    const fs::path config = folder / "config.json";
    std::error_code ec;
    if (fs::is_regular_file(config, ec)) {
        const nlohmann::json j = read_json(config.string(), "a model config.json");
        if (j.is_object() && j.contains("vocab_size") && j["vocab_size"].is_number_integer() &&
            j["vocab_size"].get<std::int64_t>() > 0 &&
            j["vocab_size"].get<std::int64_t>() <= std::numeric_limits<int>::max()) {
            return j["vocab_size"].get<int>();
        }
    }
    if (model_path.extension() == ".bin" && model_path != tok &&
        fs::is_regular_file(model_path, ec)) {
        std::ifstream in(model_path, std::ios::binary);
        std::int32_t header[7] = {};
        if (in.read(reinterpret_cast<char*>(header), sizeof(header)) && header[5] != 0 &&
            header[5] != std::numeric_limits<std::int32_t>::min()) {
            return std::abs(header[5]);
        }
    }
    return count_llama2c_tokens(tok.string());
}

}  // namespace

fs::path model_folder(const std::string& model_path) {
    std::error_code ec;
    const fs::path path(model_path);
    if (fs::is_directory(path, ec)) return path;
    return path.has_parent_path() ? path.parent_path() : fs::path(".");
}

std::unique_ptr<Tokenizer> tokenizer_for_model(const std::string& model_path, int vocab_size) {
    std::error_code ec;
    const fs::path path(model_path);
    if (!fs::exists(path, ec)) {
        throw InputError(file_label(model_path) +
                         ": not found (expected a checkpoint folder or file)");
    }
    const fs::path folder = model_folder(model_path);
    const auto has = [&](const char* name) { return fs::is_regular_file(folder / name, ec); };

    if (has("tokenizer.model")) {
        return std::make_unique<SentencePieceTokenizer>((folder / "tokenizer.model").string());
    }
    if (has("tokenizer.json")) {
        const std::string json_path = (folder / "tokenizer.json").string();
        const nlohmann::json j = read_json(json_path, "a Hugging Face tokenizer.json");
        const bool bpe = with_json_context(json_path, [&] {
            return j.is_object() && j.contains("model") && j["model"].is_object() &&
                   j["model"].value("type", "BPE") == "BPE";
        });
        if (bpe) {
            return Gpt2BpeTokenizer::from_tokenizer_json(json_path);
        }
    }
    if (has("vocab.json") && has("merges.txt")) {
        return std::make_unique<Gpt2BpeTokenizer>((folder / "vocab.json").string(),
                                                  (folder / "merges.txt").string());
    }
    fs::path tok;
    if (has("tokenizer.bin")) {
        tok = folder / "tokenizer.bin";
    } else {
        std::vector<fs::path> candidates;
        for (const auto& entry : fs::directory_iterator(folder, ec)) {
            const std::string name = entry.path().filename().string();
            if (entry.is_regular_file(ec) && name.rfind("tok", 0) == 0 &&
                entry.path().extension() == ".bin" && entry.path() != path) {
                candidates.push_back(entry.path());
            }
        }
        std::sort(candidates.begin(), candidates.end());
        if (!candidates.empty()) tok = candidates.front();
    }
    if (!tok.empty()) {
        const int size = vocab_size > 0 ? vocab_size : llama2c_vocab_size(folder, path, tok);
        return std::make_unique<Llama2cBinTokenizer>(tok.string(), size);
    }
    throw InputError(file_label(folder.string()) +
                     ": no tokenizer found (expected tokenizer.model, tokenizer.json, vocab.json + "
                     "merges.txt, tokenizer.bin or tok*.bin)");
}


}  // namespace attngeo::empirical
