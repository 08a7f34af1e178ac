// Tests for the per-head statistics and `attngeo extract`: known answers on synthetic heads,
// P/R against theory/'s reference, the whole pipeline on stories260K against statistics
// computed independently from llama2.c's own attention and value dumps, and extract → compare
// → report on stories260K (one document; GQA counting; regime_margin).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>
#include <set>

#include "common/errors.hpp"
#include "empirical/extract/extract.hpp"
#include "empirical/extract/statistics.hpp"
#include "reports/csv_table.hpp"
#include "tests/support/shared_data.hpp"
#include "tests/support/test_files.hpp"

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
        EXPECT_NEAR(estimate(s.precision(i)).mean, p_sum[i] / 5, 1e-11) << sizes[i];
        EXPECT_NEAR(estimate(s.recall(i)).mean, r_sum[i] / 5, 1e-11) << sizes[i];
    }
    // At N = n, s(N) is the whole attention output.
    EXPECT_GT(s.s_norm(sizes.size() - 1), 0.0);
}

TEST(Windows, BosRulesSkipsAndStrides) {
    std::int64_t skipped = 0;
    const std::vector<std::vector<std::int64_t>> docs = {{1, 5, 6, 7}, {5, 6, 7, 8, 9, 10}, {5}};
    auto w = make_windows(docs, 4, 1, BosPolicy::automatic, 0, 0, skipped);
    ASSERT_EQ(w.size(), 2u);
    EXPECT_EQ(w[0], (std::vector<std::int64_t>{1, 5, 6, 7}));  // starts with BOS: as given
    EXPECT_EQ(w[1], (std::vector<std::int64_t>{1, 5, 6, 7}));
    EXPECT_EQ(skipped, 1);
    w = make_windows(docs, 4, 1, BosPolicy::automatic, 3, 0, skipped);
    EXPECT_EQ(w.size(), 3u);  // the second document gives two windows with stride 3
    w = make_windows(docs, 4, 1, BosPolicy::never, 0, 1, skipped);
    EXPECT_EQ(w.size(), 1u);
    w = make_windows(docs, 4, 9, BosPolicy::always, 0, 0, skipped);  // another BOS id, always
    ASSERT_EQ(w.size(), 2u);
    EXPECT_EQ(w[0], (std::vector<std::int64_t>{9, 1, 5, 6}));
    EXPECT_THROW(parse_bos_policy("maybe"), InputError);
    for (BosPolicy policy : {BosPolicy::automatic, BosPolicy::always, BosPolicy::never})
        EXPECT_EQ(parse_bos_policy(to_string(policy)), policy);
    EXPECT_THROW(make_windows(docs, 1, 1, BosPolicy::automatic, 0, 0, skipped), InputError);
    EXPECT_THROW(make_windows(docs, 4, 1, BosPolicy::automatic, -1, 0, skipped), InputError);
}

