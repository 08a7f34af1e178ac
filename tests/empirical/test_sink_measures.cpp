// The sink measurements of the literature (empirical/extract/sink_measures, issue 43): each
// against a plain computation written another way (long double, full sorts, one key at a time)
// on random rows, and on planted cases whose answer is known: a sink head, a secondary sink,
// a massive activation.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
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

TEST(SinkMeasures, MisuseIsRefused) {
    const int positions[] = {3, 2};
    const float alpha[8] = {};
    EXPECT_THROW(mean_attention_by_key({alpha, positions, 2, 4}), std::invalid_argument);
    const int outside[] = {4};
    EXPECT_THROW(mean_attention_by_key({alpha, outside, 1, 4}), std::invalid_argument);
    EXPECT_THROW(massive_activation(alpha, 0, 4), std::invalid_argument);
}
