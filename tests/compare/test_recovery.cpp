// Planted-parameter recovery end to end: `attngeo simulate --as-extract` plants heads with known
// parameters, `attngeo compare --truth` fits them through the whole pipeline, and recovery.csv
// must give the truth back within stated tolerances, with fit intervals calibrated under α and
// norm noise wherever they are not flagged, and reported exact where nothing varies; noisy
// profiles must be flagged; bad input exits 2 and writes nothing.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
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

// The calibration run (docs/design.md §7, "Fit intervals calibrated under noise"): α noise
// σ = 0.3 and norm noise CV = 0.05, as a real head shows; d = 64, 64 heads in layer 0, 32
// documents of 128 tokens, every parameter drawn per head (the profile's shape too, so some
// heads have a resolvable oscillation and some not). 64 heads, so that a share of 0.85 is
// measured to about ±0.04 (binomial, at a true 0.95) on the parameters every head reports.
// The truth of β and ρ0 is what the generator realises at d = 64 (recovery.csv's `truth`).
const char* const kNoisyFlags =
    "--d 64 --L 127 --T1 20 --T2 100 --heads 64 --docs 32 --alpha-noise 0.3 --norm-cv 0.05 "
    "--seed 7 --N pow2 --threads 2 --quiet --draw T1=10:30 --draw T2=70:110 "
    "--draw eta=0.03:0.1 --draw omega=0.15:0.6 --draw beta=0.02:0.12 --draw lambda=0.05:0.5 "
    "--draw rho0=0:0.2 --draw p_sink=0.1:0.6";

// Without any noise in α or the norms: the profile, λ and C are the same in every document.
const char* const kNoiseFreeFlags =
    "--d 32 --L 63 --T1 10 --T2 50 --eta 0.05 --omega 0.4 --heads 6 --docs 8 --seed 3 --N pow2 "
    "--threads 2 --quiet --draw beta=0.05:0.2 --draw lambda=0.1:0.5 --draw p_sink=0.2:0.5";

// A planted folder and its compare run, made once per process.
struct PlantedRun {
    fs::path extract, compare;
};

PlantedRun make_planted_run(const std::string& name, const std::string& flags) {
    PlantedRun r{scratch() / name, scratch() / (name + "_compare")};
    fs::remove_all(r.extract);
    fs::remove_all(r.compare);
    const auto sim = run("simulate " + flags + " --as-extract " + r.extract.string());
    EXPECT_EQ(sim.exit_code, 0) << sim.err;
    // --band-replicates only sizes the verdict's band, which recovery does not read.
    const auto cmp = run("compare --emp " + r.extract.string() + " --truth " +
                         (r.extract / "planted.csv").string() + " --out " + r.compare.string() +
                         " --replicates 100 --band-replicates 200 --threads 2 --quiet");
    EXPECT_EQ(cmp.exit_code, 0) << cmp.err;
    return r;
}

const PlantedRun& noisy_run() {
    static const PlantedRun made = make_planted_run("calibration", kNoisyFlags);
    return made;
}

const PlantedRun& noise_free_run() {
    static const PlantedRun made = make_planted_run("noise_free", kNoiseFreeFlags);
    return made;
}

// recovery.csv's rows of one parameter.
std::vector<std::size_t> rows_of(const CsvTable& t, const std::string& parameter) {
    std::vector<std::size_t> rows;
    for (std::size_t r = 0; r < t.rows.size(); ++r)
        if (t.text(r, "parameter") == parameter) rows.push_back(r);
    return rows;
}

bool is_fits_parameter(const std::string& parameter) {
    for (const char* name : {"beta", "beta_offset", "c_inf", "lambda", "C", "rho0"})
        if (parameter == name) return true;
    return false;
}

// Whether compare's own table names `parameter` in the head's `unidentified` list.
bool listed_unidentified(const CsvTable& table, int layer, int head, const std::string& parameter) {
    for (std::size_t r = 0; r < table.rows.size(); ++r) {
        if (table.integer(r, "layer") != layer || table.integer(r, "head") != head) continue;
        const std::string list = ";" + table.text(r, "unidentified") + ";";
        return list.find(";" + parameter + ";") != std::string::npos;
    }
    ADD_FAILURE() << "no row for layer " << layer << " head " << head << " in " << table.path;
    return false;
}

