// Tests for reports/: a report from small simulate and sweep runs references only files that
// exist and are non-empty, its figure data are the run's numbers, it degrades to tables when
// gnuplot is missing, a headless Chromium screenshot of it is not blank; a sweep's Table 1 is
// table1.csv's and its sweep.csv must cover the manifest's grid. The verdict section is tested in
// test_verdict_report.cpp.
#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <array>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "common/errors.hpp"
#include "reports/csv_table.hpp"
#include "reports/html.hpp"
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
    const auto sums = simulate::run_grid(config, 2, nullptr, timings);
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
          "Table 1: sensitivity", "information share", "scale-invariant"}) {
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

// The claims table comes first, one column per folder with claims; its cells are claims.csv's
// answers and numbers; a damaged claims.csv is one line naming the file.
TEST(Report, TheClaimsTableOpensThePageWithAColumnPerFolder) {
    const fs::path sim = make_run("sim", "simulate");
    const fs::path other = scratch() / "sim_copy";
    fs::remove_all(other);
    fs::copy(sim, other, fs::copy_options::recursive);
    const fs::path out = scratch() / "report_claims";
    fs::remove_all(out);
    const std::string html = slurp(
        reports::write_report({sim.string(), other.string()}, out.string(), {"first", "second"}));
    const auto claims_at = html.find("<h2 id=\"claims\">");
    ASSERT_NE(claims_at, std::string::npos);
    EXPECT_LT(claims_at, html.find("<h2 id=\"run0\">"));
    EXPECT_NE(html.find("<th>first</th><th>second</th><th>Rule</th>"), std::string::npos);
    const auto claims = reports::read_csv_table((sim / "claims.csv").string());
    ASSERT_EQ(claims.rows.size(), 4u);
    for (std::size_t r = 0; r < claims.rows.size(); ++r) {
        const std::string row = "<b>C1</b> " + claims.text(r, "statement") + " — " +
                                claims.text(r, "variant") + "</td>";
        const auto at = html.find(row);
        ASSERT_NE(at, std::string::npos) << row;
        const std::string cell = ">" + claims.text(r, "answer") + "</b> " +
                                 reports::short_number(claims.number(r, "value"));
        const auto end = html.find("</tr>", at);
        int cells = 0;
        for (auto p = html.find(cell, at); p != std::string::npos && p < end;
             p = html.find(cell, p + 1))
            ++cells;
        EXPECT_EQ(cells, 2) << cell;  // both folders, the same run
    }
    // One folder: the full row with the rule and what decided it.
    const std::string single = slurp(reports::write_report({sim.string()}, out.string()));
    EXPECT_NE(single.find("What decided it"), std::string::npos);
    EXPECT_NE(single.find(claims.text(0, "detail").substr(0, 20)), std::string::npos);
    // A damaged answer names the file and the line.
    std::string text = slurp(other / "claims.csv");
    const auto answer = text.find(claims.text(0, "answer") + ",information share");
    ASSERT_NE(answer, std::string::npos);
    text.replace(answer, claims.text(0, "answer").size(), "maybe");
    std::ofstream(other / "claims.csv") << text;
    try {
        reports::write_report({other.string()}, (scratch() / "r_claims").string());
        FAIL() << "expected InputError";
    } catch (const InputError& e) {
        EXPECT_NE(std::string(e.what()).find("claims.csv' line 2 column 'answer': 'maybe'"),
                  std::string::npos)
            << e.what();
    }
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

namespace {

using attngeo::test_support::first_table_rows;
using attngeo::test_support::relative_difference;
using attngeo::test_support::section_html;

std::string report_of(const std::vector<fs::path>& runs, const std::string& name) {
    return attngeo::test_support::report_text(runs, scratch() / name);
}

}  // namespace

// Table 1 of a sweep is read from the table1.csv the sweep wrote (every row, the first grid
// point's d and the manifest's κ in the sentence); a missing or damaged one is bad input naming
// the file.
TEST(ReportSweep, Table1IsReadFromTheSweepFolder) {
    const fs::path sweep = make_run("sweep_table1", "sweep");
    const std::string html = report_of({sweep}, "report_sweep_table1");
    const std::string section = section_html(html, 0, "Table 1: sensitivity");
    ASSERT_FALSE(section.empty());
    EXPECT_EQ(section.find("has no table1.csv"), std::string::npos);
    const auto manifest = nlohmann::json::parse(slurp(sweep / "manifest.json"));
    const double kappa = manifest.at("table1").at("kappa").get<double>();
    EXPECT_EQ(manifest.at("table1").at("d").get<double>(), 16);  // the first grid point's d
    EXPECT_NE(section.find("(κ = " + reports::short_number(kappa) + ", d = 16)"), std::string::npos)
        << section;
    const auto csv = reports::read_csv_table((sweep / "table1.csv").string());
    const auto rows = first_table_rows(section);
    ASSERT_EQ(rows.size(), csv.rows.size());
    ASSERT_GT(rows.size(), 0u);
    double largest = 0;
    for (std::size_t r = 0; r < rows.size(); ++r) {
        ASSERT_EQ(rows[r].size(), 6u);
        EXPECT_EQ(rows[r][0], csv.text(r, "parameter"));
        EXPECT_EQ(rows[r][1], csv.text(r, "N"));
        const char* columns[4] = {"dP_lower", "dP_upper", "dR_lower", "dR_upper"};
        for (int c = 0; c < 4; ++c) {
            const double want = csv.number(r, columns[c]);
            const double d = want == 0 ? std::abs(std::stod(rows[r][2 + c]))
                                       : relative_difference(rows[r][2 + c], want);
            EXPECT_LE(d, 5e-6) << rows[r][0] << " N=" << rows[r][1] << " " << columns[c];
            largest = std::max(largest, d);
        }
    }
    std::cout << "sweep report's Table 1 against table1.csv: largest relative difference "
              << largest << " over " << rows.size() << " rows\n";

    // A damaged table1.csv is bad input naming the file.
    const fs::path damaged = scratch() / "sweep_table1_damaged";
    fs::remove_all(damaged);
    fs::copy(sweep, damaged);
    std::ofstream(damaged / "table1.csv", std::ios::app) << "beta,4,x,0,0,0,0,0,0,0\n";
    try {
        report_of({damaged}, "report_sweep_table1_damaged");
        FAIL() << "expected InputError";
    } catch (const InputError& e) {
        EXPECT_NE(std::string(e.what()).find("table1.csv"), std::string::npos) << e.what();
    }
    // Without table1.csv the folder is incomplete: bad input naming the file.
    fs::remove(damaged / "table1.csv");
    try {
        report_of({damaged}, "report_sweep_no_table1");
        FAIL() << "expected InputError";
    } catch (const InputError& e) {
        EXPECT_NE(std::string(e.what()).find("table1.csv"), std::string::npos) << e.what();
    }
}

// sweep.csv must cover every grid point's N grid for every bound variant, as simulate.csv covers
// the one point's: a dropped row, a grid index outside the manifest's grid, an unknown variant
// or a missing column is bad input naming sweep.csv, not a panel with a hole.
TEST(ReportSweep, SweepTableMustCoverTheManifestsGrid) {
    const fs::path sweep = make_run("sweep_grid_check", "sweep");
    const std::string intact = slurp(sweep / "sweep.csv");
    std::vector<std::string> lines;
    std::istringstream in(intact);
    for (std::string line; std::getline(in, line);)
        lines.push_back(line);
    ASSERT_GT(lines.size(), 3u);
    const auto expect_refused = [&](const std::string& text, const std::string& what,
                                    const std::string& name) {
        const fs::path damaged = scratch() / ("sweep_grid_" + name);
        fs::remove_all(damaged);
        fs::copy(sweep, damaged);
        std::ofstream(damaged / "sweep.csv", std::ios::trunc) << text;
        try {
            report_of({damaged}, "report_sweep_grid_" + name);
            ADD_FAILURE() << "expected InputError for " << name;
        } catch (const InputError& e) {
            const std::string message = e.what();
            std::cout << name << ": " << message << "\n";
            EXPECT_NE(message.find("sweep.csv"), std::string::npos) << message;
            EXPECT_NE(message.find(what), std::string::npos) << message;
        }
    };
    const auto join = [](const std::vector<std::string>& rows) {
        std::string text;
        for (const auto& row : rows)
            text += row + "\n";
        return text;
    };
    std::vector<std::string> dropped = lines;
    dropped.erase(dropped.begin() + 2);  // the second row: grid 0, N = 1, one variant
    expect_refused(join(dropped), "no row for N = 1 for grid point 0, variant", "dropped");
    expect_refused(lines.front() + "\n", "no row for N", "header_only");
    std::vector<std::string> outside = lines;
    outside[1] = "7" + outside[1].substr(outside[1].find(','));
    expect_refused(join(outside), "expected a grid point of the manifest", "outside");
    std::vector<std::string> renamed = lines;
    const std::size_t at = renamed[1].find(",paper,");
    ASSERT_NE(at, std::string::npos) << renamed[1];
    renamed[1].replace(at, 7, ",banana,");
    expect_refused(join(renamed), "'banana' is not a bound variant", "variant");
    std::vector<std::string> no_joint = lines;
    no_joint[0].replace(no_joint[0].find("R_upper_joint"), 13, "R_upper_jnt");
    expect_refused(join(no_joint), "R_upper_joint", "column");
    // the intact table is taken
    const fs::path again = scratch() / "sweep_grid_intact";
    fs::remove_all(again);
    fs::copy(sweep, again);
    EXPECT_NO_THROW(report_of({again}, "report_sweep_grid_intact"));
}
