// The κ scan of SPEC §7; see kappa_scan.hpp. Bounds are reduced to per-κ statistics as soon as
// a batch of κ is evaluated, so memory is O(points) times a bounded batch, whatever the grid.
#include "simulate/kappa_scan.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <stdexcept>

#include "common/errors.hpp"
#include "theory/bounds.hpp"

namespace attngeo::simulate {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
// Grid positions are integers in fine steps, so coarse and refined points never duplicate.
constexpr int kFinePerCoarse = 10;
const int kLastIndex = static_cast<int>(std::lround((kScanLogMax - kScanLogMin) / kScanFineStep));
// Gneiting & Raftery (2007), the interval score of a central (1 − a) interval: width plus
// 2/a times the distance outside, here with a = 0.05.
constexpr double kOutsidePenalty = 2 / 0.05;

struct SideKey {
    ScanMetric metric;
    ScanSide side;
};
constexpr SideKey kSides[4] = {{ScanMetric::P, ScanSide::lower},
                               {ScanMetric::P, ScanSide::upper},
                               {ScanMetric::R, ScanSide::lower},
                               {ScanMetric::R, ScanSide::upper}};

double kappa_at(int index) {
    return std::pow(10.0, kScanLogMin + index * kScanFineStep);
}

// κ per evaluator call: its bounds (four per point) stay within about 64 MiB.
std::size_t batch_size(const ScanInputs& in) {
    constexpr std::size_t kBatchBytes = std::size_t{64} << 20;
    return std::max<std::size_t>(1, kBatchBytes / (4 * sizeof(double) * in.P.size()));
}

const MetricBounds& bounds_of(const ScanBounds& b, ScanMetric metric) {
    return metric == ScanMetric::P ? b.P : b.R;
}
const std::vector<ScanPoint>& points_of(const ScanInputs& in, ScanMetric metric) {
    return metric == ScanMetric::P ? in.P : in.R;
}
const std::vector<double>& side_bounds(const ScanBounds& b, SideKey key) {
    const MetricBounds& m = bounds_of(b, key.metric);
    return key.side == ScanSide::lower ? m.lower : m.upper;
}

// How far the estimate sits inside this side's bound (negative when the bound is violated by
// the estimate itself), and whether its interval contradicts the bound.
double gap(const ScanPoint& p, double bound, ScanSide side) {
    return side == ScanSide::lower ? p.estimate - bound : bound - p.estimate;
}
bool covered(const ScanPoint& p, double bound, ScanSide side) {
    return side == ScanSide::lower ? bound <= p.ci_hi + kCoverageSlack
                                   : bound >= p.ci_lo - kCoverageSlack;
}

double median_of(std::vector<double> values) {
    if (values.empty()) return kNaN;
    const std::size_t mid = values.size() / 2;
    std::nth_element(values.begin(), values.begin() + mid, values.end());
    const double upper = values[mid];
    if (values.size() % 2 == 1) return upper;
    return 0.5 * (upper + *std::max_element(values.begin(), values.begin() + mid));
}

ScanRow side_row(const ScanInputs& in, const ScanBounds& b, SideKey key, double kappa) {
    const std::vector<ScanPoint>& points = points_of(in, key.metric);
    const MetricBounds& m = bounds_of(b, key.metric);
    const std::vector<double>& bound = side_bounds(b, key);
    const std::size_t count = points.size();
    ScanRow row;
    row.kappa = kappa;
    std::vector<double> widths(count);
    double covered_points = 0, gaps = 0, width_sum = 0;
    for (std::size_t i = 0; i < count; ++i) {
        covered_points += covered(points[i], bound[i], key.side);
        gaps += gap(points[i], bound[i], key.side);
        widths[i] = m.upper[i] - m.lower[i];
        width_sum += widths[i];
    }
    row.coverage = covered_points / count;
    row.mean_gap = gaps / count;
    row.mean_width = width_sum / count;
    row.median_width = median_of(std::move(widths));
    return row;
}

IntervalScoreChoice interval_score_at(const ScanInputs& in, const ScanBounds& b, double kappa) {
    IntervalScoreChoice c;
    c.kappa = kappa;
    double covered_points = 0, widths = 0, scores = 0, count = 0;
    for (ScanMetric metric : {ScanMetric::P, ScanMetric::R}) {
        const std::vector<ScanPoint>& points = points_of(in, metric);
        const MetricBounds& m = bounds_of(b, metric);
        for (std::size_t i = 0; i < points.size(); ++i) {
            const double lo = m.lower[i], hi = m.upper[i], x = points[i].estimate;
            const double outside = std::max(lo - x, 0.0) + std::max(x - hi, 0.0);
            covered_points +=
                points[i].ci_hi >= lo - kCoverageSlack && points[i].ci_lo <= hi + kCoverageSlack;
            widths += hi - lo;
            scores += (hi - lo) + kOutsidePenalty * outside;
            count += 1;
        }
    }
    c.coverage = covered_points / count;
    c.mean_width = widths / count;
    c.mean_score = scores / count;
    return c;
}

// Everything the scan keeps of the bounds it evaluated.
class ScanState {
  public:
    ScanState(const ScanInputs& in, const ScanBatchEvaluator& evaluate)
        : in_(in), evaluate_(evaluate) {
        for (int s = 0; s < 4; ++s) {
            const std::size_t count = points_of(in, kSides[s].metric).size();
            lowest_[s].assign(count, std::numeric_limits<double>::infinity());
            highest_[s].assign(count, -std::numeric_limits<double>::infinity());
        }
    }