// The point fits against the planted values, within stated tolerances.
void expect_point_fits_come_back(const CsvTable& t) {
    // λ averages 32 documents whose sink norm has CV 0.05 (1 % of λ, 3 % over 64 heads); β is
    // biased by O(1/d) against the planted value and varies with the documents; ρ0 averages
    // 32 documents whose per-document sink cosine spreads by up to 0.1 at β = 0.02, so the
    // mean's by about 0.02 and 0.1 is five of those; p_sink = α_0 carries no noise (float32).
    const std::map<std::string, std::pair<double, bool>> tolerance = {
        {"beta", {0.15, true}},     // relative to the planted value
        {"lambda", {0.05, true}},   // relative
        {"rho0", {0.1, false}},     // absolute
        {"p_sink", {1e-6, true}}};  // relative
    for (const auto& [parameter, tol] : tolerance) {
        const auto rows = rows_of(t, parameter);
        ASSERT_EQ(rows.size(), 64u) << parameter;
        double largest = 0;
        for (std::size_t r : rows) {
            const double planted = t.number(r, "planted"), fitted = t.number(r, "fitted");
            largest = std::max(largest, std::abs(fitted - planted) / (tol.second ? planted : 1.0));
        }
        std::cout << parameter << ": largest " << (tol.second ? "relative" : "absolute")
                  << " difference to the planted value " << largest << " (tolerance " << tol.first
                  << ")\n";
        EXPECT_LE(largest, tol.first) << parameter;
    }
}

// Planted heads under noise come back: the point fits within stated tolerances, and the
// calibration of the intervals: every parameter's unflagged intervals cover
// the truth in at least 85 % of heads, counted here from recovery.csv's rows and compare's own
// tables (the flag recounted from their `unidentified` lists), and recovery_coverage.csv and
// the manifest agree with that recount. The parameters every head identifies must stay
// unflagged in most heads (no passing by flagging everything), ω and T1 in enough heads for a
// share to mean something; p_sink = α_0 has no noise and is exact.
TEST(Recovery, NoisyHeadsComeBackWithIntervalsThatHoldWhereNotFlagged) {
    const PlantedRun& p = noisy_run();
    const CsvTable rows = read_csv_table((p.compare / "recovery.csv").string());
    expect_point_fits_come_back(rows);
    const CsvTable summary = read_csv_table((p.compare / "recovery_coverage.csv").string());
    const CsvTable fits = read_csv_table((p.compare / "fits.csv").string());
    const CsvTable profile = read_csv_table((p.compare / "profile.csv").string());
    ASSERT_EQ(summary.rows.size(), recovered_parameters().size());
    const std::string manifest = slurp(p.compare / "manifest.json");
    EXPECT_NE(manifest.find("\"recovery\""), std::string::npos);
    for (std::size_t s = 0; s < summary.rows.size(); ++s) {
        const std::string parameter = summary.text(s, "parameter");
        const CsvTable& table = is_fits_parameter(parameter) ? fits : profile;
        int intervals = 0, covered = 0, exact = 0, unflagged = 0, unflagged_covered = 0;
        for (std::size_t r : rows_of(rows, parameter)) {
            const double lo = rows.number(r, "lo"), hi = rows.number(r, "hi");
            const int layer = static_cast<int>(rows.integer(r, "layer"));
            const int head = static_cast<int>(rows.integer(r, "head"));
            if (listed_unidentified(table, layer, head, parameter)) {
                EXPECT_EQ(rows.text(r, "flagged"), "1") << parameter << " head " << head;
            }
            if (rows.text(r, "exact") == "1") {
                EXPECT_LE(hi - lo, 1e-6 * std::max(std::abs(lo), std::abs(hi))) << parameter;
                EXPECT_EQ(rows.text(r, "covered"), "") << parameter;
                ++exact;
                continue;
            }
            const double truth = rows.number(r, "truth");
            const double slack = 1e-6 * std::max({std::abs(truth), std::abs(lo), std::abs(hi)});
            const bool in = lo - slack <= truth && truth <= hi + slack;
            EXPECT_EQ(rows.text(r, "covered"), in ? "1" : "0") << parameter << " head " << head;
            ++intervals, covered += in;
            if (rows.text(r, "flagged") == "0") ++unflagged, unflagged_covered += in;
        }
        EXPECT_EQ(summary.integer(s, "with_interval"), intervals) << parameter;
        EXPECT_EQ(summary.integer(s, "covered"), covered) << parameter;
        EXPECT_EQ(summary.integer(s, "exact"), exact) << parameter;
        EXPECT_EQ(summary.integer(s, "unflagged"), unflagged) << parameter;
        EXPECT_EQ(summary.integer(s, "unflagged_covered"), unflagged_covered) << parameter;
        const double share = unflagged > 0 ? double(unflagged_covered) / unflagged : 1.0;
        std::cout << parameter << ": " << covered << " of " << intervals
                  << " intervals cover the truth; not flagged: " << unflagged_covered << " of "
                  << unflagged << " (" << share << "); exact: " << exact << '\n';
        EXPECT_GE(share, 0.85) << parameter;
        if (parameter == "p_sink") {
            EXPECT_EQ(exact, 64);
        } else if (parameter == "omega" || parameter == "T1") {
            EXPECT_GE(unflagged, 10) << parameter;
        } else {
            EXPECT_GE(unflagged, 0.75 * 64) << parameter;
        }
    }
}

