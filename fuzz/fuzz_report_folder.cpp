// Fuzzes the readers `attngeo report` runs on a simulate or sweep folder (manifest.json,
// simulate.csv / sweep.csv, bounds.csv, sums.csv, kappa_scan.csv, verdict.csv, ...): one file of
// a valid folder, written once per process by a tiny run, is damaged by the input and the
// folder is read through read_run_folder and run_sections, as report does before drawing.
#include <filesystem>
#include <string>

#include "common/json_file.hpp"
#include "fuzz/fuzz_support.hpp"
#include "reports/run_folder.hpp"
#include "simulate/run.hpp"
#include "tests/support/tiny_run.hpp"

namespace fs = std::filesystem;

namespace {

using namespace attngeo;

// A small valid run folder of `kind` in `dir` (tests/support/tiny_run.hpp).
void write_valid_run(const fs::path& dir, const std::string& kind) {
    const simulate::RunConfig config = test_support::tiny_run_config(kind);
    simulate::RunTimings timings;
    const auto sums = simulate::run_grid(config, 1, nullptr, timings);
    simulate::write_run(dir.string(), config, sums, 1, nlohmann::json::object(), timings);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0) return 0;
    // [0] simulate, [1] sweep (bit 7 of byte 0 picks one).
    static const fuzz::TemplateFolders templates(
        "report", {{"simulate", [](const fs::path& dir) { write_valid_run(dir, "simulate"); }},
                   {"sweep", [](const fs::path& dir) { write_valid_run(dir, "sweep"); }}});
    std::string damaged;
    const fs::path run =
        fuzz::copy_with_one_file_edited(templates.at(data[0] >> 7), data, size, damaged);
    fuzz::expect_only_input_errors(
        [&] {
            const reports::RunFolder folder = reports::read_run_folder(run.string(), 0);
            (void)reports::run_sections(folder);
        },
        fuzz::DomainErrors::expected);
    return 0;
}
