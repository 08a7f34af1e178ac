// The AVX2 sweeps of the certified Gram path against their plain loops (theory/gram_kernels):
// updated values, band extremes, counts and collected tokens must be bit-identical, for float and
// double columns, on ranges with every tail length and with thresholds that tie token bands.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <random>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "common/cpu_features.hpp"
#include "theory/gram_kernels.hpp"

namespace {

namespace gk = attngeo::theory::gram_kernels;

// The vectorised loops by their own names wherever the CPU has them, so that the comparisons
// stay real under ATTNGEO_PLAIN=1 (which only changes what the dispatchers take); elsewhere the
// dispatchers, which are then the plain loops (the sweep test says which it compared).
bool vector_loops_available() {
    return attngeo::cpu_has_avx2_fma();
}

// bits 512: the AVX-512 sweep where the CPU has it (else as for 256).
template <class Column>
gk::SweepResult fast_sweep(int bits, const double* v_old, double* v_new, const Column* column,
                           const double* block_norm, const gk::SweepRequest& request, int begin,
                           int end) {
#if ATTNGEO_X86
    if (bits == 512 && attngeo::cpu_has_avx512f())
        return gk::sweep_avx512(v_old, v_new, column, block_norm, request, begin, end);
    if (vector_loops_available())
        return gk::sweep_avx2(v_old, v_new, column, block_norm, request, begin, end);
#endif
    return gk::sweep(v_old, v_new, column, block_norm, request, begin, end);
}

gk::CountPair fast_count(const double* values, const double* block_norm, gk::Band band, int begin,
                         int end, double low, double high) {
#if ATTNGEO_X86
    if (vector_loops_available())
        return gk::count_band_avx2(values, block_norm, band, begin, end, low, high);
#endif
    return gk::count_band(values, block_norm, band, begin, end, low, high);
}

int fast_collect(const double* values, const double* block_norm, gk::Band band, int begin, int end,
                 double low, double high, int* out) {
#if ATTNGEO_X86
    if (vector_loops_available())
        return gk::collect_band_avx2(values, block_norm, band, begin, end, low, high, out);
#endif
    return gk::collect_band(values, block_norm, band, begin, end, low, high, out);
}

template <class Scalar>
void fast_strip(const Scalar* lower, int ld, int first, int count, Scalar* strip, int stride) {
#if ATTNGEO_X86
    if constexpr (std::is_same_v<Scalar, float>) {
        if (vector_loops_available()) {
            gk::upper_strip_avx2(lower, ld, first, count, strip, stride);
            return;
        }
    }
#endif
    gk::upper_strip(lower, ld, first, count, strip, stride);
}

unsigned long long fast_largest_magnitude(const double* x, long count) {
#if ATTNGEO_X86
    if (vector_loops_available()) return gk::largest_magnitude_bits_avx2(x, count);
#endif
    return gk::largest_magnitude_bits(x, count);
}

void fast_scale_to_float(const double* from, long count, double sigma, float* to) {
#if ATTNGEO_X86
    if (vector_loops_available()) {
        gk::scale_to_float_avx2(from, count, sigma, to);
        return;
    }
#endif
    gk::scale_to_float(from, count, sigma, to);
}

void fast_add_rows(const double* rows, int count, int d, double* sum, double* magnitude_sum) {
#if ATTNGEO_X86
    if (vector_loops_available()) {
        gk::add_rows_avx2(rows, count, d, sum, magnitude_sum);
        return;
    }
#endif
    gk::add_rows(rows, count, d, sum, magnitude_sum);
}

gk::ShiftedValueSums fast_shifted_value_sums(const double* y, const double* s, const double* a,
                                             int d) {
#if ATTNGEO_X86
    if (vector_loops_available()) return gk::shifted_value_sums_avx2(y, s, a, d);
#endif
    return gk::shifted_value_sums(y, s, a, d);
}

bool same_bits(double a, double b) {
    return std::memcmp(&a, &b, sizeof a) == 0;
}

// Thresholds that tie token value x of band e exactly, when such a double exists next to
// x ± e: fl(t − e) = x for a surely-threshold, fl(t + e) = x for a maybe-threshold.
double surely_tie(double x, double e) {
    double t = x + e;
    for (int i = 0; i < 8 && t - e != x; ++i)
        t = std::nextafter(t, t - e > x ? -INFINITY : INFINITY);
    return t;
}
double maybe_tie(double x, double e) {
    double t = x - e;
    for (int i = 0; i < 8 && t + e != x; ++i)
        t = std::nextafter(t, t + e > x ? -INFINITY : INFINITY);
    return t;
}

// R_b per block of kBandBlock tokens, positive.
std::vector<double> random_block_norms(int n, std::mt19937_64& rng) {
    std::normal_distribution<double> normal;
    std::vector<double> block_norm((n + gk::kBandBlock - 1) / gk::kBandBlock);
    for (double& r : block_norm)
        r = std::abs(normal(rng));
    return block_norm;
}

// Every request the Euclidean sweep makes (and the ones it does not), fast against plain.
template <class Column>
void compare_sweeps(int bits, std::mt19937_64& rng, double& largest, long& counted, long& ties) {
    std::normal_distribution<double> normal;
    constexpr int B = gk::kBandBlock;  // sizes around the band blocks' edges too
    for (int n : {1, 3, 4, 7, 8, 9, 17, 31, B - 1, B, B + 1, 2 * B + 3, 257}) {
        const std::vector<double> block_norm = random_block_norms(n, rng);
        std::vector<double> start(n);
        std::vector<Column> column(n);
        for (int l = 0; l < n; ++l) {
            start[l] = normal(rng);
            column[l] = static_cast<Column>(normal(rng));
        }
        const gk::Band band{1e-3, 2e-3, 1e-4}, before_band{2e-3, 1e-3, 3e-4};
        // Thresholds that tie token 0 (after and before the update): ≤ on exact ties.
        const double v0 = start[0] - 2 * static_cast<double>(column[0]);
        const double e0 = gk::band_of(band, block_norm[0]),
                     b0 = gk::band_of(before_band, block_norm[0]);
        const double after_low = surely_tie(v0, e0), before_low = surely_tie(start[0], b0);
        for (int split = 0; split <= n; split += std::max(1, n / 7)) {
            for (int flags = 0; flags < 16; ++flags) {
                gk::SweepRequest request;
                request.band = band;
                request.selected = flags & 1;
                request.bracket = flags & 2;
                request.count_before = flags & 4;
                request.before_band = before_band;
                request.before_low = before_low;
                request.before_high = maybe_tie(start[0], b0);
                request.count_after = flags & 8;
                request.after_low = after_low;
                request.after_high = maybe_tie(v0, e0);
                std::vector<double> fast(n, -1.0), plain(n, -2.0);
                const gk::SweepResult f = fast_sweep(bits, start.data(), fast.data(), column.data(),
                                                     block_norm.data(), request, split, n);
                const gk::SweepResult p = gk::sweep_plain(start.data(), plain.data(), column.data(),
                                                          block_norm.data(), request, split, n);
                const std::string where = std::to_string(bits) + " bits n=" + std::to_string(n) +
                                          " split=" + std::to_string(split) +
                                          " flags=" + std::to_string(flags);
                EXPECT_TRUE(same_bits(f.extremes.low, p.extremes.low)) << where;
                EXPECT_TRUE(same_bits(f.extremes.high, p.extremes.high)) << where;
                EXPECT_EQ(f.before.surely, p.before.surely) << where;
                EXPECT_EQ(f.before.maybe, p.before.maybe) << where;
                EXPECT_EQ(f.after.surely, p.after.surely) << where;
                EXPECT_EQ(f.after.maybe, p.after.maybe) << where;
                if (split < n && request.bracket) {
                    largest = std::max({largest, std::abs(f.extremes.low - p.extremes.low),
                                        std::abs(f.extremes.high - p.extremes.high)});
                }
                for (int l = 0; l < n; ++l) {
                    if (l < split) {  // outside the range: untouched
                        EXPECT_EQ(fast[l], -1.0) << where;
                        EXPECT_EQ(plain[l], -2.0) << where;
                        continue;
                    }
                    EXPECT_TRUE(same_bits(fast[l], plain[l])) << where << " l=" << l;
                    largest = std::max(largest, std::abs(fast[l] - plain[l]));
                    // The plain loop itself against the definition: v − 2c.
                    EXPECT_EQ(plain[l], start[l] - 2 * static_cast<double>(column[l]));
                }
                counted += p.before.maybe + p.after.maybe;
                if (split == 0 && n > 0) {  // token 0 ties its own thresholds
                    if (request.count_before && before_low - b0 == start[0]) {
                        EXPECT_GE(p.before.surely, 1) << where;
                        ++ties;
                    }
                    if (request.count_after && after_low - e0 == v0) {
                        EXPECT_GE(p.after.surely, 1) << where;
                        ++ties;
                    }
                }
            }
        }
    }
}

TEST(GramKernels, VectorisedSweepsEqualPlainLoops) {
    std::mt19937_64 rng(5);
    double largest = 0;
    long counted = 0, ties = 0;
    for (int bits : {256, 512}) {
        compare_sweeps<float>(bits, rng, largest, counted, ties);
        compare_sweeps<double>(bits, rng, largest, counted, ties);
    }
    EXPECT_GT(counted, 0);
    EXPECT_GT(ties, 0);  // the exact-tie comparisons were exercised
    std::cout << "[ info     ] AVX2 loops "
              << (vector_loops_available() ? "compared" : "not available") << ", AVX-512 sweep "
              << (attngeo::cpu_has_avx512f() ? "compared" : "not available")
              << " (the dispatchers take " << (gk::uses_avx2() ? "them" : "the plain loops")
              << "); largest difference to the plain loops " << largest << "\n";
    EXPECT_EQ(largest, 0.0);
}

// A CountPair against its definition written out token by token: surely v ≤ low − e,
// maybe v ≤ high + e, e the band at the token's block norm.
void expect_counts_match_definition(const std::vector<double>& values,
                                    const std::vector<double>& block_norm, gk::Band band, int begin,
                                    double low, double high, gk::CountPair counts) {
    int surely = 0, maybe = 0;
    for (int l = begin; l < static_cast<int>(values.size()); ++l) {
        const double r = block_norm[l / gk::kBandBlock];
        const double e = std::fma(std::fma(band.w, r, band.q), r, band.c);
        surely += values[l] <= low - e;
        maybe += values[l] <= high + e;
    }
    EXPECT_EQ(counts.surely, surely);
    EXPECT_EQ(counts.maybe, maybe);
}

TEST(GramKernels, CountsAndCollectedTokensEqualPlainLoops) {
    std::mt19937_64 rng(7);
    std::normal_distribution<double> normal;
    long collected = 0;
    constexpr int B = gk::kBandBlock;
    for (int n : {1, 3, 4, 5, 8, 13, B - 1, B, B + 1, 257}) {
        const std::vector<double> block_norm = random_block_norms(n, rng);
        std::vector<double> values(n);
        for (int l = 0; l < n; ++l)
            values[l] = normal(rng);
        const gk::Band band{1e-2, 3e-2, 1e-3};
        for (int pick = 0; pick < std::min(n, 4); ++pick) {
            const int l = static_cast<int>(rng() % n);
            const double e = gk::band_of(band, block_norm[l / gk::kBandBlock]);
            // Ties with token l: fl(low − e) = v_l = fl(high + e).
            const double low = surely_tie(values[l], e), high = maybe_tie(values[l], e);
            for (int begin : {0, n / 3}) {
                const gk::CountPair fast =
                    fast_count(values.data(), block_norm.data(), band, begin, n, low, high);
                const gk::CountPair plain = gk::count_band_plain(values.data(), block_norm.data(),
                                                                 band, begin, n, low, high);
                EXPECT_EQ(fast.surely, plain.surely);
                EXPECT_EQ(fast.maybe, plain.maybe);
                // The plain count against its definition, token by token.
                expect_counts_match_definition(values, block_norm, band, begin, low, high, plain);
                if (begin <= l && low - e == values[l]) {
                    EXPECT_GE(plain.surely, 1);  // token l itself: v ≤ low − e on the tie
                }
                std::vector<int> fast_found(n), plain_found(n);
                using Bracket = std::pair<double, double>;
                for (const auto& [a, b] : {Bracket{high, low}, Bracket{low, high},
                                           Bracket{-INFINITY, high}, Bracket{low, INFINITY}}) {
                    const int nf = fast_collect(values.data(), block_norm.data(), band, begin, n, a,
                                                b, fast_found.data());
                    const int np = gk::collect_band_plain(values.data(), block_norm.data(), band,
                                                          begin, n, a, b, plain_found.data());
                    ASSERT_EQ(nf, np);
                    for (int k = 0; k < nf; ++k)
                        EXPECT_EQ(fast_found[k], plain_found[k]);
                    collected += np;
                }
            }
        }
    }
    EXPECT_GT(collected, 0);  // the collect comparisons were exercised
}

TEST(GramKernels, EmptyRangesGiveInfiniteExtremesAndZeroCounts) {
    double value = 1, updated = 5;
    float column = 1;
    gk::SweepRequest request;
    request.bracket = request.count_before = true;
    const gk::SweepResult selected = gk::sweep(&value, &updated, &column, &value, request, 0, 0);
    EXPECT_EQ(selected.extremes.low, -INFINITY);
    EXPECT_EQ(selected.extremes.high, -INFINITY);
    EXPECT_EQ(selected.before.surely + selected.before.maybe, 0);
    request.selected = request.count_before = false;
    request.count_after = true;
    const gk::SweepResult rest = gk::sweep(&value, &updated, &column, &value, request, 0, 0);
    EXPECT_EQ(rest.extremes.low, INFINITY);
    EXPECT_EQ(rest.after.surely + rest.after.maybe, 0);
    EXPECT_EQ(updated, 5);  // nothing touched
    const gk::CountPair none = gk::count_band(&value, &value, gk::Band{}, 0, 0, 1, 1);
    EXPECT_EQ(none.surely + none.maybe, 0);
}

// upper_strip against the definition (row j of the symmetric matrix up to the diagonal) and
// against its plain loop, for every block of 8 rows at sizes around the block edge.
template <class Scalar>
int check_strips() {
    int checked = 0;
    for (int n : {1, 2, 7, 8, 9, 15, 16, 17, 63, 64, 65, 1025}) {
        std::vector<Scalar> lower(static_cast<std::size_t>(n) * n, Scalar(-99));
        for (int col = 0; col < n; ++col)
            for (int row = col; row < n; ++row)  // only the lower triangle is set
                lower[row + static_cast<std::size_t>(col) * n] =
                    static_cast<Scalar>((row * 131 + col * 7) % 9973) * Scalar(0.25);
        const int stride = (n + 7) / 8 * 8;
        for (int first = 0; first < n; first += 8) {
            const int count = std::min(8, n - first);
            std::vector<Scalar> fast(8 * stride, Scalar(-1)), plain(8 * stride, Scalar(-1));
            fast_strip(lower.data(), n, first, count, fast.data(), stride);
            gk::upper_strip_plain(lower.data(), n, first, count, plain.data(), stride);
            EXPECT_TRUE(fast == plain) << "n=" << n << " first=" << first;
            for (int j = 0; j < count; ++j)
                for (int l = 0; l <= first + j; ++l) {
                    const int row = std::max(first + j, l), col = std::min(first + j, l);
                    EXPECT_EQ(plain[j * stride + l], lower[row + static_cast<std::size_t>(col) * n])
                        << "n=" << n << " row " << first + j << " column " << l;
                }
        }
        ++checked;
    }
    return checked;
}

TEST(GramKernels, UpperStripsEqualTheSymmetricRows) {
    EXPECT_EQ(check_strips<float>(), 12);
    EXPECT_EQ(check_strips<double>(), 12);
}

}  // namespace

