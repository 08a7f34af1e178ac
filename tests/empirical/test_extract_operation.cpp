// Tests of how extract runs rather than what it measures: the batched device Gram path against
// theory/'s per-N reference, the exact state (save/load/merge), and on stories260K that a run
// stopped and resumed, a run cut into shards and merged, a run with --metrics device and runs on
// 1 and 2 threads all write the same bytes as one uninterrupted run.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <torch/torch.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "empirical/extract/statistics.hpp"
#include "empirical/model/device_metrics.hpp"
#include "tests/support/shared_data.hpp"
#include "tests/support/test_files.hpp"

namespace fs = std::filesystem;
using namespace attngeo;
using namespace attngeo::empirical;
using attngeo::test_support::shared_folder;

namespace {

StatisticsSettings all_sizes(int n) {
    StatisticsSettings s;
    s.context = n;
    s.max_lag = 5;
    for (int N = 1; N <= n; ++N)
        s.sizes.push_back(N);
    return s;
}

// Random heads whose weights and values sit on a coarse grid, so exact ties in α and in the
// distances occur: the cases where a fast path most easily departs from the reference.
struct RandomLayer {
    int heads, kv_heads, n, d;
    std::vector<float> alpha;   // [H, n]
    std::vector<float> values;  // [H_kv, n, d]
    RandomLayer(int H, int Hkv, int n_, int d_, unsigned seed)
        : heads(H), kv_heads(Hkv), n(n_), d(d_), alpha(H * n_), values(Hkv * n_ * d_) {
        std::mt19937_64 rng(seed);
        std::uniform_int_distribution<int> level(1, 6), coordinate(-3, 3);
        for (int h = 0; h < H; ++h) {
            float total = 0;
            for (int i = 0; i < n; ++i)
                total += (alpha[h * n + i] = static_cast<float>(level(rng)));
            for (int i = 0; i < n; ++i)
                alpha[h * n + i] /= total;
        }
        for (auto& v : values)
            v = 0.5f * static_cast<float>(coordinate(rng));
    }
    const float* head_alpha(int h) const { return alpha.data() + h * n; }
    const float* head_values(int h) const {
        return values.data() + static_cast<std::size_t>(h / (heads / kv_heads)) * n * d;
    }
};

using attngeo::test_support::slurp;

fs::path scratch() {
    return attngeo::test_support::scratch_folder("extract_op");
}

int run_cli(const std::string& args, std::string* err_text = nullptr) {
    const auto result = attngeo::test_support::run_program(ATTNGEO_EXE, args, scratch());
    if (err_text) *err_text = result.err;
    return result.exit_code;
}

}  // namespace

TEST(DeviceGram, BatchedGramGivesTheReferenceCountsForEveryHeadAndN) {
    const RandomLayer layer(6, 2, 48, 4, 11);
    const auto settings = all_sizes(layer.n);
    std::vector<std::vector<int>> orders(layer.heads);
    for (int h = 0; h < layer.heads; ++h)
        orders[h] = head_order(layer.head_alpha(h), layer.head_values(h), layer.n, layer.d,
                               settings.ranking);
    const auto alpha = torch::from_blob(const_cast<float*>(layer.alpha.data()),
                                        {layer.heads, layer.n}, torch::kFloat32);
    const auto values = torch::from_blob(const_cast<float*>(layer.values.data()),
                                         {layer.kv_heads, layer.n, layer.d}, torch::kFloat32);
    const auto grams = ranked_gram_batched(alpha, values, orders);
    ASSERT_EQ(grams.size(), static_cast<std::size_t>(layer.heads));
    double worst_gram = 0;
    int mismatches = 0, compared = 0;
    for (int h = 0; h < layer.heads; ++h) {
        // Independent Gram: a plain double loop over the ranked contributions.
        for (int k = 0; k < layer.n; ++k)
            for (int l = 0; l < layer.n; ++l) {
                double dot = 0;
                for (int t = 0; t < layer.d; ++t)
                    dot += double(layer.head_alpha(h)[orders[h][k]]) *
                           layer.head_values(h)[orders[h][k] * layer.d + t] *
                           double(layer.head_alpha(h)[orders[h][l]]) *
                           layer.head_values(h)[orders[h][l] * layer.d + t];
                worst_gram = std::max(worst_gram, std::abs(dot - grams[h](k, l)));
            }
        HeadStatistics device(settings), reference(settings);
        const RankedGram ranked{&orders[h], &grams[h]};
        device.add_document(layer.head_alpha(h), layer.head_values(h), layer.d, &ranked);
        theory::TokenGeometry tokens;
        tokens.alpha.resize(layer.n);
        tokens.values.resize(layer.n, layer.d);
        for (int i = 0; i < layer.n; ++i) {
            tokens.alpha[i] = layer.head_alpha(h)[i];
            for (int t = 0; t < layer.d; ++t)
                tokens.values(i, t) = layer.head_values(h)[i * layer.d + t];
        }
        const auto rows = theory::selection_metrics_reference(tokens, settings.sizes,
                                                              settings.ranking, settings.distance);
        for (std::size_t s = 0; s < rows.size(); ++s) {
            ++compared;
            MomentSums precision, recall;
            precision.add(rows[s].precision_at_rmax);
            recall.add(rows[s].recall_at_rmin);
            const bool same = device.precision(s) == precision && device.recall(s) == recall &&
                              device.exact_decisions(s) == rows[s].exact_decisions;
            mismatches += !same;
        }
    }
    std::cout << "batched Gram vs plain loop: largest difference " << worst_gram << "; P/R "
              << compared - mismatches << " of " << compared
              << " (head, N) equal to the reference\n";
    EXPECT_LE(worst_gram, 1e-12);
    EXPECT_EQ(mismatches, 0);
}

