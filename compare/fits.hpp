// Fits of the paper's assumption models to measured heads (docs/design.md §7): the exponential
// cosine decay of Assumption 2 (with and without an offset) and the four-phase attention profile of
// Assumption 3. Free functions in the style of theory/: arguments are validated up front and
// rejected with a std::domain_error whose message starts with the function's name.
#pragma once
#include <vector>

#include "theory/assumption_models.hpp"

namespace attngeo::compare {

// The search interval of every decay rate: β ∈ [1e-6, 50]. A constant cosine of 1 fits at the
// lower end, cosines ≤ 0 at the upper end (e^{−50} is 2e-22, numerically zero).
inline constexpr double kBetaMin = 1e-6;
inline constexpr double kBetaMax = 50;

// Assumption 2 (paper §3.2, E cos(v_i, v_j) = e^{−β|i−j|}) fitted to measured mean cosines.
struct DecayFit {
    double beta = 0;  // least-squares decay rate
    double mae = 0;   // mean_k |c(k) − e^{−βk}| over the fitted lags
    int lags = 0;     // K, the lags 1..K used
};

// Least squares of e^{−βk} to c(k), k = 1..K (docs/design.md §7), where cosines[k − 1] = c(k): a
// scan of 241 log-spaced β in [kBetaMin, kBetaMax] brackets the minimum, then Brent's method
// (boost::math::tools::brent_find_minima) refines it in log β to about 1e-8 relative.
// Requires K ≥ 1 and every c(k) finite with |c(k)| ≤ 1 + 1e-9. When the optimum is at a bound
// of the interval (e.g. c(1) ≤ 0: β → ∞) the bound itself is returned, not a point of the
// numerically flat plateau near it.
DecayFit fit_exponential_decay(const std::vector<double>& cosines);

// Σ_k (c(k) − e^{−βk})², the objective of fit_exponential_decay (no validation; for tests).
double exponential_decay_sse(const std::vector<double>& cosines, double beta);

// The offset model c(k) ≈ c∞ + (1 − c∞) e^{−βk}: cosines that decay to a floor instead of 0.
struct OffsetDecayFit {
    double beta = 0;
    double c_inf = 0;  // the floor; unconstrained least squares
    double mae = 0;    // mean_k |c(k) − c∞ − (1 − c∞) e^{−βk}|
    int lags = 0;
};

// Least squares in both parameters. For fixed β the model is linear in c∞:
// c(k) − e_k = c∞ (1 − e_k) with e_k = e^{−βk}, so c∞(β) = Σ(c − e)(1 − e) / Σ(1 − e)²; the
// profile over β is minimised like fit_exponential_decay. Requires K ≥ 2 (two parameters).
OffsetDecayFit fit_offset_exponential_decay(const std::vector<double>& cosines);

// The same two fits started near `start_beta` (a nearby fit's β: a bootstrap replicate's
// point fit): a 17-point log scan of [start/4, 4·start], then Brent, with the bound rule above;
// the full search when the best scan point is an inner end of that bracket. Same validation.
DecayFit refit_exponential_decay(const std::vector<double>& cosines, double start_beta);
OffsetDecayFit refit_offset_exponential_decay(const std::vector<double>& cosines,
                                              double start_beta);

// Assumption 3 (paper §3.3) fitted to a measured mean attention profile.
struct ProfileFit {
    theory::Assumption3Profile profile;  // L = n − 1, p_sink = α_0, T1, T2, η, ω
    double p_base = 0;                   // (1 − p_sink) / Σ_{i≥1} w_i: the model sums to 1
    double r2_log = 0;     // 1 − SSE/SST of log α over positions 1..n−1 with α_i > 0
    double rmse_log = 0;   // √(SSE / positions)
    int positions = 0;     // positions 1..n−1 with α_i > 0 (zeros have no logarithm)
    double eta_limit = 0;  // η_max of the search for the fitted (T1, T2)
};

// Which fitted values sit at a clamp of their search range, so a reader can tell a measured
// value from the edge of what the search could return (docs/commands/compare.md).
struct ProfileClamps {
    bool eta = false;     // η at η_limit (η_limit > 0)
    bool omega = false;   // ω at π, or at 0 while an oscillatory phase exists (T1 < T2)
    bool p_sink = false;  // α_0 below kPSinkFloor: the sink carries no mass (domain edge 0)
    bool any() const { return eta || omega || p_sink; }
};

// α_0 below this is reported as at the domain's lower edge (p_sink > 0 is required).
inline constexpr double kPSinkFloor = 1e-9;

// True when beta is kBetaMin or kBetaMax to 1e-6 relative (Brent stops within about 1e-8).
bool beta_at_bound(double beta);

// The clamps of a profile fit (see ProfileClamps).
ProfileClamps profile_clamps(const ProfileFit& fit);

// Fits Assumption 3 to alpha [n] (alpha[0] = sink; Σ = 1 within 1e-6, entries finite ≥ 0,
// 0 < α_0 < 1, at least two positive α_i for i ≥ 1). p_sink = α_0 exactly (docs/design.md §4) and
// p_base follows from the normalisation, so the fitted profile is exactly
// theory::assumption3_weights of the returned parameters. The objective is the sum of squared log
// residuals over positions 1..L (positions where α_i = 0 are left out). Search: (1) a linearised
// model log α_i ≈ c + η f_i (f = 0, cos ωi, i − T2 on the three phases) whose least-squares (c, η)
// has a closed form from prefix sums, scanned over a grid of (T1, T2) with step ⌈L/32⌉ and ω on
// [0, π] with step π/(2L); (2) T1, T2 refined at step 1 around the best cell and ω rescanned;
// (3) the exact objective polished by Brent over η ∈ [0, η_max] and ω, then T1, T2 by ±1
// moves. η_max = 0.999 when T1 < T2 (weights stay positive) and keeps η(L − T2) ≤ 600. With
// T1 = T2 the oscillatory phase is absent and ω is reported as 0.
ProfileFit fit_assumption3_profile(const std::vector<double>& alpha);

// Σ_{i=1..L, α_i>0} (log α_i − log α̂_i)² with α̂ = theory::assumption3_weights(profile) and
// profile.L = alpha.size() − 1, profile.p_sink = alpha[0] (no validation of alpha; for tests).
double assumption3_log_sse(const std::vector<double>& alpha,
                           const theory::Assumption3Profile& profile);

}  // namespace attngeo::compare
