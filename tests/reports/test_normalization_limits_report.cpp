// Tests for the report of `attngeo normalization` folders (reports/normalization_limits_report.cpp): a
// synthetic folder in the columns of docs/commands/normalization.md is reported, and the figures'
// data files must hold the numbers recomputed here from the fixture's formulas.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "common/errors.hpp"
#include "common/run_schema.hpp"
#include "reports/figure.hpp"
#include "reports/report.hpp"
#include "tests/reports/report_checks.hpp"
#include "tests/support/test_files.hpp"

namespace fs = std::filesystem;
using namespace attngeo;

namespace {

using attngeo::test_support::slurp;

fs::path scratch() {
    return attngeo::test_support::scratch_folder("normalization_report");
}

const int kLayers = 2, kHeads = 2, kUnits = kLayers * kHeads;
const std::vector<int> kGrid = {1, 2, 4, 8};
// Three length bins: N ≤ length_lo leaves N = 8 in the last bin only, so (a) draws 1, 2, 4.
const std::vector<std::pair<int, int>> kBins = {{2, 3}, {4, 7}, {8, 15}};
const std::vector<double> kTemperatures = {0.01, 0.1, 1, 10, 100};
const std::vector<double> kEpsilons = {1e-3, 0.1, 10};
const std::vector<std::string> kFigures = {
    "run0_normalization_distance_vs_length", "run0_normalization_distance_vs_n",
    "run0_normalization_critical_n", "run0_normalization_separability",
    "run0_normalization_sensitivity"};

// The fixture's values, per head unit u = layer·heads + head, bin b and N.
double distance_of(int u, int b, int N) {
    return 1.0 / N + 0.1 * u + 0.05 * b;
}
double random_mean_of(int u, int b, int N) {
    return 0.5 + 0.01 * N + 0.02 * u + 0.03 * b;
}
double random_se_of(int u) {
    return 0.001 * (u + 1);
}
long queries_of(int u, int b) {
    return 10 * (b + 1) * (b + 1) + 3 * u;
}
double separability_of(int u, int b, int N) {
    return 0.5 + 0.1 * u - 0.12 * b + 0.01 * N;
}
// The head with the largest g changes with ε and T, and the curves differ between ε.
double g_of(int u, int e, double T) {
    const int t = static_cast<int>(std::lround(std::log10(T))) + 2;
    return (0.2 + 0.05 * ((u * 7 + e + t) % 4)) * (1 + 0.5 * e) / (T + 0.5);
}

void write_text(const fs::path& path, const std::string& text) {
    std::ofstream(path) << text;
}

nlohmann::json manifest_json() {
    std::vector<int> positions;
    for (int t = 1; t < 15; ++t)
        positions.push_back(t);
    nlohmann::json bins = nlohmann::json::array();
    for (const auto& [lo, hi] : kBins)
        bins.push_back({lo, hi});
    return {{"kind", schema::kind::normalization},
            {schema::kFormatVersionKey, schema::kFormatVersion},
            {"command", "attngeo normalization --model tiny.bin --out run"},
            {"model",
             {{"path", "/models/tiny.bin"},
              {"family", "llama"},
              {"layers", kLayers},
              {"heads", kHeads},
              {"kv_heads", kHeads},
              {"head_dim", 8}}},
            {"documents", {{"windows", 3}, {"skipped", 0}}},
            {"parameters",
             {{"context", 16},
              {"queries", "all"},
              {"positions", positions},
              {"length_bins", bins},
              {"sizes", kGrid},
              {"subsets", 64},
              {"random_seed", 7},
              {"temperatures", kTemperatures},
              {"epsilons", kEpsilons},
              {"ks_level", 0.01},
              {"scores", "q·k/√d_head"}}},
            {"decisions", {"x_i are the value states (docs/design.md §14)", "KS level 0.01"}}};
}

std::string distance_csv() {
    std::ostringstream csv;
    csv << std::setprecision(17)
        << "layer,head,length_lo,length_hi,N,queries,distance,random_mean,random_se,"
           "random_rms_exact\n";
    for (int u = 0; u < kUnits; ++u)
        for (std::size_t b = 0; b < kBins.size(); ++b)
            for (int N : kGrid) {
                if (N > kBins[b].first) continue;
                const int bin = static_cast<int>(b);
                csv << u / kHeads << ',' << u % kHeads << ',' << kBins[b].first << ','
                    << kBins[b].second << ',' << N << ',' << queries_of(u, bin) << ','
                    << distance_of(u, bin, N) << ',' << random_mean_of(u, bin, N) << ','
                    << random_se_of(u) << ',' << random_mean_of(u, bin, N) + 0.1 << '\n';
            }
    return csv.str();
}

std::string separability_csv() {
    std::ostringstream csv;
    csv << std::setprecision(17) << "layer,head,length_lo,length_hi,N,queries,separability\n";
    for (int u = 0; u < kUnits; ++u)
        for (std::size_t b = 0; b < kBins.size(); ++b)
            for (int N : kGrid) {
                if (N >= kBins[b].first) continue;
                const int bin = static_cast<int>(b);
                csv << u / kHeads << ',' << u % kHeads << ',' << kBins[b].first << ','
                    << kBins[b].second << ',' << N << ',' << queries_of(u, bin) << ','
                    << separability_of(u, bin, N) << '\n';
            }
    return csv.str();
}

const char* const kSensitivityHeader = "layer,head,temperature,epsilon,queries,g\n";

std::string sensitivity_csv() {
    std::ostringstream csv;
    csv << std::setprecision(17) << kSensitivityHeader;
    for (int u = 0; u < kUnits; ++u)
        for (double T : kTemperatures)
            for (std::size_t e = 0; e < kEpsilons.size(); ++e)
                csv << u / kHeads << ',' << u % kHeads << ',' << T << ',' << kEpsilons[e] << ",42,"
                    << g_of(u, static_cast<int>(e), T) << '\n';
    return csv.str();
}

// The KS rows: a bin's critical N is the first indistinguishable N; the first bin has none.
const std::vector<double> kCriticalN = {std::nan(""), 2, 4};
double length_mean_of(std::size_t b) {
    return 0.5 * (kBins[b].first + kBins[b].second);
}

void write_critical(const fs::path& dir) {
    std::ostringstream by_n, by_length;
    by_n << std::setprecision(17)
         << "length_lo,length_hi,length_mean,N,heads,ks_statistic,p_value,indistinguishable\n";
    by_length << std::setprecision(17) << "length_lo,length_hi,length_mean,critical_N,fraction\n";
    for (std::size_t b = 0; b < kBins.size(); ++b) {
        for (int N : kGrid) {
            if (N > kBins[b].first) continue;
            const bool same = !std::isnan(kCriticalN[b]) && N >= kCriticalN[b];
            by_n << kBins[b].first << ',' << kBins[b].second << ',' << length_mean_of(b) << ',' << N
                 << ',' << kUnits << ',' << (same ? 0.25 : 1.0) << ',' << (same ? 0.75 : 0.001)
                 << ',' << same << '\n';
        }
        by_length << kBins[b].first << ',' << kBins[b].second << ',' << length_mean_of(b) << ',';
        if (std::isnan(kCriticalN[b]))
            by_length << "nan,nan\n";
        else
            by_length << kCriticalN[b] << ',' << kCriticalN[b] / length_mean_of(b) << '\n';
    }
    write_text(dir / schema::file::critical_n, by_n.str());
    write_text(dir / schema::file::critical_n_by_length, by_length.str());
}

fs::path make_folder(const std::string& name) {
    const fs::path dir = scratch() / name;
    fs::remove_all(dir);
    fs::create_directories(dir);
    write_text(dir / schema::file::manifest, manifest_json().dump(2));
    write_text(dir / schema::file::selection_distance, distance_csv());
    write_text(dir / schema::file::separability, separability_csv());
    write_text(dir / schema::file::sensitivity, sensitivity_csv());
    write_critical(dir);
    return dir;
}

fs::path report(const fs::path& dir, const std::string& name) {
    const fs::path out = scratch() / name;
    fs::remove_all(out);
    reports::write_report({dir.string()}, out.string());
    return out;
}

std::string error_of(const fs::path& dir, const std::string& name) {
    try {
        report(dir, name);
    } catch (const InputError& e) {
        return e.what();
    }
    return "";
}

// A .dat file's numeric rows, one vector per block (blocks are separated by blank lines).
using Rows = std::vector<std::vector<double>>;
std::vector<Rows> dat_blocks(const fs::path& path) {
    std::vector<Rows> blocks(1);
    std::istringstream in(slurp(path));
    std::string line;
    while (std::getline(in, line)) {
        if (line.empty()) {
            if (!blocks.back().empty()) blocks.emplace_back();
            continue;
        }
        if (line[0] == '#') continue;
        std::istringstream fields(line);
        std::vector<double> row;
        std::string field;
        while (fields >> field)
            row.push_back(std::stod(field));
        blocks.back().push_back(row);
    }
    if (blocks.back().empty()) blocks.pop_back();
    return blocks;
}

// Type-7 quantile of a small sample, written out for the test.
double type7(std::vector<double> v, double q) {
    std::sort(v.begin(), v.end());
    const double h = q * (v.size() - 1);
    const std::size_t i = static_cast<std::size_t>(h);
    return i + 1 < v.size() ? v[i] + (h - i) * (v[i + 1] - v[i]) : v[i];
}

// Each head's separability at N pooled over the bins that have N, weighted by queries.
std::vector<double> pooled_separability(int N) {
    std::vector<double> pooled;
    for (int u = 0; u < kUnits; ++u) {
        double weighted = 0, weight = 0;
        for (int b = 0; b < static_cast<int>(kBins.size()); ++b)
            if (N < kBins[b].first) {
                weighted += queries_of(u, b) * separability_of(u, b, N);
                weight += queries_of(u, b);
            }
        pooled.push_back(weighted / weight);
    }
    return pooled;
}

void expect_figures(const fs::path& out, const std::vector<std::string>& ids) {
    const std::string html = slurp(out / "index.html");
    const bool gnuplot = !reports::find_gnuplot().empty();
    if (!gnuplot) std::cout << "gnuplot not found: figures' SVGs not checked\n";
    for (const std::string& id : ids) {
        EXPECT_NE(html.find("id=\"" + id + "\""), std::string::npos) << id;
        EXPECT_TRUE(fs::exists(out / "figures" / (id + ".gp"))) << id;
        if (gnuplot) {
            EXPECT_TRUE(fs::exists(out / "figures" / (id + ".svg"))) << id;
        }
    }
    if (gnuplot) {
        EXPECT_EQ(html.find("not drawn"), std::string::npos);
    }
}

}  // namespace

