// Tests for empirical/tokenizers/tokenizer: the shared golden tokenisations (SentencePiece's own encode for
// LLaMA-2, transformers' slow GPT2Tokenizer for GPT-2) encoded and decoded exactly, the folder
// lookup, a synthetic llama2.c tokenizer.bin, and every malformed-input path.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/errors.hpp"
#include "empirical/model/model_config.hpp"
#include "empirical/tokenizers/gpt2_bpe_tokenizer.hpp"
#include "empirical/tokenizers/llama2c_tokenizer.hpp"
#include "empirical/tokenizers/sentencepiece_tokenizer.hpp"
#include "empirical/tokenizers/tokenizer_lookup.hpp"
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

struct GoldenCase {
    std::string text;
    std::vector<int> ids;
};

std::vector<GoldenCase> read_golden(const fs::path& path) {
    std::ifstream in(path);
    const nlohmann::json j = nlohmann::json::parse(in);
    std::vector<GoldenCase> cases;
    for (const auto& c : j.at("cases")) {
        cases.push_back({c.at("text").get<std::string>(), c.at("ids").get<std::vector<int>>()});
    }
    return cases;
}

std::string ids_string(const std::vector<int>& ids) {
    std::string s = "[";
    for (std::size_t i = 0; i < ids.size(); ++i)
        s += (i ? ", " : "") + std::to_string(ids[i]);
    return s + "]";
}

void expect_golden(const Tokenizer& tokenizer, const std::vector<GoldenCase>& cases) {
    ASSERT_GE(cases.size(), 10u);
    int exact = 0;
    for (const auto& c : cases) {
        const std::vector<int> ids = tokenizer.encode(c.text);
        EXPECT_EQ(ids, c.ids) << tokenizer.name() << " text \"" << c.text << "\"\n  got      "
                              << ids_string(ids) << "\n  expected " << ids_string(c.ids);
        EXPECT_EQ(tokenizer.decode(c.ids), c.text) << tokenizer.name();
        exact += ids == c.ids;
    }
    std::cout << tokenizer.name() << ": " << exact << " / " << cases.size()
              << " golden texts exact\n";
}

fs::path scratch() {
    static const fs::path folder = attngeo::test_support::scratch_folder("tokenizer");
    return folder;
}

// Removes the scratch folder after the last test.
class ScratchCleanup : public ::testing::Environment {
  public:
    void TearDown() override {
        std::error_code ec;
        fs::remove_all(scratch(), ec);
    }
};
const auto* const scratch_cleanup = ::testing::AddGlobalTestEnvironment(new ScratchCleanup);

fs::path fresh_folder(const std::string& name) {
    const fs::path p = scratch() / name;
    fs::remove_all(p);
    fs::create_directories(p);
    return p;
}

void write_text(const fs::path& path, const std::string& text) {
    std::ofstream out(path, std::ios::binary);
    out << text;
}

// Independent bytes_to_unicode, written from encoder.py's definition.
std::string byte_symbol(int b) {
    int cp = b;
    if (!((b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255))) {
        int n = 0;
        for (int c = 0; c < b; ++c) {
            if (!((c >= 33 && c <= 126) || (c >= 161 && c <= 172) || (c >= 174 && c <= 255))) ++n;
        }
        cp = 256 + n;
    }
    std::string s;
    if (cp < 0x80) {
        s += static_cast<char>(cp);
    } else {
        s += static_cast<char>(0xC0 | (cp >> 6));
        s += static_cast<char>(0x80 | (cp & 0x3F));
    }
    return s;
}

// A tiny byte-level vocabulary: the 256 byte symbols (ids 0..255), then "ab" (256), "Ġa"
// (257), "Ġab" (258), with merges ranked "Ġ a" < "a b" < "Ġa b".
const std::string kSpace = "\u0120";  // Ġ, byte 32's symbol
nlohmann::json tiny_vocab() {
    nlohmann::json vocab = nlohmann::json::object();
    for (int b = 0; b < 256; ++b)
        vocab[byte_symbol(b)] = b;
    vocab["ab"] = 256;
    vocab[kSpace + "a"] = 257;
    vocab[kSpace + "ab"] = 258;
    return vocab;
}
const std::string kTinyMerges = "#version: 0.2\n" + kSpace + " a\na b\n" + kSpace + "a b\n";

