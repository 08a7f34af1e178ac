// `attngeo capture` / `attngeo generate` end to end: the written safetensors match the golden
// tensors, and bad input exits 2 with one line naming the file or flag, writing nothing.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>

#include "common/safetensors.hpp"
#include "tests/support/shared_data.hpp"
#include "tests/support/test_files.hpp"

namespace fs = std::filesystem;
using namespace attngeo;

namespace {

using attngeo::test_support::shared_folder;
using attngeo::test_support::shared_required;

fs::path scratch() {
    return attngeo::test_support::scratch_folder("capture");
}

using CliRun = attngeo::test_support::CliResult;

CliRun run(const std::string& args) {
    return attngeo::test_support::run_program(ATTNGEO_EXE, args, scratch());
}

std::vector<float> floats(const HostTensor& h) {
    std::vector<float> v(h.numel());
    std::memcpy(v.data(), h.data, h.bytes);
    return v;
}

double max_diff(const HostTensor& a, const HostTensor& b) {
    EXPECT_EQ(a.shape, b.shape) << a.name;
    if (a.shape != b.shape) return 1e300;
    const auto x = floats(a), y = floats(b);
    double m = 0;
    for (std::size_t i = 0; i < x.size(); ++i)
        m = std::max(m, std::abs(double(x[i]) - y[i]));
    return m;
}

}  // namespace

namespace {

// Writes the golden input ids of `golden` as a token file (one line a sequence).
fs::path golden_ids(const SafetensorsFile& golden, const std::string& name) {
    const HostTensor ids = golden.get("input_ids");
    std::vector<std::int64_t> id(ids.numel());
    std::memcpy(id.data(), ids.data, ids.bytes);
    const fs::path path = scratch() / name;
    std::ofstream tokens(path);
    for (std::int64_t b = 0; b < ids.shape[0]; ++b) {
        for (std::int64_t t = 0; t < ids.shape[1]; ++t)
            tokens << (t ? " " : "") << id[b * ids.shape[1] + t];
        tokens << "\n";
    }
    return path;
}

// `attngeo capture` on the golden folder `name` writes its logits, attentions and values
// (all query rows), and [B, H, 1, T] rows with the default --queries last.
// `values_bar`: the golden test's bar for the family's values (test_golden.cpp).
void expect_capture_matches_golden(const std::string& name, double values_bar) {
    const fs::path model = shared_folder() / "golden" / name;
    if (!fs::exists(model)) {
        if (shared_required()) FAIL() << "shared data missing";
        GTEST_SKIP() << "shared data not found";
    }
    const SafetensorsFile golden((model / "golden.safetensors").string());
    const fs::path ids = golden_ids(golden, name + "_ids.txt");
    const fs::path out = scratch() / (name + "_capture.safetensors");
    const CliRun r = run("capture --model " + model.string() + " --tokens " + ids.string() +
                         " --out " + out.string() + " --queries all");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const SafetensorsFile captured(out.string());
    double attention = 0, values = 0;
    const double logits = max_diff(captured.get("logits"), golden.get("logits"));
    for (int l = 0; l < 3; ++l) {
        attention = std::max(attention, max_diff(captured.get("attentions." + std::to_string(l)),
                                                 golden.get("attentions." + std::to_string(l))));
        values = std::max(values, max_diff(captured.get("values." + std::to_string(l)),
                                           golden.get("values." + std::to_string(l))));
    }
    std::cout << name << " capture: max |diff| logits " << logits << ", attentions " << attention
              << ", values " << values << "\n";
    EXPECT_LE(logits, 1e-4);
    EXPECT_LE(attention, 1e-5);
    EXPECT_LE(values, values_bar);
    const fs::path last = scratch() / (name + "_last.safetensors");
    ASSERT_EQ(run("capture --model " + model.string() + " --tokens " + ids.string() + " --out " +
                  last.string())
                  .exit_code,
              0);
    const auto shape = golden.get("attentions.0").shape;
    EXPECT_EQ(SafetensorsFile(last.string()).get("attentions.0").shape,
              (std::vector<std::int64_t>{shape[0], shape[1], 1, shape[3]}));
}

}  // namespace

