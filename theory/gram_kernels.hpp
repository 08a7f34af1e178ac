// The O(n) per-N passes of the certified Gram path (theory/metrics.cpp), vectorised with AVX2
// and, beside each, the plain loop it must match bit for bit (selected at run time; the test
// compares the two). Every value is bracketed by a per-token error band e_ℓ = (w·r_ℓ + q)·r_ℓ + c.
#pragma once

namespace attngeo::theory::gram_kernels {

// The per-N error band coefficients: e_ℓ = (w·r_ℓ + q)·r_ℓ + c, r_ℓ = ‖y_ℓ‖.
struct Band {
    double w = 0, q = 0, c = 0;
};

// Extremes over a token range of v_ℓ − e_ℓ (low) and v_ℓ + e_ℓ (high): the maxima for the
// selected tokens, the minima for the rest.
struct BandExtremes {
    double low = 0, high = 0;
};

struct CountPair {
    int surely = 0;  // #{ℓ : v_ℓ + e_ℓ ≤ low}
    int maybe = 0;   // #{ℓ : v_ℓ − e_ℓ ≤ high}
};

// For ℓ in [begin, end): shifted[ℓ] −= 2·column[ℓ] (v_ℓ = G_ℓℓ − 2Σ_{k<N} G_kℓ, one column
// per N), and the extremes of v ∓ e over the range (maxima when `selected`, else minima).
// `Column` is float (single-precision Gram) or double.
template <class Column>
BandExtremes advance_and_bracket(double* shifted, const Column* column, const double* row_norm,
                                 Band band, int begin, int end, bool selected);
template <class Column>
BandExtremes advance_and_bracket_plain(double* shifted, const Column* column,
                                       const double* row_norm, Band band, int begin, int end,
                                       bool selected);

// The unselected range in one pass: advance_and_bracket(…, selected = false) plus, on the
// updated values, count_band(…, low, high) into `counts`.
template <class Column>
BandExtremes advance_bracket_and_count(double* shifted, const Column* column,
                                       const double* row_norm, Band band, int begin, int end,
                                       double low, double high, CountPair& counts);
template <class Column>
BandExtremes advance_bracket_and_count_plain(double* shifted, const Column* column,
                                             const double* row_norm, Band band, int begin, int end,
                                             double low, double high, CountPair& counts);

// The two counts of CountPair over [begin, end).
CountPair count_band(const double* shifted, const double* row_norm, Band band, int begin, int end,
                     double low, double high);
CountPair count_band_plain(const double* shifted, const double* row_norm, Band band, int begin,
                           int end, double low, double high);

// Appends to `out` every ℓ in [begin, end) with v_ℓ + e_ℓ > low and v_ℓ − e_ℓ ≤ high (the
// tokens a bracket cannot decide); returns how many. `out` must have room for end − begin.
int collect_band(const double* shifted, const double* row_norm, Band band, int begin, int end,
                 double low, double high, int* out);
int collect_band_plain(const double* shifted, const double* row_norm, Band band, int begin, int end,
                       double low, double high, int* out);

// Copies the strict lower triangle of a column-major n×n float matrix onto the upper one
// (after SSYRK): 8×8 AVX2 transposes, and the plain element loop.
void mirror_lower(float* matrix, int n);
void mirror_lower_plain(float* matrix, int n);

// Whether the AVX2 paths are taken on this CPU.
bool uses_avx2();

}  // namespace attngeo::theory::gram_kernels
