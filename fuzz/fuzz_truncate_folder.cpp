// Fuzzes the readers of a truncate folder: compare's summary (manifest.json, per_doc.safetensors)
// and what `attngeo report` reads (truncate.csv, effective_size.csv): one file of a valid
// scope-all folder, written once per process, is damaged by the input, and the folder is
// summarised (when the damaged file is an input of the summary) and read for the report.
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

#include "common/run_schema.hpp"
#include "common/safetensors.hpp"
#include "compare/truncation_summary.hpp"
#include "fuzz/fuzz_support.hpp"
#include "reports/report.hpp"

namespace fs = std::filesystem;

namespace {

using namespace attngeo;

HostTensor tensor(const std::string& name, DType dtype, std::vector<std::int64_t> shape,
                  const void* data, std::size_t bytes) {
    HostTensor t;
    t.name = name;
    t.dtype = dtype;
    t.shape = std::move(shape);
    t.data = data;
    t.bytes = bytes;
    return t;
}

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
        tensors.push_back(tensor(m, DType::F64, {C, D}, loss.data(), loss.size() * 8));
    tensors.push_back(tensor("nll_full", DType::F64, {D}, loss.data(), D * 8));
    tensors.push_back(tensor("policy", DType::I64, {C}, policy.data(), C * 8));
    tensors.push_back(tensor("renorm", DType::I64, {C}, zero.data(), C * 8));
    tensors.push_back(tensor("layer", DType::I64, {C}, minus.data(), C * 8));
    tensors.push_back(tensor("head", DType::I64, {C}, minus.data(), C * 8));
    tensors.push_back(tensor("N", DType::I64, {C}, N.data(), C * 8));
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

std::vector<fs::path> files_of(const fs::path& dir) {
    std::vector<fs::path> files;
    for (const auto& entry : fs::directory_iterator(dir))
        if (entry.is_regular_file()) files.push_back(entry.path());
    std::sort(files.begin(), files.end());
    return files;
}

std::string slurp(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// The valid folder, written once per process and removed at exit.
class TemplateFolder {
  public:
    static const fs::path& get() {
        static const TemplateFolder folder;
        return folder.dir_;
    }
    ~TemplateFolder() {
        std::error_code ignored;
        fs::remove_all(dir_, ignored);
    }

  private:
    TemplateFolder() {
        const char* tmp = std::getenv("TMPDIR");
        dir_ = fs::path(tmp && *tmp ? tmp : "/tmp") /
               ("attngeo-fuzz-truncate-" + std::to_string(::getpid()));
        fs::remove_all(dir_);
        write_valid_folder(dir_);
    }
    fs::path dir_;
};

// The input as an edit of one file: byte 0 picks the file; with bit 6 set the rest replaces the
// whole file, else bytes 1-2 are an offset, byte 3 how many bytes to delete there and the rest
// what to insert.
std::string edited(const std::string& original, const std::uint8_t* data, std::size_t size) {
    if (data[0] & 0x40) return std::string(reinterpret_cast<const char*>(data) + 1, size - 1);
    if (size < 4) return original;
    const std::size_t at = (data[1] | (std::size_t(data[2]) << 8)) % (original.size() + 1);
    const std::size_t erase = std::min<std::size_t>(data[3], original.size() - at);
    std::string text = original;
    text.replace(at, erase, reinterpret_cast<const char*>(data) + 4, size - 4);
    return text;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0) return 0;
    const fs::path& source = TemplateFolder::get();
    const std::vector<fs::path> files = files_of(source);
    const fs::path& victim = files[(data[0] & 0x3f) % files.size()];
    auto& scratch = fuzz::ScratchFolder::instance();
    scratch.clear();
    const fs::path run = scratch.path() / "run";
    fs::copy(source, run);
    std::ofstream(run / victim.filename(), std::ios::binary | std::ios::trunc)
        << edited(slurp(victim), data, size);
    const bool summary_input = victim.filename() == schema::file::manifest ||
                               victim.filename() == schema::file::per_document;
    fuzz::expect_only_input_errors(
        [&] {
            if (summary_input) compare::summarise_truncation(run.string());
            const reports::RunFolder folder = reports::read_run_folder(run.string(), 0);
            (void)reports::run_sections(folder);
        },
        fuzz::DomainErrors::expected);
    return 0;
}
