// Power sums of the far run's gaps and the p⁻ sums read from them; see far_moments.hpp.
#include "theory/far_moments.hpp"

#include <algorithm>
#include <cmath>

#include "common/cpu_features.hpp"
#include "theory/bound_kernels.hpp"

namespace attngeo::theory::far_moments {
namespace {

// g(t) = exp(−t/2)/(1 + t) = Σ_k kG[k]·t^k on t ∈ [0, 0.4375]: the Chebyshev interpolant of
// degree 16 re-expanded in powers of t (scripts/p_minus_polynomial.py --moments; 3.2 units of
// 2⁻⁵³ at most, and Σ|kG[k]|t^k ≤ 4·g(t), so its sum through moments loses two bits at most).
constexpr double kG[kMoments] = {
    1.0,
    -1.499999999999992,
    1.6249999999982476,
    -1.645833333180058,
    1.6484374929199723,
    -1.6486977174847006,
    1.6487159061524308,
    -1.6486728110546187,
    1.6482647232773644,
    -1.6455206301154213,
    1.6317877582714464,
    -1.580423249600955,
    1.4374959210930154,
    -1.1459869961351428,
    0.7229354950624656,
    -0.3094703826840454,
    0.06558312745622155,
};

// The odd powers x, x³, …, x^(2·kDegree+1) of one scaled gap added to `sums`.
void add_odd_powers(double x, double* sums) {
    const double square = x * x;
    double power = x;
    for (int k = 0; k < kMoments; ++k) {
        sums[k] += power;
        power *= square;
    }
}

}  // namespace

Moments build(const double* h, int count, double anchor) {
    Moments m;
    m.count = count;
    const int checkpoints = (count + kStride - 1) / kStride;
    m.sums.assign(static_cast<std::size_t>(checkpoints) * kMoments, 0.0);
    m.exponent.assign(checkpoints, 0);
    m.positive.assign(checkpoints, 0);
    // From the last checkpoint back: each one's block, then the later checkpoints' sums moved
    // onto its exponent (a power of two, exact until it underflows where it is negligible).
    for (int c = checkpoints - 1; c >= 0; --c) {
        const int first = c * kStride, end = std::min(count, first + kStride);
        const double largest = anchor - h[first];
        if (!(largest > 0)) continue;  // u ≤ 0 from here on: p⁻ = 0, nothing to sum
        int exponent = 0;
        std::frexp(largest, &exponent);
        m.exponent[c] = exponent;
        m.positive[c] = 1;
        double* sums = m.sums.data() + static_cast<std::size_t>(c) * kMoments;
        // 2^−e times u is ldexp(u, −e) to the bit (one correctly rounded product) wherever 2^−e
        // is a double, which only a subnormal largest gap prevents; a multiply, not a libm call.
        const double scale = std::ldexp(1.0, -exponent);
        const bool by_product = std::isfinite(scale);
        for (int i = first; i < end; ++i) {
            const double u = anchor - h[i];
            if (!(u > 0)) break;
            add_odd_powers(by_product ? u * scale : std::ldexp(u, -exponent), sums);
        }
        if (c + 1 < checkpoints && m.positive[c + 1]) {
            const double* later = m.sums.data() + static_cast<std::size_t>(c + 1) * kMoments;
            const int shift = m.exponent[c + 1] - exponent;  // ≤ 0: u descends
            for (int k = 0; k < kMoments; ++k)
                sums[k] += std::ldexp(later[k], shift * (2 * k + 1));
        }
    }
    return m;
}

double complement_sum_by_moments(const Moments& moments, const double* h, int from, double anchor,
                                 double inverse_sigma) {
    const int count = moments.count;
    const int checkpoint = (from + kStride - 1) / kStride, start = checkpoint * kStride;
    if (start >= count)
        return bound_kernels::rising_p_minus_sums(h + from, count - from, anchor, inverse_sigma)
            .complement_sum;
    const double before =
        bound_kernels::rising_p_minus_sums(h + from, start - from, anchor, inverse_sigma)
            .complement_sum;
    double p_sum = 0;
    if (moments.positive[checkpoint]) {
        // Σ_i ξ_i·g(ξ_i²) with ξ_i = x_i·s, x_i the scaled gaps: s·Σ_k kG[k]·s^(2k)·Σ_i x_i^(2k+1),
        // by Horner's rule in s². The checkpoint's ξ ≤ kRisingXiLimit and x ≥ 1/2 keep s ≤ 1.32.
        const double s = std::ldexp(inverse_sigma, moments.exponent[checkpoint]);
        const double square = s * s;
        const double* sums = moments.sums.data() + static_cast<std::size_t>(checkpoint) * kMoments;
        double total = kG[kDegree] * sums[kDegree];
        for (int k = kDegree - 1; k >= 0; --k)
            total = std::fma(total, square, kG[k] * sums[k]);
        p_sum = bound_kernels::kInvSqrt2Pi * s * total;
    }
    return before + (static_cast<double>(count - start) - p_sum);
}

double complement_sum(const Moments& moments, const double* h, int from, double anchor,
                      double inverse_sigma) {
    if (plain_paths_forced())
        return bound_kernels::rising_p_minus_sums_plain(h + from, moments.count - from, anchor,
                                                        inverse_sigma)
            .complement_sum;
    return complement_sum_by_moments(moments, h, from, anchor, inverse_sigma);
}

}  // namespace attngeo::theory::far_moments
