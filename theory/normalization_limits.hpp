// The predecessor paper's measurements on one attention row ("Limitations of Normalization in
// Attention Mechanism", NeurIPS 2025, arXiv 2508.17821; docs/design.md §14): the distance between
// the non-selected mass and s(N), its expectation under a uniformly random selection, and the
// sensitivity of softmax to its scores at a temperature. Their bounds are not implemented (their
// formulas are not available to us): these are the measurements. Invalid arguments throw
// std::domain_error naming the function.
#pragma once
#include <cstdint>
#include <vector>

#include "theory/metrics.hpp"

namespace attngeo::theory {

// d̃(N) = ‖Σ_{i∉I_N} y_i − s(N)‖ for each N of `sizes` (1 ≤ N ≤ n), with y = contributions
// [n, d] in token order and I_N the first N entries of `order` (π, selection_order): evaluated
// as ‖Y − 2 s(N)‖ with Y = Σ_i y_i summed in token order and s(N) in rank order. At N = n it is
// ‖Y‖.                                                                          [|sizes|]
std::vector<double> selection_distance(const RowMatrix& contributions,
                                       const std::vector<int>& order,
                                       const std::vector<int>& sizes);

// E_J ‖Σ_{i∉J} y_i − Σ_{i∈J} y_i‖² over J uniform among the N-subsets of the n tokens, exactly:
// with c_i = −1 on J and +1 off it, E[c_i c_j] = ((n − 2N)² − n) / (n (n − 1)) for i ≠ j, so the
// expectation is S + c (‖Y‖² − S), S = Σ_i ‖y_i‖² (c = 0 when n = 1).
double random_selection_mean_square(const RowMatrix& contributions, int N);

// A Monte Carlo estimate: the sample mean and its standard error (sample sd / √samples).
struct MonteCarloEstimate {
    double mean = 0;
    double standard_error = 0;
    int samples = 0;
};

// E_J ‖Σ_{i∉J} y_i − Σ_{i∈J} y_i‖ (the predecessor's random-selection expectation E, which they
// bound by Jensen) from `subsets` uniform N-subsets drawn by partial Fisher–Yates on
// SplitMix64(seed). The smaller of J and its complement is drawn (the distance is the same), so
// a draw costs O(min(N, n − N)·d). subsets ≥ 2.
MonteCarloEstimate random_selection_distance(const RowMatrix& contributions, int N, int subsets,
                                             std::uint64_t seed);

// g(T, ε) = ‖softmax((l + ε v)/T) − softmax(l/T)‖₂ / ε for scores l [n] (−∞ allowed: a masked
// key has weight 0 at every T; at least one finite), a direction v [n], T > 0 and ε > 0. Both
// softmaxes in double, each shifted by its own row maximum; a finite score whose l + εv
// overflows is refused.
double softmax_sensitivity(const std::vector<double>& scores, const std::vector<double>& direction,
                           double temperature, double epsilon);

// A uniformly distributed unit vector of Rⁿ: n standard normals (Box–Muller on SplitMix64(seed)'s
// open uniforms, the cosine branch) divided by their norm.                                [n]
std::vector<double> random_unit_direction(int n, std::uint64_t seed);

// The predecessor's reference line for g: min{1/(4T), √2}.
double predecessor_sensitivity_reference(double temperature);
// The spectral norm bound of the Jacobian of softmax(l/T), 1/(2T) (diag(p) − ppᵀ has norm
// ≤ 1/2): the 1/(4T) above bounds only its diagonal (docs/design.md §14).
double softmax_jacobian_bound(double temperature);

}  // namespace attngeo::theory
