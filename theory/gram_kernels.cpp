// AVX2 and plain versions of the Gram path's per-N passes; see gram_kernels.hpp. Both use
// separate multiplies and adds in the same order (no FMA), so they round identically.
#include "theory/gram_kernels.hpp"

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <limits>

namespace attngeo::theory::gram_kernels {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

inline double band_of(Band band, double r) {
    return (band.w * r + band.q) * r + band.c;
}

__attribute__((target("avx2"))) inline __m256d load4(const double* p) {
    return _mm256_loadu_pd(p);
}
__attribute__((target("avx2"))) inline __m256d load4(const float* p) {
    return _mm256_cvtps_pd(_mm_loadu_ps(p));
}

__attribute__((target("avx2"))) inline double horizontal(__m256d v, bool want_max) {
    const __m128d low = _mm256_castpd256_pd128(v), high = _mm256_extractf128_pd(v, 1);
    const __m128d pair = want_max ? _mm_max_pd(low, high) : _mm_min_pd(low, high);
    const double a = _mm_cvtsd_f64(pair), b = _mm_cvtsd_f64(_mm_unpackhi_pd(pair, pair));
    return want_max ? (a > b ? a : b) : (a < b ? a : b);
}

// One fused pass: shifted −= 2·column, extremes of shifted ∓ e (maxima if kSelected), and, if
// kCount, the counts of CountPair against [low, high].
template <bool kSelected, bool kCount, class Column>
__attribute__((target("avx2"))) BandExtremes advance_avx2(double* shifted, const Column* column,
                                                          const double* row_norm, Band band,
                                                          int begin, int end, double low,
                                                          double high, CountPair* counts) {
    const __m256d init = _mm256_set1_pd(kSelected ? -kInf : kInf);
    __m256d low0 = init, high0 = init, low1 = init, high1 = init;
    __m256i surely = _mm256_setzero_si256(), maybe = _mm256_setzero_si256();
    const __m256d w = _mm256_set1_pd(band.w), q = _mm256_set1_pd(band.q),
                  c = _mm256_set1_pd(band.c), two = _mm256_set1_pd(2.0);
    const __m256d low4 = _mm256_set1_pd(low), high4 = _mm256_set1_pd(high);
    // One step of four tokens; two independent accumulator pairs hide the min/max latency.
    auto step = [&](int l, __m256d& lows, __m256d& highs) __attribute__((target("avx2"))) {
        const __m256d v =
            _mm256_sub_pd(_mm256_loadu_pd(shifted + l), _mm256_mul_pd(two, load4(column + l)));
        _mm256_storeu_pd(shifted + l, v);
        const __m256d r = _mm256_loadu_pd(row_norm + l);
        const __m256d e = _mm256_add_pd(_mm256_mul_pd(_mm256_add_pd(_mm256_mul_pd(w, r), q), r), c);
        const __m256d lo = _mm256_sub_pd(v, e), hi = _mm256_add_pd(v, e);
        if constexpr (kSelected) {
            lows = _mm256_max_pd(lows, lo);
            highs = _mm256_max_pd(highs, hi);
        } else {
            lows = _mm256_min_pd(lows, lo);
            highs = _mm256_min_pd(highs, hi);
        }
        if constexpr (kCount) {  // a true comparison is all ones (−1): subtracting counts it
            surely =
                _mm256_sub_epi64(surely, _mm256_castpd_si256(_mm256_cmp_pd(hi, low4, _CMP_LE_OQ)));
            maybe =
                _mm256_sub_epi64(maybe, _mm256_castpd_si256(_mm256_cmp_pd(lo, high4, _CMP_LE_OQ)));
        }
    };
    int l = begin;
    for (; l + 8 <= end; l += 8) {
        step(l, low0, high0);
        step(l + 4, low1, high1);
    }
    for (; l + 4 <= end; l += 4)
        step(l, low0, high0);
    BandExtremes x;
    if constexpr (kSelected) {
        x.low = horizontal(_mm256_max_pd(low0, low1), true);
        x.high = horizontal(_mm256_max_pd(high0, high1), true);
    } else {
        x.low = horizontal(_mm256_min_pd(low0, low1), false);
        x.high = horizontal(_mm256_min_pd(high0, high1), false);
    }
    if constexpr (kCount) {
        alignas(32) std::int64_t s[4], m[4];
        _mm256_store_si256(reinterpret_cast<__m256i*>(s), surely);
        _mm256_store_si256(reinterpret_cast<__m256i*>(m), maybe);
        counts->surely = static_cast<int>(s[0] + s[1] + s[2] + s[3]);
        counts->maybe = static_cast<int>(m[0] + m[1] + m[2] + m[3]);
    }
    for (; l < end; ++l) {
        const double v = shifted[l] - 2 * static_cast<double>(column[l]);
        shifted[l] = v;
        const double e = band_of(band, row_norm[l]);
        const double lo = v - e, hi = v + e;
        if constexpr (kSelected) {
            x.low = x.low > lo ? x.low : lo;
            x.high = x.high > hi ? x.high : hi;
        } else {
            x.low = x.low < lo ? x.low : lo;
            x.high = x.high < hi ? x.high : hi;
        }
        if constexpr (kCount) {
            counts->surely += hi <= low;
            counts->maybe += lo <= high;
        }
    }
    return x;
}

__attribute__((target("avx2"))) CountPair count_avx2(const double* shifted, const double* row_norm,
                                                     Band band, int begin, int end, double low,
                                                     double high) {
    __m256i surely = _mm256_setzero_si256(), maybe = _mm256_setzero_si256();
    const __m256d low4 = _mm256_set1_pd(low), high4 = _mm256_set1_pd(high);
    const __m256d w = _mm256_set1_pd(band.w), q = _mm256_set1_pd(band.q),
                  c = _mm256_set1_pd(band.c);
    int l = begin;
    for (; l + 4 <= end; l += 4) {
        const __m256d r = _mm256_loadu_pd(row_norm + l);
        const __m256d v = _mm256_loadu_pd(shifted + l);
        const __m256d e = _mm256_add_pd(_mm256_mul_pd(_mm256_add_pd(_mm256_mul_pd(w, r), q), r), c);
        // A true comparison is all ones (−1 as an integer): subtracting it counts it.
        surely = _mm256_sub_epi64(
            surely, _mm256_castpd_si256(_mm256_cmp_pd(_mm256_add_pd(v, e), low4, _CMP_LE_OQ)));
        maybe = _mm256_sub_epi64(
            maybe, _mm256_castpd_si256(_mm256_cmp_pd(_mm256_sub_pd(v, e), high4, _CMP_LE_OQ)));
    }
    alignas(32) std::int64_t s[4], m[4];
    _mm256_store_si256(reinterpret_cast<__m256i*>(s), surely);
    _mm256_store_si256(reinterpret_cast<__m256i*>(m), maybe);
    CountPair counts{static_cast<int>(s[0] + s[1] + s[2] + s[3]),
                     static_cast<int>(m[0] + m[1] + m[2] + m[3])};
    for (; l < end; ++l) {
        const double e = band_of(band, row_norm[l]);
        counts.surely += shifted[l] + e <= low;
        counts.maybe += shifted[l] - e <= high;
    }
    return counts;
}

__attribute__((target("avx2"))) int collect_avx2(const double* shifted, const double* row_norm,
                                                 Band band, int begin, int end, double low,
                                                 double high, int* out) {
    const __m256d low4 = _mm256_set1_pd(low), high4 = _mm256_set1_pd(high);
    const __m256d w = _mm256_set1_pd(band.w), q = _mm256_set1_pd(band.q),
                  c = _mm256_set1_pd(band.c);
    int found = 0;
    int l = begin;
    for (; l + 4 <= end; l += 4) {
        const __m256d r = _mm256_loadu_pd(row_norm + l);
        const __m256d v = _mm256_loadu_pd(shifted + l);
        const __m256d e = _mm256_add_pd(_mm256_mul_pd(_mm256_add_pd(_mm256_mul_pd(w, r), q), r), c);
        const __m256d undecided =
            _mm256_and_pd(_mm256_cmp_pd(_mm256_add_pd(v, e), low4, _CMP_GT_OQ),
                          _mm256_cmp_pd(_mm256_sub_pd(v, e), high4, _CMP_LE_OQ));
        int mask = _mm256_movemask_pd(undecided);
        while (mask != 0) {  // rare: most blocks have no undecided token
            out[found++] = l + __builtin_ctz(mask);
            mask &= mask - 1;
        }
    }
    for (; l < end; ++l) {
        const double e = band_of(band, row_norm[l]);
        if (shifted[l] + e > low && shifted[l] - e <= high) out[found++] = l;
    }
    return found;
}

// dst = srcᵀ for 8×8 blocks of column-major storage with leading dimension n.
__attribute__((target("avx2"))) void transpose8x8(const float* src, float* dst, std::ptrdiff_t n) {
    __m256 r[8], t[8], s[8];
    for (int k = 0; k < 8; ++k)
        r[k] = _mm256_loadu_ps(src + k * n);
    for (int k = 0; k < 8; k += 2) {
        t[k] = _mm256_unpacklo_ps(r[k], r[k + 1]);
        t[k + 1] = _mm256_unpackhi_ps(r[k], r[k + 1]);
    }
    for (int k = 0; k < 8; k += 4) {
        s[k] = _mm256_shuffle_ps(t[k], t[k + 2], _MM_SHUFFLE(1, 0, 1, 0));
        s[k + 1] = _mm256_shuffle_ps(t[k], t[k + 2], _MM_SHUFFLE(3, 2, 3, 2));
        s[k + 2] = _mm256_shuffle_ps(t[k + 1], t[k + 3], _MM_SHUFFLE(1, 0, 1, 0));
        s[k + 3] = _mm256_shuffle_ps(t[k + 1], t[k + 3], _MM_SHUFFLE(3, 2, 3, 2));
    }
    for (int k = 0; k < 4; ++k) {
        _mm256_storeu_ps(dst + k * n, _mm256_permute2f128_ps(s[k], s[k + 4], 0x20));
        _mm256_storeu_ps(dst + (k + 4) * n, _mm256_permute2f128_ps(s[k], s[k + 4], 0x31));
    }
}

__attribute__((target("avx2"))) void mirror_lower_avx2(float* g, int n) {
    const std::ptrdiff_t ld = n;
    const int blocks = n / 8;
    for (int bi = 1; bi < blocks; ++bi)  // off-diagonal blocks: rows 8bi.., columns 8bj..
        for (int bj = 0; bj < bi; ++bj)
            transpose8x8(g + 8 * bi + 8 * bj * ld, g + 8 * bj + 8 * bi * ld, ld);
    for (int b = 0; b < blocks; ++b)  // inside the diagonal blocks
        for (int i = 8 * b + 1; i < 8 * b + 8; ++i)
            for (int j = 8 * b; j < i; ++j)
                g[j + i * ld] = g[i + j * ld];
    for (int i = 8 * blocks; i < n; ++i)  // the ragged last rows
        for (int j = 0; j < i; ++j)
            g[j + i * ld] = g[i + j * ld];
}

}  // namespace

