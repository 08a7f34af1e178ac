// Tests for reports/: a report from small simulate and sweep runs references only files that
// exist and are non-empty, its figure data are the run's numbers, it degrades to tables when
// gnuplot is missing, a headless Chromium screenshot of it is not blank, and its first section
// is the verdict of docs/design.md §7, read back against verdict.csv, kappa_scan.csv and
// bounds.csv; a sweep's Table 1 is table1.csv's.
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

// ---- The verdict (docs/design.md §7), on run folders written by the built CLI.
namespace {

using attngeo::test_support::first_table_rows;
using attngeo::test_support::run_html;
using attngeo::test_support::section_html;
using attngeo::test_support::section_titles;
using attngeo::test_support::variant_paragraph;

const std::vector<std::string> kVariantNames = {"paper", "exact-mean", "scale-invariant",
                                                "corrected"};
// Small runs: n = 64, phases inside L, powers of two.
const std::string kSmallRun = "--L 63 --T1 8 --T2 48 --N pow2";

fs::path cli_run(const std::string& name, const std::string& args) {
    const fs::path dir = scratch() / name;
    if (fs::exists(dir / "manifest.json")) return dir;
    const auto result = attngeo::test_support::run_program(
        ATTNGEO_EXE, args + " --out " + dir.string() + " > /dev/null", scratch());
    EXPECT_EQ(result.exit_code, 0) << args << ": " << result.err;
    return dir;
}

// A copy of `from` named `name`, so a test can doctor its files.
fs::path copy_run(const fs::path& from, const std::string& name) {
    const fs::path dir = scratch() / name;
    fs::remove_all(dir);
    fs::copy(from, dir, fs::copy_options::recursive);
    return dir;
}

// Rewrites a CSV in place: `edit(table, row)` may change the fields of each row.
void edit_csv(
    const fs::path& path,
    const std::function<void(const reports::CsvTable&, std::vector<std::string>&)>& edit) {
    reports::CsvTable table = reports::read_csv_table(path.string());
    std::ostringstream out;
    for (std::size_t c = 0; c < table.header.size(); ++c)
        out << (c ? "," : "") << table.header[c];
    out << '\n';
    for (auto& row : table.rows) {
        edit(table, row);
        for (std::size_t c = 0; c < row.size(); ++c)
            out << (c ? "," : "") << row[c];
        out << '\n';
    }
    std::ofstream(path) << out.str();
}

std::string report_of(const std::vector<fs::path>& runs, const std::string& name) {
    const fs::path out = scratch() / name;
    fs::remove_all(out);
    std::vector<std::string> dirs;
    for (const auto& r : runs)
        dirs.push_back(r.string());
    return slurp(reports::write_report(dirs, out.string()));
}

// A 6-significant-digit table cell against the file's full-precision value.
double relative_difference(const std::string& cell, double want) {
    const double shown = std::stod(cell);
    return std::abs(shown - want) / std::max(std::abs(want), 1e-300);
}

bool flag(const reports::CsvTable& t, std::size_t r, const std::string& name) {
    return t.text(r, name) == "1";
}

// "The P lower bound of <code>v</code> is nearly κ-free, … moves only at N = 2 and 3, by at
// most 0.000297." — said exactly of the sides verdict.csv flags, with its N and largest move.
void expect_nearly_kappa_free_sentences(const std::string& paragraph, const std::string& v,
                                        const reports::CsvTable& csv) {
    if (!csv.has_column("nearly_kappa_free")) return;
    for (std::size_t r = 0; r < csv.rows.size(); ++r) {
        if (csv.text(r, "variant") != v) continue;
        const std::string subject = "The " + csv.text(r, "metric") + " " + csv.text(r, "side") +
                                    " bound of <code>" + v + "</code> is nearly κ-free";
        const std::size_t at = paragraph.find(subject);
        if (!flag(csv, r, "nearly_kappa_free")) {
            EXPECT_EQ(at, std::string::npos) << subject;
            continue;
        }
        ASSERT_NE(at, std::string::npos) << subject << "\n" << paragraph;
        const std::string sentence = paragraph.substr(at, paragraph.find(". ", at) - at);
        std::string sizes = csv.text(r, "moving_N");
        const std::size_t semicolon = sizes.rfind(';');
        if (semicolon != std::string::npos) sizes.replace(semicolon, 1, " and ");
        for (std::size_t c; (c = sizes.find(';')) != std::string::npos;)
            sizes.replace(c, 1, ", ");
        EXPECT_NE(sentence.find("moves only at N = " + sizes + ","), std::string::npos) << sentence;
        const std::size_t most = sentence.find("by at most ");
        ASSERT_NE(most, std::string::npos) << sentence;
        const double shown = std::stod(sentence.substr(most + 11));
        const double move = csv.number(r, "largest_move");
        std::cout << "nearly kappa-free " << v << " " << csv.text(r, "metric") << " "
                  << csv.text(r, "side") << ": shown " << shown << ", verdict.csv " << move
                  << ", relative difference " << std::abs(shown - move) / move << "\n";
        EXPECT_LE(std::abs(shown - move), 5e-3 * move);  // three significant digits
    }
}

// "The P and R lower bounds of <code>v</code> are κ-free" — the phrase the verdict must say
// exactly for the sides the scan flags, and must not say for any other.
void expect_kappa_free_sentences(const std::string& verdict, const reports::CsvTable& csv) {
    for (const auto& v : kVariantNames) {
        const std::string paragraph = variant_paragraph(verdict, v);
        ASSERT_FALSE(paragraph.empty()) << v;
        for (const std::string side : {"lower", "upper"}) {
            std::vector<std::string> metrics;
            for (std::size_t r = 0; r < csv.rows.size(); ++r)
                if (csv.text(r, "variant") == v && csv.text(r, "side") == side &&
                    flag(csv, r, "kappa_free"))
                    metrics.push_back(csv.text(r, "metric"));
            const std::string subject =
                metrics.size() == 2
                    ? "The P and R " + side + " bounds of <code>" + v + "</code> are κ-free"
                : metrics.size() == 1 ? "The " + metrics[0] + " " + side + " bound of <code>" + v +
                                            "</code> is κ-free"
                                      : "";
            if (!subject.empty()) {
                EXPECT_NE(paragraph.find(subject), std::string::npos) << subject << "\n"
                                                                      << paragraph;
            } else {
                for (const std::string tail : {" is κ-free", " are κ-free"}) {
                    EXPECT_EQ(paragraph.find(side + " bound of <code>" + v + "</code>" + tail),
                              std::string::npos)
                        << paragraph;
                    EXPECT_EQ(paragraph.find(side + " bounds of <code>" + v + "</code>" + tail),
                              std::string::npos)
                        << paragraph;
                }
            }
        }
        expect_nearly_kappa_free_sentences(paragraph, v, csv);
    }
}

}  // namespace

