// Planted-parameter recovery end to end: `attngeo simulate --as-extract` plants heads with known
// parameters, `attngeo compare --truth` fits them through the whole pipeline, and recovery.csv
// must give the truth back (within the fits' intervals once compare writes them, else within
// stated tolerances); noisy profiles must be flagged; bad input exits 2 and writes nothing.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "common/csv.hpp"
#include "compare/recovery.hpp"
#include "tests/support/test_files.hpp"

namespace fs = std::filesystem;

namespace attngeo::compare {
namespace {

using attngeo::test_support::slurp;

fs::path scratch() {
    return attngeo::test_support::scratch_folder("recovery");
}

attngeo::test_support::CliResult run(const std::string& args) {
    return attngeo::test_support::run_program(ATTNGEO_EXE, args, scratch());
}

// d = 64, 48 heads in layer 0, 32 documents of 128 tokens; β, λ, ρ0, p_sink drawn per head.
// 48 heads, so that "≥ 90 % covered" allows four misses: with 12, a calibrated 95 % interval
// would fail it for one seed in eight. The truth of β and ρ0 is what the generator realises at
// d = 64 (recovery.csv's `truth`: its normalised Gaussian cosines fall short of r^k by
// O(1/d)). 32 documents: with 16 the bootstrap interval of the nonlinear β fit covered 43 of
// the 48 (ρ0 45), with 32 46 (ρ0 44) — a bootstrap over few documents runs narrow.
const char* const kPlantedFlags =
    "--d 64 --L 127 --T1 20 --T2 100 --eta 0.05 --omega 0.3 --heads 48 --docs 32 "
    "--alpha-noise 0.1 --seed 7 --N pow2 --threads 2 --quiet --draw beta=0.02:0.12 "
    "--draw lambda=0.05:0.5 --draw rho0=0:0.2 --draw p_sink=0.1:0.6";

// A planted folder and its compare run, made once per process.
struct PlantedRun {
    fs::path extract, compare;
};

const PlantedRun& planted_run() {
    static const PlantedRun made = [] {
        PlantedRun r{scratch() / "planted", scratch() / "planted_compare"};
        fs::remove_all(r.extract);
        fs::remove_all(r.compare);
        const auto sim =
            run(std::string("simulate ") + kPlantedFlags + " --as-extract " + r.extract.string());
        EXPECT_EQ(sim.exit_code, 0) << sim.err;
        const auto cmp = run("compare --emp " + r.extract.string() + " --truth " +
                             (r.extract / "planted.csv").string() + " --out " + r.compare.string() +
                             " --replicates 100 --threads 2 --quiet");
        EXPECT_EQ(cmp.exit_code, 0) << cmp.err;
        return r;
    }();
    return made;
}

// recovery.csv's rows of one parameter.
std::vector<std::size_t> rows_of(const CsvTable& t, const std::string& parameter) {
    std::vector<std::size_t> rows;
    for (std::size_t r = 0; r < t.rows.size(); ++r)
        if (t.text(r, "parameter") == parameter) rows.push_back(r);
    return rows;
}

TEST(Recovery, PlantedBetaLambdaRho0PSinkComeBack) {
    const PlantedRun& p = planted_run();
    const CsvTable t = read_csv_table((p.compare / "recovery.csv").string());
    // Tolerances without intervals: λ and p_sink are exact up to float32 captures (no norm
    // noise, α_0 = p_sink in every document); β is biased by O(1/d) (E cos of normalised
    // Gaussians is below r^k) and varies with the documents; ρ0 averages 32 documents whose
    // per-document sink cosine ⟨u_0, mean_j u_j⟩ spreads by about ‖mean_j u_j‖/√d, up to 0.1 at
    // β = 0.02 (‖mean_j u_j‖² ≈ 0.6), so the mean's by about 0.02 and 0.1 is five of those.
    const std::map<std::string, std::pair<double, bool>> tolerance = {
        {"beta", {0.15, true}},     // relative
        {"lambda", {1e-5, true}},   // relative
        {"rho0", {0.1, false}},     // absolute
        {"p_sink", {1e-6, true}}};  // relative
    for (const auto& [parameter, tol] : tolerance) {
        const auto rows = rows_of(t, parameter);
        ASSERT_EQ(rows.size(), 48u) << parameter;
        int with_interval = 0, covered = 0;
        double largest = 0;
        for (std::size_t r : rows) {
            const double planted = t.number(r, "planted"), fitted = t.number(r, "fitted");
            const double diff = std::abs(fitted - planted) / (tol.second ? planted : 1.0);
            largest = std::max(largest, diff);
            if (!t.text(r, "covered").empty()) {
                ++with_interval;
                covered += t.text(r, "covered") == "1";
            }
        }
        if (with_interval == static_cast<int>(rows.size())) {
            std::cout << parameter << ": " << covered << " of " << with_interval
                      << " intervals cover the truth; largest difference " << largest
                      << (tol.second ? " relative" : " absolute") << '\n';
            EXPECT_GE(covered, 0.9 * with_interval) << parameter;
        } else {
            std::cout << parameter << ": no intervals in fits.csv/profile.csv; largest "
                      << (tol.second ? "relative" : "absolute") << " difference " << largest
                      << " (tolerance " << tol.first << ")\n";
            EXPECT_LE(largest, tol.first) << parameter;
        }
    }
}

TEST(Recovery, CoverageSummaryAndManifestAgreeWithTheRows) {
    const PlantedRun& p = planted_run();
    const CsvTable rows = read_csv_table((p.compare / "recovery.csv").string());
    const CsvTable summary = read_csv_table((p.compare / "recovery_coverage.csv").string());
    ASSERT_EQ(summary.rows.size(), recovered_parameters().size());
    for (std::size_t s = 0; s < summary.rows.size(); ++s) {
        const auto mine = rows_of(rows, summary.text(s, "parameter"));
        int covered = 0, with_interval = 0, flagged = 0;
        for (std::size_t r : mine) {
            with_interval += !rows.text(r, "covered").empty();
            covered += rows.text(r, "covered") == "1";
            flagged += rows.text(r, "flagged") == "1";
        }
        EXPECT_EQ(summary.integer(s, "heads"), static_cast<std::int64_t>(mine.size()));
        EXPECT_EQ(summary.integer(s, "covered"), covered);
        EXPECT_EQ(summary.integer(s, "with_interval"), with_interval);
        EXPECT_EQ(summary.integer(s, "flagged"), flagged);
    }
    const std::string manifest = slurp(p.compare / "manifest.json");
    EXPECT_NE(manifest.find("\"recovery\""), std::string::npos);
    const std::string extract_manifest = slurp(p.extract / "manifest.json");
    EXPECT_NE(extract_manifest.find("\"planted\""), std::string::npos);
}

TEST(Recovery, ANoisyProfileIsFlaggedNotReportedAsGood) {
    const fs::path extract = scratch() / "noisy", out = scratch() / "noisy_compare";
    fs::remove_all(extract);
    fs::remove_all(out);
    ASSERT_EQ(run("simulate --d 16 --L 127 --T1 20 --T2 100 --eta 0.05 --omega 0.3 --heads 4 "
                  "--docs 4 --alpha-noise 2 --seed 3 --N pow2 --quiet --as-extract " +
                  extract.string())
                  .exit_code,
              0);
    const auto cmp =
        run("compare --emp " + extract.string() + " --truth " + (extract / "planted.csv").string() +
            " --out " + out.string() + " --replicates 0 --quiet");
    ASSERT_EQ(cmp.exit_code, 0) << cmp.err;
    const CsvTable profile = read_csv_table((out / "profile.csv").string());
    const CsvTable t = read_csv_table((out / "recovery.csv").string());
    for (std::size_t r = 0; r < profile.rows.size(); ++r)
        EXPECT_LT(profile.number(r, "r2_log"), kProfileR2Threshold) << "head " << r;
    for (const char* parameter : {"eta", "omega", "T1", "T2", "p_base"})
        for (std::size_t r : rows_of(t, parameter))
            EXPECT_EQ(t.text(r, "flagged"), "1") << parameter << " row " << r;
    // p_sink is α_0 itself, exact whatever the shape's noise: not flagged, and recovered.
    for (std::size_t r : rows_of(t, "p_sink")) {
        EXPECT_EQ(t.text(r, "flagged"), "0");
        EXPECT_NEAR(t.number(r, "fitted"), t.number(r, "planted"), 1e-7);
    }
}

TEST(Recovery, IntervalColumnsArePickedUpWhenPresent) {
    // fits.csv and profile.csv as compare will write them with intervals.
    CsvTable fits{"fits.csv",
                  {"layer", "head", "beta", "beta_lo", "beta_hi", "beta_at_bound", "lambda"},
                  {{"0", "0", "0.1", "0.09", "0.12", "0", "0.2"},
                   {"0", "1", "0.5", "0.45", "0.48", "0", "0.3"}},
                  {2, 3}};
    CsvTable profile{
        "profile.csv",
        {"layer", "head", "p_sink", "p_sink_lo", "p_sink_hi", "r2_log", "at_bound", "fit_failed"},
        {{"0", "0", "0.3", "0.3", "0.3", "0.95", "0", "0"}, {"0", "1", "", "", "", "", "0", "1"}},
        {2, 3}};
    const std::vector<PlantedTruth> truth = {
        {0, 0, {{"beta", 0.1}, {"lambda", 0.2}, {"p_sink", 0.30000001}}},
        {0, 1, {{"beta", 0.5}, {"lambda", 0.3}, {"p_sink", 0.4}}}};
    const auto rows = recovery_rows(truth, fits, profile, 64);
    std::map<std::pair<int, std::string>, RecoveryRow> by;
    for (const auto& r : rows)
        by[{r.head, r.parameter}] = r;
    EXPECT_TRUE(*by.at({0, "beta"}).covered);
    EXPECT_FALSE(*by.at({1, "beta"}).covered);               // 0.5 outside [0.45, 0.48]
    EXPECT_TRUE(*by.at({0, "p_sink"}).covered);              // a float rounding away
    EXPECT_FALSE(by.at({0, "lambda"}).covered.has_value());  // no lambda_lo column
    EXPECT_FALSE(by.at({1, "p_sink"}).fitted.has_value());   // the fit failed ...
    EXPECT_TRUE(by.at({1, "p_sink"}).flagged);               // ... and is flagged
    EXPECT_DOUBLE_EQ(by.at({0, "c_inf"}).planted, 0.0);      // implied by Assumption 2
    EXPECT_DOUBLE_EQ(by.at({1, "beta_offset"}).planted, 0.5);
    const auto coverage = recovery_coverage(rows);
    const auto beta = std::find_if(coverage.begin(), coverage.end(),
                                   [](const RecoveryCoverage& c) { return c.parameter == "beta"; });
    ASSERT_NE(beta, coverage.end());
    EXPECT_EQ(beta->with_interval, 2);
    EXPECT_DOUBLE_EQ(*beta->coverage, 0.5);
}

// Writes `content` as a planted.csv and expects compare to exit 2 naming it, writing nothing.
void expect_bad_truth(const std::string& name, const std::string& content,
                      const std::string& phrase) {
    const PlantedRun& p = planted_run();
    const fs::path truth = scratch() / (name + ".csv"), out = scratch() / (name + "_out");
    std::ofstream(truth) << content;
    fs::remove_all(out);
    const auto r = run("compare --emp " + p.extract.string() + " --truth " + truth.string() +
                       " --out " + out.string() + " --replicates 0 --quiet");
    EXPECT_EQ(r.exit_code, 2) << name << ": " << r.err;
    EXPECT_NE(r.err.find(truth.filename().string()), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(phrase), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_FALSE(fs::exists(out)) << name;
}

TEST(Recovery, MalformedTruthExits2AndWritesNothing) {
    expect_bad_truth("no_head", "layer,beta\n0,0.1\n", "head");
    expect_bad_truth("outside", "layer,head,beta\n0,48,0.1\n", "not in the extract");
    expect_bad_truth("twice", "layer,head,beta\n0,1,0.1\n0,1,0.2\n", "twice");
    expect_bad_truth("text", "layer,head,beta\n0,1,abc\n", "beta");
    expect_bad_truth("no_parameter", "layer,head,gamma\n0,1,0.1\n", "no planted parameter");
    expect_bad_truth("ragged", "layer,head,beta\n0,1\n", "line 2");
    const auto missing = run("compare --emp " + planted_run().extract.string() +
                             " --truth /nonexistent/planted.csv --out " +
                             (scratch() / "missing_out").string() + " --quiet");
    EXPECT_EQ(missing.exit_code, 2);
    EXPECT_NE(missing.err.find("planted.csv"), std::string::npos) << missing.err;
}

TEST(Recovery, BadPlantedFlagsExit2AndWriteNothing) {
    const fs::path out = scratch() / "bad_planted";
    const std::string base = "simulate --d 8 --L 31 --T1 4 --T2 20 --quiet ";
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"--as-extract " + out.string(), "--heads"},
        {"--heads 2 --draw gamma=1:2 --as-extract " + out.string(), "--draw"},
        {"--heads 2 --draw beta=0.3:0.1 --as-extract " + out.string(), "lo 0.3 > hi 0.1"},
        {"--heads 2 --draw beta=0.3 --as-extract " + out.string(), "name=lo:hi"},
        {"--heads 2 --draw beta=1:2 --draw beta=1:2 --as-extract " + out.string(), "twice"},
        {"--heads 2 --draw T1=4:30 --draw T2=20:30 --as-extract " + out.string(), "T1"},
        {"--heads 2 --draw rho0=0.9:0.99 --as-extract " + out.string(), "--draw: head 0"},
        {"--heads 2 --alpha-noise -1 --as-extract " + out.string(), "--alpha-noise"},
        {"--heads 0 --as-extract " + out.string(), "--heads"},
        {"--heads 2 --docs 0 --as-extract " + out.string(), "--docs"},
        {"--heads 2000000000 --docs 2000000000 --as-extract " + out.string(), "memory budget"},
        {"--heads 2 --d inf --as-extract " + out.string(), "--d"},
        {"--heads 2 --d 1e12 --as-extract " + out.string(), "--d"},
        {"--heads 2 --d 2.5 --as-extract " + out.string(), "--d"},
        {"--heads 2 --out " + out.string() + " --as-extract " + out.string(), "--out"},
        {"--heads 2 --out " + out.string(), "--heads: only with --as-extract"},
        {"--heads 2 --trials 5 --as-extract " + out.string(), "--trials: not with --as-extract"},
    };
    for (const auto& [flags, phrase] : cases) {
        fs::remove_all(out);
        const auto r = run(base + flags);
        EXPECT_EQ(r.exit_code, 2) << flags << ": " << r.err;
        EXPECT_NE(r.err.find(phrase), std::string::npos) << flags << ": " << r.err;
        EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
        EXPECT_FALSE(fs::exists(out)) << flags;
    }
}

TEST(Recovery, ReportShowsTheRecoveryTable) {
    const PlantedRun& p = planted_run();
    const fs::path report = scratch() / "planted_report";
    fs::remove_all(report);
    const auto r = run("report --in " + p.compare.string() + " --out " + report.string());
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const std::string html = slurp(report / "index.html");
    EXPECT_NE(html.find("Planted-parameter recovery"), std::string::npos);
    EXPECT_NE(html.find("<code>p_sink</code>"), std::string::npos);
    // compare's fits carry intervals, so the table has them and no warning that they are missing.
    EXPECT_EQ(html.find("No fit in this folder has an interval"), std::string::npos);
    // With intervals (as compare writes them once fits have them): coverage below 0.9 is bad.
    const fs::path with_intervals = scratch() / "planted_compare_intervals";
    fs::remove_all(with_intervals);
    fs::copy(p.compare, with_intervals, fs::copy_options::recursive);
    std::ofstream(with_intervals / "recovery_coverage.csv")
        << "parameter,heads,fitted,with_interval,covered,coverage,flagged,median_abs_error,"
           "max_abs_error\nbeta,24,24,24,20,0.8333333333333334,0,0.001,0.01\n"
           "rho0,24,24,24,23,0.9583333333333334,0,0.01,0.03\n";
    fs::remove_all(report);
    ASSERT_EQ(run("report --in " + with_intervals.string() + " --out " + report.string()).exit_code,
              0);
    const std::string marked = slurp(report / "index.html");
    EXPECT_NE(marked.find("20 of 24"), std::string::npos);
    EXPECT_NE(marked.find("<span class=\"bad\">0.833333</span>"), std::string::npos);
    EXPECT_EQ(marked.find("<span class=\"bad\">0.958333</span>"), std::string::npos);
    EXPECT_EQ(marked.find("No fit in this folder has an interval"), std::string::npos);
}

TEST(Recovery, CsvDtypesOfPlantedAndRecoveryFolders) {
    const fs::path source = fs::path(ATTNGEO_SOURCE_DIR);
    const std::string python = fs::exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
    if (std::system((python + " -c '' 2>/dev/null").c_str()) != 0) GTEST_SKIP() << "no python3";
    const PlantedRun& p = planted_run();
    for (const auto& [doc, dir] : {std::pair{"docs/compare-outputs.md", p.compare},
                                   {"docs/extract-outputs.md", p.extract}}) {
        const fs::path log = scratch() / "recovery_dtypes.log";
        const std::string check =
            python + " " + (source / "tests/python/check_csv_dtypes.py").string() + " " +
            (source / doc).string() + " " + dir.string() + " > " + log.string() + " 2>&1";
        EXPECT_EQ(std::system(check.c_str()), 0) << slurp(log);
    }
}

// The truth compare can recover: at finite d the generator's normalised directions have E cos
// below r^k, so β's truth is above the planted β and ρ0's below ρ0 in size; as d grows both
// tend to the planted values; a planted.csv without d keeps every planted value.
TEST(Recovery, RealisedTruthFollowsTheGeneratorsExpectedCosines) {
    const PlantedTruth at64{0, 0, {{"beta", 0.05}, {"rho0", 0.2}, {"d", 64}}};
    const PlantedTruth wide{0, 0, {{"beta", 0.05}, {"rho0", 0.2}, {"d", 1e6}}};
    const PlantedTruth no_d{0, 0, {{"beta", 0.05}, {"rho0", 0.2}}};
    const double beta64 = realised_truth("beta", 0.05, at64, 64);
    const double rho64 = realised_truth("rho0", 0.2, at64, 64);
    std::cout << "d = 64: beta truth " << beta64 << " (planted 0.05), rho0 truth " << rho64
              << " (planted 0.2)\n";
    EXPECT_GT(beta64, 0.05);
    EXPECT_LT(beta64, 0.06);
    EXPECT_LT(rho64, 0.2);
    EXPECT_GT(rho64, 0.19);
    EXPECT_NEAR(realised_truth("beta", 0.05, wide, 64), 0.05, 1e-6);
    EXPECT_NEAR(realised_truth("rho0", 0.2, wide, 64), 0.2, 1e-6);
    EXPECT_EQ(realised_truth("beta", 0.05, no_d, 64), 0.05);
    EXPECT_EQ(realised_truth("lambda", 0.3, at64, 64), 0.3);
    // c∞'s truth is the offset model's floor on the realised curve: near 0, not exactly.
    EXPECT_LT(std::abs(realised_truth("c_inf", 0.0, at64, 64)), 0.05);
}

}  // namespace
}  // namespace attngeo::compare
