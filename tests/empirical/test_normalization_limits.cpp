// `attngeo normalization` end to end: on the golden models its distances and sensitivities equal
// a plain long-double computation on the attention rows and values Hugging Face transformers
// wrote (golden.safetensors), its separability at the last position equals extract's R(r_min, N),
// the thread count changes nothing, and bad flags exit 2 without a folder.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <numeric>
#include <string>
#include <tuple>
#include <vector>

#include "common/csv.hpp"
#include "common/safetensors.hpp"
#include "empirical/normalization_limits/head_measures.hpp"
#include "tests/support/shared_data.hpp"
#include "tests/support/test_files.hpp"
#include "theory/normalization_limits.hpp"

namespace fs = std::filesystem;
using attngeo::HostTensor;
using attngeo::SafetensorsFile;
using attngeo::test_support::shared_folder;

namespace {

fs::path scratch() {
    return attngeo::test_support::scratch_folder("normalization");
}

attngeo::test_support::CliResult attngeo_cli(const std::string& args) {
    return attngeo::test_support::run_program(ATTNGEO_EXE, args, scratch());
}

std::vector<float> floats(const HostTensor& t) {
    std::vector<float> out(t.numel());
    std::memcpy(out.data(), t.data, t.bytes);
    return out;
}

// The golden input ids, one window per line.
fs::path golden_windows(const SafetensorsFile& golden, const std::string& name) {
    const HostTensor ids = golden.get("input_ids");
    std::vector<std::int64_t> id(ids.numel());
    std::memcpy(id.data(), ids.data, ids.bytes);
    const fs::path path = scratch() / (name + "_ids.txt");
    std::ofstream out(path);
    for (std::int64_t b = 0; b < ids.shape[0]; ++b) {
        for (std::int64_t t = 0; t < ids.shape[1]; ++t)
            out << (t ? " " : "") << id[b * ids.shape[1] + t];
        out << "\n";
    }
    return path;
}

// One golden query row in long double: α over keys 0..t and the value rows of its kv head.
struct GoldenRow {
    std::vector<long double> alpha;               // [L]
    std::vector<std::vector<long double>> value;  // [L][d]
};

// ‖Σ_{i∉I_N} y_i − Σ_{i∈I_N} y_i‖ with I_N the N largest α (ties to the lower index), summed
// plainly per N.
long double plain_distance(const GoldenRow& row, int N) {
    const int L = static_cast<int>(row.alpha.size()), d = static_cast<int>(row.value[0].size());
    std::vector<int> order(L);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](int a, int b) { return row.alpha[a] > row.alpha[b]; });
    std::vector<long double> signed_sum(d, 0);
    for (int k = 0; k < L; ++k) {
        const long double sign = k < N ? -1 : 1;
        for (int j = 0; j < d; ++j)
            signed_sum[j] += sign * row.alpha[order[k]] * row.value[order[k]][j];
    }
    long double squares = 0;
    for (long double x : signed_sum)
        squares += x * x;
    return std::sqrt(squares);
}

// E_J ‖Σ_{i∉J} y_i − Σ_{i∈J} y_i‖² by enumerating every N-subset J (bit masks).
long double enumerated_mean_square(const GoldenRow& row, int N) {
    const int L = static_cast<int>(row.alpha.size()), d = static_cast<int>(row.value[0].size());
    long double total = 0;
    long long subsets = 0;
    for (unsigned mask = 0; mask < (1u << L); ++mask) {
        if (__builtin_popcount(mask) != N) continue;
        long double squares = 0;
        for (int j = 0; j < d; ++j) {
            long double x = 0;
            for (int i = 0; i < L; ++i)
                x += ((mask >> i) & 1u ? -1 : 1) * row.alpha[i] * row.value[i][j];
            squares += x * x;
        }
        total += squares;
        ++subsets;
    }
    return total / subsets;
}

// g(T, ε) from l = log α (the scores up to a per-row constant, which softmax ignores).
long double plain_sensitivity(const GoldenRow& row, const std::vector<double>& direction,
                              long double T, long double eps) {
    const int L = static_cast<int>(row.alpha.size());
    auto softmax = [&](long double step) {
        std::vector<long double> p(L);
        long double top = -INFINITY, total = 0;
        for (int i = 0; i < L; ++i)
            top = std::max(top, (std::log(row.alpha[i]) + step * direction[i]) / T);
        for (int i = 0; i < L; ++i)
            total += p[i] = std::exp((std::log(row.alpha[i]) + step * direction[i]) / T - top);
        for (auto& x : p)
            x /= total;
        return p;
    };
    const auto before = softmax(0), after = softmax(eps);
    long double squares = 0;
    for (int i = 0; i < L; ++i)
        squares += (after[i] - before[i]) * (after[i] - before[i]);
    return std::sqrt(squares) / eps;
}

