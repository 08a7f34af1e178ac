// AVX2 + FMA and plain versions of the Gram path's per-N sweeps (and an AVX-512 sweep); see
// gram_kernels.hpp. All evaluate the same expressions with the same roundings: a block's band
// through two fused multiply-adds (std::fma in the plain loops, which redo it per token), the
// thresholds low − e and high + e, v − 2c with its exact product, comparisons and extremes on the
// same values, so they agree bit for bit.
#include "theory/gram_kernels.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "common/cpu_features.hpp"
#include "common/transpose8x8.hpp"

#if ATTNGEO_X86
#include <immintrin.h>
#endif

namespace attngeo::theory::gram_kernels {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

inline double extreme(double x, double y, bool want_max) {
    return want_max ? (x > y ? x : y) : (x < y ? x : y);
}

// The thresholds of one count for a token of band e: surely v ≤ low − e, maybe v ≤ high + e.
struct Thresholds {
    double surely = 0, maybe = 0;
};
inline Thresholds thresholds(double low, double high, double e) {
    return {low - e, high + e};
}

SweepResult empty_result(const SweepRequest& request) {
    SweepResult result;
    result.extremes.low = result.extremes.high = request.selected ? -kInf : kInf;
    return result;
}

// One token of a sweep given its block's band e and thresholds; `extreme_v` collects the
// bracketed extreme of v (v ∓ e is applied once per block: rounding is monotone, so
// fl(max v − e) = max fl(v − e)).
template <class Column>
inline void sweep_token(const double* v_old, double* v_new, const Column* column,
                        const SweepRequest& request, const Thresholds& before,
                        const Thresholds& after, int l, SweepResult& result, double& extreme_v) {
    if (request.count_before) {
        result.before.surely += v_old[l] <= before.surely;
        result.before.maybe += v_old[l] <= before.maybe;
    }
    const double v = v_old[l] - 2 * static_cast<double>(column[l]);
    v_new[l] = v;
    if (request.bracket) extreme_v = extreme(extreme_v, v, request.selected);
    if (request.count_after) {
        result.after.surely += v <= after.surely;
        result.after.maybe += v <= after.maybe;
    }
}

// Folds one block's extreme of v into the bracket as extreme ∓ e.
inline void close_block(const SweepRequest& request, double e, double extreme_v,
                        SweepResult& result) {
    if (!request.bracket) return;
    result.extremes.low = extreme(result.extremes.low, extreme_v - e, request.selected);
    result.extremes.high = extreme(result.extremes.high, extreme_v + e, request.selected);
}

// Rows first..first+count−1 of the strip from column `from` to the diagonal, one element at a time.
template <class Scalar>
void copy_strip_elements(const Scalar* lower, int ld, int first, int count, Scalar* strip,
                         int stride, int from) {
    for (int j = 0; j < count; ++j) {
        const int row = first + j;
        for (int m = from; m <= row; ++m)
            strip[static_cast<std::ptrdiff_t>(j) * stride + m] =
                lower[row + static_cast<std::ptrdiff_t>(m) * ld];
    }
}

constexpr std::uint64_t kMagnitudeMask = 0x7FFFFFFFFFFFFFFFull;

#if ATTNGEO_X86
ATTNGEO_TARGET_AVX2_FMA inline __m256d load4(const double* p) {
    return _mm256_loadu_pd(p);
}
ATTNGEO_TARGET_AVX2_FMA inline __m256d load4(const float* p) {
    return _mm256_cvtps_pd(_mm_loadu_ps(p));
}

// The band of one token block, fma(fma(w, R, q), R, c): the roundings of band_of, without a
// call into libm's fma from the vector kernels.
ATTNGEO_TARGET_AVX2_FMA inline double band_fma(Band band, double r) {
    const __m128d rr = _mm_set_sd(r);
    const __m128d inner = _mm_fmadd_sd(_mm_set_sd(band.w), rr, _mm_set_sd(band.q));
    return _mm_cvtsd_f64(_mm_fmadd_sd(inner, rr, _mm_set_sd(band.c)));
}

ATTNGEO_TARGET_AVX2_FMA inline double horizontal(__m256d v, bool want_max) {
    const __m128d low = _mm256_castpd256_pd128(v), high = _mm256_extractf128_pd(v, 1);
    const __m128d pair = want_max ? _mm_max_pd(low, high) : _mm_min_pd(low, high);
    const double a = _mm_cvtsd_f64(pair), b = _mm_cvtsd_f64(_mm_unpackhi_pd(pair, pair));
    return want_max ? (a > b ? a : b) : (a < b ? a : b);
}

ATTNGEO_TARGET_AVX2_FMA inline int lane_sum(__m256i counts) {
    alignas(32) std::int64_t lanes[4];
    _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), counts);
    return static_cast<int>(lanes[0] + lanes[1] + lanes[2] + lanes[3]);
}