TEST(CaptureCli, WritesTheGoldenTensors) {
    expect_capture_matches_golden("gpt-neox", 1e-5);
}

// Values of the llama block's goldens differ from an exact forward by up to 1.3e-5 (|v| ≈ 8;
// test_golden.cpp's header): the golden test's bar, 2e-5.
TEST(CaptureCli, WritesTheQwen2GoldenTensors) {
    expect_capture_matches_golden("qwen2", 2e-5);
}

// `attngeo extract` takes a qwen2 folder (its config's BOS id; token ids, as the golden folder
// has no tokenizer) and writes the extract folder, naming the family in its manifest.
TEST(CaptureCli, ExtractReadsAQwen2Folder) {
    const fs::path model = shared_folder() / "golden" / "qwen2";
    REQUIRE_SHARED_FILE(model);
    std::ofstream(scratch() / "qwen2_docs.txt")
        << "5 6 7 8 9 10 11 12 13\n7 8 9 10 11 12 13 14 15 16\n";
    const fs::path out = scratch() / "qwen2_extract";
    fs::remove_all(out);
    const CliRun r = run("extract --model " + model.string() + " --tokens " +
                         (scratch() / "qwen2_docs.txt").string() +
                         " --context 8 --max-lag 4 --quiet --out " + out.string());
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(fs::exists(out / "heads.csv"));
    const nlohmann::json manifest =
        nlohmann::json::parse(attngeo::test_support::slurp(out / "manifest.json"));
    EXPECT_EQ(manifest["model"]["family"], "qwen2") << manifest.dump();
}

TEST(CaptureCli, BadInputExitsTwoAndWritesNothing) {
    const fs::path model = shared_folder() / "golden" / "gpt2";
    if (!fs::exists(model)) GTEST_SKIP() << "shared data not found";
    const fs::path out = scratch() / "never.safetensors";
    std::ofstream(scratch() / "ragged.txt") << "1 2 3\n4 5\n";
    std::ofstream(scratch() / "big.txt") << "1 2 999\n";
    std::ofstream(scratch() / "words.txt") << "1 two 3\n";
    std::ofstream(scratch() / "ok.txt") << "1 2 3\n";
    {
        std::ofstream long_ids(scratch() / "long.txt");  // 100 ids; the model has 64 positions
        for (int i = 0; i < 100; ++i)
            long_ids << (i ? " " : "") << 1;
        long_ids << "\n";
    }
    {
        // 100,000 ids: a rotary model takes any length, and --queries all would write T^2
        // floats per head and layer (480 GB here), refused before the forward.
        std::ofstream very_long(scratch() / "very_long.txt");
        for (int i = 0; i < 100000; ++i)
            very_long << (i ? " " : "") << 1 + i % 200;
        very_long << "\n";
    }
    const fs::path rotary = shared_folder() / "golden" / "gpt-neox";
    std::ofstream(scratch() / "pytorch_model.bin") << "\x80\x02 pickle";
    const std::string common = " --out " + out.string();
    struct Case {
        std::string args, needle;
    } cases[] = {
        {"capture --model " + model.string() + " --tokens " + (scratch() / "ragged.txt").string() +
             common,
         "line 2"},
        {"capture --model " + model.string() + " --tokens " + (scratch() / "big.txt").string() +
             common,
         "vocabulary"},
        {"capture --model " + model.string() + " --tokens " + (scratch() / "words.txt").string() +
             common,
         "'two'"},
        {"capture --model " + model.string() + " --tokens " + (scratch() / "long.txt").string() +
             common,
         "--tokens '" + (scratch() / "long.txt").string() +
             "': sequence length 100 exceeds the model's 64 positions"},
        {"capture --model /nonexistent/model --tokens " + (scratch() / "ok.txt").string() + common,
         "/nonexistent/model"},
        {"capture --model " + (scratch() / "pytorch_model.bin").string() + " --tokens " +
             (scratch() / "ok.txt").string() + common,
         "pickle"},
        {"capture --model " + model.string() + " --tokens " + (scratch() / "ok.txt").string() +
             common + " --device cuda:7",  // no machine has eight GPUs here
         "--device"},
        {"capture --model " + model.string() + " --tokens " + (scratch() / "ok.txt").string() +
             common + " --queries some",
         "--queries"},
        {"capture --model " + rotary.string() + " --tokens " +
             (scratch() / "very_long.txt").string() + common + " --queries all",
         "--tokens '" + (scratch() / "very_long.txt").string() +
             "': 1 sequence of 100000 tokens with --queries all make a 480"},
        {"capture --model " + model.string() + " --tokens " + (scratch() / "ok.txt").string() +
             common + " --queries all --max-output-gb 1e-6",
         "more than --max-output-gb 1e-06"},
        {"capture --model " + model.string() + " --tokens " + (scratch() / "ok.txt").string() +
             common + " --max-output-gb 0",
         "--max-output-gb"},
    };
    for (const auto& c : cases) {
        const CliRun r = run(c.args);
        EXPECT_EQ(r.exit_code, 2) << c.args << "\n" << r.err;
        EXPECT_NE(r.err.find(c.needle), std::string::npos) << c.args << "\n" << r.err;
        EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
        EXPECT_FALSE(fs::exists(out)) << c.args;
    }
}

