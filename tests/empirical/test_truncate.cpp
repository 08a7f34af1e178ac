// `attngeo truncate` and the torch truncation: every policy's batched mask against the plain
// per-row reference, N ≥ context bit for bit the untruncated forward, ΔNLL and KL of stories260K
// against Hugging Face transformers' eager attention cut to its top-N weights
// (../shared/golden/truncation/), the same bits for any --threads, scope head's geometry link
// end to end, and bad flags as exit 2 with nothing written.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <random>

#include "common/csv.hpp"
#include "common/run_schema.hpp"
#include "common/safetensors.hpp"
#include "empirical/model/query_row_recorder.hpp"
#include "empirical/model/transformer.hpp"
#include "empirical/truncate/truncating_edit.hpp"
#include "tests/support/shared_data.hpp"
#include "tests/support/test_files.hpp"

namespace fs = std::filesystem;
using namespace attngeo;
using namespace attngeo::empirical;

namespace {

fs::path scratch() {
    return test_support::scratch_folder("truncate");
}

test_support::CliResult run(const std::string& args) {
    return test_support::run_program(ATTNGEO_EXE, args, scratch());
}

fs::path golden_model() {
    return test_support::shared_folder() / "golden" / "stories260k-hf";
}

fs::path golden_windows() {
    return test_support::shared_folder() / "golden" / "truncation" / "stories260k_windows96.txt";
}

// Softmax rows with deliberate ties, causal: row r is query first_row + r.   [1, H, rows, T]
torch::Tensor causal_rows(int H, int rows, int T, int first_row, std::uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_int_distribution<int> level(1, 4);  // few levels: many ties
    auto probs = torch::zeros({1, H, rows, T});
    auto a = probs.accessor<float, 4>();
    for (int h = 0; h < H; ++h)
        for (int r = 0; r < rows; ++r) {
            const int t = first_row + r;
            float total = 0;
            for (int i = 0; i <= t; ++i)
                total += a[0][h][r][i] = static_cast<float>(level(rng));
            for (int i = 0; i <= t; ++i)
                a[0][h][r][i] /= total;
        }
    return probs;
}

}  // namespace

TEST(TruncatingEdit, EveryPolicyMatchesThePlainPerRowReference) {
    const int H = 3, T = 12, d = 4, first_row = 2, rows = T - first_row;
    const auto probs = causal_rows(H, rows, T, first_row, 5);
    const auto values = torch::randn({1, H, T, d}, torch::TensorOptions().dtype(torch::kFloat32));
    const auto norms = values.norm(2, -1).contiguous();
    int compared = 0;
    for (TruncationPolicy policy : truncation_policies())
        for (int N : {1, 2, 3, 5, 12}) {
            TruncationCut cut;
            cut.policy = policy;
            cut.N = N;
            cut.random = {11, 4, 0, 0};
            TruncatingEdit edit(cut);
            const auto used =
                edit.edit(/*layer=*/1, first_row, probs.size(3), probs.log(), probs, values)
                    .contiguous();
            auto u = used.accessor<float, 4>();
            auto p = probs.accessor<float, 4>();
            for (int h = 0; h < H; ++h)
                for (int r = 0; r < rows; ++r) {
                    const int t = first_row + r;
                    RandomRowKey key = cut.random;
                    key.layer = 1;
                    key.head = h;
                    const auto kept = keep_set_reference(
                        policy, &p[0][h][r][0], norms.data_ptr<float>() + h * T, t, N, key);
                    std::vector<float> expected(T, 0.0f);
                    for (int i : kept)
                        expected[i] = p[0][h][r][i];
                    for (int i = 0; i < T; ++i)
                        ASSERT_EQ(u[0][h][r][i], expected[i])
                            << to_string(policy) << " N=" << N << " head " << h << " t=" << t
                            << " key " << i;
                    ++compared;
                }
        }
    std::cout << compared << " rows equal to the reference bit for bit\n";
}

