// Philox streams and the ziggurat normal transform; see rng.hpp. The Philox refill (in AVX-512
// and AVX2) and the ziggurat's common case (AVX2) have vector versions beside the plain code they
// must match bit for bit (chosen at run time; tests/simulate/test_rng.cpp compares them). No
// "fma" target for floating point: the vector arithmetic must round like the plain arithmetic
// (the AVX-512 target, which names fma, holds integer arithmetic only).
#include "simulate/rng.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <stdexcept>
#include <string>

#include "common/cpu_features.hpp"

#if ATTNGEO_X86
#include <immintrin.h>
#endif

namespace attngeo::simulate {
namespace {

// Ziggurat tables (Marsaglia & Tsang 2000, in Doornik's 2005 formulation): 256 layers of
// equal area V with the base layer's right edge at R (1.4% of draws miss a layer's core, half
// the rate of 128 layers).
constexpr int kLayers = 256;
constexpr double kR = 3.6541528853610088;
constexpr double kV = 4.92867323399e-3;

struct ZigguratTables {
    double x[kLayers + 1];        // layer right edges, x[0] = V/f(R) (base layer incl. tail)
    double ratio[kLayers];        // x[i+1]/x[i]: the fraction of layer i inside the density
    double density[kLayers + 1];  // exp(−x[i]²/2): the wedge test needs one exp, not two
    struct alignas(16) Layer {
        double ratio, x;
    };
    Layer layer[kLayers];  // (ratio[i], x[i]) side by side: one 16-byte load per draw
    ZigguratTables() {
        double f = std::exp(-0.5 * kR * kR);
        x[0] = kV / f;
        x[1] = kR;
        x[kLayers] = 0;
        for (int i = 2; i < kLayers; ++i) {
            x[i] = std::sqrt(-2 * std::log(kV / x[i - 1] + f));
            f = std::exp(-0.5 * x[i] * x[i]);
        }
        for (int i = 0; i <= kLayers; ++i)
            density[i] = std::exp(-0.5 * x[i] * x[i]);
        for (int i = 0; i < kLayers; ++i) {
            ratio[i] = x[i + 1] / x[i];
            layer[i] = {ratio[i], x[i]};
        }
    }
};

const ZigguratTables& tables() {
    static const ZigguratTables t;
    return t;
}

// Short runs (tens of values): an inline SSE2 loop instead of a memcpy call.
inline void copy_doubles(const double* from, int count, double* to) {
#if ATTNGEO_X86
    int i = 0;
    for (; i + 2 <= count; i += 2)
        _mm_storeu_pd(to + i, _mm_loadu_pd(from + i));
    if (i < count) to[i] = from[i];
#else
    std::copy_n(from, count, to);
#endif
}

constexpr std::uint32_t kMissSubstream = 0x80000000u;

// Top 52 bits m: u = (m + ½)·2⁻⁵¹ − 1, uniform on (−1, 1) and symmetric. Built from the double
// y = 1 + m·2⁻⁵² (m as the mantissa of 1.0) as ((y + y) − 3) + 2⁻⁵², each step exact, so that
// the AVX2 path needs no 64-bit integer conversion. Low 8 bits: the layer.
inline double ziggurat_u(std::uint64_t bits) {
    const std::uint64_t y_bits = 0x3FF0000000000000ULL | (bits >> 12);
    double y;
    std::memcpy(&y, &y_bits, sizeof y);
    return ((y + y) - 3.0) + 0x1p-52;
}
inline int ziggurat_layer(std::uint64_t bits) {
    return static_cast<int>(bits & (kLayers - 1));
}

#if ATTNGEO_X86
// 32×32 → 64-bit products: the low halves in one multiply, the high halves from the even and
// the odd lanes' full products.
ATTNGEO_TARGET_AVX2 inline void mulhilo(__m256i a, __m256i multiplier, __m256i& hi, __m256i& lo) {
    const __m256i even = _mm256_mul_epu32(a, multiplier);
    const __m256i odd = _mm256_mul_epu32(_mm256_srli_epi64(a, 32), multiplier);
    lo = _mm256_mullo_epi32(a, multiplier);
    hi = _mm256_blend_epi32(_mm256_srli_epi64(even, 32), odd, 0xAA);
}

// 32 blocks as four groups of 8, lane j of group g holding block 8g + j (structure of arrays:
// x[g][w] is word w of the eight blocks), the rounds of Random123's philox4x32 on each lane.
ATTNGEO_TARGET_AVX2 void philox32_avx2(Philox::ctr_type counter, Philox::key_type key,
                                       std::uint64_t* words) {
    constexpr int kGroups = 4;
    __m256i x[kGroups][4];
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    for (int g = 0; g < kGroups; ++g) {
        x[g][0] = _mm256_add_epi32(
            _mm256_set1_epi32(static_cast<int>(counter.v[0] + 8u * static_cast<unsigned>(g))),
            lane);
        for (int w = 1; w < 4; ++w)
            x[g][w] = _mm256_set1_epi32(static_cast<int>(counter.v[w]));
    }
    const __m256i m0 = _mm256_set1_epi32(static_cast<int>(PHILOX_M4x32_0));
    const __m256i m1 = _mm256_set1_epi32(static_cast<int>(PHILOX_M4x32_1));
    const __m256i bump0 = _mm256_set1_epi32(static_cast<int>(PHILOX_W32_0));
    const __m256i bump1 = _mm256_set1_epi32(static_cast<int>(PHILOX_W32_1));
    __m256i k0 = _mm256_set1_epi32(static_cast<int>(key.v[0]));
    __m256i k1 = _mm256_set1_epi32(static_cast<int>(key.v[1]));
    for (int round = 0; round < 10; ++round) {
        if (round > 0) {
            k0 = _mm256_add_epi32(k0, bump0);
            k1 = _mm256_add_epi32(k1, bump1);
        }
        for (int g = 0; g < kGroups; ++g) {
            __m256i hi0, lo0, hi1, lo1;
            mulhilo(x[g][0], m0, hi0, lo0);
            mulhilo(x[g][2], m1, hi1, lo1);
            x[g][0] = _mm256_xor_si256(hi1, _mm256_xor_si256(x[g][1], k0));
            x[g][2] = _mm256_xor_si256(hi0, _mm256_xor_si256(x[g][3], k1));
            x[g][1] = lo1;
            x[g][3] = lo0;
        }
    }
    // Lanes to words: A_j = x0 | x1 << 32 and B_j = x2 | x3 << 32, stored A0 B0 A1 B1 ...
    for (int g = 0; g < kGroups; ++g) {
        const __m256i a_low = _mm256_unpacklo_epi32(x[g][0], x[g][1]);   // A0 A1 | A4 A5
        const __m256i a_high = _mm256_unpackhi_epi32(x[g][0], x[g][1]);  // A2 A3 | A6 A7
        const __m256i b_low = _mm256_unpacklo_epi32(x[g][2], x[g][3]);   // B0 B1 | B4 B5
        const __m256i b_high = _mm256_unpackhi_epi32(x[g][2], x[g][3]);  // B2 B3 | B6 B7
        const __m256i p = _mm256_unpacklo_epi64(a_low, b_low);           // A0 B0 | A4 B4
        const __m256i q = _mm256_unpackhi_epi64(a_low, b_low);           // A1 B1 | A5 B5
        const __m256i r = _mm256_unpacklo_epi64(a_high, b_high);         // A2 B2 | A6 B6
        const __m256i s = _mm256_unpackhi_epi64(a_high, b_high);         // A3 B3 | A7 B7
        __m256i* out = reinterpret_cast<__m256i*>(words + 16 * g);
        _mm256_storeu_si256(out + 0, _mm256_permute2x128_si256(p, q, 0x20));
        _mm256_storeu_si256(out + 1, _mm256_permute2x128_si256(r, s, 0x20));
        _mm256_storeu_si256(out + 2, _mm256_permute2x128_si256(p, q, 0x31));
        _mm256_storeu_si256(out + 3, _mm256_permute2x128_si256(r, s, 0x31));
    }
}

// The zero-masked forms with a full mask are the plain instructions; GCC 12's unmasked ones seed
// their result from an "undefined" vector that -Wuninitialized flags.
constexpr __mmask8 kAllQwords = 0xFF;
constexpr __mmask16 kAllLanes = 0xFFFF, kOddLanes = 0xAAAA;
ATTNGEO_TARGET_AVX512_FMA inline __m512i unpack_low32(__m512i a, __m512i b) {
    return _mm512_maskz_unpacklo_epi32(kAllLanes, a, b);
}
ATTNGEO_TARGET_AVX512_FMA inline __m512i unpack_high32(__m512i a, __m512i b) {
    return _mm512_maskz_unpackhi_epi32(kAllLanes, a, b);
}
ATTNGEO_TARGET_AVX512_FMA inline __m512i unpack_low64(__m512i a, __m512i b) {
    return _mm512_maskz_unpacklo_epi64(kAllQwords, a, b);
}
ATTNGEO_TARGET_AVX512_FMA inline __m512i unpack_high64(__m512i a, __m512i b) {
    return _mm512_maskz_unpackhi_epi64(kAllQwords, a, b);
}
// 128-bit parts (a[i0], a[i1], b[i2], b[i3]) for Selector = _MM_SHUFFLE(i3, i2, i1, i0).
template <int Selector>
ATTNGEO_TARGET_AVX512_FMA inline __m512i shuffle_quarters(__m512i a, __m512i b) {
    return _mm512_maskz_shuffle_i64x2(kAllQwords, a, b, Selector);
}

// 32×32 → 64-bit products in sixteen lanes: the high halves from the even and the odd lanes'
// full products (AVX-512F has no high-half multiply of 32-bit lanes), the low halves in one
// multiply (BM_PhiloxRefill: 63.5 µs against 67.8 with the low halves from those products too).
ATTNGEO_TARGET_AVX512_FMA inline void mulhilo16(__m512i a, __m512i multiplier, __m512i& hi,
                                                __m512i& lo) {
    const __m512i even = _mm512_maskz_mul_epu32(kAllQwords, a, multiplier);
    const __m512i odd =
        _mm512_maskz_mul_epu32(kAllQwords, _mm512_maskz_srli_epi64(kAllQwords, a, 32), multiplier);
    hi = _mm512_mask_blend_epi32(kOddLanes, _mm512_maskz_srli_epi64(kAllQwords, even, 32), odd);
    lo = _mm512_maskz_mullo_epi32(kAllLanes, a, multiplier);
}

// The blocks of one group of 16 lanes to words: A_j = x0 | x1 << 32, B_j = x2 | x3 << 32,
// stored A0 B0 A1 B1 … A15 B15 (the layout of philox32_avx2's four-lane halves, twice as wide).
ATTNGEO_TARGET_AVX512_FMA inline void store_words16(const __m512i (&x)[4], std::uint64_t* words) {
    const __m512i a_low = unpack_low32(x[0], x[1]);    // per 128 bits c: A4c A4c+1
    const __m512i a_high = unpack_high32(x[0], x[1]);  // A4c+2 A4c+3
    const __m512i b_low = unpack_low32(x[2], x[3]);
    const __m512i b_high = unpack_high32(x[2], x[3]);
    const __m512i p = unpack_low64(a_low, b_low);     // per 128 bits c: A4c B4c
    const __m512i q = unpack_high64(a_low, b_low);    // A4c+1 B4c+1
    const __m512i r = unpack_low64(a_high, b_high);   // A4c+2 B4c+2
    const __m512i s = unpack_high64(a_high, b_high);  // A4c+3 B4c+3
    // Output vector c is (p, q, r, s) of 128-bit part c.
    const __m512i pq01 = shuffle_quarters<_MM_SHUFFLE(1, 0, 1, 0)>(p, q);  // p0 p1 q0 q1
    const __m512i rs01 = shuffle_quarters<_MM_SHUFFLE(1, 0, 1, 0)>(r, s);
    const __m512i pq23 = shuffle_quarters<_MM_SHUFFLE(3, 2, 3, 2)>(p, q);
    const __m512i rs23 = shuffle_quarters<_MM_SHUFFLE(3, 2, 3, 2)>(r, s);
    _mm512_storeu_si512(words + 0, shuffle_quarters<_MM_SHUFFLE(2, 0, 2, 0)>(pq01, rs01));
    _mm512_storeu_si512(words + 8, shuffle_quarters<_MM_SHUFFLE(3, 1, 3, 1)>(pq01, rs01));
    _mm512_storeu_si512(words + 16, shuffle_quarters<_MM_SHUFFLE(2, 0, 2, 0)>(pq23, rs23));
    _mm512_storeu_si512(words + 24, shuffle_quarters<_MM_SHUFFLE(3, 1, 3, 1)>(pq23, rs23));
}

// 32 blocks as two groups of 16, lane j of group g holding block 16g + j: philox32_avx2 with
// twice the lanes, and the three-way exclusive or of each round in one ternary-logic step.
ATTNGEO_TARGET_AVX512_FMA void philox32_avx512(Philox::ctr_type counter, Philox::key_type key,
                                               std::uint64_t* words) {
    constexpr int kGroups = 2;
    constexpr int kXor3 = 0x96;  // a ^ b ^ c as _mm512_ternarylogic_epi32's truth table
    __m512i x[kGroups][4];
    const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    for (int g = 0; g < kGroups; ++g) {
        x[g][0] = _mm512_add_epi32(
            _mm512_set1_epi32(static_cast<int>(counter.v[0] + 16u * static_cast<unsigned>(g))),
            lane);
        for (int w = 1; w < 4; ++w)
            x[g][w] = _mm512_set1_epi32(static_cast<int>(counter.v[w]));
    }
    const __m512i m0 = _mm512_set1_epi32(static_cast<int>(PHILOX_M4x32_0));
    const __m512i m1 = _mm512_set1_epi32(static_cast<int>(PHILOX_M4x32_1));
    const __m512i bump0 = _mm512_set1_epi32(static_cast<int>(PHILOX_W32_0));
    const __m512i bump1 = _mm512_set1_epi32(static_cast<int>(PHILOX_W32_1));
    __m512i k0 = _mm512_set1_epi32(static_cast<int>(key.v[0]));
    __m512i k1 = _mm512_set1_epi32(static_cast<int>(key.v[1]));
    for (int round = 0; round < 10; ++round) {
        if (round > 0) {
            k0 = _mm512_add_epi32(k0, bump0);
            k1 = _mm512_add_epi32(k1, bump1);
        }
        for (int g = 0; g < kGroups; ++g) {
            __m512i hi0, lo0, hi1, lo1;
            mulhilo16(x[g][0], m0, hi0, lo0);
            mulhilo16(x[g][2], m1, hi1, lo1);
            x[g][0] = _mm512_ternarylogic_epi32(hi1, x[g][1], k0, kXor3);
            x[g][2] = _mm512_ternarylogic_epi32(hi0, x[g][3], k1, kXor3);
            x[g][1] = lo1;
            x[g][3] = lo0;
        }
    }
    for (int g = 0; g < kGroups; ++g)
        store_words16(x[g], words + 32 * g);
}
#endif

}  // namespace

void philox_words_plain(Philox::ctr_type counter, Philox::key_type key, int blocks,
                        std::uint64_t* words) {
    for (int b = 0; b < blocks; ++b) {
        const Philox::ctr_type x = Philox()(counter, key);
        ++counter.v[0];
        words[2 * b] = x.v[0] | (static_cast<std::uint64_t>(x.v[1]) << 32);
        words[2 * b + 1] = x.v[2] | (static_cast<std::uint64_t>(x.v[3]) << 32);
    }
}

#if ATTNGEO_X86
namespace {
// `blocks` (a multiple of 32) as runs of 32 by a vector kernel of 32 blocks.
template <class Kernel32>
void philox_words_by_32(Kernel32 kernel, Philox::ctr_type counter, Philox::key_type key, int blocks,
                        std::uint64_t* words) {
    for (int b = 0; b < blocks; b += 32) {
        kernel(counter, key, words + 2 * b);
        counter.v[0] += 32;
    }
}
}  // namespace

void philox_words_avx2(Philox::ctr_type counter, Philox::key_type key, int blocks,
                       std::uint64_t* words) {
    philox_words_by_32(philox32_avx2, counter, key, blocks, words);
}

void philox_words_avx512(Philox::ctr_type counter, Philox::key_type key, int blocks,
                         std::uint64_t* words) {
    philox_words_by_32(philox32_avx512, counter, key, blocks, words);
}
#endif

void philox_words(Philox::ctr_type counter, Philox::key_type key, int blocks,
                  std::uint64_t* words) {
#if ATTNGEO_X86
    if (use_avx512f()) {
        philox_words_avx512(counter, key, blocks, words);
        return;
    }
    if (use_avx2()) {
        philox_words_avx2(counter, key, blocks, words);
        return;
    }
#endif
    philox_words_plain(counter, key, blocks, words);
}

void ziggurat_cores_plain(const std::uint64_t* words, int count, double* normals,
                          std::uint64_t& misses) {
    const ZigguratTables& t = tables();
    misses = 0;
    for (int i = 0; i < count; ++i) {
        const double u = ziggurat_u(words[i]);
        const int layer = ziggurat_layer(words[i]);
        normals[i] = u * t.x[layer];
        if (!(std::abs(u) < t.ratio[layer])) misses |= std::uint64_t{1} << i;
    }
}

#if ATTNGEO_X86
// Four words at a time, each layer's (ratio, x) pair fetched with one 16-byte load.
ATTNGEO_TARGET_AVX2 void ziggurat_cores_avx2(const std::uint64_t* words, int count, double* normals,
                                             std::uint64_t& misses) {
    const ZigguratTables& t = tables();
    const __m256i one_exponent = _mm256_set1_epi64x(0x3FF0000000000000LL);
    const __m256d three = _mm256_set1_pd(3.0), half_step = _mm256_set1_pd(0x1p-52);
    const __m256d magnitude = _mm256_castsi256_pd(_mm256_set1_epi64x(0x7FFFFFFFFFFFFFFFLL));
    std::uint64_t found = 0;
    for (int i = 0; i < count; i += 4) {
        const __m256i bits = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(words + i));
        const __m256d y =
            _mm256_castsi256_pd(_mm256_or_si256(_mm256_srli_epi64(bits, 12), one_exponent));
        const __m256d u = _mm256_add_pd(_mm256_sub_pd(_mm256_add_pd(y, y), three), half_step);
        const double* pair[4];
        for (int j = 0; j < 4; ++j)
            pair[j] = &t.layer[ziggurat_layer(words[i + j])].ratio;
        const __m256d pairs02 = _mm256_insertf128_pd(_mm256_castpd128_pd256(_mm_load_pd(pair[0])),
                                                     _mm_load_pd(pair[2]), 1);
        const __m256d pairs13 = _mm256_insertf128_pd(_mm256_castpd128_pd256(_mm_load_pd(pair[1])),
                                                     _mm_load_pd(pair[3]), 1);
        const __m256d ratio = _mm256_unpacklo_pd(pairs02, pairs13);
        const __m256d edge = _mm256_unpackhi_pd(pairs02, pairs13);
        _mm256_storeu_pd(normals + i, _mm256_mul_pd(u, edge));
        const int inside =
            _mm256_movemask_pd(_mm256_cmp_pd(_mm256_and_pd(u, magnitude), ratio, _CMP_LT_OQ));
        found |= static_cast<std::uint64_t>(~inside & 0xF) << i;
    }
    misses = found;
}
#endif