TEST(NormalizationReport, DrawsTheFiveFiguresFromTheFolder) {
    const fs::path out = report(make_folder("full"), "full_out");
    expect_figures(out, kFigures);
    const std::string html = slurp(out / "index.html");
    EXPECT_NE(html.find("normalization: <code>"), std::string::npos);
    EXPECT_NE(html.find("x_i are the value states"), std::string::npos) << "decisions";
    EXPECT_NE(html.find("14 positions"), std::string::npos);
    EXPECT_NE(html.find("5 from 0.01 to 100"), std::string::npos) << "temperature range";
    EXPECT_NE(html.find("the predecessor's reference min{1/(4T), √2}"), std::string::npos);
    EXPECT_GE(test_support::check_references(out, html), 4 * static_cast<int>(kFigures.size()))
        << "every figure links its script and data (and its SVG and PNG when drawn)";
}

TEST(NormalizationReport, ThePageRendersInABrowser) {
    const fs::path out = report(make_folder("browser"), "browser_out");
    test_support::expect_screenshot_not_blank((out / "index.html").string(), out);
}

TEST(NormalizationReport, DistanceFiguresHoldTheMeansOverHeads) {
    const fs::path out = report(make_folder("distance"), "distance_out");
    // (a): N = 1, 2, 4 (in at least two bins); N = 8 is in the last bin only.
    const auto by_length =
        dat_blocks(out / "figures" / "run0_normalization_distance_vs_length.dat");
    ASSERT_EQ(by_length.size(), 3u);
    const int shown[3] = {1, 2, 4};
    double largest = 0;
    for (int k = 0; k < 3; ++k) {
        const int N = shown[k];
        std::size_t row = 0;
        for (int b = 0; b < static_cast<int>(kBins.size()); ++b) {
            if (N > kBins[b].first) continue;
            ASSERT_LT(row, by_length[k].size());
            double distance = 0, random = 0;
            for (int u = 0; u < kUnits; ++u)
                distance += distance_of(u, b, N) / kUnits,
                    random += random_mean_of(u, b, N) / kUnits;
            const auto& r = by_length[k][row++];
            EXPECT_EQ(r[0], length_mean_of(b));
            EXPECT_NEAR(r[1], distance, 1e-12) << "N " << N << " bin " << b;
            EXPECT_NEAR(r[2], random, 1e-12);
            EXPECT_EQ(r[3], kUnits);
            largest = std::max({largest, std::abs(r[1] - distance), std::abs(r[2] - random)});
        }
        EXPECT_EQ(row, by_length[k].size()) << "N " << N;
    }
    std::cout << "largest difference (a): " << largest << "\n";
    // (b): the middle bin [4, 7] and the last [8, 15], with ±2 SE of the mean over heads.
    const auto by_n = dat_blocks(out / "figures" / "run0_normalization_distance_vs_n.dat");
    ASSERT_EQ(by_n.size(), 2u);
    ASSERT_EQ(by_n[0].size(), 3u) << "N = 1, 2, 4 in [4, 7]";
    ASSERT_EQ(by_n[1].size(), 4u) << "N = 1, 2, 4, 8 in [8, 15]";
    const int b = 2;
    const auto& row = by_n[1][3];
    EXPECT_EQ(row[0], 8);
    double distance = 0, random = 0, squares = 0;
    for (int u = 0; u < kUnits; ++u) {
        distance += distance_of(u, b, 8) / kUnits;
        random += random_mean_of(u, b, 8) / kUnits;
        squares += random_se_of(u) * random_se_of(u);
    }
    const double se = std::sqrt(squares) / kUnits;
    EXPECT_NEAR(row[1], distance, 1e-12);
    EXPECT_NEAR(row[2], random, 1e-12);
    EXPECT_NEAR(row[3], random - 2 * se, 1e-12);
    EXPECT_NEAR(row[4], random + 2 * se, 1e-12);
    EXPECT_NEAR(row[5], random + 0.1, 1e-12) << "mean of random_rms_exact";
    std::cout << "largest difference (b): "
              << std::max({std::abs(row[1] - distance), std::abs(row[3] - (random - 2 * se))})
              << "\n";
}

