// The theorems' envelopes next to Monte Carlo estimates (SPEC §5, §7): bounds for the three
// variants, κ given or fitted (best agreement, ties to the narrower envelope; and the largest κ
// keeping ≥ 95% of lower bounds), and per N whether the estimate is inside.
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "simulate/sums.hpp"
#include "theory/bounds.hpp"

namespace attngeo::simulate {

// ---- The κ search (SPEC §7), shared with compare/: generic over how points are scored.
// Agreement of an envelope at one κ: fraction of points inside, and a width (any measure
// where smaller is narrower, e.g. the mean or sum of upper − lower).
struct KappaAgreement {
    double fraction = 0, width = 0;
    // Better: more points inside; on a tie, the narrower envelope.
    bool better_than(const KappaAgreement& other) const {
        return fraction != other.fraction ? fraction > other.fraction : width < other.width;
    }
};
// Scores a batch of κ values (the whole grid of one stage, so a caller can parallelise).
using KappaScorer = std::function<std::vector<KappaAgreement>(const std::vector<double>& kappas)>;
// κ maximising agreement over log10 κ ∈ [−4, 2]: a grid with step `steps[0]` decades, then for
// each further step a grid of that step over ± the previous step around the best point so far.
// Ties keep the earlier point (the smaller κ within a stage, the earlier stage across stages).
double fit_kappa_log_grid(const KappaScorer& score, const std::vector<double>& steps);
// Largest κ in [1e-4, 1e2] with holds(κ), by 40 bisection steps in log κ, assuming holds is
// monotone (true below some κ); NaN when it fails already at 1e-4.
double largest_kappa_where(const std::function<bool(double kappa)>& holds);

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
    double kappa = 1;
    bool kappa_fitted = false;
    // Largest κ in [1e-4, 1e2] with ≥ 95% of the P and R lower bounds holding; NaN if none.
    double kappa_lower95 = 0;
    std::vector<theory::BoundRow> rows;  // [|sizes|]
    std::vector<EnvelopeCheck> checks;   // [|sizes|]
    double fraction_inside = 0;          // over the (N, metric ∈ {P, R}) points
    double fraction_inside_precision = 0, fraction_inside_recall = 0;
    double largest_violation = 0;
    int largest_violation_N = 0;
    std::string largest_violation_metric;  // "P" | "R" | "" when none
};

// Evaluates every variant's envelope at the given d (may be +inf) for the estimates; with
// no κ, fits it per variant. `threads` parallelises the κ search.
std::vector<VariantEnvelope> envelopes(const theory::HeadModel& head, const std::vector<int>& sizes,
                                       theory::Ranking ranking, double d,
                                       const std::vector<SizeEstimates>& estimates,
                                       std::optional<double> kappa, int threads);

}  // namespace attngeo::simulate