// A true comparison is all ones (−1 as an integer): subtracting it counts it.
ATTNGEO_TARGET_AVX2_FMA inline __m256i count_le(__m256i counts, __m256d a, __m256d b) {
    return _mm256_sub_epi64(counts, _mm256_castpd_si256(_mm256_cmp_pd(a, b, _CMP_LE_OQ)));
}

ATTNGEO_TARGET_AVX2_FMA inline __m256d extreme4(__m256d x, __m256d y, bool want_max) {
    return want_max ? _mm256_max_pd(x, y) : _mm256_min_pd(x, y);
}

// A band block's band e (for the bracket and the after-count) and the thresholds of the
// request's counts, as the vector kernels take them once per block.
struct BlockBands {
    double e = 0;
    Thresholds before, after;
};
template <bool kBracket, bool kBefore, bool kAfter>
ATTNGEO_TARGET_AVX2_FMA inline BlockBands block_bands(const SweepRequest& request, double r) {
    BlockBands out;
    out.e = (kBracket || kAfter) ? band_fma(request.band, r) : 0.0;
    if (kBefore)
        out.before =
            thresholds(request.before_low, request.before_high, band_fma(request.before_band, r));
    if (kAfter) out.after = thresholds(request.after_low, request.after_high, out.e);
    return out;
}

// Tokens [l, stop) of one block one at a time (the vector kernels' tail), the block's bracket
// closed; returns stop.
template <class Column>
inline int sweep_block_tail(const double* v_old, double* v_new, const Column* column,
                            const SweepRequest& request, const BlockBands& bands, int l, int stop,
                            SweepResult& result) {
    double extreme_v = request.selected ? -kInf : kInf;
    for (; l < stop; ++l)
        sweep_token(v_old, v_new, column, request, bands.before, bands.after, l, result, extreme_v);
    close_block(request, bands.e, extreme_v, result);
    return stop;
}

template <bool kSelected, bool kBracket, bool kBefore, bool kAfter, class Column>
ATTNGEO_TARGET_AVX2_FMA SweepResult sweep_lanes(const double* v_old, double* v_new,
                                                const Column* column, const double* block_norm,
                                                const SweepRequest& request, int begin, int end) {
    SweepResult result = empty_result(request);
    const __m256d init = _mm256_set1_pd(kSelected ? -kInf : kInf), two = _mm256_set1_pd(2.0);
    __m256d lows = init, highs = init;
    __m256i before_surely = _mm256_setzero_si256(), before_maybe = _mm256_setzero_si256();
    __m256i after_surely = _mm256_setzero_si256(), after_maybe = _mm256_setzero_si256();
    for (int l = begin; l < end;) {
        const int block = l / kBandBlock;
        const int stop = std::min(end, (block + 1) * kBandBlock);
        const BlockBands bands = block_bands<kBracket, kBefore, kAfter>(request, block_norm[block]);
        const __m256d before_surely4 = _mm256_set1_pd(bands.before.surely),
                      before_maybe4 = _mm256_set1_pd(bands.before.maybe);
        const __m256d after_surely4 = _mm256_set1_pd(bands.after.surely),
                      after_maybe4 = _mm256_set1_pd(bands.after.maybe);
        __m256d extreme_v4 = init;
        for (; l + 4 <= stop; l += 4) {
            const __m256d old = _mm256_loadu_pd(v_old + l);
            if constexpr (kBefore) {
                before_surely = count_le(before_surely, old, before_surely4);
                before_maybe = count_le(before_maybe, old, before_maybe4);
            }
            const __m256d v = _mm256_fnmadd_pd(two, load4(column + l), old);  // exact 2c
            _mm256_storeu_pd(v_new + l, v);
            if constexpr (kBracket) extreme_v4 = extreme4(extreme_v4, v, kSelected);
            if constexpr (kAfter) {
                after_surely = count_le(after_surely, v, after_surely4);
                after_maybe = count_le(after_maybe, v, after_maybe4);
            }
        }
        if constexpr (kBracket) {
            const __m256d e4 = _mm256_set1_pd(bands.e);
            lows = extreme4(lows, _mm256_sub_pd(extreme_v4, e4), kSelected);
            highs = extreme4(highs, _mm256_add_pd(extreme_v4, e4), kSelected);
        }
        if (l < stop)  // the block's last tokens of a range that ends inside it
            l = sweep_block_tail(v_old, v_new, column, request, bands, l, stop, result);
    }
    if constexpr (kBracket) {
        result.extremes.low = extreme(result.extremes.low, horizontal(lows, kSelected), kSelected);
        result.extremes.high =
            extreme(result.extremes.high, horizontal(highs, kSelected), kSelected);
    }
    if constexpr (kBefore) {
        result.before.surely += lane_sum(before_surely);
        result.before.maybe += lane_sum(before_maybe);
    }
    if constexpr (kAfter) {
        result.after.surely += lane_sum(after_surely);
        result.after.maybe += lane_sum(after_maybe);
    }
    return result;
}

