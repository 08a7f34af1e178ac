// The κ scan by test inversion (docs/design.md §7, verdict III), shared by simulate, sweep and
// compare: at each κ of a log grid, per metric (P, R) and side (lower, upper), the points where
// the simultaneous band lies wholly beyond the bound (falsified) and where the bound contradicts
// an identity (contradicted by construction); the consistent κ form a 95 % confidence set per
// side; each side gets a state, its tightest consistent κ (κ_edge), its informative points and a
// replication on split halves of the units. Several samples (models, grid points) share the coarse
// grid and the refinements of their joint set, so their sets can be intersected there.
#pragma once
#include <array>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "compare/simultaneous_band.hpp"
#include "theory/bounds.hpp"

namespace attngeo::compare {

enum class ScanMetric { P, R };
enum class ScanSide { lower, upper };
const char* to_string(ScanMetric metric);  // "P" | "R"
const char* to_string(ScanSide side);      // "lower" | "upper"
// The four sides in the order of every table: P lower, P upper, R lower, R upper.
constexpr int kSideCount = 4;
ScanMetric side_metric(int side);
ScanSide side_kind(int side);

// The grid: log10 κ from kScanLogMin to kScanLogMax in kScanCoarseStep decades; every boundary
// of a κ set bisected down to kScanFineStep; the fine grid within ± 0.25 decade of a κ_edge that
// is not at such a boundary.
constexpr double kScanLogMin = -8, kScanLogMax = 8;
constexpr double kScanCoarseStep = 0.5, kScanFineStep = 0.025;
// A bound is beyond a point's measurement or limit only by more than this (float rounding).
constexpr double kScanSlack = 1e-12;
// A point is informative only when its bound is this far inside the deterministic limit: the
// tool's "trivial" threshold (a P upper bound of 0.998 says nothing).
constexpr double kInformativeMargin = 0.01;
// A side is informative when at least this share of its points is.
constexpr double kInformativeShare = 0.05;
// A side is κ-free when no bound moves by more than this over the grid, nearly κ-free when
// none moves by more than kNearlyKappaFreeMove (a thousandth of the [0, 1] range).
constexpr double kKappaFreeTolerance = 1e-12, kNearlyKappaFreeMove = 1e-3;
// Table-2 regimes I–V as 1..5; 0 where the profile has none.
constexpr int kRegimeCount = 5;

// What a point is whatever κ: its N, its token count n, and whether a convention sets its bounds
// (N = n, or N = 1 with the sink ranked first). A non-convention point at N = 1 is an identity
// point: P(r_max,1) = R(r_min,1) = 1 exactly, so it is judged by its bounds alone.
struct PointFacts {
    int N = 0, n = 0;
    bool convention = false;
    bool identity() const { return !convention && N == 1; }
};

// The points of one sample and whose they are.
struct ScanPoints {
    std::vector<PointFacts> facts;  // [M]
    std::vector<int> regime;        // [M] 0..5
    std::vector<int> layer, head;   // [M] the (layer, head) of each point, or empty (simulate)
    // [M] the κ-independent margin flags of each point's bound row (Δ ≤ 0, …): a bound that is a
    // function of N alone is never informative.
    std::vector<theory::MarginFlags> margins;
};

// How a side's bootstrap critical value at a κ was found.
enum class CriticalRule {
    computed,      // the bootstrap over every tested point
    below_screen,  // not computed: no point reaches a lower bound of it, so none is falsified
    not_bootstrap  // Holm, exact or none
};
const char* to_string(CriticalRule rule);  // "computed", "below-screen", ""

// One side's test at one κ over one set of units.
struct SideTest {
    std::vector<double> bound;  // [M] the bound (per-unit bounds: their mean over the units)
    // [M] the mean over units of measurement − bound (an upper side) or bound − measurement (a
    // lower side): positive when the bound lies beyond the measurement
    std::vector<double> excess;
    std::vector<double> se;  // [M] its standard error (0 with the exact method)
    // Bootstrap: the band's critical value for this side at this κ; NaN with below_screen and
    // for the other methods.
    double critical = std::numeric_limits<double>::quiet_NaN();
    CriticalRule rule = CriticalRule::not_bootstrap;
};
// The three sets of units a sample is judged on: all of them and the two halves of the split
// replication (the first ⌊U/2⌋ units, the rest).
constexpr int kUnitSets = 3;
enum UnitSet { all_units = 0, first_half = 1, second_half = 2 };
// The [first, last) units of each set for U units: all, the first ⌊U/2⌋, the rest.
inline std::array<std::pair<int, int>, kUnitSets> unit_set_ranges(int units) {
    return {{{0, units}, {0, units / 2}, {units / 2, units}}};
}
struct SetTests {
    BandMethod method = BandMethod::none;
    int units = 0;
    std::array<SideTest, kSideCount> sides;
};
struct KappaTests {
    double kappa = 0;
    std::array<SetTests, kUnitSets> sets;
};
// A sample's tests at a batch of κ, in their order (κ ascending; called serially). An evaluator
// whose critical value changes with κ may screen it (CriticalRule) on every side but those set
// in `exact_sides` (bit s: side s), where it computes it over all units: the κ a side is judged
// at. 0 during the scan.
using SampleEvaluator =
    std::function<std::vector<KappaTests>(const std::vector<double>& kappas, unsigned exact_sides)>;

// One sample the scan judges.
struct Sample {
    ScanPoints points;
    SampleEvaluator evaluate;
    bool split = true;  // the halves are judged (false: too few units, or the exact method)
};

// One κ of one side's scan over one set of units.
struct ScanRow {
    double kappa = 0;
    int falsified_points = 0;     // tested points where the band lies wholly beyond the bound
    int contradicted_points = 0;  // points where the bound contradicts an identity or a limit
    double max_z = std::numeric_limits<double>::quiet_NaN();  // largest excess/se; NaN: none
    int worst_point = -1;                                     // where max_z is
    int worst_N = 0;                                          // its N
    // The critical value the points were judged with: the bootstrap's c, Holm's first-step t
    // quantile, 0 for the exact method, NaN with none (and where the bootstrap was screened).
    double critical = std::numeric_limits<double>::quiet_NaN();
    CriticalRule rule = CriticalRule::not_bootstrap;
    double mean_gap = 0;    // mean over the M points of measurement − bound (lower) or mirrored
    double mean_width = 0;  // mean over the M points of this metric's upper − lower
    bool consistent() const { return falsified_points == 0 && contradicted_points == 0; }
};

enum class SideState {
    holds,                         // a consistent κ exists; informative at κ_edge
    holds_uninformative,           // a consistent κ exists; not informative at κ_edge
    falsified_every_kappa,         // every κ of the grid has a falsified point
    kappa_free_falsified,          // the bound does not depend on κ, and it is falsified
    contradicted_by_construction,  // every κ the data allow contradicts an identity
    falsified_at_given_kappa,      // --kappa: falsified there (its κ set is still reported)
    untestable,                    // fewer than 2 units: nothing can be falsified by data
};
const char* to_string(SideState state);  // "holds", "holds-uninformative", …

// A maximal run of consistent κ on the evaluated grid.
struct KappaInterval {
    double low = 0, high = 0;
    bool open_below = false, open_above = false;  // the run reaches the grid's first/last κ
};
// "any", "none", "<=5.62", ">=3.16e+04", "0.01..5" joined by " | ".
std::string kappa_set_text(const std::vector<KappaInterval>& set);

// A point named in a verdict: where it is and how far the band lies beyond the bound there.
struct NamedPoint {
    int point = -1;  // -1: none
    int N = 0, layer = -1, head = -1;
    double z = std::numeric_limits<double>::quiet_NaN();
    double excess = std::numeric_limits<double>::quiet_NaN();
};

// The verdict on one side of one sample (over all units, the split beside it).
struct SideVerdict {
    ScanMetric metric = ScanMetric::P;
    ScanSide side = ScanSide::lower;
    SideState state = SideState::untestable;
    std::vector<ScanRow> scan;  // [κ evaluated] ascending, all units
    std::vector<KappaInterval> kappa_set;
    double kappa_edge = std::numeric_limits<double>::quiet_NaN();  // NaN: the set is empty
    double gap_at_edge = std::numeric_limits<double>::quiet_NaN();
    // The κ the side is shown and judged at: κ_edge, the given κ, or (an empty set) the κ with
    // the fewest falsified and contradicted points, then the smallest max z.
    double kappa_judged = 0;
    bool kappa_given = false;
    ScanRow at_judged;  // the scan's row there
    NamedPoint worst;   // the largest z at kappa_judged (tested points)
    // Where the bound contradicts an identity or a limit: the runs of κ with such points, and
    // the most points contradicted at one κ (a side can hold at κ where the formula escapes
    // them — large κ push the N = 1 upper bounds to 1 — and still be named for them).
    std::vector<KappaInterval> contradiction_set;
    int contradicted_most = 0;
    std::vector<int> persistent;        // points falsified at every evaluated κ, ascending
    std::vector<int> persistent_sizes;  // their N
    BandMethod band_method = BandMethod::none;
    int units = 0;
    int points = 0;             // M: non-convention points
    int convention_points = 0;  // set apart
    int identity_points = 0;    // of M, at N = 1 (judged by their bounds alone)
    // At kappa_judged: informative points (not convention or identity, beyond the limit by
    // kInformativeMargin, not falsified, not a function of N alone), why the others are not.
    int informative_points = 0, at_limit_points = 0, n_only_points = 0;
    double informative_fraction = 0;
    bool informative = false;
    std::vector<int> informative_sizes;  // the N of the informative points
    // Of the M points, the share where this side is trivial (lower ≤ 0.01, upper ≥ 0.99) or
    // its metric's envelope inverted (lower > upper), at the shown bounds.
    double fraction_degenerate = std::numeric_limits<double>::quiet_NaN();
    // κ-dependence of the bound over the grid.
    bool kappa_free = false, nearly_kappa_free = false;
    double largest_move = 0;
    int points_moving = 0;
    // Split replication: κ_edge of the first half, and the second half judged there.
    bool split = false;
    double kappa_edge_first_half = std::numeric_limits<double>::quiet_NaN();
    bool first_half_empty = false;  // the first half's set is empty (then the second's is asked)
    bool falsified_on_second_half = false;
    double gap_on_second_half = std::numeric_limits<double>::quiet_NaN();
    int replicates = -1;                               // 1 / 0, −1 where not judged
    std::array<double, kRegimeCount> gap_by_regime{};  // at kappa_judged; NaN where empty
    std::array<int, kRegimeCount> points_by_regime{};
};

// Per point at the κ each side is judged at (bounds.csv's per-point columns).
struct PointJudgement {
    std::vector<char> convention, identity;             // [M]
    std::array<std::vector<double>, kSideCount> bound;  // [side][M] at the side's kappa_judged
    std::array<std::vector<double>, kSideCount> z;      // [side][M] NaN where not tested
    std::array<std::vector<char>, kSideCount> falsified, contradicted, informative;
};

// How often Theorem 1's hypotheses hold over the non-convention points.
struct HypothesisCounts {
    int points = 0, delta_positive = 0, sink_points = 0, delta0_positive = 0;
};

// Everything the scan says about one sample (one variant).
struct KappaScan {
    std::array<SideVerdict, kSideCount> sides;  // P lower, P upper, R lower, R upper
    // The bound rows' κ: the κ of smallest mean gap over the four sides among those consistent
    // on all four (or the given κ); NaN when no κ is (each side is then shown at its own).
    double rows_kappa = std::numeric_limits<double>::quiet_NaN();
    PointJudgement points;
    HypothesisCounts hypotheses;
    // Mean over the non-convention, non-identity points of the share of [limit_lo, limit_hi]
    // the envelope at each side's shown κ rules out (docs/design.md §7): per metric and both.
    double information_share_P = 0, information_share_R = 0, information_share = 0;
    const SideVerdict& side(ScanMetric metric, ScanSide side) const;
};

// The intersection of several samples' κ sets per side (a universal κ over models, or a
// sweep's joint κ over grid points).
struct JointSide {
    std::vector<KappaInterval> kappa_set;
    double kappa_edge = std::numeric_limits<double>::quiet_NaN();  // smallest mean gap
    double gap_at_edge = std::numeric_limits<double>::quiet_NaN();
    std::vector<int> consistent_samples;  // samples whose own set is non-empty
};
struct JointScan {
    std::array<JointSide, kSideCount> sides;
};

// Scans every sample on one grid (or judges the given κ, still scanning for the sets) and, with
// more than one sample, their intersection. Throws std::domain_error on inconsistent inputs.
struct ScanResult {
    std::vector<KappaScan> samples;
    JointScan joint;
};
ScanResult scan_kappa(const std::vector<Sample>& samples, std::optional<double> given_kappa);

// The side of one sample's tests at one κ, judged point by point (the scan's own rule, exposed
// for the tests and for the bounds.csv columns): falsified, contradicted and z per point.
struct JudgedSide {
    std::vector<char> falsified, contradicted;  // [M]
    std::vector<double> z;                      // [M] NaN where not tested
    double critical = std::numeric_limits<double>::quiet_NaN();
    CriticalRule rule = CriticalRule::not_bootstrap;
};
JudgedSide judge_side(const ScanPoints& points, const SetTests& set, int side);

}  // namespace attngeo::compare
