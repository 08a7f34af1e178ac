// Tests for the torch-free extract core (attngeo::empirical_core): write_extract_folder on
// statistics formed from synthetic heads, read back by compare's reader and checked against a
// plain per-document reference (theory/'s per-N metrics, averaged in double), the saved state,
// a merge of two shards written the same way, and refused mismatches.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <random>
#include <sstream>
#include <stdexcept>

#include "common/errors.hpp"
#include "common/safetensors.hpp"
#include "compare/emp_run.hpp"
#include "empirical/extract_folder.hpp"
#include "tests/support/test_files.hpp"

namespace fs = std::filesystem;
using namespace attngeo;
using namespace attngeo::empirical;

namespace {

constexpr int kLayers = 2, kHeads = 4, kKvHeads = 2, kContext = 7, kDim = 3, kWindows = 5;

fs::path scratch() {
    return test_support::scratch_folder("extract_core");
}

StatisticsSettings settings() {
    StatisticsSettings s;
    s.context = kContext;
    s.max_lag = 3;
    for (int N = 1; N <= kContext; ++N)
        s.sizes.push_back(N);
    return s;
}

// One window of one kv head: α [n] (sums to 1) and values [n, d], deterministic per seed.
struct SyntheticHead {
    std::vector<float> alpha, values;
};
SyntheticHead synthetic_head(unsigned seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> weight(0.05f, 1.0f), coordinate(-1.0f, 1.0f);
    SyntheticHead head;
    double total = 0;
    for (int i = 0; i < kContext; ++i)
        total += head.alpha.emplace_back(weight(rng));
    for (float& a : head.alpha)
        a = static_cast<float>(a / total);
    for (int i = 0; i < kContext * kDim; ++i)
        head.values.push_back(coordinate(rng));
    return head;
}

SyntheticHead window_head(int window, int layer, int head) {
    const SyntheticHead kv = synthetic_head(1000u * window + 10u * layer + head / 2);
    SyntheticHead own = synthetic_head(1000u * window + 10u * layer + 5u + head);
    own.values = kv.values;  // query heads 2k, 2k+1 read kv head k
    return own;
}

// A run (or shard) over windows [first, end): the grid and per-document arrays.
struct Formed {
    StatisticsGrid grid;
    PerDocArrays per_doc;
};
Formed form(int first, int end) {
    const PerDocLayout layout = per_doc_layout(kLayers, kHeads, settings());
    Formed formed{make_grid(kLayers, kHeads, settings()), PerDocArrays(layout)};
    for (int w = first; w < end; ++w) {
        WindowRecord record(layout);
        for (int l = 0; l < kLayers; ++l)
            for (int h = 0; h < kHeads; ++h) {
                const SyntheticHead head = window_head(w, l, h);
                record.set(
                    l, h,
                    formed.grid[l][h].add_document(head.alpha.data(), head.values.data(), kDim));
            }
        formed.per_doc.append(record);
    }
    return formed;
}

ExtractRunInfo run_info(int first, int end, const std::string& shard) {
    ExtractRunInfo run;
    run.command = "python: synthetic heads";
    run.model = {"synthetic", "llama", kLayers, kHeads,    kKvHeads,
                 kDim,        32,      "numpy", "float32", "cpu"};
    run.parameters.shard = shard;
    run.parameters.engine = "numpy";
    run.parameters.metrics = "theory/ certified Gram path per head";
    run.documents = {end - first, kWindows, 0, kWindows};
    run.run_fingerprint = "0123456789abcdef";
    return run;
}

// The bootstrap's per-document arrays (cos_by_lag [D, L, H, K], alpha [D, L, H, n],
// C [D, L, H]) against plain loops over each window's tokens in double.
void expect_fit_arrays_match_the_plain_reference(const SafetensorsFile& per_doc) {
    const int K = settings().max_lag;
    const HostTensor cos = per_doc.get("cos_by_lag"), alpha = per_doc.get("alpha"),
                     C = per_doc.get("C");
    ASSERT_EQ(cos.shape, (std::vector<std::int64_t>{kWindows, kLayers, kHeads, K}));
    ASSERT_EQ(alpha.shape, (std::vector<std::int64_t>{kWindows, kLayers, kHeads, kContext}));
    ASSERT_EQ(C.shape, (std::vector<std::int64_t>{kWindows, kLayers, kHeads}));
    const auto* cos_rows = static_cast<const float*>(cos.data);
    const auto* alpha_rows = static_cast<const float*>(alpha.data);
    const auto* c_rows = static_cast<const float*>(C.data);
    double largest = 0;
    for (int w = 0; w < kWindows; ++w)
        for (int l = 0; l < kLayers; ++l)
            for (int h = 0; h < kHeads; ++h) {
                const SyntheticHead head = window_head(w, l, h);
                const std::size_t cell = (static_cast<std::size_t>(w) * kLayers + l) * kHeads + h;
                auto row = [&](int i) { return head.values.data() + i * kDim; };
                std::vector<double> norm(kContext);
                for (int i = 0; i < kContext; ++i) {
                    double sq = 0;
                    for (int t = 0; t < kDim; ++t)
                        sq += double(row(i)[t]) * row(i)[t];
                    norm[i] = std::sqrt(sq);
                }
                std::vector<double> rest(norm.begin() + 1, norm.end());
                std::sort(rest.begin(), rest.end());
                const std::size_t m = rest.size();
                const double median = m % 2 ? rest[m / 2] : 0.5 * (rest[m / 2 - 1] + rest[m / 2]);
                largest = std::max(largest, std::abs(c_rows[cell] - median) / median);
                for (int i = 0; i < kContext; ++i)
                    EXPECT_EQ(alpha_rows[cell * kContext + i], head.alpha[i]);
                for (int k = 1; k <= K; ++k) {
                    double sum = 0;
                    int pairs = 0;
                    for (int i = 1; i + k < kContext; ++i, ++pairs) {
                        double dot = 0;
                        for (int t = 0; t < kDim; ++t)
                            dot += double(row(i)[t]) * row(i + k)[t];
                        sum += dot / (norm[i] * norm[i + k]);
                    }
                    largest = std::max(largest, std::abs(cos_rows[cell * K + k - 1] - sum / pairs));
                }
            }
    std::cout << "per_doc cos_by_lag and C against the plain per-window loops: largest "
                 "difference "
              << largest << "\n";
    EXPECT_LE(largest, 1e-6);  // float32 storage
}

}  // namespace

