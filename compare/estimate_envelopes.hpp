// The theorems' envelopes next to Monte Carlo estimates (docs/design.md §5, §7): bounds for the
// four variants, the κ scan per side with its verdict (compare/kappa_scan.hpp), the single
// interval-score κ (or the given one), and per N whether the estimate is inside.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "common/exact_sums.hpp"
#include "compare/kappa_scan.hpp"
#include "theory/bounds.hpp"

namespace attngeo::compare {

// Estimates of the four metrics at one N.
struct SizeEstimates {
    int N = 0;
    Estimate precision, recall, fmax, fmin;
};

// Inside test with the CI taken into account: a metric violates its envelope only when its
// whole 95% interval lies outside [lower, upper]; the violation is the gap (0 when inside).
// Without an interval (fewer than 2 trials, or d = ∞) the mean itself is tested.
double envelope_violation(const Estimate& e, double lower, double upper);

struct EnvelopeCheck {
    double precision_violation = 0, recall_violation = 0, fmax_violation = 0, fmin_violation = 0;
    bool precision_inside() const { return precision_violation == 0; }
    bool recall_inside() const { return recall_violation == 0; }
    bool fmax_inside() const { return fmax_violation == 0; }
    bool fmin_inside() const { return fmin_violation == 0; }
};

struct VariantEnvelope {
    theory::BoundVariant variant = theory::BoundVariant::paper;
    double kappa = 1;           // the rows' κ: the interval-score κ, or the given one
    bool kappa_fitted = false;  // false when given (--kappa) or d = ∞ (κ·d = ∞ for any κ)
    KappaScan scan;             // per side: the scan over κ, κ* and the verdict
    std::vector<theory::BoundRow> rows;  // [|sizes|] at kappa
    std::vector<EnvelopeCheck> checks;   // [|sizes|] at kappa
    double fraction_inside = 0;          // over the (N, metric ∈ {P, R}) points, at kappa
    double fraction_inside_precision = 0, fraction_inside_recall = 0;
    double mean_width = 0;  // mean of upper − lower over the same points, at kappa
    double largest_violation = 0;
    int largest_violation_N = 0;
    std::string largest_violation_metric;  // "P" | "R" | "" when none
};

// What each N of `sizes` is for one head (scan points' facts): n = |α|, and a convention point
// at N = n or at N = 1 when the sink ranks first (ties go to the lower index, so to the sink).
std::vector<PointFacts> point_facts(const theory::HeadModel& head, const std::vector<int>& sizes,
                                    theory::Ranking ranking);

// The scan's points for one head's estimates: P and R with their intervals, the regime of each
// N (0..5; `regimes` may be empty when the profile has none) and the facts of each N.
ScanInputs scan_inputs(const std::vector<SizeEstimates>& estimates, const std::vector<int>& regimes,
                       const std::vector<PointFacts>& facts);

// The κ-independent margin flags of every row, in order (the judge_points input).
std::vector<theory::MarginFlags> margins_of(const std::vector<theory::BoundRow>& rows);

// Appends the P and R bounds of `rows` to the scan's per-point bounds, in row order.
void append_scan_bounds(ScanBounds& out, const std::vector<theory::BoundRow>& rows);

// Evaluates every variant's envelope at the given d (may be +inf) for the estimates, scans κ
// per side (given or not) and puts the rows at the interval-score κ, or at `kappa` when given.
// `regimes` [|sizes|] holds the Table-2 regime of each N as 1..5 (0 or empty: none).
// `threads` parallelises over the variants.
std::vector<VariantEnvelope> envelopes(const theory::HeadModel& head, const std::vector<int>& sizes,
                                       theory::Ranking ranking, double d,
                                       const std::vector<SizeEstimates>& estimates,
                                       const std::vector<int>& regimes, std::optional<double> kappa,
                                       int threads);

}  // namespace attngeo::compare
