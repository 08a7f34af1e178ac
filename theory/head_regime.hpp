// The paper's head taxonomy (§5.4): Retriever, Mixer and Reset, decided by how the attention
// mass on the last tokens compares with the sink's and the rest's. One spelling for every file
// and figure that names a regime.
#pragma once
#include <array>
#include <string>
#include <vector>

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

// Gu et al.'s ε (ICLR 2025): a head sinks on a token when its mean attention on it over the
// query rows exceeds this. One value for extract's sink measures and compare's sink relations.
inline constexpr double kSinkThreshold = 0.3;

// The paper's own wording of the regimes (§5.4, the three bullets before Figure 7), which reads
// the cosine curves of s(N) with the sink's value v_0 and the last token's v_L besides the
// magnitudes. `none` is a head that matches none of the three descriptions: unlike
// classify_head, this rule is not exhaustive.
enum class WordedRegime { retriever, mixer, reset, none };
const char* to_string(WordedRegime regime);  // "Retriever" | "Mixer" | "Reset" | "none"

// The thresholds of classify_head_by_wording (docs/design.md §7 records them as a decision).
inline constexpr double kHighCosine = 0.5;       // "high" cos(s, v_L); below it, "weak"
inline constexpr double kAcrossNShare = 0.8;     // "across N": at this share of the grid's N
inline constexpr double kVeryLargeNShare = 0.5;  // "until very large N": N ≤ this share of n

// The magnitudes of classify_head and, over the N grid `sizes` [S] (ascending, 1 ≤ N ≤ n),
// cos(s(N), v_0) and cos(s(N), v_L) [S], read as the paper words them:
//   Retriever — m_last is the largest and cos(s, v_L) ≥ kHighCosine at ≥ kAcrossNShare of the N;
//   Mixer     — s(N) starts nearer v_0 (cos(s, v_0) > cos(s, v_L) at the grid's first N) and
//               cos(s, v_L) overtakes cos(s, v_0) at some N ≤ kVeryLargeNShare · n;
//   Reset     — m_last is not the largest (the sink dominates or the mass is spread) and at
//               every N ≤ kVeryLargeNShare · n s(N) stays sink-biased (cos(s, v_0) ≥
//               cos(s, v_L)) with weak cos(s, v_L) < kHighCosine;
//   none      — anything else.
// Throws std::domain_error for an empty grid, mismatched lengths or N outside 1..n.
WordedRegime classify_head_by_wording(double m_sink, double m_last, double m_rest,
                                      const std::vector<int>& sizes,
                                      const std::vector<double>& cos_s_v0,
                                      const std::vector<double>& cos_s_vL, int n);

// Whether the two rules give the same label (`none` agrees with nothing).
bool same_label(HeadRegime magnitudes, WordedRegime wording);

}  // namespace attngeo::theory
