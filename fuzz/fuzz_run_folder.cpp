// Fuzzes a simulate/sweep run folder (manifest.json, kFileSeparator, sums.csv, kFileSeparator,
// per_trial.safetensors) through merge_runs, the entry point of `attngeo merge`:
// run_config_from_json, the sums.csv and per-trial count readers and the shard checks.
// setup_point's std::domain_error for invalid parameters is documented.
#include "fuzz/fuzz_support.hpp"
#include "simulate/run.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace attngeo;
    auto& scratch = fuzz::ScratchFolder::instance();
    scratch.clear();
    const auto parts = fuzz::split_files(data, size);
    const auto run = scratch.path() / "run";
    std::filesystem::create_directories(run);
    scratch.write("run/manifest.json", parts[0]);
    scratch.write("run/sums.csv", parts.size() > 1 ? parts[1] : "");
    if (parts.size() > 2) scratch.write("run/per_trial.safetensors", parts[2]);
    fuzz::expect_only_input_errors(
        [&] {
            (void)simulate::merge_runs({run.string()}, (scratch.path() / "merged").string(), 1,
                                       nlohmann::json::object());
        },
        fuzz::DomainErrors::expected);
    return 0;
}
