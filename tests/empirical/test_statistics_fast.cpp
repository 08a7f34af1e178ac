// Tests for the fast per-document path of HeadStatistics (statistics_fast.cpp) and its kernels:
// bit-identical exact state against the plain reference (add_document_reference) on random and
// tie-heavy heads, the AVX2 lag kernel against its plain twin and a naive dot product, the fast
// exact addend against ExactSum::add, heads in parallel, and bad input.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <limits>
#include <random>
#include <stdexcept>

#include "common/cpu_features.hpp"
#include "empirical/extract/statistics.hpp"
#include "empirical/extract/statistics_kernels.hpp"

using namespace attngeo;
using namespace attngeo::empirical;
namespace kernels = attngeo::empirical::statistics_kernels;

namespace {

// A document: α on a coarse grid (ties in the ranking), values on a grid (ties in distances),
// some zero value rows and zero weights when `degenerate`.
struct Document {
    std::vector<float> alpha;   // [n]
    std::vector<float> values;  // [n, d]
};

Document random_document(int n, int d, bool coarse, bool degenerate, std::mt19937_64& rng) {
    Document doc{std::vector<float>(n), std::vector<float>(static_cast<std::size_t>(n) * d)};
    std::uniform_int_distribution<int> level(0, 6), coordinate(-3, 3);
    std::normal_distribution<float> normal;
    float total = 0;
    for (int i = 0; i < n; ++i) {
        const float a = coarse ? static_cast<float>(level(rng)) : std::abs(normal(rng)) + 0.01f;
        doc.alpha[i] = degenerate || a > 0 ? a : 1.0f;
        total += doc.alpha[i];
    }
    if (total == 0) doc.alpha[0] = total = 1;
    for (auto& a : doc.alpha)
        a /= total;
    for (auto& v : doc.values)
        v = coarse ? 0.5f * static_cast<float>(coordinate(rng)) : normal(rng);
    if (degenerate)
        for (int i = 0; i < n; i += 3)
            std::fill_n(doc.values.begin() + static_cast<std::ptrdiff_t>(i) * d, d, 0.0f);
    return doc;
}

StatisticsSettings settings_for(int n, int max_lag, bool every_size, theory::Ranking ranking,
                                theory::Distance distance) {
    StatisticsSettings s;
    s.context = n;
    s.max_lag = max_lag;
    s.ranking = ranking;
    s.distance = distance;
    for (int N = 1; N <= n; N = every_size ? N + 1 : N * 2)
        s.sizes.push_back(N);
    if (s.sizes.back() != n) s.sizes.push_back(n);
    return s;
}

// Words of the two saved states that differ (0 when the states are equal bit for bit).
std::size_t differing_words(const HeadStatistics& a, const HeadStatistics& b) {
    std::vector<std::int64_t> x, y;
    a.save(x);
    b.save(y);
    if (x.size() != y.size()) return std::max(x.size(), y.size());
    std::size_t count = 0;
    for (std::size_t k = 0; k < x.size(); ++k)
        count += x[k] != y[k];
    return count;
}

}  // namespace

