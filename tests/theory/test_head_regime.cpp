// The head taxonomy's spelling round trip and classification against the paper's rule written
// out as three comparisons per regime.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <stdexcept>
#include <vector>

#include "theory/head_regime.hpp"

using attngeo::theory::classify_head;
using attngeo::theory::HeadRegime;

TEST(HeadRegime, SpellingRoundTrips) {
    for (HeadRegime regime : attngeo::theory::kHeadRegimes)
        EXPECT_EQ(attngeo::theory::parse_head_regime(attngeo::theory::to_string(regime)), regime);
    EXPECT_STREQ(attngeo::theory::to_string(HeadRegime::retriever), "Retriever");
    EXPECT_THROW(attngeo::theory::parse_head_regime("retriever"), std::domain_error);
    EXPECT_THROW(attngeo::theory::parse_head_regime(""), std::domain_error);
}

TEST(HeadRegime, ClassificationFollowsTheMagnitudes) {
    // m_last against m_sink and m_rest over a grid of orderings, ties included.
    const double values[] = {0.0, 0.1, 0.5, 0.9};
    int checked = 0;
    for (double sink : values)
        for (double last : values)
            for (double rest : values) {
                HeadRegime expected = HeadRegime::reset;
                if (last > sink && last > rest)
                    expected = HeadRegime::retriever;
                else if (last > sink || last > rest)
                    expected = HeadRegime::mixer;
                EXPECT_EQ(classify_head(sink, last, rest), expected)
                    << sink << " " << last << " " << rest;
                ++checked;
            }
    EXPECT_EQ(checked, 64);
    // Ties never promote: equal magnitudes are Reset.
    EXPECT_EQ(classify_head(0.3, 0.3, 0.3), HeadRegime::reset);
}

// ---- the paper's wording (§5.4) as a rule --------------------------------------------------

namespace {

using attngeo::theory::classify_head_by_wording;
using attngeo::theory::WordedRegime;

// Cosine curves over a grid of n = 64: cos(s, v_0) and cos(s, v_L) as functions of N.
struct Curves {
    std::vector<int> sizes;
    std::vector<double> v0, vL;
};

Curves curves(double (*v0)(int), double (*vL)(int)) {
    Curves c;
    for (int N : {1, 2, 4, 8, 16, 32, 48, 64}) {
        c.sizes.push_back(N);
        c.v0.push_back(v0(N));
        c.vL.push_back(vL(N));
    }
    return c;
}

WordedRegime label(double m_sink, double m_last, double m_rest, const Curves& c) {
    return classify_head_by_wording(m_sink, m_last, m_rest, c.sizes, c.v0, c.vL, 64);
}

}  // namespace

// Each description of the paper, drawn as the figure 7 panels show it, gets its label; a head
// that fits none gets none (the worded rule is not exhaustive).
TEST(WordedRegime, EachDescriptionGetsItsLabel) {
    // Retriever: the last token dominates and s(N) stays aligned with v_L.
    const Curves retriever = curves([](int) { return 0.1; }, [](int) { return 0.9; });
    EXPECT_EQ(label(0.1, 1.0, 0.2, retriever), WordedRegime::retriever);
    // The same curves without the magnitude: not a Retriever; s never starts near v_0 → none.
    EXPECT_EQ(label(1.0, 0.5, 0.2, retriever), WordedRegime::none);
    // Mixer: from v_0 at small N towards v_L, crossing at N = 8 ≤ n/2.
    const Curves mixer =
        curves([](int N) { return N < 8 ? 0.9 : 0.3; }, [](int N) { return N < 8 ? 0.2 : 0.6; });
    EXPECT_EQ(label(1.0, 0.5, 0.2, mixer), WordedRegime::mixer);
    // Reset: sink-biased with weak v_L until N > n/2.
    const Curves reset = curves([](int N) { return N <= 32 ? 0.8 : 0.2; },
                                [](int N) { return N <= 32 ? 0.1 : 0.7; });
    EXPECT_EQ(label(1.0, 0.3, 0.5, reset), WordedRegime::reset);
    // The sink-biased curves but m_last the largest: neither Retriever (v_L is weak) nor Reset.
    EXPECT_EQ(label(0.2, 1.0, 0.5, reset), WordedRegime::none);
    // Sink-biased, but cos(s, v_L) ≥ 0.5 before n/2: not weak, so not Reset.
    const Curves strong_last = curves([](int) { return 0.9; }, [](int) { return 0.6; });
    EXPECT_EQ(label(1.0, 0.3, 0.5, strong_last), WordedRegime::none);
}

// Against the three descriptions written out as plain comparisons, over random curves.
TEST(WordedRegime, AgreesWithThePlainDescriptionsOnRandomHeads) {
    std::mt19937_64 rng(7);
    std::uniform_real_distribution<double> u(-0.2, 1.0);
    const std::vector<int> sizes = {1, 2, 3, 5, 8, 13, 21, 34, 55, 64};
    std::map<WordedRegime, int> seen;
    for (int trial = 0; trial < 20000; ++trial) {
        std::vector<double> v0(sizes.size()), vL(sizes.size());
        for (std::size_t s = 0; s < sizes.size(); ++s)
            v0[s] = u(rng), vL[s] = u(rng);
        const double m_sink = u(rng) + 0.2, m_last = u(rng) + 0.2, m_rest = u(rng) + 0.2;
        const bool last_largest = m_last > m_sink && m_last > m_rest;
        int high = 0;
        for (double c : vL)
            high += c >= 0.5;
        WordedRegime expected = WordedRegime::none;
        bool crosses = false, biased = true;
        for (std::size_t s = 0; s < sizes.size(); ++s)
            if (sizes[s] <= 32) {
                crosses = crosses || vL[s] > v0[s];
                biased = biased && v0[s] >= vL[s] && vL[s] < 0.5;
            }
        if (last_largest && 10 * high >= 8 * static_cast<int>(sizes.size()))
            expected = WordedRegime::retriever;
        else if (v0[0] > vL[0] && crosses)
            expected = WordedRegime::mixer;
        else if (!last_largest && biased)
            expected = WordedRegime::reset;
        const WordedRegime got =
            classify_head_by_wording(m_sink, m_last, m_rest, sizes, v0, vL, 64);
        ASSERT_EQ(got, expected) << "trial " << trial;
        ++seen[got];
    }
    EXPECT_EQ(seen.size(), 4u);  // every label drawn at least once
}

TEST(WordedRegime, BadCurvesAreRefused) {
    EXPECT_THROW(classify_head_by_wording(1, 1, 1, {}, {}, {}, 8), std::domain_error);
    EXPECT_THROW(classify_head_by_wording(1, 1, 1, {1, 2}, {0.1}, {0.1, 0.2}, 8),
                 std::domain_error);
    EXPECT_THROW(classify_head_by_wording(1, 1, 1, {9}, {0.1}, {0.1}, 8), std::domain_error);
    EXPECT_STREQ(attngeo::theory::to_string(WordedRegime::none), "none");
    EXPECT_TRUE(attngeo::theory::same_label(HeadRegime::mixer, WordedRegime::mixer));
    EXPECT_FALSE(attngeo::theory::same_label(HeadRegime::mixer, WordedRegime::none));
}
