// The Recall upper bound's sum over the far run (Theorem 2, eq. 15) from power sums of the gaps:
// before p⁻'s peak p⁻(ξ) = φ(0)·ξ·g(ξ²) with g a polynomial, so Σ_i p⁻(u_i/σ) over a run is a
// polynomial in 1/σ whose coefficients are κ-independent sums of u_i^(2k+1), kept per size.
#pragma once

#include <vector>

namespace attngeo::theory::far_moments {

// Positions between checkpoints: a run starting between two is summed position by position up
// to the next one, then read from the moments.
inline constexpr int kStride = 64;
// Σ u^(2k+1) for k = 0..kDegree: g is a polynomial of degree kDegree in t = ξ² on the rising
// range t ≤ 0.4375 (scripts/p_minus_polynomial.py --moments; 3.2 units of 2⁻⁵³ of g at most).
inline constexpr int kDegree = 16;
inline constexpr int kMoments = kDegree + 1;

// Suffix power sums of the gaps u_i = anchor − h_i (h ascending, so u descends) over the
// positive ones, at checkpoints c = 0, kStride, 2·kStride, … < count. Each checkpoint's sums are
// of u_i·2^(−exponent), exponent that of its own (largest) u, so every scaled gap is below 1
// and no power over- or underflows where it could matter.
struct Moments {
    int count = 0;               // positions of h
    std::vector<double> sums;    // [checkpoints][kMoments] Σ_{i≥c, u_i>0} (u_i·2^−e)^(2k+1)
    std::vector<int> exponent;   // [checkpoints] e, with u_c·2^−e in [1/2, 1)
    std::vector<char> positive;  // [checkpoints] u_c > 0 (else its sums are 0, e unused)
};
Moments build(const double* h, int count, double anchor);

// Σ_{i∈[from, count)} (1 − p⁻((anchor − h_i)·inverse_sigma)) where every such ξ lies in
// (−∞, kRisingXiLimit] (ξ ≤ 0 gives p⁻ = 0): the positions up to the first checkpoint by
// bound_kernels::rising_p_minus_sums, the rest from `moments` (built from the same h and
// anchor) in O(kMoments). Equal to the position-by-position sum within a few units of 2⁻⁵³
// of Σ p⁻; under ATTNGEO_PLAIN=1 it is that sum (the plain loop over the whole run).
double complement_sum(const Moments& moments, const double* h, int from, double anchor,
                      double inverse_sigma);
// The same from the moments wherever a checkpoint allows, whatever ATTNGEO_PLAIN says (the
// tests compare it with the plain loop).
double complement_sum_by_moments(const Moments& moments, const double* h, int from, double anchor,
                                 double inverse_sigma);

}  // namespace attngeo::theory::far_moments
