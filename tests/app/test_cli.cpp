// End-to-end tests of the attngeo executable: good runs agree with the library computed
// in-process (parsed back from 17-digit output, so equality is exact), and every class of bad
// input exits with code 2 and a one-line message naming the flag or file.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/test_files.hpp"
#include "theory/bounds.hpp"
#include "theory/metrics.hpp"
#include "theory/parametric.hpp"

namespace fs = std::filesystem;
using namespace attngeo::theory;

namespace {

using RunResult = attngeo::test_support::CliResult;
using attngeo::test_support::slurp;

fs::path scratch() {
    return attngeo::test_support::scratch_folder("cli");
}

RunResult run(const std::string& args) {
    return attngeo::test_support::run_program(ATTNGEO_EXE, args, scratch());
}

std::string write(const std::string& name, const std::string& content) {
    const fs::path path = scratch() / name;
    std::ofstream(path) << content;
    return path.string();
}

std::vector<std::vector<std::string>> parse_csv(const std::string& text) {
    std::vector<std::vector<std::string>> rows;
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) {
        std::vector<std::string> fields;
        std::istringstream fs(line);
        std::string f;
        while (std::getline(fs, f, ','))
            fields.push_back(f);
        rows.push_back(fields);
    }
    return rows;
}

// Expects exit code 2, a single line on stderr, and every `needles` string in it.
void expect_bad_input(const std::string& args, const std::vector<std::string>& needles) {
    const RunResult r = run(args);
    EXPECT_EQ(r.exit_code, 2) << args << "\nstderr: " << r.err;
    EXPECT_TRUE(r.out.empty()) << args << " printed to stdout: " << r.out;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "not one line: " << r.err;
    for (const auto& needle : needles) {
        EXPECT_NE(r.err.find(needle), std::string::npos)
            << args << "\nstderr lacks '" << needle << "': " << r.err;
    }
}

// An error found after a job started: progress lines (each opening with `progress_prefix`)
// and then the error, one line and the last.
void expect_error_last(const std::string& err, const std::string& progress_prefix) {
    std::istringstream lines(err);
    std::vector<std::string> all;
    for (std::string line; std::getline(lines, line);)
        all.push_back(line);
    ASSERT_FALSE(all.empty());
    EXPECT_EQ(all.back().rfind("attngeo ", 0), 0u) << err;
    for (std::size_t i = 0; i + 1 < all.size(); ++i)
        EXPECT_EQ(all[i].rfind(progress_prefix, 0), 0u) << "not a progress line: " << all[i];
}

TokenGeometry random_tokens(int n, int d, unsigned seed) {
    std::mt19937_64 rng(seed);
    std::normal_distribution<double> normal;
    std::uniform_real_distribution<double> uniform(0.01, 1.0);
    TokenGeometry t;
    t.alpha.resize(n);
    t.values.resize(n, d);
    for (int i = 0; i < n; ++i) {
        t.alpha[i] = uniform(rng);
        for (int k = 0; k < d; ++k)
            t.values(i, k) = normal(rng);
    }
    t.alpha /= t.alpha.sum();
    return t;
}

std::string points_csv(const TokenGeometry& t) {
    std::ostringstream out;
    out.precision(17);
    out << "# alpha,v1..vd\n";
    for (int i = 0; i < t.alpha.size(); ++i) {
        out << t.alpha[i];
        for (int k = 0; k < t.values.cols(); ++k)
            out << ',' << t.values(i, k);
        out << '\n';
    }
    return out.str();
}

}  // namespace

TEST(CliMetrics, AllNMatchesTheLibraryExactly) {
    const TokenGeometry t = random_tokens(40, 5, 7);
    const auto path = write("points.csv", points_csv(t));
    // Re-read what the file holds (17 digits round-trip, so this is t itself).
    for (const std::string distance : {"euclidean", "cosine"}) {
        for (const std::string rank : {"attn", "contrib"}) {
            const RunResult r =
                run("metrics --input " + path + " --distance " + distance + " --rank " + rank);
            ASSERT_EQ(r.exit_code, 0) << r.err;
            const auto rows = parse_csv(r.out);
            ASSERT_EQ(rows.size(), 41u);
            EXPECT_EQ(rows[0],
                      (std::vector<std::string>{"N", "r_min", "r_max", "K_in", "K_out", "P_rmax",
                                                "R_rmin", "F_rmax", "F_rmin", "exact_decisions"}));
            std::vector<int> all(40);
            for (int N = 1; N <= 40; ++N)
                all[N - 1] = N;
            const auto expected =
                selection_metrics_reference(t, all, parse_ranking(rank), parse_distance(distance));
            double max_radius_diff = 0;
            for (int N = 1; N <= 40; ++N) {
                const auto& row = rows[N];
                const auto& m = expected[N - 1];
                EXPECT_EQ(std::stoi(row[0]), N);
                EXPECT_EQ(std::stoi(row[3]), m.K_in) << "N=" << N;
                EXPECT_EQ(std::stoi(row[4]), m.K_out) << "N=" << N;
                if (N < 40)
                    max_radius_diff =
                        std::max(max_radius_diff, std::abs(std::stod(row[1]) - m.r_min));
                max_radius_diff = std::max(max_radius_diff, std::abs(std::stod(row[2]) - m.r_max));
                EXPECT_EQ(std::stod(row[5]), m.precision_at_rmax);
                EXPECT_EQ(std::stod(row[6]), m.recall_at_rmin);
                EXPECT_EQ(std::stod(row[7]), m.f_at_rmax);
                EXPECT_EQ(std::stod(row[8]), m.f_at_rmin);
                EXPECT_EQ(std::stoi(row[9]), m.exact_decisions) << "N=" << N;
            }
            EXPECT_EQ(rows[40][1], "inf");
            std::cout << distance << "/" << rank << ": largest radius difference "
                      << max_radius_diff << "\n";
            EXPECT_EQ(max_radius_diff, 0.0);
        }
    }
}

TEST(CliMetrics, ListOfSizesPrintsThoseRowsOnly) {
    const auto path = write("points_list.csv", points_csv(random_tokens(12, 3, 3)));
    const RunResult r = run("metrics --input " + path + " --N 1,3,12");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto rows = parse_csv(r.out);
    ASSERT_EQ(rows.size(), 4u);
    EXPECT_EQ(rows[1][0], "1");
    EXPECT_EQ(rows[2][0], "3");
    EXPECT_EQ(rows[3][0], "12");
    EXPECT_EQ(rows[1][2], "0");  // r_max at N = 1
    EXPECT_EQ(rows[3][1], "inf");
}

