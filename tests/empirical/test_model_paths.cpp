// Model paths and flags of extract and generate taken as the user typed them: a model given as a
// bare file name in the current folder finds the tokenizer beside it, a bad GGUF is named with
// its path quoted, and a negative --docs is refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>

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