int collect_band_plain(const double* shifted, const double* row_norm, Band band, int begin, int end,
                       double low, double high, int* out) {
    int found = 0;
    for (int l = begin; l < end; ++l) {
        const double e = band_of(band, row_norm[l]);
        if (shifted[l] + e > low && shifted[l] - e <= high) out[found++] = l;
    }
    return found;
}

int collect_band(const double* shifted, const double* row_norm, Band band, int begin, int end,
                 double low, double high, int* out) {
    return uses_avx2() ? collect_avx2(shifted, row_norm, band, begin, end, low, high, out)
                       : collect_band_plain(shifted, row_norm, band, begin, end, low, high, out);
}

void mirror_lower_plain(float* g, int n) {
    const std::ptrdiff_t ld = n;
    for (int i = 1; i < n; ++i)
        for (int j = 0; j < i; ++j)
            g[j + i * ld] = g[i + j * ld];
}

void mirror_lower(float* g, int n) {
    if (uses_avx2())
        mirror_lower_avx2(g, n);
    else
        mirror_lower_plain(g, n);
}

bool uses_avx2() {
    static const bool avx2 = __builtin_cpu_supports("avx2");
    return avx2;
}

template <class Column>
BandExtremes advance_and_bracket_plain(double* shifted, const Column* column,
                                       const double* row_norm, Band band, int begin, int end,
                                       bool selected) {
    BandExtremes x{selected ? -kInf : kInf, selected ? -kInf : kInf};
    for (int l = begin; l < end; ++l) {
        const double v = shifted[l] - 2 * static_cast<double>(column[l]);
        shifted[l] = v;
        const double e = band_of(band, row_norm[l]);
        const double lo = v - e, hi = v + e;
        if (selected) {
            x.low = x.low > lo ? x.low : lo;
            x.high = x.high > hi ? x.high : hi;
        } else {
            x.low = x.low < lo ? x.low : lo;
            x.high = x.high < hi ? x.high : hi;
        }
    }
    return x;
}