TEST(NormalizationReport, SeparabilityBoxesArePooledOverBinsByQueries) {
    const fs::path out = report(make_folder("separability"), "separability_out");
    const auto blocks = dat_blocks(out / "figures" / "run0_normalization_separability.dat");
    ASSERT_EQ(blocks.size(), 1u);
    ASSERT_EQ(blocks[0].size(), 3u) << "N = 1, 2, 4 (N < length_lo)";
    double largest = 0;
    for (const auto& row : blocks[0]) {
        const int N = static_cast<int>(row[1]);
        EXPECT_EQ(row[0], std::log2(N));
        const std::vector<double> pooled = pooled_separability(N);
        const double expected[5] = {*std::min_element(pooled.begin(), pooled.end()),
                                    type7(pooled, 0.25), type7(pooled, 0.5), type7(pooled, 0.75),
                                    *std::max_element(pooled.begin(), pooled.end())};
        for (int k = 0; k < 5; ++k) {
            EXPECT_NEAR(row[2 + k], expected[k], 1e-12) << "N " << N << " statistic " << k;
            largest = std::max(largest, std::abs(row[2 + k] - expected[k]));
        }
        EXPECT_EQ(row[7], kUnits);
    }
    std::cout << "largest difference (d): " << largest << "\n";
    // N = 1 spans three bins of different sizes: the weighting matters, and the median is the
    // mean of the two middle heads.
    std::vector<double> pooled = pooled_separability(1);
    double unweighted_head0 = 0;
    for (int b = 0; b < 3; ++b)
        unweighted_head0 += separability_of(0, b, 1) / 3;
    EXPECT_GT(std::abs(pooled[0] - unweighted_head0), 0.01);
    std::sort(pooled.begin(), pooled.end());
    EXPECT_NEAR(blocks[0][0][4], 0.5 * (pooled[1] + pooled[2]), 1e-12);
}

