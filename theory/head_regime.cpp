// Spelling and classification of the head regimes; see head_regime.hpp.
#include "theory/head_regime.hpp"

#include <stdexcept>

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

}  // namespace attngeo::theory