// Values near 1e300 or 1e-300, whose squared distances overflow or underflow a double, give
// the counts of the same values at ordinary scale and radii scaled alike (the values are moved
// by an exact power of two); values spanning more than the exponent range are refused.
TEST(CliMetrics, ValuesNear1e300Or1eMinus300GiveTheOrdinaryScaleRows) {
    const TokenGeometry t = random_tokens(30, 4, 11);
    const RunResult ordinary = run("metrics --input " + write("ordinary.csv", points_csv(t)));
    ASSERT_EQ(ordinary.exit_code, 0) << ordinary.err;
    const auto want = parse_csv(ordinary.out);
    double largest_radius_error = 0;
    for (int exponent : {1000, -1000}) {
        TokenGeometry far = t;
        far.values = far.values.unaryExpr([&](double x) { return std::ldexp(x, exponent); });
        const std::string path = write("far" + std::to_string(exponent) + ".csv", points_csv(far));
        const RunResult r = run("metrics --input " + path);
        ASSERT_EQ(r.exit_code, 0) << path << ": " << r.err;
        const auto got = parse_csv(r.out);
        ASSERT_EQ(got.size(), want.size());
        for (std::size_t row = 1; row < want.size(); ++row) {
            for (int column : {0, 3, 4, 5, 6, 7, 8})
                EXPECT_EQ(got[row][column], want[row][column]) << path << " row " << row;
            for (int column : {1, 2}) {
                const double w = std::stod(want[row][column]);
                if (!std::isfinite(w) || w == 0) {
                    EXPECT_EQ(got[row][column], want[row][column]);
                    continue;
                }
                largest_radius_error =
                    std::max(largest_radius_error,
                             std::abs(std::ldexp(std::stod(got[row][column]), -exponent) - w) / w);
            }
        }
    }
    std::cout << "radii at 2^±1000 against ordinary scale: largest relative difference "
              << largest_radius_error << "\n";
    EXPECT_LT(largest_radius_error, 1e-15);
    const auto decimal = write("decimal1e300.csv", "0.5,1e300,0\n0.25,0,2e300\n0.25,3e300,1e300\n");
    const RunResult r = run("metrics --input " + decimal);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(parse_csv(r.out)[1][2], "0");
    const auto span = write("span.csv", "0.5,1e300,0\n0.5,0,1e-300\n");
    expect_bad_input("metrics --input " + span, {span, "exponent range", "1e+300"});
}

TEST(CliMetrics, BadInputExitsTwoNamingFileOrFlag) {
    const auto ragged = write("ragged.csv", "0.5,1,2\n0.5,1\n");
    expect_bad_input("metrics --input " + ragged, {ragged, "line 2", "ragged"});
    const auto nan = write("nan.csv", "0.5,1\n0.5,nan\n");
    expect_bad_input("metrics --input " + nan, {nan, "line 2", "not finite"});
    const auto negative = write("negative.csv", "1.5,1\n-0.5,2\n");
    expect_bad_input("metrics --input " + negative, {negative, "negative"});
    const auto unnormalised = write("unnormalised.csv", "0.5,1\n0.6,2\n");
    expect_bad_input("metrics --input " + unnormalised, {unnormalised, "sums to", "1e-6"});
    const auto alpha_only = write("alpha_only.csv", "1\n");
    expect_bad_input("metrics --input " + alpha_only, {alpha_only, "alpha,v1..vd"});
    const auto good = write("good.csv", "0.5,1\n0.5,2\n");
    expect_bad_input("metrics --input " + good + " --N 3", {"--N", "out of range"});
    expect_bad_input("metrics --input " + good + " --N 0", {"--N"});
    expect_bad_input("metrics --input " + good + " --N x", {"--N"});
    expect_bad_input("metrics --input " + good + " --rank nope", {"--rank"});
    expect_bad_input("metrics --input " + good + " --distance manhattan", {"--distance"});
    expect_bad_input("metrics --input /nonexistent/points.csv", {"/nonexistent/points.csv"});
    expect_bad_input("metrics", {"--input"});
    expect_bad_input("metrics --input " + good + " --bogus 1", {"--bogus"});
    expect_bad_input("", {"subcommand"});
}

TEST(CliBounds, PaperPresetMatchesTheReferenceFormulas) {
    const RunResult r = run("bounds --preset paper");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto rows = parse_csv(r.out);
    ASSERT_EQ(rows.size(), 1026u);
    EXPECT_EQ(rows[0][0], "N");
    EXPECT_EQ(rows[0].size(), 22u);
    EXPECT_EQ(rows[0][13], "delta_le0");
    EXPECT_EQ(rows[0][21], "R_trivial_upper");
    const HeadModel model = build_head_model(ModelParameters{});
    BoundSettings settings;  // d = 128, kappa = 1, paper: the CLI defaults
    double max_rel = 0;
    for (int N : {1, 2, 3, 5, 17, 100, 226, 400, 800, 1000, 1024, 1025}) {
        const BoundRow b = bounds_reference(model, N, settings);
        const auto& row = rows[N];
        const double expected[] = {b.delta,           b.delta0,          b.scale,
                                   b.precision_lower, b.precision_upper, b.recall_lower,
                                   b.recall_upper,    b.fmax_lower,      b.fmax_upper,
                                   b.fmin_lower,      b.fmin_upper};
        for (int c = 0; c < 11; ++c) {
            const double got = std::stod(row[2 + c]);
            if (std::isnan(expected[c])) {
                EXPECT_TRUE(std::isnan(got)) << "N=" << N << " column " << rows[0][2 + c];
                continue;
            }
            const double rel =
                std::abs(got - expected[c]) / std::max(1e-300, std::abs(expected[c]));
            max_rel = std::max(max_rel, std::abs(got - expected[c]) <= 1e-300 ? 0.0 : rel);
            EXPECT_LE(std::abs(got - expected[c]), 1e-12 * std::max(1.0, std::abs(expected[c])))
                << "N=" << N << " column " << rows[0][2 + c];
        }
    }
    std::cout << "largest relative difference CLI vs bounds_reference: " << max_rel << "\n";
    EXPECT_EQ(rows[1][1], "I");
    EXPECT_EQ(rows[2][1], "II");
    // The flags from their definitions on the reference row. At the preset every margin Δ is
    // ≤ 0 for 2 ≤ N < n and the sink pair has ξ ≤ 0, so the printed P upper bound is
    // 1 − 1/(2(N + 1)) whatever κ is, and the output says so.
    int delta_le0 = 0, xi_le0 = 0;
    for (int N = 2; N < 1025; ++N) {
        const auto& row = rows[N];
        delta_le0 += row[13] == "1";
        xi_le0 += row[15] == "1";
        EXPECT_EQ(row[13] == "1", std::stod(row[2]) <= 0) << N;  // the printed Δ
        if (row[15] == "1") {
            EXPECT_NEAR(std::stod(row[6]), 1 - 0.5 / (N + 1), 1e-15) << N;
        }
        if (N % 37 != 2) continue;  // the reference is O(N(n − N)n): a sample of N
        const BoundRow b = bounds_reference(model, N, settings);
        const int expected[9] = {b.delta <= 0,
                                 b.sink_selected && b.delta0 <= 0,
                                 b.deciding_xi_le0,
                                 b.precision_lower > b.precision_upper + 1e-12,
                                 b.recall_lower > b.recall_upper + 1e-12,
                                 b.precision_lower <= 0.01,
                                 b.recall_lower <= 0.01,
                                 b.precision_upper >= 0.99,
                                 b.recall_upper >= 0.99};
        for (int c = 0; c < 9; ++c)
            EXPECT_EQ(std::stoi(row[13 + c]), expected[c]) << "N=" << N << " " << rows[0][13 + c];
    }
    EXPECT_EQ(delta_le0, 1023);
    EXPECT_EQ(xi_le0, 1023);
}