TEST(NormalizationReport, SensitivityDrawsTheMaximumAndMeanOverHeads) {
    const fs::path out = report(make_folder("sensitivity"), "sensitivity_out");
    const auto blocks = dat_blocks(out / "figures" / "run0_normalization_sensitivity.dat");
    ASSERT_EQ(blocks.size(), kEpsilons.size());
    double largest = 0;
    for (std::size_t e = 0; e < kEpsilons.size(); ++e) {
        ASSERT_EQ(blocks[e].size(), kTemperatures.size());
        for (std::size_t t = 0; t < kTemperatures.size(); ++t) {
            const auto& row = blocks[e][t];
            double max = -1, mean = 0;
            for (int u = 0; u < kUnits; ++u) {
                const double g = g_of(u, static_cast<int>(e), kTemperatures[t]);
                if (g > max) max = g;
                mean += g / kUnits;
            }
            EXPECT_EQ(row[0], kEpsilons[e]);
            EXPECT_EQ(row[1], kTemperatures[t]);
            EXPECT_NEAR(row[2], max, 1e-12) << "ε " << kEpsilons[e] << " T " << kTemperatures[t];
            EXPECT_NEAR(row[3], mean, 1e-12);
            EXPECT_EQ(row[4], kUnits);
            largest = std::max({largest, std::abs(row[2] - max), std::abs(row[3] - mean)});
        }
    }
    std::cout << "largest difference (e): " << largest << "\n";
    // One spot value by hand: at T = 1, ε = 0.1 (e = 1) the heads' first factors are
    // 0.2 + 0.05·((7u + 1 + 2) mod 4) = 0.35, 0.3, 0.25, 0.2 for u = 0..3: the maximum is
    // head 0's, 0.35·1.5/1.5; at T = 10 (t = 3) they are 0.2, 0.35, 0.3, 0.25: head 1's.
    EXPECT_NEAR(blocks[1][2][2], 0.35, 1e-12);
    EXPECT_NEAR(blocks[1][3][2], 0.35 * 1.5 / 10.5, 1e-12);
    EXPECT_NEAR(blocks[1][3][3], (0.2 + 0.35 + 0.3 + 0.25) / 4 * 1.5 / 10.5, 1e-12);
    const std::string script = slurp(out / "figures" / "run0_normalization_sensitivity.gp");
    EXPECT_NE(script.find("predecessor_reference(x) with lines dt 2 lw 2 lc rgb '#888888' title "
                          "'predecessor''s reference'"),
              std::string::npos);
    EXPECT_NE(script.find("1/(4*x) < sqrt(2) ? 1/(4*x) : sqrt(2)"), std::string::npos);
    EXPECT_NE(script.find("1/(2*x) with lines"), std::string::npos);
    EXPECT_NE(script.find("Jacobian bound 1/(2T)"), std::string::npos);
    EXPECT_NE(slurp(out / "index.html").find("bounds only the Jacobian"), std::string::npos);
}