TEST(ReportVerdict, IsTheFirstSectionAndShowsVerdictCsvsNumbers) {
    const fs::path sim = cli_run("cli_sim", "simulate " + kSmallRun + " --trials 50");
    const std::string html = report_of({sim}, "report_verdict");
    const auto titles = section_titles(html, 0);
    ASSERT_FALSE(titles.empty());
    EXPECT_EQ(titles.front().rfind("The verdict", 0), 0u) << titles.front();
    const std::string verdict = section_html(html, 0, "The verdict");
    const auto rows = first_table_rows(verdict);
    const auto csv = reports::read_csv_table((sim / "verdict.csv").string());
    ASSERT_EQ(rows.size(), csv.rows.size());
    ASSERT_EQ(rows.size(), 16u);  // 4 variants × P, R × lower, upper
    // The regime gaps have their own table after the sentences.
    const std::size_t regime_table = verdict.find("by Table-2 regime");
    ASSERT_NE(regime_table, std::string::npos);
    const auto regime_rows = first_table_rows(verdict.substr(regime_table));
    ASSERT_EQ(regime_rows.size(), 16u);
    double largest = 0, largest_regime_gap = 0;
    const std::pair<std::size_t, const char*> numbers[2] = {{6, "mean_gap"}, {7, "mean_width"}};
    const char* regimes[5] = {"I", "II", "III", "IV", "V"};
    for (std::size_t r = 0; r < rows.size(); ++r) {
        ASSERT_EQ(rows[r].size(), 12u);
        EXPECT_EQ(rows[r][0], kVariantNames[r / 4]);
        EXPECT_EQ(rows[r][0], csv.text(r, "variant"));
        EXPECT_EQ(rows[r][1], csv.text(r, "metric"));
        EXPECT_EQ(rows[r][2], csv.text(r, "side"));
        for (const auto& [column, name] : numbers) {
            const double d = relative_difference(rows[r][column], csv.number(r, name));
            EXPECT_LE(d, 5e-4) << name << " row " << r << ": " << rows[r][column];
            largest = std::max(largest, d);
        }
        // κ*: none for a κ-free side, "≥ X" for one that saturates above.
        std::string star = rows[r][3];
        if (flag(csv, r, "kappa_free")) {
            EXPECT_EQ(star, "—");
        } else {
            const std::string saturates = csv.text(r, "kappa_star_saturates");
            const std::string sign = saturates == "above" ? "≥ " : saturates == "below" ? "≤ " : "";
            ASSERT_EQ(star.rfind(sign, 0), 0u) << star;
            const double d =
                relative_difference(star.substr(sign.size()), csv.number(r, "kappa_star"));
            EXPECT_LE(d, 5e-4) << "kappa_star row " << r << ": " << star;
            largest = std::max(largest, d);
        }
        EXPECT_EQ(rows[r][4],
                  csv.text(r, "violations") + " / " + csv.text(r, "violations_allowed"));
        EXPECT_EQ(rows[r][5] == "none", csv.text(r, "kappa_zero").empty());
        EXPECT_EQ(rows[r][8], csv.text(r, "informative_points") + " of " + csv.text(r, "points"));
        EXPECT_EQ(rows[r][9], csv.text(r, "at_limit_points"));
        EXPECT_EQ(rows[r][10], csv.text(r, "n_only_points"));
        EXPECT_EQ(rows[r][11], csv.text(r, "identity_contradicted"));
        for (int k = 0; k < 5; ++k) {
            const std::string gap = csv.text(r, std::string("gap_") + regimes[k]);
            const std::string& cell = regime_rows[r][3 + k];
            if (gap.empty()) {
                EXPECT_EQ(cell, "–");
            } else {
                // Four significant digits in these cells.
                const double d = relative_difference(cell, std::stod(gap));
                EXPECT_LE(d, 5e-4) << "gap_" << regimes[k] << ": " << cell;
                largest_regime_gap = std::max(largest_regime_gap, d);
                EXPECT_NE(cell.find("(" + csv.text(r, std::string("points_") + regimes[k]) + ")"),
                          std::string::npos);
            }
        }
        const std::string paragraph = variant_paragraph(verdict, csv.text(r, "variant"));
        const std::string edge = "κ* of " + csv.text(r, "metric") + " " + csv.text(r, "side") +
                                 " sits at the edge of the grid";
        EXPECT_EQ(paragraph.find(edge) != std::string::npos, flag(csv, r, "at_grid_edge"))
            << paragraph;
    }
    std::cout << "largest relative difference, table vs verdict.csv: " << largest
              << " (gaps by regime, 4 digits: " << largest_regime_gap << ")\n";
    RecordProperty("largest_relative_difference", std::to_string(largest));
    expect_kappa_free_sentences(verdict, csv);
    // The old fraction inside only next to the envelope's width.
    const std::string agreement = section_html(html, 0, "κ and envelope agreement");
    EXPECT_NE(agreement.find("fraction inside / mean width"), std::string::npos);
    for (const auto& v : kVariantNames)
        EXPECT_NE(agreement.find("<code>" + v + "</code>"), std::string::npos) << v;
}

