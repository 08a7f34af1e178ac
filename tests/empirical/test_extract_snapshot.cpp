// `attngeo extract --snapshot` on stories260K: the default head is the one with the largest sink
// mass of window 0 (checked against contributions.csv's own α_0 column), a named head's P and R
// equal pr.csv on a one-window run, every extract CSV has the types docs/commands/extract.md lists,
// the report draws Figures 1 and 10 from the files, and bad values exit 2 naming the flag.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "reports/csv_table.hpp"
#include "tests/support/shared_data.hpp"
#include "tests/support/test_files.hpp"

namespace fs = std::filesystem;
using namespace attngeo;

namespace {

using attngeo::test_support::run_program;
using attngeo::test_support::shared_folder;
using attngeo::test_support::slurp;

fs::path scratch() {
    return attngeo::test_support::scratch_folder("extract_snapshot");
}

fs::path model_path() {
    return shared_folder() / "models" / "stories260K" / "stories260K.bin";
}

std::string extract_args(const fs::path& out, const std::string& extra) {
    const fs::path corpus = fs::path(ATTNGEO_SOURCE_DIR) / "examples" / "stories260K_corpus.txt";
    return "extract --model " + model_path().string() + " --corpus " + corpus.string() +
           " --context 64 --max-lag 8 --quiet --out " + out.string() + " " + extra;
}

}  // namespace

TEST(ExtractSnapshot, DefaultHeadHasTheLargestSinkMassOfTheFirstWindow) {
    REQUIRE_SHARED_FILE(model_path());
    const fs::path out = scratch() / "default";
    fs::remove_all(out);
    const auto r = run_program(ATTNGEO_EXE, extract_args(out, "--docs 3"), scratch());
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto meta = nlohmann::json::parse(slurp(out / "snapshot.json"));
    EXPECT_EQ(meta.at("document"), 0);
    EXPECT_EQ(meta.at("N"), 8);
    // The plain choice from contributions.csv: the largest α at position 0, first on ties.
    const auto contributions = reports::read_csv_table((out / "contributions.csv").string());
    double best = -1;
    int best_layer = -1, best_head = -1;
    for (std::size_t row = 0; row < contributions.rows.size(); ++row) {
        if (contributions.text(row, "pos") != "0") continue;
        const double alpha0 = contributions.number(row, "alpha");
        if (alpha0 > best)
            best = alpha0, best_layer = int(contributions.number(row, "layer")),
            best_head = int(contributions.number(row, "head"));
    }
    EXPECT_EQ(meta.at("layer"), best_layer);
    EXPECT_EQ(meta.at("head"), best_head);
    const auto tokens = reports::read_csv_table((out / "snapshot.csv").string());
    ASSERT_EQ(tokens.rows.size(), 64u);
    EXPECT_DOUBLE_EQ(tokens.number(0, "alpha"), best);
    int selected = 0;
    for (std::size_t row = 0; row < tokens.rows.size(); ++row)
        selected += tokens.text(row, "selected") == "1";
    EXPECT_EQ(selected, 8);
    // 5 layers × 8 heads × 64 positions.
    EXPECT_EQ(contributions.rows.size(), 5u * 8u * 64u);
    // Every CSV of the folder against docs/commands/extract.md (pandas, or the csv module).
    const std::string python = fs::exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
    const fs::path source(ATTNGEO_SOURCE_DIR);
    const std::string check = python + " " +
                              (source / "tests/python/check_csv_dtypes.py").string() + " " +
                              (source / "docs/commands/extract.md").string() + " " + out.string() +
                              " > " + (scratch() / "dtypes.log").string() + " 2>&1";
    const int status = std::system(check.c_str());
    std::cout << slurp(scratch() / "dtypes.log");
    EXPECT_EQ(status, 0) << slurp(scratch() / "dtypes.log");
    // The report draws Figure 1 and the Figure 10 scatter from these files.
    const fs::path rep = scratch() / "report_default";
    fs::remove_all(rep);
    const auto report = run_program(
        ATTNGEO_EXE, "report --in " + out.string() + " --out " + rep.string(), scratch());
    ASSERT_EQ(report.exit_code, 0) << report.err;
    const std::string html = slurp(rep / "index.html");
    EXPECT_NE(html.find("fig1_snapshot"), std::string::npos);
    EXPECT_NE(html.find("fig10_contribution_scatter"), std::string::npos);
}

TEST(ExtractSnapshot, NamedHeadMatchesPrOnOneWindow) {
    REQUIRE_SHARED_FILE(model_path());
    const fs::path out = scratch() / "named";
    fs::remove_all(out);
    const auto r =
        run_program(ATTNGEO_EXE, extract_args(out, "--docs 1 --snapshot 2:3:16:0"), scratch());
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto meta = nlohmann::json::parse(slurp(out / "snapshot.json"));
    EXPECT_EQ(meta.at("layer"), 2);
    EXPECT_EQ(meta.at("head"), 3);
    EXPECT_EQ(meta.at("N"), 16);
    const auto pr = reports::read_csv_table((out / "pr.csv").string());
    bool found = false;
    for (std::size_t row = 0; row < pr.rows.size(); ++row) {
        if (pr.text(row, "layer") != "2" || pr.text(row, "head") != "3" ||
            pr.text(row, "N") != "16")
            continue;
        found = true;
        // One window: pr.csv's means are that window's P and R (stored as exact sums of the
        // float-rounded values, so equal to float precision).
        EXPECT_NEAR(pr.number(row, "P_mean"), meta.at("precision_at_rmax").get<double>(), 1e-6);
        EXPECT_NEAR(pr.number(row, "R_mean"), meta.at("recall_at_rmin").get<double>(), 1e-6);
    }
    EXPECT_TRUE(found);
    // off: no snapshot files.
    const fs::path off = scratch() / "off";
    fs::remove_all(off);
    ASSERT_EQ(
        run_program(ATTNGEO_EXE, extract_args(off, "--docs 1 --snapshot off"), scratch()).exit_code,
        0);
    EXPECT_FALSE(fs::exists(off / "snapshot.csv"));
    EXPECT_FALSE(fs::exists(off / "contributions.csv"));
}

TEST(ExtractSnapshot, BadValuesExitTwoNamingTheFlag) {
    REQUIRE_SHARED_FILE(model_path());
    for (const char* bad :
         {"1:2", "x:0:8:0", "9:0:8:0", "0:99:8:0", "0:0:65:0", "0:0:8:50", "0:0:0:0"}) {
        const fs::path out = scratch() / "bad";
        fs::remove_all(out);
        const auto r = run_program(
            ATTNGEO_EXE, extract_args(out, std::string("--docs 2 --snapshot ") + bad), scratch());
        EXPECT_EQ(r.exit_code, 2) << bad << "\n" << r.err;
        EXPECT_NE(r.err.find("--snapshot"), std::string::npos) << bad << "\n" << r.err;
        EXPECT_FALSE(fs::exists(out / "heads.csv")) << bad;
    }
}
