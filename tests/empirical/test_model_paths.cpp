// Model paths and flags of extract and generate taken as the user typed them: a model given as a
// bare file name in the current folder finds the tokenizer beside it, a bad GGUF is named with
// its path quoted, and a negative --docs is refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "common/csv.hpp"
#include "common/errors.hpp"
#include "empirical/model/checkpoint.hpp"
#include "tests/support/shared_data.hpp"
#include "tests/support/test_files.hpp"

namespace fs = std::filesystem;
using attngeo::test_support::shared_folder;

namespace {

fs::path scratch() {
    return attngeo::test_support::scratch_folder("model_paths");
}

fs::path model_path() {
    return shared_folder() / "models" / "stories260K" / "stories260K.bin";
}

fs::path corpus_path() {
    return fs::path(ATTNGEO_SOURCE_DIR) / "examples" / "stories260K_corpus.txt";
}

// attngeo run with `folder` as its working directory.
attngeo::test_support::CliResult run_in(const fs::path& folder, const std::string& args) {
    return attngeo::test_support::run_program("cd '" + folder.string() + "' && " ATTNGEO_EXE, args,
                                              scratch());
}

}  // namespace

// `--model stories260K.bin` from the model's folder: the sibling tokenizer is looked up in "."
// (it was looked up in "", and the run failed with `'': no tokenizer found`).
TEST(ModelPaths, BareModelFileNameFindsItsTokenizer) {
    REQUIRE_SHARED_FILE(model_path());
    const fs::path folder = scratch() / "cwd";
    fs::remove_all(folder);
    fs::create_directories(folder);
    for (const char* name : {"stories260K.bin", "tok512.bin"})
        fs::create_symlink(model_path().parent_path() / name, folder / name);
    const auto generated =
        run_in(folder, "generate --model stories260K.bin --prompt 'Once upon a time' -n 16");
    ASSERT_EQ(generated.exit_code, 0) << generated.err;
    EXPECT_EQ(generated.out.rfind("Once upon a time", 0), 0u) << generated.out;
    const auto extracted =
        run_in(folder, "extract --model stories260K.bin --corpus " + corpus_path().string() +
                           " --docs 2 --context 32 --max-lag 8 --quiet --out out");
    ASSERT_EQ(extracted.exit_code, 0) << extracted.err;
    EXPECT_TRUE(fs::is_regular_file(folder / "out" / "heads.csv"));
}

// --docs counts documents (0 = all): a negative count is one line naming the flag, exit 2.
TEST(ModelPaths, NegativeDocsIsRefused) {
    REQUIRE_SHARED_FILE(model_path());
    const fs::path out = scratch() / "negative_docs";
    const auto r =
        run_in(scratch(), "extract --model " + model_path().string() + " --corpus " +
                              corpus_path().string() + " --docs -3 --out " + out.string());
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_NE(r.err.find("--docs: -3, expected >= 0"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(out));
}

// A GGUF error names the file quoted, as every other reader does ('PATH': ...).
TEST(ModelPaths, GgufErrorsQuoteThePath) {
    const fs::path bad = scratch() / "not gguf.gguf";
    std::ofstream(bad, std::ios::binary) << "GGUX and then some bytes";
    const fs::path ids = scratch() / "ids.txt";
    std::ofstream(ids) << "1 2 3\n";
    const auto r =
        run_in(scratch(), "extract --model '" + bad.string() + "' --tokens " + ids.string() +
                              " --context 2 --out " + (scratch() / "gguf_out").string());
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("'" + bad.string() + "': not a GGUF file"), std::string::npos) << r.err;
}

namespace {

// A legacy llama2.c file of the given header with zero weights, sized as run.c reads it:
// embedding, per-layer norms and projections, final norm, the legacy freq_cis block (seq_len ·
// head_size) and, with vocab < 0, an unshared classifier.
void write_llama2c(const fs::path& path, int dim, int hidden, int layers, int heads, int kv_heads,
                   int vocab, int seq_len) {
    const std::int64_t V = std::abs(vocab), head = dim / heads, kv_dim = kv_heads * head;
    const std::int64_t floats =
        V * dim +
        layers * (dim + dim * dim + 2 * dim * kv_dim + dim * dim + dim + 3 * dim * hidden) + dim +
        seq_len * head + (vocab < 0 ? V * dim : 0);
    std::ofstream out(path, std::ios::binary);
    const std::int32_t header[7] = {dim, hidden, layers, heads, kv_heads, vocab, seq_len};
    out.write(reinterpret_cast<const char*>(header), sizeof header);
    const std::vector<float> zeros(static_cast<std::size_t>(floats), 0.0f);
    out.write(reinterpret_cast<const char*>(zeros.data()),
              static_cast<std::streamsize>(zeros.size() * sizeof(float)));
}

std::string refusal(const fs::path& file) {
    try {
        (void)attngeo::empirical::checkpoint_format(file.string());
        return "";
    } catch (const attngeo::InputError& e) {
        return e.what();
    }
}

}  // namespace