// The demo (simulate on its defaults, the paper preset): the paper P lower bound moves with κ
// only at N = 2 and 3, by about 3e-4 — nearly κ-free, not κ-free — while R lower and P upper
// are κ-free; the verdict says each of these per side and nothing more.
TEST(ReportVerdict, DemoPresetSaysNearlyKappaFreeWithItsNumbers) {
    const fs::path demo = cli_run("cli_demo", "simulate");
    const auto csv = reports::read_csv_table((demo / "verdict.csv").string());
    std::size_t P_lower = csv.rows.size();
    for (std::size_t r = 0; r < csv.rows.size(); ++r) {
        if (csv.text(r, "variant") != "paper") continue;
        const std::string side = csv.text(r, "metric") + " " + csv.text(r, "side");
        if (side == "P lower") P_lower = r;
        if (side == "R lower" || side == "P upper") {
            EXPECT_TRUE(flag(csv, r, "kappa_free")) << side;
        }
    }
    ASSERT_LT(P_lower, csv.rows.size());
    std::cout << "demo paper P lower: points_moving " << csv.text(P_lower, "points_moving")
              << ", largest_move " << csv.text(P_lower, "largest_move") << ", moving_N "
              << csv.text(P_lower, "moving_N") << "\n";
    EXPECT_FALSE(flag(csv, P_lower, "kappa_free"));
    EXPECT_TRUE(flag(csv, P_lower, "nearly_kappa_free"));
    EXPECT_EQ(csv.text(P_lower, "points_moving"), "2");
    EXPECT_EQ(csv.text(P_lower, "moving_N"), "2;3");
    EXPECT_GT(csv.number(P_lower, "largest_move"), 3e-4);
    EXPECT_LT(csv.number(P_lower, "largest_move"), 3.5e-4);
    const std::string verdict = section_html(report_of({demo}, "report_demo"), 0, "The verdict");
    expect_kappa_free_sentences(verdict, csv);
    const std::string paper = variant_paragraph(verdict, "paper");
    EXPECT_NE(paper.find("The P lower bound of <code>paper</code> is nearly κ-free, not κ-free"),
              std::string::npos)
        << paper;
    EXPECT_NE(paper.find("moves only at N = 2 and 3, by at most 0.000325"), std::string::npos)
        << paper;
    // The collapse to the union-bound counts is said of R only, the κ-free lower side.
    EXPECT_EQ(paper.find("-like"), std::string::npos) << paper;
    EXPECT_NE(paper.find("so there the R lower bound is 0 whatever κ is"), std::string::npos)
        << paper;
}

