// Fuzzes the CLI's numeric text readers (common/csv.cpp): read_numeric_table (points, --cos),
// read_numeric_column (weights, norms) and parse_finite_double on the same bytes.
#include "common/csv.hpp"
#include "fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace attngeo;
    auto& scratch = fuzz::ScratchFolder::instance();
    scratch.clear();
    const std::string bytes(reinterpret_cast<const char*>(data), size);
    const std::string path = scratch.write("points.csv", bytes);
    fuzz::expect_only_input_errors([&] {
        const NumericTable table = read_numeric_table(path, "points file");
        if (table.line_numbers.size() != table.rows.size()) __builtin_trap();
        for (const auto& row : table.rows)
            if (row.size() != table.columns()) __builtin_trap();  // promised rectangular
    });
    fuzz::expect_only_input_errors([&] { (void)read_numeric_column(path, "weights file"); });
    fuzz::expect_only_input_errors([&] { (void)parse_finite_double(bytes, "--value"); });
    return 0;
}
