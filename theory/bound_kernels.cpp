// p⁻ sums of the upper bounds, AVX2 + libmvec and plain; see bound_kernels.hpp. Both compute
// p⁻ as φ(ξ)·ξ/(ξ² + 1) = φ(ξ)/(ξ + 1/ξ) (one division; a tiny ξ gives the limit 0 directly)
// and keep Σ(1 − p) in four lanes combined in one order, so only exp's rounding differs.
#include "theory/bound_kernels.hpp"

#if ATTNGEO_X86
#include <immintrin.h>
#endif

#include <algorithm>
#include <cmath>
#include <type_traits>

namespace attngeo::theory::bound_kernels {
namespace {

inline double p_minus_of_gap(double xi) {
    return xi > 0 ? kInvSqrt2Pi * std::exp(-0.5 * xi * xi) * xi / (xi * xi + 1) : 0.0;
}

// g(t) = exp(−t/2)/(1 + t) on three tiers of t = ξ², each in powers of s = t − centre: the
// Chebyshev interpolants of scripts/p_minus_polynomial.py, within 2 units of 2⁻⁵³ of g. Lower
// tiers need fewer terms, and a run of positions (ξ descending) splits into one stretch each.
struct RisingTier {
    double xi_limit;  // the tier takes 0 < ξ ≤ xi_limit (above the previous tier's)
    double centre;
    double coefficients[15];
};
constexpr int kRisingDegrees[3] = {5, 10, 14};
constexpr RisingTier kRisingTiers[3] = {
    {0.05,
     0.00125,  // t ∈ [0, 0.0025]
     {0.9981275358520012, -1.4959452019854276, 1.6188435469584592, -1.6376168424735302,
      1.6381754980125474, -1.6363902641431012}},
    {0.33166247903554,
     0.055,  // t ∈ [0, 0.11]
     {0.9221560972070654, -1.3351596573306113, 1.3808236897154436, -1.3280492059261215,
      1.2612158613699254, -1.1957054453550457, 1.1333901024520114, -1.0742828578680705,
      1.018277679735865, -0.972460287653762, 0.9217633060811192}},
    {kRisingXiLimit,
     0.27375,  // t ∈ [0.11, 0.4375]
     {0.6846549395273226, -0.8798387078616579, 0.7763286449574278, -0.6237463884061347,
      0.49147590034588373, -0.38602787403340105, 0.3030789396379952, -0.2379432770499107,
      0.18680538687968068, -0.14666084256261577, 0.11514099532663781, -0.09024746618904562,
      0.07085178896132688, -0.05929974172295704, 0.04655524374716989}},
};

// p⁻(ξ) = φ(0)·ξ·g(ξ²) on one tier, by Horner's rule with fused multiply-adds.
template <int Tier>
inline double rising_p_minus_on(double xi) {
    if (!(xi > 0)) return 0.0;
    const RisingTier& tier = kRisingTiers[Tier];
    const double s = std::fma(xi, xi, -tier.centre);
    double g = tier.coefficients[kRisingDegrees[Tier]];
    for (int k = kRisingDegrees[Tier] - 1; k >= 0; --k)
        g = std::fma(g, s, tier.coefficients[k]);
    return kInvSqrt2Pi * xi * g;
}

inline double rising_p_minus(double xi) {
    if (xi <= kRisingTiers[0].xi_limit) return rising_p_minus_on<0>(xi);
    if (xi <= kRisingTiers[1].xi_limit) return rising_p_minus_on<1>(xi);
    return rising_p_minus_on<2>(xi);
}

// A run's sums tier by tier: h ascends, so ξ = (anchor − h_i)·inverse_sigma descends and each
// tier is one stretch; their sums are added in one order. sums_on(tier, from, to) sums a stretch.
template <class SumsOn>
PMinusSums sums_by_tier(const double* h, int count, double anchor, double inverse_sigma,
                        SumsOn sums_on) {
    int ends[3];
    int from = 0;
    for (int tier = 2; tier >= 0; --tier) {
        const double below = tier > 0 ? kRisingTiers[tier - 1].xi_limit : -1.0;
        ends[tier] =
            static_cast<int>(std::partition_point(h + from, h + count,
                                                  [&](double h_i) {
                                                      return (anchor - h_i) * inverse_sigma > below;
                                                  }) -
                             h);
        from = ends[tier];
    }
    PMinusSums out;
    from = 0;
    for (int tier = 2; tier >= 0; --tier) {
        const PMinusSums part = sums_on(tier, from, ends[tier]);
        out.largest = std::max(out.largest, part.largest);
        out.complement_sum += part.complement_sum;
        from = ends[tier];
    }
    return out;
}

// The four lanes combined in one order, the same for every loop.
PMinusSums reduce_lanes(const double (&largest)[4], const double (&sums)[4]) {
    PMinusSums out;
    out.largest = std::max(std::max(largest[0], largest[1]), std::max(largest[2], largest[3]));
    out.complement_sum = (sums[0] + sums[1]) + (sums[2] + sums[3]);
    return out;
}

// Positions [from, count) one at a time after the lanes: the AVX2 loops' tail, and the plain
// loops whole (lane i % 4 for the positions the vector loop would have taken).
template <class PositionP>
void add_positions(int from, int count, bool in_lanes, double (&largest)[4], double (&sums)[4],
                   PMinusSums& out, PositionP position_p) {
    const int whole = in_lanes ? count / 4 * 4 : from;
    for (int i = from; i < whole; ++i) {
        const double p = position_p(i);
        largest[i % 4] = std::max(largest[i % 4], p);
        sums[i % 4] += 1 - p;
    }
    out = reduce_lanes(largest, sums);
    for (int i = std::max(from, whole); i < count; ++i) {
        const double p = position_p(i);
        out.largest = std::max(out.largest, p);
        out.complement_sum += 1 - p;
    }
}

template <class PositionP>
PMinusSums plain_sums(int count, PositionP position_p) {
    double largest[4] = {0, 0, 0, 0}, sums[4] = {0, 0, 0, 0};
    PMinusSums out;
    add_positions(0, count, true, largest, sums, out, position_p);
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

template <int Tier>
ATTNGEO_TARGET_AVX2_FMA inline __m256d rising_p_minus4(__m256d xi) {
    const RisingTier& tier = kRisingTiers[Tier];
    const __m256d positive = _mm256_cmp_pd(xi, _mm256_setzero_pd(), _CMP_GT_OQ);
    const __m256d s = _mm256_fmsub_pd(xi, xi, _mm256_set1_pd(tier.centre));
    __m256d g = _mm256_set1_pd(tier.coefficients[kRisingDegrees[Tier]]);
    for (int k = kRisingDegrees[Tier] - 1; k >= 0; --k)
        g = _mm256_fmadd_pd(g, s, _mm256_set1_pd(tier.coefficients[k]));
    const __m256d p = _mm256_mul_pd(_mm256_mul_pd(_mm256_set1_pd(kInvSqrt2Pi), xi), g);
    return _mm256_and_pd(p, positive);
}

struct Lanes4 {
    __m256d largest, complement;
};

ATTNGEO_TARGET_AVX2_FMA inline void accumulate4(Lanes4& lanes, __m256d p) {
    lanes.largest = _mm256_max_pd(lanes.largest, p);
    lanes.complement = _mm256_add_pd(lanes.complement, _mm256_sub_pd(_mm256_set1_pd(1.0), p));
}

// The lanes' partial results, then the tail [from, count) one position at a time.
template <class PositionP>
ATTNGEO_TARGET_AVX2_FMA PMinusSums finish_lanes(const Lanes4& lanes, int from, int count,
                                                PositionP position_p) {
    alignas(32) double largest[4], sums[4];
    _mm256_store_pd(largest, lanes.largest);
    _mm256_store_pd(sums, lanes.complement);
    PMinusSums out;
    add_positions(from, count, false, largest, sums, out, position_p);
    return out;
}
#endif

}  // namespace

double p_minus_at(double xi) {
    return p_minus_of_gap(xi);
}

double rising_p_minus_at(double xi) {
    return rising_p_minus(xi);
}

PMinusSums p_minus_sums_plain(const double* near, const double* far, int count) {
    return plain_sums(
        count, [&](int i) { return std::max(p_minus_of_gap(near[i]), p_minus_of_gap(far[i])); });
}

PMinusSums anchored_p_minus_sums_plain(const double* h, int count, double anchor,
                                       double inverse_sigma) {
    return plain_sums(count,
                      [&](int i) { return p_minus_of_gap((anchor - h[i]) * inverse_sigma); });
}

PMinusSums rising_p_minus_sums_plain(const double* h, int count, double anchor,
                                     double inverse_sigma) {
    auto stretch = [&](auto tier_constant, int from, int to) {
        constexpr int kTier = decltype(tier_constant)::value;
        return plain_sums(to - from, [&](int i) {
            return rising_p_minus_on<kTier>((anchor - h[from + i]) * inverse_sigma);
        });
    };
    return sums_by_tier(h, count, anchor, inverse_sigma, [&](int tier, int from, int to) {
        if (tier == 0) return stretch(std::integral_constant<int, 0>{}, from, to);
        if (tier == 1) return stretch(std::integral_constant<int, 1>{}, from, to);
        return stretch(std::integral_constant<int, 2>{}, from, to);
    });
}

#if ATTNGEO_X86
ATTNGEO_TARGET_AVX2_FMA PMinusSums p_minus_sums_avx2(const double* near, const double* far,
                                                     int count) {
    Lanes4 lanes{_mm256_setzero_pd(), _mm256_setzero_pd()};
    int i = 0;
    for (; i + 4 <= count; i += 4)
        accumulate4(lanes, _mm256_max_pd(p_minus4(_mm256_loadu_pd(near + i)),
                                         p_minus4(_mm256_loadu_pd(far + i))));
    return finish_lanes(lanes, i, count, [&](int k) {
        return std::max(p_minus_of_gap(near[k]), p_minus_of_gap(far[k]));
    });
}

ATTNGEO_TARGET_AVX2_FMA PMinusSums anchored_p_minus_sums_avx2(const double* h, int count,
                                                              double anchor, double inverse_sigma) {
    Lanes4 lanes{_mm256_setzero_pd(), _mm256_setzero_pd()};
    const __m256d anchor4 = _mm256_set1_pd(anchor), scale4 = _mm256_set1_pd(inverse_sigma);
    int i = 0;
    for (; i + 4 <= count; i += 4) {
        const __m256d gap = _mm256_sub_pd(anchor4, _mm256_loadu_pd(h + i));
        accumulate4(lanes, p_minus4(_mm256_mul_pd(gap, scale4)));
    }
    return finish_lanes(lanes, i, count,
                        [&](int k) { return p_minus_of_gap((anchor - h[k]) * inverse_sigma); });
}

namespace {
template <int Tier>
ATTNGEO_TARGET_AVX2_FMA PMinusSums rising_stretch_avx2(const double* h, int count, double anchor,
                                                       double inverse_sigma) {
    Lanes4 lanes{_mm256_setzero_pd(), _mm256_setzero_pd()};
    const __m256d anchor4 = _mm256_set1_pd(anchor), scale4 = _mm256_set1_pd(inverse_sigma);
    int i = 0;
    for (; i + 4 <= count; i += 4) {
        const __m256d gap = _mm256_sub_pd(anchor4, _mm256_loadu_pd(h + i));
        accumulate4(lanes, rising_p_minus4<Tier>(_mm256_mul_pd(gap, scale4)));
    }
    return finish_lanes(lanes, i, count, [&](int k) {
        return rising_p_minus_on<Tier>((anchor - h[k]) * inverse_sigma);
    });
}
}  // namespace

ATTNGEO_TARGET_AVX2_FMA PMinusSums rising_p_minus_sums_avx2(const double* h, int count,
                                                            double anchor, double inverse_sigma) {
    return sums_by_tier(h, count, anchor, inverse_sigma, [&](int tier, int from, int to) {
        if (tier == 0) return rising_stretch_avx2<0>(h + from, to - from, anchor, inverse_sigma);
        if (tier == 1) return rising_stretch_avx2<1>(h + from, to - from, anchor, inverse_sigma);
        return rising_stretch_avx2<2>(h + from, to - from, anchor, inverse_sigma);
    });
}
#endif

PMinusSums p_minus_sums(const double* near, const double* far, int count) {
#if ATTNGEO_X86
    if (use_avx2_fma()) return p_minus_sums_avx2(near, far, count);
#endif
    return p_minus_sums_plain(near, far, count);
}

PMinusSums anchored_p_minus_sums(const double* h, int count, double anchor, double inverse_sigma) {
#if ATTNGEO_X86
    if (use_avx2_fma()) return anchored_p_minus_sums_avx2(h, count, anchor, inverse_sigma);
#endif
    return anchored_p_minus_sums_plain(h, count, anchor, inverse_sigma);
}

PMinusSums rising_p_minus_sums(const double* h, int count, double anchor, double inverse_sigma) {
#if ATTNGEO_X86
    if (use_avx2_fma()) return rising_p_minus_sums_avx2(h, count, anchor, inverse_sigma);
#endif
    return rising_p_minus_sums_plain(h, count, anchor, inverse_sigma);
}

}  // namespace attngeo::theory::bound_kernels