TEST(ReportVerdict, SaysKappaFreeExactlyWhereTheScanDoes) {
    // Doctored both ways, so the phrase is checked present and absent whatever the run gives.
    const fs::path sim = cli_run("cli_sim", "simulate " + kSmallRun + " --trials 50");
    const fs::path doctored = copy_run(sim, "cli_sim_kappa_free");
    edit_csv(doctored / "verdict.csv",
             [](const reports::CsvTable& t, std::vector<std::string>& row) {
                 const std::string& variant = row[t.column("variant")];
                 const std::string& side = row[t.column("side")];
                 if (variant == "corrected")
                     row[t.column("kappa_free")] = side == "lower" ? "1" : "0";
                 if (variant == "paper") row[t.column("kappa_free")] = side == "lower" ? "0" : "1";
                 if (variant == "exact-mean")
                     row[t.column("kappa_free")] =
                         row[t.column("metric")] == "R" && side == "upper" ? "1" : "0";
             });
    for (const fs::path& run : {sim, doctored}) {
        const std::string html = report_of({run}, "report_kappa_free");
        const auto csv = reports::read_csv_table((run / "verdict.csv").string());
        expect_kappa_free_sentences(section_html(html, 0, "The verdict"), csv);
    }
    const std::string html = report_of({doctored}, "report_kappa_free");
    EXPECT_NE(html.find("The P and R lower bounds of <code>corrected</code> are κ-free"),
              std::string::npos);
    EXPECT_NE(html.find("The R upper bound of <code>exact-mean</code> is κ-free"),
              std::string::npos);
}

