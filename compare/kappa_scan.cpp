// The κ scan of docs/design.md §7; see kappa_scan.hpp. Bounds are reduced to per-κ statistics as
// soon as a batch of κ is evaluated, so memory is O(points) times a bounded batch, whatever the
// grid.
#include "compare/kappa_scan.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <stdexcept>

#include <boost/math/distributions/binomial.hpp>

#include "common/errors.hpp"
#include "common/order_statistics.hpp"
#include "theory/bounds.hpp"

namespace attngeo::compare {
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

// Whether point i enters the counts: every point but the convention points.
bool counted(const ScanInputs& in, std::size_t i) {
    return in.facts.empty() || !in.facts[i].convention;
}
std::size_t counted_points(const ScanInputs& in) {
    std::size_t count = 0;
    for (std::size_t i = 0; i < in.P.size(); ++i)
        count += counted(in, i);
    return count;
}

// How far the estimate's interval lies beyond the bound (≤ 0: not contradicted).
double excess(const ScanPoint& p, double bound, ScanSide side) {
    return side == ScanSide::lower ? bound - p.ci_hi : p.ci_lo - bound;
}

ScanRow side_row(const ScanInputs& in, const ScanBounds& b, SideKey key, double kappa) {
    const std::vector<ScanPoint>& points = points_of(in, key.metric);
    const MetricBounds& m = bounds_of(b, key.metric);
    const std::vector<double>& bound = side_bounds(b, key);
    ScanRow row;
    row.kappa = kappa;
    std::vector<double> widths;
    widths.reserve(points.size());
    double covered_points = 0, gaps = 0, width_sum = 0;
    for (std::size_t i = 0; i < points.size(); ++i) {
        if (!counted(in, i)) continue;
        const bool inside = covered(points[i], bound[i], key.side);
        covered_points += inside;
        if (!inside) {
            row.violations += 1;
            row.largest_excess =
                std::max(row.largest_excess, excess(points[i], bound[i], key.side));
        }
        gaps += gap(points[i], bound[i], key.side);
        widths.push_back(m.upper[i] - m.lower[i]);
        width_sum += widths.back();
    }
    const double count = static_cast<double>(widths.size());
    row.coverage = count > 0 ? covered_points / count : kNaN;
    row.mean_gap = count > 0 ? gaps / count : kNaN;
    row.mean_width = count > 0 ? width_sum / count : kNaN;
    row.median_width = median(std::move(widths));
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
            if (!counted(in, i)) continue;
            const double lo = m.lower[i], hi = m.upper[i], x = points[i].estimate;
            const double outside = std::max(lo - x, 0.0) + std::max(x - hi, 0.0);
            const bool below = points[i].ci_hi < lo - kCoverageSlack;
            const bool above = points[i].ci_lo > hi + kCoverageSlack;
            covered_points += !below && !above;
            c.violations += below + above;
            widths += hi - lo;
            scores += (hi - lo) + kOutsidePenalty * outside;
            count += 1;
        }
    }
    c.coverage = count > 0 ? covered_points / count : kNaN;
    c.mean_width = count > 0 ? widths / count : kNaN;
    c.mean_score = count > 0 ? scores / count : kNaN;
    return c;
}

