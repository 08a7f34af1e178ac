// The head taxonomy's spelling round trip and classification against the paper's rule written
// out as three comparisons per regime.
#include <gtest/gtest.h>

#include <stdexcept>

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