void ziggurat_cores(const std::uint64_t* words, int count, double* normals, std::uint64_t& misses) {
#if ATTNGEO_X86
    if (use_avx2()) {
        ziggurat_cores_avx2(words, count, normals, misses);
        return;
    }
#endif
    ziggurat_cores_plain(words, count, normals, misses);
}

RandomStream::RandomStream(std::uint64_t seed, std::uint32_t grid_point, std::uint32_t trial,
                           std::uint32_t substream)
    : miss_words_{}, buffer_{} {
    if (substream >= kMissSubstream) {
        throw std::invalid_argument("RandomStream: substream " + std::to_string(substream) +
                                    " ≥ 2^31 (reserved for the miss streams)");
    }
    key_ = {{static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32)}};
    counter_ = {{0, trial, grid_point, substream}};
    miss_counter_ = {{0, trial, grid_point, substream | kMissSubstream}};
    tables();
}

void RandomStream::next_words() {
    philox_words(counter_, key_, kBlocksPerRefill, buffer_);
    counter_.v[0] += kBlocksPerRefill;
}

void RandomStream::refill() {
    next_words();
    ziggurat_cores(buffer_, kBufferWords, cores_, misses_);
    used_ = 0;
}

std::uint64_t RandomStream::next_miss_u64() {
    if (miss_used_ == kBufferWords) {
        philox_words(miss_counter_, key_, kBlocksPerRefill, miss_words_);
        miss_counter_.v[0] += kBlocksPerRefill;
        miss_used_ = 0;
    }
    return miss_words_[miss_used_++];
}