// float16 on the CPU depends on the libtorch: 1.13 has no float16 matmul there, and capture
// refuses it in one line at load (not a backtrace mid-forward); 2.x has one, and capture runs
// with logits near float32's.
TEST(CaptureCli, Float16OnTheCpuRunsOrIsRefusedInOneLineByWhatThisLibtorchHas) {
    const fs::path model = test_support::shared_folder() / "golden" / "gpt2";
    REQUIRE_SHARED_FILE(model / "golden.safetensors");
    std::ofstream(scratch() / "f16.txt") << "1 2 3 4 5 6 7 8\n";
    bool cpu_has_float16_matmul = true;
    try {
        const auto half = torch::TensorOptions().dtype(torch::kFloat16);
        (void)torch::mm(torch::ones({2, 4}, half), torch::ones({4, 3}, half));
    } catch (const c10::Error&) {
        cpu_has_float16_matmul = false;
    }
    const auto capture = [&](const std::string& dtype, const fs::path& out) {
        fs::remove(out);
        return run("capture --model " + model.string() + " --tokens " +
                   (scratch() / "f16.txt").string() + " --dtype " + dtype + " --out " +
                   out.string());
    };
    const fs::path half_out = scratch() / "f16.safetensors";
    const CliRun half = capture("float16", half_out);
    std::cout << "[ info     ] libtorch " << TORCH_VERSION << ": float16 matmul on the CPU "
              << (cpu_has_float16_matmul ? "present" : "absent") << "\n";
    if (!cpu_has_float16_matmul) {
        EXPECT_EQ(half.exit_code, 2) << half.err;
        EXPECT_NE(half.err.find("--dtype float16 on --device cpu"), std::string::npos) << half.err;
        EXPECT_EQ(std::count(half.err.begin(), half.err.end(), '\n'), 1) << half.err;
        EXPECT_FALSE(fs::exists(half_out));
        return;
    }
    ASSERT_EQ(half.exit_code, 0) << half.err;
    const fs::path full_out = scratch() / "f32.safetensors";
    ASSERT_EQ(capture("float32", full_out).exit_code, 0);
    const SafetensorsFile half_file(half_out.string()), full_file(full_out.string());
    const double largest = max_diff(half_file.get("logits"), full_file.get("logits"));
    std::cout << "[ info     ] float16 against float32 logits: largest difference " << largest
              << "\n";
    EXPECT_LT(largest, 0.05);
}