// The header decides what a file is: dim = 128 starts a llama2.c file with 0x80 like a pickle
// (tinysink.bin was refused as one); real pickles of every torch.save protocol and zip archives
// with data.pkl are refused whatever their extension says.
TEST(CheckpointSniffing, Llama2cHeadersStartingWith0x80AreLlama2cAndPicklesAreRefused) {
    using attngeo::empirical::CheckpointFormat;
    const fs::path dim128 = scratch() / "dim128.bin", dim384 = scratch() / "dim384.bin";
    write_llama2c(dim128, 128, 64, 1, 4, 4, 32, 8);
    write_llama2c(dim384, 384, 32, 1, 6, 2, -16, 4);
    for (const fs::path& file : {dim128, dim384}) {
        std::ifstream in(file, std::ios::binary);
        EXPECT_EQ(in.get(), 0x80) << file;
        EXPECT_EQ(attngeo::empirical::checkpoint_format(file.string()), CheckpointFormat::llama2c)
            << file;
    }
    for (int protocol = 2; protocol <= 5; ++protocol) {
        const fs::path pickle = scratch() / ("pytorch_model_p" + std::to_string(protocol) + ".bin");
        std::ofstream(pickle, std::ios::binary)
            << '\x80' << static_cast<char>(protocol) << "}q\x00(X\x06\x00\x00\x00weight";
        EXPECT_NE(refusal(pickle).find("pickle"), std::string::npos) << protocol;
    }
    const fs::path zip = scratch() / "model_zip.bin";
    std::ofstream(zip, std::ios::binary)
        << "PK\x03\x04" << std::string(26, '\0') << "archive/data.pkl" << std::string(64, '\0');
    EXPECT_NE(refusal(zip).find("pickle"), std::string::npos);
    // A .bin whose header does not add up to its length is no pickle: the llama2.c reader
    // names what is wrong with it.
    const fs::path broken = scratch() / "broken.bin";
    write_llama2c(broken, 128, 64, 1, 4, 4, 32, 8);
    fs::resize_file(broken, fs::file_size(broken) - 4);
    EXPECT_EQ(attngeo::empirical::checkpoint_format(broken.string()), CheckpointFormat::llama2c);
}

TEST(CheckpointSniffing, TinysinkBinGeneratesText) {
    const fs::path model = shared_folder() / "models" / "tinysink" / "tinysink.bin";
    REQUIRE_SHARED_FILE(model);
    const auto r = run_in(scratch(), "generate --model " + model.string() + " -n 48");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_GT(r.out.size(), 40u) << r.out;
}

// tinysink as a llama2.c file (the run.c engine) and as a Hugging Face folder (libtorch) on the
// same token windows: the per-head statistics agree within float32, the sink the model is known
// for (layer 0 putting most of its attention on BOS) shows in both, and the .bin also runs from
// the text corpus through its own tokenizer.
TEST(CheckpointSniffing, TinysinkBinAndHfFolderGiveTheSameStatistics) {
    const fs::path folder = shared_folder() / "models" / "tinysink";
    REQUIRE_SHARED_FILE(folder / "tinysink.bin");
    REQUIRE_SHARED_FILE(folder / "hf" / "model.safetensors");
    const fs::path bin_out = scratch() / "tinysink_bin", hf_out = scratch() / "tinysink_hf",
                   corpus_out = scratch() / "tinysink_corpus";
    for (const auto& dir : {bin_out, hf_out, corpus_out})
        fs::remove_all(dir);
    const std::string common = " --tokens " + (folder / "fortunes_tokens.txt").string() +
                               " --bos no --context 128 --docs 6 --N pow2 --quiet --out ";
    const auto bin = run_in(scratch(), "extract --model " + (folder / "tinysink.bin").string() +
                                           common + bin_out.string());
    ASSERT_EQ(bin.exit_code, 0) << bin.err;
    const auto hf =
        run_in(scratch(), "extract --model " + (folder / "hf").string() + common + hf_out.string());
    ASSERT_EQ(hf.exit_code, 0) << hf.err;
    const auto a = attngeo::read_csv_table((bin_out / "heads.csv").string());
    const auto b = attngeo::read_csv_table((hf_out / "heads.csv").string());
    ASSERT_EQ(a.rows.size(), b.rows.size());
    double worst = 0, sink = 0;
    for (std::size_t i = 0; i < a.rows.size(); ++i) {
        for (const char* column : {"norm_mean", "norm_median", "lambda", "rho0", "sink_mass",
                                   "last_mass", "m_sink", "m_last", "m_rest"}) {
            const double x = a.number(i, column), y = b.number(i, column);
            worst = std::max(worst, std::abs(x - y) / std::max(1.0, std::abs(y)));
        }
        EXPECT_EQ(a.text(i, "regime"), b.text(i, "regime")) << "row " << i;
        if (a.integer(i, "layer") == 0) sink = std::max(sink, a.number(i, "sink_mass"));
    }
    std::cout << "largest difference between the two engines: " << worst
              << "; largest layer-0 sink mass " << sink << "\n";
    EXPECT_LT(worst, 1e-5);
    EXPECT_GT(sink, 0.4);
    const auto corpus =
        run_in(scratch(), "extract --model " + (folder / "tinysink.bin").string() + " --corpus " +
                              (folder / "fortunes_sample.txt").string() +
                              " --context 128 --docs 2 --quiet --out " + corpus_out.string());
    EXPECT_EQ(corpus.exit_code, 0) << corpus.err;
}