// One ziggurat draw whose first word is `bits`: the layer's core, or the miss path.
double RandomStream::normal_from(std::uint64_t bits) {
    const ZigguratTables& t = tables();
    const double u = ziggurat_u(bits);
    const int layer = ziggurat_layer(bits);
    if (std::abs(u) < t.ratio[layer]) return u * t.x[layer];
    return normal_after_miss(u, layer);
}

double RandomStream::next_normal() {
    return normal_from(next_u64());
}

// What a draw does after its first word (u, layer) fell outside the layer's core: the tail or
// the wedge test with words of the miss stream, and on a wedge rejection a fresh attempt there.
double RandomStream::normal_after_miss(double u, int layer) {
    const ZigguratTables& t = tables();
    if (layer == 0) {
        double x, y;
        do {
            x = std::log(next_miss_open_uniform()) / kR;
            y = std::log(next_miss_open_uniform());
        } while (-2 * y < x * x);
        return u < 0 ? x - kR : kR - x;
    }
    // The wedge: a uniform height between the density at the layer's inner edge x[l+1] and at
    // its outer edge x[l] must fall under f(x) = exp(−x²/2).
    const double x = u * t.x[layer];
    const double inner = t.density[layer + 1], outer = t.density[layer];
    if (inner + next_miss_open_uniform() * (outer - inner) < std::exp(-0.5 * x * x)) return x;
    return normal_from(next_miss_u64());  // a fresh attempt, all from the miss stream
}