TEST(Recovery, NoiseFreeIntervalsAreReportedExact) {
    const PlantedRun& p = noise_free_run();
    const CsvTable summary = read_csv_table((p.compare / "recovery_coverage.csv").string());
    const CsvTable rows = read_csv_table((p.compare / "recovery.csv").string());
    const std::set<std::string> exact = {"lambda", "C",     "p_sink", "p_base",
                                         "eta",    "omega", "T1",     "T2"};
    for (std::size_t s = 0; s < summary.rows.size(); ++s) {
        const std::string parameter = summary.text(s, "parameter");
        const bool noise_free = exact.count(parameter) > 0;
        std::cout << parameter << ": exact " << summary.text(s, "exact") << ", with interval "
                  << summary.text(s, "with_interval") << '\n';
        // β, β_offset, c∞ and ρ0 rest on the random directions, which differ per document.
        EXPECT_EQ(summary.integer(s, "exact"), noise_free ? 6 : 0) << parameter;
        EXPECT_EQ(summary.integer(s, "with_interval"), noise_free ? 0 : 6) << parameter;
        EXPECT_EQ(summary.text(s, "coverage").empty(), noise_free) << parameter;
        for (std::size_t r : rows_of(rows, parameter)) {
            EXPECT_EQ(rows.text(r, "exact"), noise_free ? "1" : "0") << parameter;
            EXPECT_EQ(rows.text(r, "covered").empty(), noise_free) << parameter;
            if (noise_free) {  // an exact interval holds the exact fit
                EXPECT_NEAR(rows.number(r, "fitted"), rows.number(r, "truth"),
                            1e-6 * std::abs(rows.number(r, "truth")) + 1e-9)
                    << parameter;
            }
        }
    }
    const fs::path report = scratch() / "noise_free_report";
    fs::remove_all(report);
    ASSERT_EQ(run("report --in " + p.compare.string() + " --out " + report.string()).exit_code, 0);
    const std::string html = slurp(report / "index.html");
    EXPECT_NE(html.find("exact (no noise)"), std::string::npos);
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
    // fits.csv and profile.csv as compare writes them with intervals.
    CsvTable fits{
        "fits.csv",
        {"layer", "head", "beta", "beta_lo", "beta_hi", "beta_at_bound", "lambda", "unidentified"},
        {{"0", "0", "0.1", "0.09", "0.12", "0", "0.2", ""},
         {"0", "1", "0.5", "0.45", "0.48", "0", "0.3", "rho0;beta"}},
        {2, 3}};
    CsvTable profile{
        "profile.csv",
        {"layer", "head", "p_sink", "p_sink_lo", "p_sink_hi", "p_base", "p_base_lo", "p_base_hi",
         "T2", "T2_lo", "T2_hi", "r2_log", "at_bound", "fit_failed", "unidentified"},
        {{"0", "0", "0.3", "0.3", "0.3", "0.002", "0.0019", "0.0021", "40", "40", "40", "0.95", "0",
          "0", ""},
         {"0", "1", "", "", "", "", "", "", "", "", "", "", "0", "1", ""}},
        {2, 3}};
    const std::vector<PlantedTruth> truth = {
        {0, 0, {{"beta", 0.1}, {"lambda", 0.2}, {"p_sink", 0.30000001}, {"T2", 41}}},
        {0, 1, {{"beta", 0.5}, {"lambda", 0.3}, {"p_sink", 0.4}}}};
    const auto rows = recovery_rows(truth, fits, profile, 64);
    std::map<std::pair<int, std::string>, RecoveryRow> by;
    for (const auto& r : rows)
        by[{r.head, r.parameter}] = r;
    EXPECT_TRUE(*by.at({0, "beta"}).covered);
    EXPECT_FALSE(*by.at({0, "beta"}).exact);
    EXPECT_FALSE(*by.at({1, "beta"}).covered);  // 0.5 outside [0.45, 0.48] ...
    EXPECT_TRUE(by.at({1, "beta"}).flagged);    // ... and named in the unidentified list
    EXPECT_FALSE(by.at({0, "beta"}).flagged);
    // A zero-width interval a float rounding away from the truth: exact, not counted.
    EXPECT_TRUE(*by.at({0, "p_sink"}).exact);
    EXPECT_FALSE(by.at({0, "p_sink"}).covered.has_value());
    // T2 is an integer: zero width while p_base's interval has width is an interval like any
    // other (here missing the truth 41), not "exact".
    EXPECT_FALSE(*by.at({0, "T2"}).exact);
    EXPECT_FALSE(*by.at({0, "T2"}).covered);
    EXPECT_FALSE(by.at({0, "lambda"}).covered.has_value());  // no lambda_lo column
    EXPECT_FALSE(by.at({0, "lambda"}).exact.has_value());
    EXPECT_FALSE(by.at({1, "p_sink"}).fitted.has_value());  // the fit failed ...
    EXPECT_TRUE(by.at({1, "p_sink"}).flagged);              // ... and is flagged
    EXPECT_DOUBLE_EQ(by.at({0, "c_inf"}).planted, 0.0);     // implied by Assumption 2
    EXPECT_DOUBLE_EQ(by.at({1, "beta_offset"}).planted, 0.5);
    const auto coverage = recovery_coverage(rows);
    auto summary = [&](const std::string& parameter) {
        const auto it =
            std::find_if(coverage.begin(), coverage.end(),
                         [&](const RecoveryCoverage& c) { return c.parameter == parameter; });
        EXPECT_NE(it, coverage.end()) << parameter;
        return *it;
    };
    const RecoveryCoverage beta = summary("beta"), p_sink = summary("p_sink");
    EXPECT_EQ(beta.with_interval, 2);
    EXPECT_DOUBLE_EQ(*beta.coverage, 0.5);
    EXPECT_EQ(beta.unflagged, 1);  // head 1's β is unidentified
    EXPECT_DOUBLE_EQ(*beta.unflagged_coverage, 1.0);
    EXPECT_EQ(p_sink.exact, 1);
    EXPECT_EQ(p_sink.with_interval, 0);
    EXPECT_FALSE(p_sink.coverage.has_value());
    EXPECT_NE(recovery_csv(rows).find("layer,head,parameter,planted,truth,fitted,lo,hi,exact,"),
              std::string::npos);
}

