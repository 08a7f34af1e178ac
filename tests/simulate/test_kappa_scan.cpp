// Tests of the κ scan and the verdict (simulate/kappa_scan, SPEC §7) against plain loops over
// the grid, on evaluators whose bounds have a closed form in κ, and through the envelopes of a
// simulated head.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "simulate/envelope.hpp"
#include "simulate/kappa_scan.hpp"
#include "simulate/montecarlo.hpp"
#include "simulate/verdict_output.hpp"
#include "theory/bounds.hpp"
#include "theory/models.hpp"

using namespace attngeo::simulate;
namespace th = attngeo::theory;

namespace {

// A toy family: lower_i(κ) = c_i(1 − e^{−κ}) rises to c_i, upper_i(κ) = 1 − b_i/(1 + κ) rises
// to 1 — the directions the theorems' sides move in.
struct Toy {
    std::vector<double> c, b;
    ScanBounds operator()(double kappa) const {
        ScanBounds out;
        for (std::size_t i = 0; i < c.size(); ++i) {
            const double lo = c[i] * -std::expm1(-kappa), hi = 1 - b[i] / (1 + kappa);
            out.P.lower.push_back(lo);
            out.P.upper.push_back(hi);
            out.R.lower.push_back(0.5 * lo);
            out.R.upper.push_back(hi);
        }
        return out;
    }
};

ScanInputs toy_inputs(std::size_t count, unsigned seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<double> u(0.3, 0.9), half(0.0, 0.05);
    ScanInputs in;
    for (std::size_t i = 0; i < count; ++i) {
        const double p = u(rng), r = u(rng), hp = half(rng), hr = half(rng);
        in.P.push_back({p, p - hp, p + hp});
        in.R.push_back({r, r - hr, r + hr});
        in.regime.push_back(static_cast<int>(i % 6));
    }
    return in;
}

Toy toy(std::size_t count, unsigned seed) {
    std::mt19937 rng(seed + 100);
    std::uniform_real_distribution<double> c(0.2, 1.0), b(0.05, 0.6);
    Toy t;
    for (std::size_t i = 0; i < count; ++i) {
        t.c.push_back(c(rng));
        t.b.push_back(b(rng));
    }
    return t;
}

// The plain definition of one scan row.
ScanRow plain_row(const ScanInputs& in, const ScanBounds& b, bool P, bool lower, double kappa) {
    const auto& points = P ? in.P : in.R;
    const auto& m = P ? b.P : b.R;
    ScanRow row;
    row.kappa = kappa;
    std::vector<double> widths;
    for (std::size_t i = 0; i < points.size(); ++i) {
        const double bound = lower ? m.lower[i] : m.upper[i];
        row.coverage += lower ? bound <= points[i].ci_hi + 1e-12 : bound >= points[i].ci_lo - 1e-12;
        row.mean_gap += lower ? points[i].estimate - bound : bound - points[i].estimate;
        widths.push_back(m.upper[i] - m.lower[i]);
        row.mean_width += widths.back();
    }
    const double n = static_cast<double>(points.size());
    row.coverage /= n;
    row.mean_gap /= n;
    row.mean_width /= n;
    std::sort(widths.begin(), widths.end());
    const std::size_t h = widths.size() / 2;
    row.median_width = widths.size() % 2 ? widths[h] : 0.5 * (widths[h - 1] + widths[h]);
    return row;
}

}  // namespace

