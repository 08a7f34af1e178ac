// The simulator's single-precision Gram matrix: the lower triangle of fl32(σY)·fl32(σY)ᵀ,
// computed by packing σY once into float panels and running register tiles over them: 48×8
// AVX-512 tiles where the CPU has AVX-512, else 24×4 AVX2+FMA tiles (no separate scaling pass and
// no zeroing pass, which SSYRK with β = 0 needs). A plain loop with the same per-entry
// operations (float FMAs in ascending t) sits beside them; all three agree bit for bit.
#pragma once

#include <vector>

#include "common/cpu_features.hpp"
#include "theory/metrics.hpp"

namespace attngeo::theory {

// Rows of the panels: the Gram buffer's leading dimension must be at least n rounded up to
// this (the tiles also write the padding rows, with zeros).
constexpr int kGramPanelRows = 24, kGramPanelRows512 = 48;
int single_gram_leading_dimension(int n);  // n rounded up to 48

// lower[i + j·ld] = Σ_t fl32(σ y_it)·fl32(σ y_jt) for i ≥ j (float FMAs in ascending t),
// σ = 2^scale_exponent; entries above the diagonal near it may be written too (with the same
// symmetric values). ld ≥ single_gram_leading_dimension(n). `panels` is scratch. Uses the
// AVX-512 tiles when use_avx512f(), the AVX2 tiles when use_avx2_fma() (common/cpu_features.hpp),
// else the (slow) plain loop: the simulator takes SSYRK there.
void single_gram_lower(const RowMatrix& ranked,  // [n, d]
                       int scale_exponent,
                       float* lower,  // [ld, n] column-major
                       int ld, std::vector<float>& panels);
void single_gram_lower_plain(const RowMatrix& ranked, int scale_exponent, float* lower, int ld);
#if ATTNGEO_X86
// The tiles themselves (the tests compare them with the plain loop whatever the dispatcher
// takes); only where cpu_has_avx2_fma().
void single_gram_lower_avx2(const RowMatrix& ranked, int scale_exponent, float* lower, int ld,
                            std::vector<float>& panels);
// Only where cpu_has_avx512f().
void single_gram_lower_avx512(const RowMatrix& ranked, int scale_exponent, float* lower, int ld,
                              std::vector<float>& panels);
#endif

}  // namespace attngeo::theory
