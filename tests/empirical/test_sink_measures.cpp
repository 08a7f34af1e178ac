// The sink measurements of the literature (empirical/extract/sink_measures, issue 43): each
// against a plain computation written another way (long double, full sorts, one key at a time)
// on random rows, and on planted cases whose answer is known: a sink head, a secondary sink,
// a massive activation.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <utility>
#include <vector>

#include "empirical/extract/sink_measures.hpp"

using namespace attngeo::empirical;

namespace {

// Causal softmax rows at `positions` over `keys` keys, with extra weight on token 0 (sink > 0).
std::vector<float> random_rows(std::mt19937& rng, const std::vector<int>& positions, int keys,
                               double sink) {
    std::normal_distribution<double> normal;
    std::vector<float> rows(positions.size() * keys, 0.0f);
    for (std::size_t r = 0; r < positions.size(); ++r) {
        std::vector<double> w(positions[r] + 1);
        double total = 0;
        for (std::size_t k = 0; k < w.size(); ++k)
            total += w[k] = std::exp(normal(rng) + (k == 0 ? sink : 0.0));
        for (std::size_t k = 0; k < w.size(); ++k)
            rows[r * keys + k] = static_cast<float>(w[k] / total);
    }
    return rows;
}

// α(k) one key at a time: the rows whose position reaches k, in long double.
double plain_mean_on_key(const std::vector<float>& rows, const std::vector<int>& positions,
                         int keys, int k) {
    long double sum = 0;
    int seen = 0;
    for (std::size_t r = 0; r < positions.size(); ++r)
        if (positions[r] >= k) sum += rows[r * keys + k], ++seen;
    return seen ? static_cast<double>(sum / seen) : std::nan("");
}

long double plain_cos(const float* x, const float* y, int d) {
    long double xx = 0, yy = 0, xy = 0;
    for (int i = 0; i < d; ++i)
        xx += (long double)x[i] * x[i], yy += (long double)y[i] * y[i],
            xy += (long double)x[i] * y[i];
    return xx == 0 || yy == 0 ? 0 : xy / std::sqrt(xx * yy);
}

}  // namespace

TEST(SinkMeasures, MeanAttentionByKeyEqualsAPlainPerKeyLoop) {
    std::mt19937 rng(43);
    const int keys = 40;
    const std::vector<int> positions = {0, 3, 7, 8, 20, 39};
    const std::vector<float> rows = random_rows(rng, positions, keys, 2.0);
    const std::vector<double> means =
        mean_attention_by_key({rows.data(), positions.data(), int(positions.size()), keys});
    double largest = 0;
    for (int k = 0; k < keys; ++k)
        largest =
            std::max(largest, std::fabs(means[k] - plain_mean_on_key(rows, positions, keys, k)));
    std::printf("largest difference from the per-key loop: %.3g\n", largest);
    EXPECT_LT(largest, 1e-15);
    const std::vector<int> seeing = rows_seeing_each_key(positions.data(), 6, keys);
    EXPECT_EQ(seeing[0], 6);
    EXPECT_EQ(seeing[8], 3);  // rows at 8, 20, 39
    EXPECT_EQ(seeing[39], 1);
}

TEST(SinkMeasures, SinkRateCountsPlantedSinkHeadsOnly) {
    std::mt19937 rng(7);
    const int keys = 64;
    std::vector<int> positions(keys);
    for (int t = 0; t < keys; ++t)
        positions[t] = t;
    std::vector<double> on_sink;
    for (int h = 0; h < 10; ++h) {  // heads 0..3 planted sinks, 4..9 none
        const auto rows = random_rows(rng, positions, keys, h < 4 ? 6.0 : 0.0);
        on_sink.push_back(mean_attention_by_key({rows.data(), positions.data(), keys, keys})[0]);
    }
    for (int h = 0; h < 10; ++h)
        std::printf("head %d: alpha(0) = %.3f\n", h, on_sink[h]);
    EXPECT_DOUBLE_EQ(sink_rate(on_sink), 0.4);
    EXPECT_DOUBLE_EQ(sink_rate(on_sink, 0.0), 1.0);
    EXPECT_TRUE(std::isnan(sink_rate({})));
    EXPECT_DOUBLE_EQ(sink_rate({std::nan(""), 0.5}), 0.5);
}