TEST(CliBounds, InvertedEnvelopesAreFlagged) {
    // Fast decay (β = 5) with the scale-invariant B at a large κ: the lower bound on P climbs to
    // ~1 while the sink pair's ξ ≤ 0 caps the upper bound at 1 − 1/(2(N + 1)).
    const RunResult r = run("bounds --beta 5 --N 2,4 --variant scale-invariant --kappa 4e6");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto rows = parse_csv(r.out);
    ASSERT_EQ(rows.size(), 3u);
    for (int i = 1; i <= 2; ++i) {
        const double lower = std::stod(rows[i][5]), upper = std::stod(rows[i][6]);
        std::cout << "N=" << rows[i][0] << ": P in [" << lower << ", " << upper << "]\n";
        EXPECT_GT(lower, upper);
        EXPECT_EQ(rows[i][16], "1");  // P_inverted
    }
    const RunResult corrected = run("bounds --beta 5 --N 2,4 --variant corrected --kappa 4e6");
    ASSERT_EQ(corrected.exit_code, 0) << corrected.err;
    const auto corrected_rows = parse_csv(corrected.out);
    for (std::size_t i = 1; i < corrected_rows.size(); ++i)
        EXPECT_EQ(corrected_rows[i][16], "0") << "corrected, N=" << corrected_rows[i][0];
}

TEST(CliBounds, ExplicitFilesAndOtherProfiles) {
    const auto alpha = write("alpha.txt", "0.4\n0.3\n0.2\n0.1\n");
    const auto norms = write("norms.txt", "0.1\n1\n1.1\n0.9\n");
    const auto cos = write("cos.csv", "1,0,0,0\n0,1,0.5,0.25\n0,0.5,1,0.5\n0,0.25,0.5,1\n");
    const RunResult r = run("bounds --alpha " + alpha + " --norms " + norms + " --cos " + cos +
                            " --d 16 --kappa 0.5 --variant exact-mean");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto rows = parse_csv(r.out);
    ASSERT_EQ(rows.size(), 5u);
    EXPECT_EQ(rows[1][1], "NA");
    HeadModel m;
    m.alpha = Eigen::Vector4d(0.4, 0.3, 0.2, 0.1);
    m.norms = Eigen::Vector4d(0.1, 1, 1.1, 0.9);
    m.cosine.resize(4, 4);
    m.cosine << 1, 0, 0, 0, 0, 1, 0.5, 0.25, 0, 0.5, 1, 0.5, 0, 0.25, 0.5, 1;
    BoundSettings s;
    s.d = 16;
    s.kappa = 0.5;
    s.variant = BoundVariant::exact_mean;
    for (int N = 1; N <= 4; ++N) {
        const BoundRow b = bounds_reference(m, N, s);
        EXPECT_NEAR(std::stod(rows[N][6]), b.precision_upper, 1e-15) << N;
        EXPECT_NEAR(std::stod(rows[N][7]), b.recall_lower, 1e-15) << N;
    }
    for (const std::string profile : {"uniform", "zipf:1.1"}) {
        const RunResult p = run("bounds --L 50 --profile " + profile + " --N pow2");
        ASSERT_EQ(p.exit_code, 0) << p.err;
        EXPECT_EQ(parse_csv(p.out).size(), 1u + 7u);  // 1,2,4,...,32,51
    }
    const auto weights = write("weights.txt", "3\n1\n1\n1\n");
    const RunResult f = run("bounds --profile file:" + weights + " --N 1,2");
    ASSERT_EQ(f.exit_code, 0) << f.err;
    const RunResult sens = run("bounds --L 64 --T1 8 --T2 40 --N 2,8 --sensitivity");
    ASSERT_EQ(sens.exit_code, 0) << sens.err;
    const auto srows = parse_csv(sens.out);
    EXPECT_EQ(srows[0][1], "parameter");
    EXPECT_EQ(srows.size(), 1u + 2u * 12u);  // 12 parameters for assumption3 x 2 sizes
}