TEST(StatisticsFast, EqualsThePlainReferenceBitForBit) {
    struct Case {
        int n, d, max_lag;
        bool every_size;
        theory::Ranking ranking;
        theory::Distance distance;
    };
    using theory::Distance;
    using theory::Ranking;
    const Case cases[] = {
        {2, 1, 1, true, Ranking::attention, Distance::euclidean},
        {3, 2, 5, true, Ranking::contribution, Distance::euclidean},
        {40, 6, 4, true, Ranking::attention, Distance::euclidean},
        {70, 8, 68, true, Ranking::contribution, Distance::euclidean},
        {130, 64, 128, true, Ranking::attention, Distance::euclidean},
        {131, 17, 21, true, Ranking::attention, Distance::cosine},
        {100, 5, 30, false, Ranking::attention, Distance::euclidean},
        {257, 32, 128, true, Ranking::contribution, Distance::euclidean},
    };
    std::mt19937_64 rng(17);
    std::size_t largest_difference = 0;
    for (const Case& c : cases) {
        const auto settings = settings_for(c.n, c.max_lag, c.every_size, c.ranking, c.distance);
        HeadStatistics fast(settings), reference(settings);
        for (int doc = 0; doc < 4; ++doc) {
            const Document document = random_document(c.n, c.d, doc % 2 == 0, doc == 2, rng);
            const DocumentRecord a =
                fast.add_document(document.alpha.data(), document.values.data(), c.d);
            const DocumentRecord b = reference.add_document_reference(document.alpha.data(),
                                                                      document.values.data(), c.d);
            EXPECT_EQ(a.precision, b.precision) << c.n << " " << c.d;
            EXPECT_EQ(a.recall, b.recall) << c.n << " " << c.d;
            EXPECT_EQ(a.rho0, b.rho0) << c.n << " " << c.d;
            EXPECT_EQ(a.lambda, b.lambda) << c.n << " " << c.d;
            EXPECT_EQ(a.C, b.C) << c.n << " " << c.d;
            EXPECT_EQ(a.alpha, b.alpha) << c.n << " " << c.d;
            EXPECT_EQ(a.m_sink, b.m_sink) << c.n << " " << c.d;
            EXPECT_EQ(a.m_last, b.m_last) << c.n << " " << c.d;
            EXPECT_EQ(a.m_rest, b.m_rest) << c.n << " " << c.d;
            EXPECT_EQ(a.f_rmax, b.f_rmax) << c.n << " " << c.d;
            EXPECT_EQ(a.f_rmin, b.f_rmin) << c.n << " " << c.d;
            EXPECT_EQ(a.cos_s_v0, b.cos_s_v0) << c.n << " " << c.d;
            EXPECT_EQ(a.cos_s_vL, b.cos_s_vL) << c.n << " " << c.d;
            EXPECT_EQ(a.cos_s_v0.size(), settings.sizes.size());
            ASSERT_EQ(a.cos_by_lag.size(), static_cast<std::size_t>(c.max_lag));
            ASSERT_EQ(b.cos_by_lag.size(), a.cos_by_lag.size());
            for (std::size_t k = 0; k < a.cos_by_lag.size(); ++k)  // NaN at a lag without pairs
                EXPECT_TRUE(a.cos_by_lag[k] == b.cos_by_lag[k] ||
                            (std::isnan(a.cos_by_lag[k]) && std::isnan(b.cos_by_lag[k])))
                    << c.n << " " << c.d << " lag " << k + 1;
        }
        const std::size_t differing = differing_words(fast, reference);
        largest_difference = std::max(largest_difference, differing);
        EXPECT_EQ(differing, 0u) << "n " << c.n << " d " << c.d << " lag " << c.max_lag;
        EXPECT_TRUE(fast == reference);
        EXPECT_EQ(fast.pairs_at_lag(1), reference.pairs_at_lag(1));
        if (fast.pairs_at_lag(1) > 0) {
            EXPECT_EQ(fast.cos_at_lag(1), reference.cos_at_lag(1));
        }
    }
    std::cout << "largest count of differing state words: " << largest_difference << "\n";
    RecordProperty("largest_differing_words", static_cast<int>(largest_difference));
}

TEST(StatisticsFast, DeviceGramPathEqualsTheReference) {
    std::mt19937_64 rng(5);
    const int n = 90, d = 12;
    const auto settings =
        settings_for(n, 16, true, theory::Ranking::attention, theory::Distance::euclidean);
    HeadStatistics fast(settings), reference(settings);
    for (int doc = 0; doc < 3; ++doc) {
        const Document document = random_document(n, d, doc != 1, false, rng);
        const std::vector<int> order =
            head_order(document.alpha.data(), document.values.data(), n, d, settings.ranking);
        theory::RowMatrix ranked(n, d);
        for (int k = 0; k < n; ++k)
            for (int t = 0; t < d; ++t)
                ranked(k, t) = static_cast<double>(document.alpha[order[k]]) *
                               document.values[static_cast<std::size_t>(order[k]) * d + t];
        const Eigen::MatrixXd gram = ranked * ranked.transpose();
        const RankedGram given{&order, &gram};
        fast.add_document(document.alpha.data(), document.values.data(), d, &given);
        reference.add_document_reference(document.alpha.data(), document.values.data(), d, &given);
    }
    EXPECT_EQ(differing_words(fast, reference), 0u);
}

