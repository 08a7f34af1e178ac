// Exact counts on a real capture (SPEC §2): stories260K on a held-out prompt, every head of
// every layer, and every path extract can take (theory's reference and Gram path, the batched
// device Gram, HeadStatistics with and without it) against the rational-arithmetic reference.
// Real heads have α tails down to ~1e-28 whose distances all sit at ≈ ‖s‖²: the case where the
// counts hinge on differences below double resolution.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <string>
#include <vector>

#include "common/safetensors.hpp"
#include "empirical/capture.hpp"
#include "empirical/device_metrics.hpp"
#include "empirical/extract.hpp"
#include "empirical/statistics.hpp"
#include "empirical/tokenizer.hpp"
#include "reports/csv_table.hpp"
#include "tests/support/rational_metrics.hpp"
#include "tests/support/shared_data.hpp"
#include "tests/support/test_files.hpp"

namespace fs = std::filesystem;
using namespace attngeo;
using attngeo::test_support::ExactRow;
using attngeo::test_support::shared_folder;

namespace {

std::vector<float> floats(const HostTensor& tensor) {
    std::vector<float> out(tensor.numel());
    std::memcpy(out.data(), tensor.data, tensor.bytes);
    return out;
}

// Not in examples/stories260K_corpus.txt: the model has not seen this text in our tests.
constexpr const char* kHeldOutPrompt =
    "The old cat sat by the window and watched the rain. A small bird came to the tree, and "
    "the cat wanted to be its friend. The bird sang a song, and the cat was happy all day.";

TEST(ExactCounts, Stories260kEveryHeadAndPathEqualsRationalArithmetic) {
    const fs::path folder = shared_folder() / "models" / "stories260K";
    REQUIRE_SHARED_FILE(folder / "stories260K.bin");
    const fs::path scratch = test_support::scratch_folder("exact_counts");
    const empirical::Llama2cBinTokenizer tokenizer((folder / "tok512.bin").string(), 512);
    std::vector<int> ids = tokenizer.encode(kHeldOutPrompt);
    ids.insert(ids.begin(), tokenizer.bos_id());
    {
        std::ofstream tokens(scratch / "ids.txt");
        for (std::size_t t = 0; t < ids.size(); ++t)
            tokens << (t ? " " : "") << ids[t];
        tokens << "\n";
    }
    empirical::CaptureRequest request;
    request.model = (folder / "stories260K.bin").string();
    request.tokens_file = (scratch / "ids.txt").string();
    request.out = (scratch / "capture.safetensors").string();
    empirical::run_capture(request);
    const SafetensorsFile capture(request.out);

    const int n = static_cast<int>(ids.size());
    empirical::StatisticsSettings settings;
    settings.context = n;
    settings.max_lag = 4;
    for (int N = 1; N <= n; ++N)
        settings.sizes.push_back(N);
    long points = 0, exact_decisions = 0, double_rule_wrong = 0;
    double smallest_alpha = 1;
    int tiny_heads = 0;
    for (int layer = 0; capture.contains("attentions." + std::to_string(layer)); ++layer) {
        const HostTensor attention = capture.get("attentions." + std::to_string(layer));
        const HostTensor value = capture.get("values." + std::to_string(layer));
        ASSERT_EQ(attention.shape.size(), 4u);  // [1, H, 1 (last query), n]
        ASSERT_EQ(attention.shape[3], n);
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
            const float* head_alpha = alpha.data() + h * n;
            const float* head_values = values.data() + (h / (H / H_kv)) * n * d;
            theory::TokenGeometry tokens;
            tokens.alpha.resize(n);
            tokens.values.resize(n, d);
            for (int i = 0; i < n; ++i) {
                tokens.alpha[i] = head_alpha[i];
                for (int t = 0; t < d; ++t)
                    tokens.values(i, t) = head_values[i * d + t];
            }
            const double head_smallest = tokens.alpha.minCoeff();
            smallest_alpha = std::min(smallest_alpha, head_smallest);
            tiny_heads += head_smallest < 1e-20;
            const std::vector<ExactRow> want = test_support::rational_metrics(tokens);

            std::vector<std::vector<theory::SelectionMetrics>> paths;
            paths.push_back(theory::selection_metrics_reference(
                tokens, settings.sizes, theory::Ranking::attention, theory::Distance::euclidean));
            paths.push_back(theory::selection_metrics_gram(
                tokens, settings.sizes, theory::Ranking::attention, theory::Distance::euclidean));
            theory::RowMatrix ranked(n, d);
            for (int k = 0; k < n; ++k)
                ranked.row(k) = tokens.alpha[orders[h][k]] * tokens.values.row(orders[h][k]);
            paths.emplace_back();
            theory::selection_metrics_from_gram(ranked, grams[h], settings.sizes,
                                                theory::Distance::euclidean, paths.back());
            const char* names[] = {"reference", "gram", "device gram"};
            for (std::size_t p = 0; p < paths.size(); ++p) {
                for (int k = 0; k < n; ++k) {
                    const std::string what = std::string(names[p]) + " layer " +
                                             std::to_string(layer) + " head " + std::to_string(h) +
                                             " N=" + std::to_string(k + 1);
                    attngeo::test_support::expect_same_selection(paths[p][k], want[k], what);
                }
            }
            // What extract accumulates, on the CPU path and on the device path.
            empirical::HeadStatistics cpu(settings), device(settings);
            const empirical::DocumentRecord cpu_record =
                cpu.add_document(head_alpha, head_values, d);
            const empirical::RankedGram device_gram{&orders[h], &grams[h]};
            const empirical::DocumentRecord device_record =
                device.add_document(head_alpha, head_values, d, &device_gram);
            EXPECT_TRUE(cpu == device) << "layer " << layer << " head " << h;
            for (int k = 0; k < n; ++k) {
                const int N = k + 1;
                const float precision =
                    static_cast<float>(static_cast<double>(N) / (N + want[k].K_out));
                const float recall = static_cast<float>(static_cast<double>(want[k].K_in) / N);
                EXPECT_EQ(cpu_record.precision[k], precision) << layer << "/" << h << " N=" << N;
                EXPECT_EQ(cpu_record.recall[k], recall) << layer << "/" << h << " N=" << N;
                EXPECT_EQ(device_record.recall[k], recall) << layer << "/" << h << " N=" << N;
                EXPECT_EQ(cpu.exact_decisions(k), want[k].exact_decisions);
                EXPECT_EQ(device.exact_decisions(k), want[k].exact_decisions);
                exact_decisions += want[k].exact_decisions;
            }
            points += n;
            double_rule_wrong += test_support::double_rule_differences(tokens, want);
            if (HasFailure()) return;
        }
    }
    std::cout << "[ info     ] stories260K, " << n << " tokens: " << points
              << " (head, N) points, every count equal to rational arithmetic on every path "
              << "(largest difference 0); " << exact_decisions << " exact decisions; "
              << double_rule_wrong << " points where plain double comparisons differ; smallest "
              << "alpha " << smallest_alpha << ", " << tiny_heads << " heads with alpha < 1e-20\n";
    RecordProperty("exact_decisions", std::to_string(exact_decisions));
    RecordProperty("double_rule_differences", std::to_string(double_rule_wrong));
    EXPECT_GT(tiny_heads, 0);  // the capture does reach the tiny-α regime this test is for
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