TEST(DeviceGram, RejectsInconsistentShapes) {
    const auto alpha = torch::zeros({4, 8});
    const auto values = torch::zeros({3, 8, 2});  // 4 query heads cannot share 3 kv heads
    EXPECT_THROW(ranked_gram_batched(alpha, values, std::vector<std::vector<int>>(4)),
                 std::invalid_argument);
}

TEST(HeadStatistics, SavedStateRoundTripsAndMergeEqualsOneRun) {
    const RandomLayer layer(1, 1, 24, 3, 5), other(1, 1, 24, 3, 6), third(1, 1, 24, 3, 7);
    const auto settings = all_sizes(24);
    HeadStatistics first(settings), second(settings), whole(settings);
    for (const RandomLayer* doc : {&layer, &other})
        first.add_document(doc->head_alpha(0), doc->head_values(0), 3);
    second.add_document(third.head_alpha(0), third.head_values(0), 3);
    // Added in another order on purpose: the sums are exact, so order cannot matter.
    for (const RandomLayer* doc : {&third, &other, &layer})
        whole.add_document(doc->head_alpha(0), doc->head_values(0), 3);
    first.merge(second);
    EXPECT_TRUE(first == whole);
    EXPECT_EQ(first.lambda(), whole.lambda());
    EXPECT_EQ(first.cos_at_lag(2), whole.cos_at_lag(2));

    std::vector<std::int64_t> words;
    whole.save(words);
    EXPECT_EQ(words.size(), whole.saved_words());
    HeadStatistics loaded(settings);
    const std::int64_t* cursor = words.data();
    loaded.load(cursor, words.data() + words.size());
    EXPECT_EQ(cursor, words.data() + words.size());
    EXPECT_TRUE(loaded == whole);
    HeadStatistics truncated(settings);
    cursor = words.data();
    EXPECT_THROW(truncated.load(cursor, words.data() + words.size() - 1), std::invalid_argument);
    StatisticsSettings different = settings;
    different.max_lag = 2;
    HeadStatistics incompatible(different);
    EXPECT_THROW(first.merge(incompatible), std::invalid_argument);
}

TEST(ExtractOperation, ResumedShardedAndDeviceRunsEqualTheUninterruptedRun) {
    const fs::path model = shared_folder() / "models" / "stories260K" / "stories260K.bin";
    REQUIRE_SHARED_FILE(model);
    const fs::path corpus = fs::path(ATTNGEO_SOURCE_DIR) / "examples" / "stories260K_corpus.txt";
    const fs::path dir = scratch();
    const std::string base = "extract --model " + model.string() + " --corpus " + corpus.string() +
                             " --docs 12 --quiet --max-lag 16 --engine torch";
    const std::string common = base + " --context 64";
    ASSERT_EQ(run_cli(common + " --out " + (dir / "full").string()), 0);
    ASSERT_EQ(run_cli(common + " --metrics device --out " + (dir / "device").string()), 0);
    for (int i = 0; i < 3; ++i)
        ASSERT_EQ(run_cli(common + " --shard " + std::to_string(i) + "/3 --out " +
                          (dir / ("shard" + std::to_string(i))).string()),
                  0);
    // Shards given out of order: merge sorts them by their recorded index.
    ASSERT_EQ(run_cli("merge " + (dir / "shard2").string() + " " + (dir / "shard0").string() + " " +
                      (dir / "shard1").string() + " --out " + (dir / "merged").string()),
              0);
    std::string err;
    EXPECT_EQ(run_cli(common + " --stop-after 5 --out " + (dir / "resumed").string(), &err), 130);
    EXPECT_NE(err.find("--resume"), std::string::npos) << err;
    EXPECT_FALSE(fs::exists(dir / "resumed" / "heads.csv"));
    EXPECT_EQ(run_cli(common + " --out " + (dir / "resumed").string(), &err), 2);
    EXPECT_NE(err.find("interrupted extract"), std::string::npos) << err;
    EXPECT_EQ(run_cli(common + " --stop-after 4 --resume --out " + (dir / "resumed").string()),
              130);
    ASSERT_EQ(run_cli(common + " --resume --out " + (dir / "resumed").string()), 0);
    EXPECT_FALSE(fs::exists(dir / "resumed" / ".partial"));
    // Resuming a finished run does nothing (and says so).
    const auto finished = fs::last_write_time(dir / "resumed" / "heads.csv");
    EXPECT_EQ(run_cli(common + " --resume --out " + (dir / "resumed").string(), &err), 0);
    EXPECT_NE(err.find("nothing to resume"), std::string::npos) << err;
    EXPECT_EQ(fs::last_write_time(dir / "resumed" / "heads.csv"), finished);
    // A checkpoint of another run is refused rather than mixed in.
    ASSERT_EQ(run_cli(common + " --stop-after 2 --out " + (dir / "other").string()), 130);
    EXPECT_EQ(run_cli(base + " --context 32 --resume --out " + (dir / "other").string(), &err), 2);
    EXPECT_NE(err.find("different run"), std::string::npos) << err;

    for (const char* variant : {"device", "merged", "resumed"}) {
        for (const char* file :
             {"heads.csv", "pr.csv", "by_position.csv", "cos_by_lag.csv", "diag.csv",
              "per_doc.safetensors", "sums.safetensors", "snapshot.csv", "snapshot.json",
              "contributions.csv", "sinks.csv", "sink_layers.csv", "secondary_sinks.csv"}) {
            const std::string expected = slurp(dir / "full" / file);
            ASSERT_FALSE(expected.empty()) << file;
            EXPECT_TRUE(slurp(dir / variant / file) == expected)
                << variant << "/" << file << " differs from the uninterrupted run";
        }
    }
    // Merging shards of different runs, or an incomplete set, is refused.
    EXPECT_EQ(run_cli("merge " + (dir / "shard0").string() + " " + (dir / "shard1").string() +
                          " --out " + (dir / "bad").string(),
                      &err),
              2);
    EXPECT_NE(err.find("3"), std::string::npos) << err;
    EXPECT_FALSE(fs::exists(dir / "bad"));
}