TEST(ExtractCore, WrittenFolderReadsBackAsThePlainReference) {
    const Formed formed = form(0, kWindows);
    const fs::path out = scratch() / "whole";
    write_extract_folder(out.string(), formed.grid, settings(), run_info(0, kWindows, "0/1"),
                         formed.per_doc);
    const compare::EmpiricalRun run = compare::read_empirical_run(out.string());
    ASSERT_EQ(run.layers, kLayers);
    ASSERT_EQ(run.heads, kHeads);
    ASSERT_EQ(run.context, kContext);
    const SafetensorsFile per_doc((out / "per_doc.safetensors").string());
    const HostTensor P = per_doc.get("P"), R = per_doc.get("R");
    ASSERT_EQ(P.shape, (std::vector<std::int64_t>{kWindows, kLayers, kHeads, kContext}));
    const auto* p_rows = static_cast<const float*>(P.data);
    const auto* r_rows = static_cast<const float*>(R.data);
    double largest = 0;
    for (int l = 0; l < kLayers; ++l)
        for (int h = 0; h < kHeads; ++h) {
            std::vector<double> p_mean(kContext, 0.0), r_mean(kContext, 0.0);
            for (int w = 0; w < kWindows; ++w) {
                const SyntheticHead head = window_head(w, l, h);
                theory::TokenGeometry tokens;
                tokens.alpha =
                    Eigen::Map<const Eigen::VectorXf>(head.alpha.data(), kContext).cast<double>();
                tokens.values = Eigen::Map<const Eigen::Matrix<float, -1, -1, Eigen::RowMajor>>(
                                    head.values.data(), kContext, kDim)
                                    .cast<double>();
                const auto rows = theory::selection_metrics_reference(tokens, settings().sizes,
                                                                      theory::Ranking::attention,
                                                                      theory::Distance::euclidean);
                for (int s = 0; s < kContext; ++s) {
                    p_mean[s] += rows[s].precision_at_rmax / kWindows;
                    r_mean[s] += rows[s].recall_at_rmin / kWindows;
                    const std::size_t at =
                        ((static_cast<std::size_t>(w) * kLayers + l) * kHeads + h) * kContext + s;
                    EXPECT_EQ(p_rows[at], static_cast<float>(rows[s].precision_at_rmax));
                    EXPECT_EQ(r_rows[at], static_cast<float>(rows[s].recall_at_rmin));
                }
            }
            for (int s = 0; s < kContext; ++s) {
                largest = std::max({largest, std::abs(run.at(l, h).P_mean[s] - p_mean[s]),
                                    std::abs(run.at(l, h).R_mean[s] - r_mean[s])});
            }
            EXPECT_EQ(run.at(l, h).kv_head, h / (kHeads / kKvHeads));
            EXPECT_EQ(run.at(l, h).docs, kWindows);
        }
    std::cout << "pr.csv against the plain per-document mean: largest difference " << largest
              << "\n";
    RecordProperty("largest_difference", std::to_string(largest));
    // MomentSums round each document's value once to 2^-40 fixed point (common/exact_sums.hpp).
    EXPECT_LE(largest, std::ldexp(1.0, -40));
    EXPECT_EQ(run.manifest.at("kind"), "extract");
    EXPECT_EQ(run.manifest.at("command"), "python: synthetic heads");

    expect_fit_arrays_match_the_plain_reference(per_doc);

    StatisticsGrid loaded = make_grid(kLayers, kHeads, settings());
    const auto metadata = load_state((out / "sums.safetensors").string(), loaded);
    EXPECT_EQ(metadata.at("run_fingerprint"), "0123456789abcdef");
    EXPECT_EQ(metadata.at("windows"), std::to_string(kWindows));
    for (int l = 0; l < kLayers; ++l)
        for (int h = 0; h < kHeads; ++h)
            EXPECT_TRUE(loaded[l][h] == formed.grid[l][h]) << l << "," << h;
}

