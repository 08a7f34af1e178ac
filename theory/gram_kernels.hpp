// The O(n) per-N sweeps of the certified Gram path (theory/metrics_gram.cpp), vectorised with
// AVX2 and FMA and, beside each, the plain loop it must match bit for bit (selected at run time;
// the test compares the two). Every value is bracketed by an error band e_ℓ(N), shared by the
// tokens of one block of kBandBlock so that the kernels compute it once per block.
#pragma once

#include "common/cpu_features.hpp"

namespace attngeo::theory::gram_kernels {

// Tokens ℓ of block b = ⌊ℓ / kBandBlock⌋ share the band of the block norm R_b = max ‖y_ℓ‖ over
// the block: the band grows with the norm, so it still bounds every token's error.
constexpr int kBandBlock = 64;

// The per-N error band coefficients: e_ℓ = fma(fma(w, R, q), R, c), R = R_b of ℓ's block.
struct Band {
    double w = 0, q = 0, c = 0;
};
double band_of(Band band, double r);

// Extremes over a token range of v_ℓ − e_ℓ (low) and v_ℓ + e_ℓ (high): the maxima for the
// selected tokens, the minima for the rest.
struct BandExtremes {
    double low = 0, high = 0;
};

// The comparisons move e to the threshold side (v ≤ low − e rather than v + e ≤ low) so that
// a block needs one subtraction, not one per token; the rounding of low − e is of the size
// the bands' spare factor absorbs for v ± e.
struct CountPair {
    int surely = 0;  // #{ℓ : v_ℓ ≤ low − e_ℓ}
    int maybe = 0;   // #{ℓ : v_ℓ ≤ high + e_ℓ}
};

// What one sweep over a token range does besides v_new = v_old − 2·column (the step from
// selection size N−1 to N: v_ℓ = G_ℓℓ − 2Σ_{k<N} G_kℓ, one column of G per N).
struct SweepRequest {
    Band band;             // step N's band, for the bracket and the after-count
    bool selected = true;  // the bracket takes maxima (selected range) or minima (the rest)
    bool bracket = false;  // extremes of v_new ∓ e
    bool count_before =
        false;  // CountPair of v_old with before_band against [before_low, before_high]
    Band before_band;
    double before_low = 0, before_high = 0;
    bool count_after = false;  // CountPair of v_new with band against [after_low, after_high]
    double after_low = 0, after_high = 0;
};
struct SweepResult {
    BandExtremes extremes;  // ±∞ when not requested or the range is empty
    CountPair before, after;
};

// The sweep over [begin, end); v_old and v_new may not alias. `Column` is float (the
// single-precision Gram matrix) or double, indexed by ℓ; block_norm [⌈n / kBandBlock⌉] holds R_b.
template <class Column>
SweepResult sweep(const double* v_old, double* v_new, const Column* column,
                  const double* block_norm, const SweepRequest& request, int begin, int end);
template <class Column>
SweepResult sweep_plain(const double* v_old, double* v_new, const Column* column,
                        const double* block_norm, const SweepRequest& request, int begin, int end);

// The two counts of CountPair over [begin, end).
CountPair count_band(const double* values, const double* block_norm, Band band, int begin, int end,
                     double low, double high);
CountPair count_band_plain(const double* values, const double* block_norm, Band band, int begin,
                           int end, double low, double high);

// Appends to `out` every ℓ in [begin, end) with v_ℓ > low − e_ℓ and v_ℓ ≤ high + e_ℓ (the
// tokens a bracket cannot decide); returns how many. `out` must have room for end − begin.
int collect_band(const double* values, const double* block_norm, Band band, int begin, int end,
                 double low, double high, int* out);
int collect_band_plain(const double* values, const double* block_norm, Band band, int begin,
                       int end, double low, double high, int* out);

// Rows [first, first + count) of the symmetric matrix whose lower triangle is stored
// column-major with leading dimension ld (as SYRK leaves it), each row j up to its diagonal:
// strip[(j − first)·stride + ℓ] = G(j, ℓ) for ℓ ≤ j. This is the part of column j above the
// diagonal, read from the lower triangle in 8×8 transposes instead of mirroring the matrix.
template <class Scalar>
void upper_strip(const Scalar* lower, int ld, int first, int count, Scalar* strip, int stride);
template <class Scalar>
void upper_strip_plain(const Scalar* lower, int ld, int first, int count, Scalar* strip,
                       int stride);

// The bit pattern of max |x| over `count` doubles (as a non-negative integer; +∞ or a NaN
// pattern ≥ 0x7FF0000000000000 if any x is not finite). Comparing |x| as integers is exact.
unsigned long long largest_magnitude_bits(const double* x, long count);
unsigned long long largest_magnitude_bits_plain(const double* x, long count);

// to[i] = float(from[i]·sigma), rounded to nearest as static_cast<float> does.
void scale_to_float(const double* from, long count, double sigma, float* to);
void scale_to_float_plain(const double* from, long count, double sigma, float* to);

// The running column sums of ExactShiftedDistances (theory/exact_distance.cpp) over `count`
// rows of a row-major [count, d] block: sum[t] += rows[k·d + t] and magnitude_sum[t] +=
// |rows[k·d + t]| in ascending k, either output may be null. Lanes run across t, so every
// sum keeps its order and both loops give the same bits.
void add_rows(const double* rows, int count, int d, double* sum, double* magnitude_sum);
void add_rows_plain(const double* rows, int count, int d, double* sum, double* magnitude_sum);

// Tier 2's sums of ExactShiftedDistances::approximate for one row y against s̃ and Σ|y_k|:
// value = Σ_t y_t·z_t with z_t = y_t − 2s̃_t, magnitude = Σ_t |y_t·z_t|, across =
// Σ_t |y_t|·a_t and largest = max_t |y_t|. The sums run in kShiftedLanes lanes (t mod
// kShiftedLanes, each in ascending t, value and across with fused multiply-adds) that are then
// added pairwise; the error bound of the caller holds for any order, and both loops below
// share this one, so they give the same bits.
struct ShiftedValueSums {
    double value = 0, magnitude = 0, across = 0, largest = 0;
};
constexpr int kShiftedLanes = 8;
ShiftedValueSums shifted_value_sums(const double* y, const double* s, const double* a, int d);
ShiftedValueSums shifted_value_sums_plain(const double* y, const double* s, const double* a, int d);

// Whether the dispatchers above take the AVX2 + FMA loops: the CPU has them and ATTNGEO_PLAIN
// does not force the plain ones (common/cpu_features.hpp).
bool uses_avx2();

#if ATTNGEO_X86
// The AVX2 + FMA loops themselves, for the tests that compare them with the plain twins whatever
// the dispatchers take; callable only where cpu_has_avx2_fma().
template <class Column>
SweepResult sweep_avx2(const double* v_old, double* v_new, const Column* column,
                       const double* block_norm, const SweepRequest& request, int begin, int end);
// The sweep with AVX-512 (the dispatcher's choice where use_avx512f()); only where
// cpu_has_avx512f().
template <class Column>
SweepResult sweep_avx512(const double* v_old, double* v_new, const Column* column,
                         const double* block_norm, const SweepRequest& request, int begin, int end);
CountPair count_band_avx2(const double* values, const double* block_norm, Band band, int begin,
                          int end, double low, double high);
int collect_band_avx2(const double* values, const double* block_norm, Band band, int begin, int end,
                      double low, double high, int* out);
void upper_strip_avx2(const float* lower, int ld, int first, int count, float* strip, int stride);
unsigned long long largest_magnitude_bits_avx2(const double* x, long count);
void scale_to_float_avx2(const double* from, long count, double sigma, float* to);
void add_rows_avx2(const double* rows, int count, int d, double* sum, double* magnitude_sum);
ShiftedValueSums shifted_value_sums_avx2(const double* y, const double* s, const double* a, int d);
#endif

}  // namespace attngeo::theory::gram_kernels