TEST(CliBounds, BadInputExitsTwoNamingTheProblem) {
    expect_bad_input("bounds --lambda 1.5", {"lambda"});
    expect_bad_input("bounds --beta 0", {"beta"});
    expect_bad_input("bounds --d 0", {"--d 0"});
    expect_bad_input("bounds --kappa -1", {"kappa"});
    expect_bad_input("bounds --T1 900 --T2 800", {"T1", "T2"});
    expect_bad_input("bounds --p-sink 1", {"p_sink"});
    expect_bad_input("bounds --eta 1.5", {"eta"});
    expect_bad_input("bounds --rho0 2", {"rho0"});
    expect_bad_input("bounds --L 0", {"L"});
    expect_bad_input("bounds --N 2000", {"--N"});
    expect_bad_input("bounds --profile spiky", {"--profile"});
    expect_bad_input("bounds --profile zipf:-1", {"--profile"});
    expect_bad_input("bounds --variant loose", {"--variant"});
    expect_bad_input("bounds --preset other", {"--preset"});
    expect_bad_input("bounds --lambda abc", {"--lambda"});
    const auto unnormalised = write("alpha_bad.txt", "0.5\n0.6\n");
    expect_bad_input("bounds --alpha " + unnormalised, {"--alpha", unnormalised, "sum"});
    const auto alpha = write("alpha3.txt", "0.5\n0.3\n0.2\n");
    const auto short_norms = write("norms2.txt", "1\n1\n");
    expect_bad_input("bounds --alpha " + alpha + " --norms " + short_norms,
                     {"--norms", "expected n = 3"});
    const auto asym = write("asym.csv", "1,0.5,0\n0.4,1,0\n0,0,1\n");
    expect_bad_input("bounds --alpha " + alpha + " --cos " + asym, {"--cos", "symmetric"});
    const auto not_square = write("rect.csv", "1,0\n0,1\n0,0\n");
    expect_bad_input("bounds --alpha " + alpha + " --cos " + not_square, {"--cos", "expected 3x3"});
    expect_bad_input("bounds --alpha " + alpha + " --L 7", {"--L", "n = 3"});
    expect_bad_input("bounds --alpha /nonexistent/a.txt", {"/nonexistent/a.txt"});
}

TEST(CliHelp, DocumentsEveryFlagWithDefaults) {
    const RunResult r = run("bounds --help");
    EXPECT_EQ(r.exit_code, 0);
    for (const char* flag : {"--L",       "--p-sink", "--T1",      "--T2",     "--eta",   "--omega",
                             "--C",       "--lambda", "--beta",    "--rho0",   "--d",     "--kappa",
                             "--variant", "--N",      "--profile", "--preset", "--alpha", "--norms",
                             "--cos",     "=1024",    "=0.3",      "=128"}) {
        EXPECT_NE(r.out.find(flag), std::string::npos) << flag;
    }
    const RunResult m = run("metrics --help");
    EXPECT_EQ(m.exit_code, 0);
    EXPECT_NE(m.out.find("--distance"), std::string::npos);
    EXPECT_EQ(run("--version").exit_code, 0);
}

TEST(CliSimulate, WritesTheSpecifiedFilesIdenticallyForAnyThreadCount) {
    const fs::path a = scratch() / "sim_t1", b = scratch() / "sim_t2";
    fs::remove_all(a);
    fs::remove_all(b);
    const std::string common = "simulate --L 127 --T1 12 --T2 100 --d 32 --trials 30 --seed 7";
    const RunResult r1 = run(common + " --threads 1 --out " + a.string());
    ASSERT_EQ(r1.exit_code, 0) << r1.err;
    const RunResult r2 = run(common + " --threads 2 --out " + b.string());
    ASSERT_EQ(r2.exit_code, 0) << r2.err;
    for (const char* file :
         {"simulate.csv", "bounds.csv", "sums.csv", "kappa_scan.csv", "verdict.csv"}) {
        EXPECT_EQ(slurp(a / file), slurp(b / file)) << file;
    }
    const auto sim = parse_csv(slurp(a / "simulate.csv"));
    EXPECT_EQ(sim[0], (std::vector<std::string>{"N", "trials", "P_mean", "P_se", "P_ci_lo",
                                                "P_ci_hi", "R_mean", "R_se", "R_ci_lo", "R_ci_hi",
                                                "Fmax_mean", "Fmin_mean"}));
    EXPECT_EQ(sim.size(), 1u + 128u);
    EXPECT_EQ(sim[5][1], "30");
    const auto bounds = parse_csv(slurp(a / "bounds.csv"));
    EXPECT_EQ(bounds.size(), 1u + 4u * 128u);
    EXPECT_EQ(bounds[0][1], "variant");
    const std::string manifest = slurp(a / "manifest.json");
    for (const char* key :
         {"\"git_commit\"", "\"decisions\"", "\"realised\"", "\"cos_by_lag\"", "\"rows_rule\"",
          "\"band\"", "\"sides\"", "\"information_share\"", "\"kappa_set\"", "\"split\"",
          "\"timings\"", "\"from_preset\"", "\"seed\": 7"}) {
        EXPECT_NE(manifest.find(key), std::string::npos) << key;
    }
}

