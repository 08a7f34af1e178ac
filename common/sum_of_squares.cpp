// Sum of squares in the order sum_of_squares.hpp states; the AVX2 loop keeps the eight partial
// sums in two registers (lanes p0..p3 and p4..p7), without FMA so products round as the plain
// loop's do.
#include "common/sum_of_squares.hpp"

#if ATTNGEO_X86
#include <immintrin.h>
#endif

namespace attngeo {

#if ATTNGEO_X86
ATTNGEO_TARGET_AVX2 double sum_of_squares_avx2(const double* row, int d) {
    __m256d low = _mm256_setzero_pd(), high = _mm256_setzero_pd();  // p0..p3, p4..p7
    int k = 0;
    for (; k + 8 <= d; k += 8) {
        const __m256d x0 = _mm256_loadu_pd(row + k), x1 = _mm256_loadu_pd(row + k + 4);
        low = _mm256_add_pd(low, _mm256_mul_pd(x0, x0));
        high = _mm256_add_pd(high, _mm256_mul_pd(x1, x1));
    }
    alignas(32) double partial[8];
    _mm256_store_pd(partial, low);
    _mm256_store_pd(partial + 4, high);
    for (; k < d; ++k)
        partial[k % 8] += row[k] * row[k];
    return ((partial[0] + partial[4]) + (partial[2] + partial[6])) +
           ((partial[1] + partial[5]) + (partial[3] + partial[7]));
}
#endif

double sum_of_squares_plain(const double* row, int d) {
    double partial[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    for (int k = 0; k < d; ++k)
        partial[k % 8] += row[k] * row[k];
    return ((partial[0] + partial[4]) + (partial[2] + partial[6])) +
           ((partial[1] + partial[5]) + (partial[3] + partial[7]));
}

double sum_of_squares(const double* row, int d) {
#if ATTNGEO_X86
    if (use_avx2()) return sum_of_squares_avx2(row, d);
#endif
    return sum_of_squares_plain(row, d);
}

}  // namespace attngeo