TEST(StatisticsFast, LagKernelEqualsItsPlainTwinAndNaiveDots) {
    std::mt19937_64 rng(9);
    std::normal_distribution<float> normal;
    for (const auto [n, d, max_lag] :
         {std::array<int, 3>{9, 3, 7}, std::array<int, 3>{200, 64, 128},
          std::array<int, 3>{77, 5, 19}, std::array<int, 3>{1024, 64, 128},
          std::array<int, 3>{300, 17, 1}, std::array<int, 3>{301, 9, 2}}) {
        std::vector<float> values(static_cast<std::size_t>(n) * d);
        for (auto& v : values)
            v = normal(rng) * std::ldexp(1.0f, static_cast<int>(rng() % 40) - 20);
        const int ld = kernels::transposed_stride(n);
        EXPECT_GE(ld, n);
        EXPECT_NE(ld % 512, 0);
        std::vector<double> transposed(static_cast<std::size_t>(ld) * d);
        kernels::transpose_to_double(values.data(), n, d, ld, transposed.data());
        const int first = 1, last = n - 1;
        const std::size_t size = static_cast<std::size_t>(last - first) * max_lag;
        std::vector<double> plain(size, -7.0), dispatched(size, -7.0);
        kernels::lag_dots_plain(transposed.data(), n, d, ld, max_lag, first, last, plain.data());
        kernels::lag_dots(transposed.data(), n, d, ld, max_lag, first, last, dispatched.data());
        double largest = 0;
        for (int i = first; i < last; ++i) {
            for (int k = 1; k <= max_lag; ++k) {
                const std::size_t at = static_cast<std::size_t>(i - first) * max_lag + k - 1;
                if (i + k >= n) {  // beyond the last token: left untouched
                    EXPECT_EQ(plain[at], -7.0);
                    EXPECT_EQ(dispatched[at], -7.0);
                    continue;
                }
                double naive = 0;
                for (int t = 0; t < d; ++t)
                    naive += static_cast<double>(values[static_cast<std::size_t>(i) * d + t]) *
                             static_cast<double>(values[static_cast<std::size_t>(i + k) * d + t]);
                EXPECT_EQ(plain[at], naive) << i << " " << k;
                EXPECT_EQ(dispatched[at], naive) << i << " " << k;
                largest = std::max(largest, std::abs(dispatched[at] - naive));
            }
        }
#if ATTNGEO_X86
        if (cpu_has_avx2_fma()) {
            std::vector<double> avx2(size, -7.0);
            kernels::lag_dots_avx2(transposed.data(), n, d, ld, max_lag, first, last, avx2.data());
            EXPECT_EQ(avx2, plain);
        }
        if (cpu_has_avx512f()) {
            std::vector<double> avx512(size, -7.0);
            kernels::lag_dots_avx512(transposed.data(), n, d, ld, max_lag, first, last,
                                     avx512.data());
            EXPECT_EQ(avx512, plain);
        }
#endif
        std::cout << "n " << n << " d " << d << ": largest |kernel - naive| " << largest << "\n";
    }
}

// The per-lag cosine sums: dispatched and AVX2 loops against the per-pair definition, bit for
// bit, with zero norms on either side (cosine 0) and lag counts off the vector width.
TEST(StatisticsFast, LagCosinesEqualThePerPairDefinition) {
    std::mt19937_64 rng(13);
    std::normal_distribution<double> normal;
    int checked = 0;
    for (int lags : {0, 1, 3, 4, 5, 17, 128})
        for (double own : {0.0, 0.75, 3e-9}) {
            std::vector<double> dots(lags), other(lags), start(lags);
            for (int k = 0; k < lags; ++k) {
                dots[k] = normal(rng);
                other[k] = rng() % 5 == 0 ? 0.0 : std::abs(normal(rng)) + 0.1;
                start[k] = normal(rng);
            }
            std::vector<double> expected = start, dispatched = start;
            for (int k = 0; k < lags; ++k)
                expected[k] += own == 0 || other[k] == 0 ? 0.0 : dots[k] / (own * other[k]);
            kernels::add_lag_cosines(dots.data(), own, other.data(), lags, dispatched.data());
            EXPECT_EQ(dispatched, expected) << lags << " " << own;
#if ATTNGEO_X86
            if (cpu_has_avx2_fma()) {
                std::vector<double> avx2 = start;
                kernels::add_lag_cosines_avx2(dots.data(), own, other.data(), lags, avx2.data());
                EXPECT_EQ(avx2, expected) << lags << " " << own;
            }
#endif
            checked += lags;
        }
    std::cout << checked << " lag cosines, 0 differing values allowed\n";
}

