// The claims' rules (compare/claims), the head-level correlation intervals they read (calibrated
// on planted truths: no link → family-wise false alarms within 5 %, a link → simultaneous
// coverage), the regime labels' bootstrap stability and C4's argmax, each against a plain
// recomputation.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <random>

#include "compare/bootstrap.hpp"
#include "compare/claims.hpp"
#include "compare/correlation.hpp"
#include "compare/max_correlation_test.hpp"
#include "compare/regime_rules.hpp"
#include "compare/separability_peak.hpp"

using namespace attngeo::compare;
namespace th = attngeo::theory;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// ---- C1 ---------------------------------------------------------------------------------------

KappaScan scan_with(std::array<SideState, 4> states, double share) {
    KappaScan scan;
    for (int i = 0; i < 4; ++i) {
        scan.sides[i].metric = i < 2 ? ScanMetric::P : ScanMetric::R;
        scan.sides[i].side = i % 2 == 0 ? ScanSide::lower : ScanSide::upper;
        scan.sides[i].state = states[i];
    }
    scan.information_share = share;
    return scan;
}

TEST(Claims, EnvelopesFollowTheSidesStatesAndTheInformationShare) {
    using S = SideState;
    const auto paper = th::BoundVariant::paper;
    auto answer = [&](std::array<SideState, 4> states, double share) {
        return envelopes_claim(paper, scan_with(states, share), "1000 trials").answer;
    };
    EXPECT_EQ(answer({S::holds, S::holds, S::holds, S::holds}, 0.6), Answer::yes);
    // Too little ruled out, or a metric without an informative side: holds but says little.
    EXPECT_EQ(answer({S::holds, S::holds, S::holds, S::holds}, 0.4), Answer::cant_tell);
    EXPECT_EQ(
        answer({S::holds, S::holds_uninformative, S::holds_uninformative, S::holds_uninformative},
               0.9),
        Answer::cant_tell);
    EXPECT_EQ(answer({S::holds, S::untestable, S::holds, S::holds}, 0.9), Answer::cant_tell);
    for (S failing : {S::falsified_every_kappa, S::kappa_free_falsified,
                      S::contradicted_by_construction, S::falsified_at_given_kappa})
        EXPECT_EQ(answer({S::holds, failing, S::holds, S::holds}, 0.9), Answer::no)
            << to_string(failing);
    KappaScan demo = scan_with({S::holds_uninformative, S::falsified_every_kappa,
                                S::holds_uninformative, S::falsified_every_kappa},
                               0.2);
    demo.sides[1].persistent_sizes = {3, 4};
    demo.sides[1].worst.z = 47.6;
    const ClaimRow row = envelopes_claim(paper, demo, "1000 trials");
    EXPECT_EQ(row.detail.find("P upper falsified-every-kappa at N = 3;4 (worst z = 47.6)"), 0u)
        << row.detail;
    EXPECT_EQ(row.variant, "paper");
    EXPECT_DOUBLE_EQ(row.value, 0.2);
}

// ---- C2 ---------------------------------------------------------------------------------------

CorrelationRow corr_row(int N, double r, double lo, double hi, int heads = 16) {
    CorrelationRow row;
    row.N = N, row.heads = heads, row.corr = r, row.head_lo = lo, row.head_hi = hi;
    row.ci_lo = row.ci_hi = row.partial = row.partial_lo = row.partial_hi = kNaN;
    return row;
}

