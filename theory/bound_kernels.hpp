// The upper bounds' inner loops (Theorems 1–2, eqs. 13 and 15) over a size's selected positions,
// vectorised with AVX2 and glibc's vector exp (libmvec) and, beside each, the plain loop in the
// same four-lane order; theory/bounds.cpp calls the dispatchers, the tests compare the twins.
#pragma once

#include "common/cpu_features.hpp"

namespace attngeo::theory::bound_kernels {

// max_i p_i and Σ_i (1 − p_i) over the positions i.
struct PMinusSums {
    double largest = 0, complement_sum = 0;
};

// p⁻(ξ) = φ(ξ)/(ξ + 1/ξ) for ξ > 0 and 0 otherwise, the pair probability of eq. (9).
//
// One p⁻(ξ) by the plain loops' formulas: exp form, and the polynomial before the peak
// (0 < ξ ≤ kRisingXiLimit; see rising_p_minus_sums).
double p_minus_at(double xi);
double rising_p_minus_at(double xi);

// Two candidate gaps per position: p_i = max(p⁻(near[i]), p⁻(far[i])) (near, far: [count]).
// The AVX2 loop's exp is libmvec's (within 4 ulp), the plain loop's std::exp, so the two differ
// by exp's few ulps only. The dispatchers take the AVX2 loop when use_avx2_fma() (not under
// ATTNGEO_PLAIN=1).
PMinusSums p_minus_sums(const double* near, const double* far, int count);
PMinusSums p_minus_sums_plain(const double* near, const double* far, int count);

// One gap per position, to a common anchor: p_i = p⁻((anchor − h[i])·inverse_sigma) (h: [count]).
PMinusSums anchored_p_minus_sums(const double* h, int count, double anchor, double inverse_sigma);
PMinusSums anchored_p_minus_sums_plain(const double* h, int count, double anchor,
                                       double inverse_sigma);

// The same where every gap lies before p⁻'s peak, 0 < ξ_i ≤ ξ* = √(√2 − 1) (ξ ≤ 0 gives 0):
// there p⁻(ξ) = φ(0)·ξ·g(ξ²) with g(t) = exp(−t/2)/(1 + t) smooth, so g is a polynomial of
// degree 5, 10 or 14 by the tier of t (scripts/p_minus_polynomial.py; within 2 units of 2⁻⁵³
// of g) and no exp is needed. h must ascend (ξ descends), so each tier is one stretch. Both
// loops evaluate the polynomials with fused multiply-adds, so they agree bit for bit.
PMinusSums rising_p_minus_sums(const double* h, int count, double anchor, double inverse_sigma);
PMinusSums rising_p_minus_sums_plain(const double* h, int count, double anchor,
                                     double inverse_sigma);
// The largest ξ rising_p_minus_sums accepts (its polynomial's range is t = ξ² ≤ 0.4375).
constexpr double kRisingXiLimit = 0.66;
// φ(0) = 1/√(2π), the factor of every p⁻ form here and in far_moments.
constexpr double kInvSqrt2Pi = 0.398942280401432677939946059934;

#if ATTNGEO_X86
// Only where cpu_has_avx2_fma().
PMinusSums p_minus_sums_avx2(const double* near, const double* far, int count);
PMinusSums anchored_p_minus_sums_avx2(const double* h, int count, double anchor,
                                      double inverse_sigma);
PMinusSums rising_p_minus_sums_avx2(const double* h, int count, double anchor,
                                    double inverse_sigma);
#endif

}  // namespace attngeo::theory::bound_kernels
