// The two-sample Kolmogorov–Smirnov test behind the predecessor paper's critical N
// (docs/design.md §14): the statistic and its exact two-sided p-value.
#pragma once
#include <vector>

namespace attngeo::compare {

struct KsTest {
    double statistic = 0;  // D = sup_x |F_a(x) − F_b(x)|
    double p_value = 1;    // P(D' ≥ D) under the null, exact (no ties assumed)
    int size_a = 0, size_b = 0;
};

// Two-sided two-sample KS. D is found in integers (D·m·n = max |i·n − j·m| over the merged
// sample, i and j the counts ≤ x), and the p-value is the share of the C(m+n, m) equally likely
// lattice paths from (0,0) to (m,n) that touch |i·n − j·m| ≥ D·m·n, summed as probabilities by
// dynamic programming over the grid (Hodges 1957) — the definition of
// scipy.stats.ks_2samp(method="exact"). O(m·n). Throws std::domain_error for an empty or
// non-finite sample.
KsTest ks_two_sample(std::vector<double> a, std::vector<double> b);

}  // namespace attngeo::compare
