// extract --queries (docs/design.md §14): the statistics of every chosen query position over
// keys 0..t, by length bin. Checked against a plain computation on the rows `attngeo capture
// --queries all` writes, against the final-row outputs at t = context − 1, and for resume,
// shards and threads, which must give the same bits as one uninterrupted run.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "common/csv.hpp"
#include "common/safetensors.hpp"
#include "tests/support/shared_data.hpp"
#include "tests/support/test_files.hpp"
#include "theory/head_regime.hpp"
#include "theory/metrics.hpp"

namespace fs = std::filesystem;
using attngeo::CsvReader;
using attngeo::SafetensorsFile;
using attngeo::test_support::shared_folder;
using attngeo::test_support::slurp;

namespace {

fs::path scratch() {
    return attngeo::test_support::scratch_folder("extract_queries");
}

attngeo::test_support::CliResult attngeo_cli(const std::string& args) {
    return attngeo::test_support::run_program(ATTNGEO_EXE, args, scratch());
}

// The same, with libtorch's CPU arithmetic pinned: one BLAS thread and oneMKL's compatible code
// branch, whose rounding depends neither on the CPU nor on how buffers happen to be aligned.
// Without it two processes running the same forward can round differently: on one CI machine
// capture's and extract's λ came out 5e-4 apart, and oneMKL's AVX-512 and compatible branches
// give value states up to 6e-4 apart (relative) on the random gpt2 golden, which amplifies
// rounding. A bit-level comparison across processes then says nothing about the statistics.
attngeo::test_support::CliResult attngeo_cli_reproducible(const std::string& args) {
    return attngeo::test_support::run_program(
        std::string("env OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 "
                    "MKL_DYNAMIC=FALSE MKL_CBWR=COMPATIBLE ") +
            ATTNGEO_EXE,
        args, scratch());
}

fs::path stories() {
    return shared_folder() / "models" / "stories260K" / "stories260K.bin";
}

std::string stories_windows(int docs) {
    return " --model " + stories().string() + " --corpus " + std::string(ATTNGEO_SOURCE_DIR) +
           "/examples/stories260K_corpus.txt --context 64 --N pow2 --snapshot off --quiet --docs " +
           std::to_string(docs);
}

// A CSV as rows of named text fields, keyed by the given columns.
std::map<std::vector<std::string>, std::map<std::string, std::string>> table(
    const fs::path& path, const std::vector<std::string>& key_columns) {
    CsvReader csv(path.string(), "a test table");
    std::map<std::vector<std::string>, std::map<std::string, std::string>> rows;
    while (csv.next()) {
        std::vector<std::string> key;
        for (const auto& k : key_columns)
            key.push_back(csv.row().text(csv.column(k)));
        auto& row = rows[key];
        for (std::size_t c = 0; c < csv.header().size(); ++c)
            row[csv.header()[c]] = csv.row().text(c);
    }
    return rows;
}

std::vector<float> floats(const attngeo::HostTensor& t) {
    std::vector<float> out(t.numel());
    std::memcpy(out.data(), t.data, t.bytes);
    return out;
}

// One query row's statistics computed plainly from float rows, in double.
struct PlainQuery {
    double lambda = 0, rho0 = 0, sink_mass = 0, m_sink = 0, m_last = 0, m_rest = 0;
    std::vector<double> precision, recall;  // [sizes]
};

PlainQuery plain_query(const float* alpha, const float* values, int t, int d,
                       const std::vector<int>& sizes) {
    const int L = t + 1;
    attngeo::theory::TokenGeometry tokens;
    tokens.alpha.resize(L);
    tokens.values.resize(L, d);
    std::vector<double> norm(L);
    for (int i = 0; i < L; ++i) {
        tokens.alpha[i] = alpha[i];
        double sq = 0;
        for (int k = 0; k < d; ++k) {
            tokens.values(i, k) = values[i * d + k];
            sq += tokens.values(i, k) * tokens.values(i, k);
        }
        norm[i] = std::sqrt(sq);
    }
    PlainQuery q;
    for (const auto& m : attngeo::theory::selection_metrics_reference(
             tokens, sizes, attngeo::theory::Ranking::attention,
             attngeo::theory::Distance::euclidean)) {
        q.precision.push_back(m.precision_at_rmax);
        q.recall.push_back(m.recall_at_rmin);
    }
    for (int j = 1; j < L; ++j) {
        const double dot = tokens.values.row(0).dot(tokens.values.row(j));
        q.rho0 += norm[0] > 0 && norm[j] > 0 ? dot / (norm[0] * norm[j]) : 0.0;
    }
    q.rho0 /= L - 1;
    std::vector<double> rest_norms(norm.begin() + 1, norm.end());
    std::sort(rest_norms.begin(), rest_norms.end());
    const std::size_t m = rest_norms.size();
    const double median =
        m % 2 ? rest_norms[m / 2] : 0.5 * (rest_norms[m / 2 - 1] + rest_norms[m / 2]);
    q.lambda = median > 0 ? norm[0] / median : 0.0;
    q.sink_mass = alpha[0];
    q.m_sink = alpha[0] * norm[0];
    q.m_last = alpha[t] * norm[t];
    Eigen::VectorXd rest = Eigen::VectorXd::Zero(d);
    for (int i = 1; i < t; ++i)
        rest += tokens.alpha[i] * tokens.values.row(i).transpose();
    q.m_rest = rest.norm();
    return q;
}

}  // namespace