// ---- The AVX-512 twin of sweep_lanes: eight tokens a step, counts from comparison masks. The
// same values (v − 2c with one rounding, the block's thresholds and band) and exact counts and
// extremes, so it agrees with the AVX2 and plain loops bit for bit.
ATTNGEO_TARGET_AVX512_FMA inline __m512d load8(const double* p) {
    return _mm512_loadu_pd(p);
}
// (The zero-masked forms with a full mask are the same instructions; GCC 12's unmasked
// intrinsics seed their result from an "undefined" vector that -Wmaybe-uninitialized flags.)
constexpr __mmask8 kAllLanes = 0xFF;
ATTNGEO_TARGET_AVX512_FMA inline __m512d load8(const float* p) {
    return _mm512_maskz_cvtps_pd(kAllLanes, _mm256_loadu_ps(p));
}
ATTNGEO_TARGET_AVX512_FMA inline int count_le8(__m512d a, __m512d b) {
    return __builtin_popcount(static_cast<unsigned>(_mm512_cmp_pd_mask(a, b, _CMP_LE_OQ)));
}
ATTNGEO_TARGET_AVX512_FMA inline __m512d extreme8(__m512d x, __m512d y, bool want_max) {
    return want_max ? _mm512_maskz_max_pd(kAllLanes, x, y) : _mm512_maskz_min_pd(kAllLanes, x, y);
}
ATTNGEO_TARGET_AVX512_FMA inline double horizontal8(__m512d v, bool want_max) {
    alignas(64) double lanes[8];
    _mm512_store_pd(lanes, v);
    double out = lanes[0];
    for (int k = 1; k < 8; ++k)
        out = extreme(out, lanes[k], want_max);
    return out;
}

template <bool kSelected, bool kBracket, bool kBefore, bool kAfter, class Column>
ATTNGEO_TARGET_AVX512_FMA SweepResult sweep_lanes512(const double* v_old, double* v_new,
                                                     const Column* column, const double* block_norm,
                                                     const SweepRequest& request, int begin,
                                                     int end) {
    SweepResult result = empty_result(request);
    const __m512d init = _mm512_set1_pd(kSelected ? -kInf : kInf), two = _mm512_set1_pd(2.0);
    __m512d lows = init, highs = init;
    for (int l = begin; l < end;) {
        const int block = l / kBandBlock;
        const int stop = std::min(end, (block + 1) * kBandBlock);
        const BlockBands bands = block_bands<kBracket, kBefore, kAfter>(request, block_norm[block]);
        const __m512d before_surely8 = _mm512_set1_pd(bands.before.surely),
                      before_maybe8 = _mm512_set1_pd(bands.before.maybe);
        const __m512d after_surely8 = _mm512_set1_pd(bands.after.surely),
                      after_maybe8 = _mm512_set1_pd(bands.after.maybe);
        __m512d extreme_v8 = init;
        for (; l + 8 <= stop; l += 8) {
            const __m512d old = _mm512_loadu_pd(v_old + l);
            if constexpr (kBefore) {
                result.before.surely += count_le8(old, before_surely8);
                result.before.maybe += count_le8(old, before_maybe8);
            }
            const __m512d v = _mm512_fnmadd_pd(two, load8(column + l), old);  // exact 2c
            _mm512_storeu_pd(v_new + l, v);
            if constexpr (kBracket) extreme_v8 = extreme8(extreme_v8, v, kSelected);
            if constexpr (kAfter) {
                result.after.surely += count_le8(v, after_surely8);
                result.after.maybe += count_le8(v, after_maybe8);
            }
        }
        if constexpr (kBracket) {
            const __m512d e8 = _mm512_set1_pd(bands.e);
            lows = extreme8(lows, _mm512_sub_pd(extreme_v8, e8), kSelected);
            highs = extreme8(highs, _mm512_add_pd(extreme_v8, e8), kSelected);
        }
        if (l < stop)  // the block's last tokens of a range that ends inside it
            l = sweep_block_tail(v_old, v_new, column, request, bands, l, stop, result);
    }
    if constexpr (kBracket) {
        result.extremes.low = extreme(result.extremes.low, horizontal8(lows, kSelected), kSelected);
        result.extremes.high =
            extreme(result.extremes.high, horizontal8(highs, kSelected), kSelected);
    }
    return result;
}

