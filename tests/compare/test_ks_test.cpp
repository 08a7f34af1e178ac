// Tests of the exact two-sample Kolmogorov–Smirnov test (compare/ks_test, docs/design.md §14):
// spot values from SciPy, D against a plain ECDF scan, the p-value against a count of lattice
// paths in long double, symmetry, monotone invariance, ties, degenerate samples and bad input.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "compare/ks_test.hpp"

namespace {

using attngeo::compare::ks_two_sample;
using attngeo::compare::KsTest;

struct Spot {
    const char* name;
    std::vector<double> a, b;
    double statistic, p_value;
};

// From SciPy 1.10.1, scipy.stats.ks_2samp(a, b, method="exact"), printed with repr(float(...)):
//   /usr/bin/python3 -c 'from scipy.stats import ks_2samp;
//     r = ks_2samp(A, B, method="exact"); print(repr(float(r.statistic)), repr(float(r.pvalue)))'
const Spot kSpots[] = {
    {"equal sizes 6/6",
     {0.1, 0.5, 0.9, 1.3, 2.0, 2.2},
     {1.0, 1.4, 1.8, 2.5, 2.6, 3.0},
     0.5,
     0.474025974025974},
    {"equal sizes 5/5",
     {0.1, 0.5, 0.9, 1.3, 2.0},
     {0.4, 1.6, 1.9, 2.1, 2.5},
     0.6,
     0.35714285714285715},
    {"unsorted equal sizes 4/4",
     {3.0, 1.0, 2.0, 5.0},
     {4.0, 6.0, 7.0, 0.5},
     0.5,
     0.7714285714285716},
    {"unequal sizes 7/3",
     {1, 2, 3, 4, 5, 6, 7},
     {2.5, 3.5, 8.0},
     0.3333333333333333,
     0.9333333333333332},
    {"unequal sizes 6/4",
     {0.0, 0.2, 0.4, 0.6, 0.8, 1.0},
     {0.7, 0.9, 1.1, 1.3},
     0.6666666666666666,
     0.18095238095238098},
    {"ties 7/6",
     {1, 2, 2, 3, 3, 3, 4},
     {2, 3, 3, 4, 4, 5},
     0.35714285714285715,
     0.7115384615384616},
    {"identical samples (D = 0)", {1.0, 2.0, 3.0}, {1.0, 2.0, 3.0}, 0.0, 1.0},
    {"separated 4/6", {1, 2, 3, 4}, {5, 6, 7, 8, 9, 10}, 1.0, 0.009523809523809525},
    {"separated 5/5", {1, 2, 3, 4, 5}, {6, 7, 8, 9, 10}, 1.0, 0.007936507936507936},
    {"one value each", {1.0}, {2.0}, 1.0, 1.0},
};

// The 23/31 pair of the spot values: [i * 0.37 % 5 for i in range(23)], [i * 0.53 % 6 for i in
// range(31)] (Python's % on doubles: fmod for these non-negative operands).
std::vector<double> python_mod_sequence(int count, double step, double modulus) {
    std::vector<double> out(count);
    for (int i = 0; i < count; ++i)
        out[i] = std::fmod(i * step, modulus);
    return out;
}

TEST(KsTest, SpotValuesFromScipy) {
    double largest = 0;
    for (const Spot& spot : kSpots) {
        const KsTest test = ks_two_sample(spot.a, spot.b);
        EXPECT_EQ(test.size_a, static_cast<int>(spot.a.size())) << spot.name;
        EXPECT_EQ(test.size_b, static_cast<int>(spot.b.size())) << spot.name;
        EXPECT_EQ(test.statistic, spot.statistic) << spot.name;
        EXPECT_NEAR(test.p_value, spot.p_value, 1e-14) << spot.name;
        largest = std::max(largest, std::abs(test.p_value - spot.p_value));
    }
    const KsTest larger =
        ks_two_sample(python_mod_sequence(23, 0.37, 5), python_mod_sequence(31, 0.53, 6));
    EXPECT_EQ(larger.statistic, 0.2131837307152875);  // 152 / (23 · 31)
    EXPECT_NEAR(larger.p_value, 0.4996691184443123, 1e-14);
    largest = std::max(largest, std::abs(larger.p_value - 0.4996691184443123));
    std::cout << "[ info     ] p-values vs SciPy: largest difference " << largest << "\n";
    RecordProperty("max_p_diff", std::to_string(largest));
}

TEST(KsTest, SmallestStatisticOfEqualSizesHasPValueOne) {
    // D = 1/n with m = n: every path leaves the band at its first step, so p = 1 exactly. SciPy
    // 1.10's exact method reports a failure here and falls back to method="asymp" (also 1.0).
    const KsTest test = ks_two_sample({0.1, 0.5, 0.9, 1.3, 2.0}, {0.4, 0.6, 1.1, 1.7, 2.5});
    EXPECT_EQ(test.statistic, 0.2);
    EXPECT_EQ(test.p_value, 1.0);
}

TEST(KsTest, CompleteSeparationIsTwoPathsInAll) {
    // D = 1 is reached only by the two paths that take every step of one sample first:
    // p = 2 / C(m + n, m).
    double largest = 0;
    for (int m = 1; m <= 30; m += 3) {
        for (int n = 1; n <= 30; n += 4) {
            std::vector<double> a(m), b(n);
            for (int i = 0; i < m; ++i)
                a[i] = i;
            for (int j = 0; j < n; ++j)
                b[j] = 100 + j;
            long double paths = 1;  // C(m + n, m)
            for (int k = 1; k <= m; ++k)
                paths = paths * (n + k) / k;
            const double expected = static_cast<double>(std::min(1.0L, 2 / paths));
            const KsTest test = ks_two_sample(a, b);
            EXPECT_EQ(test.statistic, 1.0);
            const double relative = std::abs(test.p_value - expected) / expected;
            largest = std::max(largest, relative);
            EXPECT_LE(relative, 1e-12) << m << " " << n;
        }
    }
    std::cout << "[ info     ] separated samples vs 2/C(m+n,m): largest relative difference "
              << largest << "\n";
    RecordProperty("max_rel_diff", std::to_string(largest));
}

// D · m · n by a plain scan of both ECDFs at every value of either sample.
long long plain_scaled_statistic(const std::vector<double>& a, const std::vector<double>& b) {
    long long largest = 0;
    const long long m = a.size(), n = b.size();
    for (const auto* sample : {&a, &b}) {
        for (double x : *sample) {
            const long long i = std::count_if(a.begin(), a.end(), [&](double v) { return v <= x; });
            const long long j = std::count_if(b.begin(), b.end(), [&](double v) { return v <= x; });
            largest = std::max(largest, std::llabs(i * n - j * m));
        }
    }
    return largest;
}

// P(D' ≥ D) by counting paths in long double: paths[i][j] counts the monotone paths from
// (0,0) to (i,j) that never touch |i·n − j·m| ≥ h; p = 1 − paths[m][n] / C(m + n, m).
long double plain_p_value(int m, int n, long long h) {
    if (h == 0) return 1;
    std::vector<std::vector<long double>> paths(m + 1, std::vector<long double>(n + 1, 0));
    for (int i = 0; i <= m; ++i) {
        for (int j = 0; j <= n; ++j) {
            if (std::llabs(static_cast<long long>(i) * n - static_cast<long long>(j) * m) >= h)
                continue;
            paths[i][j] = (i == 0 && j == 0)
                              ? 1
                              : (i > 0 ? paths[i - 1][j] : 0) + (j > 0 ? paths[i][j - 1] : 0);
        }
    }
    long double total = 1;
    for (int k = 1; k <= m; ++k)
        total = total * (n + k) / k;
    return 1 - paths[m][n] / total;
}

TEST(KsTest, MatchesPlainPathCount) {
    std::mt19937_64 rng(2720);
    double largest = 0;
    for (int trial = 0; trial < 300; ++trial) {
        const int m = 1 + static_cast<int>(rng() % 40), n = 1 + static_cast<int>(rng() % 40);
        // Few distinct values on some trials: ties within and across the samples.
        const int levels = trial % 3 == 0 ? 4 : 1000000;
        const double shift = static_cast<double>(rng() % 5) / 4;
        std::vector<double> a(m), b(n);
        for (double& x : a)
            x = static_cast<double>(rng() % levels) / levels;
        for (double& x : b)
            x = static_cast<double>(rng() % levels) / levels + shift / 4;
        const KsTest test = ks_two_sample(a, b);
        const long long h = plain_scaled_statistic(a, b);
        EXPECT_EQ(test.statistic, static_cast<double>(h) / (static_cast<double>(m) * n));
        const double expected = static_cast<double>(plain_p_value(m, n, h));
        const double difference = std::abs(test.p_value - expected);
        largest = std::max(largest, difference);
        EXPECT_LE(difference, 1e-13 + 1e-10 * expected) << m << " " << n << " h " << h;
    }
    std::cout << "[ info     ] p-values vs long double path counts: largest difference " << largest
              << "\n";
    RecordProperty("max_p_diff", std::to_string(largest));
}

TEST(KsTest, SymmetricInTheSamples) {
    std::mt19937_64 rng(2721);
    std::normal_distribution<double> g(0.0, 1.0);
    double largest = 0;
    for (int trial = 0; trial < 100; ++trial) {
        const int m = 1 + static_cast<int>(rng() % 35), n = 1 + static_cast<int>(rng() % 35);
        std::vector<double> a(m), b(n);
        for (double& x : a)
            x = g(rng);
        for (double& x : b)
            x = g(rng) + 0.5;
        const KsTest ab = ks_two_sample(a, b), ba = ks_two_sample(b, a);
        EXPECT_EQ(ab.statistic, ba.statistic);
        EXPECT_EQ(ab.size_a, ba.size_b);
        largest = std::max(largest, std::abs(ab.p_value - ba.p_value));
        EXPECT_LE(std::abs(ab.p_value - ba.p_value), 1e-14 + 1e-12 * ab.p_value);
    }
    std::cout << "[ info     ] ks(a, b) vs ks(b, a): largest p-value difference " << largest
              << "\n";
    RecordProperty("max_p_diff", std::to_string(largest));
}

TEST(KsTest, InvariantUnderAMonotoneTransform) {
    // Only the order of the merged sample matters: exp, a positive affine map and x³ keep it
    // (the draws are far enough apart that none of the maps merges two values).
    std::mt19937_64 rng(2722);
    std::normal_distribution<double> g(0.0, 1.0);
    for (int trial = 0; trial < 50; ++trial) {
        const int m = 2 + static_cast<int>(rng() % 30), n = 2 + static_cast<int>(rng() % 30);
        std::vector<double> a(m), b(n);
        for (double& x : a)
            x = g(rng);
        for (double& x : b)
            x = 0.7 * g(rng) + 0.3;
        const KsTest base = ks_two_sample(a, b);
        for (int map = 0; map < 3; ++map) {
            auto increasing = [map](double x) {
                return map == 0 ? std::exp(x) : map == 1 ? 3 * x - 11 : x * x * x;
            };
            std::vector<double> fa(a), fb(b);
            std::transform(fa.begin(), fa.end(), fa.begin(), increasing);
            std::transform(fb.begin(), fb.end(), fb.begin(), increasing);
            const KsTest moved = ks_two_sample(fa, fb);
            EXPECT_EQ(moved.statistic, base.statistic) << map;
            EXPECT_EQ(moved.p_value, base.p_value) << map;
        }
        // A decreasing map reverses both ECDFs: D is unchanged too.
        std::vector<double> na(a), nb(b);
        for (double& x : na)
            x = -x;
        for (double& x : nb)
            x = -x;
        EXPECT_EQ(ks_two_sample(na, nb).statistic, base.statistic);
        EXPECT_EQ(ks_two_sample(na, nb).p_value, base.p_value);
    }
}

TEST(KsTest, PValueFallsAsTheSamplesSeparate) {
    std::vector<double> a(20), b(20);
    for (int i = 0; i < 20; ++i)
        a[i] = i;
    double previous = 2;
    for (double shift : {0.5, 3.5, 7.5, 12.5, 20.5}) {
        for (int j = 0; j < 20; ++j)
            b[j] = j + shift;
        const KsTest test = ks_two_sample(a, b);
        EXPECT_LT(test.p_value, previous) << shift;
        EXPECT_GE(test.p_value, 0) << shift;
        EXPECT_LE(test.p_value, 1) << shift;
        previous = test.p_value;
    }
}

TEST(KsTest, BadInput) {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    const double inf = std::numeric_limits<double>::infinity();
    EXPECT_THROW(ks_two_sample({}, {1.0}), std::domain_error);
    EXPECT_THROW(ks_two_sample({1.0}, {}), std::domain_error);
    EXPECT_THROW(ks_two_sample({}, {}), std::domain_error);
    EXPECT_THROW(ks_two_sample({1.0, nan}, {1.0}), std::domain_error);
    EXPECT_THROW(ks_two_sample({1.0}, {inf}), std::domain_error);
    EXPECT_THROW(ks_two_sample({-inf, 0.0}, {1.0}), std::domain_error);
    try {
        ks_two_sample({1.0}, {});
        ADD_FAILURE() << "no exception";
    } catch (const std::domain_error& error) {
        EXPECT_EQ(std::string(error.what()).rfind("attngeo::compare::ks_two_sample: ", 0), 0u)
            << error.what();
    }
}

}  // namespace
