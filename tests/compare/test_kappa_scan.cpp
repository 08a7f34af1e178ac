// Tests of the κ scan and the verdict (compare/kappa_scan, docs/design.md §7) against plain loops
// over the grid, on evaluators whose bounds have a closed form in κ, and through the envelopes of a
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

#include "compare/estimate_envelopes.hpp"
#include "compare/kappa_scan.hpp"
#include "compare/verdict_output.hpp"
#include "simulate/montecarlo.hpp"
#include "theory/bounds.hpp"
#include "theory/models.hpp"

using namespace attngeo::simulate;
using namespace attngeo::compare;
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
        const bool inside =
            lower ? bound <= points[i].ci_hi + 1e-12 : bound >= points[i].ci_lo - 1e-12;
        row.coverage += inside;
        if (!inside) {
            row.violations += 1;
            const double beyond = lower ? bound - points[i].ci_hi : points[i].ci_lo - bound;
            row.largest_excess = std::max(row.largest_excess, beyond);
        }
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
            if (k > 0) {  // ascending, no repeats
                EXPECT_LT(v.scan[k - 1].kappa, r.kappa);
            }
            const ScanRow p = plain_row(in, t(r.kappa), P, lower, r.kappa);
            worst = std::max(
                {worst, std::abs(p.coverage - r.coverage), std::abs(p.mean_gap - r.mean_gap),
                 std::abs(p.mean_width - r.mean_width), std::abs(p.median_width - r.median_width),
                 std::abs(p.largest_excess - r.largest_excess)});
            EXPECT_EQ(p.violations, r.violations) << r.kappa;
            ++rows;
        }
        EXPECT_DOUBLE_EQ(v.scan.front().kappa, 1e-8);
        EXPECT_NEAR(v.scan.back().kappa, 1e8, 1e-6);
    }
    std::printf("largest difference from the plain rows over %zu rows: %.3g\n", rows, worst);
    EXPECT_LE(worst, 1e-15);
}