TEST(NormalizationReport, CriticalNTableAndFigureLeaveOutBinsWithoutOne) {
    const fs::path out = report(make_folder("critical"), "critical_out");
    const std::string html = slurp(out / "index.html");
    EXPECT_NE(html.find("<td>2</td><td>3</td><td>2.5</td><td>none</td><td>n/a</td>"),
              std::string::npos)
        << "the first bin has no critical N";
    EXPECT_NE(html.find("<td>4</td><td>7</td><td>5.5</td><td>2</td><td>0.363636</td>"),
              std::string::npos);
    EXPECT_NE(html.find("<td>8</td><td>15</td><td>11.5</td><td>4</td>"), std::string::npos);
    EXPECT_NE(html.find("p ≥ 0.01"), std::string::npos) << "the KS level from the manifest";
    EXPECT_NE(html.find("Left out (no N of the grid indistinguishable"), std::string::npos);
    EXPECT_NE(html.find("L ∈ [2, 3]."), std::string::npos);
    const auto blocks = dat_blocks(out / "figures" / "run0_normalization_critical_n.dat");
    ASSERT_EQ(blocks.size(), 1u);
    ASSERT_EQ(blocks[0].size(), 2u);
    EXPECT_EQ(blocks[0][0][0], 5.5);
    EXPECT_EQ(blocks[0][0][1], 2);
    EXPECT_EQ(blocks[0][1][0], 11.5);
    EXPECT_EQ(blocks[0][1][1], 4);
    EXPECT_NE(slurp(out / "figures" / "run0_normalization_critical_n.gp").find("0.06*x"),
              std::string::npos);
}

