// The judge of truncate folders (compare/truncation_summary.hpp): Spearman against a plain
// rank computation, the knee rule, and truncate.csv / effective_size.csv of a hand-written
// folder against means, standard errors and thresholds recomputed here.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <vector>

#include "common/csv.hpp"
#include "common/errors.hpp"
#include "common/run_schema.hpp"
#include "common/safetensors.hpp"
#include "compare/truncation_summary.hpp"
#include "tests/support/test_files.hpp"

namespace fs = std::filesystem;
using namespace attngeo;
using attngeo::compare::loss_knee;
using attngeo::compare::spearman;
using attngeo::compare::summarise_truncation;

namespace {

// A scope-all truncate folder of one attn curve at N = 1, 2, 4 over `loss` [3][D] (ΔNLL per
// document); the other measures are copies scaled by 2.
fs::path write_folder(const std::string& name, const std::vector<std::vector<double>>& loss,
                      const std::vector<double>& taus, int replicates) {
    const fs::path dir = test_support::scratch_folder("truncation_summary") / name;
    fs::remove_all(dir);
    fs::create_directories(dir);
    const std::int64_t C = static_cast<std::int64_t>(loss.size()),
                       D = static_cast<std::int64_t>(loss[0].size());
    std::vector<double> flat, twice;
    for (const auto& row : loss)
        for (double x : row) {
            flat.push_back(x);
            twice.push_back(2 * x);
        }
    std::vector<std::int64_t> zero(C, 0), minus(C, -1), N = {1, 2, 4};
    std::vector<HostTensor> tensors;
    for (const char* m : {"delta_nll", "kl"})
        tensors.push_back(tensor_view(m, DType::F64, {C, D}, flat.data(), flat.size() * 8));
    for (const char* m : {"top1", "dropped_mass", "output_error"})
        tensors.push_back(tensor_view(m, DType::F64, {C, D}, twice.data(), twice.size() * 8));
    tensors.push_back(tensor_view("policy", DType::I64, {C}, zero.data(), C * 8));
    tensors.push_back(tensor_view("renorm", DType::I64, {C}, zero.data(), C * 8));
    tensors.push_back(tensor_view("layer", DType::I64, {C}, minus.data(), C * 8));
    tensors.push_back(tensor_view("head", DType::I64, {C}, minus.data(), C * 8));
    tensors.push_back(tensor_view("N", DType::I64, {C}, N.data(), C * 8));
    write_safetensors((dir / schema::file::per_document).string(), tensors);
    const nlohmann::json manifest = {
        {"tool", "attngeo"},
        {"kind", "truncate"},
        {"format_version", schema::kFormatVersion},
        {"parameters",
         {{"scope", "all"}, {"policies", {"attn"}}, {"tau", taus}, {"replicates", replicates}}}};
    std::ofstream(dir / schema::file::manifest) << manifest.dump(2);
    return dir;
}

}  // namespace

TEST(Spearman, EqualsPearsonOfAverageRanks) {
    EXPECT_DOUBLE_EQ(spearman({1, 2, 3, 4}, {10, 20, 30, 40}), 1.0);
    EXPECT_DOUBLE_EQ(spearman({1, 2, 3, 4}, {4, 3, 2, 1}), -1.0);
    // Ties: x ranks 1, 2.5, 2.5, 4; y ranks 1, 2, 3, 4 → Pearson of those, by hand.
    const double rx[] = {1, 2.5, 2.5, 4}, ry[] = {1, 2, 3, 4};
    double mx = 2.5, my = 2.5, sxy = 0, sxx = 0, syy = 0;
    for (int i = 0; i < 4; ++i) {
        sxy += (rx[i] - mx) * (ry[i] - my);
        sxx += (rx[i] - mx) * (rx[i] - mx);
        syy += (ry[i] - my) * (ry[i] - my);
    }
    const double expected = sxy / std::sqrt(sxx * syy);
    const double got = spearman({0.1, 0.5, 0.5, 0.9}, {3, 5, 7, 100});
    std::cout << "difference from the by-hand value: " << std::abs(got - expected) << "\n";
    EXPECT_NEAR(got, expected, 1e-15);
    EXPECT_TRUE(std::isnan(spearman({1, 1, 1}, {1, 2, 3})));
    EXPECT_TRUE(std::isnan(spearman({1}, {2})));
}