// Everything the scan keeps of the bounds it evaluated.
class ScanState {
  public:
    ScanState(const ScanInputs& in, const ScanBatchEvaluator& evaluate)
        : in_(in), evaluate_(evaluate), allowed_(violations_allowed(counted_points(in))) {
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
                throw_domain_error("attngeo::compare::scan_kappa",
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

    // κ* of side s: smallest mean gap among κ whose violations are within `allowed` (ties:
    // smaller κ); when none is, the fewest violations (ties: smaller gap, then smaller κ).
    int star(int s, int allowed, bool& within) const {
        int best = -1;
        within = false;
        for (const auto& [index, r] : rows_[s]) {
            const bool ok = r.violations <= allowed;
            if (best < 0) {
                best = index, within = ok;
                continue;
            }
            const ScanRow& b = rows_[s].at(best);
            const bool better =
                ok ? (!within || r.mean_gap < b.mean_gap)
                   : (!within && (r.violations < b.violations ||
                                  (r.violations == b.violations && r.mean_gap < b.mean_gap)));
            if (better) best = index, within = within || ok;
        }
        return best;
    }

    // κ₀ of side s: the smallest mean gap among κ without any violation; -1 when none.
    int violation_free(int s) const {
        int best = -1;
        for (const auto& [index, r] : rows_[s])
            if (r.violations == 0 && (best < 0 || r.mean_gap < rows_[s].at(best).mean_gap))
                best = index;
        return best;
    }

    // Whether the side's rows from `from` on (above) or up to it (below) all say the same.
    bool same_rows(int s, int from, bool above) const {
        const ScanRow& ref = rows_[s].at(from);
        for (const auto& [index, r] : rows_[s]) {
            if (above ? index < from : index > from) continue;
            // The side's own numbers only: the width also moves with the other side.
            if (r.violations != ref.violations ||
                !(std::abs(r.mean_gap - ref.mean_gap) <= kKappaFreeTolerance) ||
                !(std::abs(r.largest_excess - ref.largest_excess) <= kKappaFreeTolerance))
                return false;
        }
        return true;
    }
    // The last grid index of the plateau that starts at the grid's first κ.
    int plateau_end(int s) const {
        int last = rows_[s].begin()->first;
        for (const auto& [index, r] : rows_[s]) {
            if (!same_rows(s, index, false)) break;
            last = index;
        }
        return last;
    }

    int star(int s, bool& within) const { return star(s, allowed_, within); }
    int allowed() const { return allowed_; }

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
    int scan_begin(int s) const { return rows_[s].begin()->first; }

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
                    "attngeo::compare::scan_kappa",
                    "the evaluator returned bounds for a different number of points");
    }

    const ScanInputs& in_;
    const ScanBatchEvaluator& evaluate_;
    int allowed_;  // violations allowed by chance over the non-convention points
    std::array<std::map<int, ScanRow>, 4> rows_;           // [side] by grid index, ascending κ
    std::map<int, IntervalScoreChoice> scores_;            // by grid index (P and R evaluated)
    std::array<std::vector<double>, 4> lowest_, highest_;  // [points] per side over the grid
};

void validate(const ScanInputs& in) {
    const char* fn = "attngeo::compare::scan_kappa";
    if (in.P.empty()) throw_domain_error(fn, "no points to scan");
    if (in.R.size() != in.P.size() || in.regime.size() != in.P.size())
        throw_domain_error(fn, "P, R and regime differ in length");
    if (!in.sizes.empty() && in.sizes.size() != in.P.size())
        throw_domain_error(fn, "sizes is neither empty nor one N per point");
    for (int r : in.regime)
        if (r < 0 || r > kRegimeCount) throw_domain_error(fn, "regime outside 0..5");
    if (!in.facts.empty() && in.facts.size() != in.P.size())
        throw_domain_error(fn, "facts is neither empty nor one per point");
    for (const PointFacts& f : in.facts)
        if (!(f.N >= 1 && f.N <= f.n)) throw_domain_error(fn, "a point's N is outside 1..n");
}