    // The grid indices not evaluated yet (for R too when with_recall), in batches whose
    // bounds stay within kBatchBytes.
    void evaluate(const std::vector<int>& indices, bool with_recall) {
        const std::map<int, ScanRow>& done = rows_[with_recall ? 2 : 0];
        std::vector<int> fresh;
        for (int index : indices)
            if (!done.count(index) && std::find(fresh.begin(), fresh.end(), index) == fresh.end())
                fresh.push_back(index);
        // Ascending κ: an evaluator can carry what it found at one κ over to the next.
        std::sort(fresh.begin(), fresh.end());
        const std::size_t batch = batch_size(in_);
        for (std::size_t first = 0; first < fresh.size(); first += batch) {
            const std::size_t last = std::min(fresh.size(), first + batch);
            std::vector<double> kappas;
            for (std::size_t k = first; k < last; ++k)
                kappas.push_back(kappa_at(fresh[k]));
            const std::vector<ScanBounds> bounds = evaluate_(kappas, with_recall);
            if (bounds.size() != kappas.size())
                throw_domain_error("attngeo::simulate::scan_kappa",
                                   "the evaluator returned bounds for a different number of kappa");
            for (std::size_t k = first; k < last; ++k)
                record(fresh[k], bounds[k - first], with_recall);
        }
    }

    bool kappa_free(int s) const { return moving_points(s).empty(); }

    std::vector<std::size_t> moving_points(int s) const {
        std::vector<std::size_t> out;
        for (std::size_t i = 0; i < lowest_[s].size(); ++i)
            if (!(highest_[s][i] - lowest_[s][i] <= kKappaFreeTolerance)) out.push_back(i);
        return out;
    }

    double largest_move(int s) const {
        double largest = 0;
        for (std::size_t i = 0; i < lowest_[s].size(); ++i) {
            const double move = highest_[s][i] - lowest_[s][i];
            if (!(move <= largest)) largest = move;
        }
        return largest;
    }

    // κ* of side s: smallest mean gap among κ with coverage ≥ target (ties: smaller κ); when
    // none reaches the target, the largest coverage (ties: smaller gap, then smaller κ).
    int star(int s, bool& coverage_met) const {
        int best = -1;
        coverage_met = false;
        for (const auto& [index, r] : rows_[s]) {
            const bool met = r.coverage >= kCoverageTarget;
            if (best < 0) {
                best = index, coverage_met = met;
                continue;
            }
            const ScanRow& b = rows_[s].at(best);
            const bool better =
                met ? (!coverage_met || r.mean_gap < b.mean_gap)
                    : (!coverage_met && (r.coverage > b.coverage ||
                                         (r.coverage == b.coverage && r.mean_gap < b.mean_gap)));
            if (better) best = index, coverage_met = coverage_met || met;
        }
        return best;
    }

    int interval_score_star() const {
        int best = -1;
        for (const auto& [index, c] : scores_)
            if (best < 0 || c.mean_score < scores_.at(best).mean_score) best = index;
        return best;
    }

    std::vector<ScanRow> scan(int s) const {
        std::vector<ScanRow> out;
        for (const auto& [index, r] : rows_[s])
            out.push_back(r);
        return out;
    }
    const ScanRow& row(int index, int s) const { return rows_[s].at(index); }
    const IntervalScoreChoice& score(int index) const { return scores_.at(index); }

  private:
    void record(int index, const ScanBounds& b, bool with_recall) {
        const double kappa = kappa_at(index);
        const int sides = with_recall ? 4 : 2;  // kSides: P's two sides first
        check_sizes(b, sides);
        for (int s = 0; s < sides; ++s) {
            rows_[s][index] = side_row(in_, b, kSides[s], kappa);
            const std::vector<double>& bound = side_bounds(b, kSides[s]);
            for (std::size_t i = 0; i < bound.size(); ++i) {
                lowest_[s][i] = std::min(lowest_[s][i], bound[i]);
                highest_[s][i] = std::max(highest_[s][i], bound[i]);
            }
        }
        if (with_recall) scores_[index] = interval_score_at(in_, b, kappa);
    }