TEST(KappaScan, RowsEqualThePlainDefinitionAtEveryKappa) {
    const ScanInputs in = toy_inputs(37, 1);
    const Toy t = toy(37, 1);
    const KappaScan scan = scan_kappa(in, t, std::nullopt);
    double worst = 0;
    std::size_t rows = 0;
    for (int s = 0; s < 4; ++s) {
        const SideVerdict& v = scan.sides[s];
        const bool P = v.metric == ScanMetric::P, lower = v.side == ScanSide::lower;
        ASSERT_GE(v.scan.size(), 65u);
        for (std::size_t k = 0; k < v.scan.size(); ++k) {
            const ScanRow& r = v.scan[k];
            if (k > 0) EXPECT_LT(v.scan[k - 1].kappa, r.kappa);  // ascending, no repeats
            const ScanRow p = plain_row(in, t(r.kappa), P, lower, r.kappa);
            worst = std::max(
                {worst, std::abs(p.coverage - r.coverage), std::abs(p.mean_gap - r.mean_gap),
                 std::abs(p.mean_width - r.mean_width), std::abs(p.median_width - r.median_width)});
            ++rows;
        }
        EXPECT_DOUBLE_EQ(v.scan.front().kappa, 1e-8);
        EXPECT_NEAR(v.scan.back().kappa, 1e8, 1e-6);
    }
    std::printf("largest difference from the plain rows over %zu rows: %.3g\n", rows, worst);
    EXPECT_LE(worst, 1e-15);
}

TEST(KappaScan, StarIsTheTightestCoveredKappaAndTheRefinementSurroundsIt) {
    const ScanInputs in = toy_inputs(41, 2);
    const Toy t = toy(41, 2);
    const KappaScan scan = scan_kappa(in, t, std::nullopt);
    for (const SideVerdict& v : scan.sides) {
        // Plain argmin over the evaluated rows.
        const ScanRow* best = nullptr;
        for (const ScanRow& r : v.scan)
            if (r.coverage >= 0.95 && (!best || r.mean_gap < best->mean_gap)) best = &r;
        ASSERT_NE(best, nullptr);
        EXPECT_TRUE(v.coverage_met);
        EXPECT_EQ(v.at_star.kappa, best->kappa) << to_string(v.metric) << to_string(v.side);
        EXPECT_FALSE(v.kappa_free);
        // Fine steps (0.025 decade) on both sides of κ* unless it is at the grid's end.
        const double l = std::log10(v.at_star.kappa);
        int neighbours = 0;
        for (const ScanRow& r : v.scan)
            neighbours += std::abs(std::abs(std::log10(r.kappa) - l) - 0.025) <= 1e-6;
        if (l > -7.99 && l < 7.99) EXPECT_EQ(neighbours, 2) << l;
    }
    // Upper sides (1 − b/(1 + κ)) loosen as κ grows: κ* is the smallest κ that covers.
    for (ScanMetric m : {ScanMetric::P, ScanMetric::R}) {
        const SideVerdict& upper = scan.side(m, ScanSide::upper);
        for (const ScanRow& r : upper.scan)
            if (r.kappa < upper.at_star.kappa) EXPECT_LT(r.coverage, 0.95) << r.kappa;
    }
    // With uppers near 1 every κ covers, so κ* is the grid's first κ, flagged at its edge.
    Toy loose = t;
    for (double& b : loose.b)
        b = 1e-4;
    const KappaScan loose_scan = scan_kappa(in, loose, std::nullopt);  // outlives `edge`
    const SideVerdict& edge = loose_scan.side(ScanMetric::P, ScanSide::upper);
    EXPECT_DOUBLE_EQ(edge.at_star.kappa, 1e-8);
    EXPECT_TRUE(edge.at_grid_edge);
    EXPECT_FALSE(scan.side(ScanMetric::P, ScanSide::lower).at_grid_edge);
}

