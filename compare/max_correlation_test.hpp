// Heads as the sample for a correlation curve over N: the single-step max-|r| permutation test
// (Westfall & Young 1993, "Resampling-Based Multiple Testing", the max-T method) of "x at every
// N is uncorrelated with y", which stays exact however strongly the N are correlated with each
// other (neighbouring N are nearly the same test; Bonferroni would count each as new).
#pragma once
#include <cstdint>
#include <utility>
#include <vector>

namespace attngeo::compare {

// Permutations of the max-|r| null (fixed, so a folder's intervals are the same bits on every
// machine); with 9999 the 5 % critical value is the 500th largest maximum.
inline constexpr int kMaxCorrelationPermutations = 9999;

// The critical |r| at family-wise level `level` (0.05): the smallest c such that |r_s| > c at
// any s happens with probability ≤ level when y is exchangeable with respect to every x_s within
// each stratum — the ⌊level·(B + 1)⌋-th largest of max_s |corr(x_s, y_π)| over B permutations π
// of y within the strata (`stratum` [units]: one value for the plain correlation, the layer
// for the partial correlation given the layer, whose residuals are what a within-layer
// permutation permutes). x [S][units] and y [units] are centred on their strata's means here;
// series without variance are left out of the maximum. Permutation b shuffles each stratum by
// Fisher–Yates from SplitMix64 keyed by (seed, b). Returns 1 (nothing can be told) when fewer
// than 2 series vary or B·level < 1. std::domain_error for mismatched lengths.
double max_abs_correlation_critical(const std::vector<std::vector<double>>& x,
                                    const std::vector<double>& y, const std::vector<int>& stratum,
                                    int permutations, std::uint64_t seed, double level = 0.05);

// The interval of Fisher's form tanh(atanh r ± atanh c) around r, whose half-width on Fisher's z
// is the critical |r| c: it excludes 0 exactly when |r| > c. NaN bounds for a NaN r; c ≥ 1
// gives [−1, 1]; |r| = 1 gives [r, r].
std::pair<double, double> critical_interval(double r, double critical);

}  // namespace attngeo::compare