// Two shards written by write_extract_folder merge into the bytes of the whole run.
TEST(ExtractCore, ShardsMergeIntoTheWholeRun) {
    const fs::path whole = scratch() / "merge_whole", merged = scratch() / "merged";
    const Formed all = form(0, kWindows);
    write_extract_folder(whole.string(), all.grid, settings(), run_info(0, kWindows, "0/1"),
                         all.per_doc);
    // Shard i/2 holds windows [i W/2, (i+1) W/2).
    const int split = kWindows / 2;
    std::vector<std::string> shards;
    for (int i = 0; i < 2; ++i) {
        const int first = i == 0 ? 0 : split, end = i == 0 ? split : kWindows;
        const Formed part = form(first, end);
        const fs::path dir = scratch() / ("shard" + std::to_string(i));
        write_extract_folder(dir.string(), part.grid, settings(),
                             run_info(first, end, std::to_string(i) + "/2"), part.per_doc);
        shards.push_back(dir.string());
    }
    merge_extract(shards, merged.string(), "merge");
    for (const char* file : {"heads.csv", "pr.csv", "by_position.csv", "cos_by_lag.csv", "diag.csv",
                             "per_doc.safetensors", "sums.safetensors"})
        EXPECT_EQ(test_support::slurp(merged / file), test_support::slurp(whole / file)) << file;
}

TEST(ExtractCore, MismatchedGridOrArraysAreRefusedAndWriteNothing) {
    const Formed formed = form(0, 2);
    const fs::path out = scratch() / "never";
    ExtractRunInfo wrong_windows = run_info(0, 3, "0/1");  // says 3 windows, holds 2
    EXPECT_THROW(
        write_extract_folder(out.string(), formed.grid, settings(), wrong_windows, formed.per_doc),
        InputError);
    ExtractRunInfo wrong_heads = run_info(0, 2, "0/1");
    wrong_heads.model.heads = 8;
    EXPECT_THROW(
        write_extract_folder(out.string(), formed.grid, settings(), wrong_heads, formed.per_doc),
        InputError);
    ExtractRunInfo bad_groups = run_info(0, 2, "0/1");
    bad_groups.model.kv_heads = 3;  // does not divide 4 heads
    EXPECT_THROW(
        write_extract_folder(out.string(), formed.grid, settings(), bad_groups, formed.per_doc),
        InputError);
    PerDocLayout three_sizes = per_doc_layout(kLayers, kHeads, settings());
    three_sizes.sizes = 3;  // the grid has 7
    PerDocArrays other_layout(three_sizes);
    for (int w = 0; w < 2; ++w)
        other_layout.append(WindowRecord(three_sizes));
    EXPECT_THROW(write_extract_folder(out.string(), formed.grid, settings(), run_info(0, 2, "0/1"),
                                      other_layout),
                 InputError);
    EXPECT_FALSE(fs::exists(out));
}