TEST(SinkMeasures, SecondarySinkFoundWhereItWasPlanted) {
    const int keys = 12, heads = 4;
    std::vector<int> positions(keys);
    for (int t = 0; t < keys; ++t)
        positions[t] = t;
    std::vector<std::vector<double>> by_head;
    for (int h = 0; h < heads; ++h) {
        // each row: 0.4 on token 5 (heads 0..2, rows t >= 5), the rest spread evenly
        std::vector<float> rows(keys * keys, 0.0f);
        for (int t = 0; t < keys; ++t) {
            const bool planted = h < 3 && t >= 5;
            for (int k = 0; k <= t; ++k)
                rows[t * keys + k] = planted ? (k == 5 ? 0.4f : 0.6f / t) : 1.0f / (t + 1);
        }
        by_head.push_back(mean_attention_by_key({rows.data(), positions.data(), keys, keys}));
    }
    const auto seeing = rows_seeing_each_key(positions.data(), keys, keys);
    const auto sinks = secondary_sinks(by_head, seeing, keys / 2, 2);
    ASSERT_EQ(sinks.size(), 1u);
    EXPECT_EQ(sinks[0].position, 5);
    EXPECT_EQ(sinks[0].heads, 3);
    EXPECT_NEAR(sinks[0].largest_mean, 0.4, 1e-7);
    // Seen by too few rows: the late keys are excluded however large their means.
    EXPECT_TRUE(secondary_sinks(by_head, seeing, keys + 1, 1).empty());
}

TEST(SinkMeasures, KeyGeometryEqualsAPlainLongDoubleComputation) {
    std::mt19937 rng(11);
    std::normal_distribution<float> normal;
    const int tokens = 30, d = 16;
    std::vector<float> keys(tokens * d), queries;
    for (auto& x : keys)
        x = normal(rng);
    for (int i = 0; i < d; ++i)
        keys[i] *= 0.05f;  // a small sink key, as Gu et al. find
    const std::vector<int> positions = {0, 1, 9, 29};
    for (std::size_t r = 0; r < positions.size() * d; ++r)
        queries.push_back(normal(rng));
    const KeyGeometry g = key_geometry(queries.data(), positions.data(), 4, keys.data(), tokens, d);
    std::vector<long double> norms;
    for (int j = 1; j < tokens; ++j) {
        long double s = 0;
        for (int i = 0; i < d; ++i)
            s += (long double)keys[j * d + i] * keys[j * d + i];
        norms.push_back(std::sqrt(s));
    }
    std::sort(norms.begin(), norms.end());  // 29 norms: the 15th is the median
    long double sink_norm = 0;
    for (int i = 0; i < d; ++i)
        sink_norm += (long double)keys[i] * keys[i];
    const double ratio = double(std::sqrt(sink_norm) / norms[14]);
    long double sink_cos = 0, rest_cos = 0;
    for (int r = 1; r < 4; ++r) {  // rows at t = 1, 9, 29
        const float* q = queries.data() + r * d;
        sink_cos += plain_cos(q, keys.data(), d);
        long double rest = 0;
        for (int j = 1; j <= positions[r]; ++j)
            rest += plain_cos(q, keys.data() + j * d, d);
        rest_cos += rest / positions[r];
    }
    const double differences[] = {std::fabs(g.key_norm_ratio - ratio),
                                  std::fabs(g.cos_query_sink - double(sink_cos / 3)),
                                  std::fabs(g.cos_query_rest - double(rest_cos / 3))};
    const double largest = *std::max_element(std::begin(differences), std::end(differences));
    std::printf("key-norm ratio %.4f; largest difference from long double: %.3g\n", ratio, largest);
    EXPECT_LT(largest, 1e-12);
    EXPECT_EQ(g.rows, 3);
    EXPECT_LT(g.key_norm_ratio, 0.2);
}

TEST(SinkMeasures, MassiveActivationFollowsSunEtAlsRule) {
    std::mt19937 rng(5);
    std::normal_distribution<float> normal;
    const int tokens = 32, dims = 64;
    std::vector<float> hidden(tokens * dims);
    for (auto& x : hidden)
        x = normal(rng);
    const MassiveActivation quiet = massive_activation(hidden.data(), tokens, dims);
    EXPECT_FALSE(quiet.massive);
    hidden[3 * dims + 7] = -5000.0f;
    const MassiveActivation m = massive_activation(hidden.data(), tokens, dims);
    std::vector<double> sorted;
    for (float x : hidden)
        sorted.push_back(std::fabs(double(x)));
    std::sort(sorted.begin(), sorted.end());
    const double plain_median = 0.5 * (sorted[sorted.size() / 2 - 1] + sorted[sorted.size() / 2]);
    std::printf("largest %.1f at (%d, %d), median %.4f (plain %.4f), ratio %.0f\n", m.largest,
                m.token, m.dim, m.median, plain_median, m.ratio);
    EXPECT_TRUE(m.massive);
    EXPECT_EQ(m.token, 3);
    EXPECT_EQ(m.dim, 7);
    EXPECT_EQ(m.largest, 5000.0);
    EXPECT_EQ(m.median, plain_median);
    EXPECT_DOUBLE_EQ(m.ratio, 5000.0 / plain_median);
    // Above 1000 x the median but not above 100: not massive by the rule.
    std::vector<float> small(hidden.size(), 0.001f);
    small[0] = 50.0f;
    EXPECT_FALSE(massive_activation(small.data(), tokens, dims).massive);
}

