// The per-head statistics' O(n·d) passes and the fast exact addend; see statistics_kernels.hpp.
// Every loop keeps one accumulator per (token, lag) summed in ascending t, so vectorising across
// tokens or lags never reorders a sum.
#include "empirical/extract/statistics_kernels.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <stdexcept>

#include "common/order_statistics.hpp"

#if ATTNGEO_X86
#include <immintrin.h>
#endif

namespace attngeo::empirical::statistics_kernels {

int transposed_stride(int n) {
    int ld = (n + 7) / 8 * 8;
    if (ld % 512 == 0) ld += 8;  // 512 doubles = 4 KiB
    return ld;
}

void transpose_to_double(const float* values, int n, int d, int ld, double* transposed) {
    constexpr int kTokens = 8;  // one cache line of each transposed row per block
    int i = 0;
    for (; i + kTokens <= n; i += kTokens)
        for (int t = 0; t < d; ++t) {
            double* out = transposed + static_cast<std::size_t>(t) * ld + i;
            for (int j = 0; j < kTokens; ++j)
                out[j] = values[static_cast<std::size_t>(i + j) * d + t];
        }
    for (; i < n; ++i)
        for (int t = 0; t < d; ++t)
            transposed[static_cast<std::size_t>(t) * ld + i] =
                values[static_cast<std::size_t>(i) * d + t];
}

void token_norms(const double* transposed, int n, int d, int ld, double* norm) {
    std::fill(norm, norm + n, 0.0);
    for (int t = 0; t < d; ++t) {
        const double* x = transposed + static_cast<std::size_t>(t) * ld;
        for (int i = 0; i < n; ++i)
            norm[i] += x[i] * x[i];
    }
    for (int i = 0; i < n; ++i)
        norm[i] = std::sqrt(norm[i]);
}

void dots_with_first(const double* transposed, int n, int d, int ld, double* to_first) {
    std::fill(to_first, to_first + n, 0.0);
    for (int t = 0; t < d; ++t) {
        const double* x = transposed + static_cast<std::size_t>(t) * ld;
        const double first = x[0];
        for (int j = 0; j < n; ++j)
            to_first[j] += first * x[j];
    }
}

void lag_dots_plain(const double* transposed, int n, int d, int ld, int max_lag, int first,
                    int last, double* dots) {
    for (int i = first; i < last; ++i) {
        const int lags = std::min(max_lag, n - 1 - i);
        double* out = dots + static_cast<std::size_t>(i - first) * max_lag;
        for (int k = 1; k <= lags; ++k) {
            double dot = 0;
            for (int t = 0; t < d; ++t) {
                const double* x = transposed + static_cast<std::size_t>(t) * ld;
                dot += x[i] * x[i + k];
            }
            out[k - 1] = dot;
        }
    }
}

void add_lag_cosines_plain(const double* dots, double own, const double* other, int lags,
                           double* totals) {
    for (int k = 0; k < lags; ++k)
        totals[k] += cosine_from_dot(dots[k], own, other[k]);
}

#if ATTNGEO_X86
namespace {

// Lags k .. k + 4·Vectors − 1 of token i: Vectors accumulators in registers over every t, the
// token's own coordinate broadcast (one load) against 4·Vectors consecutive tokens.
template <int Vectors>
ATTNGEO_TARGET_AVX2_FMA inline void lag_block_avx2(const double* transposed, int d, int ld, int i,
                                                   int k, double* out) {
    __m256d sum[Vectors];
    for (int v = 0; v < Vectors; ++v)
        sum[v] = _mm256_setzero_pd();
    const double* x = transposed;
    for (int t = 0; t < d; ++t, x += ld) {
        const __m256d own = _mm256_broadcast_sd(x + i);
        for (int v = 0; v < Vectors; ++v)
            sum[v] = _mm256_fmadd_pd(own, _mm256_loadu_pd(x + i + k + 4 * v), sum[v]);
    }
    for (int v = 0; v < Vectors; ++v)
        _mm256_storeu_pd(out + k - 1 + 4 * v, sum[v]);
}

// Every lag of token i, one token at a time (near the end of the document).
ATTNGEO_TARGET_AVX2_FMA void lag_dots_single(const double* transposed, int n, int d, int ld,
                                             int max_lag, int i, double* out) {
    const int lags = std::min(max_lag, n - 1 - i);
    int k = 1;
    for (; k + 15 <= lags; k += 16)
        lag_block_avx2<4>(transposed, d, ld, i, k, out);
    for (; k + 3 <= lags; k += 4)
        lag_block_avx2<1>(transposed, d, ld, i, k, out);
    for (; k <= lags; ++k) {
        double dot = 0;
        for (int t = 0; t < d; ++t) {
            const double* x = transposed + static_cast<std::size_t>(t) * ld;
            dot = std::fma(x[i], x[i + k], dot);  // exact product: the plain twin's rounding
        }
        out[k - 1] = dot;
    }
}

// A window kernel: Tokens consecutive tokens from i against Width consecutive tokens from j,
// tile[p·tile_ld + s] = Σ_t x_(i+p)t·x_(j+s)t (slot s of token p is lag j + s − i − p).
using LagWindow = void (*)(const double* transposed, int d, int ld, int i, int j, double* tile,
                           int tile_ld);

// AVX2: three tokens against 16 (four vectors, each loaded once per t and used three times;
// 12 accumulators hide the FMA latency).
ATTNGEO_TARGET_AVX2_FMA void lag_window_avx2(const double* transposed, int d, int ld, int i, int j,
                                             double* tile, int tile_ld) {
    __m256d sum[3][4];
    for (auto& token : sum)
        for (auto& v : token)
            v = _mm256_setzero_pd();
    const double* x = transposed;
    for (int t = 0; t < d; ++t, x += ld) {
        const __m256d own[3] = {_mm256_broadcast_sd(x + i), _mm256_broadcast_sd(x + i + 1),
                                _mm256_broadcast_sd(x + i + 2)};
        for (int v = 0; v < 4; ++v) {
            const __m256d window = _mm256_loadu_pd(x + j + 4 * v);
            for (int p = 0; p < 3; ++p)
                sum[p][v] = _mm256_fmadd_pd(own[p], window, sum[p][v]);
        }
    }
    for (int p = 0; p < 3; ++p)
        for (int v = 0; v < 4; ++v)
            _mm256_storeu_pd(tile + p * tile_ld + 4 * v, sum[p][v]);
}

// AVX-512: four tokens against 24 (three vectors of 8, 12 accumulators).
ATTNGEO_TARGET_AVX512_FMA void lag_window_avx512(const double* transposed, int d, int ld, int i,
                                                 int j, double* tile, int tile_ld) {
    __m512d sum[4][3];
    for (auto& token : sum)
        for (auto& v : token)
            v = _mm512_setzero_pd();
    const double* x = transposed;
    for (int t = 0; t < d; ++t, x += ld) {
        __m512d own[4];
        for (int p = 0; p < 4; ++p)
            own[p] = _mm512_set1_pd(x[i + p]);
        for (int v = 0; v < 3; ++v) {
            const __m512d window = _mm512_loadu_pd(x + j + 8 * v);
            for (int p = 0; p < 4; ++p)
                sum[p][v] = _mm512_fmadd_pd(own[p], window, sum[p][v]);
        }
    }
    for (int p = 0; p < 4; ++p)
        for (int v = 0; v < 3; ++v)
            _mm512_storeu_pd(tile + p * tile_ld + 8 * v, sum[p][v]);
}

// Tokens in groups share their windows' loads where every window stays inside the document;
// the rest one at a time. Either way each dot product is the FMA chain in ascending t. The
// windows run outermost: consecutive groups read nearly the same lines of the d rows, which
// then stay in L1 (the rows are ld apart, so their lines spread over the sets).
template <int Tokens, int Width, LagWindow Window>
void lag_dots_in_windows(const double* transposed, int n, int d, int ld, int max_lag, int first,
                         int last, double* dots) {
    // Windows from j = i + 1: token i + p starts at lag 1 − p, so max_lag + Tokens − 1 slots.
    const int windows = (max_lag + Tokens - 1 + Width - 1) / Width, tile_ld = Width * windows;
    int groups = 0;
    while (first + Tokens * (groups + 1) <= last && first + Tokens * groups + tile_ld <= n - 1)
        ++groups;
    static thread_local std::vector<double> tile;  // [groups, Tokens, tile_ld]
    tile.resize(static_cast<std::size_t>(groups) * Tokens * tile_ld);
    for (int w = 0; w < windows; ++w)
        for (int g = 0; g < groups; ++g) {
            const int i = first + Tokens * g;
            Window(transposed, d, ld, i, i + 1 + Width * w,
                   tile.data() + static_cast<std::size_t>(Tokens) * g * tile_ld + Width * w,
                   tile_ld);
        }
    for (int g = 0; g < groups; ++g)
        for (int p = 0; p < Tokens; ++p)  // slot k − 1 + p holds lag k of token i + p
            std::memcpy(dots + static_cast<std::size_t>(Tokens * g + p) * max_lag,
                        tile.data() + (static_cast<std::size_t>(Tokens) * g + p) * tile_ld + p,
                        sizeof(double) * max_lag);
    for (int i = first + Tokens * groups; i < last; ++i)
        lag_dots_single(transposed, n, d, ld, max_lag, i,
                        dots + static_cast<std::size_t>(i - first) * max_lag);
}

}  // namespace

void lag_dots_avx2(const double* transposed, int n, int d, int ld, int max_lag, int first, int last,
                   double* dots) {
    lag_dots_in_windows<3, 16, lag_window_avx2>(transposed, n, d, ld, max_lag, first, last, dots);
}

void lag_dots_avx512(const double* transposed, int n, int d, int ld, int max_lag, int first,
                     int last, double* dots) {
    lag_dots_in_windows<4, 24, lag_window_avx512>(transposed, n, d, ld, max_lag, first, last, dots);
}

ATTNGEO_TARGET_AVX2 void add_lag_cosines_avx2(const double* dots, double own, const double* other,
                                              int lags, double* totals) {
    if (own == 0) {  // every term is 0; rare, so the plain loop adds them
        add_lag_cosines_plain(dots, own, other, lags, totals);
        return;
    }
    const __m256d own_vector = _mm256_set1_pd(own), zero = _mm256_setzero_pd();
    int k = 0;
    for (; k + 4 <= lags; k += 4) {
        const __m256d norms = _mm256_loadu_pd(other + k);
        const __m256d cosine =
            _mm256_div_pd(_mm256_loadu_pd(dots + k), _mm256_mul_pd(own_vector, norms));
        const __m256d kept = _mm256_andnot_pd(_mm256_cmp_pd(norms, zero, _CMP_EQ_OQ), cosine);
        _mm256_storeu_pd(totals + k, _mm256_add_pd(_mm256_loadu_pd(totals + k), kept));
    }
    add_lag_cosines_plain(dots + k, own, other + k, lags - k, totals + k);
}
#endif

void lag_dots(const double* transposed, int n, int d, int ld, int max_lag, int first, int last,
              double* dots) {
#if ATTNGEO_X86
    if (use_avx512f()) {
        lag_dots_avx512(transposed, n, d, ld, max_lag, first, last, dots);
        return;
    }
    if (use_avx2_fma()) {
        lag_dots_avx2(transposed, n, d, ld, max_lag, first, last, dots);
        return;
    }
#endif
    lag_dots_plain(transposed, n, d, ld, max_lag, first, last, dots);
}

void add_lag_cosines(const double* dots, double own, const double* other, int lags,
                     double* totals) {
#if ATTNGEO_X86
    if (use_avx2_fma()) {
        add_lag_cosines_avx2(dots, own, other, lags, totals);
        return;
    }
#endif
    add_lag_cosines_plain(dots, own, other, lags, totals);
}

double median_of(std::vector<double> x) {
    return x.empty() ? 0 : median(std::move(x));
}

void add_exact(ExactSum& sum, double x) {
    if (!(std::fabs(x) < 0x1p62)) {
        sum.add(x);  // throws, naming the addend
        return;
    }
    const double scaled = x * 0x1p64;  // exact: a power-of-two scale, far from overflow
    Int128 q;
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
        const UInt128 magnitude = static_cast<UInt128>(significand) << shift;
        q = (bits >> 63) != 0 ? -static_cast<Int128>(magnitude) : static_cast<Int128>(magnitude);
    }
    constexpr Int128 limit = static_cast<Int128>(1) << 126;
    sum.fixed += q;
    if (sum.fixed >= limit || sum.fixed <= -limit)
        throw std::overflow_error("ExactSum::add: running sum exceeds 2^62");
}

}  // namespace attngeo::empirical::statistics_kernels