// A model without a BOS id (bos_id = -1): a window that would need one is refused, naming
// --bos; with --bos no the documents are used as they are, and token 1 is nothing special.
TEST(Windows, ModelWithoutBosIdNeedsBosNo) {
    std::int64_t skipped = 0;
    const std::vector<std::vector<std::int64_t>> docs = {{1, 5, 6, 7}, {5, 6, 7, 8}};
    for (BosPolicy policy : {BosPolicy::automatic, BosPolicy::always}) {
        try {
            make_windows(docs, 4, -1, policy, 0, 0, skipped);
            ADD_FAILURE() << "no error for --bos " << to_string(policy);
        } catch (const InputError& e) {
            const std::string message = e.what();
            EXPECT_EQ(message.rfind("--bos", 0), 0u) << message;
            EXPECT_NE(message.find("no BOS"), std::string::npos) << message;
        }
    }
    const auto w = make_windows(docs, 4, -1, BosPolicy::never, 0, 0, skipped);
    ASSERT_EQ(w.size(), 2u);
    EXPECT_EQ(w[0], docs[0]);
    EXPECT_EQ(w[1], docs[1]);
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
                const double dp =
                    std::abs(pr.number(r, "P_mean") - estimate(expected.precision(i)).mean);
                const double dr =
                    std::abs(pr.number(r, "R_mean") - estimate(expected.recall(i)).mean);
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

namespace {

// regime_margin computed from the order of the three magnitudes directly: the nearest
// magnitude strictly below m_last and the nearest at or above it (ties rank above, as in
// regime()), and the ratio of m_last to each.
double reference_margin(double sink, double last, double rest) {
    const double inf = std::numeric_limits<double>::infinity();
    double below = -inf, above = inf;
    for (double other : {sink, rest}) {
        if (other < last) below = std::max(below, other);
        if (other >= last) above = std::min(above, other);
    }
    if (above == inf) return last / below;   // Retriever
    if (below == -inf) return above / last;  // Reset
    return std::min(last / below, above / last);
}

}  // namespace

TEST(HeadStatistics, RegimeMarginIsTheRatioThatDecidesTheLabel) {
    const int n = 5, d = 5;
    std::vector<float> values(n * d, 0.0f);
    for (int i = 0; i < n; ++i)
        values[i * d + i] = 1.0f;  // orthogonal unit vectors: the magnitudes are the α's
    double largest = 0;
    auto margin_of = [&](std::vector<float> alpha, const char* regime) {
        HeadStatistics s(settings_for(n, {1, 2}));
        s.add_document(alpha.data(), values.data(), d);
        EXPECT_EQ(s.regime(), regime);
        const double expected = reference_margin(s.m_sink(), s.m_last(), s.m_rest());
        if (std::isfinite(expected))
            largest = std::max(largest, std::abs(s.regime_margin() - expected));
        else
            EXPECT_EQ(s.regime_margin(), expected);
        EXPECT_GE(s.regime_margin(), 1.0);
        return s.regime_margin();
    };
    EXPECT_GT(margin_of({0.1f, 0.1f, 0.1f, 0.1f, 0.6f}, "Retriever"), 3);
    EXPECT_GT(margin_of({0.7f, 0.05f, 0.05f, 0.05f, 0.15f}, "Mixer"), 1.5);
    EXPECT_GT(margin_of({0.8f, 0.08f, 0.08f, 0.03f, 0.01f}, "Reset"), 10);
    EXPECT_GT(margin_of({0.2f, 0.25f, 0.0f, 0.0f, 0.55f}, "Retriever"), 2);
    // m_sink = m_last > m_rest: a tie ranks m_last below m_sink, so Mixer at margin exactly 1.
    EXPECT_EQ(margin_of({0.3f, 0.2f, 0.0f, 0.0f, 0.3f}, "Mixer"), 1.0);
    // Everything on the last token: the other two magnitudes are 0, the margin infinite.
    EXPECT_EQ(margin_of({0.0f, 0.0f, 0.0f, 0.0f, 1.0f}, "Retriever"),
              std::numeric_limits<double>::infinity());
    std::cout << "largest |regime_margin - reference| = " << largest << "\n";
    EXPECT_LE(largest, 1e-15);
}

namespace {

using attngeo::test_support::run_program;
using attngeo::test_support::slurp;

fs::path pipeline_scratch() {
    return attngeo::test_support::scratch_folder("extract_pipeline");
}

// Runs `attngeo args` and expects exit 0.
void run_ok(const std::string& args) {
    const auto r = run_program(ATTNGEO_EXE, args, pipeline_scratch());
    ASSERT_EQ(r.exit_code, 0) << "attngeo " << args << "\n" << r.err;
}

// An extract of stories260K (GQA: 8 query heads, 4 key/value heads) over `docs` documents of
// the example corpus, 64-token windows; reused by the tests below.
fs::path stories_extract(int docs) {
    const fs::path out = pipeline_scratch() / ("stories_docs" + std::to_string(docs));
    if (fs::exists(out / "manifest.json")) return out;
    const fs::path model = shared_folder() / "models" / "stories260K" / "stories260K.bin";
    const fs::path corpus = fs::path(ATTNGEO_SOURCE_DIR) / "examples" / "stories260K_corpus.txt";
    run_ok("extract --model " + model.string() + " --corpus " + corpus.string() +
           " --context 64 --docs " + std::to_string(docs) + " --max-lag 16 --quiet --out " +
           out.string());
    return out;
}

// Whether `text` holds `word` as a word of its own ("nan" as format_double and short_number
// write an undefined number; prose such as "NaN (string)" in a decision is not a value).
bool has_word(const std::string& text, const std::string& word) {
    for (auto at = text.find(word); at != std::string::npos; at = text.find(word, at + 1)) {
        const bool left = at == 0 || !std::isalnum(static_cast<unsigned char>(text[at - 1]));
        const std::size_t end = at + word.size();
        const bool right =
            end == text.size() || !std::isalnum(static_cast<unsigned char>(text[end]));
        if (left && right) return true;
    }
    return false;
}

double median_of(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

// One document leaves every standard error and the bootstrap undefined;
// extract writes them empty, compare carries them as missing, the report says n/a.
TEST(Extract, OneDocumentGoesThroughCompareAndReport) {
    REQUIRE_SHARED_FILE(shared_folder() / "models" / "stories260K" / "stories260K.bin");
    const fs::path emp = stories_extract(1);
    const fs::path cmp = pipeline_scratch() / "compare_docs1";
    const fs::path rep = pipeline_scratch() / "report_docs1";
    fs::remove_all(cmp);
    fs::remove_all(rep);
    run_ok("compare --emp " + emp.string() + " --out " + cmp.string() + " --replicates 50");
    run_ok("report --in " + cmp.string() + " --out " + rep.string());

    const auto pr = reports::read_csv_table((emp / "pr.csv").string());
    ASSERT_FALSE(pr.rows.empty());
    for (std::size_t r = 0; r < pr.rows.size(); ++r) {
        ASSERT_EQ(pr.text(r, "P_se"), "") << "row " << r;
        ASSERT_EQ(pr.text(r, "R_se"), "") << "row " << r;
    }
    // merge writes its tables through the same code: a one-shard merge gives the same bytes.
    const fs::path merged = pipeline_scratch() / "merged_docs1";
    fs::remove_all(merged);
    run_ok("merge " + emp.string() + " --out " + merged.string());
    for (const char* file :
         {"heads.csv", "pr.csv", "by_position.csv", "cos_by_lag.csv", "diag.csv"})
        EXPECT_EQ(slurp(merged / file), slurp(emp / file)) << file;

    // Every table and JSON file of both folders.
    int files = 0;
    for (const fs::path& dir : {emp, cmp})
        for (const auto& entry : fs::directory_iterator(dir)) {
            const auto ext = entry.path().extension();
            if (ext != ".csv" && ext != ".json") continue;
            ++files;
            EXPECT_FALSE(has_word(slurp(entry.path()), "nan")) << entry.path();
        }
    const std::string html = slurp(rep / "index.html");
    std::cout << "checked " << files << " extract and compare files and index.html for nan\n";
    EXPECT_FALSE(has_word(html, "nan"));
    EXPECT_NE(html.find("n/a"), std::string::npos);
    EXPECT_NE(html.find("bootstrap needs &gt;= 2 documents"), std::string::npos);

    const auto corr = reports::read_csv_table((cmp / "corr_rho0.csv").string());
    int defined = 0;
    for (std::size_t r = 0; r < corr.rows.size(); ++r) {
        EXPECT_EQ(corr.text(r, "ci_lo"), "");
        EXPECT_EQ(corr.text(r, "ci_hi"), "");
        EXPECT_EQ(corr.text(r, "replicates"), "0");
        defined += !corr.text(r, "corr").empty();
    }
    EXPECT_GT(defined, 0);  // the point estimate needs heads, not documents
    const auto manifest = nlohmann::json::parse(slurp(cmp / "manifest.json"));
    EXPECT_NE(
        manifest.at("correlation").at("bootstrap").get<std::string>().find("needs >= 2 documents"),
        std::string::npos);

    // regime_margin: heads.csv against the ratio computed from its own magnitudes, and
    // compare's regimes.csv copies it; the report counts the heads below 1.1.
    const auto heads = reports::read_csv_table((emp / "heads.csv").string());
    const auto regimes = reports::read_csv_table((cmp / "regimes.csv").string());
    ASSERT_EQ(heads.rows.size(), regimes.rows.size());
    ASSERT_EQ(heads.header[heads.column("regime") + 1], "regime_margin");
    double largest = 0;
    int near = 0;
    for (std::size_t r = 0; r < heads.rows.size(); ++r) {
        const double margin = heads.number(r, "regime_margin");
        const double expected = reference_margin(
            heads.number(r, "m_sink"), heads.number(r, "m_last"), heads.number(r, "m_rest"));
        largest = std::max(largest, std::abs(margin - expected) / expected);
        EXPECT_GE(margin, 1.0);
        EXPECT_EQ(regimes.text(r, "regime_margin"), heads.text(r, "regime_margin"));
        near += margin < 1.1;
    }
    std::cout << "largest relative |regime_margin - reference| = " << largest << " over "
              << heads.rows.size() << " heads, " << near << " near the boundary\n";
    EXPECT_LE(largest, 1e-15);
    EXPECT_NE(
        html.find(std::to_string(near) + " of " + std::to_string(heads.rows.size()) + " overall"),
        std::string::npos);
}

// In a GQA model the value-state statistics enter once per key/value head
// by default; --count-per query counts every query head as before.
TEST(Extract, GqaValueStatisticsAreCountedOncePerKeyValueHead) {
    REQUIRE_SHARED_FILE(shared_folder() / "models" / "stories260K" / "stories260K.bin");
    const fs::path emp = stories_extract(4);
    const auto heads = reports::read_csv_table((emp / "heads.csv").string());
    const auto pr = reports::read_csv_table((emp / "pr.csv").string());
    const int layers = 5, H = 8, group = 2, S = 64;
    ASSERT_EQ(heads.rows.size(), std::size_t(layers * H));
    // The premise: a group's query heads share λ, ρ0 and the CVs exactly.
    for (std::size_t r = 0; r < heads.rows.size(); ++r) {
        const std::size_t first = r - r % group;
        EXPECT_EQ(heads.number(r, "kv_head"), static_cast<double>((r % H) / group));
        for (const char* c : {"lambda", "rho0", "cv_positional", "cv_pooled", "norm_median"})
            EXPECT_EQ(heads.text(r, c), heads.text(first, c)) << c << " row " << r;
    }
    for (const std::string per : {"kv", "query"}) {
        const fs::path cmp = pipeline_scratch() / ("compare_" + per);
        fs::remove_all(cmp);
        run_ok("compare --emp " + emp.string() + " --out " + cmp.string() +
               " --replicates 20 --count-per " + per);
        const bool kv = per == "kv";
        const auto fits = reports::read_csv_table((cmp / "fits.csv").string());
        std::vector<double> beta, lambda, rho0;
        for (std::size_t r = 0; r < fits.rows.size(); ++r) {
            const bool counted = !kv || r % group == 0;
            EXPECT_EQ(fits.number(r, "counted"), counted ? 1.0 : 0.0);
            if (!counted) continue;
            beta.push_back(fits.number(r, "beta"));
            lambda.push_back(heads.number(r, "lambda"));
            rho0.push_back(heads.number(r, "rho0"));
        }
        const auto params = nlohmann::json::parse(slurp(cmp / "fitted_params.json"));
        const auto& medians = params.at("median_over_heads");
        EXPECT_EQ(medians.at("beta").get<double>(), median_of(beta)) << per;
        EXPECT_EQ(medians.at("lambda").get<double>(), median_of(lambda)) << per;
        EXPECT_EQ(medians.at("rho0").get<double>(), median_of(rho0)) << per;
        EXPECT_EQ(params.at("heads_counted").get<std::size_t>(), beta.size());
        const auto manifest = nlohmann::json::parse(slurp(cmp / "manifest.json"));
        EXPECT_EQ(manifest.at("parameters").at("count_per"), per);

        // corr(R(r_min, N), ρ0) over units: per kv head R is averaged over the group.
        const int units = layers * H / (kv ? group : 1);
        std::vector<std::vector<double>> x(S, std::vector<double>(units, 0.0));
        std::vector<double> y_units(units, 0.0);
        for (std::size_t r = 0; r < pr.rows.size(); ++r) {
            const int head = static_cast<int>(pr.number(r, "layer")) * H +
                             static_cast<int>(pr.number(r, "head"));
            const int N = static_cast<int>(pr.number(r, "N"));
            x[N - 1][head / (kv ? group : 1)] += pr.number(r, "R_mean") / (kv ? group : 1);
        }
        for (int h = 0; h < layers * H; ++h)
            y_units[h / (kv ? group : 1)] += heads.number(h, "rho0") / (kv ? group : 1);
        const auto corr = reports::read_csv_table((cmp / "corr_rho0.csv").string());
        ASSERT_EQ(corr.rows.size(), std::size_t(S));
        double largest = 0;
        int compared = 0;
        for (int s = 0; s < S; ++s) {
            EXPECT_EQ(corr.number(s, "heads"), units);
            if (corr.text(s, "corr").empty()) continue;  // R constant across heads
            // Pearson from scratch (the per-document arrays are float32: ~1e-7 apart).
            double mx = 0, my = 0, sxy = 0, sxx = 0, syy = 0;
            for (int u = 0; u < units; ++u)
                mx += x[s][u] / units, my += y_units[u] / units;
            for (int u = 0; u < units; ++u) {
                sxy += (x[s][u] - mx) * (y_units[u] - my);
                sxx += (x[s][u] - mx) * (x[s][u] - mx);
                syy += (y_units[u] - my) * (y_units[u] - my);
            }
            if (!(sxx > 1e-12)) continue;  // R equal across heads up to float32 rounding
            largest =
                std::max(largest, std::abs(corr.number(s, "corr") - sxy / std::sqrt(sxx * syy)));
            ++compared;
        }
        std::cout << "--count-per " << per << ": " << beta.size() << " heads counted, largest "
                  << "|corr - plain Pearson over " << units << " units| = " << largest << " at "
                  << compared << " N\n";
        EXPECT_GT(compared, S / 2);
        EXPECT_LE(largest, 1e-5);
        const fs::path rep = pipeline_scratch() / ("report_" + per);
        fs::remove_all(rep);
        run_ok("report --in " + cmp.string() + " --out " + rep.string());
        const std::string html = slurp(rep / "index.html");
        EXPECT_NE(html.find(kv ? "counted once per key/value head" : "counted once per query head"),
                  std::string::npos)
            << per;
    }
}
