// Sizes from headers and flags checked before allocating: the budget and file
// checks of common/size_checks against plain arithmetic, and the CLI under `ulimit -v` giving a
// one-line exit 2 (or success), never std::bad_alloc.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "common/errors.hpp"
#include "common/size_checks.hpp"
#include "tests/support/test_files.hpp"

namespace fs = std::filesystem;
using namespace attngeo;

namespace {

// Sets ATTNGEO_MEMORY_BUDGET for one scope.
struct BudgetOverride {
    explicit BudgetOverride(const std::string& bytes) {
        ::setenv("ATTNGEO_MEMORY_BUDGET", bytes.c_str(), 1);
    }
    ~BudgetOverride() { ::unsetenv("ATTNGEO_MEMORY_BUDGET"); }
};

std::uint64_t physical_bytes() {
    return static_cast<std::uint64_t>(::sysconf(_SC_PHYS_PAGES)) *
           static_cast<std::uint64_t>(::sysconf(_SC_PAGE_SIZE));
}

}  // namespace

TEST(SizeChecks, BudgetIsTheSmallestOfMemoryLimitAndOverride) {
    ::unsetenv("ATTNGEO_MEMORY_BUDGET");
    struct rlimit limit {};
    ASSERT_EQ(::getrlimit(RLIMIT_AS, &limit), 0);
    std::uint64_t expected = physical_bytes();
    if (limit.rlim_cur != RLIM_INFINITY)
        expected = std::min<std::uint64_t>(expected, limit.rlim_cur);
    EXPECT_EQ(memory_budget_bytes(), expected);
    {
        const BudgetOverride budget("12345");
        EXPECT_EQ(memory_budget_bytes(), std::min<std::uint64_t>(expected, 12345));
        EXPECT_NO_THROW(check_allocation(12345, 1, "x"));
        test_support::expect_input_error([] { check_allocation(1235, 10, "--flag 1235"); },
                                         {"--flag 1235", "12350 bytes", "12345"});
    }
    {
        const BudgetOverride malformed("12k");  // ignored, not fatal
        EXPECT_EQ(memory_budget_bytes(), expected);
    }
}

TEST(SizeChecks, ProductsSaturateInsteadOfWrapping) {
    const std::uint64_t max = std::numeric_limits<std::uint64_t>::max();
    EXPECT_EQ(checked_bytes(3, 7), 21u);
    EXPECT_EQ(checked_bytes(0, max), 0u);
    EXPECT_EQ(checked_bytes(max / 2 + 1, 2), max);
    // 2^62 × 8 wraps to 0 in plain arithmetic: it must be refused, not allocated as 0 bytes.
    test_support::expect_input_error(
        [] { check_allocation(std::uint64_t(1) << 62, 8, "'f.gguf': tensor 'w'"); },
        {"'f.gguf': tensor 'w'", "more than 2^64"});
}

TEST(SizeChecks, RangesMustLieInsideTheFile) {
    EXPECT_NO_THROW(check_within_file(0, 100, 100, "x"));
    EXPECT_NO_THROW(check_within_file(100, 0, 100, "x"));
    EXPECT_NO_THROW(check_within_file(40, 60, 100, "x"));
    test_support::expect_input_error([] { check_within_file(40, 61, 100, "'a.bin': data"); },
                                     {"'a.bin': data", "byte 101", "100 bytes"});
    test_support::expect_input_error([] { check_within_file(101, 0, 100, "'a.bin'"); },
                                     {"byte 101"});
    // offset + length overflowing 2^64 must not wrap into range.
    test_support::expect_input_error(
        [] { check_within_file(50, std::numeric_limits<std::uint64_t>::max(), 100, "'a.bin'"); },
        {"2^64"});
}

// 30,000 tokens under a 4 GiB address space: the n × n Gram matrix (7.2 GB) is refused up front.
TEST(SizeChecks, MetricsOnThirtyThousandRowsUnderUlimitIsExitTwoNotBadAlloc) {
#if defined(__SANITIZE_ADDRESS__)
    // AddressSanitizer reserves terabytes of shadow address space at start-up, which no
    // `ulimit -v` allows: the sanitizer tree cannot run this case (the Release tree does).
    GTEST_SKIP() << "ulimit -v and AddressSanitizer's shadow memory do not mix";
#endif
    const fs::path dir = test_support::scratch_folder("size_limits");
    const fs::path points = dir / "points.csv";
    {
        std::ofstream out(points);
        out.precision(17);
        std::mt19937_64 rng(10);
        std::normal_distribution<double> normal;
        const int n = 30000;
        for (int i = 0; i < n; ++i)
            out << (i == 0 ? 1.0 - (n - 1) * (1.0 / n) : 1.0 / n) << ',' << normal(rng) << ','
                << normal(rng) << '\n';
    }
    const auto r =
        test_support::run_program("ulimit -v 4194304; exec " + std::string(ATTNGEO_EXE),
                                  "metrics --input " + points.string() + " >/dev/null", dir);
    std::cout << "exit " << r.exit_code << ": " << r.err;
    EXPECT_TRUE(r.exit_code == 2 || r.exit_code == 0) << r.err;
    EXPECT_EQ(r.err.find("bad_alloc"), std::string::npos) << r.err;
    if (r.exit_code == 2) {
        EXPECT_NE(r.err.find("'" + points.string() + "'"), std::string::npos) << r.err;
        EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "not one line: " << r.err;
    }
}

// `bounds` on 30,000 weights under a 4 GiB address space: the n × n cosines and the terms of
// every N (about 29 GB) are refused up front, naming the file, n and the bytes; 2,000 weights
// with two sizes fit and give their two rows.
TEST(SizeChecks, BoundsOnThirtyThousandWeightsUnderUlimitIsExitTwoNamingFileAndN) {
#if defined(__SANITIZE_ADDRESS__)
    GTEST_SKIP() << "ulimit -v and AddressSanitizer's shadow memory do not mix";
#endif
    const fs::path dir = test_support::scratch_folder("size_limits_bounds");
    const auto write_weights = [&](int n) {
        const fs::path path = dir / ("alpha" + std::to_string(n) + ".txt");
        std::ofstream out(path);
        out.precision(17);
        std::mt19937_64 rng(12);
        std::exponential_distribution<double> draw;  // Dirichlet(1) weights
        std::vector<double> weights(n);
        double total = 0;
        for (double& w : weights)
            total += (w = draw(rng));
        for (double w : weights)
            out << w / total << '\n';
        return path;
    };
    const std::string limited = "ulimit -v 4194304; exec " + std::string(ATTNGEO_EXE);
    const fs::path large = write_weights(30000);
    const auto refused = test_support::run_program(
        limited,
        "bounds --alpha " + large.string() + " --d 16 --kappa 0.5 --variant scale-invariant", dir);
    std::cout << "exit " << refused.exit_code << ": " << refused.err;
    EXPECT_EQ(refused.exit_code, 2) << refused.err;
    EXPECT_TRUE(refused.out.empty());
    for (const std::string needle :
         {"--alpha '" + large.string() + "'", std::string("n = 30000"), std::string("bytes")})
        EXPECT_NE(refused.err.find(needle), std::string::npos) << needle << " in " << refused.err;
    EXPECT_EQ(refused.err.find('\n'), refused.err.size() - 1) << "not one line: " << refused.err;
    const auto small = test_support::run_program(
        limited, "bounds --alpha " + write_weights(2000).string() + " --N 1,2", dir);
    EXPECT_EQ(small.exit_code, 0) << small.err;
    EXPECT_EQ(std::count(small.out.begin(), small.out.end(), '\n'), 3) << small.out;
}
