// The verdict of a run whose verdict.csv counts its points (docs/design.md §7): a bottom line of a
// few sentences across every variant, the table, and per variant only what differs between them.
// Every sentence is generated from verdict.csv and the manifest's per-variant facts.
#pragma once
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "reports/verdict.hpp"

namespace attngeo::reports {

// The sentences of one variant with its name written as `variant` (a mark replaced later),
// one entry per unit, so the units every variant shares can be said once.
using VariantSentences = std::function<std::vector<std::string>(
    const std::string& variant, const std::vector<VerdictSide>& rows, const VariantFacts& facts,
    const std::string& points)>;

// The verdict of verdict.csv's rows; `points` names what a point is ("N").
std::string judged_verdict_html(const std::vector<VerdictSide>& rows,
                                const std::map<std::string, VariantFacts>& facts,
                                const std::string& points, const std::string& opening,
                                const VariantSentences& sentences_of);

// What a judged side's κ* means beyond its number: saturation, the grid's edge, κ₀.
std::vector<std::string> kappa_star_sentences(const VerdictSide& row);
// The single interval-score κ of a variant from the manifest's block ("" when absent).
std::string interval_score_sentence(const VariantFacts& facts);

// Words shared by the verdict's writers.
namespace verdict_words {
std::string join(const std::vector<std::string>& words);  // "a", "a and b", "a, b and c"
std::string digits(double x, int significant);            // "%.*g"; "nan"
std::string side_label(const VerdictSide& row);           // "P lower"
}  // namespace verdict_words

// The opening of a compare verdict: how many heads each assumption holds in, from the
// manifest's "assumptions" block (docs/compare-outputs.md). A missing key or a value of the
// wrong type throws nlohmann::json's exception (the caller names the file).
std::string assumptions_opening(const nlohmann::json& manifest);

// The opening of a simulate verdict: whether Assumptions 1–3 hold for what the generator
// realised, from a manifest point's "assumptions" block; empty when absent (d = ∞).
std::string realised_assumptions_opening(const nlohmann::json& point);

// "2–48, 927 and 1025" from verdict.csv's "2-48;927;1025" (at most `shown` items, then "…").
std::string size_ranges_text(const std::string& sizes, std::size_t shown = 6);

}  // namespace attngeo::reports