TEST(KappaScan, IntervalScoreKappaMinimisesTheMeanScore) {
    const ScanInputs in = toy_inputs(29, 3);
    const Toy t = toy(29, 3);
    const KappaScan scan = scan_kappa(in, t, std::nullopt);
    auto score = [&](double kappa) {
        const ScanBounds b = t(kappa);
        double total = 0;
        for (int m = 0; m < 2; ++m) {
            const auto& points = m == 0 ? in.P : in.R;
            const auto& mb = m == 0 ? b.P : b.R;
            for (std::size_t i = 0; i < points.size(); ++i) {
                const double x = points[i].estimate;
                total += (mb.upper[i] - mb.lower[i]) +
                         40 * (std::max(mb.lower[i] - x, 0.0) + std::max(x - mb.upper[i], 0.0));
            }
        }
        return total / (2.0 * in.P.size());
    };
    double best = std::numeric_limits<double>::infinity(), best_kappa = 0;
    for (const ScanRow& r : scan.sides[0].scan) {
        const double s = score(r.kappa);
        if (s < best) best = s, best_kappa = r.kappa;
    }
    std::printf("interval-score kappa %.17g (plain %.17g), score %.17g\n",
                scan.interval_score.kappa, best_kappa, best);
    EXPECT_EQ(scan.interval_score.kappa, best_kappa);
    EXPECT_NEAR(scan.interval_score.mean_score, best, 1e-14);
}

TEST(KappaScan, KappaFreeSidesGivenKappaAndUncoveredSides) {
    const ScanInputs in = toy_inputs(16, 4);
    // Bounds that ignore κ: every side κ-free, never at the grid's edge.
    const ScanEvaluator constant = [&](double) {
        ScanBounds b;
        for (std::size_t i = 0; i < 16; ++i) {
            b.P.lower.push_back(0.1), b.P.upper.push_back(0.95);
            b.R.lower.push_back(0.0), b.R.upper.push_back(0.995);
        }
        return b;
    };
    const KappaScan free = scan_kappa(in, constant, std::nullopt);
    for (const SideVerdict& v : free.sides) {
        EXPECT_TRUE(v.kappa_free);
        EXPECT_FALSE(v.at_grid_edge);
        // Only the interval-score κ is refined: it ties everywhere, so it is the first κ and
        // its refinement adds the 9 fine points between the first two coarse ones.
        EXPECT_EQ(v.scan.size(), 65u + 9u);
    }
    // R: lower 0 (trivial) and upper 0.995 (trivial): degenerate everywhere, not informative.
    EXPECT_EQ(free.side(ScanMetric::R, ScanSide::lower).fraction_degenerate, 1.0);
    EXPECT_FALSE(free.side(ScanMetric::R, ScanSide::upper).informative);
    EXPECT_EQ(free.side(ScanMetric::P, ScanSide::lower).fraction_degenerate, 0.0);
    EXPECT_TRUE(free.side(ScanMetric::P, ScanSide::upper).informative);

    // A given κ: every side reports it, and the star bounds are the bounds there.
    const Toy t = toy(16, 4);
    const KappaScan given = scan_kappa(in, t, 0.37);
    const ScanBounds at = t(0.37);
    for (const SideVerdict& v : given.sides) {
        EXPECT_EQ(v.at_star.kappa, 0.37);
        EXPECT_TRUE(v.kappa_given);
        EXPECT_EQ(v.scan.size(), 65u);  // no refinement
    }
    EXPECT_EQ(given.at_star.P.lower, at.P.lower);
    EXPECT_EQ(given.at_star.R.upper, at.R.upper);
    EXPECT_EQ(given.interval_score.kappa, 0.37);

    // Lower bounds above every interval: no κ covers 95 %; κ* is the largest coverage.
    const ScanEvaluator too_high = [&](double kappa) {
        ScanBounds b = t(kappa);
        for (std::size_t i = 0; i < 16; ++i)
            b.P.lower[i] = 0.99 + 0.001 * (i < 2) * std::exp(-kappa);
        return b;
    };
    const KappaScan high_scan = scan_kappa(in, too_high, std::nullopt);  // outlives `high`
    const SideVerdict& high = high_scan.side(ScanMetric::P, ScanSide::lower);
    EXPECT_FALSE(high.coverage_met);
    EXPECT_LT(high.at_star.coverage, 0.95);
}