// config.json values of the wrong JSON type, or integers out of range, are bad input naming
// the file.
TEST(CaptureCli, ConfigValuesOfTheWrongTypeNameTheFile) {
    const fs::path golden = shared_folder() / "golden" / "llama-gqa";
    if (!fs::exists(golden)) GTEST_SKIP() << "shared data not found";
    const fs::path folder = scratch() / "bad_config";
    std::ofstream(scratch() / "ids.txt") << "1 2 3\n";
    const std::string config = attngeo::test_support::slurp(golden / "config.json");
    const std::size_t brace = config.rfind('}');
    ASSERT_NE(brace, std::string::npos);
    for (const char* extra :
         {R"("rope_scaling": 0)", R"("rope_scaling": [1, 2])", R"("rope_scaling": "linear")",
          R"("rope_scaling": {"type": "linear", "factor": "two"})", R"("num_hidden_layers": "2")",
          R"("rope_theta": "big")",
          // Floats in integer fields (fuzz finding: 1.4e59 reached an int conversion, UBSan).
          R"("num_hidden_layers": 1.44444e59)", R"("intermediate_size": 2.5)"}) {
        fs::remove_all(folder);
        fs::create_directories(folder);
        fs::create_symlink(fs::absolute(golden / "model.safetensors"),
                           folder / "model.safetensors");
        nlohmann::json j = nlohmann::json::parse(config);
        const nlohmann::json patch = nlohmann::json::parse(std::string("{") + extra + "}");
        for (const auto& [key, value] : patch.items())
            j[key] = value;
        std::ofstream(folder / "config.json") << j.dump(2);
        const CliRun r = run("capture --model " + folder.string() + " --tokens " +
                             (scratch() / "ids.txt").string() + " --out " +
                             (scratch() / "never.safetensors").string());
        EXPECT_EQ(r.exit_code, 2) << extra << "\n" << r.err;
        EXPECT_NE(r.err.find((folder / "config.json").string()), std::string::npos) << extra << "\n"
                                                                                    << r.err;
        EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    }
}

namespace {

// GPT-2's bytes_to_unicode as UTF-8: the printable Latin-1 bytes stand for themselves, the
// others, in byte order, for the code points from 256 on.
std::string byte_token(int b) {
    const auto printable = [](int x) {
        return (x >= '!' && x <= '~') || (x >= 0xA1 && x <= 0xAC) || (x >= 0xAE && x <= 0xFF);
    };
    int code = b;
    if (!printable(b)) {
        code = 256;
        for (int x = 0; x < b; ++x)
            code += !printable(x);
    }
    if (code < 0x80) return std::string(1, static_cast<char>(code));
    return {static_cast<char>(0xC0 | (code >> 6)), static_cast<char>(0x80 | (code & 0x3F))};
}

// The qwen2 golden model with a tokenizer.json of the 256 byte tokens (no merges) and the
// given pre-tokenizer beside it.
fs::path qwen2_with_tokenizer(const nlohmann::json& pre_tokenizer, const std::string& name) {
    const fs::path golden = shared_folder() / "golden" / "qwen2";
    const fs::path folder = scratch() / name;
    fs::remove_all(folder);
    fs::create_directories(folder);
    for (const char* file : {"model.safetensors", "config.json"})
        fs::create_symlink(fs::absolute(golden / file), folder / file);
    nlohmann::json vocab = nlohmann::json::object();
    for (int b = 0; b < 256; ++b)
        vocab[byte_token(b)] = b;
    const nlohmann::json tokenizer = {
        {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", nlohmann::json::array()}}},
        {"pre_tokenizer", pre_tokenizer}};
    std::ofstream(folder / "tokenizer.json") << tokenizer.dump();
    return folder;
}

}  // namespace

// A qwen2 folder's tokenizer.json is used when the GPT-2 byte-level reader takes it; Qwen2's
// own (a Split with its regex before a ByteLevel without one) is refused in one line that
// points at --tokens.
TEST(CaptureCli, Qwen2TokenizerJsonWhereTheGpt2ReaderTakesItElseTokens) {
    REQUIRE_SHARED_FILE(shared_folder() / "golden" / "qwen2");
    std::ofstream(scratch() / "qwen2_corpus.txt") << "Once upon a time there was a model.\n\n"
                                                     "It read bytes, one token each.\n";
    const std::string common = " --corpus " + (scratch() / "qwen2_corpus.txt").string() +
                               " --context 16 --max-lag 4 --quiet --out ";
    const fs::path byte_level = qwen2_with_tokenizer(
        {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}}, "qwen2_bytes");
    const fs::path out = scratch() / "qwen2_corpus_extract";
    fs::remove_all(out);
    const CliRun ok = run("extract --model " + byte_level.string() + common + out.string());
    ASSERT_EQ(ok.exit_code, 0) << ok.err;
    const nlohmann::json manifest =
        nlohmann::json::parse(attngeo::test_support::slurp(out / "manifest.json"));
    EXPECT_EQ(manifest["tokenizer"].get<std::string>().rfind("gpt2-bpe:", 0), 0u)
        << manifest["tokenizer"];