TEST(CliSimulate, MergedShardsEqualTheUnshardedRun) {
    const fs::path whole = scratch() / "merge_whole", s0 = scratch() / "merge_s0",
                   s1 = scratch() / "merge_s1", s2 = scratch() / "merge_s2",
                   merged = scratch() / "merge_out";
    for (const auto& p : {whole, s0, s1, s2, merged})
        fs::remove_all(p);
    const std::string common = "simulate --L 63 --T1 8 --T2 50 --d 16 --trials 25 --N pow2";
    ASSERT_EQ(run(common + " --out " + whole.string()).exit_code, 0);
    ASSERT_EQ(run(common + " --shard 0/3 --out " + s0.string()).exit_code, 0);
    ASSERT_EQ(run(common + " --shard 1/3 --out " + s1.string()).exit_code, 0);
    ASSERT_EQ(run(common + " --shard 2/3 --out " + s2.string()).exit_code, 0);
    const RunResult m = run("merge " + s2.string() + " " + s0.string() + " " + s1.string() +
                            " --out " + merged.string());
    ASSERT_EQ(m.exit_code, 0) << m.err;
    for (const char* file : {"simulate.csv", "bounds.csv", "sums.csv", "per_trial.safetensors",
                             "kappa_scan.csv", "verdict.csv"}) {
        EXPECT_EQ(slurp(whole / file), slurp(merged / file)) << file;
    }
    expect_bad_input(
        "merge " + s0.string() + " " + s0.string() + " --out " + (scratch() / "x").string(),
        {"appears twice"});
    // An incomplete set is refused, naming what is missing, and nothing is written.
    const fs::path partial = scratch() / "merge_partial";
    fs::remove_all(partial);
    expect_bad_input("merge " + s0.string() + " " + s1.string() + " --out " + partial.string(),
                     {"shard 2/3 missing", "2 of 3 given"});
    EXPECT_FALSE(fs::exists(partial));
    // A shard whose sums hold fewer trials than its slice (stopped early, or edited).
    const fs::path short_shard = scratch() / "merge_short";
    fs::remove_all(short_shard);
    fs::copy(s1, short_shard);
    std::string sums = slurp(short_shard / "sums.csv");
    const std::size_t first_row = sums.find('\n') + 1;
    const std::size_t count_at =
        sums.find(',', sums.find(',', sums.find(',', first_row) + 1) + 1) + 1;
    // (grid 0, N = 1, P) as 3 trials whose values sum to 0: a consistent row, but not the 8
    // trials of shard 1/3.
    sums.replace(count_at, sums.find('\n', count_at) - count_at, "3,0,0");
    std::ofstream(short_shard / "sums.csv") << sums;
    expect_bad_input("merge " + s0.string() + " " + short_shard.string() + " " + s2.string() +
                         " --out " + (scratch() / "x").string(),
                     {short_shard.string(), "holds 3 trials, expected 8"});
    const fs::path other = scratch() / "merge_other";
    fs::remove_all(other);
    ASSERT_EQ(run("simulate --L 63 --T1 8 --T2 50 --d 16 --trials 25 --N pow2 --seed 9 --shard 1/3 "
                  "--out " +
                  other.string())
                  .exit_code,
              0);
    expect_bad_input(
        "merge " + s0.string() + " " + other.string() + " --out " + (scratch() / "x").string(),
        {"different configuration"});
    expect_bad_input("merge /nonexistent/run --out " + (scratch() / "x").string(),
                     {"/nonexistent/run"});
    // A shard drawn from another random stream (a manifest without the field: an older
    // version's Philox4x64) is refused, not summed.
    const fs::path old = scratch() / "merge_old_stream";
    fs::remove_all(old);
    fs::copy(s1, old);
    std::string manifest = slurp(old / "manifest.json");
    const std::size_t at = manifest.find("\"random_stream\"");
    ASSERT_NE(at, std::string::npos);
    manifest.replace(at, std::string("\"random_stream\"").size(), "\"former_stream\"");
    std::ofstream(old / "manifest.json") << manifest;
    expect_bad_input("merge " + s0.string() + " " + old.string() + " " + s2.string() + " --out " +
                         (scratch() / "x").string(),
                     {"philox4x64-10", "rerun that shard"});
    // A manifest edited to shard count 0 is refused by name (it once reached a division).
    const fs::path zero = scratch() / "merge_shard_zero";
    fs::remove_all(zero);
    fs::copy(s1, zero);
    manifest = slurp(zero / "manifest.json");
    const std::size_t count_key = manifest.find("\"count\": 3");
    ASSERT_NE(count_key, std::string::npos);
    manifest.replace(count_key, std::string("\"count\": 3").size(), "\"count\": 0");
    std::ofstream(zero / "manifest.json") << manifest;
    expect_bad_input("merge " + zero.string() + " --out " + (scratch() / "x").string(),
                     {(zero / "manifest.json").string(), "shard 1/0", "0 <= i < n"});
}

TEST(CliSimulate, SweepHasAColumnPerParameterAndARowPerPointAndN) {
    const fs::path out = scratch() / "sweep";
    fs::remove_all(out);
    const RunResult r =
        run("sweep --set beta=0.05,0.2 --set d=16,32,64 --L 31 --T1 4 --T2 24 --trials 10 --N "
            "1,2,4 --out " +
            out.string());
    ASSERT_EQ(r.exit_code, 0) << r.err;
    // Long format: a row per grid point, N and bound variant; values as typed.
    const auto rows = parse_csv(slurp(out / "sweep.csv"));
    ASSERT_EQ(rows.size(), 1u + 6u * 3u * 4u);
    EXPECT_EQ(rows[0][0], "grid");
    EXPECT_EQ(rows[0][1], "beta");
    EXPECT_EQ(rows[0][2], "d");
    EXPECT_EQ(rows[0][3], "N");
    EXPECT_EQ(rows[1][1], "0.05");
    EXPECT_EQ(rows[13][2], "32");  // second grid point: beta=0.05, d=32
    for (const auto& name : rows[0])
        EXPECT_EQ(name.find('-'), std::string::npos) << name;
    // Progress for logs (stderr is a file here): a start line and a closing summary.
    EXPECT_EQ(r.err.rfind("[sweep] started: 60 trials", 0), 0u) << r.err;
    EXPECT_NE(r.err.find("[sweep] done: 60 trials in "), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("wrote '" + out.string() + "'"), std::string::npos) << r.err;
}

// Progress lines every ATTNGEO_PROGRESS_SECONDS (10 s by default) when stderr is not a terminal,
// none with --quiet; the outputs do not depend on how the trials were chunked for it.
TEST(CliSimulate, ProgressLinesForLogsAndQuiet) {
    const fs::path a = scratch() / "progress_a", b = scratch() / "progress_b";
    fs::remove_all(a);
    fs::remove_all(b);
    const std::string args =
        "sweep --set beta=0.05,0.2 --L 31 --T1 4 --T2 24 --trials 600 --N pow2 --out ";
    const RunResult lines = attngeo::test_support::run_program(
        "ATTNGEO_PROGRESS_SECONDS=0 " + std::string(ATTNGEO_EXE), args + a.string(), scratch());
    ASSERT_EQ(lines.exit_code, 0) << lines.err;
    // 600 trials a point in chunks of 256: lines at 256, 512, 600 + 256, 600 + 512 trials; the
    // swept value is echoed as typed (shortest round-trip form).
    for (const char* line :
         {"[sweep] 256/1200 trials, ", "[sweep] 856/1200 trials, ", "; grid point 2/2 beta=0.2\n"})
        EXPECT_NE(lines.err.find(line), std::string::npos) << line << " in\n" << lines.err;
    EXPECT_NE(lines.err.find("ETA "), std::string::npos) << lines.err;
    const RunResult quiet = run(args + b.string() + " --quiet");
    ASSERT_EQ(quiet.exit_code, 0) << quiet.err;
    EXPECT_TRUE(quiet.err.empty()) << quiet.err;
    for (const char* file : {"sweep.csv", "sums.csv", "verdict.csv"})
        EXPECT_EQ(slurp(a / file), slurp(b / file)) << file;
}