TEST(ExtractCore, RunFingerprintIsFnv1aOfSettingsThenEveryToken) {
    // A plain FNV-1a 64 over the settings' bytes, then every window's ids as little-endian int64,
    // from the seed extract has always used (so existing folders keep their fingerprints).
    auto reference = [](const std::string& text, const std::vector<std::vector<std::int64_t>>& ws) {
        std::uint64_t hash = 1469598103934665603ULL;
        auto eat = [&](unsigned char byte) { hash = (hash ^ byte) * 1099511628211ULL; };
        for (char c : text)
            eat(static_cast<unsigned char>(c));
        for (const auto& w : ws)
            for (std::int64_t id : w)
                for (int b = 0; b < 8; ++b)
                    eat(static_cast<unsigned char>(static_cast<std::uint64_t>(id) >> (8 * b)));
        char hex[17];
        std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(hash));
        return std::string(hex);
    };
    const std::vector<std::vector<std::int64_t>> windows = {{1, 2, 3}, {1, 4, -5}};
    const std::string base = run_fingerprint("{}", windows);
    EXPECT_EQ(base, reference("{}", windows));
    EXPECT_EQ(run_fingerprint("", {}), reference("", {}));
    EXPECT_NE(base, run_fingerprint("{ }", windows));
    auto changed = windows;
    changed[1][2] = 6;
    EXPECT_EQ(run_fingerprint("{}", changed), reference("{}", changed));
    EXPECT_NE(base, run_fingerprint("{}", changed));
}

// The spill of .partial/ keeps every per-document tensor: windows appended, checkpointed, the run
// interrupted and resumed, then copied out tensor by tensor equal the records that went in.
TEST(ExtractCore, PerDocumentArraysSurviveSpillCheckpointAndResume) {
    const fs::path out = scratch() / "spill";
    fs::remove_all(out);
    const PerDocLayout layout = per_doc_layout(kLayers, kHeads, settings());
    const std::map<std::string, std::string> metadata = {{"run_fingerprint", "00000000000000aa"},
                                                         {"shard", "0/1"},
                                                         {"windows", "3"},
                                                         {"settings", "{}"}};
    const Formed formed = form(0, 3);
    std::vector<WindowRecord> records;
    {
        StatisticsGrid grid = make_grid(kLayers, kHeads, settings());
        for (int w = 0; w < 3; ++w) {
            WindowRecord record(layout);
            for (int l = 0; l < kLayers; ++l)
                for (int h = 0; h < kHeads; ++h) {
                    const SyntheticHead head = window_head(w, l, h);
                    record.set(
                        l, h, grid[l][h].add_document(head.alpha.data(), head.values.data(), kDim));
                }
            records.push_back(record);
        }
    }
    {
        ExtractState state(out.string(), make_grid(kLayers, kHeads, settings()), layout, metadata,
                           3);
        state.open(false);
        for (int w = 0; w < 2; ++w) {
            for (int l = 0; l < kLayers; ++l)
                for (int h = 0; h < kHeads; ++h) {
                    const SyntheticHead head = window_head(w, l, h);
                    state.grid()[l][h].add_document(head.alpha.data(), head.values.data(), kDim);
                }
            state.append(records[w]);
        }
        state.checkpoint();
        state.release();  // an interruption: --resume continues
    }
    ExtractState resumed(out.string(), make_grid(kLayers, kHeads, settings()), layout, metadata, 3);
    resumed.open(true);
    ASSERT_EQ(resumed.done(), 2);
    for (int l = 0; l < kLayers; ++l)
        for (int h = 0; h < kHeads; ++h) {
            const SyntheticHead head = window_head(2, l, h);
            resumed.grid()[l][h].add_document(head.alpha.data(), head.values.data(), kDim);
        }
    resumed.append(records[2]);
    resumed.checkpoint();
    for (int t = 0; t < PerDocLayout::kTensors; ++t) {
        std::ostringstream copied;
        resumed.copy_per_doc(t, copied);
        std::ostringstream expected;
        formed.per_doc.write(t, expected);
        EXPECT_EQ(copied.str(), expected.str()) << PerDocLayout::kNames[t];
    }
    resumed.remove_partial();
}

TEST(ExtractCore, AWindowRecordRefusesArraysOfAnotherLayout) {
    const PerDocLayout layout = per_doc_layout(kLayers, kHeads, settings());
    WindowRecord record(layout);
    StatisticsGrid grid = make_grid(kLayers, kHeads, settings());
    const SyntheticHead head = window_head(0, 0, 0);
    DocumentRecord document = grid[0][0].add_document(head.alpha.data(), head.values.data(), kDim);
    EXPECT_EQ(document.cos_by_lag.size(), static_cast<std::size_t>(settings().max_lag));
    EXPECT_EQ(document.alpha.size(), static_cast<std::size_t>(kContext));
    document.cos_by_lag.pop_back();
    EXPECT_THROW(record.set(0, 0, document), std::invalid_argument);
    EXPECT_EQ(layout.record_floats(),
              kLayers * kHeads * (2 * kContext + 3 + settings().max_lag + kContext));
}