TEST(StatisticsFast, AddExactEqualsExactSumAdd) {
    std::mt19937_64 rng(11);
    std::vector<double> addends = {0.0,
                                   -0.0,
                                   0x1p-64,
                                   0x1p-65,
                                   0x3p-65,
                                   -0x3p-65,
                                   0x5p-66,
                                   0x1p-12,
                                   0x1.fffffffffffffp-13,
                                   1.0,
                                   -1.5,
                                   0x1.fffffffffffffp61,   // the largest addends, one after
                                   -0x1.fffffffffffffp61,  // the other: the sum stays < 2⁶²
                                   std::numeric_limits<double>::denorm_min(),
                                   std::numeric_limits<double>::min()};
    std::uniform_real_distribution<double> mantissa(-1, 1);
    for (int k = 0; k < 20000; ++k)
        addends.push_back(std::ldexp(mantissa(rng), static_cast<int>(rng() % 120) - 76));
    ExactSum fast, reference;
    for (double x : addends) {
        ExactSum one_fast, one_reference;
        kernels::add_exact(one_fast, x);
        one_reference.add(x);
        EXPECT_TRUE(one_fast == one_reference) << x;
        kernels::add_exact(fast, x);
        reference.add(x);
    }
    EXPECT_TRUE(fast == reference);
    std::cout << "sum of " << addends.size() << " addends: " << fast.value() << " and "
              << reference.value() << "\n";
    ExactSum sum;
    EXPECT_THROW(kernels::add_exact(sum, std::nan("")), std::overflow_error);
    EXPECT_THROW(kernels::add_exact(sum, 0x1p62), std::overflow_error);
    kernels::add_exact(sum, 0x1.8p61);
    EXPECT_THROW(kernels::add_exact(sum, 0x1.8p61), std::overflow_error);
}

TEST(StatisticsFast, HeadsInParallelEqualOneThread) {
    std::mt19937_64 rng(23);
    const int heads = 7, n = 96, d = 16;
    const auto settings =
        settings_for(n, 32, true, theory::Ranking::attention, theory::Distance::euclidean);
    std::vector<Document> documents;
    for (int h = 0; h < heads; ++h)
        documents.push_back(random_document(n, d, h % 2 == 0, h == 3, rng));
    std::vector<HeadStatistics> one(heads, HeadStatistics(settings)),
        three(heads, HeadStatistics(settings));
    auto add = [&](std::vector<HeadStatistics>& grid, int h) {
        grid[h].add_document(documents[h].alpha.data(), documents[h].values.data(), d);
    };
    for_each_head(heads, 1, [&](int h) { add(one, h); });
    for_each_head(heads, 3, [&](int h) { add(three, h); });
    for (int h = 0; h < heads; ++h)
        EXPECT_EQ(differing_words(one[h], three[h]), 0u) << h;
    EXPECT_THROW(for_each_head(heads, 2,
                               [&](int h) {
                                   if (h == 4) throw std::runtime_error("head 4");
                               }),
                 std::runtime_error);
    EXPECT_EQ(statistics_threads(3), 3);
    EXPECT_GE(statistics_threads(0), 1);
}

TEST(StatisticsFast, BadDocumentsThrowAndLeaveTheStateAlone) {
    const int n = 5, d = 2;
    const auto settings =
        settings_for(n, 3, true, theory::Ranking::attention, theory::Distance::euclidean);
    HeadStatistics s(settings);
    const HeadStatistics fresh(settings);
    std::vector<float> alpha = {0.2f, 0.2f, 0.2f, 0.2f, 0.2f}, values(n * d, 1.0f);
    values[3] = std::nanf("");
    EXPECT_THROW(s.add_document(alpha.data(), values.data(), d), std::domain_error);
    values[3] = std::numeric_limits<float>::infinity();
    EXPECT_THROW(s.add_document(alpha.data(), values.data(), d), std::domain_error);
    values[3] = 1.0f;
    alpha[2] = -0.2f;
    EXPECT_THROW(s.add_document(alpha.data(), values.data(), d), std::domain_error);
    EXPECT_THROW(s.add_document(alpha.data(), values.data(), 0), std::domain_error);
    EXPECT_TRUE(s == fresh);
    EXPECT_EQ(s.documents(), 0);
    alpha[2] = 0.2f;
    const std::vector<int> wrong_order = {1, 0, 2, 3, 4};
    const Eigen::MatrixXd gram = Eigen::MatrixXd::Zero(n, n);
    const RankedGram mismatched{&wrong_order, &gram};
    EXPECT_THROW(s.add_document(alpha.data(), values.data(), d, &mismatched),
                 std::invalid_argument);
    EXPECT_TRUE(s == fresh);
}