// Writes `content` as a planted.csv and expects compare to exit 2 naming it, writing nothing.
void expect_bad_truth(const std::string& name, const std::string& content,
                      const std::string& phrase) {
    const PlantedRun& p = noise_free_run();
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
    expect_bad_truth("outside", "layer,head,beta\n0,6,0.1\n", "not in the extract");
    expect_bad_truth("twice", "layer,head,beta\n0,1,0.1\n0,1,0.2\n", "twice");
    expect_bad_truth("text", "layer,head,beta\n0,1,abc\n", "beta");
    expect_bad_truth("no_parameter", "layer,head,gamma\n0,1,0.1\n", "no planted parameter");
    expect_bad_truth("ragged", "layer,head,beta\n0,1\n", "line 2");
    const auto missing = run("compare --emp " + noise_free_run().extract.string() +
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
    const PlantedRun& p = noise_free_run();
    const fs::path report = scratch() / "planted_report";
    fs::remove_all(report);
    const auto r = run("report --in " + p.compare.string() + " --out " + report.string());
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const std::string html = slurp(report / "index.html");
    EXPECT_NE(html.find("Planted-parameter recovery"), std::string::npos);
    EXPECT_NE(html.find("<code>p_sink</code>"), std::string::npos);
    // compare's fits carry intervals, so the table has them and no warning that they are missing.
    EXPECT_EQ(html.find("No fit in this folder has an interval"), std::string::npos);
    // Coverage below 0.9 is marked, unflagged coverage below 0.85 (the calibration rule), and
    // a parameter with only zero-width intervals reads "exact (no noise)", one with some
    // "k of m; j exact (no noise)".
    const fs::path with_intervals = scratch() / "planted_compare_intervals";
    fs::remove_all(with_intervals);
    fs::copy(p.compare, with_intervals, fs::copy_options::recursive);
    std::ofstream(with_intervals / "recovery_coverage.csv")
        << "parameter,heads,fitted,with_interval,exact,covered,coverage,flagged,unflagged,"
           "unflagged_covered,unflagged_coverage,median_abs_error,max_abs_error\n"
           "beta,24,24,24,0,20,0.8333333333333334,4,20,17,0.85,0.001,0.01\n"
           "rho0,24,24,24,0,23,0.9583333333333334,4,20,16,0.8,0.01,0.03\n"
           "p_sink,24,24,0,24,0,,0,0,0,,1e-9,2e-9\n"
           "T2,24,24,20,4,20,1,0,20,20,1,0,1\n";
    fs::remove_all(report);
    ASSERT_EQ(run("report --in " + with_intervals.string() + " --out " + report.string()).exit_code,
              0);
    const std::string marked = slurp(report / "index.html");
    EXPECT_NE(marked.find("20 of 24"), std::string::npos);
    EXPECT_NE(marked.find("<span class=\"bad\">0.833333</span>"), std::string::npos);
    EXPECT_EQ(marked.find("<span class=\"bad\">0.958333</span>"), std::string::npos);
    EXPECT_NE(marked.find("<span class=\"bad\">0.8</span>"), std::string::npos);
    EXPECT_EQ(marked.find("<span class=\"bad\">0.85</span>"), std::string::npos);
    EXPECT_NE(marked.find("<td>exact (no noise)</td>"), std::string::npos);
    EXPECT_NE(marked.find("20 of 20; 4 exact (no noise)"), std::string::npos);
    EXPECT_EQ(marked.find("No fit in this folder has an interval"), std::string::npos);
}

TEST(Recovery, CsvDtypesOfPlantedAndRecoveryFolders) {
    const fs::path source = fs::path(ATTNGEO_SOURCE_DIR);
    const std::string python = fs::exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
    if (std::system((python + " -c '' 2>/dev/null").c_str()) != 0) GTEST_SKIP() << "no python3";
    const PlantedRun& p = noise_free_run();
    for (const auto& [doc, dir] : {std::pair{"docs/commands/compare.md", p.compare},
                                   {"docs/commands/extract.md", p.extract}}) {
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