// The median of |h| is selected on the floats' bit patterns (a histogram of their top bits):
// against a sorted float64 copy, odd and even counts, ties, zeros of both signs and values
// that share a bucket, to the bit.
TEST(SinkMeasures, MedianOfMagnitudesEqualsASortedCopy) {
    std::mt19937 rng(11);
    std::normal_distribution<float> normal;
    int compared = 0;
    for (const auto& [tokens, dims] : std::vector<std::pair<int, int>>{
             {1, 1}, {1, 2}, {3, 5}, {7, 9}, {16, 64}, {33, 17}, {128, 512}}) {
        std::vector<float> hidden(static_cast<std::size_t>(tokens) * dims);
        for (std::size_t i = 0; i < hidden.size(); ++i) {
            switch (i % 5) {
                case 0:
                    hidden[i] = normal(rng);
                    break;
                case 1:
                    hidden[i] = 1.0f + 1e-6f * static_cast<float>(i % 7);
                    break;  // one bucket
                case 2:
                    hidden[i] = (i % 2 ? -0.0f : 0.0f);
                    break;
                case 3:
                    hidden[i] = -normal(rng) * 1e-30f;
                    break;
                default:
                    hidden[i] = static_cast<float>(i % 3);  // ties
            }
        }
        std::vector<double> sorted;
        for (float x : hidden)
            sorted.push_back(std::fabs(double(x)));
        std::sort(sorted.begin(), sorted.end());
        const std::size_t mid = sorted.size() / 2;
        const double plain =
            sorted.size() % 2 ? sorted[mid] : 0.5 * (sorted[mid] + sorted[mid - 1]);
        const MassiveActivation m = massive_activation(hidden.data(), tokens, dims);
        EXPECT_EQ(std::memcmp(&m.median, &plain, sizeof plain), 0)
            << tokens << "x" << dims << ": " << m.median << " vs " << plain;
        ++compared;
    }
    std::printf("median of |h| equal to a sorted copy's in %d shapes\n", compared);
}

TEST(SinkMeasures, MisuseIsRefused) {
    const int positions[] = {3, 2};
    const float alpha[8] = {};
    EXPECT_THROW(mean_attention_by_key({alpha, positions, 2, 4}), std::invalid_argument);
    const int outside[] = {4};
    EXPECT_THROW(mean_attention_by_key({alpha, outside, 1, 4}), std::invalid_argument);
    EXPECT_THROW(massive_activation(alpha, 0, 4), std::invalid_argument);
}

// The O(T·d) prefix-sum geometry against the plain per-row, per-key one (every row measured),
// including a zero query and a zero key.
TEST(SinkMeasures, KeyGeometryOfAllRowsEqualsThePlainPerKeyLoop) {
    std::mt19937 rng(43);
    std::normal_distribution<float> normal;
    const int T = 97, d = 16;
    std::vector<float> queries(T * d), keys(T * d);
    for (float& x : queries)
        x = normal(rng);
    for (float& x : keys)
        x = normal(rng);
    std::fill(queries.begin() + 5 * d, queries.begin() + 6 * d, 0.0f);
    std::fill(keys.begin() + 9 * d, keys.begin() + 10 * d, 0.0f);
    std::vector<int> positions(T);
    for (int t = 0; t < T; ++t)
        positions[t] = t;
    const KeyGeometry plain = key_geometry(queries.data(), positions.data(), T, keys.data(), T, d);
    const KeyGeometry fast = key_geometry_all_rows(queries.data(), keys.data(), T, d);
    const double largest = std::max({std::fabs(plain.key_norm_ratio - fast.key_norm_ratio),
                                     std::fabs(plain.cos_query_sink - fast.cos_query_sink),
                                     std::fabs(plain.cos_query_rest - fast.cos_query_rest)});
    std::printf("key geometry, all rows vs per key: largest difference %.3g\n", largest);
    EXPECT_LT(largest, 1e-12);
    EXPECT_EQ(plain.rows, fast.rows);
    EXPECT_EQ(fast.rows, T - 1);
}