TEST(ReportVerdict, KappaScanFigurePerVariantMarksKappaStar) {
    const fs::path sim = cli_run("cli_sim", "simulate " + kSmallRun + " --trials 50");
    const fs::path out = scratch() / "report_kappa_figures";
    fs::remove_all(out);
    const std::string html = slurp(reports::write_report({sim.string()}, out.string()));
    const std::string verdict = section_html(html, 0, "The verdict");
    const auto csv = reports::read_csv_table((sim / "verdict.csv").string());
    const auto scan = reports::read_csv_table((sim / "kappa_scan.csv").string());
    const std::pair<const char*, const char*> sides[4] = {
        {"P", "lower"}, {"P", "upper"}, {"R", "lower"}, {"R", "upper"}};
    for (const auto& v : kVariantNames) {
        const std::string id = "run0_kappa_" + v;
        EXPECT_NE(verdict.find("<figure id=\"" + id + "\">"), std::string::npos) << id;
        EXPECT_TRUE(fs::exists(out / "figures" / (id + ".svg"))) << id;
        const std::string script = slurp(out / "figures" / (id + ".gp"));
        EXPECT_NE(script.find(id + "_star.dat"), std::string::npos);
        EXPECT_NE(script.find("title 'κ*'"), std::string::npos);
        // The marks are verdict.csv's κ*, and each curve has every scanned κ of its side.
        std::istringstream stars(slurp(out / "figures" / (id + "_star.dat")));
        std::istringstream curves(slurp(out / "figures" / (id + ".dat")));
        std::string line;
        std::getline(stars, line);
        std::getline(curves, line);
        std::vector<std::size_t> block_sizes(1, 0);
        std::size_t blanks = 0;
        while (std::getline(curves, line)) {
            if (line.empty()) {
                if (++blanks == 2) block_sizes.push_back(0), blanks = 0;
                continue;
            }
            ++block_sizes.back();
        }
        ASSERT_EQ(block_sizes.size(), 4u);
        for (int k = 0; k < 4; ++k) {
            int index = -1;
            double kappa = 0, coverage = 0;
            stars >> index >> kappa >> coverage;
            EXPECT_EQ(index, k);
            std::size_t expected_rows = 0;
            for (std::size_t r = 0; r < scan.rows.size(); ++r)
                expected_rows += scan.text(r, "variant") == v &&
                                 scan.text(r, "metric") == sides[k].first &&
                                 scan.text(r, "side") == sides[k].second;
            EXPECT_EQ(block_sizes[k], expected_rows) << v << " block " << k;
            EXPECT_GT(expected_rows, 40u);  // 1e-8..1e8 in 0.25 decades, plus the refinement
            for (std::size_t r = 0; r < csv.rows.size(); ++r) {
                if (csv.text(r, "variant") != v || csv.text(r, "metric") != sides[k].first ||
                    csv.text(r, "side") != sides[k].second)
                    continue;
                EXPECT_EQ(kappa, csv.number(r, "kappa_star")) << v << " " << k;
                EXPECT_EQ(coverage, csv.number(r, "coverage")) << v << " " << k;
            }
        }
    }
}

TEST(ReportVerdict, Figure5DrawsEachSideAtKappaStarAndMarksInvertedEnvelopes) {
    const fs::path sim = cli_run("cli_sim", "simulate " + kSmallRun + " --trials 50");
    // Doctored: the paper P envelope at N = 2 inverted (as bounds.csv would flag it).
    const fs::path doctored = copy_run(sim, "cli_sim_inverted");
    edit_csv(doctored / "bounds.csv",
             [](const reports::CsvTable& t, std::vector<std::string>& row) {
                 if (row[t.column("variant")] != "paper" ||
                     (row[t.column("N")] != "2" && row[t.column("N")] != "4"))
                     return;
                 row[t.column("P_lower_star")] = "0.75";
                 row[t.column("P_upper_star")] = "0.5";
                 row[t.column("P_inverted")] = "1";
             });
    for (const fs::path& run : {sim, doctored}) {
        const fs::path out = scratch() / "report_fig5";
        fs::remove_all(out);
        const std::string html = slurp(reports::write_report({run.string()}, out.string()));
        const auto bounds = reports::read_csv_table((run / "bounds.csv").string());
        std::map<std::pair<std::string, std::string>, std::array<double, 2>> star;
        std::map<std::string, std::vector<std::string>> flagged;  // variant → N with P_inverted
        for (std::size_t r = 0; r < bounds.rows.size(); ++r) {
            star[{bounds.text(r, "variant"), bounds.text(r, "N")}] = {
                bounds.number(r, "P_lower_star"), bounds.number(r, "P_upper_star")};
            if (flag(bounds, r, "P_inverted"))
                flagged[bounds.text(r, "variant")].push_back(bounds.text(r, "N"));
        }
        std::istringstream dat(slurp(out / "figures" / "run0_P.dat"));
        std::string line;
        std::getline(dat, line);
        for (const auto& v : kVariantNames)
            EXPECT_NE(line.find(v), std::string::npos) << v;
        int inverted_rows = 0;
        while (std::getline(dat, line)) {
            std::istringstream fields(line);
            std::vector<std::string> f;
            for (std::string x; fields >> x;)
                f.push_back(x);
            ASSERT_EQ(f.size(), 4u + 3 * 4 + 1) << line;
            for (std::size_t v = 0; v < 4; ++v) {
                const auto& want = star.at({kVariantNames[v], f[0]});
                EXPECT_EQ(std::stod(f[4 + 3 * v]), want[0]);
                EXPECT_EQ(std::stod(f[5 + 3 * v]), want[1]);
                EXPECT_EQ(f[6 + 3 * v], want[0] > want[1] ? "1" : "0") << line;
                inverted_rows += want[0] > want[1];
            }
        }
        const std::string caption_start = "Precision E[P(r_max, N)] against N.</b>";
        const std::size_t caption = html.find(caption_start);
        ASSERT_NE(caption, std::string::npos);
        const std::string text =
            html.substr(caption, html.find("</figcaption>", caption) - caption);
        EXPECT_NE(text.find("_star"), std::string::npos) << text;
        EXPECT_EQ(text.find("Inverted envelopes") != std::string::npos, inverted_rows > 0) << text;
        const std::string paper = variant_paragraph(html, "paper");
        if (flagged.count("paper")) {
            std::string sizes;
            for (const auto& N : flagged.at("paper"))
                sizes += (sizes.empty() ? "" : ", ") + N;
            EXPECT_NE(paper.find("for P at N = " + sizes), std::string::npos) << paper;
        } else {
            EXPECT_EQ(paper.find("inverted"), std::string::npos) << paper;
        }
        if (run == doctored) {
            EXPECT_GE(inverted_rows, 2);
            EXPECT_NE(paper.find("for P at N = 2, 4"), std::string::npos) << paper;
        }
    }
}

