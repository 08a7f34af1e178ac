// Fuzzes a simulate/sweep run folder (manifest.json, kFileSeparator, sums.csv) through
// merge_runs, the entry point of `attngeo merge`: run_config_from_json, the sums.csv reader and
// the shard checks. setup_point's std::domain_error for invalid parameters is documented.
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
    fuzz::expect_only_input_errors(
        [&] {
            (void)simulate::merge_runs({run.string()}, (scratch.path() / "merged").string(), 1,
                                       nlohmann::json::object());
        },
        fuzz::DomainErrors::expected);
    return 0;
}