TEST(TruncatingEdit, OnlyTheCutHeadChangesAndRenormalisedRowsSumToOne) {
    const int H = 4, T = 10;
    const auto probs = causal_rows(H, T, T, 0, 9);
    const auto values = torch::randn({1, H, T, 3});
    TruncationCut cut;
    cut.N = 3;
    cut.renorm = true;
    cut.scope = TruncationScope::head;
    cut.layer = 0;
    cut.head = 2;
    TruncatingEdit edit(cut);
    const auto used = edit.edit(0, 0, T, probs.log(), probs, values);
    for (int h = 0; h < H; ++h)
        if (h != 2) {
            EXPECT_TRUE(torch::equal(used[0][h], probs[0][h])) << "head " << h;
        }
    const auto sums = used[0][2].sum(-1);
    EXPECT_LT((sums - 1).abs().max().item<float>(), 1e-6);
    EXPECT_FALSE(torch::equal(used[0][2], probs[0][2]));
    // Another layer: nothing cut, the same tensor back.
    EXPECT_TRUE(torch::equal(edit.edit(1, 0, T, probs.log(), probs, values), probs));
    EXPECT_GT(edit.dropped_mass(), 0);
    EXPECT_GT(edit.output_error(), 0);
}

TEST(TruncatingEdit, RenormalisingWeightsThatUnderflowedTakesTheKeptScoresSoftmax) {
    // Query t = 2 with scores {0, −200, −190}: α = {1, 0, 0} in float32. A random draw of one
    // key other than 0 keeps only zeros; renormalised, that key gets weight 1, not 0/0.
    TruncationCut cut;
    cut.policy = TruncationPolicy::random;
    cut.N = 1;
    cut.renorm = true;
    while (random_keep_set({cut.random.seed, cut.random.window, 0, 0}, 2, 1).front() == 0)
        ++cut.random.window;
    const int drawn = random_keep_set({cut.random.seed, cut.random.window, 0, 0}, 2, 1).front();
    const auto scores = torch::tensor({0.0f, -200.0f, -190.0f}).view({1, 1, 1, 3});
    const auto probs = torch::softmax(scores, -1);
    ASSERT_EQ(probs[0][0][0][drawn].item<float>(), 0.0f);
    TruncatingEdit edit(cut);
    const auto used = edit.edit(0, 2, 3, scores, probs, torch::ones({1, 1, 3, 2}));
    for (int i = 0; i < 3; ++i)
        EXPECT_EQ(used[0][0][0][i].item<float>(), i == drawn ? 1.0f : 0.0f) << i;
}

TEST(Truncate, NAtTheContextIsTheUntruncatedForwardBitForBit) {
    REQUIRE_SHARED_FILE(golden_model() / "model.safetensors");
    const Transformer model = Transformer::load(golden_model().string());
    const auto ids = torch::randint(3, 500, {1, 40}, torch::kInt64);
    CaptureOptions options;
    options.capture = false;
    const auto full = model.forward(ids, options).logits;
    for (TruncationPolicy policy : truncation_policies())
        for (bool renorm : {false, true}) {
            TruncationCut cut;
            cut.policy = policy;
            cut.N = 40;
            cut.renorm = renorm;
            TruncatingEdit edit(cut);
            options.edit = &edit;
            EXPECT_TRUE(torch::equal(model.forward(ids, options).logits, full))
                << to_string(policy) << " renorm " << renorm;
            EXPECT_EQ(edit.dropped_mass(), 0.0);
            EXPECT_EQ(edit.output_error(), 0.0);
        }
}