TEST(Claims, SinkRecallReadsTheSignWhereTheHeadLevelIntervalExcludesZero) {
    const CorrelationRow undefined = corr_row(1, kNaN, kNaN, kNaN);
    auto answer = [&](std::vector<CorrelationRow> rows) {
        rows.insert(rows.begin(), undefined);  // N = 1: R = 1 for every head
        return sink_recall_claim(rows, "16 heads").answer;
    };
    EXPECT_EQ(answer({corr_row(2, 0.7, 0.2, 0.9), corr_row(4, 0.3, -0.2, 0.6)}), Answer::yes);
    EXPECT_EQ(answer({corr_row(2, -0.7, -0.9, -0.2), corr_row(4, 0.3, -0.2, 0.6)}), Answer::no);
    EXPECT_EQ(answer({corr_row(2, -0.1, -0.5, 0.4), corr_row(4, 0.3, -0.2, 0.6)}), Answer::no);
    EXPECT_EQ(answer({corr_row(2, -0.7, -0.9, -0.2), corr_row(4, 0.7, 0.2, 0.9)}),
              Answer::cant_tell);
    EXPECT_EQ(answer({corr_row(2, 0.9, 0.5, 0.99, 9)}), Answer::cant_tell);  // 9 heads
    const ClaimRow row = sink_recall_claim(
        {undefined, corr_row(2, -0.75, -0.91, -0.4), corr_row(32, -0.2, -0.6, 0.3)}, "16 heads");
    EXPECT_DOUBLE_EQ(row.value, -0.75);
    EXPECT_DOUBLE_EQ(row.ci_lo, -0.91);
    EXPECT_NE(row.quantity.find("N = 2"), std::string::npos);
    EXPECT_NE(row.detail.find("excludes 0 at 1 of 2 N"), std::string::npos) << row.detail;
}

// Units in `layers` layers whose R at S sizes (correlated across N like a real curve) and ρ0 are
// drawn with correlation `rho` between ρ0 and every R; per-document values scatter around them.
PerDocArrays planted_units(std::mt19937_64& rng, int layers, int heads, int S, double rho) {
    PerDocArrays a;
    a.docs = 4, a.layers = layers, a.heads = heads;
    for (int s = 0; s < S; ++s)
        a.sizes.push_back(s + 2);
    const int H = layers * heads;
    std::normal_distribution<double> z;
    std::vector<double> y(H);
    std::vector<std::vector<double>> x(H, std::vector<double>(S));
    for (int h = 0; h < H; ++h) {
        y[h] = z(rng);
        double walk = z(rng);  // AR(1) across N: neighbouring N share most of their error
        for (int s = 0; s < S; ++s) {
            walk = 0.95 * walk + std::sqrt(1 - 0.95 * 0.95) * z(rng);
            x[h][s] = rho * y[h] + std::sqrt(1 - rho * rho) * walk;
        }
    }
    for (int d = 0; d < a.docs; ++d)
        for (int h = 0; h < H; ++h) {
            a.rho0.push_back(static_cast<float>(y[h] + 0.01 * z(rng)));
            for (int s = 0; s < S; ++s)
                a.R.push_back(static_cast<float>(x[h][s] + 0.01 * z(rng)));
        }
    return a;
}

// No link: the share of runs where some N's simultaneous interval excludes 0 must stay within
// 5 % (plus its sampling error); a planted link of 0.5 is covered at every N at once in ≥ 95 %.
TEST(Claims, HeadLevelIntervalsAreSimultaneousOverN) {
    std::mt19937_64 rng(2026);
    const int runs = 600, S = 24;
    int false_alarms = 0, partial_alarms = 0, covered = 0;
    for (int run = 0; run < runs; ++run) {
        const auto null_rows = recall_rho0_correlation(planted_units(rng, 4, 8, S, 0.0), 0, 1);
        bool alarm = false, partial = false;
        for (const CorrelationRow& r : null_rows) {
            alarm = alarm || r.head_lo > 0 || r.head_hi < 0;
            partial = partial || r.partial_lo > 0 || r.partial_hi < 0;
        }
        false_alarms += alarm;
        partial_alarms += partial;
        const auto linked = recall_rho0_correlation(planted_units(rng, 4, 8, S, 0.5), 0, 1);
        bool all_cover = true;
        for (const CorrelationRow& r : linked)
            all_cover = all_cover && r.head_lo <= 0.5 && 0.5 <= r.head_hi;
        covered += all_cover;
    }
    const double rate = double(false_alarms) / runs, partial_rate = double(partial_alarms) / runs;
    const double coverage = double(covered) / runs;
    const double slack = 2 * std::sqrt(0.05 * 0.95 / runs);
    std::cout << "family-wise false alarms over " << S << " N: " << rate << " (partial "
              << partial_rate << "); simultaneous coverage of a planted 0.5: " << coverage
              << " over " << runs << " runs\n";
    EXPECT_LE(rate, 0.05 + slack);
    EXPECT_LE(partial_rate, 0.05 + slack);
    // Coverage off the null rests on Fisher's approximation of atanh r (the half-width is the
    // permutation null's): nominal within three standard errors of the estimate.
    EXPECT_GE(coverage, 0.95 - 1.5 * slack);
}