template <class Column>
BandExtremes advance_and_bracket(double* shifted, const Column* column, const double* row_norm,
                                 Band band, int begin, int end, bool selected) {
    if (!uses_avx2())
        return advance_and_bracket_plain(shifted, column, row_norm, band, begin, end, selected);
    return selected ? advance_avx2<true, false>(shifted, column, row_norm, band, begin, end, 0, 0,
                                                nullptr)
                    : advance_avx2<false, false>(shifted, column, row_norm, band, begin, end, 0, 0,
                                                 nullptr);
}

template <class Column>
BandExtremes advance_bracket_and_count_plain(double* shifted, const Column* column,
                                             const double* row_norm, Band band, int begin, int end,
                                             double low, double high, CountPair& counts) {
    const BandExtremes x =
        advance_and_bracket_plain(shifted, column, row_norm, band, begin, end, false);
    counts = count_band_plain(shifted, row_norm, band, begin, end, low, high);
    return x;
}

template <class Column>
BandExtremes advance_bracket_and_count(double* shifted, const Column* column,
                                       const double* row_norm, Band band, int begin, int end,
                                       double low, double high, CountPair& counts) {
    if (!uses_avx2()) {
        return advance_bracket_and_count_plain(shifted, column, row_norm, band, begin, end, low,
                                               high, counts);
    }
    return advance_avx2<false, true>(shifted, column, row_norm, band, begin, end, low, high,
                                     &counts);
}

