// The κ scan and the verdict of docs/design.md §7, shared by simulate/ and compare/: for one bound
// variant, per metric (P, R) and side (lower, upper), violations, coverage, width and gap over a
// log grid of κ, the tightest κ within the chance allowance of violations (κ*), the tightest κ
// without any (κ₀), the single interval-score κ, and which points are informative.
#pragma once
#include <array>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "theory/bounds.hpp"

namespace attngeo::compare {

enum class ScanMetric { P, R };
enum class ScanSide { lower, upper };
const char* to_string(ScanMetric metric);  // "P" | "R"
const char* to_string(ScanSide side);      // "lower" | "upper"

// The grid: log10 κ from kScanLogMin to kScanLogMax in kScanCoarseStep decades, then every
// kScanFineStep decades within ± kScanCoarseStep of each side's κ* and of the interval-score κ.
constexpr double kScanLogMin = -8, kScanLogMax = 8;
constexpr double kScanCoarseStep = 0.25, kScanFineStep = 0.025;
constexpr double kCoverageTarget = 0.95;
// Under "the bound holds" a point's 95 % interval lies wholly beyond it with probability at most
// 2.5 %; the allowance of M points is the kAllowanceQuantile quantile of Binomial(M, that).
constexpr double kViolationProbability = 0.025, kAllowanceQuantile = 0.95;
// A side is called informative only where at least this share of its points is.
constexpr double kInformativeShare = 0.05;
// A side is κ-free when none of its bounds moves by more than this over the grid.
constexpr double kKappaFreeTolerance = 1e-12;
// A side that is not κ-free is nearly κ-free when no bound moves by more than this over the
// grid: a thousandth of the metric's [0, 1] range, below the Monte Carlo and bootstrap errors
// of the estimates, so choosing κ barely changes what the side says.
constexpr double kNearlyKappaFreeMove = 1e-3;
// A bound is not contradicted while it stays within this of the estimate's interval.
constexpr double kCoverageSlack = 1e-12;

// One metric value a bound is checked against: the estimate and its 95 % interval (both ends
// equal to the estimate when there is no interval: d = ∞, a single document).
struct ScanPoint {
    double estimate = 0, ci_lo = 0, ci_hi = 0;
};

// The bounds of every point at one κ.                                              [points]
struct MetricBounds {
    std::vector<double> lower, upper;
};
struct ScanBounds {
    MetricBounds P, R;
};
// Bounds of all points at one κ (an evaluator may parallelise inside; it is called serially).
using ScanEvaluator = std::function<ScanBounds(double kappa)>;
// Bounds of all points at several κ, in their order: an evaluator whose per-point terms are
// large reads them once per batch instead of once per κ. Without with_recall only the P bounds
// are read (R may be left empty), so an evaluator may skip the R bounds' cost.
using ScanBatchEvaluator =
    std::function<std::vector<ScanBounds>(const std::vector<double>& kappas, bool with_recall)>;
// Which bounds the refinement around each answer evaluates: all four at every κ, or only the P
// bounds in the windows of the P sides (where R's sum over the selected tokens is the cost).
enum class RefineWindows { all_sides, precision_alone };

// Table-2 regimes I–V as 1..5; 0 where the profile has no regimes.
constexpr int kRegimeCount = 5;

// What a point is, whatever κ and the variant: its N, its token count n and whether its bounds
// are set by a convention (N = n, or I_N∖{0} empty) rather than by the theorems.
struct PointFacts {
    int N = 0, n = 0;
    bool convention = false;
};

struct ScanInputs {
    std::vector<ScanPoint> P, R;    // [points] the estimates
    std::vector<int> regime;        // [points] 0..5
    std::vector<int> sizes;         // [points] each point's N, or empty when not named by N
    std::vector<PointFacts> facts;  // [points], or empty: no convention point, limits unknown
};

// The Binomial(M, kViolationProbability) quantile kAllowanceQuantile: the violations that M
// points may show by chance when every bound holds (0 when M = 0).
int violations_allowed(std::size_t points);

// One κ of one side's scan, over the non-convention points (all points without facts).
struct ScanRow {
    double kappa = 0;
    double coverage = 0;        // fraction of points whose interval does not contradict the bound
    double mean_width = 0;      // mean of upper − lower of this metric at κ
    double median_width = 0;    // median of the same
    double mean_gap = 0;        // mean of estimate − lower (lower side) or upper − estimate
    int violations = 0;         // points whose 95 % interval lies wholly beyond the bound
    double largest_excess = 0;  // the largest distance of such an interval beyond it; 0: none
};

// Where a side's bound stops changing: κ* then stands for every κ beyond it.
enum class Saturation { none, above, below };
const char* to_string(Saturation saturation);  // "" | "above" | "below"

// The verdict on one (metric, side) of a variant.
struct SideVerdict {
    ScanMetric metric = ScanMetric::P;
    ScanSide side = ScanSide::lower;
    std::vector<ScanRow> scan;      // [κ evaluated] ascending κ
    ScanRow at_star;                // the row of κ*
    bool coverage_met = false;      // coverage at κ* ≥ kCoverageTarget
    int points = 0;                 // M: the non-convention points every count below is out of
    int convention_points = 0;      // points whose bound a convention sets (outside every count)
    int violations_allowed = 0;     // violations_allowed(M)
    bool within_allowance = false;  // violations at κ* ≤ the allowance (else κ* = fewest)
    // κ₀: the tightest κ with no violation at all, and its mean gap; NaN when none has none.
    double kappa_zero = 0, gap_at_kappa_zero = 0;
    Saturation saturates = Saturation::none;  // κ* means "any κ ≥ κ*" (above) or "≤" (below)
    bool at_grid_edge = false;  // κ* is the grid's first or last κ and the side is not κ-free
    bool kappa_free = false;    // the bound is the same at every κ of the grid
    // Points whose bound moves by more than kKappaFreeTolerance over the grid (their indices,
    // ascending) and the largest move (highest − lowest bound over the grid) of any point.
    std::vector<std::size_t> moving_points;
    double largest_move = 0;
    std::vector<int> moving_sizes;   // the distinct N of moving_points, ascending (needs sizes)
    bool nearly_kappa_free = false;  // not κ-free, and largest_move ≤ kNearlyKappaFreeMove
    bool kappa_given = false;        // κ* is the user's --kappa, not a scan result
    std::array<double, kRegimeCount> gap_by_regime{};  // mean gap at κ* in I..V; NaN if none
    std::array<int, kRegimeCount> points_by_regime{};  // points in I..V
    double fraction_degenerate = 0;  // trivial side or inverted envelope, at each side's κ*
    // Informative points at κ* (judge_points): non-convention, strictly tighter than the
    // deterministic limit, not violated, not a function of N alone. Their count, share of M,
    // distinct N (when named by N), and whether the share reaches kInformativeShare.
    int informative_points = 0;
    // Why the others are not (a point may have several reasons): at or beyond the limit, a
    // function of N alone; the violated ones are at_star.violations.
    int at_limit_points = 0, n_only_points = 0;
    double informative_fraction = 0;
    std::vector<int> informative_sizes;
    bool informative = false;
    // Upper sides: points at N = 1 where the bound lies below the identity P(r_max,1) = 1
    // (R(r_min,1) = 1), contradicted by construction; 0 for the lower sides.
    int identity_contradicted = 0;
};

// The single κ for both sides and both metrics (mean interval score; Gneiting & Raftery 2007).
struct IntervalScoreChoice {
    double kappa = 0;
    int violations = 0;     // (point, metric, side) whose interval lies wholly beyond the bound
    double coverage = 0;    // fraction of (point, metric) whose interval meets [lower, upper]
    double mean_width = 0;  // over both metrics
    double mean_score = 0;  // (upper − lower) + (2/0.05)·distance of the estimate outside
};

// Per point at the star envelope, from judge_points (empty before).
struct PointJudgement {
    std::vector<char> convention;                  // [points]
    std::vector<char> identity_contradicted;       // [points] P or R upper < 1 at N = 1
    std::array<std::vector<char>, 4> informative;  // [side][points] in KappaScan::sides order
};

// How often Theorem 1's hypotheses hold over the non-convention points of a variant.
struct HypothesisCounts {
    int points = 0;           // M
    int delta_positive = 0;   // Δ > 0
    int sink_points = 0;      // the sink is in I_N (the Δ0 term exists)
    int delta0_positive = 0;  // of those, Δ0 > 0
};

struct KappaScan {
    std::array<SideVerdict, 4> sides;  // P lower, P upper, R lower, R upper
    IntervalScoreChoice interval_score;
    ScanBounds at_star;  // each side's bounds at its own κ*: P.lower at κ*(P, lower), …
    PointJudgement points;
    HypothesisCounts hypotheses;
    const SideVerdict& side(ScanMetric metric, ScanSide side) const;
};

// Scans κ over the grid (or, with given_kappa, reports every side at that κ while still
// scanning for the table). Throws std::domain_error on inconsistent point counts.
KappaScan scan_kappa(const ScanInputs& inputs, const ScanEvaluator& evaluate,
                     std::optional<double> given_kappa);
KappaScan scan_kappa(const ScanInputs& inputs, const ScanBatchEvaluator& evaluate,
                     std::optional<double> given_kappa, RefineWindows windows);

// Judges every point at the star envelope (docs/design.md §7 "Informative"), given its
// κ-independent margin flags [points] (any κ's bound rows): fills scan.points, each side's
// informative and identity counts, and scan.hypotheses. Without facts every point counts and no
// limit is known.
void judge_points(KappaScan& scan, const ScanInputs& inputs,
                  const std::vector<theory::MarginFlags>& margins);

// The fraction of points where the upper ≥ lower check fails or a side is trivial, per side of
// each metric, from the star envelope: the flags of theory::envelope_flags.
struct DegenerateCounts {
    double P_inverted = 0, R_inverted = 0;
    double P_trivial_lower = 0, R_trivial_lower = 0, P_trivial_upper = 0, R_trivial_upper = 0;
};
// Over the points not flagged in `convention` [points] (empty: every point).
DegenerateCounts degenerate_fractions(const ScanBounds& star, const std::vector<char>& convention);

}  // namespace attngeo::compare