    void check_sizes(const ScanBounds& b, int sides) const {
        for (int s = 0; s < sides; ++s)
            if (side_bounds(b, kSides[s]).size() != lowest_[s].size() ||
                bounds_of(b, kSides[s].metric).lower.size() != lowest_[s].size())
                throw_domain_error(
                    "attngeo::simulate::scan_kappa",
                    "the evaluator returned bounds for a different number of points");
    }

    const ScanInputs& in_;
    const ScanBatchEvaluator& evaluate_;
    std::array<std::map<int, ScanRow>, 4> rows_;           // [side] by grid index, ascending κ
    std::map<int, IntervalScoreChoice> scores_;            // by grid index (P and R evaluated)
    std::array<std::vector<double>, 4> lowest_, highest_;  // [points] per side over the grid
};

void validate(const ScanInputs& in) {
    const char* fn = "attngeo::simulate::scan_kappa";
    if (in.P.empty()) throw_domain_error(fn, "no points to scan");
    if (in.R.size() != in.P.size() || in.regime.size() != in.P.size())
        throw_domain_error(fn, "P, R and regime differ in length");
    if (!in.sizes.empty() && in.sizes.size() != in.P.size())
        throw_domain_error(fn, "sizes is neither empty nor one N per point");
    for (int r : in.regime)
        if (r < 0 || r > kRegimeCount) throw_domain_error(fn, "regime outside 0..5");
}

// Mean gap per Table-2 regime and the degeneracies of one side, at the star envelope.
void describe_at_star(const ScanInputs& in, const ScanBounds& star, SideVerdict& v) {
    const SideKey key{v.metric, v.side};
    const std::vector<ScanPoint>& points = points_of(in, key.metric);
    const std::vector<double>& bound = side_bounds(star, key);
    std::array<double, kRegimeCount> gaps{};
    int degenerate = 0;
    for (std::size_t i = 0; i < points.size(); ++i) {
        if (in.regime[i] > 0) {
            gaps[in.regime[i] - 1] += gap(points[i], bound[i], key.side);
            v.points_by_regime[in.regime[i] - 1] += 1;
        }
        const theory::EnvelopeFlags f = theory::envelope_flags(star.P.lower[i], star.P.upper[i],
                                                               star.R.lower[i], star.R.upper[i]);
        const bool P = key.metric == ScanMetric::P;
        const bool inverted = P ? f.P_inverted : f.R_inverted;
        const bool trivial = key.side == ScanSide::lower
                                 ? (P ? f.P_trivial_lower : f.R_trivial_lower)
                                 : (P ? f.P_trivial_upper : f.R_trivial_upper);
        degenerate += inverted || trivial;
    }
    for (int r = 0; r < kRegimeCount; ++r)
        v.gap_by_regime[r] = v.points_by_regime[r] > 0 ? gaps[r] / v.points_by_regime[r] : kNaN;
    v.fraction_degenerate = static_cast<double>(degenerate) / points.size();
    v.informative = degenerate < static_cast<int>(points.size());
}

// Each side's bounds at its own κ (one batch of the distinct κ).
ScanBounds star_bounds(const ScanBatchEvaluator& evaluate, const std::array<double, 4>& kappas) {
    std::vector<double> distinct;
    for (double kappa : kappas)
        if (std::find(distinct.begin(), distinct.end(), kappa) == distinct.end())
            distinct.push_back(kappa);
    const std::vector<ScanBounds> bounds = evaluate(distinct, true);
    ScanBounds star;
    for (int s = 0; s < 4; ++s) {
        const std::size_t k =
            std::find(distinct.begin(), distinct.end(), kappas[s]) - distinct.begin();
        MetricBounds& target = kSides[s].metric == ScanMetric::P ? star.P : star.R;
        const MetricBounds& source = bounds_of(bounds.at(k), kSides[s].metric);
        (kSides[s].side == ScanSide::lower ? target.lower : target.upper) =
            kSides[s].side == ScanSide::lower ? source.lower : source.upper;
    }
    return star;
}

// Refines around every answer that depends on κ: ±1 coarse step in fine steps. With
// RefineWindows::precision_alone the P sides' windows evaluate the P bounds only.
void refine(ScanState& state, RefineWindows windows) {
    std::vector<int> with_recall, precision_only;
    auto add_window = [](std::vector<int>& out, int centre) {
        for (int index = std::max(0, centre - kFinePerCoarse);
             index <= std::min(kLastIndex, centre + kFinePerCoarse); ++index)
            out.push_back(index);
    };
    for (int s = 0; s < 4; ++s) {
        bool met = false;
        if (state.kappa_free(s)) continue;
        const bool alone =
            kSides[s].metric == ScanMetric::P && windows == RefineWindows::precision_alone;
        add_window(alone ? precision_only : with_recall, state.star(s, met));
    }
    add_window(with_recall, state.interval_score_star());
    state.evaluate(with_recall, true);
    state.evaluate(precision_only, false);
}

}  // namespace