// visit(l, stop, thresholds of the block) for each band block's part [l, stop) of [begin, end).
template <class Visit>
ATTNGEO_TARGET_AVX2_FMA inline void for_each_band_block(const double* block_norm, Band band,
                                                        int begin, int end, double low, double high,
                                                        Visit&& visit) {
    for (int l = begin; l < end;) {
        const int block = l / kBandBlock;
        const int stop = std::min(end, (block + 1) * kBandBlock);
        visit(l, stop, thresholds(low, high, band_fma(band, block_norm[block])));
        l = stop;
    }
}

// dst row k = column k of the 8×8 block at src: src columns have leading dimension src_ld,
// dst rows dst_ld.
ATTNGEO_TARGET_AVX2_FMA inline void transpose8x8(const float* src, std::ptrdiff_t src_ld,
                                                 float* dst, std::ptrdiff_t dst_ld) {
    __m256 r[8];
    for (int k = 0; k < 8; ++k)
        r[k] = _mm256_loadu_ps(src + k * src_ld);
    transpose8x8_rows(r, dst, dst_ld);
}
#endif

}  // namespace

#if ATTNGEO_X86
namespace {
// The two vector families of the sweep kernel, as function pointers per flag combination.
struct Avx2Lanes {
    template <bool kSelected, bool kBracket, bool kBefore, bool kAfter, class Column>
    static constexpr auto kernel = sweep_lanes<kSelected, kBracket, kBefore, kAfter, Column>;
};
struct Avx512Lanes {
    template <bool kSelected, bool kBracket, bool kBefore, bool kAfter, class Column>
    static constexpr auto kernel = sweep_lanes512<kSelected, kBracket, kBefore, kAfter, Column>;
};

// The selected range brackets maxima and may count the step before; the rest brackets minima
// and may count against the selected bracket; either may only update.
template <class Family, class Column>
SweepResult sweep_by_flags(const double* v_old, double* v_new, const Column* column,
                           const double* block_norm, const SweepRequest& r, int begin, int end) {
    const auto call = [&](auto kernel) {
        return kernel(v_old, v_new, column, block_norm, r, begin, end);
    };
    using F = Family;
    if (r.selected && !r.count_after) {
        if (r.bracket)
            return r.count_before ? call(F::template kernel<true, true, true, false, Column>)
                                  : call(F::template kernel<true, true, false, false, Column>);
        return r.count_before ? call(F::template kernel<true, false, true, false, Column>)
                              : call(F::template kernel<true, false, false, false, Column>);
    }
    if (!r.selected && !r.count_before) {
        if (r.bracket)
            return r.count_after ? call(F::template kernel<false, true, false, true, Column>)
                                 : call(F::template kernel<false, true, false, false, Column>);
        if (!r.count_after) return call(F::template kernel<false, false, false, false, Column>);
    }
    return sweep_plain(v_old, v_new, column, block_norm, r, begin, end);  // unused combinations
}
}  // namespace

template <class Column>
SweepResult sweep_avx2(const double* v_old, double* v_new, const Column* column,
                       const double* block_norm, const SweepRequest& r, int begin, int end) {
    return sweep_by_flags<Avx2Lanes>(v_old, v_new, column, block_norm, r, begin, end);
}

template <class Column>
SweepResult sweep_avx512(const double* v_old, double* v_new, const Column* column,
                         const double* block_norm, const SweepRequest& r, int begin, int end) {
    return sweep_by_flags<Avx512Lanes>(v_old, v_new, column, block_norm, r, begin, end);
}