// Mean gap per Table-2 regime and the degeneracies of one side, at the star envelope.
void describe_at_star(const ScanInputs& in, const ScanBounds& star, SideVerdict& v) {
    const SideKey key{v.metric, v.side};
    const std::vector<ScanPoint>& points = points_of(in, key.metric);
    const std::vector<double>& bound = side_bounds(star, key);
    std::array<double, kRegimeCount> gaps{};
    int degenerate = 0;
    int counted_here = 0;
    for (std::size_t i = 0; i < points.size(); ++i) {
        if (!counted(in, i)) continue;
        counted_here += 1;
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
    v.fraction_degenerate =
        counted_here > 0 ? static_cast<double>(degenerate) / counted_here : kNaN;
    v.points = counted_here;
    v.convention_points = static_cast<int>(points.size()) - counted_here;
}

// κ₀, the allowance and where κ* stands for a whole range of κ, for side s.
void describe_allowance(const ScanState& state, int s, int star, SideVerdict& v) {
    v.violations_allowed = state.allowed();
    v.within_allowance = v.at_star.violations <= v.violations_allowed;
    v.coverage_met = v.at_star.coverage >= kCoverageTarget;
    const int zero = state.violation_free(s);
    v.kappa_zero = zero >= 0 ? state.row(zero, s).kappa : kNaN;
    v.gap_at_kappa_zero = zero >= 0 ? state.row(zero, s).mean_gap : kNaN;
    if (v.kappa_free || v.kappa_given) return;
    if (star < kLastIndex && state.same_rows(s, star, true)) v.saturates = Saturation::above;
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
        bool within = false;
        if (state.kappa_free(s)) continue;
        const bool alone =
            kSides[s].metric == ScanMetric::P && windows == RefineWindows::precision_alone;
        add_window(alone ? precision_only : with_recall, state.star(s, within));
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
const char* to_string(Saturation saturation) {
    switch (saturation) {
        case Saturation::above:
            return "above";
        case Saturation::below:
            return "below";
        default:
            return "";
    }
}

int violations_allowed(std::size_t points) {
    if (points == 0) return 0;
    const boost::math::binomial_distribution<double> chance(static_cast<double>(points),
                                                            kViolationProbability);
    // The smallest k with P(X ≤ k) ≥ the quantile, counted up: plain, and k stays small.
    int k = 0;
    while (boost::math::cdf(chance, static_cast<double>(k)) < kAllowanceQuantile)
        ++k;
    return k;
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
        throw_domain_error("attngeo::compare::scan_kappa", "kappa must be finite and > 0");
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
        bool within = false;
        int star = state.star(s, within);
        // A plateau from the grid's first κ: κ* stands for "any κ ≤ X", X its last κ.
        const bool below =
            !v.kappa_free && star == state.scan_begin(s) && state.plateau_end(s) > star;
        if (below) star = state.plateau_end(s);
        if (given_kappa) {
            v.kappa_given = true;
            star_kappa[s] = *given_kappa;
        } else {
            v.at_star = state.row(star, s);
            describe_allowance(state, s, star, v);
            if (below) v.saturates = Saturation::below;
            v.at_grid_edge = !v.kappa_free && v.saturates == Saturation::none &&
                             (star == 0 || star == kLastIndex);
            star_kappa[s] = v.at_star.kappa;
        }
    }
    if (given_kappa) {
        const ScanBounds b = evaluate({*given_kappa}, true).at(0);
        for (int s = 0; s < 4; ++s) {
            out.sides[s].at_star = side_row(inputs, b, kSides[s], *given_kappa);
            describe_allowance(state, s, -1, out.sides[s]);
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

namespace {

// What a point's bound says beyond what every geometry guarantees (docs/design.md §7 "Deterministic
// limits"): N/n ≤ P ≤ 1 and 0 ≤ R ≤ 1, so a lower bound at or below its floor, or an upper bound
// at or above 1, says nothing. Without facts the P floor is taken as 0.
bool beyond_limit(const ScanInputs& in, std::size_t i, SideKey key, double bound) {
    if (key.side == ScanSide::upper) return bound < 1 - kCoverageSlack;
    double floor = 0;
    if (key.metric == ScanMetric::P && !in.facts.empty())
        floor = static_cast<double>(in.facts[i].N) / in.facts[i].n;
    return bound > floor + kCoverageSlack;
}

// A bound decided by a degeneracy that leaves a function of N (and n) alone: for the lower
// sides every tail factor is 1; for P upper the deciding pair has ξ ≤ 0, so the bound is
// 1 − 1/(2(N+1)); for R upper every selected token's deciding pair does, so the bound is
// exactly 1/2 (a sum of N halves over N).
bool n_only(SideKey key, const theory::MarginFlags& m, double bound) {
    if (key.side == ScanSide::lower) return m.lower_n_only();
    if (key.metric == ScanMetric::P) return m.xi_le0;
    return m.xi_le0 && bound == 0.5;
}

// The distinct N of the flagged points, ascending.
std::vector<int> sizes_of(const ScanInputs& in, const std::vector<char>& flagged) {
    std::set<int> sizes;
    for (std::size_t i = 0; i < flagged.size(); ++i) {
        if (!flagged[i]) continue;
        if (!in.facts.empty())
            sizes.insert(in.facts[i].N);
        else if (!in.sizes.empty())
            sizes.insert(in.sizes[i]);
    }
    return {sizes.begin(), sizes.end()};
}

void count_hypotheses(KappaScan& scan, const ScanInputs& in,
                      const std::vector<theory::MarginFlags>& margins) {
    HypothesisCounts h;
    for (std::size_t i = 0; i < margins.size(); ++i) {
        if (!counted(in, i)) continue;
        h.points += 1;
        h.delta_positive += !margins[i].delta_le0;
        h.sink_points += margins[i].sink_selected;
        h.delta0_positive += margins[i].sink_selected && !margins[i].delta0_le0;
    }
    scan.hypotheses = h;
}

}  // namespace

void judge_points(KappaScan& scan, const ScanInputs& in,
                  const std::vector<theory::MarginFlags>& margins) {
    const std::size_t count = in.P.size();
    if (margins.size() != count)
        throw_domain_error("attngeo::compare::judge_points",
                           "one margin flag set per point expected");
    PointJudgement& j = scan.points;
    j.convention.assign(count, 0);
    j.identity_contradicted.assign(count, 0);
    for (std::size_t i = 0; i < count; ++i)
        j.convention[i] = !counted(in, i);
    for (int s = 0; s < 4; ++s) {
        const SideKey key = kSides[s];
        SideVerdict& v = scan.sides[s];
        const std::vector<ScanPoint>& points = points_of(in, key.metric);
        const std::vector<double>& bound = side_bounds(scan.at_star, key);
        std::vector<char>& informative = j.informative[s];
        informative.assign(count, 0);
        v.informative_points = v.identity_contradicted = 0;
        v.at_limit_points = v.n_only_points = 0;
        for (std::size_t i = 0; i < count; ++i) {
            if (j.convention[i]) continue;
            const bool beyond = beyond_limit(in, i, key, bound[i]);
            const bool formula_of_N = n_only(key, margins[i], bound[i]);
            informative[i] = beyond && covered(points[i], bound[i], key.side) && !formula_of_N;
            v.informative_points += informative[i];
            v.at_limit_points += !beyond;
            v.n_only_points += formula_of_N;
            const bool at_one = !in.facts.empty() && in.facts[i].N == 1;
            if (key.side == ScanSide::upper && at_one && bound[i] < 1 - kCoverageSlack) {
                v.identity_contradicted += 1;
                j.identity_contradicted[i] = 1;
            }
        }
        v.informative_fraction =
            v.points > 0 ? static_cast<double>(v.informative_points) / v.points : 0;
        v.informative = v.points > 0 && v.informative_fraction >= kInformativeShare;
        v.informative_sizes = sizes_of(in, informative);
    }
    count_hypotheses(scan, in, margins);
}

DegenerateCounts degenerate_fractions(const ScanBounds& star, const std::vector<char>& convention) {
    DegenerateCounts c;
    double counted_points = 0;
    for (std::size_t i = 0; i < star.P.lower.size(); ++i) {
        if (i < convention.size() && convention[i]) continue;
        counted_points += 1;
        const theory::EnvelopeFlags f = theory::envelope_flags(star.P.lower[i], star.P.upper[i],
                                                               star.R.lower[i], star.R.upper[i]);
        c.P_inverted += f.P_inverted;
        c.R_inverted += f.R_inverted;
        c.P_trivial_lower += f.P_trivial_lower;
        c.R_trivial_lower += f.R_trivial_lower;
        c.P_trivial_upper += f.P_trivial_upper;
        c.R_trivial_upper += f.R_trivial_upper;
    }
    if (counted_points > 0) {
        for (double* x : {&c.P_inverted, &c.R_inverted, &c.P_trivial_lower, &c.R_trivial_lower,
                          &c.P_trivial_upper, &c.R_trivial_upper})
            *x /= counted_points;
    }
    return c;
}

}  // namespace attngeo::compare