using RowKey = std::tuple<int, int, int, int>;  // (layer, head, length_lo or temperature index, N)

void expect_golden_model_matches(const std::string& name) {
    const fs::path model = shared_folder() / "golden" / name;
    REQUIRE_SHARED_FILE(model);
    const SafetensorsFile golden((model / "golden.safetensors").string());
    const fs::path ids = golden_windows(golden, name);
    const HostTensor first_values = golden.get("values.0");  // [B, Hkv, T, d]
    const int B = static_cast<int>(first_values.shape[0]),
              Hkv = static_cast<int>(first_values.shape[1]),
              T = static_cast<int>(first_values.shape[2]),
              d = static_cast<int>(first_values.shape[3]);
    const fs::path out = scratch() / (name + "_run");
    fs::remove_all(out);
    const auto r = attngeo_cli("normalization --model " + model.string() + " --tokens " +
                               ids.string() + " --bos no --context " + std::to_string(T) +
                               " --queries all --length-bins " + std::to_string(T) +
                               " --N all --subsets 8 --temperatures 0.5,2 --epsilons 0.001,1 "
                               "--quiet --out " +
                               out.string());
    ASSERT_EQ(r.exit_code, 0) << r.err;

    std::map<RowKey, std::pair<double, double>> distances;  // → (distance, random_rms_exact)
    {
        attngeo::CsvReader csv((out / "distance.csv").string(), "distance table");
        const auto l = csv.column("layer"), h = csv.column("head"), lo = csv.column("length_lo"),
                   n = csv.column("N"), dist = csv.column("distance"),
                   rms = csv.column("random_rms_exact"), q = csv.column("queries");
        while (csv.next()) {
            const auto& row = csv.row();
            EXPECT_EQ(row.integer(q), B);
            distances[{static_cast<int>(row.integer(l)), static_cast<int>(row.integer(h)),
                       static_cast<int>(row.integer(lo)), static_cast<int>(row.integer(n))}] = {
                row.number(dist), row.number(rms)};
        }
    }
    std::map<std::tuple<int, int, double, double>, double> sensitivity;
    {
        attngeo::CsvReader csv((out / "sensitivity.csv").string(), "sensitivity table");
        const auto l = csv.column("layer"), h = csv.column("head"), t = csv.column("temperature"),
                   e = csv.column("epsilon"), g = csv.column("g");
        while (csv.next()) {
            const auto& row = csv.row();
            sensitivity[{static_cast<int>(row.integer(l)), static_cast<int>(row.integer(h)),
                         row.number(t), row.number(e)}] = row.number(g);
        }
    }

    double worst_distance = 0, worst_rms = 0, worst_g = 0;
    std::size_t checked = 0;
    for (int layer = 0; golden.contains("attentions." + std::to_string(layer)); ++layer) {
        const HostTensor attention = golden.get("attentions." + std::to_string(layer));
        const auto a = floats(attention), v = floats(golden.get("values." + std::to_string(layer)));
        const int H = static_cast<int>(attention.shape[1]);
        for (int head = 0; head < H; ++head) {
            std::map<std::pair<double, double>, long double> g_sum;
            for (int t = 0; t < T; ++t) {
                const int L = t + 1;
                std::vector<long double> distance_sum(L + 1, 0), mean_square_sum(L + 1, 0);
                for (int b = 0; b < B; ++b) {
                    GoldenRow row;
                    for (int i = 0; i < L; ++i) {
                        row.alpha.push_back(
                            a[((static_cast<std::size_t>(b) * H + head) * T + t) * T + i]);
                        std::vector<long double> value(d);
                        const int kv = head / (H / Hkv);
                        for (int j = 0; j < d; ++j)
                            value[j] =
                                v[((static_cast<std::size_t>(b) * Hkv + kv) * T + i) * d + j];
                        row.value.push_back(value);
                    }
                    for (int N = 1; N <= L; ++N) {
                        distance_sum[N] += plain_distance(row, N);
                        if (L <= 8) mean_square_sum[N] += enumerated_mean_square(row, N);
                    }
                    const auto direction = attngeo::theory::random_unit_direction(
                        L,
                        attngeo::empirical::stream_seed(
                            1, {2, static_cast<std::uint64_t>(b), static_cast<std::uint64_t>(layer),
                                static_cast<std::uint64_t>(head), static_cast<std::uint64_t>(t)}));
                    for (double temperature : {0.5, 2.0})
                        for (double eps : {0.001, 1.0})
                            g_sum[{temperature, eps}] +=
                                plain_sensitivity(row, direction, temperature, eps);
                }
                for (int N = 1; N <= L; ++N) {
                    const auto found = distances.find({layer, head, L, N});
                    ASSERT_NE(found, distances.end()) << name << " layer " << layer << " head "
                                                      << head << " L " << L << " N " << N;
                    const double expected = static_cast<double>(distance_sum[N] / B);
                    worst_distance =
                        std::max(worst_distance, std::abs(found->second.first - expected) /
                                                     std::max(1e-3, expected));
                    if (L <= 8) {
                        const double rms = std::sqrt(static_cast<double>(mean_square_sum[N] / B));
                        worst_rms = std::max(
                            worst_rms, std::abs(found->second.second - rms) / std::max(1e-3, rms));
                    }
                    ++checked;
                }
            }
            for (const auto& [key, total] : g_sum) {
                const double expected = static_cast<double>(total / (B * T));
                const double got = sensitivity.at({layer, head, key.first, key.second});
                worst_g = std::max(worst_g, std::abs(got - expected) / std::max(1e-6, expected));
            }
        }
    }
    std::cout << name << ": " << checked
              << " (layer, head, L, N) rows; largest relative difference from the plain reference: "
                 "distance "
              << worst_distance << ", sqrt E|.|^2 (enumerated, L <= 8) " << worst_rms << ", g "
              << worst_g << "\n";
    EXPECT_GT(checked, 0u);
    EXPECT_LT(worst_distance, 1e-4);
    EXPECT_LT(worst_rms, 1e-4);
    EXPECT_LT(worst_g, 1e-4);
    EXPECT_TRUE(fs::exists(out / "critical_n.csv"));
    EXPECT_TRUE(fs::exists(out / "critical_n_by_length.csv"));
}