// Every position of the gpt2 golden windows, one length bin per L, against a plain computation
// on capture's rows of the same windows.
TEST(ExtractQueries, EveryPositionMatchesAPlainComputationOnCapturedRows) {
    const fs::path model = shared_folder() / "golden" / "gpt2";
    REQUIRE_SHARED_FILE(model);
    const SafetensorsFile golden((model / "golden.safetensors").string());
    const attngeo::HostTensor ids = golden.get("input_ids");
    const int B = static_cast<int>(ids.shape[0]), T = static_cast<int>(ids.shape[1]);
    const fs::path tokens = scratch() / "gpt2_ids.txt";
    {
        std::vector<std::int64_t> id(ids.numel());
        std::memcpy(id.data(), ids.data, ids.bytes);
        std::ofstream out(tokens);
        for (int b = 0; b < B; ++b) {
            for (int t = 0; t < T; ++t)
                out << (t ? " " : "") << id[b * T + t];
            out << "\n";
        }
    }
    // One capture per window: a batch of one, as extract runs it, with the arithmetic pinned
    // (attngeo_cli_reproducible), so the rows are the same bits.
    std::vector<fs::path> captured;
    {
        std::ifstream lines(tokens);
        std::string line;
        for (int b = 0; std::getline(lines, line); ++b) {
            const fs::path window = scratch() / ("gpt2_window" + std::to_string(b) + ".txt");
            std::ofstream(window) << line << "\n";
            captured.push_back(scratch() / ("gpt2_rows" + std::to_string(b) + ".safetensors"));
            const auto c = attngeo_cli_reproducible(
                "capture --model " + model.string() + " --tokens " + window.string() +
                " --queries all --out " + captured.back().string());
            ASSERT_EQ(c.exit_code, 0) << c.err;
        }
    }
    const fs::path out = scratch() / "gpt2_every";
    fs::remove_all(out);
    const auto e = attngeo_cli_reproducible(
        "extract --model " + model.string() + " --tokens " + tokens.string() +
        " --bos no --context " + std::to_string(T) + " --N all --queries all --length-bins " +
        std::to_string(T) + " --snapshot off --quiet --out " + out.string());
    ASSERT_EQ(e.exit_code, 0) << e.err;
    const auto by_length = table(out / "by_length.csv", {"layer", "head", "length_lo", "N"});
    const auto heads = table(out / "heads_by_length.csv", {"layer", "head", "length_lo"});
    std::vector<SafetensorsFile> rows;
    for (const fs::path& file : captured)
        rows.emplace_back(file.string());
    double worst_pr = 0, worst_scalar = 0;
    double worst_rows = 0;  // the attention weight on the sink: a property of the rows alone
    int regimes_checked = 0;
    for (int layer = 0; rows[0].contains("attentions." + std::to_string(layer)); ++layer) {
        const std::string index = std::to_string(layer);
        std::vector<std::vector<float>> a, v;
        for (const SafetensorsFile& file : rows) {
            a.push_back(floats(file.get("attentions." + index)));
            v.push_back(floats(file.get("values." + index)));
        }
        const auto values = rows[0].get("values." + index);
        const int H = static_cast<int>(rows[0].get("attentions." + index).shape[1]),
                  Hkv = static_cast<int>(values.shape[1]), d = static_cast<int>(values.shape[3]);
        for (int h = 0; h < H; ++h)
            for (int t = 1; t < T; ++t) {
                std::vector<int> sizes(t + 1);
                for (int N = 1; N <= t + 1; ++N)
                    sizes[N - 1] = N;
                PlainQuery mean;
                mean.precision.assign(sizes.size(), 0);
                mean.recall.assign(sizes.size(), 0);
                for (int b = 0; b < B; ++b) {
                    const float* alpha = a[b].data() + (static_cast<std::size_t>(h) * T + t) * T;
                    const float* vals =
                        v[b].data() + static_cast<std::size_t>(h / (H / Hkv)) * T * d;
                    const PlainQuery q = plain_query(alpha, vals, t, d, sizes);
                    mean.lambda += q.lambda / B;
                    mean.rho0 += q.rho0 / B;
                    mean.sink_mass += q.sink_mass / B;
                    mean.m_sink += q.m_sink / B;
                    mean.m_last += q.m_last / B;
                    mean.m_rest += q.m_rest / B;
                    for (std::size_t k = 0; k < sizes.size(); ++k) {
                        mean.precision[k] += q.precision[k] / B;
                        mean.recall[k] += q.recall[k] / B;
                    }
                }
                const std::string L = std::to_string(t + 1);
                const auto& row = heads.at({std::to_string(layer), std::to_string(h), L});
                ASSERT_EQ(row.at("queries"), std::to_string(B));
                for (const auto& [column, expected] :
                     {std::pair{"lambda", mean.lambda}, std::pair{"rho0", mean.rho0},
                      std::pair{"sink_mass", mean.sink_mass}, std::pair{"m_sink", mean.m_sink},
                      std::pair{"m_last", mean.m_last}, std::pair{"m_rest", mean.m_rest}})
                    worst_scalar =
                        std::max(worst_scalar, std::abs(std::stod(row.at(column)) - expected));
                worst_rows =
                    std::max(worst_rows, std::abs(std::stod(row.at("sink_mass")) - mean.sink_mass));
                EXPECT_EQ(row.at("regime"),
                          attngeo::theory::to_string(attngeo::theory::classify_head(
                              std::stod(row.at("m_sink")), std::stod(row.at("m_last")),
                              std::stod(row.at("m_rest")))));
                ++regimes_checked;
                for (std::size_t k = 0; k < sizes.size(); ++k) {
                    const auto& pr = by_length.at(
                        {std::to_string(layer), std::to_string(h), L, std::to_string(sizes[k])});
                    worst_pr = std::max({worst_pr,
                                         std::abs(std::stod(pr.at("P_mean")) - mean.precision[k]),
                                         std::abs(std::stod(pr.at("R_mean")) - mean.recall[k])});
                }
            }
    }
    std::cout << regimes_checked << " (layer, head, L) rows; largest |difference| from the plain "
              << "computation: P/R " << worst_pr << ", lambda/rho0/masses " << worst_scalar << "\n";
    EXPECT_LT(worst_rows, 1e-12) << "extract's forward and capture's differ (sink mass "
                                 << worst_rows << "): the rows are not the same bits, so the "
                                 << "differences below say nothing about extract's statistics";
    EXPECT_GT(regimes_checked, 0);
    EXPECT_LT(worst_pr, 1e-11);  // MomentSums keep 2^-40
    EXPECT_LT(worst_scalar, 1e-12);
}