namespace {

TEST(GramKernels, LargestMagnitudeAndFloatScalingEqualPlainLoops) {
    std::mt19937_64 rng(11);
    std::normal_distribution<double> normal;
    for (long count : {0L, 1L, 3L, 4L, 7L, 8L, 9L, 17L, 1000L}) {
        std::vector<double> x(count);
        for (double& v : x)
            v = normal(rng) * std::ldexp(1.0, static_cast<int>(rng() % 64) - 32);
        const unsigned long long fast = fast_largest_magnitude(x.data(), count);
        EXPECT_EQ(fast, gk::largest_magnitude_bits_plain(x.data(), count)) << count;
        double largest = 0;  // the definition, as doubles
        for (double v : x)
            largest = std::max(largest, std::abs(v));
        double from_bits;
        std::memcpy(&from_bits, &fast, sizeof from_bits);
        EXPECT_EQ(from_bits, largest) << count;
        std::vector<float> fast_scaled(count), plain_scaled(count);
        fast_scale_to_float(x.data(), count, 0x1p-7, fast_scaled.data());
        gk::scale_to_float_plain(x.data(), count, 0x1p-7, plain_scaled.data());
        EXPECT_TRUE(fast_scaled == plain_scaled) << count;
        for (long i = 0; i < count; ++i)
            EXPECT_EQ(plain_scaled[i], static_cast<float>(x[i] * 0x1p-7));
        if (count > 0) {  // a non-finite entry anywhere lifts the pattern past every finite one
            for (double bad : {INFINITY, -INFINITY, NAN}) {
                std::vector<double> with_bad = x;
                with_bad[rng() % count] = bad;
                EXPECT_GE(fast_largest_magnitude(with_bad.data(), count), 0x7FF0000000000000ull);
                EXPECT_GE(gk::largest_magnitude_bits_plain(with_bad.data(), count),
                          0x7FF0000000000000ull);
            }
        }
    }
}

// The running sums of ExactShiftedDistances: the vector loop against the plain one bit for bit
// (lanes across t never reorder a sum), and both against a per-column float64 loop, from
// non-zero starting sums, with either output left out.
TEST(GramKernels, RowSumsEqualPlainLoops) {
    std::mt19937_64 rng(17);
    std::normal_distribution<double> normal;
    int checked = 0;
    for (int d : {1, 3, 4, 5, 15, 16, 17, 33, 64, 128, 131})
        for (int count : {0, 1, 2, 7, 40}) {
            std::vector<double> rows(static_cast<std::size_t>(count) * d), start(d);
            for (double& v : rows)
                v = normal(rng) * std::ldexp(1.0, static_cast<int>(rng() % 40) - 20);
            for (double& v : start)
                v = normal(rng);
            auto fast_sum = start, fast_magnitude = start, plain_sum = start,
                 plain_magnitude = start, only_magnitude = start, only_sum = start;
            fast_add_rows(rows.data(), count, d, fast_sum.data(), fast_magnitude.data());
            gk::add_rows_plain(rows.data(), count, d, plain_sum.data(), plain_magnitude.data());
            fast_add_rows(rows.data(), count, d, only_sum.data(), nullptr);
            fast_add_rows(rows.data(), count, d, nullptr, only_magnitude.data());
            for (int t = 0; t < d; ++t) {
                double sum = start[t], magnitude = start[t];
                for (int k = 0; k < count; ++k) {
                    sum += rows[static_cast<std::size_t>(k) * d + t];
                    magnitude += std::abs(rows[static_cast<std::size_t>(k) * d + t]);
                }
                EXPECT_TRUE(same_bits(fast_sum[t], sum) && same_bits(plain_sum[t], sum) &&
                            same_bits(only_sum[t], sum))
                    << "d " << d << " count " << count << " t " << t;
                EXPECT_TRUE(same_bits(fast_magnitude[t], magnitude) &&
                            same_bits(plain_magnitude[t], magnitude) &&
                            same_bits(only_magnitude[t], magnitude))
                    << "d " << d << " count " << count << " t " << t;
                ++checked;
            }
        }
    std::cout << "[ info     ] row sums: " << checked << " columns, 0 differing bits allowed\n";
}

// Tier 2's per-row sums: the vector loop against its plain twin bit for bit, and both within
// γ_d·Σ|terms| of a long double evaluation (the bound exact_distance.cpp relies on).
TEST(GramKernels, ShiftedValueSumsEqualPlainLoopsAndStayWithinTheirBound) {
    std::mt19937_64 rng(23);
    std::normal_distribution<double> normal;
    double largest_error_ratio = 0;
    for (int d : {1, 3, 7, 8, 9, 16, 31, 64, 128, 133})
        for (int trial = 0; trial < 20; ++trial) {
            std::vector<double> y(d), s(d), a(d);
            for (int t = 0; t < d; ++t) {
                y[t] = normal(rng) * std::ldexp(1.0, static_cast<int>(rng() % 30) - 15);
                s[t] = normal(rng) * 4;
                a[t] = std::abs(s[t]) + std::abs(normal(rng));
            }
            const auto fast = fast_shifted_value_sums(y.data(), s.data(), a.data(), d);
            const auto plain = gk::shifted_value_sums_plain(y.data(), s.data(), a.data(), d);
            EXPECT_TRUE(
                same_bits(fast.value, plain.value) && same_bits(fast.magnitude, plain.magnitude) &&
                same_bits(fast.across, plain.across) && same_bits(fast.largest, plain.largest))
                << "d " << d << " trial " << trial;
            long double value = 0, magnitude = 0, across = 0;
            double largest = 0;
            for (int t = 0; t < d; ++t) {
                const double z = y[t] - 2 * s[t];
                value += static_cast<long double>(y[t]) * z;
                magnitude += std::abs(static_cast<long double>(y[t]) * z);
                across += std::abs(static_cast<long double>(y[t])) * a[t];
                largest = std::max(largest, std::abs(y[t]));
            }
            const long double bound = d * 0x1p-53L / (1 - d * 0x1p-53L) * magnitude;
            const long double error = std::abs(plain.value - value);
            EXPECT_LE(error, bound) << "d " << d;
            EXPECT_LE(std::abs(plain.across - across), 2 * bound / magnitude * across + 1e-300);
            EXPECT_EQ(plain.largest, largest);
            if (bound > 0)
                largest_error_ratio =
                    std::max(largest_error_ratio, static_cast<double>(error / bound));
        }
    std::cout << "[ info     ] tier-2 value: largest error " << largest_error_ratio
              << " of its bound\n";
}
}  // namespace