TEST(ReportVerdict, SweepShowsTheVerdictAggregatedOverGridPoints) {
    const fs::path sweep =
        cli_run("cli_sweep", "sweep " + kSmallRun + " --trials 30 --set beta=0.02,0.2");
    const std::string html = report_of({sweep}, "report_sweep_verdict");
    const auto titles = section_titles(html, 0);
    ASSERT_FALSE(titles.empty());
    EXPECT_EQ(titles.front().rfind("The verdict", 0), 0u) << titles.front();
    const std::string verdict = section_html(html, 0, "The verdict");
    const auto csv = reports::read_csv_table((sweep / "verdict.csv").string());
    ASSERT_EQ(csv.rows.size(), 32u);  // 2 grid points × 16
    // Independent aggregation: per (variant, "metric side"), κ* and flags over grid points.
    std::map<std::pair<std::string, std::string>, std::vector<std::size_t>> groups;
    for (std::size_t r = 0; r < csv.rows.size(); ++r)
        groups[{csv.text(r, "variant"), csv.text(r, "metric") + " " + csv.text(r, "side")}]
            .push_back(r);
    const auto rows = first_table_rows(verdict);
    ASSERT_EQ(rows.size(), 16u);
    double largest = 0;
    for (std::size_t i = 0; i < rows.size(); ++i) {
        EXPECT_EQ(rows[i][0], kVariantNames[i / 4]);
        const auto& members = groups.at({rows[i][0], rows[i][1]});
        ASSERT_EQ(members.size(), 2u);
        const double k0 = csv.number(members[0], "kappa_star"),
                     k1 = csv.number(members[1], "kappa_star");
        const double min_coverage =
            std::min(csv.number(members[0], "coverage"), csv.number(members[1], "coverage"));
        const double free_fraction =
            (flag(csv, members[0], "kappa_free") + flag(csv, members[1], "kappa_free")) / 2.0;
        for (const auto& [cell, want] :
             {std::make_pair(rows[i][2], 0.5 * (k0 + k1)), std::make_pair(rows[i][3], min_coverage),
              std::make_pair(rows[i][5], free_fraction)}) {
            const double d =
                want == 0 ? std::abs(std::stod(cell)) : relative_difference(cell, want);
            EXPECT_LE(d, 5e-6) << rows[i][0] << " " << rows[i][1] << ": " << cell;
            largest = std::max(largest, d);
        }
    }
    std::cout << "largest relative difference, aggregated table vs verdict.csv: " << largest
              << "\n";
    // The per-grid-point κ* table: 2 grid points × 4 variants, each side's κ*.
    const std::size_t per_point = verdict.find("κ* per grid point");
    ASSERT_NE(per_point, std::string::npos);
    const auto points = first_table_rows(verdict.substr(per_point));
    ASSERT_EQ(points.size(), 8u);
    for (const auto& row : points) {
        for (std::size_t r = 0; r < csv.rows.size(); ++r) {
            if (csv.text(r, "grid") != row[0] || csv.text(r, "variant") != row[2]) continue;
            const std::size_t column =
                3 + (csv.text(r, "metric") == "R") * 2 + (csv.text(r, "side") == "upper");
            EXPECT_LE(relative_difference(row[column], csv.number(r, "kappa_star")), 5e-6);
            EXPECT_EQ(row[column].find("‡") != std::string::npos, flag(csv, r, "kappa_free"));
        }
    }
    for (const auto& v : kVariantNames) {
        EXPECT_NE(verdict.find("<figure id=\"run0_kappa_" + v + "\">"), std::string::npos) << v;
        EXPECT_FALSE(variant_paragraph(verdict, v).empty()) << v;
    }
    EXPECT_NE(verdict.find("grid point 0 of the sweep"), std::string::npos);
}

