// The exact two-sample Kolmogorov–Smirnov test; see ks_test.hpp.
#include "compare/ks_test.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

#include "common/errors.hpp"

namespace attngeo::compare {
namespace {

void require_sample(const std::vector<double>& sample, const char* name) {
    if (sample.empty())
        throw_domain_error("attngeo::compare::ks_two_sample",
                           std::string(name) + " is empty, expected at least one value");
    for (double x : sample)
        if (!std::isfinite(x))
            throw_domain_error("attngeo::compare::ks_two_sample",
                               std::string(name) + " holds a non-finite value");
}

// max over the merged sample of |i·n − j·m|, i (j) the values of a (b) that are ≤ x.
std::int64_t scaled_statistic(const std::vector<double>& a, const std::vector<double>& b) {
    const std::int64_t m = a.size(), n = b.size();
    std::int64_t i = 0, j = 0, largest = 0;
    while (i < m || j < n) {
        const double x = (j == n || (i < m && a[i] <= b[j])) ? a[i] : b[j];
        while (i < m && a[i] <= x)
            ++i;
        while (j < n && b[j] <= x)
            ++j;
        largest = std::max(largest, std::abs(i * n - j * m));
    }
    return largest;
}

// P(a uniformly random monotone path from (0,0) to (m,n) touches |i·n − j·m| ≥ h): the mass
// still inside the band moves right or up with the hypergeometric step probabilities, and what
// steps onto the boundary is absorbed into the result.
double boundary_probability(std::int64_t m, std::int64_t n, std::int64_t h) {
    if (h <= 0) return 1.0;
    std::vector<double> inside(n + 1, 0.0);  // row i of the grid, j = 0..n
    double absorbed = 0;
    inside[0] = 1.0;
    for (std::int64_t i = 0; i <= m; ++i) {
        for (std::int64_t j = 0; j <= n; ++j) {
            if (i == 0 && j == 0) continue;
            double mass = 0;  // arriving from (i−1, j) and from (i, j−1)
            if (i > 0) mass += inside[j] * static_cast<double>(m - i + 1) / (m + n - i - j + 1);
            if (j > 0) mass += inside[j - 1] * static_cast<double>(n - j + 1) / (m + n - i - j + 1);
            if (std::abs(i * n - j * m) >= h) {
                absorbed += mass;
                mass = 0;
            }
            inside[j] = mass;
        }
    }
    return std::min(1.0, absorbed);
}

}  // namespace

KsTest ks_two_sample(std::vector<double> a, std::vector<double> b) {
    require_sample(a, "the first sample");
    require_sample(b, "the second sample");
    std::sort(a.begin(), a.end());
    std::sort(b.begin(), b.end());
    KsTest test;
    test.size_a = static_cast<int>(a.size());
    test.size_b = static_cast<int>(b.size());
    const std::int64_t m = test.size_a, n = test.size_b, h = scaled_statistic(a, b);
    test.statistic = static_cast<double>(h) / (static_cast<double>(m) * n);
    test.p_value = boundary_probability(m, n, h);
    return test;
}

}  // namespace attngeo::compare