ATTNGEO_TARGET_AVX2_FMA CountPair count_band_avx2(const double* values, const double* block_norm,
                                                  Band band, int begin, int end, double low,
                                                  double high) {
    __m256i surely = _mm256_setzero_si256(), maybe = _mm256_setzero_si256();
    CountPair counts;
    for_each_band_block(block_norm, band, begin, end, low, high,
                        [&](int l, int stop, const Thresholds& t) ATTNGEO_TARGET_AVX2_FMA {
                            const __m256d surely4 = _mm256_set1_pd(t.surely),
                                          maybe4 = _mm256_set1_pd(t.maybe);
                            for (; l + 4 <= stop; l += 4) {
                                const __m256d v = _mm256_loadu_pd(values + l);
                                surely = count_le(surely, v, surely4);
                                maybe = count_le(maybe, v, maybe4);
                            }
                            for (; l < stop; ++l) {
                                counts.surely += values[l] <= t.surely;
                                counts.maybe += values[l] <= t.maybe;
                            }
                        });
    counts.surely += lane_sum(surely);
    counts.maybe += lane_sum(maybe);
    return counts;
}

ATTNGEO_TARGET_AVX2_FMA int collect_band_avx2(const double* values, const double* block_norm,
                                              Band band, int begin, int end, double low,
                                              double high, int* out) {
    int found = 0;
    for_each_band_block(
        block_norm, band, begin, end, low, high,
        [&](int l, int stop, const Thresholds& t) ATTNGEO_TARGET_AVX2_FMA {
            const __m256d surely4 = _mm256_set1_pd(t.surely), maybe4 = _mm256_set1_pd(t.maybe);
            for (; l + 4 <= stop; l += 4) {
                const __m256d v = _mm256_loadu_pd(values + l);
                const __m256d undecided = _mm256_and_pd(_mm256_cmp_pd(v, surely4, _CMP_GT_OQ),
                                                        _mm256_cmp_pd(v, maybe4, _CMP_LE_OQ));
                int mask = _mm256_movemask_pd(undecided);
                while (mask != 0) {  // rare: most blocks have no undecided token
                    out[found++] = l + __builtin_ctz(mask);
                    mask &= mask - 1;
                }
            }
            for (; l < stop; ++l)
                if (values[l] > t.surely && values[l] <= t.maybe) out[found++] = l;
        });
    return found;
}

ATTNGEO_TARGET_AVX2_FMA void upper_strip_avx2(const float* lower, int ld, int first, int count,
                                              float* strip, int stride) {
    int l = 0;
    if (count == 8) {  // whole 8×8 blocks left of the diagonal block
        for (; l + 8 <= first; l += 8) {
            transpose8x8(lower + first + static_cast<std::ptrdiff_t>(l) * ld, ld, strip + l,
                         stride);
        }
    }
    copy_strip_elements(lower, ld, first, count, strip, stride, l);  // the diagonal block
}

ATTNGEO_TARGET_AVX2_FMA unsigned long long largest_magnitude_bits_avx2(const double* x,
                                                                       long count) {
    const __m256i mask = _mm256_set1_epi64x(static_cast<long long>(kMagnitudeMask));
    __m256i best0 = _mm256_setzero_si256(), best1 = _mm256_setzero_si256();
    long i = 0;
    // Sign cleared, the patterns are non-negative: the signed 64-bit compare orders them.
    for (; i + 8 <= count; i += 8) {
        const __m256i a =
            _mm256_and_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i)), mask);
        const __m256i b =
            _mm256_and_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i + 4)), mask);
        best0 = _mm256_blendv_epi8(best0, a, _mm256_cmpgt_epi64(a, best0));
        best1 = _mm256_blendv_epi8(best1, b, _mm256_cmpgt_epi64(b, best1));
    }
    const __m256i best = _mm256_blendv_epi8(best0, best1, _mm256_cmpgt_epi64(best1, best0));
    alignas(32) std::uint64_t lanes[4];
    _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), best);
    std::uint64_t result = 0;
    for (std::uint64_t lane : lanes)
        result = lane > result ? lane : result;
    for (; i < count; ++i) {
        std::uint64_t bits;
        std::memcpy(&bits, x + i, sizeof bits);
        bits &= kMagnitudeMask;
        result = bits > result ? bits : result;
    }
    return result;
}