// Few units and N whose tests are independent: with 12 units and 40 independent N, "some N
// excludes 0" must stay within 5 % (Fisher's normal approximation with Bonferroni gave about
// twice its nominal level per test this far in the tail).
TEST(Claims, HeadLevelIntervalsHoldTheirLevelWithFewUnitsAndIndependentN) {
    std::mt19937_64 rng(77);
    std::normal_distribution<double> z;
    const int runs = 1000, units = 12, S = 40;
    int alarms = 0;
    for (int run = 0; run < runs; ++run) {
        PerDocArrays a;
        a.docs = 1, a.layers = 1, a.heads = units;
        for (int s = 0; s < S; ++s)
            a.sizes.push_back(s + 2);
        for (int h = 0; h < units; ++h) {
            a.rho0.push_back(static_cast<float>(z(rng)));
            for (int s = 0; s < S; ++s)
                a.R.push_back(static_cast<float>(z(rng)));
        }
        bool alarm = false;
        for (const CorrelationRow& r : recall_rho0_correlation(a, 0, 1))
            alarm = alarm || r.head_lo > 0 || r.head_hi < 0;
        alarms += alarm;
    }
    const double rate = double(alarms) / runs;
    std::cout << "family-wise false alarms, " << units << " units, " << S
              << " independent N: " << rate << " over " << runs << " runs\n";
    EXPECT_LE(rate, 0.05 + 2 * std::sqrt(0.05 * 0.95 / runs));
}

// The critical |r| against a plain permutation loop written here, and the interval against its
// definition.
TEST(Claims, MaxCorrelationCriticalEqualsAPlainPermutationLoop) {
    std::mt19937_64 rng(3);
    std::normal_distribution<double> z;
    const int units = 14, S = 5, B = 999;
    std::vector<std::vector<double>> x(S, std::vector<double>(units));
    std::vector<double> y(units);
    std::vector<int> layer(units);
    for (int u = 0; u < units; ++u) {
        y[u] = z(rng) + (u < 7 ? 3 : 0);
        layer[u] = u < 7 ? 0 : 1;
        for (int s = 0; s < S; ++s)
            x[s][u] = z(rng) + s * 0.1 * u;
    }
    for (bool by_layer : {false, true}) {
        const std::vector<int> strata = by_layer ? layer : std::vector<int>(units, 0);
        // The plain loop: Pearson of x_s and y permuted within the strata, its residuals given
        // the strata for the partial, by the same Fisher–Yates stream.
        std::vector<double> maxima;
        const std::uint64_t key = attngeo::SplitMix64(11).next();
        for (int b = 0; b < B; ++b) {
            attngeo::SplitMix64 draw(attngeo::SplitMix64(key + b).next());
            std::vector<double> permuted = y;
            for (int g = 0; g < (by_layer ? 2 : 1); ++g) {
                std::vector<int> members;
                for (int u = 0; u < units; ++u)
                    if (strata[u] == g) members.push_back(u);
                for (std::size_t i = members.size(); i > 1; --i)
                    std::swap(permuted[members[i - 1]], permuted[members[draw.below(i)]]);
            }
            double largest = 0;
            for (int s = 0; s < S; ++s)
                largest = std::max(largest,
                                   std::abs(by_layer ? partial_correlation(x[s], permuted, strata)
                                                     : pearson(x[s], permuted)));
            maxima.push_back(largest);
        }
        std::sort(maxima.rbegin(), maxima.rend());
        const double expected = maxima[49];  // ⌊0.05 · 1000⌋ = 50th largest
        const double got = max_abs_correlation_critical(x, y, strata, B, 11);
        std::cout << (by_layer ? "partial" : "plain") << " critical |r| " << got << ", plain loop "
                  << expected << "\n";
        EXPECT_NEAR(got, expected, 1e-12);
    }
    const double critical = 0.6;
    const auto [lo, hi] = critical_interval(0.5, critical);
    EXPECT_NEAR(lo, std::tanh(std::atanh(0.5) - std::atanh(critical)), 1e-15);
    EXPECT_NEAR(hi, std::tanh(std::atanh(0.5) + std::atanh(critical)), 1e-15);
    EXPECT_NEAR(critical_interval(critical, critical).first, 0, 1e-15);  // |r| = c: on 0
    EXPECT_EQ(critical_interval(0.5, 1).first, -1);
    EXPECT_TRUE(std::isnan(critical_interval(std::nan(""), 0.5).first));
}

