// Tests for reports/: a report from small simulate and sweep runs references only files that
// exist and are non-empty, its figure data are the run's numbers, it degrades to tables when
// gnuplot is missing, and a headless Chromium screenshot of it is not blank.
#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "common/errors.hpp"
#include "reports/csv_table.hpp"
#include "reports/report.hpp"
#include "simulate/run.hpp"
#include "tests/reports/report_checks.hpp"
#include "tests/support/test_files.hpp"

namespace fs = std::filesystem;
using namespace attngeo;

namespace {

using attngeo::test_support::check_references;
using attngeo::test_support::expect_screenshot_not_blank;
using attngeo::test_support::slurp;

fs::path scratch() {
    return attngeo::test_support::scratch_folder("reports");
}

// A small simulate run (and a sweep) written through the library, as the CLI does.
fs::path make_run(const std::string& name, const std::string& kind) {
    const fs::path dir = scratch() / name;
    if (fs::exists(dir / "manifest.json")) return dir;
    simulate::RunConfig config;
    config.kind = kind;
    config.model.assumption3.L = 127;
    config.model.assumption3.T1 = 12;
    config.model.assumption3.T2 = 100;
    config.d = 32;
    config.trials = 24;
    if (kind == "sweep") {
        config.sizes = "pow2";
        config.sweep = {{"beta", {0.02, 0.2}}, {"d", {16, 64}}};
    }
    simulate::RunTimings timings;
    const auto sums = simulate::run_grid(config, 2, false, timings);
    simulate::write_run(dir.string(), config, sums, 2, {{"command", "test"}}, timings);
    return dir;
}

}  // namespace

TEST(Report, EveryReferencedFileExistsAndFiguresCarryTheRunsNumbers) {
    const fs::path sim = make_run("sim", "simulate"), sweep = make_run("sweep", "sweep");
    const fs::path out = scratch() / "report";
    fs::remove_all(out);
    const std::string index = reports::write_report({sim.string(), sweep.string()}, out.string());
    const std::string html = slurp(index);
    const int references = check_references(out, html);
    std::cout << "checked " << references << " references\n";
    EXPECT_GE(references, 4 * 5);
    // 4 simulate figures + 2 metrics x 2 swept parameters, and a κ-scan figure per variant of
    // each run with a kappa_scan.csv, all drawn and inlined.
    std::size_t inline_svgs = 0;
    for (auto at = html.find("<svg"); at != std::string::npos; at = html.find("<svg", at + 1))
        ++inline_svgs;
    const std::size_t scans =
        fs::exists(sim / "kappa_scan.csv") + fs::exists(sweep / "kappa_scan.csv");
    EXPECT_EQ(inline_svgs, 8u + 4u * scans);
    for (const char* needle :
         {"κ and envelope agreement", "What the generator realised", "Decisions taken",
          "Table 1: sensitivity", "largest violation", "scale-invariant"}) {
        EXPECT_NE(html.find(needle), std::string::npos) << needle;
    }
    // The data behind the Precision figure are simulate.csv's numbers, character for character.
    const auto table = reports::read_csv_table((sim / "simulate.csv").string());
    std::istringstream dat(slurp(out / "figures" / "run0_P.dat"));
    std::string line;
    std::getline(dat, line);  // comment
    std::size_t row = 0;
    while (std::getline(dat, line)) {
        std::istringstream fields(line);
        std::string N, mean, lo, hi;
        fields >> N >> mean >> lo >> hi;
        ASSERT_LT(row, table.rows.size());
        EXPECT_EQ(N, table.text(row, "N"));
        EXPECT_EQ(mean, table.text(row, "P_mean"));
        EXPECT_EQ(lo, table.text(row, "P_ci_lo"));
        EXPECT_EQ(hi, table.text(row, "P_ci_hi"));
        ++row;
    }
    EXPECT_EQ(row, table.rows.size());
}

TEST(Report, WithoutGnuplotTheTablesRemainAndTheReportSaysWhy) {
    const fs::path sim = make_run("sim", "simulate");
    const fs::path out = scratch() / "report_no_gnuplot";
    fs::remove_all(out);
    ::setenv("ATTNGEO_GNUPLOT", "/nonexistent/gnuplot", 1);
    const std::string index = reports::write_report({sim.string()}, out.string());
    ::unsetenv("ATTNGEO_GNUPLOT");
    const std::string html = slurp(index);
    EXPECT_NE(html.find("Figures are missing: gnuplot was not found"), std::string::npos);
    EXPECT_NE(html.find("κ and envelope agreement"), std::string::npos);
    EXPECT_EQ(html.find("<svg"), std::string::npos);
    EXPECT_TRUE(fs::exists(out / "figures" / "run0_P.gp"));
    EXPECT_TRUE(fs::exists(out / "figures" / "run0_P.dat"));
    check_references(out, html);
}

TEST(Report, BadInputNamesTheFolder) {
    const fs::path empty = scratch() / "not_a_run";
    fs::create_directories(empty);
    try {
        reports::write_report({empty.string()}, (scratch() / "r").string());
        FAIL() << "expected InputError";
    } catch (const InputError& e) {
        EXPECT_NE(std::string(e.what()).find(empty.string()), std::string::npos) << e.what();
    }
    std::ofstream(empty / "manifest.json") << R"({"kind": "mystery"})";
    EXPECT_THROW(reports::write_report({empty.string()}, (scratch() / "r").string()), InputError);
    EXPECT_THROW(reports::write_report({}, (scratch() / "r").string()), InputError);
}

TEST(Report, HeadlessChromiumScreenshotIsNotBlank) {
    const fs::path sim = make_run("sim", "simulate");
    const fs::path out = scratch() / "report_shot";
    fs::remove_all(out);
    const std::string index = reports::write_report({sim.string()}, out.string());
    expect_screenshot_not_blank(index, out);
}