namespace {

// manifest.json without what differs between invocations of the same run: the timings (which
// carry the thread count) and the command line.
nlohmann::json manifest_without_invocation(const fs::path& dir) {
    nlohmann::json manifest = nlohmann::json::parse(slurp(dir / "manifest.json"));
    manifest.erase("timings");
    manifest.erase("command");
    return manifest;
}

}  // namespace

TEST(ExtractOperation, OneAndTwoThreadsWriteTheSameFolder) {
    const fs::path model = shared_folder() / "models" / "stories260K" / "stories260K.bin";
    REQUIRE_SHARED_FILE(model);
    const fs::path corpus = fs::path(ATTNGEO_SOURCE_DIR) / "examples" / "stories260K_corpus.txt";
    const fs::path dir = scratch() / "threads";
    const std::string common = "extract --model " + model.string() + " --corpus " +
                               corpus.string() + " --docs 6 --quiet --context 96 --N all";
    for (const char* engine : {"runc", "torch"}) {
        const fs::path one = dir / (std::string(engine) + "1"),
                       two = dir / (std::string(engine) + "2");
        ASSERT_EQ(run_cli(common + " --engine " + engine + " --threads 1 --out " + one.string()),
                  0);
        ASSERT_EQ(run_cli(common + " --engine " + engine + " --threads 2 --out " + two.string()),
                  0);
        std::size_t compared = 0;
        for (const auto& entry : fs::directory_iterator(one)) {
            const std::string file = entry.path().filename().string();
            if (file == "manifest.json") continue;
            EXPECT_TRUE(slurp(entry.path()) == slurp(two / file)) << engine << ": " << file;
            ++compared;
        }
        EXPECT_GE(compared, 10u);  // the sink files (issue 43) included
        EXPECT_EQ(manifest_without_invocation(one), manifest_without_invocation(two));
        const auto threads_of = [](const fs::path& folder) {
            return nlohmann::json::parse(
                slurp(folder / "manifest.json"))["timings"]["statistics_threads"];
        };
        EXPECT_EQ(threads_of(one), 1);
        EXPECT_EQ(threads_of(two), 2);
    }
}

TEST(ExtractOperation, BadThreadCountsAreOneLineNamingTheFlag) {
    const fs::path model = shared_folder() / "models" / "stories260K" / "stories260K.bin";
    REQUIRE_SHARED_FILE(model);
    const fs::path corpus = fs::path(ATTNGEO_SOURCE_DIR) / "examples" / "stories260K_corpus.txt";
    const fs::path out = scratch() / "bad_threads";
    for (const char* bad : {"0", "x", "-1", "2x", "1.5", "99999999"}) {
        std::string err;
        EXPECT_EQ(run_cli("extract --model " + model.string() + " --corpus " + corpus.string() +
                              " --docs 1 --quiet --context 32 --threads " + bad + " --out " +
                              out.string(),
                          &err),
                  2)
            << bad;
        EXPECT_NE(err.find("--threads"), std::string::npos) << bad << ": " << err;
        EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << bad << ": " << err;
        EXPECT_FALSE(fs::exists(out)) << bad;
    }
}