fs::path stories() {
    return shared_folder() / "models" / "stories260K" / "stories260K.bin";
}

std::string stories_windows(int context, int docs) {
    return " --corpus " + std::string(ATTNGEO_SOURCE_DIR) + "/examples/stories260K_corpus.txt" +
           " --context " + std::to_string(context) + " --docs " + std::to_string(docs) + " --quiet";
}

}  // namespace

TEST(Normalization, Gpt2GoldenMatchesAPlainReferenceOnTransformersRows) {
    expect_golden_model_matches("gpt2");
}

TEST(Normalization, GroupedQueryGoldenMatchesAPlainReferenceOnTransformersRows) {
    expect_golden_model_matches("llama-gqa");
}

// At t = context − 1 the separability is R(r_min, N) of extract's pr.csv on the same windows.
TEST(Normalization, SeparabilityAtTheLastPositionIsExtractsRecall) {
    REQUIRE_SHARED_FILE(stories());
    const fs::path norm = scratch() / "last", ext = scratch() / "last_extract";
    fs::remove_all(norm);
    fs::remove_all(ext);
    const auto n =
        attngeo_cli("normalization --model " + stories().string() + stories_windows(64, 6) +
                    " --queries last --length-bins 1 --N pow2 --out " + norm.string());
    ASSERT_EQ(n.exit_code, 0) << n.err;
    const auto e = attngeo_cli("extract --model " + stories().string() + stories_windows(64, 6) +
                               " --engine torch --N pow2 --snapshot off --out " + ext.string());
    ASSERT_EQ(e.exit_code, 0) << e.err;
    std::map<std::tuple<int, int, int>, double> recall;
    {
        attngeo::CsvReader csv((ext / "pr.csv").string(), "pr table");
        const auto l = csv.column("layer"), h = csv.column("head"), N = csv.column("N"),
                   r = csv.column("R_mean");
        while (csv.next())
            recall[{static_cast<int>(csv.row().integer(l)), static_cast<int>(csv.row().integer(h)),
                    static_cast<int>(csv.row().integer(N))}] = csv.row().number(r);
    }
    attngeo::CsvReader csv((norm / "separability.csv").string(), "separability table");
    const auto l = csv.column("layer"), h = csv.column("head"), N = csv.column("N"),
               s = csv.column("separability");
    double worst = 0;
    int rows = 0;
    while (csv.next()) {
        const auto key = std::make_tuple(static_cast<int>(csv.row().integer(l)),
                                         static_cast<int>(csv.row().integer(h)),
                                         static_cast<int>(csv.row().integer(N)));
        worst = std::max(worst, std::abs(csv.row().number(s) - recall.at(key)));
        ++rows;
    }
    std::cout << rows << " (layer, head, N) rows; largest |separability - extract's R_mean| "
              << worst << "\n";
    EXPECT_GT(rows, 0);
    EXPECT_LE(worst, 1e-12);
}

