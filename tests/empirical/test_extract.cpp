// Tests for the per-head statistics and `attngeo extract`: known answers on synthetic heads,
// P/R against theory/'s reference, and the whole pipeline on stories260K against statistics
// computed independently from llama2.c's own attention and value dumps.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include "common/errors.hpp"
#include "empirical/extract.hpp"
#include "empirical/statistics.hpp"
#include "reports/csv_table.hpp"
#include "tests/support/shared_data.hpp"

namespace fs = std::filesystem;
using namespace attngeo;
using namespace attngeo::empirical;

namespace {

using attngeo::test_support::shared_folder;

StatisticsSettings settings_for(int n, std::vector<int> sizes = {}) {
    StatisticsSettings s;
    s.context = n;
    s.max_lag = 4;
    if (sizes.empty())
        for (int N = 1; N <= n; ++N)
            sizes.push_back(N);
    s.sizes = sizes;
    return s;
}

}  // namespace

TEST(HeadStatistics, EqualNormsOrthogonalValuesGiveZeroCvAndCosines) {
    const int n = 6, d = 8;
    std::vector<float> alpha = {0.5f, 0.1f, 0.1f, 0.1f, 0.1f, 0.1f};
    std::vector<float> values(n * d, 0.0f);
    for (int i = 0; i < n; ++i)
        values[i * d + i] = i == 0 ? 0.5f : 2.0f;  // v_i = c e_i: orthogonal
    HeadStatistics s(settings_for(n));
    s.add_document(alpha.data(), values.data(), d);
    s.add_document(alpha.data(), values.data(), d);
    EXPECT_EQ(s.documents(), 2);
    EXPECT_DOUBLE_EQ(s.cv_positional(), 0.0);
    EXPECT_DOUBLE_EQ(s.cv_pooled(), 0.0);
    EXPECT_DOUBLE_EQ(s.norm_median(), 2.0);
    EXPECT_DOUBLE_EQ(s.lambda(), 0.25);
    EXPECT_DOUBLE_EQ(s.rho0(), 0.0);
    for (int lag = 1; lag <= 4; ++lag)
        EXPECT_DOUBLE_EQ(s.cos_at_lag(lag), 0.0) << lag;
    EXPECT_EQ(s.pairs_at_lag(1), 2 * 4);  // i = 1..4 pairs with i + 1 ≤ 5, two documents
    EXPECT_DOUBLE_EQ(s.m_sink(), 0.25);
    const double tenth = 0.1f;  // the float inputs, exactly
    EXPECT_DOUBLE_EQ(s.m_last(), 2 * tenth);
    EXPECT_NEAR(s.m_rest(), std::sqrt(4 * (2 * tenth) * (2 * tenth)),
                1e-12);  // four orthogonal contributions
    EXPECT_DOUBLE_EQ(s.alpha_by_position()[0], 0.5);
    EXPECT_DOUBLE_EQ(s.contrib_by_position()[3], 2 * tenth);
}

TEST(HeadStatistics, RegimesFollowTheMagnitudes) {
    const int n = 5, d = 5;
    std::vector<float> values(n * d, 0.0f);
    for (int i = 0; i < n; ++i)
        values[i * d + i] = 1.0f;
    auto regime_of = [&](std::vector<float> alpha) {
        HeadStatistics s(settings_for(n, {1, 2}));
        s.add_document(alpha.data(), values.data(), d);
        return s.regime();
    };
    EXPECT_EQ(regime_of({0.0f, 0.0f, 0.0f, 0.0f, 1.0f}),
              "Retriever");  // all mass on the last token
    EXPECT_EQ(regime_of({0.7f, 0.05f, 0.05f, 0.05f, 0.15f}), "Mixer");  // sink > last > rest
    EXPECT_EQ(regime_of({0.8f, 0.08f, 0.08f, 0.03f, 0.01f}), "Reset");  // last the smallest
}