// points_moving, largest_move, moving_N and nearly_kappa_free against a plain pass over the
// scanned κ: P lower moves only at points 0 and 1 (N = 2, 3) by < 3e-4, R lower at every point
// by up to 0.5, both uppers never.
TEST(KappaScan, MovingPointsAndNearlyKappaFreeFollowTheirDefinitions) {
    ScanInputs in = toy_inputs(6, 9);
    in.sizes = {2, 3, 4, 8, 16, 32};
    const auto evaluate = [](double kappa) {
        ScanBounds b;
        for (std::size_t i = 0; i < 6; ++i) {
            const double rise = -std::expm1(-kappa);  // 0 at κ → 0, 1 at κ → ∞
            b.P.lower.push_back(0.2 + (i < 2 ? 3e-4 * rise / (1 + i) : 0.0));
            b.P.upper.push_back(0.97);
            b.R.lower.push_back(0.5 * rise * (1 + i) / 6.0);
            b.R.upper.push_back(0.98);
        }
        return b;
    };
    const KappaScan scan = scan_kappa(in, evaluate, std::nullopt);
    // Plain: over the scanned κ, highest − lowest of each point's bound.
    double plain_P = 0, plain_R = 0;
    std::vector<double> lo_P(6, 1), hi_P(6, 0), lo_R(6, 1), hi_R(6, 0);
    for (const ScanRow& r : scan.side(ScanMetric::P, ScanSide::lower).scan) {
        const ScanBounds b = evaluate(r.kappa);
        for (std::size_t i = 0; i < 6; ++i) {
            lo_P[i] = std::min(lo_P[i], b.P.lower[i]), hi_P[i] = std::max(hi_P[i], b.P.lower[i]);
            lo_R[i] = std::min(lo_R[i], b.R.lower[i]), hi_R[i] = std::max(hi_R[i], b.R.lower[i]);
        }
    }
    for (std::size_t i = 0; i < 6; ++i)
        plain_P = std::max(plain_P, hi_P[i] - lo_P[i]),
        plain_R = std::max(plain_R, hi_R[i] - lo_R[i]);
    const SideVerdict& P = scan.side(ScanMetric::P, ScanSide::lower);
    const SideVerdict& R = scan.side(ScanMetric::R, ScanSide::lower);
    std::printf("largest move P lower %.17g (plain %.17g), R lower %.17g (plain %.17g)\n",
                P.largest_move, plain_P, R.largest_move, plain_R);
    EXPECT_EQ(P.largest_move, plain_P);
    EXPECT_EQ(R.largest_move, plain_R);
    EXPECT_GT(P.largest_move, 2.9e-4);
    EXPECT_LT(P.largest_move, 3e-4);
    EXPECT_FALSE(P.kappa_free);
    EXPECT_TRUE(P.nearly_kappa_free);
    EXPECT_EQ(P.moving_points, (std::vector<std::size_t>{0, 1}));
    EXPECT_EQ(P.moving_sizes, (std::vector<int>{2, 3}));
    EXPECT_FALSE(R.kappa_free);
    EXPECT_FALSE(R.nearly_kappa_free);  // moves by ~0.5
    EXPECT_EQ(R.moving_points.size(), 6u);
    for (ScanMetric metric : {ScanMetric::P, ScanMetric::R}) {
        const SideVerdict& v = scan.side(metric, ScanSide::upper);
        EXPECT_TRUE(v.kappa_free);
        EXPECT_FALSE(v.nearly_kappa_free);  // κ-free is not "nearly"
        EXPECT_TRUE(v.moving_points.empty() && v.moving_sizes.empty());
        EXPECT_EQ(v.largest_move, 0.0);
    }
    // verdict.csv's moving_N: runs of three or more N as first-last.
    std::ostringstream rows;
    append_verdict_rows(rows, "", th::BoundVariant::paper, scan);
    std::vector<std::string> lines;
    std::istringstream text(rows.str());
    for (std::string line; std::getline(text, line);)
        lines.push_back(line);
    ASSERT_EQ(lines.size(), 4u);  // P lower, P upper, R lower, R upper
    EXPECT_EQ(lines[0].substr(lines[0].rfind(',')), ",2;3");
    EXPECT_EQ(lines[1].back(), ',');  // nothing moves
    EXPECT_EQ(lines[2].substr(lines[2].rfind(',')), ",2-4;8;16;32");
    // Points not named by N: no moving_N; a sizes list of the wrong length is refused.
    in.sizes.clear();
    EXPECT_TRUE(scan_kappa(in, evaluate, std::nullopt)
                    .side(ScanMetric::P, ScanSide::lower)
                    .moving_sizes.empty());
    in.sizes = {2, 3};
    EXPECT_THROW(scan_kappa(in, evaluate, std::nullopt), std::domain_error);
}