ATTNGEO_TARGET_AVX2_FMA void scale_to_float_avx2(const double* from, long count, double sigma,
                                                 float* to) {
    const __m256d scale = _mm256_set1_pd(sigma);
    long i = 0;
    for (; i + 4 <= count; i += 4)
        _mm_storeu_ps(to + i, _mm256_cvtpd_ps(_mm256_mul_pd(_mm256_loadu_pd(from + i), scale)));
    for (; i < count; ++i)
        to[i] = static_cast<float>(from[i] * sigma);
}
#endif

unsigned long long largest_magnitude_bits_plain(const double* x, long count) {
    std::uint64_t result = 0;
    for (long i = 0; i < count; ++i) {
        std::uint64_t bits;
        std::memcpy(&bits, x + i, sizeof bits);
        bits &= kMagnitudeMask;
        result = bits > result ? bits : result;
    }
    return result;
}

unsigned long long largest_magnitude_bits(const double* x, long count) {
#if ATTNGEO_X86
    if (use_avx2_fma()) return largest_magnitude_bits_avx2(x, count);
#endif
    return largest_magnitude_bits_plain(x, count);
}

void add_rows_plain(const double* rows, int count, int d, double* sum, double* magnitude_sum) {
    for (int k = 0; k < count; ++k) {
        const double* y = rows + static_cast<std::size_t>(k) * d;
        if (sum != nullptr)
            for (int t = 0; t < d; ++t)
                sum[t] += y[t];
        if (magnitude_sum != nullptr)
            for (int t = 0; t < d; ++t)
                magnitude_sum[t] += std::abs(y[t]);
    }
}

#if ATTNGEO_X86
namespace {

// Columns t .. t + 4·Vectors − 1 of both sums held in registers across every row.
template <int Vectors>
ATTNGEO_TARGET_AVX2 void add_row_columns_avx2(const double* rows, int count, int d, int t,
                                              double* sum, double* magnitude_sum) {
    const __m256d sign = _mm256_set1_pd(-0.0);
    __m256d plain[Vectors], magnitude[Vectors];
    for (int v = 0; v < Vectors; ++v) {
        plain[v] = sum != nullptr ? _mm256_loadu_pd(sum + t + 4 * v) : _mm256_setzero_pd();
        magnitude[v] = magnitude_sum != nullptr ? _mm256_loadu_pd(magnitude_sum + t + 4 * v)
                                                : _mm256_setzero_pd();
    }
    for (int k = 0; k < count; ++k) {
        const double* y = rows + static_cast<std::size_t>(k) * d + t;
        for (int v = 0; v < Vectors; ++v) {
            const __m256d x = _mm256_loadu_pd(y + 4 * v);
            plain[v] = _mm256_add_pd(plain[v], x);
            magnitude[v] = _mm256_add_pd(magnitude[v], _mm256_andnot_pd(sign, x));
        }
    }
    for (int v = 0; v < Vectors; ++v) {
        if (sum != nullptr) _mm256_storeu_pd(sum + t + 4 * v, plain[v]);
        if (magnitude_sum != nullptr) _mm256_storeu_pd(magnitude_sum + t + 4 * v, magnitude[v]);
    }
}

}  // namespace

ATTNGEO_TARGET_AVX2 void add_rows_avx2(const double* rows, int count, int d, double* sum,
                                       double* magnitude_sum) {
    int t = 0;
    for (; t + 16 <= d; t += 16)
        add_row_columns_avx2<4>(rows, count, d, t, sum, magnitude_sum);
    for (; t + 4 <= d; t += 4)
        add_row_columns_avx2<1>(rows, count, d, t, sum, magnitude_sum);
    for (; t < d; ++t)
        for (int k = 0; k < count; ++k) {
            const double x = rows[static_cast<std::size_t>(k) * d + t];
            if (sum != nullptr) sum[t] += x;
            if (magnitude_sum != nullptr) magnitude_sum[t] += std::abs(x);
        }
}
#endif

void add_rows(const double* rows, int count, int d, double* sum, double* magnitude_sum) {
#if ATTNGEO_X86
    if (use_avx2()) {
        add_rows_avx2(rows, count, d, sum, magnitude_sum);
        return;
    }
#endif
    add_rows_plain(rows, count, d, sum, magnitude_sum);
}