TEST(HeadStatistics, PrecisionRecallEqualTheTheoryReference) {
    std::mt19937_64 rng(3);
    std::normal_distribution<float> normal;
    const int n = 40, d = 6;
    const std::vector<int> sizes = {1, 2, 3, 5, 8, 13, 21, 34, 40};
    HeadStatistics s(settings_for(n, sizes));
    std::vector<double> p_sum(sizes.size()), r_sum(sizes.size());
    for (int doc = 0; doc < 5; ++doc) {
        std::vector<float> alpha(n), values(n * d);
        float total = 0;
        for (auto& a : alpha)
            total += (a = std::abs(normal(rng)) + 0.01f);
        for (auto& a : alpha)
            a /= total;
        for (auto& v : values)
            v = normal(rng);
        s.add_document(alpha.data(), values.data(), d);
        theory::TokenGeometry t;
        t.alpha.resize(n);
        t.values.resize(n, d);
        for (int i = 0; i < n; ++i) {
            t.alpha[i] = alpha[i];
            for (int k = 0; k < d; ++k)
                t.values(i, k) = values[i * d + k];
        }
        const auto rows = theory::selection_metrics_reference(t, sizes, theory::Ranking::attention,
                                                              theory::Distance::euclidean);
        for (std::size_t i = 0; i < sizes.size(); ++i) {
            p_sum[i] += rows[i].precision_at_rmax;
            r_sum[i] += rows[i].recall_at_rmin;
        }
    }
    for (std::size_t i = 0; i < sizes.size(); ++i) {
        EXPECT_NEAR(simulate::estimate(s.precision(i)).mean, p_sum[i] / 5, 1e-11) << sizes[i];
        EXPECT_NEAR(simulate::estimate(s.recall(i)).mean, r_sum[i] / 5, 1e-11) << sizes[i];
    }
    // At N = n, s(N) is the whole attention output.
    EXPECT_GT(s.s_norm(sizes.size() - 1), 0.0);
}

TEST(Windows, BosRulesSkipsAndStrides) {
    std::int64_t skipped = 0;
    const std::vector<std::vector<std::int64_t>> docs = {{1, 5, 6, 7}, {5, 6, 7, 8, 9, 10}, {5}};
    auto w = make_windows(docs, 4, 1, "auto", 0, 0, skipped);
    ASSERT_EQ(w.size(), 2u);
    EXPECT_EQ(w[0], (std::vector<std::int64_t>{1, 5, 6, 7}));  // starts with BOS: as given
    EXPECT_EQ(w[1], (std::vector<std::int64_t>{1, 5, 6, 7}));
    EXPECT_EQ(skipped, 1);
    w = make_windows(docs, 4, 1, "auto", 3, 0, skipped);
    EXPECT_EQ(w.size(), 3u);  // the second document gives two windows with stride 3
    w = make_windows(docs, 4, 1, "no", 0, 1, skipped);
    EXPECT_EQ(w.size(), 1u);
    EXPECT_THROW(make_windows(docs, 4, 1, "maybe", 0, 0, skipped), InputError);
}