    const nlohmann::json qwen_style = {
        {"type", "Sequence"},
        {"pretokenizers",
         {{{"type", "Split"}, {"pattern", {{"Regex", "\\p{N}"}}}, {"behavior", "Isolated"}},
          {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}}}}};
    const fs::path refused = qwen2_with_tokenizer(qwen_style, "qwen2_split");
    const fs::path never = scratch() / "qwen2_never";
    const CliRun r = run("extract --model " + refused.string() + common + never.string());
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find((refused / "tokenizer.json").string()), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("--tokens"), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_FALSE(fs::exists(never));
}

// config.json values outside their family's range (rotary_pct 1e12 reached libtorch once, exit
// 1) are bad input: exit 2, one line naming the file and the key, nothing written.
TEST(CaptureCli, ConfigValuesOutOfRangeNameTheFileAndKey) {
    struct Case {
        const char* golden;
        const char* key;
        nlohmann::json value;
        const char* needle;
    } cases[] = {
        {"gpt-neox", "rotary_pct", 1e12, "rotary_pct = 1e+12, expected a finite 0 <= rotary_pct"},
        {"llama-gqa", "num_attention_heads", -4, "num_attention_heads = -4"},
        {"llama-gqa", "hidden_size", 65, "head_dim = hidden_size / num_attention_heads = 16.25"},
        {"qwen2", "rope_theta", 0, "rope_theta = 0"}};
    std::ofstream(scratch() / "range_ids.txt") << "1 2 3 4 5 6 7 8 9\n";
    for (const Case& c : cases) {
        const fs::path golden = shared_folder() / "golden" / c.golden;
        REQUIRE_SHARED_FILE(golden);
        const fs::path folder = scratch() / "out_of_range";
        fs::remove_all(folder);
        fs::create_directories(folder);
        fs::create_symlink(fs::absolute(golden / "model.safetensors"),
                           folder / "model.safetensors");
        nlohmann::json j =
            nlohmann::json::parse(attngeo::test_support::slurp(golden / "config.json"));
        j[c.key] = c.value;
        std::ofstream(folder / "config.json") << j.dump(2);
        const std::string ids = (scratch() / "range_ids.txt").string();
        for (const std::string& command :
             {"capture --model " + folder.string() + " --tokens " + ids + " --out " +
                  (scratch() / "never.safetensors").string(),
              "extract --model " + folder.string() + " --tokens " + ids +
                  " --context 8 --quiet --out " + (scratch() / "never_extract").string()}) {
            const CliRun r = run(command);
            EXPECT_EQ(r.exit_code, 2) << command << "\n" << r.err;
            EXPECT_NE(r.err.find((folder / "config.json").string()), std::string::npos) << r.err;
            EXPECT_NE(r.err.find(c.needle), std::string::npos) << r.err;
            EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
        }
        EXPECT_FALSE(fs::exists(scratch() / "never.safetensors"));
        EXPECT_FALSE(fs::exists(scratch() / "never_extract"));
    }
}

TEST(GenerateCli, PrintsLlama2cText) {
    const fs::path model = shared_folder() / "models" / "stories260K" / "stories260K.bin";
    if (!fs::exists(model)) GTEST_SKIP() << "shared data not found";
    const CliRun r =
        run("generate --model " + model.string() + " --prompt 'Once upon a time' -n 64");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out,
              "Once upon a time, there was a little girl named Lily. She loved to play outside in "
              "the park. One day, she "
              "saw a big, red ball. She wanted to play with it, but it was too high.\nLily\n");
}