// The forward's blocks of query rows see only keys up to their last row: the α kept for every
// query, and the rows an edit records, still span all T keys with the future at exactly 0 (α)
// and −inf (scores), and blocks of 7 rows give the weights of one block of all 40 within float32
// rounding (the softmax sums run over different lengths, and each layer carries the last's
// rounding forward: 3–5e-6 on stories260K).
TEST(AttentionBlocks, CapturedAndRecordedRowsSpanEveryKeyWithTheFutureMasked) {
    REQUIRE_SHARED_FILE(golden_model() / "model.safetensors");
    const Transformer model = Transformer::load(golden_model().string());
    const int T = 40, H = model.config().num_heads, L = model.config().num_layers;
    torch::manual_seed(7);
    const auto ids = torch::randint(3, 500, {1, T}, torch::kInt64);
    const std::vector<int> positions = {0, 6, 7, 20, 39};
    QueryRowRecorder recorder(L, H, positions);
    CaptureOptions options;
    options.queries = QueryRows::all;
    options.query_chunk = 7;
    options.edit = &recorder;
    const CaptureResult blocks = model.forward(ids, options);
    options.query_chunk = T;
    options.edit = nullptr;
    const CaptureResult whole = model.forward(ids, options);
    float largest = 0;
    for (int l = 0; l < L; ++l) {
        const auto alpha = blocks.layers[l].attention[0].contiguous();  // [H, T, T]
        largest =
            std::max(largest, (alpha - whole.layers[l].attention[0]).abs().max().item<float>());
        const auto a = alpha.accessor<float, 3>();
        for (int h = 0; h < H; ++h)
            for (std::size_t slot = 0; slot < positions.size(); ++slot) {
                const int t = positions[slot];
                const float* recorded = recorder.alpha(l, h, slot);
                const float* scores = recorder.scores(l, h, slot);
                for (int k = 0; k < T; ++k) {
                    ASSERT_EQ(recorded[k], a[h][t][k]) << l << " " << h << " " << t << " " << k;
                    if (k > t) {
                        ASSERT_EQ(a[h][t][k], 0.0f);
                        ASSERT_EQ(scores[k], -std::numeric_limits<float>::infinity());
                    } else {
                        ASSERT_TRUE(std::isfinite(scores[k]));
                    }
                }
            }
    }
    std::cout << "largest |alpha(7-row blocks) - alpha(one block)| = " << largest << "\n";
    EXPECT_LT(largest, 1e-5f);
}

// The reference's ten configurations from one run: ΔNLL and KL per configuration, and each
// window's ΔNLL, within what two float32 forwards of the same model differ by.
TEST(Truncate, ReproducesTransformersTopNCutOnStories260k) {
    REQUIRE_SHARED_FILE(golden_model() / "model.safetensors");
    REQUIRE_SHARED_FILE(golden_windows());
    const fs::path out = scratch() / "golden";
    fs::remove_all(out);
    const auto r = run("truncate --model " + golden_model().string() + " --tokens " +
                       golden_windows().string() +
                       " --context 96 --N 1,2,4,8,16,32 --policy attn,window --renorm both "
                       "--quiet --out " +
                       out.string());
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const CsvTable table = read_csv_table((out / schema::file::truncation).string());
    const SafetensorsFile per_doc((out / schema::file::per_document).string());
    const HostTensor delta = per_doc.get("delta_nll");
    ASSERT_EQ(delta.shape[1], 6);
    std::ifstream golden_file(test_support::shared_folder() / "golden" / "truncation" /
                              "stories260k_windows96.json");
    const auto golden = nlohmann::json::parse(golden_file);
    double worst_mean = 0, worst_doc = 0, worst_kl = 0;
    for (const auto& g : golden) {
        const std::string renorm = g.at("renorm").get<bool>() ? "yes" : "no";
        std::size_t row = table.rows.size();
        for (std::size_t i = 0; i < table.rows.size(); ++i)
            if (table.text(i, "policy") == g.at("policy").get<std::string>() &&
                table.text(i, "renorm") == renorm && table.integer(i, "N") == g.at("N").get<int>())
                row = i;
        ASSERT_LT(row, table.rows.size()) << g.dump();
        worst_mean = std::max(
            worst_mean, std::abs(table.number(row, "delta_nll") - g.at("delta_nll").get<double>()));
        worst_kl = std::max(worst_kl, std::abs(table.number(row, "kl") - g.at("kl").get<double>()));
        const auto* values = static_cast<const double*>(delta.data) + row * 6;
        for (int d = 0; d < 6; ++d)
            worst_doc = std::max(worst_doc, std::abs(values[d] - g.at("per_doc")[d].get<double>()));
    }
    std::cout << "largest difference from transformers: mean ΔNLL " << worst_mean << ", per-window "
              << worst_doc << ", KL " << worst_kl << " nats\n";
    EXPECT_LT(worst_mean, 2e-5);
    EXPECT_LT(worst_doc, 5e-5);
    EXPECT_LT(worst_kl, 2e-5);
}