// layer_sinks turns the forward's column sums into α(k) (every row t ≥ k measured), reads each
// query head's key head under GQA, and finds the planted massive activation.
TEST(SinkMeasures, LayerSinksFromTheForwardsInputs) {
    std::mt19937 rng(7);
    std::normal_distribution<float> normal;
    const int H = 4, Hkv = 2, T = 33, d = 8, hidden = 12;
    std::vector<int> positions(T);
    for (int t = 0; t < T; ++t)
        positions[t] = t;
    std::vector<float> rows;
    std::vector<double> sums(H * T, 0.0);
    for (int h = 0; h < H; ++h) {
        const std::vector<float> head = random_rows(rng, positions, T, h == 1 ? 4.0 : 0.0);
        for (int t = 0; t < T; ++t)
            for (int k = 0; k < T; ++k)
                sums[h * T + k] += head[t * T + k];
        rows.insert(rows.end(), head.begin(), head.end());
    }
    std::vector<float> queries(H * T * d), keys(Hkv * T * d), states(T * hidden);
    for (float& x : queries)
        x = normal(rng);
    for (float& x : keys)
        x = normal(rng);
    for (float& x : states)
        x = normal(rng);
    states[17 * hidden + 3] = -5000.0f;
    SinkInputs in{sums.data(), queries.data(), keys.data(), states.data(), H, Hkv, T, d, hidden};
    const LayerSinks layer = layer_sinks(in);
    double largest = 0;
    for (int h = 0; h < H; ++h) {
        for (int k = 0; k < T; ++k)
            largest = std::max(
                largest,
                std::fabs(layer.mean_by_key[h * T + k] -
                          plain_mean_on_key(std::vector<float>(rows.begin() + h * T * T,
                                                               rows.begin() + (h + 1) * T * T),
                                            positions, T, k)));
        const KeyGeometry plain = key_geometry(queries.data() + h * T * d, positions.data(), T,
                                               keys.data() + (h / 2) * T * d, T, d);
        largest =
            std::max(largest, std::fabs(plain.cos_query_rest - layer.geometry[h].cos_query_rest));
        largest =
            std::max(largest, std::fabs(plain.key_norm_ratio - layer.geometry[h].key_norm_ratio));
    }
    std::printf("layer_sinks vs plain loops: largest difference %.3g\n", largest);
    EXPECT_LT(largest, 1e-9);
    EXPECT_GT(layer.sink_attention(1), kSinkThreshold);
    EXPECT_LT(layer.sink_attention(0), kSinkThreshold);
    EXPECT_TRUE(layer.massive.massive);
    EXPECT_EQ(layer.massive.token, 17);
    EXPECT_EQ(layer.massive.dim, 3);
}

// A window's secondary sinks: a key planted in enough heads of two layers is found, the most
// shared first; a key past T/2 (seen by too few rows) and one in a single head are not.
TEST(SinkMeasures, WindowSecondarySinksKeepTheMostSharedKeysSeenByHalfTheRows) {
    const int H = 2, T = 20;
    std::vector<LayerSinks> layers(2);
    for (LayerSinks& layer : layers) {
        layer.mean_by_key.assign(H * T, 0.01);
        layer.geometry.resize(H);
    }
    for (int l = 0; l < 2; ++l)
        for (int h = 0; h < H; ++h)
            layers[l].mean_by_key[h * T + 4] = 0.5;                                    // 4 heads
    layers[0].mean_by_key[0 * T + 7] = 0.6, layers[1].mean_by_key[1 * T + 7] = 0.7;    // 2 heads
    layers[0].mean_by_key[0 * T + 15] = 0.9, layers[1].mean_by_key[0 * T + 15] = 0.9;  // k > T/2
    layers[1].mean_by_key[1 * T + 2] = 0.9;                                            // 1 head
    EXPECT_EQ(secondary_min_heads(4), 2);
    EXPECT_EQ(secondary_min_heads(64), 4);
    const std::vector<SecondarySink> sinks = window_secondary_sinks(layers, T, 4);
    ASSERT_EQ(sinks.size(), 2u);
    EXPECT_EQ(sinks[0].position, 4);
    EXPECT_EQ(sinks[0].heads, 4);
    EXPECT_EQ(sinks[1].position, 7);
    EXPECT_DOUBLE_EQ(sinks[1].largest_mean, 0.7);
    EXPECT_EQ(window_secondary_sinks(layers, T, 1).size(), 1u);
}
