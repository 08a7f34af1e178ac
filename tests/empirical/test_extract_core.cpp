// Tests for the torch-free extract core (attngeo::empirical_core): write_extract_folder on
// statistics formed from synthetic heads, read back by compare's reader and checked against a
// plain per-document reference (theory/'s per-N metrics, averaged in double), the saved state,
// a merge of two shards written the same way, the claims' per-document arrays against plain
// float64 terms and the CSVs' means, and refused mismatches.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "common/csv.hpp"
#include "common/errors.hpp"
#include "common/safetensors.hpp"
#include "compare/correlation.hpp"
#include "compare/extract_folder_reader.hpp"
#include "empirical/extract/extract_folder.hpp"
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
Formed form(int first, int end, const StatisticsSettings& with = settings()) {
    const PerDocLayout layout = per_doc_layout(kLayers, kHeads, with);
    Formed formed{make_grid(kLayers, kHeads, with), PerDocArrays(layout)};
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

// A checkpoint written before the spill's records gained the claims' arrays (state format 2) or
// the sink measures (3) holds shorter records: --resume refuses it in one line naming the file
// and both formats.
TEST(ExtractCore, ACheckpointOfTheOlderRecordLayoutIsRefusedOnResume) {
    const fs::path out = scratch() / "older_state";
    fs::remove_all(out);
    const PerDocLayout layout = per_doc_layout(kLayers, kHeads, settings());
    const std::map<std::string, std::string> metadata = {{"run_fingerprint", "00000000000000bb"},
                                                         {"shard", "0/1"},
                                                         {"windows", "2"},
                                                         {"settings", "{}"}};
    {
        ExtractState state(out.string(), make_grid(kLayers, kHeads, settings()), layout, metadata,
                           2);
        state.open(false);
        state.checkpoint();
        state.release();
    }
    const fs::path path = out / ".partial" / "state.safetensors";
    {
        const SafetensorsFile saved(path.string());
        auto older = saved.metadata();
        older["format"] = "attngeo-extract-state-2";
        const HostTensor words = saved.get("state");
        write_safetensors(path.string(), {words}, older);
    }
    ExtractState resumed(out.string(), make_grid(kLayers, kHeads, settings()), layout, metadata, 2);
    try {
        resumed.open(true);
        ADD_FAILURE() << "a state of format 2 was resumed";
    } catch (const InputError& e) {
        const std::string message = e.what();
        std::cout << message << "\n";
        EXPECT_NE(message.find(path.string()), std::string::npos) << message;
        EXPECT_NE(message.find("attngeo-extract-state-2"), std::string::npos) << message;
        EXPECT_NE(message.find("attngeo-extract-state-4"), std::string::npos) << message;
        EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    }
    fs::remove_all(out);
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
    EXPECT_EQ(document.f_rmax.size(), settings().sizes.size());
    EXPECT_EQ(document.cos_s_vL.size(), settings().sizes.size());
    document = grid[0][0].add_document(head.alpha.data(), head.values.data(), kDim);
    document.cos_s_v0.push_back(0.5f);
    EXPECT_THROW(record.set(0, 0, document), std::invalid_argument);
    // P, R, Fmax, Fmin, cos_s_v0, cos_s_vL of S; rho0, lambda, C and the three magnitudes; K; n;
    // the four per-head sink scalars; five massive-activation fields per layer; four secondary
    // sinks of four fields per window.
    const int S = static_cast<int>(settings().sizes.size());
    EXPECT_EQ(layout.record_floats(),
              kLayers * kHeads * (6 * S + 10 + settings().max_lag + kContext) + 5 * kLayers + 16);
    EXPECT_EQ(layout.shape(7, 5), (std::vector<std::int64_t>{5, kLayers, kHeads}));
    EXPECT_EQ(layout.shape(13, 5), (std::vector<std::int64_t>{5, kLayers, kHeads, S}));
    EXPECT_EQ(layout.shape(PerDocLayout::massive, 5), (std::vector<std::int64_t>{5, kLayers, 5}));
    EXPECT_EQ(layout.shape(PerDocLayout::secondary_sinks, 5), (std::vector<std::int64_t>{5, 4, 4}));
    // A record starts with the sink measures unmeasured (NaN), the statistics at zero.
    const WindowRecord fresh(layout);
    EXPECT_EQ(fresh.floats()[0], 0.0f);
    EXPECT_TRUE(std::isnan(fresh.floats()[layout.offset(PerDocLayout::sink_attention)]));
    EXPECT_TRUE(std::isnan(fresh.floats().back()));
}

namespace {

// One document's terms of the claims' arrays, recomputed in double from its α and values with
// plain loops: the magnitudes, F at r_max and r_min (theory/'s per-N reference) and the cosines
// of s(N) with v_0 and v_{n−1}, s(N) summed over the N highest scores (ties to the lower index).
struct ClaimTerms {
    double m_sink = 0, m_last = 0, m_rest = 0;
    std::vector<double> f_rmax, f_rmin, cos_v0, cos_vL;  // [|sizes|]
};

ClaimTerms plain_claim_terms(const SyntheticHead& head, const StatisticsSettings& with) {
    const int n = kContext, last = n - 1;
    auto v = [&](int i, int t) { return static_cast<double>(head.values[i * kDim + t]); };
    auto a = [&](int i) { return static_cast<double>(head.alpha[i]); };
    std::vector<double> norm(n);
    for (int i = 0; i < n; ++i) {
        double sq = 0;
        for (int t = 0; t < kDim; ++t)
            sq += v(i, t) * v(i, t);
        norm[i] = std::sqrt(sq);
    }
    ClaimTerms terms;
    terms.m_sink = a(0) * norm[0];
    terms.m_last = a(last) * norm[last];
    double rest_sq = 0;
    for (int t = 0; t < kDim; ++t) {
        double rest = 0;
        for (int i = 1; i < last; ++i)
            rest += a(i) * v(i, t);
        rest_sq += rest * rest;
    }
    terms.m_rest = std::sqrt(rest_sq);
    std::vector<int> order(n);
    for (int i = 0; i < n; ++i)
        order[i] = i;
    auto score = [&](int i) {
        return with.ranking == theory::Ranking::attention ? a(i) : a(i) * norm[i];
    };
    std::stable_sort(order.begin(), order.end(), [&](int x, int y) { return score(x) > score(y); });
    auto cosine = [&](const std::vector<double>& s, int j) {
        double dot = 0, sq = 0;
        for (int t = 0; t < kDim; ++t) {
            dot += s[t] * v(j, t);
            sq += s[t] * s[t];
        }
        return sq == 0 || norm[j] == 0 ? 0.0 : dot / (std::sqrt(sq) * norm[j]);
    };
    for (int N : with.sizes) {
        std::vector<double> s(kDim, 0.0);
        for (int k = 0; k < N; ++k)
            for (int t = 0; t < kDim; ++t)
                s[t] += a(order[k]) * v(order[k], t);
        terms.cos_v0.push_back(cosine(s, 0));
        terms.cos_vL.push_back(cosine(s, last));
    }
    theory::TokenGeometry tokens;
    tokens.alpha = Eigen::Map<const Eigen::VectorXf>(head.alpha.data(), n).cast<double>();
    tokens.values =
        Eigen::Map<const Eigen::Matrix<float, -1, -1, Eigen::RowMajor>>(head.values.data(), n, kDim)
            .cast<double>();
    for (const auto& row :
         theory::selection_metrics_reference(tokens, with.sizes, with.ranking, with.distance)) {
        terms.f_rmax.push_back(row.f_at_rmax);
        terms.f_rmin.push_back(row.f_at_rmin);
    }
    return terms;
}

}  // namespace

// The claims' per-document arrays of per_doc.safetensors (m_sink, m_last, m_rest, Fmax, Fmin,
// cos_s_v0, cos_s_vL), read back by compare's reader: each document's value is the plain float64
// term rounded to float32, and their means over documents are heads.csv's, pr.csv's and
// diag.csv's values up to that rounding — for both rankings, both distances and a sparse N grid.
TEST(ExtractCore, ClaimArraysAreThePerDocumentTermsOfHeadsPrAndDiag) {
    std::vector<StatisticsSettings> variants(3, settings());
    variants[1].ranking = theory::Ranking::contribution;
    variants[1].sizes = {1, 3, kContext};  // the per-N path
    variants[2].distance = theory::Distance::cosine;
    double largest_term = 0, largest_mean = 0, largest_allowed = 0;
    for (std::size_t v = 0; v < variants.size(); ++v) {
        const StatisticsSettings& with = variants[v];
        const int S = static_cast<int>(with.sizes.size());
        const Formed formed = form(0, kWindows, with);
        const fs::path out = scratch() / ("claims" + std::to_string(v));
        write_extract_folder(out.string(), formed.grid, with, run_info(0, kWindows, "0/1"),
                             formed.per_doc);
        const compare::PerDocArrays a =
            compare::read_per_doc((out / "per_doc.safetensors").string());
        ASSERT_EQ(a.docs, kWindows);
        ASSERT_EQ(a.sizes, with.sizes);
        ASSERT_EQ(a.Fmax.size(), static_cast<std::size_t>(kWindows) * kLayers * kHeads * S);
        ASSERT_EQ(a.m_rest.size(), static_cast<std::size_t>(kWindows) * kLayers * kHeads);
        const compare::EmpiricalRun run = compare::read_empirical_run(out.string());
        const CsvTable diag = read_csv_table((out / "diag.csv").string());
        ASSERT_EQ(diag.rows.size(), static_cast<std::size_t>(kLayers) * kHeads * S);
        for (int l = 0; l < kLayers; ++l)
            for (int h = 0; h < kHeads; ++h) {
                // [quantity][document]: m_sink, m_last, m_rest, then Fmax, Fmin, cos_s_v0,
                // cos_s_vL at each N.
                std::vector<std::vector<double>> stored(3 + 4 * S);
                for (int w = 0; w < kWindows; ++w) {
                    const ClaimTerms plain = plain_claim_terms(window_head(w, l, h), with);
                    const std::size_t cell =
                        (static_cast<std::size_t>(w) * kLayers + l) * kHeads + h;
                    std::vector<std::pair<float, double>> pairs = {{a.m_sink[cell], plain.m_sink},
                                                                   {a.m_last[cell], plain.m_last},
                                                                   {a.m_rest[cell], plain.m_rest}};
                    for (int s = 0; s < S; ++s) {
                        const std::size_t at = cell * S + s;
                        // F is a function of exact counts: the same double, the same float.
                        EXPECT_EQ(a.Fmax[at], static_cast<float>(plain.f_rmax[s])) << v << s;
                        EXPECT_EQ(a.Fmin[at], static_cast<float>(plain.f_rmin[s])) << v << s;
                        pairs.push_back({a.Fmax[at], plain.f_rmax[s]});
                        pairs.push_back({a.Fmin[at], plain.f_rmin[s]});
                        pairs.push_back({a.cos_s_v0[at], plain.cos_v0[s]});
                        pairs.push_back({a.cos_s_vL[at], plain.cos_vL[s]});
                    }
                    for (std::size_t q = 0; q < pairs.size(); ++q) {
                        const double difference = std::abs(pairs[q].first - pairs[q].second);
                        largest_term = std::max(largest_term, difference);
                        // float32 rounding of the term, plus a few double roundings of the sums.
                        EXPECT_LE(difference, 0x1p-24 * std::abs(pairs[q].second) + 1e-14)
                            << "variant " << v << " layer " << l << " head " << h << " doc " << w
                            << " quantity " << q;
                        stored[q].push_back(pairs[q].first);
                    }
                }
                const compare::EmpiricalHead& row = run.at(l, h);
                std::vector<double> aggregate = {row.m_sink, row.m_last, row.m_rest};
                for (int s = 0; s < S; ++s) {
                    const std::size_t r = (static_cast<std::size_t>(l) * kHeads + h) * S + s;
                    EXPECT_EQ(diag.integer(r, "N"), with.sizes[s]);
                    aggregate.insert(aggregate.end(),
                                     {row.Fmax_mean[s], row.Fmin_mean[s],
                                      diag.number(r, "cos_s_v0"), diag.number(r, "cos_s_vL")});
                }
                for (std::size_t q = 0; q < aggregate.size(); ++q) {
                    double mean = 0, largest = 0;
                    for (double x : stored[q]) {
                        mean += x / kWindows;
                        largest = std::max(largest, std::abs(x));
                    }
                    // Each stored value is within 2^-24 relative of the exact sums' addend,
                    // which the sums round to 2^-64 (magnitudes, cosines) or 2^-40 (F).
                    const double allowed = 0x1p-24 * largest + 0x1p-40;
                    const double difference = std::abs(mean - aggregate[q]);
                    largest_mean = std::max(largest_mean, difference);
                    largest_allowed = std::max(largest_allowed, allowed);
                    EXPECT_LE(difference, allowed)
                        << "variant " << v << " layer " << l << " head " << h << " quantity " << q;
                }
            }
    }
    std::cout << "claims' per-document values against the plain float64 terms: largest difference "
              << largest_term << "; their means against heads.csv, pr.csv and diag.csv: largest "
              << "difference " << largest_mean << " (bound " << largest_allowed << ")\n";
    RecordProperty("largest_term_difference", std::to_string(largest_term));
    RecordProperty("largest_mean_difference", std::to_string(largest_mean));
}