TEST(Truncate, ThreadsDoNotChangeTheBits) {
    REQUIRE_SHARED_FILE(golden_model() / "model.safetensors");
    REQUIRE_SHARED_FILE(golden_windows());
    std::string bytes[2];
    for (int threads : {1, 2}) {
        const fs::path out = scratch() / ("threads" + std::to_string(threads));
        fs::remove_all(out);
        const auto r = run("truncate --model " + golden_model().string() + " --tokens " +
                           golden_windows().string() +
                           " --context 96 --docs 3 --N 1,4 --policy attn,contrib,random --renorm "
                           "both --quiet --threads " +
                           std::to_string(threads) + " --out " + out.string());
        ASSERT_EQ(r.exit_code, 0) << r.err;
        bytes[threads - 1] = test_support::slurp(out / schema::file::per_document);
    }
    EXPECT_EQ(bytes[0], bytes[1]);
}

TEST(Truncate, ScopeHeadLinksEachHeadsLossToItsGeometry) {
    REQUIRE_SHARED_FILE(golden_model() / "model.safetensors");
    REQUIRE_SHARED_FILE(golden_windows());
    const fs::path out = scratch() / "heads";
    fs::remove_all(out);
    const auto r = run("truncate --model " + golden_model().string() + " --tokens " +
                       golden_windows().string() +
                       " --context 96 --N 1,4,16 --scope head --heads 0:0,1:3,2:5,4:7 "
                       "--replicates 50 --quiet --out " +
                       out.string());
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const CsvTable heads = read_csv_table((out / schema::file::head_link).string());
    EXPECT_EQ(heads.rows.size(), 4u * 3u);
    for (std::size_t i = 0; i < heads.rows.size(); ++i) {
        const double P = heads.number(i, "precision"), R = heads.number(i, "recall");
        EXPECT_TRUE(P >= 0 && P <= 1 && R >= 0 && R <= 1) << i;
        EXPECT_FALSE(heads.text(i, "regime").empty());
    }
    const CsvTable link = read_csv_table((out / schema::file::geometry_link).string());
    EXPECT_EQ(link.rows.size(), 3u * 8u);  // three N, eight quantities
    EXPECT_TRUE(fs::exists(out / schema::file::geometry_extract / schema::file::heads));
    std::ifstream summary_file(out / schema::file::link_summary);
    const auto summary = nlohmann::json::parse(summary_file);
    ASSERT_EQ(summary.size(), 1u);
    // 4 heads: fewer than the 10 a head-level test needs, so no test and no best predictor.
    EXPECT_EQ(summary[0].at("heads").get<int>(), 4);
    EXPECT_EQ(summary[0].at("tests").get<int>(), 0);
    EXPECT_TRUE(summary[0].at("best_predictor").is_null());
    EXPECT_GE(summary[0].at("N_largest_F").get<int>(), 2) << "N = 1 is an identity";
}

TEST(Truncate, BadFlagsExitTwoNamingTheFlagAndWriteNothing) {
    REQUIRE_SHARED_FILE(golden_model() / "model.safetensors");
    REQUIRE_SHARED_FILE(golden_windows());
    const fs::path out = scratch() / "never";
    fs::remove_all(out);
    const std::string base = "truncate --model " + golden_model().string() + " --tokens " +
                             golden_windows().string() + " --context 96 --out " + out.string();
    const std::pair<std::string, std::string> cases[] = {
        {" --policy attn,bogus", "--policy"},
        {" --renorm maybe", "--renorm"},
        {" --scope heads", "--scope"},
        {" --scope head --heads 9:0", "--heads"},
        {" --heads 0:0", "--heads"},
        {" --eval-positions last:0", "--eval-positions"},
        {" --tau 0", "--tau"},
        {" --N 200", "--N"},
        {" --replicates -1", "--replicates"},
    };
    for (const auto& [flags, name] : cases) {
        const auto r = run(base + flags);
        EXPECT_EQ(r.exit_code, 2) << flags << ": " << r.err;
        EXPECT_NE(r.err.find(name), std::string::npos) << flags << ": " << r.err;
        EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
        EXPECT_FALSE(fs::exists(out)) << flags;
    }
}