// --queries positions:63 alone is the final row: by_length.csv repeats pr.csv and
// heads_by_length.csv repeats heads.csv, field for field; the final-row files are unchanged.
TEST(ExtractQueries, TheLastPositionAloneRepeatsTheFinalRowOutputs) {
    REQUIRE_SHARED_FILE(stories());
    const fs::path plain = scratch() / "final_row", queried = scratch() / "last_position";
    fs::remove_all(plain);
    fs::remove_all(queried);
    ASSERT_EQ(
        attngeo_cli("extract" + stories_windows(5) + " --engine torch --out " + plain.string())
            .exit_code,
        0);
    const auto r = attngeo_cli("extract" + stories_windows(5) +
                               " --queries positions:63 --length-bins 1 --out " + queried.string());
    ASSERT_EQ(r.exit_code, 0) << r.err;
    for (const char* file :
         {"heads.csv", "pr.csv", "by_position.csv", "diag.csv", "cos_by_lag.csv"})
        EXPECT_EQ(slurp(plain / file), slurp(queried / file)) << file;
    const auto pr = table(plain / "pr.csv", {"layer", "head", "N"});
    const auto heads = table(plain / "heads.csv", {"layer", "head"});
    int compared = 0;
    for (const auto& [key, row] : table(queried / "by_length.csv", {"layer", "head", "N"})) {
        const auto& expected = pr.at(key);
        for (const char* column : {"P_mean", "P_se", "R_mean", "R_se"})
            EXPECT_EQ(row.at(column), expected.at(column)) << column;
        ++compared;
    }
    for (const auto& [key, row] : table(queried / "heads_by_length.csv", {"layer", "head"})) {
        const auto& expected = heads.at(key);
        for (const char* column : {"rho0", "sink_mass", "m_sink", "m_last", "m_rest", "regime"})
            EXPECT_EQ(row.at(column), expected.at(column)) << column;
        ++compared;
    }
    std::cout << compared << " rows of by_length.csv and heads_by_length.csv equal pr.csv and "
              << "heads.csv field for field\n";
    EXPECT_GT(compared, 0);
}