// The partial correlation against its definition.
TEST(Claims, PartialCorrelationIsThatOfTheWithinLayerResiduals) {
    // Two layers whose means differ in both x and y: the plain correlation is large, the one
    // within layers is that of the within-layer residuals, computed here by hand.
    const std::vector<double> x = {1, 2, 3, 11, 12, 13.5}, y = {0.1, 0.3, 0.2, 5.2, 5.0, 5.3};
    const std::vector<int> layer = {0, 0, 0, 1, 1, 1};
    const std::vector<double> rx = {
        -1, 0, 1, -1.1666666666666667, -0.16666666666666667, 1.3333333333333333};
    const std::vector<double> ry = {
        -0.1, 0.1, 0, 0.033333333333333, -0.166666666666667, 0.133333333333333};
    EXPECT_GT(pearson(x, y), 0.98);
    EXPECT_NEAR(partial_correlation(x, y, layer), pearson(rx, ry), 1e-12);
}

// ---- C3 ---------------------------------------------------------------------------------------

RegimeLabels labels_with(const std::vector<std::pair<th::HeadRegime, double>>& heads) {
    RegimeLabels labels;
    labels.replicates = 200;
    for (const auto& [regime, stability] : heads) {
        HeadLabels h;
        h.magnitudes = regime;
        h.wording = th::WordedRegime::none;
        h.stability = stability;
        h.stability_wording = 1;
        labels.heads.push_back(h);
    }
    return labels;
}

TEST(Claims, RegimesNeedFiveStableHeadsInEveryRegime) {
    using R = th::HeadRegime;
    std::vector<std::pair<R, double>> heads;
    for (R regime : th::kHeadRegimes)
        for (int i = 0; i < 5; ++i)
            heads.push_back({regime, 0.9});
    EXPECT_EQ(regimes_claims(labels_with(heads), "15 heads")[0].answer, Answer::yes);
    heads[0].second = 0.7;  // one Retriever unstable: four left
    auto rows = regimes_claims(labels_with(heads), "15 heads");
    EXPECT_EQ(rows[0].answer, Answer::cant_tell);
    EXPECT_DOUBLE_EQ(rows[0].value, 4);
    // The worded rule matched nothing: "no" needs ≥ 30 heads, so 15 heads can't tell.
    EXPECT_EQ(rows[1].answer, Answer::cant_tell);
    EXPECT_NE(rows[1].detail.find("15 heads match no worded regime"), std::string::npos);
    std::vector<std::pair<R, double>> many(30, {R::mixer, 1.0});
    rows = regimes_claims(labels_with(many), "30 heads");
    EXPECT_EQ(rows[0].answer, Answer::no);
    RegimeLabels unboot = labels_with(many);
    unboot.replicates = 0;
    EXPECT_EQ(regimes_claims(unboot, "30 heads")[0].answer, Answer::cant_tell);
}

// Heads with per-document magnitudes and cosine curves drawn around planted means.
struct PlantedHeads {
    attngeo::compare::EmpiricalRun run;
    PerDocArrays arrays;
};