namespace {

// scratch()/name: a golden model folder's weights (linked) with its config.json edited by `edit`.
fs::path golden_with_config(const fs::path& golden, const std::string& name,
                            const std::function<void(nlohmann::json&)>& edit) {
    const fs::path folder = scratch() / name;
    fs::remove_all(folder);
    fs::create_directories(folder);
    fs::create_symlink(fs::absolute(golden / "model.safetensors"), folder / "model.safetensors");
    nlohmann::json config =
        nlohmann::json::parse(attngeo::test_support::slurp(golden / "config.json"));
    edit(config);
    std::ofstream(folder / "config.json") << config.dump(2);
    return folder;
}

// A copy of a golden model folder whose config.json has no bos_token_id.
fs::path model_without_bos(const fs::path& golden) {
    return golden_with_config(golden, "no_bos_model",
                              [](nlohmann::json& config) { config.erase("bos_token_id"); });
}

// stories260K.gguf with its BOS and EOS keys renamed in place (same length, so every offset
// stays valid): a GGUF that states no special ids.
fs::path gguf_without_bos(const fs::path& gguf) {
    std::string bytes = attngeo::test_support::slurp(gguf);
    for (const std::string key : {"tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id"}) {
        const std::size_t at = bytes.find(key);
        EXPECT_NE(at, std::string::npos) << key;
        if (at != std::string::npos) bytes.replace(at + key.size() - 2, 2, "XX");
    }
    const fs::path path = scratch() / "no_bos.gguf";
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
}

// extract on `model` (no BOS id) refuses --bos auto|yes with one line naming --bos and writes
// nothing; with --bos no it equals the same run on `with_bos`, the model that has the id.
// Folders and the token file are named with `tag`.
void expect_bos_refused_unless_no(const fs::path& model, const fs::path& with_bos,
                                  const std::string& tag) {
    std::ofstream(scratch() / (tag + "docs.txt"))
        << "1 5 6 7 8 9 10 11 12\n7 8 9 10 11 12 13 14 15 16\n";
    const std::string common = " --tokens " + (scratch() / (tag + "docs.txt")).string() +
                               " --context 8 --max-lag 4 --quiet";
    for (const char* bos : {"auto", "yes"}) {
        const fs::path out = scratch() / (tag + "no_bos_" + bos);
        const CliRun r = run("extract --model " + model.string() + common + " --bos " + bos +
                             " --out " + out.string());
        EXPECT_EQ(r.exit_code, 2) << r.err;
        EXPECT_NE(r.err.find("--bos " + std::string(bos)), std::string::npos) << r.err;
        EXPECT_NE(r.err.find("no BOS token id"), std::string::npos) << r.err;
        EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
        EXPECT_FALSE(fs::exists(out)) << bos;
    }
    const fs::path without = scratch() / (tag + "no_bos_no"),
                   with = scratch() / (tag + "with_bos_no");
    ASSERT_EQ(
        run("extract --model " + model.string() + common + " --bos no --out " + without.string())
            .exit_code,
        0);
    ASSERT_EQ(
        run("extract --model " + with_bos.string() + common + " --bos no --out " + with.string())
            .exit_code,
        0);
    for (const char* file : {"heads.csv", "pr.csv", "by_position.csv", "per_doc.safetensors"})
        EXPECT_EQ(attngeo::test_support::slurp(without / file),
                  attngeo::test_support::slurp(with / file))
            << file;
}

}  // namespace

// A model without a BOS id never gets token 1 as its BOS: extract refuses a window that needs
// one (exit 2, one line naming --bos), and with --bos no it equals the same run on the model
// with a BOS id (which --bos no does not read); generate runs every step (no BOS to stop at).
TEST(CaptureCli, ModelWithoutBosIdIsRefusedUnlessBosNo) {
    const fs::path golden = shared_folder() / "golden" / "llama-gqa";
    if (!fs::exists(golden)) GTEST_SKIP() << "shared data not found";
    const fs::path model = model_without_bos(golden);
    expect_bos_refused_unless_no(model, golden, "");
    std::ofstream(scratch() / "prompt.txt") << "5 6 7\n";
    const CliRun generated = run("generate --model " + model.string() + " --tokens " +
                                 (scratch() / "prompt.txt").string() + " -n 12");
    ASSERT_EQ(generated.exit_code, 0) << generated.err;
    // Without a tokenizer each id prints as " <id>", one per step: none stops the run early.
    EXPECT_EQ(std::count(generated.out.begin(), generated.out.end(), ' '), 12) << generated.out;
}