TEST(Normalization, ThreadCountChangesNothing) {
    REQUIRE_SHARED_FILE(stories());
    const fs::path one = scratch() / "threads1", two = scratch() / "threads2";
    for (const auto& [folder, threads] : {std::pair{one, "1"}, std::pair{two, "2"}}) {
        fs::remove_all(folder);
        const auto r =
            attngeo_cli("normalization --model " + stories().string() + stories_windows(48, 3) +
                        " --queries every:4 --threads " + threads + " --out " + folder.string());
        ASSERT_EQ(r.exit_code, 0) << r.err;
    }
    for (const char* file : {"distance.csv", "separability.csv", "sensitivity.csv",
                             "critical_n.csv", "critical_n_by_length.csv"})
        EXPECT_EQ(attngeo::test_support::slurp(one / file),
                  attngeo::test_support::slurp(two / file))
            << file;
}

TEST(Normalization, BadFlagsExitTwoAndWriteNothing) {
    REQUIRE_SHARED_FILE(stories());
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"--queries every:0", "--queries"},
        {"--queries positions:3,99", "--queries"},
        {"--queries first", "--queries"},
        {"--length-bins 0", "--length-bins"},
        {"--subsets 1", "--subsets"},
        {"--temperatures 0:1:3", "--temperatures"},
        {"--temperatures 1:10:1", "--temperatures"},
        {"--epsilons 0.1,-1", "--epsilons"},
        {"--ks-level 1.5", "--ks-level"},
        {"--N 0", "--N"},
    };
    for (const auto& [flags, named] : cases) {
        const fs::path out = scratch() / "never";
        fs::remove_all(out);
        const auto r = attngeo_cli("normalization --model " + stories().string() +
                                   stories_windows(32, 2) + " " + flags + " --out " + out.string());
        EXPECT_EQ(r.exit_code, 2) << flags << ": " << r.err;
        EXPECT_NE(r.err.find(named), std::string::npos) << flags << ": " << r.err;
        EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << flags << ": " << r.err;
        EXPECT_FALSE(fs::exists(out)) << flags;
    }
}

// The gpt2 golden model (byte vocabulary) over windows of the example corpus's bytes: the
// report of its folder has the predecessor's figures.
TEST(Normalization, Gpt2GoldenReportHasThePredecessorsFigures) {
    const fs::path model = shared_folder() / "golden" / "gpt2";
    REQUIRE_SHARED_FILE(model);
    const std::string text = attngeo::test_support::slurp(fs::path(ATTNGEO_SOURCE_DIR) /
                                                          "examples" / "stories260K_corpus.txt");
    ASSERT_GE(text.size(), 64u * 8);
    const fs::path tokens = scratch() / "gpt2_bytes.txt";
    {
        std::ofstream out(tokens);
        for (int w = 0; w < 8; ++w) {
            for (int t = 0; t < 64; ++t)
                out << (t ? " " : "")
                    << static_cast<int>(static_cast<unsigned char>(text[w * 64 + t]));
            out << "\n";
        }
    }
    const fs::path out = scratch() / "gpt2_bytes_run", report = scratch() / "gpt2_bytes_report";
    fs::remove_all(out);
    fs::remove_all(report);
    const auto r =
        attngeo_cli("normalization --model " + model.string() + " --tokens " + tokens.string() +
                    " --bos no --context 64 --queries every:4 --length-bins 4 --quiet "
                    "--out " +
                    out.string());
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto rep = attngeo_cli("report --in " + out.string() + " --out " + report.string());
    ASSERT_EQ(rep.exit_code, 0) << rep.err;
    const std::string html = attngeo::test_support::slurp(report / "index.html");
    for (const char* figure :
         {"distance_vs_length", "distance_vs_n", "critical_n", "separability", "sensitivity"})
        EXPECT_NE(html.find(std::string("run0_normalization_") + figure), std::string::npos)
            << figure;
}