TEST(LossKnee, FirstNWithinTheFractionOfTheFirstLoss) {
    EXPECT_EQ(loss_knee({1, 2, 4, 8}, {1.0, 0.5, 0.1, 0.01}), 4);
    EXPECT_EQ(loss_knee({1, 2, 4, 8}, {1.0, 0.5, 0.2, 0.11}), -1);
    EXPECT_EQ(loss_knee({1, 2}, {0.0, 0.0}), -1);
    EXPECT_EQ(loss_knee({1, 2, 4}, {1.0, 0.5, 0.3}, 0.5), 2);
}

TEST(TruncationSummary, MeansIntervalsAndEffectiveSizeRecomputeFromTheDocuments) {
    const std::vector<std::vector<double>> loss = {
        {0.30, 0.20, 0.25, 0.35}, {0.06, 0.02, 0.04, 0.08}, {0.004, -0.002, 0.001, 0.003}};
    const fs::path dir = write_folder("means", loss, {0.01, 0.1}, 200);
    summarise_truncation(dir.string());
    const CsvTable table = read_csv_table((dir / schema::file::truncation).string());
    ASSERT_EQ(table.rows.size(), 3u);
    double worst = 0;
    for (std::size_t c = 0; c < 3; ++c) {
        double mean = 0, squares = 0;
        for (double x : loss[c])
            mean += x / 4;
        for (double x : loss[c])
            squares += (x - mean) * (x - mean);
        const double se = std::sqrt(squares / 3 / 4);
        worst =
            std::max({worst, std::abs(table.number(c, "delta_nll") - mean),
                      std::abs(table.number(c, "delta_nll_se") - se),
                      std::abs(table.number(c, "delta_nll_hi") - (mean + 3.182446305284263 * se)),
                      std::abs(table.number(c, "dropped_mass") - 2 * mean)});
        EXPECT_EQ(table.integer(c, "N"), c == 0 ? 1 : c == 1 ? 2 : 4);
        EXPECT_EQ(table.integer(c, "layer"), -1);
    }
    std::cout << "largest difference from the plain recomputation: " << worst << "\n";
    EXPECT_LT(worst, 1e-12);
    const CsvTable sizes = read_csv_table((dir / schema::file::effective_size).string());
    ASSERT_EQ(sizes.rows.size(), 2u);
    EXPECT_EQ(sizes.number(0, "N_star"), 4);  // τ = 0.01: mean ΔNLL 0.0015 at N = 4
    EXPECT_EQ(sizes.number(1, "N_star"), 2);  // τ = 0.1: 0.05 at N = 2
    EXPECT_LE(sizes.number(1, "N_star_lo"), 2);
    EXPECT_GE(sizes.number(1, "N_star_hi"), 2);
    EXPECT_FALSE(fs::exists(dir / schema::file::geometry_link));  // scope all: no link
}

TEST(TruncationSummary, NoNReachingTauLeavesNStarEmpty) {
    const fs::path dir =
        write_folder("unreached", {{0.5, 0.6}, {0.4, 0.5}, {0.3, 0.4}}, {0.01}, 50);
    summarise_truncation(dir.string());
    const CsvTable sizes = read_csv_table((dir / schema::file::effective_size).string());
    EXPECT_EQ(sizes.text(0, "N_star"), "");
    EXPECT_EQ(sizes.text(0, "N_star_hi"), "");
}

TEST(TruncationSummary, AFolderOfAnotherKindOrWithoutArraysIsAnInputError) {
    const fs::path dir = write_folder("broken", {{0.5, 0.6}, {0.4, 0.5}, {0.3, 0.4}}, {0.01}, 10);
    fs::remove(dir / schema::file::per_document);
    test_support::expect_input_error([&] { summarise_truncation(dir.string()); },
                                     {"per_doc.safetensors"});
    std::ofstream(dir / schema::file::manifest)
        << R"({"tool": "attngeo", "kind": "extract", "format_version": 2})";
    test_support::expect_input_error([&] { summarise_truncation(dir.string()); },
                                     {"manifest.json", "truncate"});
}