PlantedHeads planted_heads(std::mt19937_64& rng, int docs, double noise) {
    PlantedHeads p;
    const int layers = 2, heads = 6, S = 6, n = 64;
    p.run.layers = layers, p.run.heads = heads, p.run.context = n;
    p.arrays.docs = docs, p.arrays.layers = layers, p.arrays.heads = heads;
    p.arrays.sizes = {1, 2, 4, 8, 32, 63};
    p.run.sizes = p.arrays.sizes;
    std::uniform_real_distribution<double> u(0.1, 1.0);
    std::normal_distribution<double> z;
    const int H = layers * heads;
    std::vector<std::array<double, 3>> m(H);
    std::vector<std::vector<double>> v0(H, std::vector<double>(S)), vL(H, std::vector<double>(S));
    for (int h = 0; h < H; ++h) {
        m[h] = {u(rng), u(rng), u(rng)};
        for (int s = 0; s < S; ++s)
            v0[h][s] = u(rng), vL[h][s] = u(rng);
    }
    auto jitter = [&](double x) { return static_cast<float>(x + noise * z(rng)); };
    p.run.rows.resize(H);
    for (int d = 0; d < docs; ++d)
        for (int h = 0; h < H; ++h) {
            p.arrays.m_sink.push_back(jitter(m[h][0]));
            p.arrays.m_last.push_back(jitter(m[h][1]));
            p.arrays.m_rest.push_back(jitter(m[h][2]));
            for (int s = 0; s < S; ++s) {
                p.arrays.cos_s_v0.push_back(jitter(v0[h][s]));
                p.arrays.cos_s_vL.push_back(jitter(vL[h][s]));
            }
        }
    // heads.csv's magnitudes: the float means, as extract's exact sums give them.
    for (int h = 0; h < H; ++h) {
        double ms = 0, ml = 0, mr = 0;
        for (int d = 0; d < docs; ++d) {
            ms += p.arrays.m_sink[d * H + h];
            ml += p.arrays.m_last[d * H + h];
            mr += p.arrays.m_rest[d * H + h];
        }
        auto& row = p.run.rows[h];
        row.layer = h / heads, row.head = h % heads;
        row.m_sink = ms / docs, row.m_last = ml / docs, row.m_rest = mr / docs;
        row.regime = th::classify_head(row.m_sink, row.m_last, row.m_rest);
    }
    return p;
}

// The stability of every head against a plain loop: each replicate's resampled means relabelled
// by both rules and compared with the point label.
TEST(Claims, RegimeStabilityEqualsAPlainBootstrapLoop) {
    std::mt19937_64 rng(11);
    const PlantedHeads p = planted_heads(rng, 12, 0.15);
    const int B = 150;
    const RegimeLabels labels = label_heads(p.run, p.arrays, B, 5, 2);
    const int H = 12, S = 6, D = 12;
    double largest = 0;
    for (int h = 0; h < H; ++h) {
        std::vector<double> v0(S), vL(S);
        for (int s = 0; s < S; ++s) {
            for (int d = 0; d < D; ++d) {
                v0[s] += p.arrays.cos_s_v0[(d * H + h) * S + s] / D;
                vL[s] += p.arrays.cos_s_vL[(d * H + h) * S + s] / D;
            }
        }
        const auto& row = p.run.rows[h];
        const th::WordedRegime point = th::classify_head_by_wording(
            row.m_sink, row.m_last, row.m_rest, p.arrays.sizes, v0, vL, 64);
        ASSERT_EQ(labels.heads[h].wording, point);
        int kept = 0, kept_wording = 0;
        for (int r = 0; r < B; ++r) {
            const std::vector<double> w = resample_counts(5, r, D);
            double total = 0, ms = 0, ml = 0, mr = 0;
            std::vector<double> c0(S), cL(S);
            for (int d = 0; d < D; ++d) {
                total += w[d];
                ms += w[d] * p.arrays.m_sink[d * H + h];
                ml += w[d] * p.arrays.m_last[d * H + h];
                mr += w[d] * p.arrays.m_rest[d * H + h];
                for (int s = 0; s < S; ++s) {
                    c0[s] += w[d] * p.arrays.cos_s_v0[(d * H + h) * S + s];
                    cL[s] += w[d] * p.arrays.cos_s_vL[(d * H + h) * S + s];
                }
            }
            for (int s = 0; s < S; ++s)
                c0[s] /= total, cL[s] /= total;
            kept += th::classify_head(ms / total, ml / total, mr / total) == row.regime;
            kept_wording += th::classify_head_by_wording(ms / total, ml / total, mr / total,
                                                         p.arrays.sizes, c0, cL, 64) == point;
        }
        largest =
            std::max({largest, std::abs(labels.heads[h].stability - double(kept) / B),
                      std::abs(labels.heads[h].stability_wording - double(kept_wording) / B)});
    }
    std::cout << "largest stability difference from the plain loop: " << largest << "\n";
    EXPECT_EQ(largest, 0);
    // Without noise every label is kept; one document gives no bootstrap.
    std::mt19937_64 again(11);
    const PlantedHeads exact = planted_heads(again, 12, 0.0);
    for (const HeadLabels& h : label_heads(exact.run, exact.arrays, 50, 5, 1).heads)
        EXPECT_EQ(h.stability, 1.0);
    std::mt19937_64 single(3);
    const PlantedHeads one = planted_heads(single, 1, 0.1);
    const RegimeLabels none = label_heads(one.run, one.arrays, 50, 5, 1);
    EXPECT_EQ(none.replicates, 0);
    EXPECT_TRUE(std::isnan(none.heads[0].stability));
}

