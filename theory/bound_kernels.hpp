// The upper bounds' inner loop (Theorems 1–2, eqs. 13 and 15) over a size's selected positions,
// vectorised with AVX2 and glibc's vector exp (libmvec) and, beside it, the plain loop in the
// same four-lane order; theory/bounds.cpp calls the dispatcher, the tests compare the two.
#pragma once

#include "common/cpu_features.hpp"

namespace attngeo::theory::bound_kernels {

// max_i p_i and Σ_i (1 − p_i) over the positions i.
struct PMinusSums {
    double largest = 0, complement_sum = 0;
};

// p_i = max(p⁻(near[i]), p⁻(far[i])) with p⁻(ξ) = φ(ξ)/(ξ + 1/ξ) for ξ > 0 and 0 otherwise, or
// 1/2 where half[i] (near, far, half: [count]). The AVX2 loop's exp is libmvec's (within 4 ulp),
// the plain loop's std::exp, so the two differ by exp's few ulps only. The dispatcher takes the
// AVX2 loop when use_avx2_fma() (not under ATTNGEO_PLAIN=1).
PMinusSums p_minus_sums(const double* near, const double* far, const char* half, int count);
PMinusSums p_minus_sums_plain(const double* near, const double* far, const char* half, int count);
#if ATTNGEO_X86
// Only where cpu_has_avx2_fma().
PMinusSums p_minus_sums_avx2(const double* near, const double* far, const char* half, int count);
#endif

}  // namespace attngeo::theory::bound_kernels
