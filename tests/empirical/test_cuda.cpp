// The CUDA path against the CPU (docs/design.md §13): every golden model's float32 forward on
// the GPU against transformers' reference and the CPU, extract of stories260K on the GPU (P/R
// identical to the CPU's, --metrics device equal to the host's bytes, bfloat16) and truncate.
// Skipped, saying why, where no GPU is present; scripts/device-check.sh runs them on a lent one.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "common/csv.hpp"
#include "common/safetensors.hpp"
#include "empirical/model/transformer.hpp"
#include "tests/support/shared_data.hpp"
#include "tests/support/test_files.hpp"

namespace fs = std::filesystem;
using namespace attngeo;
using namespace attngeo::empirical;
using attngeo::test_support::shared_folder;

#define REQUIRE_CUDA()                                                                         \
    do {                                                                                       \
        if (!torch::cuda::is_available())                                                      \
            GTEST_SKIP() << "no CUDA device here: scripts/device-check.sh runs this on a GPU"; \
    } while (0)

namespace {

fs::path scratch() {
    return attngeo::test_support::scratch_folder("cuda");
}

attngeo::test_support::CliResult attngeo_cli(const std::string& args) {
    return attngeo::test_support::run_program(ATTNGEO_EXE, args, scratch());
}

double max_abs_diff(const torch::Tensor& a, const torch::Tensor& b) {
    EXPECT_EQ(a.sizes(), b.sizes());
    if (a.sizes() != b.sizes()) return 1e300;
    return (a.cpu().to(torch::kFloat64) - b.cpu().to(torch::kFloat64)).abs().max().item<double>();
}

CaptureResult forward_on(const fs::path& dir, const std::string& device) {
    Transformer model = Transformer::load(dir.string(), LoadOptions(device, "float32"));
    if (dir.filename() == "mistral-swa") model.set_sliding_window(9);  // as test_golden
    const SafetensorsFile golden((dir / "golden.safetensors").string());
    const HostTensor& ids = golden.get("input_ids");
    const auto tokens =
        torch::from_blob(const_cast<void*>(ids.data), ids.shape, torch::kInt64).clone();
    CaptureOptions options;
    options.queries = QueryRows::all;
    return model.forward(tokens, options);
}

std::string slurp(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

}  // namespace

class CudaGolden : public ::testing::TestWithParam<const char*> {};

// The GPU's float32 forward within float32 of the CPU's, attention and logits, on every family.
TEST_P(CudaGolden, ForwardOnTheGpuEqualsTheCpuWithinFloat32) {
    REQUIRE_CUDA();
    const fs::path dir = shared_folder() / "golden" / GetParam();
    REQUIRE_SHARED_FILE(dir);
    const CaptureResult gpu = forward_on(dir, "cuda"), cpu = forward_on(dir, "cpu");
    double attention = 0;
    for (std::size_t l = 0; l < cpu.layers.size(); ++l)
        attention =
            std::max(attention, max_abs_diff(gpu.layers[l].attention, cpu.layers[l].attention));
    const double logits = max_abs_diff(gpu.logits, cpu.logits);
    std::cout << GetParam() << ": largest GPU-CPU difference: attention " << attention
              << ", logits " << logits << "\n";
    EXPECT_LT(attention, 1e-5);
    EXPECT_LT(logits, 1e-4);
}

INSTANTIATE_TEST_SUITE_P(Families, CudaGolden,
                         ::testing::Values("llama-gqa", "llama-bf16", "llama-rope500k",
                                           "mistral-swa", "gemma", "gpt2", "gpt-neox", "qwen2",
                                           "stories260k-hf"),
                         [](const auto& info) {
                             std::string name = info.param;
                             for (char& c : name)
                                 if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                             return name;
                         });

// extract of stories260K through libtorch: the GPU's P/R equal the CPU's, the per-head α
// statistics agree within float32, and the batched Gram on the device writes the host's bytes.
TEST(CudaExtract, StoriesOnTheGpuEqualsTheCpu) {
    REQUIRE_CUDA();
    const fs::path model = shared_folder() / "models" / "stories260K" / "stories260K.bin";
    REQUIRE_SHARED_FILE(model);
    const std::string common =
        "extract --model " + model.string() + " --corpus " +
        (fs::path(ATTNGEO_SOURCE_DIR) / "examples" / "stories260K_corpus.txt").string() +
        " --context 128 --docs 8 --engine torch --quiet --out ";
    const fs::path cpu = scratch() / "cpu", gpu = scratch() / "gpu", host = scratch() / "host",
                   bf16 = scratch() / "bf16";
    for (const auto& dir : {cpu, gpu, host, bf16})
        fs::remove_all(dir);
    ASSERT_EQ(attngeo_cli(common + cpu.string() + " --device cpu").exit_code, 0);
    ASSERT_EQ(attngeo_cli(common + gpu.string() + " --device cuda --metrics device").exit_code, 0);
    ASSERT_EQ(attngeo_cli(common + host.string() + " --device cuda --metrics cpu").exit_code, 0);
    const auto bf = attngeo_cli(common + bf16.string() + " --device cuda --dtype bfloat16");
    EXPECT_EQ(bf.exit_code, 0) << bf.err;
    for (const char* file : {"pr.csv", "sums.safetensors", "per_doc.safetensors"})
        EXPECT_EQ(slurp(gpu / file), slurp(host / file)) << file << ": --metrics device vs cpu";
    const auto a = read_csv_table((gpu / "pr.csv").string());
    const auto b = read_csv_table((cpu / "pr.csv").string());
    ASSERT_EQ(a.rows.size(), b.rows.size());
    int differing = 0;
    for (std::size_t i = 0; i < a.rows.size(); ++i)
        differing += a.rows[i] != b.rows[i];
    const auto ha = read_csv_table((gpu / "heads.csv").string());
    const auto hb = read_csv_table((cpu / "heads.csv").string());
    double alpha = 0;
    for (std::size_t i = 0; i < ha.rows.size(); ++i)
        for (const char* column : {"sink_mass", "last_mass", "m_sink", "m_last", "m_rest"})
            alpha = std::max(alpha, std::abs(ha.number(i, column) - hb.number(i, column)));
    std::cout << "pr.csv rows differing GPU vs CPU: " << differing << " of " << a.rows.size()
              << "; largest alpha-statistic difference " << alpha << "\n";
    EXPECT_EQ(differing, 0);
    EXPECT_LT(alpha, 1e-5);
}

// truncate on the GPU: the same losses as on the CPU within float32 (random draws on the host).
TEST(CudaTruncate, StoriesOnTheGpuEqualsTheCpu) {
    REQUIRE_CUDA();
    const fs::path model = shared_folder() / "models" / "stories260K" / "stories260K.bin";
    REQUIRE_SHARED_FILE(model);
    const std::string common =
        "truncate --model " + model.string() + " --corpus " +
        (fs::path(ATTNGEO_SOURCE_DIR) / "examples" / "stories260K_corpus.txt").string() +
        " --context 128 --docs 4 --N 1,4,16 --policy attn,random,window --renorm both --quiet "
        "--out ";
    const fs::path cpu = scratch() / "truncate_cpu", gpu = scratch() / "truncate_gpu";
    fs::remove_all(cpu);
    fs::remove_all(gpu);
    ASSERT_EQ(attngeo_cli(common + cpu.string() + " --device cpu").exit_code, 0);
    ASSERT_EQ(attngeo_cli(common + gpu.string() + " --device cuda").exit_code, 0);
    const auto a = read_csv_table((gpu / "truncate.csv").string());
    const auto b = read_csv_table((cpu / "truncate.csv").string());
    ASSERT_EQ(a.rows.size(), b.rows.size());
    double worst = 0;
    for (std::size_t i = 0; i < a.rows.size(); ++i)
        for (const char* column : {"delta_nll", "kl", "dropped_mass"})
            worst = std::max(worst, std::abs(a.number(i, column) - b.number(i, column)));
    std::cout << "largest GPU-CPU difference in truncate.csv: " << worst << "\n";
    EXPECT_LT(worst, 1e-4);
}
