// Σ x² of a row of doubles in one stated order, AVX2 and plain, bit for bit the same: the
// simulator's row normalisation and theory's band norms (σ‖y‖) both use it, so neither pays
// for Eigen's SSE2 reduction and every CPU gets the same bits.
#pragma once

#include "common/cpu_features.hpp"

namespace attngeo {

// Σ row[k]² as 8 partial sums p_j = Σ_{k ≡ j mod 8} row[k]² (k increasing), combined as
// ((p0 + p4) + (p2 + p6)) + ((p1 + p5) + (p3 + p7)). The dispatcher takes the AVX2 loop when
// use_avx2(); the *_avx2 loop (x86, only where cpu_has_avx2()) is there for the tests.
double sum_of_squares(const double* row, int d);
double sum_of_squares_plain(const double* row, int d);
#if ATTNGEO_X86
double sum_of_squares_avx2(const double* row, int d);
#endif

}  // namespace attngeo