nlohmann::json byte_level_pre_tokenizer() {
    return {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}};
}

// ------------------------------------------------------------------------------------------
// Golden tokenisations

TEST(Tokenizer, SentencePieceMatchesLlama2Golden) {
    const fs::path folder = shared_folder() / "tokenizers" / "llama2";
    REQUIRE_SHARED_FILE(folder / "golden.json");
    const SentencePieceTokenizer tokenizer((folder / "tokenizer.model").string());
    EXPECT_EQ(tokenizer.vocab_size(), 32000);
    EXPECT_EQ(tokenizer.bos_id(), 1);
    EXPECT_EQ(tokenizer.eos_id(), 2);
    expect_golden(tokenizer, read_golden(folder / "golden.json"));
    EXPECT_TRUE(tokenizer.encode("").empty());
    expect_input_error([&] { tokenizer.decode({32000}); }, {"tokenizer.model", "32000"});
    expect_input_error([&] { tokenizer.decode({-1}); }, {"tokenizer.model", "-1"});
}

TEST(Tokenizer, Gpt2BpeMatchesGpt2Golden) {
    const fs::path folder = shared_folder() / "tokenizers" / "gpt2";
    REQUIRE_SHARED_FILE(folder / "golden.json");
    const Gpt2BpeTokenizer tokenizer((folder / "vocab.json").string(),
                                     (folder / "merges.txt").string());
    EXPECT_EQ(tokenizer.vocab_size(), 50257);
    EXPECT_EQ(tokenizer.bos_id(), 50256);
    EXPECT_EQ(tokenizer.eos_id(), 50256);
    const auto cases = read_golden(folder / "golden.json");
    expect_golden(tokenizer, cases);
    expect_golden(tokenizer, cases);  // second pass through the BPE cache
    EXPECT_TRUE(tokenizer.encode("").empty());
    EXPECT_EQ(tokenizer.decode({50256}), "<|endoftext|>");
    expect_input_error([&] { tokenizer.decode({50257}); }, {"vocab.json", "50257"});
}