TEST(ReportVerdict, InfiniteDIsTheExpectedGeometryLimitWithoutTrials) {
    const fs::path run = cli_run("cli_inf", "simulate " + kSmallRun + " --d inf");
    const auto manifest = nlohmann::json::parse(slurp(run / "manifest.json"));
    ASSERT_EQ(manifest.at("config").at("d"), "inf");  // what the report must recognise
    const fs::path finite = cli_run("cli_sim", "simulate " + kSmallRun + " --trials 50");
    const std::string html = report_of({run, finite}, "report_inf");
    const std::string infinite_part = run_html(html, 0), finite_part = run_html(html, 1);
    EXPECT_EQ(section_titles(html, 0).front().rfind("The verdict", 0), 0u);
    EXPECT_NE(infinite_part.find("expected-geometry limit"), std::string::npos);
    EXPECT_NE(infinite_part.find("not the large-d limit"), std::string::npos);
    EXPECT_EQ(finite_part.find("expected-geometry limit"), std::string::npos);
    const auto parameters = [&](int index) {
        std::set<std::string> names;
        for (const auto& row : first_table_rows(section_html(html, index, "Parameters")))
            names.insert(row.at(0));
        return names;
    };
    EXPECT_EQ(parameters(0).count("trials"), 0u);
    EXPECT_EQ(parameters(1).count("trials"), 1u);
    EXPECT_EQ(parameters(0).count("d"), 1u);
}

// A run folder is read by its format_version, not guessed from its files: without verdict.csv it
// is incomplete, and without a format_version it is refused before any file is read.
TEST(ReportVerdict, MissingVerdictOrVersionIsAnInputErrorNamingTheFile) {
    const fs::path sim = cli_run("cli_sim", "simulate " + kSmallRun + " --trials 50");
    const fs::path old = copy_run(sim, "cli_sim_old");
    fs::remove(old / "verdict.csv");
    try {
        report_of({old}, "report_old");
        FAIL() << "expected InputError";
    } catch (const InputError& e) {
        EXPECT_NE(std::string(e.what()).find("verdict.csv"), std::string::npos) << e.what();
    }
    const fs::path unversioned = copy_run(sim, "cli_sim_unversioned");
    auto manifest = nlohmann::json::parse(slurp(unversioned / "manifest.json"));
    manifest.erase("format_version");
    std::ofstream(unversioned / "manifest.json") << manifest.dump(2);
    try {
        report_of({unversioned}, "report_unversioned");
        FAIL() << "expected InputError";
    } catch (const InputError& e) {
        EXPECT_NE(std::string(e.what()).find((unversioned / "manifest.json").string() +
                                             "': no format_version"),
                  std::string::npos)
            << e.what();
    }
    // A malformed verdict.csv is an input error naming the file.
    std::ofstream(old / "verdict.csv") << "variant,metric\npaper,P\n";
    try {
        report_of({old}, "report_old_bad");
        FAIL() << "expected InputError";
    } catch (const InputError& e) {
        EXPECT_NE(std::string(e.what()).find("verdict.csv"), std::string::npos) << e.what();
    }
    // The point's verdict blocks (manifest points[0].envelopes) are read as simulate writes
    // them: a key missing, or a variant, is bad input naming manifest.json and the key.
    const nlohmann::json intact = nlohmann::json::parse(slurp(sim / "manifest.json"));
    for (const auto& [variant, key] : std::vector<std::pair<std::string, std::string>>{
             {"paper", "kappa_rule"}, {"corrected", "hypotheses"}, {"exact-mean", "degenerate"}}) {
        const fs::path damaged = copy_run(sim, "cli_sim_no_" + key);
        nlohmann::json without = intact;
        without["points"][0]["envelopes"][variant].erase(key);
        std::ofstream(damaged / "manifest.json", std::ios::trunc) << without.dump(2);
        attngeo::test_support::expect_input_error([&] { report_of({damaged}, "report_no_" + key); },
                                                  {"manifest.json", key});
    }
}

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
