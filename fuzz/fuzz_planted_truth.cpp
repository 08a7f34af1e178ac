// Fuzzes planted.csv through read_planted_truth, what `compare --truth` reads, for an extract of
// 2 layers × 3 heads, then sets what it read against empty fits.csv / profile.csv tables as
// compare would (a head missing from them is an InputError, never a crash).
#include "compare/recovery.hpp"
#include "fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace attngeo;
    auto& scratch = fuzz::ScratchFolder::instance();
    scratch.clear();
    const std::string path =
        scratch.write("planted.csv", std::string(reinterpret_cast<const char*>(data), size));
    fuzz::expect_only_input_errors([&] {
        const auto truth = compare::read_planted_truth(path, 2, 3);
        if (truth.empty() || truth.size() > 6) __builtin_trap();  // each head at most once
        CsvTable fits{"fits.csv", {"layer", "head", "beta"}, {}, {}};
        CsvTable profile{"profile.csv", {"layer", "head", "p_sink"}, {}, {}};
        for (int l = 0; l < 2; ++l)
            for (int h = 0; h < 3; ++h) {
                fits.rows.push_back({std::to_string(l), std::to_string(h), "0.1"});
                profile.rows.push_back({std::to_string(l), std::to_string(h), ""});
            }
        const auto rows = compare::recovery_rows(truth, fits, profile, 64);
        (void)compare::recovery_csv(rows);
        (void)compare::recovery_coverage_csv(compare::recovery_coverage(rows));
    });
    return 0;
}