// A GPT-2 folder as transformers 4.40 writes GPT2Config(vocab_size=256, …): bos_token_id and
// eos_token_id keep their default 50256. capture runs it (the logits equal those of the golden
// folder, whose ids are 1 and 2 and which the forward never reads); extract refuses --bos
// auto|yes naming the flag and the key, and --bos no equals the golden folder's run.
TEST(CaptureCli, Gpt2ConfigWithDefaultSpecialIdsLoads) {
    const fs::path golden = shared_folder() / "golden" / "gpt2";
    if (!fs::exists(golden)) GTEST_SKIP() << "shared data not found";
    const fs::path folder =
        golden_with_config(golden, "gpt2_default_ids", [](nlohmann::json& config) {
            config["bos_token_id"] = 50256;
            config["eos_token_id"] = 50256;
        });
    std::ofstream(scratch() / "gpt2_ids.txt") << "1 5 6 7\n";
    const std::string tokens = " --tokens " + (scratch() / "gpt2_ids.txt").string();
    const fs::path ours = scratch() / "gpt2_default_ids.safetensors",
                   theirs = scratch() / "gpt2_golden_ids.safetensors";
    const CliRun r = run("capture --model " + folder.string() + tokens + " --out " + ours.string());
    ASSERT_EQ(r.exit_code, 0) << r.err;
    ASSERT_EQ(
        run("capture --model " + golden.string() + tokens + " --out " + theirs.string()).exit_code,
        0);
    // The tensors byte for byte (the header's metadata names each model folder).
    const auto tensors = [](const fs::path& file) {
        const std::string bytes = attngeo::test_support::slurp(file);
        std::uint64_t header = 0;
        std::memcpy(&header, bytes.data(), sizeof header);
        return bytes.substr(8 + header);
    };
    EXPECT_EQ(tensors(ours), tensors(theirs));
    std::ofstream(scratch() / "gpt2_docs.txt") << "5 6 7 8 9 10 11 12 13\n";
    const CliRun refused = run("extract --model " + folder.string() + " --tokens " +
                               (scratch() / "gpt2_docs.txt").string() +
                               " --context 8 --max-lag 4 --quiet --bos yes --out " +
                               (scratch() / "gpt2_never").string());
    EXPECT_EQ(refused.exit_code, 2) << refused.err;
    for (const std::string needle : {"--bos yes", "bos_token_id = 50256", "config.json"})
        EXPECT_NE(refused.err.find(needle), std::string::npos) << needle << "\n" << refused.err;
    EXPECT_EQ(std::count(refused.err.begin(), refused.err.end(), '\n'), 1) << refused.err;
    expect_bos_refused_unless_no(folder, golden, "gpt2_");
}

// The same for a GGUF without tokenizer.ggml.bos_token_id: extract refuses --bos auto|yes
// naming --bos, generate refuses a tokenizer prompt (which starts with BOS), and --bos no equals
// the run on the file that has the key.
TEST(CaptureCli, GgufWithoutBosIdIsRefusedUnlessBosNo) {
    const fs::path folder = shared_folder() / "models" / "stories260K";
    REQUIRE_SHARED_FILE(folder / "stories260K.gguf");
    const fs::path model = gguf_without_bos(folder / "stories260K.gguf");
    expect_bos_refused_unless_no(model, folder / "stories260K.gguf", "gguf_");
    if (fs::exists(folder / "tok512.bin")) {
        const CliRun prompted = run("generate --model " + model.string() + " --tokenizer " +
                                    (folder / "tok512.bin").string() + " --prompt Once -n 4");
        EXPECT_EQ(prompted.exit_code, 2) << prompted.err;
        EXPECT_NE(prompted.err.find("--prompt"), std::string::npos) << prompted.err;
        EXPECT_NE(prompted.err.find("no BOS token id"), std::string::npos) << prompted.err;
    }
}
