// Packed single-precision SYRK for the simulator's Gram path; see single_gram.hpp. A 24×4 AVX2
// tile keeps 12 accumulators in flight, enough to cover the FMA latency on two pipes (SSYRK's
// 16×4 keeps 8), and both operands come from the same panels, so σY is packed only once. The
// AVX-512 twin packs 48-row panels and runs 48×8 tiles (24 accumulators of 32 registers).
#include "theory/single_gram.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "common/cpu_features.hpp"
#include "common/transpose8x8.hpp"

#if ATTNGEO_X86
#include <immintrin.h>
#endif

namespace attngeo::theory {
namespace {

constexpr int kRows = kGramPanelRows;
constexpr int kColumns = 4;      // columns of one tile
constexpr int kBlockPanels = 8;  // row panels kept in L2 while the column tiles pass over them
constexpr int kRows512 = kGramPanelRows512, kColumns512 = 8, kBlockPanels512 = 4;

// fl32(σ·x) as scaled_single_precision rounds it: one exact multiply when σ is a normal double.
struct Scale {
    explicit Scale(int exponent)
        : exponent(exponent),
          normal(exponent >= -1022 && exponent <= 1023),
          sigma(normal ? std::ldexp(1.0, exponent) : 0.0) {}
    float operator()(double x) const {
        return static_cast<float>(normal ? x * sigma : std::ldexp(x, exponent));
    }
    int exponent;
    bool normal;
    double sigma;
};

void check_layout(const RowMatrix& ranked, int ld, const char* function) {
    const int n = static_cast<int>(ranked.rows());
    if (ld < single_gram_leading_dimension(n)) {
        throw std::invalid_argument(std::string(function) + ": leading dimension " +
                                    std::to_string(ld) + " < " +
                                    std::to_string(single_gram_leading_dimension(n)));
    }
}

#if ATTNGEO_X86
// 8 rows × 8 columns t..t+7 of σY, rows at `rows` (nullptr: a zero row past n), into the panel
// rows t..t+7 at row offset r0: fl32 of the exact product, as Scale rounds it.
template <int Rows>
ATTNGEO_TARGET_AVX2_FMA inline void pack_block(const double* const (&rows)[8], int t, double sigma,
                                               float* panel, int r0) {
    const __m256d scale = _mm256_set1_pd(sigma);
    __m256 r[8];
    for (int k = 0; k < 8; ++k) {
        if (rows[k] == nullptr) {
            r[k] = _mm256_setzero_ps();
            continue;
        }
        const __m128 low = _mm256_cvtpd_ps(_mm256_mul_pd(_mm256_loadu_pd(rows[k] + t), scale));
        const __m128 high = _mm256_cvtpd_ps(_mm256_mul_pd(_mm256_loadu_pd(rows[k] + t + 4), scale));
        r[k] = _mm256_insertf128_ps(_mm256_castps128_ps256(low), high, 1);
    }
    transpose8x8_rows(r, panel + static_cast<std::ptrdiff_t>(t) * Rows + r0, Rows);
}

// panels[p][t][r] = fl32(σ·y[Rows·p + r][t]), zeros for rows ≥ n.        [P, d, Rows]
// 64-byte aligned.
template <int Rows>
ATTNGEO_TARGET_AVX2_FMA float* pack_panels(const RowMatrix& ranked, const Scale& scale,
                                           std::vector<float>& store) {
    const int n = static_cast<int>(ranked.rows()), d = static_cast<int>(ranked.cols());
    const int panels = (n + Rows - 1) / Rows;
    const std::size_t size = static_cast<std::size_t>(panels) * d * Rows;
    store.resize(size + 16);
    float* packed = reinterpret_cast<float*>((reinterpret_cast<std::uintptr_t>(store.data()) + 63) &
                                             ~std::uintptr_t(63));
    const int vector_columns = scale.normal ? d / 8 * 8 : 0;  // σ not normal: ldexp per entry
    for (int p = 0; p < panels; ++p) {
        float* panel = packed + static_cast<std::size_t>(p) * d * Rows;
        for (int r0 = 0; r0 < Rows; r0 += 8) {
            const double* rows[8];
            for (int k = 0; k < 8; ++k) {
                const int i = p * Rows + r0 + k;
                rows[k] = i < n ? ranked.row(i).data() : nullptr;
            }
            for (int t = 0; t < vector_columns; t += 8)
                pack_block<Rows>(rows, t, scale.sigma, panel, r0);
            for (int k = 0; k < 8; ++k)
                for (int t = vector_columns; t < d; ++t)
                    panel[t * Rows + r0 + k] = rows[k] != nullptr ? scale(rows[k][t]) : 0.0f;
        }
    }
    return packed;
}

// c[i + jj·ldc] for the 24 rows of panel `a` and the 4 columns whose values sit at b[t·24 + jj].
ATTNGEO_TARGET_AVX2_FMA void tile(const float* a, const float* b, int d, float* c,
                                  std::ptrdiff_t ldc) {
    __m256 sum[kColumns][3];  // the 12 accumulators: column jj, rows 8r..8r+7
    for (auto& column : sum)
        for (__m256& rows : column)
            rows = _mm256_setzero_ps();
    for (int t = 0; t < d; ++t, a += kRows, b += kRows) {
        const __m256 rows[3] = {_mm256_load_ps(a), _mm256_load_ps(a + 8), _mm256_load_ps(a + 16)};
        for (int jj = 0; jj < kColumns; ++jj) {
            const __m256 value = _mm256_broadcast_ss(b + jj);
            for (int r = 0; r < 3; ++r)
                sum[jj][r] = _mm256_fmadd_ps(rows[r], value, sum[jj][r]);
        }
    }
    for (int jj = 0; jj < kColumns; ++jj)
        for (int r = 0; r < 3; ++r)
            _mm256_storeu_ps(c + jj * ldc + 8 * r, sum[jj][r]);
}

// c[i + jj·ldc] for the 48 rows of panel `a` and the 8 columns whose values sit at b[t·48 + jj]:
// per entry the same float FMAs in ascending t as the AVX2 tile and the plain loop.
ATTNGEO_TARGET_AVX512_FMA void tile512(const float* a, const float* b, int d, float* c,
                                       std::ptrdiff_t ldc) {
    __m512 sum[kColumns512][3];  // the 24 accumulators: column jj, rows 16r..16r+15
    for (auto& column : sum)
        for (__m512& rows : column)
            rows = _mm512_setzero_ps();
    for (int t = 0; t < d; ++t, a += kRows512, b += kRows512) {
        const __m512 rows[3] = {_mm512_load_ps(a), _mm512_load_ps(a + 16), _mm512_load_ps(a + 32)};
        for (int jj = 0; jj < kColumns512; ++jj) {
            const __m512 value = _mm512_set1_ps(b[jj]);
            for (int r = 0; r < 3; ++r)
                sum[jj][r] = _mm512_fmadd_ps(rows[r], value, sum[jj][r]);
        }
    }
    for (int jj = 0; jj < kColumns512; ++jj)
        for (int r = 0; r < 3; ++r)
            _mm512_storeu_ps(c + jj * ldc + 16 * r, sum[jj][r]);
}

// The lower triangle from packed panels of Rows rows, `tile` computing Rows × Columns entries
// (the AVX2 or AVX-512 tile); BlockPanels row panels stay in L2 while the column tiles pass.
// Inlined into each ISA's driver below so that the tile is inlined too (called through a
// pointer, the AVX2 tile ran at half speed).
template <int Rows, int Columns, int BlockPanels, class Tile>
__attribute__((always_inline)) inline void tiles_over_panels(const float* packed, int n, int d,
                                                             float* lower, int ld, Tile tile) {
    const int panels = (n + Rows - 1) / Rows;
    const std::size_t panel_size = static_cast<std::size_t>(d) * Rows;
    alignas(64) float edge[Columns * Rows];  // a tile with columns past n
    for (int first = 0; first < panels; first += BlockPanels) {
        const int last = std::min(panels, first + BlockPanels);
        const int columns = std::min(n, last * Rows);  // columns j with a row i ≥ j in the block
        for (int j0 = 0; j0 < columns; j0 += Columns) {
            const float* b = packed + (j0 / Rows) * panel_size + j0 % Rows;
            for (int p = std::max(first, j0 / Rows); p < last; ++p) {
                const float* a = packed + p * panel_size;
                const int i0 = p * Rows;
                if (j0 + Columns <= n) {
                    tile(a, b, d, lower + i0 + static_cast<std::ptrdiff_t>(j0) * ld, ld);
                } else {
                    tile(a, b, d, edge, Rows);
                    for (int jj = 0; j0 + jj < n; ++jj)
                        std::copy_n(edge + jj * Rows, Rows,
                                    lower + i0 + static_cast<std::ptrdiff_t>(j0 + jj) * ld);
                }
            }
        }
    }
}

ATTNGEO_TARGET_AVX2_FMA void single_gram_avx2(const float* packed, int n, int d, float* lower,
                                              int ld) {
    tiles_over_panels<kRows, kColumns, kBlockPanels>(packed, n, d, lower, ld, tile);
}

ATTNGEO_TARGET_AVX512_FMA void single_gram_avx512(const float* packed, int n, int d, float* lower,
                                                  int ld) {
    tiles_over_panels<kRows512, kColumns512, kBlockPanels512>(packed, n, d, lower, ld, tile512);
}
#endif

}  // namespace

int single_gram_leading_dimension(int n) {
    return (n + kRows512 - 1) / kRows512 * kRows512;  // a multiple of both panel heights
}

void single_gram_lower_plain(const RowMatrix& ranked, int scale_exponent, float* lower, int ld) {
    check_layout(ranked, ld, "single_gram_lower_plain");
    const int n = static_cast<int>(ranked.rows()), d = static_cast<int>(ranked.cols());
    const Scale scale(scale_exponent);
    std::vector<float> y(static_cast<std::size_t>(n) * d);
    for (int i = 0; i < n; ++i)
        for (int t = 0; t < d; ++t)
            y[static_cast<std::size_t>(i) * d + t] = scale(ranked(i, t));
    for (int j = 0; j < n; ++j) {
        const float* yj = y.data() + static_cast<std::size_t>(j) * d;
        for (int i = j; i < n; ++i) {
            const float* yi = y.data() + static_cast<std::size_t>(i) * d;
            float sum = 0.0f;
            for (int t = 0; t < d; ++t)
                sum = std::fma(yi[t], yj[t], sum);
            lower[i + static_cast<std::ptrdiff_t>(j) * ld] = sum;
        }
    }
}

#if ATTNGEO_X86
void single_gram_lower_avx2(const RowMatrix& ranked, int scale_exponent, float* lower, int ld,
                            std::vector<float>& panels) {
    check_layout(ranked, ld, "single_gram_lower_avx2");
    const float* packed = pack_panels<kRows>(ranked, Scale(scale_exponent), panels);
    single_gram_avx2(packed, static_cast<int>(ranked.rows()), static_cast<int>(ranked.cols()),
                     lower, ld);
}

void single_gram_lower_avx512(const RowMatrix& ranked, int scale_exponent, float* lower, int ld,
                              std::vector<float>& panels) {
    check_layout(ranked, ld, "single_gram_lower_avx512");
    const float* packed = pack_panels<kRows512>(ranked, Scale(scale_exponent), panels);
    single_gram_avx512(packed, static_cast<int>(ranked.rows()), static_cast<int>(ranked.cols()),
                       lower, ld);
}
#endif

void single_gram_lower(const RowMatrix& ranked, int scale_exponent, float* lower, int ld,
                       std::vector<float>& panels) {
    check_layout(ranked, ld, "single_gram_lower");
#if ATTNGEO_X86
    if (use_avx512f()) {
        single_gram_lower_avx512(ranked, scale_exponent, lower, ld, panels);
        return;
    }
    if (use_avx2_fma()) {
        single_gram_lower_avx2(ranked, scale_exponent, lower, ld, panels);
        return;
    }
#endif
    // Callers take SSYRK there; this keeps the function total.
    single_gram_lower_plain(ranked, scale_exponent, lower, ld);
}

}  // namespace attngeo::theory
