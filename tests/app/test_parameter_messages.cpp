// Messages about model parameters name the user's flag (or --set entry) and the range from
// theory/parameter_table, never an internal function: exact stderr of bounds, simulate and
// sweep for bad values (docs/design.md section 10), exit code 2 and nothing written.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "tests/support/test_files.hpp"

namespace fs = std::filesystem;

namespace {

fs::path scratch() {
    return attngeo::test_support::scratch_folder("parameter_messages");
}

attngeo::test_support::CliResult run(const std::string& args) {
    return attngeo::test_support::run_program(ATTNGEO_EXE, args, scratch());
}

// Runs `args` and expects exit code 2 with exactly `message` (one line) on stderr.
void expect_message(const std::string& args, const std::string& message) {
    const auto r = run(args);
    EXPECT_EQ(r.exit_code, 2) << args;
    EXPECT_EQ(r.err, message + "\n") << args;
    EXPECT_TRUE(r.out.empty()) << args << " printed: " << r.out;
}

}  // namespace

TEST(ParameterMessages, BoundsNamesTheFlagAndTheTableRange) {
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"--p-sink 0", "--p-sink 0: expected 0 < p_sink < 1"},
        {"--p-sink 1", "--p-sink 1: expected 0 < p_sink < 1"},
        {"--T1 900 --T2 800", "--T1 900, --T2 800, --L 1024: expected 0 <= T1 <= T2 <= L"},
        {"--d -1", "--d -1: expected d >= 1 or inf"},
        {"--beta 0", "--beta 0: expected beta > 0"},
        {"--lambda 1.5", "--lambda 1.5: expected 0 < lambda < 1"},
        {"--rho0 2", "--rho0 2: expected -1 <= rho0 <= 1"},
        {"--L 0", "--L 0: expected an integer L >= 1"},
        {"--kappa 0", "--kappa 0: expected kappa > 0"},
        {"--eta 1.5", "--eta 1.5: expected eta < 1 when T1 < T2 (the weights must stay positive)"},
    };
    for (const auto& [flags, message] : cases)
        expect_message("bounds " + flags, "attngeo bounds: " + message);
}

TEST(ParameterMessages, SimulateAndSweepNameTheFlagOrTheSetEntry) {
    const fs::path out = scratch() / "never";
    fs::remove_all(out);
    const std::string small = " --L 15 --T1 2 --T2 10 --trials 4 --out " + out.string();
    expect_message("simulate --d -64" + small, "attngeo simulate: --d -64: expected d >= 1 or inf");
    expect_message("simulate --p-sink 0" + small,
                   "attngeo simulate: --p-sink 0: expected 0 < p_sink < 1");
    expect_message("sweep --set p_sink=0.3,1" + small,
                   "attngeo sweep: --set p_sink=1: expected 0 < p_sink < 1");
    expect_message("sweep --set L=15.5" + small,
                   "attngeo sweep: --set L=15.5: expected an integer L >= 1");
    expect_message("sweep --set T1=20" + small,
                   "attngeo sweep: --set T1=20, --T2 10, --L 15: expected 0 <= T1 <= T2 <= L");
    expect_message("sweep --set d=0" + small, "attngeo sweep: --set d=0: expected d >= 1 or inf");
    expect_message("sweep --set beta=0.1 --set beta=0.2" + small,
                   "attngeo sweep: --set: parameter 'beta' given twice");
    expect_message("sweep --set beta" + small,
                   "attngeo sweep: --set 'beta': expected name=v1,v2,...");
    expect_message("sweep --set bogus=1" + small,
                   "attngeo sweep: --set 'bogus=1': unknown parameter 'bogus', expected one of L, "
                   "p_sink, T1, T2, eta, omega, C, lambda, beta, rho0, d, kappa, zipf_s, norm_cv");
    EXPECT_FALSE(fs::exists(out));
}

TEST(ParameterMessages, ExtractDocsSaysWhatItExpects) {
    if (!attngeo::test_support::extract_built(ATTNGEO_EXE, scratch()))
        GTEST_SKIP() << "built without libtorch: no extract";
    const fs::path out = scratch() / "never_extract";
    expect_message(
        "extract --model /nonexistent --tokens /dev/null --docs -1 --out " + out.string(),
        "attngeo extract: --docs: -1, expected >= 0 (0 = all)");
    EXPECT_FALSE(fs::exists(out));
}