// End to end: each side's κ set in verdict.csv is the runs of consistent κ in kappa_scan.csv and
// its κ_edge the tightest of them (recomputed here), and bounds.csv's edge columns are what
// `attngeo bounds --kappa κ` prints at each side's judged κ.
TEST(CliSimulate, VerdictKappaSetAndEdgeColumnsFollowTheScan) {
    const fs::path out = scratch() / "verdict";
    fs::remove_all(out);
    const std::string params = "--L 127 --T1 12 --T2 100 --d 32 --N pow2";
    const RunResult r = run("simulate " + params + " --trials 40 --out " + out.string());
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto scan = parse_csv(slurp(out / "kappa_scan.csv"));
    const auto verdict = parse_csv(slurp(out / "verdict.csv"));
    const auto bounds = parse_csv(slurp(out / "bounds.csv"));
    ASSERT_EQ(scan[0], (std::vector<std::string>{
                           "grid", "variant", "metric", "side", "kappa", "consistent",
                           "falsified_points", "contradicted_points", "max_z", "worst_N",
                           "critical_value", "critical_rule", "mean_gap", "mean_width"}));
    ASSERT_EQ(verdict.size(), 1u + 16u);
    auto column = [](const std::vector<std::string>& header, const std::string& name) {
        const auto it = std::find(header.begin(), header.end(), name);
        EXPECT_NE(it, header.end()) << name;
        return static_cast<std::size_t>(it - header.begin());
    };
    const std::size_t edge_col = column(verdict[0], "kappa_edge");
    const std::size_t judged_col = column(verdict[0], "kappa_judged");
    const std::size_t free_col = column(verdict[0], "kappa_free");
    const std::size_t state_col = column(verdict[0], "state");
    const std::size_t consistent_col = column(scan[0], "consistent");
    const std::size_t gap_col = column(scan[0], "mean_gap");
    for (std::size_t v = 1; v < verdict.size(); ++v) {
        const auto& row = verdict[v];
        double best_gap = INFINITY, best_kappa = NAN;
        int consistent = 0;
        for (std::size_t i = 1; i < scan.size(); ++i) {
            if (scan[i][1] != row[1] || scan[i][2] != row[2] || scan[i][3] != row[3]) continue;
            if (scan[i][consistent_col] != "1") continue;
            consistent += 1;
            const double gap = std::stod(scan[i][gap_col]);
            if (gap < best_gap) best_gap = gap, best_kappa = std::stod(scan[i][4]);
        }
        const std::string side = row[1] + " " + row[2] + " " + row[3];
        if (consistent == 0) {
            EXPECT_TRUE(row[edge_col].empty()) << side;
            EXPECT_NE(row[state_col].rfind("holds", 0), 0u) << side;
        } else if (row[free_col] == "0") {
            EXPECT_EQ(std::stod(row[edge_col]), best_kappa) << side;
        }
        if (row[1] != "corrected") continue;
        // The edge column of this side against the bounds command at the side's judged κ.
        const RunResult b =
            run("bounds " + params + " --variant corrected --kappa " + row[judged_col]);
        ASSERT_EQ(b.exit_code, 0) << b.err;
        const auto printed = parse_csv(b.out);
        const std::string printed_name = row[2] + "_" + row[3];
        const std::size_t printed_col = column(printed[0], printed_name);
        const std::size_t edge = column(bounds[0], printed_name + "_edge");
        std::size_t matched = 0;
        for (std::size_t i = 1; i < bounds.size(); ++i) {
            if (bounds[i][1] != "corrected") continue;
            const auto& p = printed[1 + matched++];
            ASSERT_EQ(p[0], bounds[i][0]);
            EXPECT_EQ(p[printed_col], bounds[i][edge]) << printed_name << " N=" << p[0];
        }
        EXPECT_EQ(matched, printed.size() - 1);
    }
}

// docs/design.md §10 on a full disk, simulated with RLIMIT_FSIZE (SIGXFSZ ignored, so a write past
// the limit fails with EFBIG): exit 2 naming the file, nothing left behind (no run folder, no
// staging folder), the run folder a report was writing into unchanged; later runs succeed.
TEST(CliSimulate, FullDiskLeavesNothingBehindAndALaterRunSucceeds) {
    const fs::path parent = scratch() / "full_disk";
    fs::remove_all(parent);
    fs::create_directories(parent);
    const fs::path out = parent / "run";
    const std::string args = "simulate --L 255 --T1 20 --T2 200 --trials 10 --out " + out.string();
    const std::string limited = "ulimit -f 64; trap '' XFSZ; exec " + std::string(ATTNGEO_EXE);
    const RunResult full = attngeo::test_support::run_program(limited, args, scratch());
    EXPECT_EQ(full.exit_code, 2) << full.err;
    expect_error_last(full.err, "[simulate] ");
    EXPECT_NE(full.err.find((out / "simulate.csv").string()), std::string::npos) << full.err;
    EXPECT_NE(full.err.find("File too large"), std::string::npos) << full.err;
    EXPECT_TRUE(fs::is_empty(parent)) << "something was left in " << parent;

    const RunResult ok = run(args);
    ASSERT_EQ(ok.exit_code, 0) << ok.err;
    std::vector<std::string> before;
    for (const auto& entry : fs::directory_iterator(out))
        before.push_back(entry.path().filename().string() + ":" + slurp(entry.path()));
    const RunResult report = attngeo::test_support::run_program(
        limited, "report --in " + out.string() + " --out " + out.string(), scratch());
    EXPECT_EQ(report.exit_code, 2) << report.err;
    expect_error_last(report.err, "[report] ");
    std::vector<std::string> after;
    for (const auto& entry : fs::directory_iterator(out))
        after.push_back(entry.path().filename().string() + ":" + slurp(entry.path()));
    std::sort(before.begin(), before.end());
    std::sort(after.begin(), after.end());
    EXPECT_EQ(before, after) << "the report half-wrote into the run folder";
    for (const auto& entry : fs::directory_iterator(parent))
        EXPECT_EQ(entry.path().filename(), "run") << "left behind: " << entry.path();
    const RunResult later = run("report --in " + out.string() + " --out " + out.string());
    EXPECT_EQ(later.exit_code, 0) << later.err;
    EXPECT_TRUE(fs::exists(out / "index.html"));
}

// --out is checked before any work: a sweep into an existing file, or a name longer than the
// file system allows, fails at once with one line and no progress printed.
TEST(CliSimulate, OutputFolderCheckedBeforeTheWork) {
    const std::string file = write("not_a_folder", "x");
    expect_bad_input("sweep --set beta=0.05,0.1 --L 31 --T1 4 --T2 24 --trials 10 --out " + file,
                     {"--out", file, "not a folder"});
    const std::string long_name = (scratch() / std::string(300, 'x')).string();
    expect_bad_input("simulate --L 31 --T1 4 --T2 24 --trials 10 --out " + long_name,
                     {"--out", "longer than"});
    expect_bad_input("simulate --L 31 --T1 4 --T2 24 --trials 10 --out " + file + "/sub",
                     {"--out", "is a file"});
}

