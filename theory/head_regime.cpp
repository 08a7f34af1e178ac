// Spelling and classification of the head regimes; see head_regime.hpp.
#include "theory/head_regime.hpp"

#include <stdexcept>
#include <string>

namespace attngeo::theory {

const char* to_string(HeadRegime regime) {
    switch (regime) {
        case HeadRegime::retriever:
            return "Retriever";
        case HeadRegime::mixer:
            return "Mixer";
        case HeadRegime::reset:
            return "Reset";
    }
    throw std::domain_error("to_string(HeadRegime): not a regime");
}

HeadRegime parse_head_regime(const std::string& text) {
    for (HeadRegime regime : kHeadRegimes)
        if (text == to_string(regime)) return regime;
    throw std::domain_error("parse_head_regime: '" + text +
                            "' is not a head regime (Retriever, Mixer, Reset)");
}

HeadRegime classify_head(double m_sink, double m_last, double m_rest) {
    const int above = (m_last > m_sink) + (m_last > m_rest);
    return above == 2 ? HeadRegime::retriever : above == 1 ? HeadRegime::mixer : HeadRegime::reset;
}

const char* to_string(WordedRegime regime) {
    switch (regime) {
        case WordedRegime::retriever:
            return "Retriever";
        case WordedRegime::mixer:
            return "Mixer";
        case WordedRegime::reset:
            return "Reset";
        case WordedRegime::none:
            return "none";
    }
    throw std::domain_error("to_string(WordedRegime): not a regime");
}

namespace {

void check_curves(const std::vector<int>& sizes, const std::vector<double>& cos_s_v0,
                  const std::vector<double>& cos_s_vL, int n) {
    const char* fn = "classify_head_by_wording";
    if (sizes.empty()) throw std::domain_error(std::string(fn) + ": empty N grid");
    if (cos_s_v0.size() != sizes.size() || cos_s_vL.size() != sizes.size())
        throw std::domain_error(std::string(fn) + ": " + std::to_string(sizes.size()) +
                                " sizes but " + std::to_string(cos_s_v0.size()) + " and " +
                                std::to_string(cos_s_vL.size()) + " cosines");
    for (int N : sizes)
        if (N < 1 || N > n)
            throw std::domain_error(std::string(fn) + ": N = " + std::to_string(N) +
                                    " outside 1.." + std::to_string(n));
}

// "cos(s, v_L) high across N": at least kAcrossNShare of the grid's N.
bool last_aligned_across_n(const std::vector<double>& cos_s_vL) {
    std::size_t high = 0;
    for (double c : cos_s_vL)
        high += c >= kHighCosine;
    return high >= kAcrossNShare * static_cast<double>(cos_s_vL.size());
}

}  // namespace

WordedRegime classify_head_by_wording(double m_sink, double m_last, double m_rest,
                                      const std::vector<int>& sizes,
                                      const std::vector<double>& cos_s_v0,
                                      const std::vector<double>& cos_s_vL, int n) {
    check_curves(sizes, cos_s_v0, cos_s_vL, n);
    const bool last_largest = m_last > m_sink && m_last > m_rest;
    if (last_largest && last_aligned_across_n(cos_s_vL)) return WordedRegime::retriever;
    const double before_very_large = kVeryLargeNShare * n;
    bool overtaken = false, sink_biased = true;
    for (std::size_t s = 0; s < sizes.size() && sizes[s] <= before_very_large; ++s) {
        overtaken = overtaken || cos_s_vL[s] > cos_s_v0[s];
        sink_biased = sink_biased && cos_s_v0[s] >= cos_s_vL[s] && cos_s_vL[s] < kHighCosine;
    }
    if (cos_s_v0.front() > cos_s_vL.front() && overtaken) return WordedRegime::mixer;
    if (!last_largest && sink_biased) return WordedRegime::reset;
    return WordedRegime::none;
}

bool same_label(HeadRegime magnitudes, WordedRegime wording) {
    switch (wording) {
        case WordedRegime::retriever:
            return magnitudes == HeadRegime::retriever;
        case WordedRegime::mixer:
            return magnitudes == HeadRegime::mixer;
        case WordedRegime::reset:
            return magnitudes == HeadRegime::reset;
        case WordedRegime::none:
            return false;
    }
    return false;
}

}  // namespace attngeo::theory