namespace {

// Lanes j and j + 4, then ((0 + 1) + (2 + 3)): the order the vector loop's reduction takes.
double add_lanes(const double* lane) {
    double half[4];
    for (int j = 0; j < 4; ++j)
        half[j] = lane[j] + lane[j + 4];
    return (half[0] + half[1]) + (half[2] + half[3]);
}

// One coordinate into its lane: the vector loop's operations, one lane at a time.
inline void add_shifted_term(double y, double s, double a, double& value, double& magnitude,
                             double& across, double& largest) {
    const double z = y - 2 * s;
    value = std::fma(y, z, value);
    magnitude += std::abs(y * z);
    across = std::fma(std::abs(y), a, across);
    largest = std::max(largest, std::abs(y));
}

}  // namespace

ShiftedValueSums shifted_value_sums_plain(const double* y, const double* s, const double* a,
                                          int d) {
    double value[kShiftedLanes] = {}, magnitude[kShiftedLanes] = {}, across[kShiftedLanes] = {};
    double largest = 0;
    for (int t = 0; t < d; ++t) {
        const int j = t % kShiftedLanes;
        add_shifted_term(y[t], s[t], a[t], value[j], magnitude[j], across[j], largest);
    }
    return {add_lanes(value), add_lanes(magnitude), add_lanes(across), largest};
}

#if ATTNGEO_X86
ATTNGEO_TARGET_AVX2_FMA ShiftedValueSums shifted_value_sums_avx2(const double* y, const double* s,
                                                                 const double* a, int d) {
    const __m256d sign = _mm256_set1_pd(-0.0), two = _mm256_set1_pd(2.0);
    __m256d value[2], magnitude[2], across[2], largest[2];
    for (int h = 0; h < 2; ++h)
        value[h] = magnitude[h] = across[h] = largest[h] = _mm256_setzero_pd();
    int t = 0;
    for (; t + kShiftedLanes <= d; t += kShiftedLanes)
        for (int h = 0; h < 2; ++h) {
            const __m256d yt = _mm256_loadu_pd(y + t + 4 * h);
            const __m256d z = _mm256_sub_pd(yt, _mm256_mul_pd(two, _mm256_loadu_pd(s + t + 4 * h)));
            const __m256d size = _mm256_andnot_pd(sign, yt);
            value[h] = _mm256_fmadd_pd(yt, z, value[h]);
            magnitude[h] =
                _mm256_add_pd(magnitude[h], _mm256_andnot_pd(sign, _mm256_mul_pd(yt, z)));
            across[h] = _mm256_fmadd_pd(size, _mm256_loadu_pd(a + t + 4 * h), across[h]);
            largest[h] = _mm256_max_pd(largest[h], size);
        }
    alignas(32) double lanes[4][kShiftedLanes];
    for (int h = 0; h < 2; ++h) {
        _mm256_store_pd(lanes[0] + 4 * h, value[h]);
        _mm256_store_pd(lanes[1] + 4 * h, magnitude[h]);
        _mm256_store_pd(lanes[2] + 4 * h, across[h]);
        _mm256_store_pd(lanes[3] + 4 * h, largest[h]);
    }
    double most = 0;
    for (double lane : lanes[3])
        most = std::max(most, lane);
    for (; t < d; ++t) {
        const int j = t % kShiftedLanes;
        add_shifted_term(y[t], s[t], a[t], lanes[0][j], lanes[1][j], lanes[2][j], most);
    }
    return {add_lanes(lanes[0]), add_lanes(lanes[1]), add_lanes(lanes[2]), most};
}
#endif

ShiftedValueSums shifted_value_sums(const double* y, const double* s, const double* a, int d) {
#if ATTNGEO_X86
    if (use_avx2_fma()) return shifted_value_sums_avx2(y, s, a, d);
#endif
    return shifted_value_sums_plain(y, s, a, d);
}

void scale_to_float_plain(const double* from, long count, double sigma, float* to) {
    for (long i = 0; i < count; ++i)
        to[i] = static_cast<float>(from[i] * sigma);
}

void scale_to_float(const double* from, long count, double sigma, float* to) {
#if ATTNGEO_X86
    if (use_avx2_fma()) {
        scale_to_float_avx2(from, count, sigma, to);
        return;
    }
#endif
    scale_to_float_plain(from, count, sigma, to);
}

double band_of(Band band, double r) {
    return std::fma(std::fma(band.w, r, band.q), r, band.c);
}

bool uses_avx2() {
    return use_avx2_fma();
}

