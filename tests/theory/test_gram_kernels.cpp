// The AVX2 passes of the certified Gram path against their plain loops (theory/gram_kernels):
// shifted values, band extremes, counts and collected tokens must be bit-identical, for float and
// double columns, on ranges with every tail length and with values that tie the thresholds.
#include <gtest/gtest.h>

#include <cmath>
#include <iostream>
#include <random>
#include <utility>
#include <vector>

#include "theory/gram_kernels.hpp"

namespace {

namespace gk = attngeo::theory::gram_kernels;

template <class Column>
void compare_passes(std::mt19937_64& rng, double& largest, long& collected) {
    std::normal_distribution<double> normal;
    for (int n : {1, 3, 4, 7, 8, 9, 31, 64, 257}) {
        std::vector<double> row_norm(n), start(n);
        std::vector<Column> column(n);
        for (int l = 0; l < n; ++l) {
            row_norm[l] = std::abs(normal(rng));
            start[l] = row_norm[l] * row_norm[l] + normal(rng);
            column[l] = static_cast<Column>(normal(rng));
        }
        const gk::Band band{1e-3, 2e-3, 1e-4};
        for (int split = 0; split <= n; split += std::max(1, n / 5)) {
            std::vector<double> shifted_fast = start, shifted_plain = start;
            // The selected range [0, split), then the rest fused with a count against a bracket
            // that ties token 0's own band ends (≤ comparisons on exact ties).
            const gk::BandExtremes fast_in = gk::advance_and_bracket(
                shifted_fast.data(), column.data(), row_norm.data(), band, 0, split, true);
            const gk::BandExtremes plain_in = gk::advance_and_bracket_plain(
                shifted_plain.data(), column.data(), row_norm.data(), band, 0, split, true);
            EXPECT_EQ(fast_in.low, plain_in.low) << "n=" << n << " split=" << split;
            EXPECT_EQ(fast_in.high, plain_in.high) << "n=" << n << " split=" << split;
            const double e0 = (band.w * row_norm[0] + band.q) * row_norm[0] + band.c;
            const double v0 = start[0] - 2 * static_cast<double>(column[0]);
            gk::CountPair fast_counts, plain_counts;
            const gk::BandExtremes fast_out =
                gk::advance_bracket_and_count(shifted_fast.data(), column.data(), row_norm.data(),
                                              band, split, n, v0 + e0, v0 - e0, fast_counts);
            const gk::BandExtremes plain_out = gk::advance_bracket_and_count_plain(
                shifted_plain.data(), column.data(), row_norm.data(), band, split, n, v0 + e0,
                v0 - e0, plain_counts);
            EXPECT_EQ(fast_out.low, plain_out.low) << "n=" << n << " split=" << split;
            EXPECT_EQ(fast_out.high, plain_out.high) << "n=" << n << " split=" << split;
            EXPECT_EQ(fast_counts.surely, plain_counts.surely) << "n=" << n << " split=" << split;
            EXPECT_EQ(fast_counts.maybe, plain_counts.maybe) << "n=" << n << " split=" << split;
            if (split > 0) {
                largest = std::max({largest, std::abs(fast_in.low - plain_in.low),
                                    std::abs(fast_in.high - plain_in.high)});
            }
            if (split < n) {
                largest = std::max({largest, std::abs(fast_out.low - plain_out.low),
                                    std::abs(fast_out.high - plain_out.high)});
            }
            for (int l = 0; l < n; ++l) {
                EXPECT_EQ(shifted_fast[l], shifted_plain[l]);
                largest = std::max(largest, std::abs(shifted_fast[l] - shifted_plain[l]));
            }
            // Thresholds equal to some token's own v ± e: the ≤ comparisons must agree on ties.
            for (int pick = 0; pick < std::min(n, 4); ++pick) {
                const int l = static_cast<int>(rng() % n);
                const double e = (band.w * row_norm[l] + band.q) * row_norm[l] + band.c;
                const double low = shifted_plain[l] + e, high = shifted_plain[l] - e;
                const gk::CountPair fast =
                    gk::count_band(shifted_fast.data(), row_norm.data(), band, split, n, low, high);
                const gk::CountPair plain = gk::count_band_plain(
                    shifted_plain.data(), row_norm.data(), band, split, n, low, high);
                EXPECT_EQ(fast.surely, plain.surely);
                EXPECT_EQ(fast.maybe, plain.maybe);
                const gk::CountPair fast_all =
                    gk::count_band(shifted_fast.data(), row_norm.data(), band, 0, n, low, high);
                const gk::CountPair plain_all = gk::count_band_plain(
                    shifted_plain.data(), row_norm.data(), band, 0, n, low, high);
                EXPECT_EQ(fast_all.surely, plain_all.surely);
                EXPECT_EQ(fast_all.maybe, plain_all.maybe);
                EXPECT_GE(plain_all.surely, 1);  // token l itself: v + e ≤ v + e
                // The undecided tokens of brackets that tie token l's own band ends.
                std::vector<int> fast_found(n), plain_found(n);
                using Bracket = std::pair<double, double>;
                for (const auto& [a, b] : {Bracket{high, low}, Bracket{low, high},
                                           Bracket{-INFINITY, high}, Bracket{low, INFINITY}}) {
                    const int nf = gk::collect_band(shifted_fast.data(), row_norm.data(), band,
                                                    split, n, a, b, fast_found.data());
                    const int np = gk::collect_band_plain(shifted_plain.data(), row_norm.data(),
                                                          band, split, n, a, b, plain_found.data());
                    ASSERT_EQ(nf, np);
                    for (int k = 0; k < nf; ++k)
                        EXPECT_EQ(fast_found[k], plain_found[k]);
                    collected += np;
                }
            }
        }
    }
}

TEST(GramKernels, VectorisedPassesEqualPlainLoops) {
    std::mt19937_64 rng(5);
    double largest = 0;
    long collected = 0;
    compare_passes<float>(rng, largest, collected);
    compare_passes<double>(rng, largest, collected);
    EXPECT_GT(collected, 0);  // the collect comparisons were exercised
    std::cout << "[ info     ] AVX2 " << (gk::uses_avx2() ? "used" : "not available")
              << "; largest difference to the plain loops " << largest << "\n";
    EXPECT_EQ(largest, 0.0);
}

TEST(GramKernels, EmptyRangesGiveInfiniteExtremesAndZeroCounts) {
    double value = 1;
    float column = 1;
    const gk::BandExtremes selected =
        gk::advance_and_bracket(&value, &column, &value, gk::Band{}, 0, 0, true);
    EXPECT_EQ(selected.low, -INFINITY);
    EXPECT_EQ(selected.high, -INFINITY);
    gk::CountPair counts{7, 7};
    const gk::BandExtremes rest =
        gk::advance_bracket_and_count(&value, &column, &value, gk::Band{}, 0, 0, 1, 1, counts);
    EXPECT_EQ(rest.low, INFINITY);
    EXPECT_EQ(counts.surely + counts.maybe, 0);
    EXPECT_EQ(value, 1);  // nothing touched
    const gk::CountPair none = gk::count_band(&value, &value, gk::Band{}, 0, 0, 1, 1);
    EXPECT_EQ(none.surely + none.maybe, 0);
}

}  // namespace

namespace {

TEST(GramKernels, MirrorEqualsPlainCopyForEverySize) {
    // Sizes around the 8×8 block edge, and the paper-default n = 1025.
    int checked = 0;
    for (int n : {1, 2, 7, 8, 9, 15, 16, 17, 63, 64, 65, 1025}) {
        std::vector<float> fast(static_cast<std::size_t>(n) * n);
        for (std::size_t i = 0; i < fast.size(); ++i)
            fast[i] = static_cast<float>(i % 9973) * 0.25f - 7.0f;
        std::vector<float> plain = fast;
        gk::mirror_lower(fast.data(), n);
        gk::mirror_lower_plain(plain.data(), n);
        EXPECT_TRUE(fast == plain) << "n=" << n;
        for (int i = 0; i < n; ++i)  // symmetric, lower triangle untouched
            for (int j = 0; j < n; ++j)
                ASSERT_EQ(plain[i + j * n], plain[j + i * n]) << n;
        ++checked;
    }
    EXPECT_EQ(checked, 12);
}

}  // namespace
