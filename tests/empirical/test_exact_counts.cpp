// Exact counts on real captures (docs/design.md §2): stories260K on a held-out prompt and on random
// tokens, every head of every layer, and every path extract can take (theory's reference and
// Gram path, the batched device Gram, HeadStatistics with and without it) against the
// rational-arithmetic reference. Real heads have α tails (down to ~1e-24 on the prompt, far
// below 1e-28 on random tokens) whose distances all sit at ≈ ‖s‖²: the case where the counts
// hinge on differences below double resolution, which the random tokens drive into the exact
// step.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "common/safetensors.hpp"
#include "empirical/model/capture.hpp"
#include "empirical/model/device_metrics.hpp"
#include "empirical/extract/extract.hpp"
#include "empirical/extract/statistics.hpp"
#include "empirical/tokenizers/llama2c_tokenizer.hpp"
#include "reports/csv_table.hpp"
#include "tests/support/rational_metrics.hpp"
#include "tests/support/shared_data.hpp"
#include "tests/support/test_files.hpp"

namespace fs = std::filesystem;
using namespace attngeo;
using attngeo::test_support::ExactRow;
using attngeo::test_support::shared_folder;

namespace {

// The random-token sequence (mt19937, seed 14, 199 tokens after BOS): long enough that heads
// reach α below float32 normals (down to 0) and the exact step decides; only those heads go
// to the slow rational reference, so the test takes a few seconds.
constexpr int kRandomTokens = 200;
constexpr unsigned kRandomTokensSeed = 14;
constexpr double kTinyAlpha = 1e-38;  // below float32 normals: contributions at or near 0

std::vector<float> floats(const HostTensor& tensor) {
    std::vector<float> out(tensor.numel());
    std::memcpy(out.data(), tensor.data, tensor.bytes);
    return out;
}

// Not in examples/stories260K_corpus.txt: the model has not seen this text in our tests.
constexpr const char* kHeldOutPrompt =
    "The old cat sat by the window and watched the rain. A small bird came to the tree, and "
    "the cat wanted to be its friend. The bird sang a song, and the cat was happy all day.";

// What one capture's comparison found, over every (layer, head, N).
struct CaptureTally {
    long points = 0, exact_decisions = 0, double_rule_wrong = 0;
    double smallest_alpha = 1;
    int tiny_heads = 0;     // heads with some α < 1e-20
    int heads_checked = 0;  // heads compared with the rational reference
};

// The last query's attention and values of every layer for `ids` (BOS first), captured by
// `attngeo capture`'s code into `scratch`.
std::string capture_of(const std::vector<int>& ids, const fs::path& scratch) {
    {
        std::ofstream tokens(scratch / "ids.txt");
        for (std::size_t t = 0; t < ids.size(); ++t)
            tokens << (t ? " " : "") << ids[t];
        tokens << "\n";
    }
    empirical::CaptureRequest request;
    request.model = (shared_folder() / "models" / "stories260K" / "stories260K.bin").string();
    request.tokens_file = (scratch / "ids.txt").string();
    request.out = (scratch / "capture.safetensors").string();
    empirical::run_capture(request);
    return request.out;
}

// One head, when its smallest α is below `alpha_below` (1: every head): theory's reference, its
// Gram path and the batched device Gram, then HeadStatistics on the CPU and device paths, each
// against the rational reference.
void check_head(const float* head_alpha, const float* head_values, int n, int d,
                const std::vector<int>& order, const Eigen::MatrixXd& gram,
                const empirical::StatisticsSettings& settings, const std::string& where,
                double alpha_below, CaptureTally& tally) {
    theory::TokenGeometry tokens;
    tokens.alpha.resize(n);
    tokens.values.resize(n, d);
    for (int i = 0; i < n; ++i) {
        tokens.alpha[i] = head_alpha[i];
        for (int t = 0; t < d; ++t)
            tokens.values(i, t) = head_values[i * d + t];
    }
    tally.smallest_alpha = std::min(tally.smallest_alpha, tokens.alpha.minCoeff());
    tally.tiny_heads += tokens.alpha.minCoeff() < 1e-20;
    if (!(tokens.alpha.minCoeff() < alpha_below)) return;
    ++tally.heads_checked;
    const std::vector<ExactRow> want = test_support::rational_metrics(tokens);
    std::vector<std::vector<theory::SelectionMetrics>> paths;
    paths.push_back(theory::selection_metrics_reference(
        tokens, settings.sizes, theory::Ranking::attention, theory::Distance::euclidean));
    paths.push_back(theory::selection_metrics_gram(
        tokens, settings.sizes, theory::Ranking::attention, theory::Distance::euclidean));
    theory::RowMatrix ranked(n, d);
    for (int k = 0; k < n; ++k)
        ranked.row(k) = tokens.alpha[order[k]] * tokens.values.row(order[k]);
    paths.emplace_back();
    theory::selection_metrics_from_gram(ranked, gram, settings.sizes, theory::Distance::euclidean,
                                        paths.back());
    const char* names[] = {"reference", "gram", "device gram"};
    for (std::size_t p = 0; p < paths.size(); ++p)
        for (int k = 0; k < n; ++k)
            attngeo::test_support::expect_same_selection(
                paths[p][k], want[k],
                std::string(names[p]) + " " + where + " N=" + std::to_string(k + 1));
    // What extract accumulates, on the CPU path and on the device path.
    empirical::HeadStatistics cpu(settings), device(settings);
    const empirical::DocumentRecord cpu_record = cpu.add_document(head_alpha, head_values, d);
    const empirical::RankedGram device_gram{&order, &gram};
    const empirical::DocumentRecord device_record =
        device.add_document(head_alpha, head_values, d, &device_gram);
    EXPECT_TRUE(cpu == device) << where;
    for (int k = 0; k < n; ++k) {
        const int N = k + 1;
        const float precision = static_cast<float>(static_cast<double>(N) / (N + want[k].K_out));
        const float recall = static_cast<float>(static_cast<double>(want[k].K_in) / N);
        EXPECT_EQ(cpu_record.precision[k], precision) << where << " N=" << N;
        EXPECT_EQ(cpu_record.recall[k], recall) << where << " N=" << N;
        EXPECT_EQ(device_record.recall[k], recall) << where << " N=" << N;
        EXPECT_EQ(cpu.exact_decisions(k), want[k].exact_decisions) << where << " N=" << N;
        EXPECT_EQ(device.exact_decisions(k), want[k].exact_decisions) << where << " N=" << N;
        tally.exact_decisions += want[k].exact_decisions;
    }
    tally.points += n;
    tally.double_rule_wrong += test_support::double_rule_differences(tokens, want);
}

// Every head of every layer of stories260K on `ids` whose smallest α is below `alpha_below`,
// on every path (check_head).
CaptureTally check_every_head(const std::vector<int>& ids, const std::string& name,
                              double alpha_below = 1) {
    const SafetensorsFile capture(capture_of(ids, test_support::scratch_folder(name)));
    const int n = static_cast<int>(ids.size());
    empirical::StatisticsSettings settings;
    settings.context = n;
    settings.max_lag = 4;
    for (int N = 1; N <= n; ++N)
        settings.sizes.push_back(N);
    CaptureTally tally;
    for (int layer = 0; capture.contains("attentions." + std::to_string(layer)); ++layer) {
        const HostTensor attention = capture.get("attentions." + std::to_string(layer));
        const HostTensor value = capture.get("values." + std::to_string(layer));
        EXPECT_EQ(attention.shape.size(), 4u);  // [1, H, 1 (last query), n]
        EXPECT_EQ(attention.shape[3], n);
        if (attention.shape.size() != 4 || attention.shape[3] != n) return tally;
        const int H = static_cast<int>(attention.shape[1]);
        const int H_kv = static_cast<int>(value.shape[1]), d = static_cast<int>(value.shape[3]);
        const std::vector<float> alpha = floats(attention), values = floats(value);
        std::vector<std::vector<int>> orders(H);
        for (int h = 0; h < H; ++h)
            orders[h] = empirical::head_order(alpha.data() + h * n,
                                              values.data() + (h / (H / H_kv)) * n * d, n, d,
                                              theory::Ranking::attention);
        const auto alpha_tensor =
            torch::from_blob(const_cast<float*>(alpha.data()), {H, n}).clone();
        const auto value_tensor =
            torch::from_blob(const_cast<float*>(values.data()), {H_kv, n, d}).clone();
        const std::vector<Eigen::MatrixXd> grams =
            empirical::ranked_gram_batched(alpha_tensor, value_tensor, orders);
        for (int h = 0; h < H; ++h) {
            check_head(alpha.data() + h * n, values.data() + (h / (H / H_kv)) * n * d, n, d,
                       orders[h], grams[h], settings,
                       "layer " + std::to_string(layer) + " head " + std::to_string(h), alpha_below,
                       tally);
            if (::testing::Test::HasFailure()) return tally;
        }
    }
    std::cout << "[ info     ] stories260K, " << name << ", " << n << " tokens, "
              << tally.heads_checked << " heads: " << tally.points
              << " (head, N) points, every count equal to rational arithmetic on every path "
              << "(largest difference 0); " << tally.exact_decisions << " exact decisions; "
              << tally.double_rule_wrong << " points where plain double comparisons differ; "
              << "smallest alpha " << tally.smallest_alpha << ", " << tally.tiny_heads
              << " heads with alpha < 1e-20\n";
    return tally;
}

TEST(ExactCounts, Stories260kEveryHeadAndPathEqualsRationalArithmetic) {
    const fs::path folder = shared_folder() / "models" / "stories260K";
    REQUIRE_SHARED_FILE(folder / "stories260K.bin");
    const empirical::Llama2cBinTokenizer tokenizer((folder / "tok512.bin").string(), 512);
    std::vector<int> ids = tokenizer.encode(kHeldOutPrompt);
    ids.insert(ids.begin(), tokenizer.bos_id());
    const CaptureTally tally = check_every_head(ids, "exact_counts");
    RecordProperty("exact_decisions", std::to_string(tally.exact_decisions));
    RecordProperty("double_rule_differences", std::to_string(tally.double_rule_wrong));
    EXPECT_GT(tally.tiny_heads, 0);  // the capture does reach the tiny-α regime
}

// Random tokens drive stories260K's heads to α tails far below 1e-28, where the certified
// sweep cannot decide every comparison: the exact step must run here, and agree.
TEST(ExactCounts, RandomTokensForceExactDecisionsThatEqualRationalArithmetic) {
    const fs::path folder = shared_folder() / "models" / "stories260K";
    REQUIRE_SHARED_FILE(folder / "stories260K.bin");
    const empirical::Llama2cBinTokenizer tokenizer((folder / "tok512.bin").string(), 512);
    std::mt19937 rng(kRandomTokensSeed);
    std::uniform_int_distribution<int> token(3, 511);  // past the special ids 0..2
    std::vector<int> ids = {tokenizer.bos_id()};
    for (int t = 1; t < kRandomTokens; ++t)
        ids.push_back(token(rng));
    // Only the heads with the tiniest α: the rational reference is slow at this n.
    const CaptureTally tally = check_every_head(ids, "exact_counts_random", kTinyAlpha);
    RecordProperty("exact_decisions", std::to_string(tally.exact_decisions));
    EXPECT_GT(tally.heads_checked, 0);
    EXPECT_GT(tally.exact_decisions, 0);  // the exact step did decide something
    EXPECT_LT(tally.smallest_alpha, 1e-28);
}

// extract's pr.csv on llama2.c's reference document (run.c's own attention and value dumps are
// the inputs extract sees with the run.c port, bit for bit): its counts and its exact_decisions
// column against the rational reference on those dumps.
TEST(ExactCounts, ExtractPrCsvEqualsRationalArithmeticOnTheDumps) {
    const fs::path ref = shared_folder() / "golden" / "llama2c-stories260K";
    const fs::path model = shared_folder() / "models" / "stories260K" / "stories260K.bin";
    REQUIRE_SHARED_FILE(model);
    REQUIRE_SHARED_FILE(ref / "stories260K_ref_once.attn.f32");
    // run.c's dumps, raw little-endian arrays of float32 (int32 for the token ids).
    auto read_array = [](const fs::path& path, auto element) {
        std::ifstream in(path, std::ios::binary);
        const std::string bytes((std::istreambuf_iterator<char>(in)),
                                std::istreambuf_iterator<char>());
        std::vector<decltype(element)> out(bytes.size() / sizeof(element));
        std::memcpy(out.data(), bytes.data(), out.size() * sizeof(element));
        return out;
    };
    const auto ids = read_array(ref / "stories260K_ref_once.tokens.i32", std::int32_t{});
    const int T = static_cast<int>(ids.size());
    const fs::path scratch = test_support::scratch_folder("exact_counts_extract");
    {
        std::ofstream out(scratch / "ids.txt");
        for (int t = 0; t < T; ++t)
            out << (t ? " " : "") << ids[t];
        out << "\n";
    }
    empirical::ExtractRequest request;
    request.model = model.string();
    request.tokens_file = (scratch / "ids.txt").string();
    request.out = (scratch / "run").string();
    request.context = T;
    request.max_lag = 8;
    request.quiet = true;
    empirical::run_extract(request);
    const auto pr = reports::read_csv_table((scratch / "run" / "pr.csv").string());
    ASSERT_EQ(pr.header.back(), "exact_decisions");  // appended as the last column
    const auto attn = read_array(ref / "stories260K_ref_once.attn.f32", float{});
    const auto vcache = read_array(ref / "stories260K_ref_once.vcache.f32", float{});
    long exact_decisions = 0, double_rule_wrong = 0;
    int points = 0;
    for (int l = 0; l < 5; ++l) {
        for (int h = 0; h < 8; ++h) {
            theory::TokenGeometry tokens;
            tokens.alpha.resize(T);
            tokens.values.resize(T, 8);
            for (int j = 0; j < T; ++j) {
                tokens.alpha[j] =
                    attn[((static_cast<std::size_t>(l) * 8 + h) * T + (T - 1)) * T + j];
                for (int k = 0; k < 8; ++k)
                    tokens.values(j, k) =
                        vcache[(static_cast<std::size_t>(l) * T + j) * 32 + (h / 2) * 8 + k];
            }
            const std::vector<ExactRow> want = test_support::rational_metrics(tokens);
            for (int k = 0; k < T; ++k) {
                const std::size_t r = (static_cast<std::size_t>(l) * 8 + h) * T + k;
                const int N = k + 1;
                const std::string what = "layer " + std::to_string(l) + " head " +
                                         std::to_string(h) + " N=" + std::to_string(N);
                // One document: the means are P and R themselves up to the 2^-40 fixed point.
                EXPECT_EQ(std::lround(pr.number(r, "R_mean") * N), want[k].K_in) << what;
                EXPECT_EQ(std::lround(N / pr.number(r, "P_mean") - N), want[k].K_out) << what;
                EXPECT_EQ(pr.number(r, "exact_decisions"), want[k].exact_decisions) << what;
                exact_decisions += want[k].exact_decisions;
                ++points;
            }
            double_rule_wrong += test_support::double_rule_differences(tokens, want);
        }
    }
    std::cout << "[ info     ] extract pr.csv on the llama2.c reference document (" << T
              << " tokens): " << points << " (head, N) points equal rational arithmetic; "
              << exact_decisions << " exact decisions; " << double_rule_wrong
              << " points where plain double comparisons differ\n";
}

}  // namespace