// Resumed, sharded-and-merged and single-threaded runs give the folder of one uninterrupted run.
TEST(ExtractQueries, ResumedShardedAndThreadedRunsEqualTheUninterruptedRun) {
    REQUIRE_SHARED_FILE(stories());
    const std::string common = stories_windows(6) + " --queries every:8 --length-bins 4";
    const fs::path whole = scratch() / "whole", resumed = scratch() / "resumed",
                   one_thread = scratch() / "one_thread", merged = scratch() / "merged";
    for (const fs::path& dir : {whole, resumed, one_thread, merged})
        fs::remove_all(dir);
    fs::remove_all(scratch() / "shard0");
    fs::remove_all(scratch() / "shard1");
    ASSERT_EQ(attngeo_cli("extract" + common + " --out " + whole.string()).exit_code, 0);
    EXPECT_EQ(
        attngeo_cli("extract" + common + " --stop-after 2 --out " + resumed.string()).exit_code,
        130);
    ASSERT_EQ(attngeo_cli("extract" + common + " --resume --out " + resumed.string()).exit_code, 0);
    ASSERT_EQ(
        attngeo_cli("extract" + common + " --threads 1 --out " + one_thread.string()).exit_code, 0);
    for (int shard = 0; shard < 2; ++shard)
        ASSERT_EQ(
            attngeo_cli("extract" + common + " --shard " + std::to_string(shard) + "/2 --out " +
                        (scratch() / ("shard" + std::to_string(shard))).string())
                .exit_code,
            0);
    const auto m =
        attngeo_cli("merge --out " + merged.string() + " " + (scratch() / "shard0").string() + " " +
                    (scratch() / "shard1").string());
    ASSERT_EQ(m.exit_code, 0) << m.err;
    for (const fs::path& other : {resumed, one_thread, merged})
        for (const char* file : {"by_length.csv", "heads_by_length.csv", "pr.csv", "heads.csv"})
            EXPECT_EQ(slurp(whole / file), slurp(other / file)) << other << " " << file;
}

TEST(ExtractQueries, BadQueriesExitTwoAndWriteNothing) {
    REQUIRE_SHARED_FILE(stories());
    for (const auto& [flags, named] : std::vector<std::pair<std::string, std::string>>{
             {"--queries positions:0", "--queries"},
             {"--queries every:x", "--queries"},
             {"--queries all --length-bins 0", "--length-bins"},
             {"--queries all --engine runc", "--engine"}}) {
        const fs::path out = scratch() / "never";
        fs::remove_all(out);
        const auto r =
            attngeo_cli("extract" + stories_windows(2) + " " + flags + " --out " + out.string());
        EXPECT_EQ(r.exit_code, 2) << flags << ": " << r.err;
        EXPECT_NE(r.err.find(named), std::string::npos) << flags << ": " << r.err;
        EXPECT_FALSE(fs::exists(out)) << flags;
    }
}
