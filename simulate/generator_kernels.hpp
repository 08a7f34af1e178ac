// The per-row loops of the AR(1) generator (simulate/generator.cpp) in AVX2 and, beside each,
// the plain loop it must match bit for bit (chosen at run time; tests/simulate/test_rng.cpp
// compares the two). Element-wise steps keep the plain operation order; the one reduction, a
// row's sum of squares, has a fixed order of 8 partial sums stated below.
#pragma once

#include "common/cpu_features.hpp"

namespace attngeo::simulate::generator_kernels {

// One token i ≥ 1 of the AR(1) pass.
struct Ar1Row {
    double scale = 1;       // 1/√d: ε = z·scale
    double r = 0;           // AR(1) coefficient
    double innovation = 0;  // √(1 − r²)
    bool first = false;     // token 1: a ← ε (no previous state)
    bool exact = true;      // sink mode exact (else project)
    double weight = 0;      // exact: the sink weight w_i
    double rho0 = 0;        // project: ρ0
    double keep = 0;        // project: √(1 − ρ0²)
};

// With z = row (the token's normals, [d]) and a the AR(1) state a_{i−1} ([d]):
// a ← first ? z·scale : r·a + innovation·(z·scale); then exact: row ← a, sink += weight·a;
// project: row ← ρ0·g0 + keep·a (g0 the sink's row, [d]; sink unused).
void ar1_row(double* row, double* a, double* sink, const double* g0, const Ar1Row& step, int d);
void ar1_row_plain(double* row, double* a, double* sink, const double* g0, const Ar1Row& step,
                   int d);

// row ← row·(norm/‖row‖) with ‖row‖ = √sum_of_squares, or 0 for a zero row.
void normalise_row(double* row, double norm, int d);
void normalise_row_plain(double* row, double norm, int d);

// normalise_row, then row ← alpha·row, in one pass with the same two roundings per entry.
void normalise_and_scale_row(double* row, double norm, double alpha, int d);
void normalise_and_scale_row_plain(double* row, double norm, double alpha, int d);

#if ATTNGEO_X86
// The AVX2 loops the dispatchers take when use_avx2(), for the tests (only where cpu_has_avx2()).
void ar1_row_avx2(double* row, double* a, double* sink, const double* g0, const Ar1Row& step,
                  int d);
void normalise_and_scale_row_avx2(double* row, double norm, double alpha, int d);
#endif

}  // namespace attngeo::simulate::generator_kernels
