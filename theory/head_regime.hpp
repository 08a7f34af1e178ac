// The paper's head taxonomy (§5.4): Retriever, Mixer and Reset, decided by how the attention
// mass on the last tokens compares with the sink's and the rest's. One spelling for every file
// and figure that names a regime.
#pragma once
#include <array>
#include <string>

namespace attngeo::theory {

enum class HeadRegime { retriever, mixer, reset };

// All three, in the order tables and figures list them.
inline constexpr std::array<HeadRegime, 3> kHeadRegimes = {HeadRegime::retriever, HeadRegime::mixer,
                                                           HeadRegime::reset};

const char* to_string(HeadRegime regime);  // "Retriever" | "Mixer" | "Reset"
// The inverse of to_string; std::domain_error naming parse_head_regime for anything else.
HeadRegime parse_head_regime(const std::string& text);

// Retriever when the last tokens' mean weight m_last exceeds both the sink's m_sink and the
// rest's m_rest, Mixer when it exceeds one of them, Reset when neither.
HeadRegime classify_head(double m_sink, double m_last, double m_rest);

}  // namespace attngeo::theory
