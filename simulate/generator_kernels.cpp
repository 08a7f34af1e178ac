// AVX2 row kernels of the AR(1) generator and their plain twins; see generator_kernels.hpp.
// No "fma" target: the vector arithmetic must round like the plain arithmetic.
#include "simulate/generator_kernels.hpp"

#include <cmath>

#include "common/cpu_features.hpp"
#include "common/sum_of_squares.hpp"

#if ATTNGEO_X86
#include <immintrin.h>
#endif

namespace attngeo::simulate::generator_kernels {
namespace {

#if ATTNGEO_X86
// row ← alpha·(row·factor): two roundings per entry, as the two passes they replace.
ATTNGEO_TARGET_AVX2 void scale_row_twice_avx2(double* row, double factor, double alpha, int d) {
    const __m256d f = _mm256_set1_pd(factor), a = _mm256_set1_pd(alpha);
    int k = 0;
    for (; k + 4 <= d; k += 4)
        _mm256_storeu_pd(row + k, _mm256_mul_pd(a, _mm256_mul_pd(_mm256_loadu_pd(row + k), f)));
    for (; k < d; ++k)
        row[k] = alpha * (row[k] * factor);
}
#endif

double length_factor(double squares, double norm) {
    const double length = std::sqrt(squares);
    return length > 0 ? norm / length : 0.0;
}

}  // namespace

#if ATTNGEO_X86
ATTNGEO_TARGET_AVX2 void ar1_row_avx2(double* row, double* a, double* sink, const double* g0,
                                      const Ar1Row& step, int d) {
    const __m256d scale = _mm256_set1_pd(step.scale), r = _mm256_set1_pd(step.r);
    const __m256d innovation = _mm256_set1_pd(step.innovation);
    const __m256d weight = _mm256_set1_pd(step.weight), rho0 = _mm256_set1_pd(step.rho0);
    const __m256d keep = _mm256_set1_pd(step.keep);
    int k = 0;
    for (; k + 4 <= d; k += 4) {
        const __m256d epsilon = _mm256_mul_pd(_mm256_loadu_pd(row + k), scale);
        const __m256d state = step.first ? epsilon
                                         : _mm256_add_pd(_mm256_mul_pd(r, _mm256_loadu_pd(a + k)),
                                                         _mm256_mul_pd(innovation, epsilon));
        _mm256_storeu_pd(a + k, state);
        if (step.exact) {
            _mm256_storeu_pd(row + k, state);
            _mm256_storeu_pd(
                sink + k, _mm256_add_pd(_mm256_loadu_pd(sink + k), _mm256_mul_pd(weight, state)));
        } else {
            _mm256_storeu_pd(row + k, _mm256_add_pd(_mm256_mul_pd(rho0, _mm256_loadu_pd(g0 + k)),
                                                    _mm256_mul_pd(keep, state)));
        }
    }
    if (k < d) ar1_row_plain(row + k, a + k, sink + k, g0 + k, step, d - k);
}

void normalise_and_scale_row_avx2(double* row, double norm, double alpha, int d) {
    scale_row_twice_avx2(row, length_factor(sum_of_squares_avx2(row, d), norm), alpha, d);
}
#endif

void ar1_row_plain(double* row, double* a, double* sink, const double* g0, const Ar1Row& step,
                   int d) {
    for (int k = 0; k < d; ++k) {
        const double epsilon = row[k] * step.scale;
        a[k] = step.first ? epsilon : step.r * a[k] + step.innovation * epsilon;
        if (step.exact) {
            row[k] = a[k];
            sink[k] += step.weight * a[k];
        } else {
            row[k] = step.rho0 * g0[k] + step.keep * a[k];
        }
    }
}

void ar1_row(double* row, double* a, double* sink, const double* g0, const Ar1Row& step, int d) {
#if ATTNGEO_X86
    if (use_avx2()) {
        ar1_row_avx2(row, a, sink, g0, step, d);
        return;
    }
#endif
    ar1_row_plain(row, a, sink, g0, step, d);
}

void normalise_and_scale_row_plain(double* row, double norm, double alpha, int d) {
    const double factor = length_factor(sum_of_squares_plain(row, d), norm);
    for (int k = 0; k < d; ++k)
        row[k] = alpha * (row[k] * factor);
}

void normalise_and_scale_row(double* row, double norm, double alpha, int d) {
#if ATTNGEO_X86
    if (use_avx2()) {
        normalise_and_scale_row_avx2(row, norm, alpha, d);
        return;
    }
#endif
    normalise_and_scale_row_plain(row, norm, alpha, d);
}

// α = 1 multiplies exactly, so these are the fused pass's bits.
void normalise_row_plain(double* row, double norm, int d) {
    normalise_and_scale_row_plain(row, norm, 1.0, d);
}

void normalise_row(double* row, double norm, int d) {
    normalise_and_scale_row(row, norm, 1.0, d);
}

}  // namespace attngeo::simulate::generator_kernels
