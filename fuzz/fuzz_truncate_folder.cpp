// Fuzzes the readers of a truncate folder: compare's summary (manifest.json, per_doc.safetensors)
// and what `attngeo report` reads (truncate.csv, effective_size.csv): one file of a valid
// scope-all folder, written once per process, is damaged by the input, and the folder is
// summarised (when the damaged file is an input of the summary) and read for the report.
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common/run_schema.hpp"
#include "common/safetensors.hpp"
#include "compare/truncation_summary.hpp"
#include "fuzz/fuzz_support.hpp"
#include "reports/run_folder.hpp"

namespace fs = std::filesystem;

namespace {

using namespace attngeo;

// A scope-all truncate folder of two policies at N = 1, 4 over three windows, summarised.
void write_valid_folder(const fs::path& dir) {
    fs::create_directories(dir);
    const std::int64_t C = 4, D = 3;
    std::vector<double> loss(C * D);
    for (std::int64_t i = 0; i < C * D; ++i)
        loss[i] = 0.5 / (1 + i % 4) + 0.01 * static_cast<double>(i / 4);
    const std::vector<std::int64_t> policy = {0, 0, 1, 1}, zero(C, 0), minus(C, -1),
                                    N = {1, 4, 1, 4};
    std::vector<HostTensor> tensors;
    for (const char* m : {"delta_nll", "kl", "top1", "dropped_mass", "output_error"})
        tensors.push_back(tensor_view(m, DType::F64, {C, D}, loss.data(), loss.size() * 8));
    tensors.push_back(tensor_view("nll_full", DType::F64, {D}, loss.data(), D * 8));
    tensors.push_back(tensor_view("policy", DType::I64, {C}, policy.data(), C * 8));
    tensors.push_back(tensor_view("renorm", DType::I64, {C}, zero.data(), C * 8));
    tensors.push_back(tensor_view("layer", DType::I64, {C}, minus.data(), C * 8));
    tensors.push_back(tensor_view("head", DType::I64, {C}, minus.data(), C * 8));
    tensors.push_back(tensor_view("N", DType::I64, {C}, N.data(), C * 8));
    write_safetensors((dir / schema::file::per_document).string(), tensors);
    const nlohmann::json manifest = {
        {"tool", "attngeo"},
        {"kind", schema::kind::truncate},
        {schema::kFormatVersionKey, schema::kFormatVersion},
        {"model", {{"path", "tiny.bin"}, {"family", "llama"}, {"layers", 2}, {"heads", 2}}},
        {"parameters",
         {{"context", 8},
          {"N", {1, 4}},
          {"policies", {"attn", "window"}},
          {"renorm", {"no"}},
          {"scope", "all"},
          {"tau", {0.1}},
          {"replicates", 20}}},
        {"documents", {{"windows", D}}},
        {"configurations", C}};
    std::ofstream(dir / schema::file::manifest) << manifest.dump(2);
    compare::summarise_truncation(dir.string());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0) return 0;
    static const fuzz::TemplateFolders templates("truncate", {{"run", write_valid_folder}});
    std::string damaged;
    const fs::path run = fuzz::copy_with_one_file_edited(templates.at(0), data, size, damaged);
    const bool summary_input =
        damaged == schema::file::manifest || damaged == schema::file::per_document;
    fuzz::expect_only_input_errors(
        [&] {
            if (summary_input) compare::summarise_truncation(run.string());
            const reports::RunFolder folder = reports::read_run_folder(run.string(), 0);
            (void)reports::run_sections(folder);
        },
        fuzz::DomainErrors::expected);
    return 0;
}