// Starts the CLI with `args` (split on spaces), kills it with SIGKILL after `delay_ms` — or,
// with delay_ms < 0, as soon as `wait_for` exists (30 s at most) — unless it finished first;
// returns whether it was killed.
bool run_and_kill(const std::string& args, int delay_ms, const fs::path& wait_for = {}) {
    std::vector<std::string> words = {ATTNGEO_EXE};
    std::istringstream in(args);
    for (std::string w; in >> w;)
        words.push_back(w);
    std::vector<char*> argv;
    for (auto& w : words)
        argv.push_back(w.data());
    argv.push_back(nullptr);
    const pid_t child = fork();
    if (child == 0) {
        const int devnull = open("/dev/null", O_WRONLY);
        dup2(devnull, 1);
        dup2(devnull, 2);
        execv(argv[0], argv.data());
        _exit(127);
    }
    if (delay_ms >= 0) {
        usleep(static_cast<useconds_t>(delay_ms) * 1000);
    } else {
        for (int i = 0; i < 30000 && !fs::exists(wait_for); ++i)
            usleep(1000);
    }
    const bool killed = kill(child, SIGKILL) == 0;
    int status = 0;
    waitpid(child, &status, 0);
    return killed && WIFSIGNALED(status);
}

// kill -9 at 20 seeded random moments, then --resume: the outputs equal an uninterrupted run's
// byte for byte (the sums are exact, saved at chunk boundaries), manifest.json excepted.
TEST(CliSimulate, KilledSweepsResumeToTheSameBytes) {
    const std::string params =
        "sweep --set beta=0.05,0.2 --L 63 --T1 8 --T2 50 --d 16 --trials 2048 --N pow2 --quiet";
    const fs::path reference = scratch() / "kill_reference";
    fs::remove_all(reference);
    const auto start = std::chrono::steady_clock::now();
    ASSERT_EQ(run(params + " --out " + reference.string()).exit_code, 0);
    // Kill moments spread over this machine's run time (which varies with its load).
    const int run_ms = static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                            std::chrono::steady_clock::now() - start)
                                            .count());
    std::mt19937 rng(2024);
    std::uniform_int_distribution<int> delay(run_ms / 10,
                                             std::max(run_ms / 10 + 1, run_ms * 9 / 10));
#ifdef NDEBUG
    constexpr int kRounds = 8;
#else
    constexpr int kRounds = 4;  // the sanitizer build runs the CLI ~10x slower
#endif
    int killed = 0, resumed_from_state = 0;
    for (int round = 0; round < kRounds; ++round) {
        const fs::path out = scratch() / ("kill_" + std::to_string(round));
        fs::remove_all(out);
        const std::string args = params + " --checkpoint-every 0 --out " + out.string();
        killed += run_and_kill(args, delay(rng));
        resumed_from_state += fs::exists(out / ".partial" / "sums.csv");
        const RunResult resumed = run(args + " --resume");
        ASSERT_EQ(resumed.exit_code, 0) << "round " << round << ": " << resumed.err;
        for (const char* file :
             {"sweep.csv", "sums.csv", "per_trial.safetensors", "kappa_scan.csv", "verdict.csv"})
            EXPECT_EQ(slurp(out / file), slurp(reference / file))
                << "round " << round << " " << file;
        EXPECT_FALSE(fs::exists(out / ".partial")) << "round " << round;
        fs::remove_all(out);
    }
    // One more, killed as soon as a state is on disk, so a resume from saved sums is certain.
    const fs::path saved = scratch() / "kill_saved";
    fs::remove_all(saved);
    const std::string saved_args = params + " --checkpoint-every 0 --out " + saved.string();
    ASSERT_TRUE(run_and_kill(saved_args, -1, saved / ".partial" / "sums.csv"));
    ASSERT_TRUE(fs::exists(saved / ".partial" / "sums.csv"));
    ++resumed_from_state;
    ASSERT_EQ(run(saved_args + " --resume").exit_code, 0);
    for (const char* file :
         {"sweep.csv", "sums.csv", "per_trial.safetensors", "kappa_scan.csv", "verdict.csv"})
        EXPECT_EQ(slurp(saved / file), slurp(reference / file)) << "state-first kill " << file;
    std::printf("killed %d of %d runs, %d of them after a saved state\n", killed + 1, kRounds + 1,
                resumed_from_state);
    EXPECT_GE(killed, kRounds / 2);
    // A state from another command is refused; so is starting over it without --resume.
    const fs::path other = scratch() / "kill_other";
    fs::remove_all(other);
    run_and_kill(params + " --checkpoint-every 0 --out " + other.string(), 700);
    if (fs::exists(other / ".partial" / "run.json")) {
        expect_bad_input(params + " --out " + other.string(), {"--resume", ".partial"});
        expect_bad_input(params + " --seed 5 --resume --out " + other.string(),
                         {"--resume", "run.json", "not the state of this command"});
    }
}