// The same vocabulary as a Hugging Face tokenizer.json, merges half as "a b" strings and half
// as ["a", "b"] pairs, gives the same golden ids.
TEST(Tokenizer, Gpt2BpeFromTokenizerJsonMatchesGolden) {
    const fs::path shared = shared_folder() / "tokenizers" / "gpt2";
    REQUIRE_SHARED_FILE(shared / "golden.json");
    nlohmann::json vocab;
    {
        std::ifstream in(shared / "vocab.json");
        vocab = nlohmann::json::parse(in);
    }
    nlohmann::json merges = nlohmann::json::array();
    {
        std::ifstream in(shared / "merges.txt");
        std::string line;
        std::getline(in, line);  // #version
        while (std::getline(in, line)) {
            if (line.empty()) continue;
            const auto space = line.find(' ');
            if (merges.size() % 2 == 0) {
                merges.push_back(line);
            } else {
                merges.push_back({line.substr(0, space), line.substr(space + 1)});
            }
        }
    }
    const nlohmann::json j = {
        {"version", "1.0"},
        {"added_tokens", {{{"id", 50256}, {"content", "<|endoftext|>"}, {"special", true}}}},
        {"pre_tokenizer", byte_level_pre_tokenizer()},
        {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", merges}}}};
    const fs::path folder = fresh_folder("hf_gpt2");
    write_text(folder / "tokenizer.json", j.dump());
    const auto tokenizer = tokenizer_for_model(folder.string());
    EXPECT_EQ(tokenizer->name(), "gpt2-bpe:" + (folder / "tokenizer.json").string());
    EXPECT_EQ(tokenizer->eos_id(), 50256);
    expect_golden(*tokenizer, read_golden(shared / "golden.json"));
}

// ------------------------------------------------------------------------------------------
// Pre-tokeniser and byte handling, against hand-worked matches of GPT-2's regex

TEST(Tokenizer, Gpt2PreTokenizerSpotValues) {
    using V = std::vector<std::string>;
    EXPECT_EQ(Gpt2BpeTokenizer::pre_tokenize(""), V{});
    EXPECT_EQ(Gpt2BpeTokenizer::pre_tokenize("Hello world"), (V{"Hello", " world"}));
    EXPECT_EQ(Gpt2BpeTokenizer::pre_tokenize("it's I'LL we'll"),
              (V{"it", "'s", " I", "'", "LL", " we", "'ll"}));
    EXPECT_EQ(Gpt2BpeTokenizer::pre_tokenize("a  b"), (V{"a", " ", " b"}));
    EXPECT_EQ(Gpt2BpeTokenizer::pre_tokenize("a   \n  "), (V{"a", "   \n  "}));
    EXPECT_EQ(Gpt2BpeTokenizer::pre_tokenize("x \n y"), (V{"x", " \n", " y"}));
    EXPECT_EQ(Gpt2BpeTokenizer::pre_tokenize("x2023 ½ !!?"), (V{"x", "2023", " ½", " !!?"}));
    EXPECT_EQ(Gpt2BpeTokenizer::pre_tokenize("Ωμέγα Привет 中文 ١٢٣ ４２"),
              (V{"Ωμέγα", " Привет", " 中文", " ١٢٣", " ４２"}));
    EXPECT_EQ(Gpt2BpeTokenizer::pre_tokenize("é\xC2\xA0"
                                             "x"),
              (V{"é", "\xC2\xA0", "x"}));
}

TEST(Tokenizer, Gpt2InvalidUtf8RoundTrips) {
    const fs::path folder = shared_folder() / "tokenizers" / "gpt2";
    REQUIRE_SHARED_FILE(folder / "vocab.json");
    const Gpt2BpeTokenizer tokenizer((folder / "vocab.json").string(),
                                     (folder / "merges.txt").string());
    for (const std::string& text : {std::string("ab\xFF\xFE cd"), std::string("\xE6\x97"),
                                    std::string("x\xED\xA0\x80y"), std::string("\0a", 2)}) {
        EXPECT_EQ(tokenizer.decode(tokenizer.encode(text)), text);
    }
}

TEST(Tokenizer, TinyByteLevelVocabulary) {
    const fs::path folder = fresh_folder("tiny");
    write_text(folder / "vocab.json", tiny_vocab().dump());
    write_text(folder / "merges.txt", kTinyMerges);
    write_text(folder / "model.safetensors", "");  // a file in the folder selects the folder
    const auto tokenizer = tokenizer_for_model((folder / "model.safetensors").string());
    // " ab" → Ġ a b → (Ġ a) b → (Ġa b), although "a b" is also a merge: lower rank first.
    EXPECT_EQ(tokenizer->encode("ab ab b"), (std::vector<int>{256, 258, 32, 'b'}));
    EXPECT_EQ(tokenizer->decode({256, 258, 32, 'b'}), "ab ab b");
    EXPECT_EQ(tokenizer->bos_id(), -1);
    EXPECT_EQ(tokenizer->vocab_size(), 259);
}

// ------------------------------------------------------------------------------------------
// llama2.c tokenizer.bin

void write_llama2c_tokenizer(const fs::path& path, const std::vector<std::string>& pieces) {
    std::ofstream out(path, std::ios::binary);
    std::uint32_t max_length = 0;
    for (const auto& p : pieces)
        max_length = std::max<std::uint32_t>(max_length, p.size());
    out.write(reinterpret_cast<const char*>(&max_length), 4);
    for (std::size_t i = 0; i < pieces.size(); ++i) {
        const float score = -static_cast<float>(i);
        const std::int32_t length = static_cast<std::int32_t>(pieces[i].size());
        out.write(reinterpret_cast<const char*>(&score), 4);
        out.write(reinterpret_cast<const char*>(&length), 4);
        out.write(pieces[i].data(), length);
    }
}

TEST(Tokenizer, Llama2cTokenizerBinAdapter) {
    std::vector<std::string> pieces = {"<unk>", "\n<s>\n", "\n</s>\n"};
    for (int b = 0; b < 256; ++b) {
        char hex[8];
        std::snprintf(hex, sizeof(hex), "<0x%02X>", b);
        pieces.push_back(hex);
    }
    for (const char* p : {" ", "a", "b", " a", "ab", " ab"})
        pieces.push_back(p);  // 259..264
    const fs::path folder = fresh_folder("llama2c");
    write_llama2c_tokenizer(folder / "tok264.bin", pieces);
    // No config.json and no model .bin: the vocabulary size is the number of records.
    const auto tokenizer = tokenizer_for_model(folder.string());
    EXPECT_EQ(tokenizer->name(), "llama2c:" + (folder / "tok264.bin").string());
    EXPECT_EQ(tokenizer->vocab_size(), 265);
    EXPECT_EQ(tokenizer->bos_id(), 1);
    EXPECT_EQ(tokenizer->eos_id(), 2);
    EXPECT_TRUE(tokenizer->encode("").empty());
    // run.c: dummy prefix " " + "ab a!" → " ab" " a" then '!' as byte token 33 + 3.
    const std::vector<int> ids = tokenizer->encode("ab a!");
    EXPECT_EQ(ids, (std::vector<int>{264, 262, 36}));
    EXPECT_EQ(tokenizer->decode(ids), "ab a!");
    // A config.json vocab_size that disagrees with the file is the file's InputError.
    write_text(folder / "config.json", R"({"vocab_size": 512})");
    expect_input_error([&] { tokenizer_for_model(folder.string()); }, {"tok264.bin"});
    EXPECT_EQ(tokenizer_for_model(folder.string(), 265)->vocab_size(), 265);
}

// ------------------------------------------------------------------------------------------
// Folder lookup and malformed input

TEST(Tokenizer, TokenizerForModelPicksByFolderContents) {
    const fs::path shared = shared_folder() / "tokenizers";
    REQUIRE_SHARED_FILE(shared / "llama2" / "tokenizer.model");
    EXPECT_EQ(tokenizer_for_model((shared / "llama2").string())->name(),
              "sentencepiece:" + (shared / "llama2" / "tokenizer.model").string());
    // A file in the folder (it need not be a checkpoint) selects the folder.
    EXPECT_EQ(tokenizer_for_model((shared / "llama2" / "golden.json").string())->name(),
              "sentencepiece:" + (shared / "llama2" / "tokenizer.model").string());
    EXPECT_EQ(tokenizer_for_model((shared / "gpt2").string())->name(),
              "gpt2-bpe:" + (shared / "gpt2" / "vocab.json").string());
}

// Fuzz findings (fuzz_gpt2_vocab_merges, fuzz_hf_config): a JSON number beyond double
// ("5E338" in vocab.json, "1e3591451" in config.json) escaped as nlohmann's out_of_range, an
// internal error; every JSON reader now goes through parse_json_text, which names the file.
// And a SentencePiece piece cut inside its 4-byte score was read before its bounds check.
TEST(Tokenizer, FuzzFindingsAreInputErrorsNamingTheFile) {
    const fs::path folder = fresh_folder("fuzz_findings");
    const std::string vocab = (folder / "vocab.json").string();
    const std::string merges = (folder / "merges.txt").string();
    write_text(folder / "merges.txt", kTinyMerges);
    write_text(folder / "vocab.json", "{\"!\":5E338,\"(\":7}");
    expect_input_error([&] { Gpt2BpeTokenizer(vocab, merges); }, {vocab, "not valid JSON"});
    const std::string json = (folder / "tokenizer.json").string();
    write_text(json, R"({"model": {"type": "BPE", "vocab": {"a": 1e400}, "merges": []}})");
    expect_input_error([&] { Gpt2BpeTokenizer::from_tokenizer_json(json); },
                       {json, "not valid JSON"});
    const std::string config = (folder / "config.json").string();
    write_text(config, R"({"model_type": "gpt2", "layer_norm_epsilon": 1e3591451})");
    expect_input_error([&] { read_hf_config(config); }, {config, "not valid JSON"});

    // ModelProto { pieces = 1 { score = 2 (fixed32) } } with only 2 of the score's 4 bytes.
    const std::string model = (folder / "cut_score.model").string();
    write_text(model, std::string("\x0a\x03\x15\x00\x00", 5));
    expect_input_error([&] { SentencePieceTokenizer tokenizer(model); },
                       {"cut_score.model", "truncated SentencePiece model"});
}

TEST(Tokenizer, MalformedInputsAreInputErrors) {
    const fs::path folder = fresh_folder("bad");
    const std::string vocab = (folder / "vocab.json").string();
    const std::string merges = (folder / "merges.txt").string();
    const std::string json = (folder / "tokenizer.json").string();

    // Nothing there.
    expect_input_error([&] { tokenizer_for_model(folder.string()); },
                       {folder.string(), "no tokenizer"});
    expect_input_error([&] { tokenizer_for_model((folder / "missing").string()); },
                       {"missing", "not found"});
    expect_input_error([&] { SentencePieceTokenizer((folder / "tokenizer.model").string()); },
                       {"tokenizer.model", "not found"});
    expect_input_error([&] { Gpt2BpeTokenizer(vocab, merges); }, {vocab, "not found"});

    // Not a SentencePiece model.
    write_text(folder / "garbage.model", "this is not a protobuf \xFF\xFF\xFF");
    expect_input_error([&] { SentencePieceTokenizer((folder / "garbage.model").string()); },
                       {"garbage.model", "SentencePiece"});

    // Bad vocab.json: not JSON, not an object, a non-integer id.
    write_text(folder / "merges.txt", kTinyMerges);
    write_text(folder / "vocab.json", "{\"a\": 1,");
    expect_input_error([&] { Gpt2BpeTokenizer(vocab, merges); }, {vocab, "JSON"});
    write_text(folder / "vocab.json", "[1, 2]");
    expect_input_error([&] { Gpt2BpeTokenizer(vocab, merges); }, {vocab, "object"});
    nlohmann::json bad_vocab = tiny_vocab();
    bad_vocab["ab"] = "256";
    write_text(folder / "vocab.json", bad_vocab.dump());
    expect_input_error([&] { Gpt2BpeTokenizer(vocab, merges); }, {vocab, "'ab'"});
    // A vocabulary without every byte symbol cannot encode arbitrary text.
    bad_vocab = tiny_vocab();
    bad_vocab.erase("z");
    write_text(folder / "vocab.json", bad_vocab.dump());
    expect_input_error([&] { Gpt2BpeTokenizer(vocab, merges); }, {vocab, "byte 122"});

    // Malformed merges lines.
    write_text(folder / "vocab.json", tiny_vocab().dump());
    write_text(folder / "merges.txt", "#version: 0.2\na b\na b c\n");
    expect_input_error([&] { Gpt2BpeTokenizer(vocab, merges); }, {merges, "line 3"});
    write_text(folder / "merges.txt", "#version: 0.2\nab\n");
    expect_input_error([&] { Gpt2BpeTokenizer(vocab, merges); }, {merges, "line 2"});
    write_text(folder / "merges.txt", "#version: 0.2\nb a\n");  // "ba" is not in the vocab
    expect_input_error([&] { Gpt2BpeTokenizer(vocab, merges); }, {merges, "line 2", "'b a'"});
    write_text(folder / "merges.txt", kTinyMerges);
    EXPECT_NO_THROW(Gpt2BpeTokenizer(vocab, merges));

    // tokenizer.json: without a model, with a non-BPE model, with a bad merge, with a
    // non-ByteLevel pre-tokenizer.
    write_text(json, R"({"version": "1.0", "added_tokens": []})");
    expect_input_error([&] { Gpt2BpeTokenizer::from_tokenizer_json(json); }, {json, "model"});
    const nlohmann::json good = {{"pre_tokenizer", byte_level_pre_tokenizer()},
                                 {"model",
                                  {{"type", "BPE"},
                                   {"vocab", tiny_vocab()},
                                   {"merges", {kSpace + " a", {"a", "b"}, kSpace + "a b"}}}}};
    EXPECT_NO_THROW(write_text(json, good.dump()); Gpt2BpeTokenizer::from_tokenizer_json(json));
    nlohmann::json bad = good;
    bad["model"]["type"] = "WordPiece";
    write_text(json, bad.dump());
    expect_input_error([&] { Gpt2BpeTokenizer::from_tokenizer_json(json); }, {json, "BPE"});
    bad = good;
    bad["model"]["merges"][1] = "a b c";
    write_text(json, bad.dump());
    expect_input_error([&] { Gpt2BpeTokenizer::from_tokenizer_json(json); }, {json, "merge 1"});
    bad["model"]["merges"][1] = {"a"};
    write_text(json, bad.dump());
    expect_input_error([&] { Gpt2BpeTokenizer::from_tokenizer_json(json); }, {json, "merge 1"});
    bad = good;
    bad["pre_tokenizer"] = {{"type", "Metaspace"}};
    write_text(json, bad.dump());
    expect_input_error([&] { Gpt2BpeTokenizer::from_tokenizer_json(json); }, {json, "ByteLevel"});
    write_text(json, "not json");
    expect_input_error([&] { tokenizer_for_model(folder.string()); }, {json, "JSON"});
}

}  // namespace
