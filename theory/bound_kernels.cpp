// p⁻ sums of the upper bounds, AVX2 + libmvec and plain; see bound_kernels.hpp. Both compute
// p⁻ as φ(ξ)·ξ/(ξ² + 1) = φ(ξ)/(ξ + 1/ξ) (one division; a tiny ξ gives the limit 0 directly)
// and keep Σ(1 − p) in four lanes combined in one order, so only exp's rounding differs.
#include "theory/bound_kernels.hpp"

#if ATTNGEO_X86
#include <immintrin.h>
#endif

#include <algorithm>
#include <cmath>
#include <cstring>

namespace attngeo::theory::bound_kernels {
namespace {

constexpr double kInvSqrt2Pi = 0.398942280401432677939946059934;

inline double p_minus_of_gap(double xi) {
    return xi > 0 ? kInvSqrt2Pi * std::exp(-0.5 * xi * xi) * xi / (xi * xi + 1) : 0.0;
}

// p_i of position i: 1/2 where half[i], else the larger p⁻ of its two candidate gaps.
inline double position_p(const double* near, const double* far, const char* half, int i) {
    return half[i] ? 0.5 : std::max(p_minus_of_gap(near[i]), p_minus_of_gap(far[i]));
}

// Positions [from, count) one at a time: the tail the four lanes leave.
void add_positions(const double* near, const double* far, const char* half, int from, int count,
                   PMinusSums& out) {
    for (int i = from; i < count; ++i) {
        const double p = position_p(near, far, half, i);
        out.largest = std::max(out.largest, p);
        out.complement_sum += 1 - p;
    }
}

// The four lanes combined in one order, the same for both loops.
PMinusSums reduce_lanes(const double (&largest)[4], const double (&sums)[4]) {
    PMinusSums out;
    out.largest = std::max(std::max(largest[0], largest[1]), std::max(largest[2], largest[3]));
    out.complement_sum = (sums[0] + sums[1]) + (sums[2] + sums[3]);
    return out;
}

#if ATTNGEO_X86
extern "C" ATTNGEO_TARGET_AVX2_FMA __m256d
_ZGVdN4v_exp(__m256d x);  // glibc's libmvec, within 4 ulp of exp

ATTNGEO_TARGET_AVX2_FMA inline __m256d p_minus4(__m256d xi) {
    const __m256d positive = _mm256_cmp_pd(xi, _mm256_setzero_pd(), _CMP_GT_OQ);
    const __m256d x = _mm256_blendv_pd(_mm256_set1_pd(1.0), xi, positive);
    const __m256d density =
        _mm256_mul_pd(_mm256_set1_pd(kInvSqrt2Pi),
                      _ZGVdN4v_exp(_mm256_mul_pd(_mm256_set1_pd(-0.5), _mm256_mul_pd(x, x))));
    const __m256d p = _mm256_div_pd(_mm256_mul_pd(density, x),
                                    _mm256_add_pd(_mm256_mul_pd(x, x), _mm256_set1_pd(1.0)));
    return _mm256_and_pd(p, positive);
}

// All ones in the lanes whose half byte (of four at `half`) is set.
ATTNGEO_TARGET_AVX2_FMA inline __m256d half_lanes(const char* half) {
    int flags;
    std::memcpy(&flags, half, sizeof flags);
    const __m256i halves = _mm256_cvtepi8_epi64(_mm_cvtsi32_si128(flags));
    return _mm256_castsi256_pd(_mm256_cmpgt_epi64(halves, _mm256_setzero_si256()));
}
#endif

}  // namespace

#if ATTNGEO_X86
ATTNGEO_TARGET_AVX2_FMA PMinusSums p_minus_sums_avx2(const double* near, const double* far,
                                                     const char* half, int count) {
    __m256d largest = _mm256_setzero_pd(), complement = _mm256_setzero_pd();
    const __m256d one = _mm256_set1_pd(1.0), one_half = _mm256_set1_pd(0.5);
    int i = 0;
    for (; i + 4 <= count; i += 4) {
        __m256d p =
            _mm256_max_pd(p_minus4(_mm256_loadu_pd(near + i)), p_minus4(_mm256_loadu_pd(far + i)));
        p = _mm256_blendv_pd(p, one_half, half_lanes(half + i));
        largest = _mm256_max_pd(largest, p);
        complement = _mm256_add_pd(complement, _mm256_sub_pd(one, p));
    }
    alignas(32) double lanes[4], sums[4];
    _mm256_store_pd(lanes, largest);
    _mm256_store_pd(sums, complement);
    PMinusSums out = reduce_lanes(lanes, sums);
    add_positions(near, far, half, i, count, out);
    return out;
}
#endif

PMinusSums p_minus_sums_plain(const double* near, const double* far, const char* half, int count) {
    double largest[4] = {0, 0, 0, 0}, sums[4] = {0, 0, 0, 0};
    const int whole = count / 4 * 4;
    for (int i = 0; i < whole; ++i) {
        const double p = position_p(near, far, half, i);
        largest[i % 4] = std::max(largest[i % 4], p);
        sums[i % 4] += 1 - p;
    }
    PMinusSums out = reduce_lanes(largest, sums);
    add_positions(near, far, half, whole, count, out);
    return out;
}

PMinusSums p_minus_sums(const double* near, const double* far, const char* half, int count) {
#if ATTNGEO_X86
    if (use_avx2_fma()) return p_minus_sums_avx2(near, far, half, count);
#endif
    return p_minus_sums_plain(near, far, half, count);
}

}  // namespace attngeo::theory::bound_kernels