// ---- C4 ---------------------------------------------------------------------------------------

TEST(Claims, TheSeparabilityPeakSkipsTheIdentityAndTheConventionAndMatchesAPlainLoop) {
    PerDocArrays a;
    a.docs = 10, a.layers = 1, a.heads = 3;
    a.sizes = {1, 2, 3, 4, 6, 8};  // n = 8: N = 1 and N = 8 are left out
    std::mt19937_64 rng(4);
    std::normal_distribution<double> z;
    // F(r_max) near its floor 2x/(1 + x) at N = 6 (0.857), well above it at N = 2, 3, 4.
    const double shape[] = {1.0, 0.8, 0.83, 0.81, 0.86, 1.0};
    for (int d = 0; d < a.docs; ++d)
        for (int h = 0; h < 3; ++h)
            for (int s = 0; s < 6; ++s) {
                a.Fmax.push_back(static_cast<float>(shape[s] + 0.05 * z(rng)));
                a.Fmin.push_back(static_cast<float>(0.5 + 0.01 * s));
            }
    const auto peaks = separability_peaks(a, 8, 300, 9, 2);
    // The plain loop: means per N, argmax over 2 ≤ N < 8, again per replicate.
    auto argmax = [&](const std::vector<double>& w) {
        int best = -1;
        double best_mean = 0;
        for (int s = 0; s < 6; ++s) {
            if (a.sizes[s] < 2 || a.sizes[s] >= 8) continue;
            double sum = 0, total = 0;
            for (int d = 0; d < a.docs; ++d)
                for (int h = 0; h < 3; ++h)
                    sum += w[d] * a.Fmax[(d * 3 + h) * 6 + s], total += w[d];
            // The share above F(r_max)'s floor 2x/(1 + x), x = N/n.
            const double x = a.sizes[s] / 8.0, floor = 2 * x / (1 + x);
            const double share = (sum / total - floor) / (1 - floor);
            if (best < 0 || share > best_mean) best = s, best_mean = share;
        }
        return a.sizes[best];
    };
    EXPECT_EQ(peaks[0].N, argmax(std::vector<double>(10, 1.0)));
    std::vector<double> draws;
    for (int r = 0; r < 300; ++r)
        draws.push_back(argmax(resample_counts(9, r, 10)));
    EXPECT_DOUBLE_EQ(peaks[0].lo, percentile_type7(draws, 0.025));
    EXPECT_DOUBLE_EQ(peaks[0].hi, percentile_type7(draws, 0.975));
    EXPECT_EQ(peaks[1].N, 6);  // F(r_min) rises with N: the last N before n
    std::cout << "F(r_max) peak N = " << peaks[0].N << " [" << peaks[0].lo << ", " << peaks[0].hi
              << "]\n";
    EXPECT_EQ(separability_claim(peaks[1], 8, "3 heads").answer, Answer::no);  // 6 > 0.8
    auto peak = [](double lo, double hi) {
        SeparabilityPeak p;
        p.metric = "F(r_max)";
        p.N = 2, p.value = 0.9, p.share = 0.8, p.lo = lo, p.hi = hi;
        p.replicates = std::isnan(lo) ? 0 : 100;
        return p;
    };
    EXPECT_EQ(separability_claim(peak(2, 3), 128, "x").answer, Answer::yes);
    EXPECT_EQ(separability_claim(peak(2, 20), 128, "x").answer, Answer::cant_tell);
    EXPECT_EQ(separability_claim(peak(kNaN, kNaN), 128, "x").answer, Answer::cant_tell);
    // The floor: P(r_max, N) ≥ N/n, so F(r_max) ≥ f(N/n); F(r_min) has none.
    EXPECT_DOUBLE_EQ(separability_floor("F(r_max)", 32, 64), 2 * 0.5 / 1.5);
    EXPECT_EQ(separability_floor("F(r_min)", 32, 64), 0);
}

