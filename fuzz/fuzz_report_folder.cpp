// Fuzzes the readers `attngeo report` runs on a simulate or sweep folder (manifest.json,
// simulate.csv / sweep.csv, bounds.csv, sums.csv, kappa_scan.csv, verdict.csv, ...): one file of
// a valid folder, written once per process by a tiny run, is damaged by the input and the
// folder is read through read_run_folder and run_sections, as report does before drawing.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

#include "common/json_file.hpp"
#include "fuzz/fuzz_support.hpp"
#include "reports/report.hpp"
#include "simulate/run.hpp"

namespace fs = std::filesystem;

namespace {

using namespace attngeo;

// A small valid run folder of `kind` in `dir` (n = 16 tokens, d = 8, 4 trials, N = powers
// of two; a sweep over two values of beta).
void write_valid_run(const fs::path& dir, const std::string& kind) {
    simulate::RunConfig config;
    config.kind = kind;
    config.model.assumption3.L = 15;
    config.model.assumption3.T1 = 3;
    config.model.assumption3.T2 = 10;
    config.model.length_given = true;
    config.d = 8;
    config.trials = 4;
    config.sizes = "pow2";
    if (kind == "sweep") config.sweep.emplace_back("beta", std::vector<double>{0.05, 0.1});
    simulate::RunTimings timings;
    const auto sums = simulate::run_grid(config, 1, nullptr, timings);
    simulate::write_run(dir.string(), config, sums, 1, nlohmann::json::object(), timings);
}

// Every regular file of `dir`, by name, in a fixed order.
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

// The valid folders, written once per process and removed at exit: [0] simulate, [1] sweep.
class TemplateFolders {
  public:
    static const std::vector<fs::path>& get() {
        static const TemplateFolders folders;
        return folders.dirs_;
    }
    ~TemplateFolders() {
        std::error_code ignored;
        fs::remove_all(root_, ignored);
    }

  private:
    TemplateFolders() {
        const char* tmp = std::getenv("TMPDIR");
        root_ = fs::path(tmp && *tmp ? tmp : "/tmp") /
                ("attngeo-fuzz-report-" + std::to_string(::getpid()));
        fs::remove_all(root_);
        dirs_ = {root_ / "simulate", root_ / "sweep"};
        write_valid_run(dirs_[0], "simulate");
        write_valid_run(dirs_[1], "sweep");
    }
    fs::path root_;
    std::vector<fs::path> dirs_;
};

// The input as an edit of one file: byte 0 picks the folder (bit 7) and the file; with bit 6
// set the rest replaces the whole file, else bytes 1-2 are an offset, byte 3 how many bytes to
// delete there and the rest what to insert (so even tiny inputs damage a valid file).
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
    const fs::path& source = TemplateFolders::get()[data[0] >> 7];
    const std::vector<fs::path> files = files_of(source);
    const fs::path& victim = files[(data[0] & 0x3f) % files.size()];
    auto& scratch = fuzz::ScratchFolder::instance();
    scratch.clear();
    const fs::path run = scratch.path() / "run";
    fs::copy(source, run);
    std::ofstream(run / victim.filename(), std::ios::binary | std::ios::trunc)
        << edited(slurp(victim), data, size);
    fuzz::expect_only_input_errors(
        [&] {
            const reports::RunFolder folder = reports::read_run_folder(run.string(), 0);
            (void)reports::run_sections(folder);
        },
        fuzz::DomainErrors::expected);
    return 0;
}
