// The simulator's packed single-precision Gram tiles (theory/single_gram, AVX2 and AVX-512)
// against their plain loop (bit for bit on the lower triangle) and against a float64 Gram of the
// same rounded inputs (within the float32 dot-product bound), at sizes around the panel and tile
// edges.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iostream>
#include <random>
#include <vector>

#include "common/cpu_features.hpp"
#include "theory/single_gram.hpp"

namespace {

namespace theory = attngeo::theory;
using attngeo::theory::RowMatrix;

RowMatrix random_rows(int n, int d, std::mt19937_64& rng) {
    std::normal_distribution<double> normal;
    RowMatrix y(n, d);
    for (int i = 0; i < n; ++i)
        for (int t = 0; t < d; ++t)
            y(i, t) = normal(rng) * 1e-3;
    return y;
}

TEST(SingleGram, TilesEqualThePlainLoopAndBoundTheDoubleGram) {
    std::mt19937_64 rng(3);
    double largest_to_plain = 0, largest_bound_ratio = 0;
    for (const auto& [n, d] : std::vector<std::pair<int, int>>{{1, 8},
                                                               {3, 5},
                                                               {23, 16},
                                                               {24, 16},
                                                               {25, 13},
                                                               {47, 64},
                                                               {48, 9},
                                                               {97, 128},
                                                               {200, 33},
                                                               {385, 40}}) {
        const RowMatrix y = random_rows(n, d, rng);
        const int e = attngeo::theory::single_precision_scale_exponent(y);
        const int ld = theory::single_gram_leading_dimension(n);
        ASSERT_GE(ld, n);
        ASSERT_EQ(ld % 8, 0);
        std::vector<float> fast(static_cast<std::size_t>(ld) * n, -7.0f), plain(fast), panels;
        // The tiles by their name where the CPU has them (ATTNGEO_PLAIN only changes what
        // single_gram_lower takes); elsewhere single_gram_lower, then the plain loop.
#if ATTNGEO_X86
        if (attngeo::cpu_has_avx2_fma())
            theory::single_gram_lower_avx2(y, e, fast.data(), ld, panels);
        else
#endif
            theory::single_gram_lower(y, e, fast.data(), ld, panels);
        theory::single_gram_lower_plain(y, e, plain.data(), ld);
        std::vector<float> wide(fast);  // the AVX-512 tiles where the CPU has them
#if ATTNGEO_X86
        if (attngeo::cpu_has_avx512f())
            theory::single_gram_lower_avx512(y, e, wide.data(), ld, panels);
#endif
        const double sigma = std::ldexp(1.0, e);
        for (int j = 0; j < n; ++j)
            for (int i = j; i < n; ++i) {
                const std::size_t at = i + static_cast<std::size_t>(j) * ld;
                if (attngeo::cpu_has_avx2_fma()) {
                    EXPECT_EQ(std::memcmp(&fast[at], &plain[at], sizeof(float)), 0)
                        << "n=" << n << " d=" << d << " (" << i << ", " << j << ")";
                }
                if (attngeo::cpu_has_avx512f()) {
                    EXPECT_EQ(std::memcmp(&wide[at], &plain[at], sizeof(float)), 0)
                        << "AVX-512, n=" << n << " d=" << d << " (" << i << ", " << j << ")";
                }
                largest_to_plain =
                    std::max({largest_to_plain, std::abs(double(fast[at]) - double(plain[at])),
                              std::abs(double(wide[at]) - double(plain[at]))});
                // float64 Gram of the rounded inputs: |error| ≤ γ_d Σ|a||b| (float32 u).
                double exact = 0, magnitude = 0;
                for (int t = 0; t < d; ++t) {
                    const double a = static_cast<float>(y(i, t) * sigma),
                                 b = static_cast<float>(y(j, t) * sigma);
                    exact += a * b;
                    magnitude += std::abs(a * b);
                }
                const double gamma = d * 0x1p-24 / (1 - d * 0x1p-24);
                const double error = std::abs(double(plain[at]) - exact);
                EXPECT_LE(error, gamma * magnitude + 1e-37)
                    << "n=" << n << " (" << i << ", " << j << ")";
                if (magnitude > 0)
                    largest_bound_ratio =
                        std::max(largest_bound_ratio, error / (gamma * magnitude));
            }
    }
    std::cout << "[ info     ] AVX-512 tiles "
              << (attngeo::cpu_has_avx512f() ? "compared" : "absent")
              << "; largest difference tiles − plain " << largest_to_plain
              << "; largest error / float32 bound " << largest_bound_ratio << "\n";
    EXPECT_EQ(largest_to_plain, 0.0);
}

TEST(SingleGram, ScalesOutsideTheNormalRangeMatchThePlainLoop) {
    std::mt19937_64 rng(4);
    RowMatrix y = random_rows(30, 12, rng);
    y *= 1e-310 / 1e-3;  // max |y| subnormal: σ = 2^e with e > 1023 goes through ldexp
    const int e = attngeo::theory::single_precision_scale_exponent(y);
    ASSERT_GT(e, 1023);
    const int ld = theory::single_gram_leading_dimension(30);
    std::vector<float> fast(static_cast<std::size_t>(ld) * 30), plain(fast), panels;
#if ATTNGEO_X86
    if (attngeo::cpu_has_avx2_fma())
        theory::single_gram_lower_avx2(y, e, fast.data(), ld, panels);
    else
#endif
        theory::single_gram_lower(y, e, fast.data(), ld, panels);
    theory::single_gram_lower_plain(y, e, plain.data(), ld);
    std::vector<float> wide(fast);
#if ATTNGEO_X86
    if (attngeo::cpu_has_avx512f()) theory::single_gram_lower_avx512(y, e, wide.data(), ld, panels);
#endif
    for (int j = 0; j < 30; ++j)
        for (int i = j; i < 30; ++i) {
            EXPECT_EQ(fast[i + j * ld], plain[i + j * ld]);
            EXPECT_EQ(wide[i + j * ld], plain[i + j * ld]);
        }
    EXPECT_GT(plain[0], 0.0f);  // the scaled rows are normal floats again
}

TEST(SingleGram, RejectsAShortLeadingDimension) {
    std::mt19937_64 rng(5);
    const RowMatrix y = random_rows(25, 4, rng);
    std::vector<float> out(48 * 25), panels;
    EXPECT_THROW(theory::single_gram_lower(y, 0, out.data(), 25, panels), std::invalid_argument);
    EXPECT_THROW(theory::single_gram_lower_plain(y, 0, out.data(), 47), std::invalid_argument);
}

}  // namespace