void RandomStream::redo_misses(std::uint64_t misses, int first, double* out) {
    while (misses != 0) {
        const int j = __builtin_ctzll(misses);
        misses &= misses - 1;
        const std::uint64_t bits = buffer_[first + j];
        out[j] = normal_after_miss(ziggurat_u(bits), ziggurat_layer(bits));
    }
}

void RandomStream::fill_normals(double* out, std::size_t count) {
    while (count > 0) {
        if (used_ == kBufferWords && count >= static_cast<std::size_t>(kBufferWords)) {
            // A whole buffer: the cores straight into out, then its misses.
            next_words();
            std::uint64_t misses;
            ziggurat_cores(buffer_, kBufferWords, out, misses);
            redo_misses(misses, 0, out);
            out += kBufferWords;
            count -= kBufferWords;
            continue;  // buffer_ stays fully used
        }
        if (used_ == kBufferWords) refill();
        const int run = static_cast<int>(std::min<std::size_t>(count, kBufferWords - used_));
        copy_doubles(cores_ + used_, run, out);
        const std::uint64_t window = run == 64 ? ~0ULL : (1ULL << run) - 1;
        redo_misses((misses_ >> used_) & window, used_, out);
        used_ += run;
        out += run;
        count -= static_cast<std::size_t>(run);
    }
}

}  // namespace attngeo::simulate