const char* to_string(ScanMetric metric) {
    return metric == ScanMetric::P ? "P" : "R";
}
const char* to_string(ScanSide side) {
    return side == ScanSide::lower ? "lower" : "upper";
}

const SideVerdict& KappaScan::side(ScanMetric metric, ScanSide which) const {
    return sides[(metric == ScanMetric::P ? 0 : 2) + (which == ScanSide::lower ? 0 : 1)];
}

KappaScan scan_kappa(const ScanInputs& inputs, const ScanEvaluator& evaluate,
                     std::optional<double> given_kappa) {
    // One κ at a time: the R bounds come with the P bounds, so every κ of the scan has all four
    // sides and the interval score.
    return scan_kappa(inputs, ScanBatchEvaluator([&](const std::vector<double>& kappas, bool) {
                          std::vector<ScanBounds> bounds;
                          for (double kappa : kappas)
                              bounds.push_back(evaluate(kappa));
                          return bounds;
                      }),
                      given_kappa, RefineWindows::all_sides);
}

KappaScan scan_kappa(const ScanInputs& inputs, const ScanBatchEvaluator& evaluate,
                     std::optional<double> given_kappa, RefineWindows windows) {
    validate(inputs);
    if (given_kappa && !(*given_kappa > 0 && std::isfinite(*given_kappa)))
        throw_domain_error("attngeo::simulate::scan_kappa", "kappa must be finite and > 0");
    ScanState state(inputs, evaluate);
    std::vector<int> coarse;
    for (int index = 0; index <= kLastIndex; index += kFinePerCoarse)
        coarse.push_back(index);
    state.evaluate(coarse, true);
    if (!given_kappa) refine(state, windows);

    KappaScan out;
    std::array<double, 4> star_kappa{};
    for (int s = 0; s < 4; ++s) {
        SideVerdict& v = out.sides[s];
        v.metric = kSides[s].metric;
        v.side = kSides[s].side;
        v.scan = state.scan(s);
        v.kappa_free = state.kappa_free(s);
        v.moving_points = state.moving_points(s);
        v.largest_move = state.largest_move(s);
        if (!inputs.sizes.empty()) {
            std::set<int> sizes;
            for (std::size_t i : v.moving_points)
                sizes.insert(inputs.sizes[i]);
            v.moving_sizes.assign(sizes.begin(), sizes.end());
        }
        v.nearly_kappa_free = !v.kappa_free && v.largest_move <= kNearlyKappaFreeMove;
        const int star = state.star(s, v.coverage_met);
        if (given_kappa) {
            v.kappa_given = true;
            star_kappa[s] = *given_kappa;
        } else {
            v.at_star = state.row(star, s);
            v.at_grid_edge = !v.kappa_free && (star == 0 || star == kLastIndex);
            star_kappa[s] = v.at_star.kappa;
        }
    }
    if (given_kappa) {
        const ScanBounds b = evaluate({*given_kappa}, true).at(0);
        for (int s = 0; s < 4; ++s) {
            out.sides[s].at_star = side_row(inputs, b, kSides[s], *given_kappa);
            out.sides[s].coverage_met = out.sides[s].at_star.coverage >= kCoverageTarget;
        }
        out.interval_score = interval_score_at(inputs, b, *given_kappa);
        out.at_star = b;
    } else {
        out.interval_score = state.score(state.interval_score_star());
        out.at_star = star_bounds(evaluate, star_kappa);
    }
    for (SideVerdict& v : out.sides)
        describe_at_star(inputs, out.at_star, v);
    return out;
}

DegenerateCounts degenerate_fractions(const ScanBounds& star) {
    DegenerateCounts c;
    const std::size_t count = star.P.lower.size();
    for (std::size_t i = 0; i < count; ++i) {
        const theory::EnvelopeFlags f = theory::envelope_flags(star.P.lower[i], star.P.upper[i],
                                                               star.R.lower[i], star.R.upper[i]);
        c.P_inverted += f.P_inverted;
        c.R_inverted += f.R_inverted;
        c.P_trivial_lower += f.P_trivial_lower;
        c.R_trivial_lower += f.R_trivial_lower;
        c.P_trivial_upper += f.P_trivial_upper;
        c.R_trivial_upper += f.R_trivial_upper;
    }
    if (count > 0) {
        for (double* x : {&c.P_inverted, &c.R_inverted, &c.P_trivial_lower, &c.R_trivial_lower,
                          &c.P_trivial_upper, &c.R_trivial_upper})
            *x /= count;
    }
    return c;
}

}  // namespace attngeo::simulate