TEST(KappaScan, StarIsTheTightestKappaWithinTheAllowanceAndTheRefinementSurroundsIt) {
    const ScanInputs in = toy_inputs(41, 2);
    const Toy t = toy(41, 2);
    const KappaScan scan = scan_kappa(in, t, std::nullopt);
    const int allowed = violations_allowed(41);
    for (const SideVerdict& v : scan.sides) {
        // Plain argmin over the evaluated rows; κ₀ likewise among the violation-free ones.
        const ScanRow *best = nullptr, *zero = nullptr;
        for (const ScanRow& r : v.scan) {
            if (r.violations <= allowed && (!best || r.mean_gap < best->mean_gap)) best = &r;
            if (r.violations == 0 && (!zero || r.mean_gap < zero->mean_gap)) zero = &r;
        }
        ASSERT_NE(best, nullptr);
        EXPECT_TRUE(v.within_allowance);
        EXPECT_EQ(v.violations_allowed, allowed);
        EXPECT_EQ(v.points, 41);
        EXPECT_EQ(v.at_star.kappa, best->kappa) << to_string(v.metric) << to_string(v.side);
        if (zero) {
            EXPECT_EQ(v.kappa_zero, zero->kappa);
            EXPECT_EQ(v.gap_at_kappa_zero, zero->mean_gap);
        } else {
            EXPECT_TRUE(std::isnan(v.kappa_zero));
        }
        EXPECT_FALSE(v.kappa_free);
        // Fine steps (0.025 decade) on both sides of κ* unless it is at the grid's end.
        const double l = std::log10(v.at_star.kappa);
        int neighbours = 0;
        for (const ScanRow& r : v.scan)
            neighbours += std::abs(std::abs(std::log10(r.kappa) - l) - 0.025) <= 1e-6;
        if (l > -7.99 && l < 7.99) {
            EXPECT_EQ(neighbours, 2) << l;
        }
    }
    // Upper sides (1 − b/(1 + κ)) loosen as κ grows: κ* is the smallest κ within the
    // allowance.
    for (ScanMetric m : {ScanMetric::P, ScanMetric::R}) {
        const SideVerdict& upper = scan.side(m, ScanSide::upper);
        for (const ScanRow& r : upper.scan)
            if (r.kappa < upper.at_star.kappa) {
                EXPECT_GT(r.violations, allowed) << r.kappa;
            }
    }
    // With uppers near 1 every κ covers, so κ* is the grid's first κ, flagged at its edge
    // (b = 1e-2 keeps the first κ's gaps 1e-10 apart: more than the 1e-12 of a plateau).
    Toy loose = t;
    for (double& b : loose.b)
        b = 1e-2;
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
    KappaScan free = scan_kappa(in, constant, std::nullopt);
    judge_points(free, in, std::vector<th::MarginFlags>(16));
    for (const SideVerdict& v : free.sides) {
        EXPECT_TRUE(v.kappa_free);
        EXPECT_FALSE(v.at_grid_edge);
        // Only the interval-score κ is refined: it ties everywhere, so it is the first κ and
        // its refinement adds the 9 fine points between the first two coarse ones.
        EXPECT_EQ(v.scan.size(), 65u + 9u);
    }
    // R lower 0 is at its limit: degenerate and uninformative everywhere. R upper 0.995 is
    // trivial (≥ 0.99) but still below the limit 1, so it says something where not violated.
    EXPECT_EQ(free.side(ScanMetric::R, ScanSide::lower).fraction_degenerate, 1.0);
    EXPECT_FALSE(free.side(ScanMetric::R, ScanSide::lower).informative);
    EXPECT_EQ(free.side(ScanMetric::R, ScanSide::lower).at_limit_points, 16);
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
    EXPECT_FALSE(high.within_allowance);
    EXPECT_LT(high.at_star.coverage, 0.95);
    // κ* then has the fewest violations of any scanned κ.
    for (const ScanRow& r : high.scan)
        EXPECT_GE(r.violations, high.at_star.violations);
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
    const auto moving_field = [](const std::string& line) {
        std::vector<std::string> fields;
        std::stringstream row(line + ",");
        for (std::string field; std::getline(row, field, ',');)
            fields.push_back(field);
        return fields.at(26);  // kVerdictColumns' moving_N
    };
    EXPECT_EQ(moving_field(lines[0]), "2;3");
    EXPECT_EQ(moving_field(lines[1]), "");  // nothing moves
    EXPECT_EQ(moving_field(lines[2]), "2-4;8;16;32");
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
    const DegenerateCounts d = degenerate_fractions(scan.at_star, {});
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

// The allowance against a plain Binomial cdf summed from log-pmfs.
TEST(KappaScan, AllowanceIsTheBinomialQuantile) {
    for (std::size_t M : {std::size_t{0}, std::size_t{1}, std::size_t{10}, std::size_t{41},
                          std::size_t{1023}, std::size_t{40000}}) {
        int plain = 0;
        if (M > 0) {
            double cdf = 0;
            for (int k = 0;; ++k) {
                const double log_pmf = std::lgamma(M + 1.0) - std::lgamma(k + 1.0) -
                                       std::lgamma(M - k + 1.0) + k * std::log(0.025) +
                                       (M - k) * std::log1p(-0.025);
                cdf += std::exp(log_pmf);
                if (cdf >= 0.95) {
                    plain = k;
                    break;
                }
            }
        }
        std::printf("M = %zu: allowed %d (plain %d)\n", M, violations_allowed(M), plain);
        EXPECT_EQ(violations_allowed(M), plain) << M;
    }
}

// Convention points (here the first and the last, estimates far off every bound) change no
// count, coverage, gap or width; the points are M = count − 2.
TEST(KappaScan, ConventionPointsEnterNoCount) {
    const std::size_t count = 23;
    ScanInputs in = toy_inputs(count, 6);
    const Toy t = toy(count, 6);
    ScanInputs kept;  // the same without the two convention points
    for (std::size_t i = 1; i + 1 < count; ++i) {
        kept.P.push_back(in.P[i]), kept.R.push_back(in.R[i]), kept.regime.push_back(in.regime[i]);
        kept.facts.push_back({static_cast<int>(i) + 1, static_cast<int>(count), false});
    }
    for (std::size_t i = 0; i < count; ++i)
        in.facts.push_back(
            {static_cast<int>(i) + 1, static_cast<int>(count), i == 0 || i + 1 == count});
    in.P.front() = in.P.back() = {-5, -5, -5};  // would violate every lower and upper bound
    in.R.front() = in.R.back() = {7, 7, 7};
    const ScanEvaluator inner = [&](double kappa) {
        ScanBounds b = t(kappa);
        for (MetricBounds* m : {&b.P, &b.R}) {
            m->lower = std::vector<double>(m->lower.begin() + 1, m->lower.end() - 1);
            m->upper = std::vector<double>(m->upper.begin() + 1, m->upper.end() - 1);
        }
        return b;
    };
    const KappaScan with = scan_kappa(in, t, std::nullopt);
    const KappaScan without = scan_kappa(kept, inner, std::nullopt);
    for (int s = 0; s < 4; ++s) {
        const SideVerdict &a = with.sides[s], &b = without.sides[s];
        EXPECT_EQ(a.points, static_cast<int>(count) - 2);
        EXPECT_EQ(a.convention_points, 2);
        EXPECT_EQ(b.convention_points, 0);
        EXPECT_EQ(a.at_star.kappa, b.at_star.kappa);
        EXPECT_EQ(a.at_star.violations, b.at_star.violations);
        EXPECT_EQ(a.at_star.coverage, b.at_star.coverage);
        EXPECT_EQ(a.at_star.mean_gap, b.at_star.mean_gap);
        EXPECT_EQ(a.at_star.median_width, b.at_star.median_width);
        EXPECT_EQ(a.violations_allowed, violations_allowed(count - 2));
    }
    EXPECT_EQ(with.interval_score.kappa, without.interval_score.kappa);
    EXPECT_EQ(with.interval_score.violations, without.interval_score.violations);
    // A fact with N outside 1..n, or facts of the wrong length, is refused.
    in.facts[3].N = 0;
    EXPECT_THROW(scan_kappa(in, t, std::nullopt), std::domain_error);
    in.facts.pop_back();
    EXPECT_THROW(scan_kappa(in, t, std::nullopt), std::domain_error);
}

// A side whose bound stops changing beyond some κ reads "any κ ≥ X" (upper: tight from κ = 100
// on) or "any κ ≤ X" (lower: tight up to κ = 1e-3), never a grid edge.
TEST(KappaScan, SaturatingSidesReadAnyKappaBeyondTheirStar) {
    const std::size_t count = 12;
    const ScanInputs in = toy_inputs(count, 7);
    const ScanEvaluator evaluate = [&](double kappa) {
        ScanBounds b;
        const double lg = std::log10(kappa);
        for (std::size_t i = 0; i < count; ++i) {
            b.P.upper.push_back(in.P[i].ci_lo + 0.1 * std::max(0.0, 1 - lg / 2));
            b.P.lower.push_back(in.P[i].ci_hi - 0.1 * std::max(0.0, lg + 3));
            b.R.upper.push_back(1.0);
            b.R.lower.push_back(0.0);
        }
        return b;
    };
    const KappaScan scan = scan_kappa(in, evaluate, std::nullopt);
    const SideVerdict& upper = scan.side(ScanMetric::P, ScanSide::upper);
    const SideVerdict& lower = scan.side(ScanMetric::P, ScanSide::lower);
    std::printf("P upper kappa* %.6g (%s), P lower kappa* %.6g (%s)\n", upper.at_star.kappa,
                to_string(upper.saturates), lower.at_star.kappa, to_string(lower.saturates));
    EXPECT_EQ(upper.saturates, Saturation::above);
    EXPECT_NEAR(upper.at_star.kappa, 100, 1e-9);
    EXPECT_FALSE(upper.at_grid_edge);
    EXPECT_EQ(lower.saturates, Saturation::below);
    EXPECT_NEAR(lower.at_star.kappa, 1e-3, 1e-15);
    EXPECT_FALSE(lower.at_grid_edge);
    // κ-free sides neither saturate nor sit at an edge.
    EXPECT_TRUE(scan.side(ScanMetric::R, ScanSide::upper).kappa_free);
    EXPECT_EQ(scan.side(ScanMetric::R, ScanSide::upper).saturates, Saturation::none);
}

// judge_points against a plain per-point pass: the limits (N/n for P lower), violations, the
// N-only degeneracies, identity contradictions at N = 1, and the 5 % rule.
TEST(KappaScan, JudgedPointsFollowTheirDefinitions) {
    const int n = 40;
    ScanInputs in;
    ScanBounds b;
    std::vector<th::MarginFlags> margins;
    std::mt19937 rng(11);
    std::uniform_real_distribution<double> u(0, 1);
    for (int N = 1; N <= n; ++N) {
        const double p = 0.2 + 0.8 * u(rng), r = u(rng), h = 0.05 * u(rng);
        in.P.push_back({p, p - h, p + h});
        in.R.push_back({r, r - h, r + h});
        in.regime.push_back(0);
        in.facts.push_back({N, n, N == n});
        b.P.lower.push_back(u(rng) < 0.3 ? static_cast<double>(N) / n : 0.6 * u(rng));
        b.P.upper.push_back(N == 1 ? 0.75 : 0.8 + 0.2 * u(rng));
        b.R.lower.push_back(u(rng) < 0.3 ? 0.0 : 0.5 * u(rng));
        b.R.upper.push_back(u(rng) < 0.2 ? 0.5 : 0.5 + 0.5 * u(rng));
        th::MarginFlags m;
        m.delta_le0 = u(rng) < 0.4, m.sink_selected = u(rng) < 0.5;
        m.delta0_le0 = m.sink_selected && u(rng) < 0.5, m.xi_le0 = u(rng) < 0.4;
        margins.push_back(m);
    }
    KappaScan scan = scan_kappa(
        in, [&](double) { return b; }, std::nullopt);
    judge_points(scan, in, margins);
    for (int s = 0; s < 4; ++s) {
        const SideVerdict& v = scan.sides[s];
        const bool P = v.metric == ScanMetric::P, lower = v.side == ScanSide::lower;
        const auto& points = P ? in.P : in.R;
        const auto& bound = lower ? (P ? b.P.lower : b.R.lower) : (P ? b.P.upper : b.R.upper);
        int informative = 0, limit = 0, only = 0, violated = 0, contradicted = 0;
        for (int i = 0; i < n; ++i) {
            const int N = i + 1;
            if (N == n) {
                EXPECT_EQ(scan.points.informative[s][i], 0);
                continue;
            }
            const double floor = lower && P ? static_cast<double>(N) / n : 0;
            const bool beyond = lower ? bound[i] > floor + 1e-12 : bound[i] < 1 - 1e-12;
            const bool bad =
                lower ? bound[i] > points[i].ci_hi + 1e-12 : bound[i] < points[i].ci_lo - 1e-12;
            const th::MarginFlags& m = margins[i];
            const bool n_alone = lower ? (m.delta_le0 && (!m.sink_selected || m.delta0_le0))
                                       : (P ? m.xi_le0 : (m.xi_le0 && bound[i] == 0.5));
            const bool yes = beyond && !bad && !n_alone;
            EXPECT_EQ(scan.points.informative[s][i], yes) << s << " N = " << N;
            informative += yes, limit += !beyond, only += n_alone, violated += bad;
            contradicted += !lower && N == 1 && bound[i] < 1 - 1e-12;
        }
        std::printf("%s %s: informative %d, at limit %d, N alone %d, violated %d of %d\n",
                    to_string(v.metric), to_string(v.side), informative, limit, only, violated,
                    v.points);
        EXPECT_EQ(v.points, n - 1);
        EXPECT_EQ(v.informative_points, informative);
        EXPECT_EQ(v.at_limit_points, limit);
        EXPECT_EQ(v.n_only_points, only);
        EXPECT_EQ(v.at_star.violations, violated);
        EXPECT_EQ(v.identity_contradicted, contradicted);
        EXPECT_EQ(v.informative, informative >= 0.05 * (n - 1));
        EXPECT_DOUBLE_EQ(v.informative_fraction, informative / (n - 1.0));
    }
    EXPECT_EQ(scan.points.identity_contradicted[0], 1);  // both uppers < 1 at N = 1
    EXPECT_EQ(scan.points.convention[n - 1], 1);
    int delta = 0, sink = 0, delta0 = 0;
    for (int i = 0; i + 1 < n; ++i)
        delta += !margins[i].delta_le0, sink += margins[i].sink_selected,
            delta0 += margins[i].sink_selected && !margins[i].delta0_le0;
    EXPECT_EQ(scan.hypotheses.points, n - 1);
    EXPECT_EQ(scan.hypotheses.delta_positive, delta);
    EXPECT_EQ(scan.hypotheses.sink_points, sink);
    EXPECT_EQ(scan.hypotheses.delta0_positive, delta0);
    EXPECT_THROW(judge_points(scan, in, std::vector<th::MarginFlags>(3)), std::domain_error);
}