TEST(NormalizationReport, WithoutTheKsFilesTheOtherFiguresAreDrawn) {
    const fs::path dir = make_folder("no_ks");
    fs::remove(dir / schema::file::critical_n);
    fs::remove(dir / schema::file::critical_n_by_length);
    const fs::path out = report(dir, "no_ks_out");
    expect_figures(out, {kFigures[0], kFigures[1], kFigures[3], kFigures[4]});
    const std::string html = slurp(out / "index.html");
    EXPECT_EQ(html.find("id=\"run0_normalization_critical_n\""), std::string::npos);
    EXPECT_NE(html.find("No critical N"), std::string::npos);
}

TEST(NormalizationReport, ADamagedOrMissingFileIsAnErrorNamingIt) {
    const fs::path dir = make_folder("damaged");
    // sensitivity.csv without its queries column.
    std::ostringstream csv;
    csv << std::setprecision(17) << "layer,head,temperature,epsilon,g\n";
    for (double T : kTemperatures)
        csv << "0,0," << T << ",0.1," << g_of(0, 1, T) << '\n';
    write_text(dir / schema::file::sensitivity, csv.str());
    std::string message = error_of(dir, "damaged_out");
    EXPECT_NE(message.find(schema::file::sensitivity), std::string::npos) << message;
    EXPECT_NE(message.find("queries"), std::string::npos) << message;
    EXPECT_FALSE(fs::exists(scratch() / "damaged_out" / "index.html")) << "nothing written";

    const fs::path missing = make_folder("missing");
    fs::remove(missing / schema::file::separability);
    message = error_of(missing, "missing_out");
    EXPECT_NE(message.find(schema::file::separability), std::string::npos) << message;

    const fs::path level = make_folder("no_level");
    nlohmann::json manifest = manifest_json();
    manifest["parameters"].erase("ks_level");
    write_text(level / schema::file::manifest, manifest.dump());
    message = error_of(level, "no_level_out");
    EXPECT_NE(message.find("manifest.json"), std::string::npos) << message;
    EXPECT_NE(message.find("ks_level"), std::string::npos) << message;

    // Every setting of the parameters table is read as the command writes it.
    for (const auto& [block, key] : std::vector<std::pair<std::string, std::string>>{
             {"parameters", "temperatures"}, {"model", "head_dim"}, {"documents", "skipped"}}) {
        nlohmann::json without = manifest_json();
        without[block].erase(key);
        write_text(level / schema::file::manifest, without.dump());
        message = error_of(level, "no_" + key + "_out");
        EXPECT_NE(message.find("manifest.json"), std::string::npos) << message;
        EXPECT_NE(message.find(key), std::string::npos) << message;
    }
}

TEST(NormalizationReport, TheCliReportsTheFolder) {
    const fs::path dir = make_folder("cli");
    const fs::path out = scratch() / "cli_out";
    fs::remove_all(out);
    const auto result = test_support::run_program(
        ATTNGEO_EXE, "report --in " + dir.string() + " --out " + out.string(), scratch());
    EXPECT_EQ(result.exit_code, 0) << result.err;
    EXPECT_NE(result.out.find("index.html"), std::string::npos) << result.out;
    expect_figures(out, kFigures);

    // A damaged file is exit code 2 with one line naming it.
    write_text(dir / schema::file::sensitivity, std::string(kSensitivityHeader).substr(0, 20));
    const auto damaged = test_support::run_program(
        ATTNGEO_EXE, "report --in " + dir.string() + " --out " + out.string(), scratch());
    EXPECT_EQ(damaged.exit_code, 2);
    EXPECT_NE(damaged.err.find(schema::file::sensitivity), std::string::npos) << damaged.err;
}
