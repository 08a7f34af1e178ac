// 95 % bootstrap intervals over documents for every fitted parameter (docs/design.md §7
// "Uncertainty of every fit", "Fit intervals calibrated under noise"): per head and for the
// global fits, refitted on resampled per-document arrays (per_doc.safetensors), with the
// `unidentified` rule that says which intervals mean nothing.
#pragma once
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "compare/correlation.hpp"
#include "compare/fits.hpp"

namespace attngeo::compare {

// Bootstrap resamples of the fit intervals (a fixed count: with 200 replicates the expanded
// percentiles of 16 documents, 1.4 % and 98.6 %, lie between the 3rd and 4th order statistics
// of each tail).
inline constexpr int kFitReplicates = 200;

// Replicates in which the profile's shape is refitted by the full fit (the first of the
// kFitReplicates resamples): a full profile fit costs about 100 times the rest of a replicate,
// and 50 of them give a robust spread to about 10 % (1/√(2·50)) at a quarter of the cost of
// 200 (docs/commands/compare.md *Intervals* for the cost and the calibration).
inline constexpr int kProfileReplicates = 50;

// One parameter's 95 % percentile interval; lo = hi = NaN when there is none.
struct Interval {
    double lo = std::numeric_limits<double>::quiet_NaN();
    double hi = std::numeric_limits<double>::quiet_NaN();
    bool unidentified = false;  // see parameter_unidentified
    bool available() const { return lo == lo && hi == hi; }
};

// The parameters with intervals, in the column order of fits.csv then profile.csv.
enum FitParameter {
    kBeta,
    kBetaOffset,
    kCInf,
    kLambda,
    kC,
    kRho0,
    kPSink,
    kPBase,
    kEta,
    kOmega,
    kT1,
    kT2,
    kFitParameters
};
// "beta", "beta_offset", "c_inf", "lambda", "C", "rho0", "p_sink", "p_base", "eta", "omega",
// "T1", "T2": the column names of the point values, and the stems of <name>_lo, <name>_hi.
const char* parameter_name(int parameter);

// The intervals of one head (or of the global fits).                       [kFitParameters]
using ParameterIntervals = std::vector<Interval>;

// What a fit's interval is judged against: the point fits of one head.
struct PointFits {
    DecayFit decay;
    OffsetDecayFit offset;
    double lambda = 0, C = 0, rho0 = 0;
    bool has_profile = false;  // false: the profile could not be fitted (no profile intervals)
    ProfileFit profile;
};

// Whether an interval says the parameter is not identified by the data: it reaches a clamp
// of the parameter's search range (β, β_offset at 1e-6 or 50; η at its limit; ω at 0 or π
// with an oscillatory phase; p_sink below kPSinkFloor), or it spans more than a factor 10
// (hi > 10·lo, so any interval from ≤ 0 to > 0) for the positive parameters, or is wider than
// 1 (half the range of a cosine) for the signed ones (c∞, ρ0), or than π/2 (half its range)
// for ω. False without an interval. fit_intervals adds the rules that need the replicates
// (ω on the two halves of the documents; T1 with ω).
bool parameter_unidentified(int parameter, const Interval& interval, const PointFits& point);

struct FitIntervalSettings {
    int lags = 0;  // K: the lags 1..K the decay fits used
    int replicates = kFitReplicates;
    int profile_replicates = kProfileReplicates;  // at most `replicates` are used
    std::uint64_t seed = 1;
    int threads = 1;
    std::vector<char> counted;  // [heads] which heads enter the medians over heads
};

struct FitIntervals {
    bool available = false;  // false: the per-document arrays lack what the refits need
    std::string note;        // why there are no intervals (empty when available)
    int replicates = 0;
    int profile_replicates = 0;             // of which the profile's shape was refitted
    std::vector<ParameterIntervals> heads;  // [heads] (empty when not available)
    // The global fits: β, β_offset, c∞, λ, C, ρ0 as medians over the counted heads, the
    // profile parameters of the fit to the mean α over heads.
    ParameterIntervals global;
};

// Replicate r resamples the documents (compare/bootstrap.hpp, keyed by seed; the same resample
// for every head) and refits each head on the resampled means: both decay fits on the mean cos
// by lag (refit_*_decay from the point fit's β), ρ0 as the mean, p_sink as α_0 of the mean α,
// and in the first `profile_replicates` the profile's shape (p_base, η, ω, T1, T2) by the full
// fit_assumption3_profile, the point fit's own estimator. λ and C are transferred by ratio (the
// point value times resampled / full-sample Σλ_dC_d / ΣC_d and mean C_d, since the
// per-document arrays hold the median norm C_d, not the norm profile whose median defines C).
// Expanded percentile intervals (type 7 at Φ(−√(D/(D−1))·t_{D−1,0.975}) and its complement,
// Hesterberg 2015); the shape's widened to hold the point ± that multiple of 1.4826·MAD of its
// replicates. Unidentified: parameter_unidentified; ω also when a point fit with T1 < T2 has
// its fits on the two halves of the documents (the first ⌈D/2⌉, the rest) outside ω's
// interval; T1 whenever ω is, and p_base's interval then widened to every oscillation mass
// η Σ_{T1<i≤T2} cos(ωi) over ω ∈ [0, π], T1 ∈ [0, T2]. A parameter any replicate could not
// refit has no interval. `points` [heads] and `global` are the point fits. Fewer than 2
// documents, no replicates or no fit arrays give no intervals and a note; mismatched sizes or
// negative replicate counts throw std::domain_error.
FitIntervals fit_intervals(const PerDocArrays& arrays, const std::vector<PointFits>& points,
                           const PointFits& global, const FitIntervalSettings& settings);

}  // namespace attngeo::compare
