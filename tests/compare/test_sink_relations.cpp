// compare's sink relations (issue 43): the correlation across heads of the literature's sink
// measures with R(r_min, N), λ and ρ0 against a plain Pearson loop, a planted relation found, and
// the head-level intervals calibrated: under independence, a family excludes 0 anywhere in about
// 5 % of replications, however many N it spans.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>

#include "compare/sink_relations.hpp"

using namespace attngeo::compare;

namespace {

// D documents of L layers × H heads, S sizes; every array drawn independently (the null), except
// that `planted` > 0 ties each head's recall to its sink attention.
PerDocArrays random_arrays(std::mt19937& rng, double planted) {
    const int D = 3, L = 4, H = 8;
    PerDocArrays a;
    a.docs = D, a.layers = L, a.heads = H;
    a.sizes = {1, 2, 4, 8};
    const std::size_t S = a.sizes.size(), units = L * H;
    std::uniform_real_distribution<float> unit(0.0f, 1.0f);
    std::vector<float> head_sink(units);
    for (float& x : head_sink)
        x = unit(rng);
    for (int d = 0; d < D; ++d)
        for (std::size_t h = 0; h < units; ++h) {
            const float sink = std::min(1.0f, head_sink[h] + 0.1f * unit(rng));
            a.sink_attention.push_back(sink);
            a.key_norm_ratio.push_back(unit(rng));
            a.rho0.push_back(unit(rng));
            a.lambda.push_back(unit(rng));
            for (std::size_t s = 0; s < S; ++s)
                a.R.push_back(static_cast<float>(planted * sink + unit(rng)));
        }
    return a;
}

double plain_pearson(const std::vector<double>& x, const std::vector<double>& y) {
    double mx = 0, my = 0;
    for (std::size_t i = 0; i < x.size(); ++i)
        mx += x[i], my += y[i];
    mx /= x.size(), my /= y.size();
    double sxy = 0, sxx = 0, syy = 0;
    for (std::size_t i = 0; i < x.size(); ++i)
        sxy += (x[i] - mx) * (y[i] - my), sxx += (x[i] - mx) * (x[i] - mx),
            syy += (y[i] - my) * (y[i] - my);
    return sxy / std::sqrt(sxx * syy);
}

}  // namespace

TEST(SinkRelations, CorrelationsEqualAPlainLoopAndFindAPlantedRelation) {
    std::mt19937 rng(11);
    const PerDocArrays a = random_arrays(rng, 3.0);
    const auto rows = sink_relations(a, 1, 5);
    ASSERT_EQ(rows.size(), 2u * (a.sizes.size() + 2));
    const std::size_t units = a.layers * a.heads, S = a.sizes.size();
    std::vector<double> ratio(units, 0), lambda(units, 0), share(units, 0);
    for (int d = 0; d < a.docs; ++d)
        for (std::size_t h = 0; h < units; ++h) {
            ratio[h] += static_cast<double>(a.key_norm_ratio[d * units + h]) / a.docs;
            lambda[h] += static_cast<double>(a.lambda[d * units + h]) / a.docs;
            share[h] += (a.sink_attention[d * units + h] > 0.3 ? 1.0 : 0.0) / a.docs;
        }
    double largest = 0;
    for (std::size_t s = 0; s < S; ++s) {
        std::vector<double> recall(units, 0);
        for (int d = 0; d < a.docs; ++d)
            for (std::size_t h = 0; h < units; ++h)
                recall[h] += static_cast<double>(a.R[(d * units + h) * S + s]) / a.docs;
        EXPECT_EQ(rows[s].measure, "sink_rate");
        EXPECT_EQ(rows[s].N, a.sizes[s]);
        largest = std::max(largest, std::fabs(rows[s].corr - plain_pearson(share, recall)));
        EXPECT_GT(rows[s].head_lo, 0) << "the planted relation at N = " << a.sizes[s];
    }
    const SinkRelationRow& ratio_lambda = rows[S + 2 + S];
    EXPECT_EQ(ratio_lambda.measure, "key_norm_ratio");
    EXPECT_EQ(ratio_lambda.quantity, "lambda");
    largest = std::max(largest, std::fabs(ratio_lambda.corr - plain_pearson(ratio, lambda)));
    std::printf("sink relations vs plain Pearson: largest difference %.3g\n", largest);
    EXPECT_LT(largest, 1e-12);
}

TEST(SinkRelations, HeadLevelIntervalsExcludeZeroInAboutFivePercentUnderIndependence) {
    std::mt19937 rng(2026);
    const int replications = 200;
    int recall_alarms = 0, lambda_alarms = 0;
    for (int r = 0; r < replications; ++r) {
        const auto rows = sink_relations(random_arrays(rng, 0.0), 1, 1000 + r);
        bool any = false;
        for (std::size_t s = 0; s < 4; ++s)
            any = any || rows[s].head_lo > 0 || rows[s].head_hi < 0;
        recall_alarms += any;
        lambda_alarms += rows[4].head_lo > 0 || rows[4].head_hi < 0;
    }
    const double recall_rate = static_cast<double>(recall_alarms) / replications,
                 lambda_rate = static_cast<double>(lambda_alarms) / replications;
    std::printf("false alarms under independence: recall family %.3f, lambda %.3f (nominal 0.05)\n",
                recall_rate, lambda_rate);
    // 0.05 + 3.5 binomial standard deviations at n = 200.
    EXPECT_LT(recall_rate, 0.104);
    EXPECT_LT(lambda_rate, 0.104);
}

TEST(SinkRelations, NoRowsWithoutSinkMeasures) {
    std::mt19937 rng(3);
    PerDocArrays a = random_arrays(rng, 0.0);
    a.sink_attention.assign(a.sink_attention.size(), std::nanf(""));
    EXPECT_TRUE(sink_relations(a, 1, 1).empty());
    a.sink_attention.clear();
    EXPECT_TRUE(sink_relations(a, 1, 1).empty());
}