// extract on llama2.c's token ids against statistics computed from run.c's own dumps. With the
// run.c port (engine auto) the inputs are bit-identical, so every statistic must be equal; with
// libtorch they differ by ~1e-6 and P/R may flip at near-ties.
void check_against_llama2c_dumps(const std::string& engine) {
    const fs::path ref = shared_folder() / "golden" / "llama2c-stories260K";
    const fs::path model = shared_folder() / "models" / "stories260K" / "stories260K.bin";
    REQUIRE_SHARED_FILE(model);
    auto read_bytes = [](const fs::path& p) {
        std::ifstream in(p, std::ios::binary);
        return std::vector<char>((std::istreambuf_iterator<char>(in)),
                                 std::istreambuf_iterator<char>());
    };
    const auto token_bytes = read_bytes(ref / "stories260K_ref_once.tokens.i32");
    const int T = static_cast<int>(token_bytes.size() / 4);
    std::vector<std::int32_t> tokens(T);
    std::memcpy(tokens.data(), token_bytes.data(), token_bytes.size());
    const fs::path dir =
        fs::temp_directory_path() / ("attngeo_test_extract_" + std::to_string(::getpid()));
    fs::create_directories(dir);
    {
        std::ofstream ids(dir / "ids.txt");
        for (int t = 0; t < T; ++t)
            ids << (t ? " " : "") << tokens[t];
        ids << "\n";
    }
    ExtractRequest request;
    request.model = model.string();
    request.tokens_file = (dir / "ids.txt").string();
    request.out = (dir / ("run_" + engine)).string();
    request.engine = engine;
    request.context = T;
    request.max_lag = 8;
    request.quiet = true;
    run_extract(request);

    // Independent: llama2.c's last attention row and value cache through HeadStatistics.
    const auto attn_bytes = read_bytes(ref / "stories260K_ref_once.attn.f32");
    const auto v_bytes = read_bytes(ref / "stories260K_ref_once.vcache.f32");
    std::vector<float> attn(attn_bytes.size() / 4), vcache(v_bytes.size() / 4);
    std::memcpy(attn.data(), attn_bytes.data(), attn_bytes.size());
    std::memcpy(vcache.data(), v_bytes.data(), v_bytes.size());
    const fs::path run = request.out;
    const auto heads = reports::read_csv_table((run / "heads.csv").string());
    const auto pr = reports::read_csv_table((run / "pr.csv").string());
    ASSERT_EQ(heads.rows.size(), 5u * 8u);
    double worst_lambda = 0, worst_rho0 = 0, worst_pr = 0;
    int points = 0, exact = 0;
    for (int l = 0; l < 5; ++l) {
        for (int h = 0; h < 8; ++h) {
            std::vector<float> alpha(T), values(T * 8);
            for (int j = 0; j < T; ++j)
                alpha[j] = attn[((static_cast<std::size_t>(l) * 8 + h) * T + (T - 1)) * T + j];
            for (int j = 0; j < T; ++j)
                for (int k = 0; k < 8; ++k)
                    values[j * 8 + k] =
                        vcache[(static_cast<std::size_t>(l) * T + j) * 32 + (h / 2) * 8 + k];
            StatisticsSettings s = settings_for(T);
            s.max_lag = 8;
            HeadStatistics expected(s);
            expected.add_document(alpha.data(), values.data(), 8);
            const std::size_t row = static_cast<std::size_t>(l) * 8 + h;
            worst_lambda =
                std::max(worst_lambda, std::abs(heads.number(row, "lambda") - expected.lambda()));
            worst_rho0 =
                std::max(worst_rho0, std::abs(heads.number(row, "rho0") - expected.rho0()));
            for (int i = 0; i < T; ++i) {
                const std::size_t r = row * T + i;
                const double dp = std::abs(pr.number(r, "P_mean") -
                                           simulate::estimate(expected.precision(i)).mean);
                const double dr =
                    std::abs(pr.number(r, "R_mean") - simulate::estimate(expected.recall(i)).mean);
                worst_pr = std::max({worst_pr, dp, dr});
                points += 2;
                exact += (dp <= 1e-5) + (dr <= 1e-5);
                if (dp > 1e-5 || dr > 1e-5)
                    std::cout << "  P/R differ at layer " << l << " head " << h << " N " << i + 1
                              << "\n";
            }
        }
    }
    std::cout << "engine " << engine << " vs llama2.c dumps: lambda " << worst_lambda << ", rho0 "
              << worst_rho0 << ", P/R equal at " << exact << " of " << points
              << " (layer, head, N, metric) points, largest difference " << worst_pr << "\n";
    if (engine != "torch") {
        EXPECT_EQ(worst_lambda, 0.0);
        EXPECT_EQ(worst_rho0, 0.0);
        EXPECT_EQ(exact, points);
        EXPECT_EQ(worst_pr, 0.0);
    } else {
        EXPECT_LE(worst_lambda, 1e-5);
        EXPECT_LE(worst_rho0, 1e-5);
        // P and R are counts: where two tokens' weights or distances differ by less than the
        // ~1e-6 between libtorch's float32 forward and run.c's, the order can flip. Allow at
        // most 0.5% of points.
        EXPECT_GE(exact, points - points / 200);
    }
    for (const char* file : {"heads.csv", "pr.csv", "by_position.csv", "cos_by_lag.csv", "diag.csv",
                             "per_doc.safetensors", "manifest.json"}) {
        EXPECT_TRUE(fs::exists(run / file)) << file;
    }
}

TEST(Extract, Stories260kEqualsStatisticsFromLlama2cDumps) {
    check_against_llama2c_dumps("auto");
}

TEST(Extract, Stories260kWithLibtorchIsWithinFloat32OfLlama2cDumps) {
    check_against_llama2c_dumps("torch");
}