TEST(KappaScan, GapsByRegimeAndDegeneraciesFollowTheirDefinitions) {
    ScanInputs in;
    ScanBounds b;
    // Point 0: inverted P envelope (regime II); point 1: trivial R lower (regime II);
    // point 2: clean (regime IV); point 3: no regime.
    const double P[4] = {0.5, 0.6, 0.7, 0.8}, R[4] = {0.4, 0.5, 0.6, 0.7};
    const double Pl[4] = {0.9, 0.2, 0.3, 0.4}, Pu[4] = {0.8, 0.9, 0.95, 0.97};
    const double Rl[4] = {0.1, 0.005, 0.2, 0.3}, Ru[4] = {0.8, 0.9, 0.95, 0.97};
    const int regime[4] = {2, 2, 4, 0};
    for (int i = 0; i < 4; ++i) {
        in.P.push_back({P[i], P[i] - 1, P[i] + 1});  // wide intervals: everything covered
        in.R.push_back({R[i], R[i] - 1, R[i] + 1});
        in.regime.push_back(regime[i]);
        b.P.lower.push_back(Pl[i]), b.P.upper.push_back(Pu[i]);
        b.R.lower.push_back(Rl[i]), b.R.upper.push_back(Ru[i]);
    }
    const KappaScan scan = scan_kappa(
        in, [&](double) { return b; }, std::nullopt);
    const SideVerdict& pl = scan.side(ScanMetric::P, ScanSide::lower);
    EXPECT_EQ(pl.points_by_regime[1], 2);
    EXPECT_EQ(pl.points_by_regime[3], 1);
    EXPECT_TRUE(std::isnan(pl.gap_by_regime[0]));
    EXPECT_DOUBLE_EQ(pl.gap_by_regime[1], ((0.5 - 0.9) + (0.6 - 0.2)) / 2);
    EXPECT_DOUBLE_EQ(pl.gap_by_regime[3], 0.7 - 0.3);
    EXPECT_DOUBLE_EQ(pl.at_star.mean_gap, ((0.5 - 0.9) + (0.6 - 0.2) + 0.4 + 0.4) / 4);
    EXPECT_DOUBLE_EQ(pl.fraction_degenerate, 0.25);  // the inverted point
    EXPECT_DOUBLE_EQ(scan.side(ScanMetric::R, ScanSide::lower).fraction_degenerate, 0.25);
    const DegenerateCounts d = degenerate_fractions(scan.at_star);
    EXPECT_DOUBLE_EQ(d.P_inverted, 0.25);
    EXPECT_DOUBLE_EQ(d.R_trivial_lower, 0.25);
    EXPECT_EQ(d.P_trivial_upper, 0.0);  // no upper reaches 0.99
}

TEST(KappaScan, BadInputThrows) {
    ScanInputs in = toy_inputs(4, 5);
    const Toy t = toy(4, 5);
    EXPECT_THROW(scan_kappa(ScanInputs{}, t, std::nullopt), std::domain_error);
    in.regime.pop_back();
    EXPECT_THROW(scan_kappa(in, t, std::nullopt), std::domain_error);
    in = toy_inputs(4, 5);
    EXPECT_THROW(scan_kappa(in, toy(3, 5), std::nullopt), std::domain_error);
    EXPECT_THROW(scan_kappa(in, t, 0.0), std::domain_error);
    in.regime[0] = 6;
    EXPECT_THROW(scan_kappa(in, t, std::nullopt), std::domain_error);
}