// Damaged simulate folders through report and merge: one line naming the folder or file, exit 2
// (these were a stack overflow, map::at and the JSON library's type errors, exit 1).
TEST(CliReport, DamagedRunFoldersExitTwoNamingThem) {
    const fs::path good = scratch() / "damage_source";
    fs::remove_all(good);
    ASSERT_EQ(
        run("simulate --L 31 --T1 4 --T2 24 --trials 20 --N pow2 --quiet --out " + good.string())
            .exit_code,
        0);
    auto damaged = [&](const std::string& name, const std::function<void(const fs::path&)>& edit) {
        const fs::path dir = scratch() / ("damage_" + name);
        fs::remove_all(dir);
        fs::copy(good, dir);
        edit(dir);
        return dir;
    };
    auto set_manifest = [](const fs::path& dir, const std::string& from, const std::string& to) {
        std::string text = slurp(dir / "manifest.json");
        const std::size_t at = text.find(from);
        ASSERT_NE(at, std::string::npos) << from;
        text.replace(at, from.size(), to);
        std::ofstream(dir / "manifest.json") << text;
    };
    const fs::path deep = damaged("deep", [](const fs::path& d) {
        std::ofstream(d / "manifest.json") << std::string(100000, '[') << std::string(100000, ']');
    });
    expect_bad_input("report --in " + deep.string() + " --out " + (scratch() / "r1").string(),
                     {"manifest.json", "nested deeper"});
    const fs::path row = damaged("row", [](const fs::path& d) {
        std::string text = slurp(d / "simulate.csv");
        const std::size_t second = text.find('\n', text.find('\n') + 1) + 1;
        text.erase(second, text.find('\n', second) + 1 - second);  // N = 2 gone
        std::ofstream(d / "simulate.csv") << text;
    });
    const RunResult r =
        run("report --in " + row.string() + " --out " + (scratch() / "r2").string());
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    const fs::path type = damaged("type", [&](const fs::path& d) {
        set_manifest(d, "\"threads\": ", "\"threads\": \"many\", \"was\": ");
        set_manifest(d, "\"trials\": 20", "\"trials\": \"twenty\"");
    });
    expect_bad_input("merge " + type.string() + " --out " + (scratch() / "m1").string(),
                     {type.string(), "trials"});
    const fs::path missing = damaged(
        "missing", [&](const fs::path& d) { set_manifest(d, "\"seed\":", "\"former_seed\":"); });
    expect_bad_input("merge " + missing.string() + " --out " + (scratch() / "m2").string(),
                     {missing.string(), "seed"});
    // Fuzz finding: a length beyond int (L = 2e111) was converted out of range (UBSan).
    const fs::path huge =
        damaged("huge", [&](const fs::path& d) { set_manifest(d, "\"L\": 31", "\"L\": 2e111"); });
    expect_bad_input("merge " + huge.string() + " --out " + (scratch() / "m3").string(),
                     {huge.string(), "/config/model/L", "expected an integer"});
    for (const char* out : {"r1", "r2", "m1", "m2", "m3"})
        EXPECT_FALSE(fs::exists(scratch() / out)) << out;
}

TEST(CliSimulate, InfiniteDimensionIsExact) {
    const fs::path out = scratch() / "dinf";
    fs::remove_all(out);
    const RunResult r = run("simulate --d inf --L 63 --T1 8 --T2 50 --out " + out.string());
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto rows = parse_csv(slurp(out / "simulate.csv"));
    EXPECT_EQ(rows[1][1], "0");  // no trials
    EXPECT_EQ(rows[1][3], "0");  // no standard error
}

TEST(CliSimulate, BadInputExitsTwoWithoutWritingAnything) {
    const fs::path out = scratch() / "sim_bad";
    fs::remove_all(out);
    expect_bad_input("simulate --rho0 0.5 --out " + out.string(),
                     {"rho0", "largest feasible |rho0| is 0.194"});
    expect_bad_input("simulate --trials 1 --out " + out.string(), {"--trials"});
    expect_bad_input("simulate --d 0 --out " + out.string(), {"--d"});
    expect_bad_input("simulate --d 12.5 --out " + out.string(), {"--d"});
    expect_bad_input("simulate --kappa -2 --out " + out.string(), {"--kappa"});
    expect_bad_input("simulate --shard 2/2 --out " + out.string(), {"--shard"});
    expect_bad_input("simulate --norm-cv -1 --out " + out.string(), {"--norm-cv"});
    expect_bad_input("simulate --N 5000 --out " + out.string(), {"--N"});
    expect_bad_input("simulate --lambda 2 --out " + out.string(), {"lambda"});
    // Values ~1e200 overflow the simulator's float32 Gram matrix (a trial crashed on them).
    expect_bad_input("simulate --C 1e200 --out " + out.string(), {"--C", "1e+09"});
    expect_bad_input("sweep --set C=1e-12 --out " + out.string(), {"C", "1e-09"});
    expect_bad_input("simulate --trials 10", {"--out"});
    expect_bad_input("sweep --set bogus=1 --out " + out.string(), {"--set", "bogus"});
    expect_bad_input("sweep --set beta=0.1,x --out " + out.string(), {"--set beta"});
    expect_bad_input("sweep --set beta=-1 --L 15 --T1 2 --T2 10 --trials 4 --out " + out.string(),
                     {"beta"});
    EXPECT_FALSE(fs::exists(out)) << "a failed run must not leave a folder behind";
}

// Every CSV of a simulate folder (with --calibrate) and of a sweep folder read with pandas
// (Python's csv module without it) against docs/commands/simulate.md's dtypes block, which is
// generated from common/run_columns: the headers the writers take from the table are the
// documented ones, and each column parses as its type.
TEST(CliSimulate, CsvDtypesOfSimulateAndSweepFolders) {
    const std::string python = fs::exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
    if (std::system((python + " -c '' 2>/dev/null").c_str()) != 0) GTEST_SKIP() << "no python3";
    const std::string small = " --L 63 --T1 8 --T2 50 --d 16 --trials 256 --N pow2 --quiet";
    const fs::path simulated = scratch() / "dtypes_simulate";
    const fs::path swept = scratch() / "dtypes_sweep";
    fs::remove_all(simulated);
    fs::remove_all(swept);
    ASSERT_EQ(run("simulate" + small + " --calibrate 10 --out " + simulated.string()).exit_code, 0);
    ASSERT_EQ(
        run("sweep --set beta=0.05,0.2 --set lambda=0.1,0.5" + small + " --out " + swept.string())
            .exit_code,
        0);
    const std::string check = python + " " + ATTNGEO_SOURCE_DIR +
                              "/tests/python/check_csv_dtypes.py " + ATTNGEO_SOURCE_DIR +
                              "/docs/commands/simulate.md ";
    for (const fs::path& folder : {simulated, swept}) {
        const fs::path log = scratch() / "dtypes.log";
        const int status =
            std::system((check + folder.string() + " > " + log.string() + " 2>&1").c_str());
        std::cout << attngeo::test_support::slurp(log);
        EXPECT_EQ(status, 0) << folder;
    }
    // The swept-parameter columns must sit where the table puts them: moving one is caught.
    std::string sweep = attngeo::test_support::slurp(swept / "sweep.csv");
    sweep.replace(0, sweep.find('\n'),
                  "beta,grid" + sweep.substr(sweep.find(",lambda"),
                                             sweep.find('\n') - sweep.find(",lambda")));
    std::ofstream(swept / "sweep.csv") << sweep;
    EXPECT_NE(std::system((check + swept.string() + " > /dev/null 2>&1").c_str()), 0);
}