namespace {

// Every file of `dir` except manifests, by path relative to it, with its bytes.
std::map<std::string, std::string> folder_bytes(const fs::path& dir) {
    std::map<std::string, std::string> files;
    for (const auto& entry : fs::recursive_directory_iterator(dir))
        if (entry.is_regular_file() && entry.path().filename() != schema::file::manifest)
            files[fs::relative(entry.path(), dir).string()] = test_support::slurp(entry.path());
    return files;
}

std::string golden_run_flags(const fs::path& out) {
    return "truncate --model " + golden_model().string() + " --tokens " +
           golden_windows().string() +
           " --context 96 --N 2,8 --policy attn,random --scope head --heads 0:1,3:4 "
           "--replicates 20 --quiet --out " +
           out.string();
}

}  // namespace

TEST(Truncate, ShardsMergeAndAResumedRunEqualTheWholeRunByteForByte) {
    REQUIRE_SHARED_FILE(golden_model() / "model.safetensors");
    REQUIRE_SHARED_FILE(golden_windows());
    const fs::path whole = scratch() / "whole", merged = scratch() / "merged",
                   resumed = scratch() / "resumed";
    for (const auto& dir : {whole, merged, resumed})
        fs::remove_all(dir);
    ASSERT_EQ(run(golden_run_flags(whole)).exit_code, 0);
    std::string shards;
    for (int i = 0; i < 3; ++i) {
        const fs::path shard = scratch() / ("shard" + std::to_string(i));
        fs::remove_all(shard);
        const auto r = run(golden_run_flags(shard) + " --shard " + std::to_string(i) + "/3");
        ASSERT_EQ(r.exit_code, 0) << r.err;
        shards = shard.string() + " " + shards;  // out of order on purpose
    }
    const auto m = run("merge " + shards + " --out " + merged.string());
    ASSERT_EQ(m.exit_code, 0) << m.err;
    const auto stopped = run(golden_run_flags(resumed) + " --stop-after 2");
    EXPECT_EQ(stopped.exit_code, 130) << stopped.err;
    EXPECT_TRUE(fs::exists(resumed / ".partial"));
    const auto finished = run(golden_run_flags(resumed) + " --resume");
    ASSERT_EQ(finished.exit_code, 0) << finished.err;
    EXPECT_FALSE(fs::exists(resumed / ".partial"));
    const auto expected = folder_bytes(whole);
    EXPECT_GT(expected.size(), 8u);
    for (const fs::path& other : {merged, resumed}) {
        const auto got = folder_bytes(other);
        EXPECT_EQ(got.size(), expected.size()) << other;
        for (const auto& [name, bytes] : expected) {
            EXPECT_TRUE(got.count(name) && got.at(name) == bytes) << other << ": " << name;
        }
    }
}

TEST(Truncate, Bfloat16RunsAndStaysNearFloat32) {
    REQUIRE_SHARED_FILE(golden_model() / "model.safetensors");
    REQUIRE_SHARED_FILE(golden_windows());
    const fs::path out = scratch() / "bf16";
    fs::remove_all(out);
    const auto r = run(
        "truncate --model " + golden_model().string() + " --tokens " + golden_windows().string() +
        " --context 96 --docs 2 --N 1,96 --dtype bfloat16 --quiet --out " + out.string());
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const CsvTable table = read_csv_table((out / schema::file::truncation).string());
    ASSERT_EQ(table.rows.size(), 2u);
    EXPECT_GT(table.number(0, "delta_nll"), 0.05);  // N = 1 costs (0.21 nats in float32)
    EXPECT_EQ(table.number(1, "delta_nll"), 0.0);   // N = context: untouched, bit for bit
}