template <class Column>
SweepResult sweep_plain(const double* v_old, double* v_new, const Column* column,
                        const double* block_norm, const SweepRequest& request, int begin, int end) {
    SweepResult result = empty_result(request);
    for (int l = begin; l < end; ++l) {  // every token on its own, its block's band recomputed
        const double r = block_norm[l / kBandBlock];
        const double e = band_of(request.band, r);
        const Thresholds before =
            thresholds(request.before_low, request.before_high, band_of(request.before_band, r));
        const Thresholds after = thresholds(request.after_low, request.after_high, e);
        double extreme_v = request.selected ? -kInf : kInf;
        sweep_token(v_old, v_new, column, request, before, after, l, result, extreme_v);
        close_block(request, e, extreme_v, result);
    }
    return result;
}

template <class Column>
SweepResult sweep(const double* v_old, double* v_new, const Column* column,
                  const double* block_norm, const SweepRequest& request, int begin, int end) {
#if ATTNGEO_X86
    if (use_avx512f()) return sweep_avx512(v_old, v_new, column, block_norm, request, begin, end);
    if (use_avx2_fma()) return sweep_avx2(v_old, v_new, column, block_norm, request, begin, end);
#endif
    return sweep_plain(v_old, v_new, column, block_norm, request, begin, end);
}

CountPair count_band_plain(const double* values, const double* block_norm, Band band, int begin,
                           int end, double low, double high) {
    CountPair counts;
    for (int l = begin; l < end; ++l) {
        const Thresholds t = thresholds(low, high, band_of(band, block_norm[l / kBandBlock]));
        counts.surely += values[l] <= t.surely;
        counts.maybe += values[l] <= t.maybe;
    }
    return counts;
}

CountPair count_band(const double* values, const double* block_norm, Band band, int begin, int end,
                     double low, double high) {
#if ATTNGEO_X86
    if (use_avx2_fma()) return count_band_avx2(values, block_norm, band, begin, end, low, high);
#endif
    return count_band_plain(values, block_norm, band, begin, end, low, high);
}

int collect_band_plain(const double* values, const double* block_norm, Band band, int begin,
                       int end, double low, double high, int* out) {
    int found = 0;
    for (int l = begin; l < end; ++l) {
        const Thresholds t = thresholds(low, high, band_of(band, block_norm[l / kBandBlock]));
        if (values[l] > t.surely && values[l] <= t.maybe) out[found++] = l;
    }
    return found;
}

int collect_band(const double* values, const double* block_norm, Band band, int begin, int end,
                 double low, double high, int* out) {
#if ATTNGEO_X86
    if (use_avx2_fma())
        return collect_band_avx2(values, block_norm, band, begin, end, low, high, out);
#endif
    return collect_band_plain(values, block_norm, band, begin, end, low, high, out);
}

template <class Scalar>
void upper_strip_plain(const Scalar* lower, int ld, int first, int count, Scalar* strip,
                       int stride) {
    copy_strip_elements(lower, ld, first, count, strip, stride, 0);
}

template <class Scalar>
void upper_strip(const Scalar* lower, int ld, int first, int count, Scalar* strip, int stride) {
#if ATTNGEO_X86
    if constexpr (std::is_same_v<Scalar, float>) {
        if (use_avx2_fma()) {
            upper_strip_avx2(lower, ld, first, count, strip, stride);
            return;
        }
    }
#endif
    upper_strip_plain(lower, ld, first, count, strip, stride);
}

#define ATTNGEO_SWEEP_INSTANCES(Column)                                                            \
    template SweepResult sweep<Column>(const double*, double*, const Column*, const double*,       \
                                       const SweepRequest&, int, int);                             \
    template SweepResult sweep_plain<Column>(const double*, double*, const Column*, const double*, \
                                             const SweepRequest&, int, int);                       \
    template void upper_strip<Column>(const Column*, int, int, int, Column*, int);                 \
    template void upper_strip_plain<Column>(const Column*, int, int, int, Column*, int);
ATTNGEO_SWEEP_INSTANCES(float)
ATTNGEO_SWEEP_INSTANCES(double)
#if ATTNGEO_X86
template SweepResult sweep_avx2<float>(const double*, double*, const float*, const double*,
                                       const SweepRequest&, int, int);
template SweepResult sweep_avx2<double>(const double*, double*, const double*, const double*,
                                        const SweepRequest&, int, int);
template SweepResult sweep_avx512<float>(const double*, double*, const float*, const double*,
                                         const SweepRequest&, int, int);
template SweepResult sweep_avx512<double>(const double*, double*, const double*, const double*,
                                          const SweepRequest&, int, int);
#endif

}  // namespace attngeo::theory::gram_kernels