namespace {

// ATTNGEO_PLAIN (common/cpu_features.hpp) read here on its own: set to anything but "" or "0",
// every dispatcher takes its plain twin; otherwise the CPU decides.
TEST(KernelDispatch, PlainSwitchDecidesWhatTheDispatchersTake) {
    const char* value = std::getenv("ATTNGEO_PLAIN");
    const bool forced = value != nullptr && std::string(value) != "" && std::string(value) != "0";
    EXPECT_EQ(attngeo::plain_paths_forced(), forced);
    EXPECT_EQ(attngeo::use_avx2(), attngeo::cpu_has_avx2() && !forced);
    EXPECT_EQ(attngeo::use_avx2_fma(), attngeo::cpu_has_avx2_fma() && !forced);
    EXPECT_EQ(attngeo::use_avx512f(), attngeo::cpu_has_avx512f() && !forced);
    if (attngeo::cpu_has_avx512f()) {
        EXPECT_TRUE(attngeo::cpu_has_avx2_fma());
    }
    EXPECT_EQ(gk::uses_avx2(), attngeo::use_avx2_fma());
    if (forced) {
        EXPECT_FALSE(gk::uses_avx2());
        EXPECT_FALSE(attngeo::use_avx2());
    }
    std::cout << "[ info     ] ATTNGEO_PLAIN " << (forced ? "set" : "unset") << "; CPU AVX2+FMA "
              << (attngeo::cpu_has_avx2_fma() ? "yes" : "no") << "; dispatchers take "
              << (gk::uses_avx2() ? "AVX2" : "the plain loops") << "\n";
}

}  // namespace