CountPair count_band_plain(const double* shifted, const double* row_norm, Band band, int begin,
                           int end, double low, double high) {
    CountPair counts;
    for (int l = begin; l < end; ++l) {
        const double e = band_of(band, row_norm[l]);
        counts.surely += shifted[l] + e <= low;
        counts.maybe += shifted[l] - e <= high;
    }
    return counts;
}

CountPair count_band(const double* shifted, const double* row_norm, Band band, int begin, int end,
                     double low, double high) {
    return uses_avx2() ? count_avx2(shifted, row_norm, band, begin, end, low, high)
                       : count_band_plain(shifted, row_norm, band, begin, end, low, high);
}

template BandExtremes advance_and_bracket<float>(double*, const float*, const double*, Band, int,
                                                 int, bool);
template BandExtremes advance_and_bracket_plain<float>(double*, const float*, const double*, Band,
                                                       int, int, bool);
template BandExtremes advance_bracket_and_count<float>(double*, const float*, const double*, Band,
                                                       int, int, double, double, CountPair&);
template BandExtremes advance_bracket_and_count_plain<float>(double*, const float*, const double*,
                                                             Band, int, int, double, double,
                                                             CountPair&);
template BandExtremes advance_and_bracket<double>(double*, const double*, const double*, Band, int,
                                                  int, bool);
template BandExtremes advance_and_bracket_plain<double>(double*, const double*, const double*, Band,
                                                        int, int, bool);
template BandExtremes advance_bracket_and_count<double>(double*, const double*, const double*, Band,
                                                        int, int, double, double, CountPair&);
template BandExtremes advance_bracket_and_count_plain<double>(double*, const double*, const double*,
                                                              Band, int, int, double, double,
                                                              CountPair&);

}  // namespace attngeo::theory::gram_kernels