// ---- C5, C6 and the file ------------------------------------------------------------------------

TEST(Claims, AssumptionsAnswerByTheClopperPearsonIntervalOfTheShare) {
    std::vector<th::AssumptionCheck> checks(20);
    std::vector<char> counted(20, 1);
    for (int i = 0; i < 20; ++i) {
        checks[i].a1 = i < 19;  // 19 of 20: CP lower 0.75 > 0.5
        checks[i].a2 = i < 10;  // 10 of 20: straddles 0.5
        checks[i].a3 = false;   // 0 of 20
    }
    const auto rows = assumption_claims(checks, counted);
    ASSERT_EQ(rows.size(), 3u);
    EXPECT_EQ(rows[0].answer, Answer::yes);
    EXPECT_EQ(rows[1].answer, Answer::cant_tell);
    EXPECT_EQ(rows[2].answer, Answer::no);
    const auto [lo, hi] = clopper_pearson(19, 20);
    EXPECT_DOUBLE_EQ(rows[0].ci_lo, lo);
    EXPECT_DOUBLE_EQ(rows[0].ci_hi, hi);
    EXPECT_NEAR(lo, 0.75127, 1e-5);  // the textbook value for 19 of 20
    counted.assign(20, 0);
    counted[0] = 1;  // A1, A2 count value-state heads only; A3 every head
    const auto one = assumption_claims(checks, counted);
    EXPECT_EQ(one[0].units, "1 value-state heads");
    EXPECT_EQ(one[2].units, "20 heads");
}

TEST(Claims, TruncationLinkNeedsASurvivorOfHolm) {
    nlohmann::json summary = nlohmann::json::array();
    auto entry = [](nlohmann::json best, double lo, double hi) {
        return nlohmann::json{{"policy", "attn"},
                              {"renorm", "no"},
                              {"best_predictor", best},
                              {"heads", 16},
                              {"tests", 40},
                              {"tests_excluding_zero", best.is_null() ? 0 : 1},
                              {"strongest",
                               {{"quantity", "rho0"},
                                {"N", 2},
                                {"spearman", (lo + hi) / 2},
                                {"p_holm", 0.2},
                                {"adj_lo", lo},
                                {"adj_hi", hi}}}};
    };
    summary.push_back(entry(nullptr, -0.9, 0.3));
    summary.push_back(entry("rho0", 0.1, 0.9));
    summary.push_back(entry(nullptr, -0.2, 0.25));
    const auto rows = truncation_claims(summary);
    ASSERT_EQ(rows.size(), 3u);
    EXPECT_EQ(rows[0].answer, Answer::cant_tell);
    EXPECT_EQ(rows[1].answer, Answer::yes);
    EXPECT_EQ(rows[2].answer, Answer::no);
    EXPECT_EQ(rows[0].variant, "attn renorm no");
}

TEST(Claims, TheFileRefusesACommaInAText) {
    ClaimRow row;
    row.claim = "C2";
    row.detail = "fine; no comma";
    const std::string csv = claims_csv({row});
    EXPECT_EQ(csv.substr(0, csv.find('\n')),
              "claim,statement,variant,answer,quantity,value,ci_lo,ci_hi,units,rule,detail");
    EXPECT_NE(csv.find("C2,sink similarity correlates with Recall,,can't tell,,,,,,,fine; no "
                       "comma\n"),
              std::string::npos)
        << csv;
    row.detail = "a, b";
    EXPECT_THROW(claims_csv({row}), std::domain_error);
    row.claim = "C9";
    row.detail = "";
    EXPECT_THROW(claims_csv({row}), std::domain_error);
}

}  // namespace
