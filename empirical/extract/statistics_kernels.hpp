// The O(n·d) passes of the per-head statistics (statistics_fast.cpp) over one document's values
// held transposed in double: token norms, dot products with the sink and with the tokens at lags
// 1..K (cos by lag) and the per-lag cosine sums, the last two with AVX2 + FMA (the lag dots also
// AVX-512) loops beside the plain loops they match bit for bit, and ExactSum::add without its
// long double rounding.
#pragma once

#include <vector>

#include "common/cpu_features.hpp"
#include "common/exact_sums.hpp"

namespace attngeo::empirical::statistics_kernels {

// The values are float32 captures widened to double, so every product of two of them is exact
// in double: a fused multiply-add rounds exactly as the product then the sum does, and the
// AVX2 loops use FMA without changing a bit. Every dot product below is summed in ascending t
// from 0, as the plain per-pair loop of statistics.cpp sums it.

// The transposed layout's row stride: n rounded up to 8 doubles (a cache line), one line more
// where that would be a multiple of 4 KiB, so that the d rows of one column do not all fall in
// the same L1 set.
int transposed_stride(int n);

// transposed[t·ld + i] = values[i·d + t] widened to double, ld = transposed_stride(n).  [d, ld]
void transpose_to_double(const float* values, int n, int d, int ld, double* transposed);

// norm[i] = √(Σ_t x_it²), in ascending t.                                             [n]
void token_norms(const double* transposed, int n, int d, int ld, double* norm);

// to_first[j] = Σ_t x_0t·x_jt for j in [0, n).                                        [n]
void dots_with_first(const double* transposed, int n, int d, int ld, double* to_first);

// dots[(i − first)·max_lag + k − 1] = Σ_t x_it·x_(i+k)t for i in [first, last) and lags
// 1 ≤ k ≤ min(max_lag, n − 1 − i); entries past that bound are left as they are.
void lag_dots(const double* transposed, int n, int d, int ld, int max_lag, int first, int last,
              double* dots);
void lag_dots_plain(const double* transposed, int n, int d, int ld, int max_lag, int first,
                    int last, double* dots);

// cos(v_a, v_b) from ⟨v_a, v_b⟩ and the two norms: dot/(norm_a·norm_b), 0 where either norm is 0
// (the zero-norm rule's one definition: the plain and fast statistics and the snapshot use it).
inline double cosine_from_dot(double dot, double norm_a, double norm_b) {
    return norm_a == 0 || norm_b == 0 ? 0.0 : dot / (norm_a * norm_b);
}

// totals[k] += cos(v_i, v_(i+k+1)) for k < lags, from dots[k] = ⟨v_i, v_(i+k+1)⟩, own = ‖v_i‖ and
// other[k] = ‖v_(i+k+1)‖, each term cosine_from_dot(dots[k], own, other[k]).        [lags]
void add_lag_cosines(const double* dots, double own, const double* other, int lags, double* totals);
void add_lag_cosines_plain(const double* dots, double own, const double* other, int lags,
                           double* totals);
#if ATTNGEO_X86
// Only where cpu_has_avx2_fma(); the dispatchers take them when use_avx2_fma().
void lag_dots_avx2(const double* transposed, int n, int d, int ld, int max_lag, int first, int last,
                   double* dots);
void add_lag_cosines_avx2(const double* dots, double own, const double* other, int lags,
                          double* totals);
// Only where cpu_has_avx512f(); the dispatcher prefers it when use_avx512f().
void lag_dots_avx512(const double* transposed, int n, int d, int ld, int max_lag, int first,
                     int last, double* dots);
#endif

// The median of x (the mean of the two middle values for an even count; 0 when empty).
double median_of(std::vector<double> x);

// sum.add(x) bit for bit — round(x·2⁶⁴) to nearest, ties to even, as nearbyintl does in the
// default rounding mode — with integer and double operations instead of long double ones
// (a quarter of a head's statistics went to nearbyintl). Non-finite or |x| ≥ 2⁶² goes to
// sum.add(x), which throws; a running sum beyond 2⁶² throws the same std::overflow_error.
void add_exact(ExactSum& sum, double x);

}  // namespace attngeo::empirical::statistics_kernels
