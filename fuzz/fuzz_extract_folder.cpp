// Fuzzes an `attngeo extract` folder through read_empirical_run, what `compare --emp` reads:
// manifest.json, heads.csv, pr.csv, by_position.csv and cos_by_lag.csv, in that order,
// separated by kFileSeparator in the input.
#include "compare/extract_folder_reader.hpp"
#include "fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace attngeo;
    static const char* const kFiles[] = {"manifest.json", "heads.csv", "pr.csv", "by_position.csv",
                                         "cos_by_lag.csv"};
    auto& scratch = fuzz::ScratchFolder::instance();
    scratch.clear();
    const auto parts = fuzz::split_files(data, size);
    for (std::size_t i = 0; i < parts.size() && i < 5; ++i)
        scratch.write(kFiles[i], parts[i]);
    fuzz::expect_only_input_errors(
        [&] { (void)compare::read_empirical_run(scratch.path().string()); });
    return 0;
}
