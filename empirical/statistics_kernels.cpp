// The per-head statistics' O(n·d) passes and the fast exact addend; see statistics_kernels.hpp.
// Every loop keeps one accumulator per (token, lag) summed in ascending t, so vectorising across
// tokens or lags never reorders a sum.
#include "empirical/statistics_kernels.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <stdexcept>

#if ATTNGEO_X86
#include <immintrin.h>
#endif

namespace attngeo::empirical::statistics_kernels {

void transpose_to_double(const float* values, int n, int d, double* transposed) {
    for (int i = 0; i < n; ++i) {
        const float* row = values + static_cast<std::size_t>(i) * d;
        for (int t = 0; t < d; ++t)
            transposed[static_cast<std::size_t>(t) * n + i] = row[t];
    }
}

void token_norms(const double* transposed, int n, int d, double* norm) {
    std::fill(norm, norm + n, 0.0);
    for (int t = 0; t < d; ++t) {
        const double* x = transposed + static_cast<std::size_t>(t) * n;
        for (int i = 0; i < n; ++i)
            norm[i] += x[i] * x[i];
    }
    for (int i = 0; i < n; ++i)
        norm[i] = std::sqrt(norm[i]);
}

void dots_with_first(const double* transposed, int n, int d, double* to_first) {
    std::fill(to_first, to_first + n, 0.0);
    for (int t = 0; t < d; ++t) {
        const double* x = transposed + static_cast<std::size_t>(t) * n;
        const double first = x[0];
        for (int j = 0; j < n; ++j)
            to_first[j] += first * x[j];
    }
}

void lag_dots_plain(const double* transposed, int n, int d, int max_lag, int first, int last,
                    double* dots) {
    for (int i = first; i < last; ++i) {
        const int lags = std::min(max_lag, n - 1 - i);
        double* out = dots + static_cast<std::size_t>(i - first) * max_lag;
        for (int k = 1; k <= lags; ++k) {
            double dot = 0;
            for (int t = 0; t < d; ++t) {
                const double* x = transposed + static_cast<std::size_t>(t) * n;
                dot += x[i] * x[i + k];
            }
            out[k - 1] = dot;
        }
    }
}

#if ATTNGEO_X86
namespace {

// Lags k .. k + 4·Vectors − 1 of token i: Vectors accumulators in registers over every t, the
// token's own coordinate broadcast (one load) against 4·Vectors consecutive tokens.
template <int Vectors>
ATTNGEO_TARGET_AVX2_FMA inline void lag_block_avx2(const double* transposed, int n, int d, int i,
                                                   int k, double* out) {
    __m256d sum[Vectors];
    for (int v = 0; v < Vectors; ++v)
        sum[v] = _mm256_setzero_pd();
    const double* x = transposed;
    for (int t = 0; t < d; ++t, x += n) {
        const __m256d own = _mm256_broadcast_sd(x + i);
        for (int v = 0; v < Vectors; ++v)
            sum[v] = _mm256_fmadd_pd(own, _mm256_loadu_pd(x + i + k + 4 * v), sum[v]);
    }
    for (int v = 0; v < Vectors; ++v)
        _mm256_storeu_pd(out + k - 1 + 4 * v, sum[v]);
}

}  // namespace

ATTNGEO_TARGET_AVX2_FMA void lag_dots_avx2(const double* transposed, int n, int d, int max_lag,
                                           int first, int last, double* dots) {
    for (int i = first; i < last; ++i) {
        const int lags = std::min(max_lag, n - 1 - i);
        double* out = dots + static_cast<std::size_t>(i - first) * max_lag;
        int k = 1;
        for (; k + 15 <= lags; k += 16)
            lag_block_avx2<4>(transposed, n, d, i, k, out);
        for (; k + 3 <= lags; k += 4)
            lag_block_avx2<1>(transposed, n, d, i, k, out);
        for (; k <= lags; ++k) {
            double dot = 0;
            for (int t = 0; t < d; ++t) {
                const double* x = transposed + static_cast<std::size_t>(t) * n;
                dot = std::fma(x[i], x[i + k], dot);  // exact product: the plain twin's rounding
            }
            out[k - 1] = dot;
        }
    }
}
#endif

void lag_dots(const double* transposed, int n, int d, int max_lag, int first, int last,
              double* dots) {
#if ATTNGEO_X86
    if (use_avx2_fma()) {
        lag_dots_avx2(transposed, n, d, max_lag, first, last, dots);
        return;
    }
#endif
    lag_dots_plain(transposed, n, d, max_lag, first, last, dots);
}

double median_of(std::vector<double> x) {
    if (x.empty()) return 0;
    const std::size_t mid = x.size() / 2;
    std::nth_element(x.begin(), x.begin() + mid, x.end());
    if (x.size() % 2 == 1) return x[mid];
    const double upper = x[mid];
    return 0.5 * (upper + *std::max_element(x.begin(), x.begin() + mid));
}

void add_exact(simulate::ExactSum& sum, double x) {
    if (!(std::fabs(x) < 0x1p62)) {
        sum.add(x);  // throws, naming the addend
        return;
    }
    const double scaled = x * 0x1p64;  // exact: a power-of-two scale, far from overflow
    simulate::Int128 q;
    if (std::fabs(scaled) < 0x1p52) {
        // Below 2⁵² a double still has a fraction; nearbyint rounds it as nearbyintl would.
        q = static_cast<std::int64_t>(std::nearbyint(scaled));
    } else {
        // Already an integer: its 53-bit significand shifted by the exponent.
        std::uint64_t bits;
        std::memcpy(&bits, &scaled, sizeof bits);
        const int shift = static_cast<int>((bits >> 52) & 0x7FF) - 1075;
        const std::uint64_t significand =
            (bits & ((std::uint64_t{1} << 52) - 1)) | (std::uint64_t{1} << 52);
        const simulate::UInt128 magnitude = static_cast<simulate::UInt128>(significand) << shift;
        q = (bits >> 63) != 0 ? -static_cast<simulate::Int128>(magnitude)
                              : static_cast<simulate::Int128>(magnitude);
    }
    constexpr simulate::Int128 limit = static_cast<simulate::Int128>(1) << 126;
    sum.fixed += q;
    if (sum.fixed >= limit || sum.fixed <= -limit)
        throw std::overflow_error("ExactSum::add: running sum exceeds 2^62");
}

}  // namespace attngeo::empirical::statistics_kernels
