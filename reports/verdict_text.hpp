// The verdict's words (docs/design.md §7, verdict III): a bottom line of a few sentences across
// every variant (states, the falsified sides with their worst points, the informative sides,
// the information share, the split replication), the table, and per variant only what differs
// between them. Every sentence is generated from verdict.csv and the manifest's per-variant facts.
#pragma once
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "reports/verdict.hpp"

namespace attngeo::reports {

// The verdict of verdict.csv's rows: the bottom line (after `opening`, ending with `closing`),
// the table, the per-variant paragraphs.
std::string judged_verdict_html(const std::vector<VerdictSide>& rows,
                                const std::map<std::string, VariantFacts>& facts,
                                const VerdictWords& words, const std::string& opening,
                                const std::string& closing);

// The bottom line's sentences alone (HTML paragraphs), as judged_verdict_html opens with them:
// the states per variant, the falsified and contradicted sides, the informative sides, the
// information share and the split replication.
std::string bottom_line_html(const std::vector<VerdictSide>& rows,
                             const std::map<std::string, VariantFacts>& facts,
                             const VerdictWords& words);

// The bottom line's block: `opening`, bottom_line_html, Theorem 1's hypotheses and the points
// set apart, `closing`.
std::string bottom_line_block(const std::vector<VerdictSide>& rows,
                              const std::map<std::string, VariantFacts>& facts,
                              const VerdictWords& words, const std::string& opening,
                              const std::string& closing);

// "multiplier bootstrap over 1000 trials", "Holm over 12 documents".
std::string band_text(const std::string& method, int units, const std::string& unit_noun);
// A state in words: "holds", "holds but says little", "falsified for every κ", ….
std::string state_words(const std::string& state);
// A κ set of verdict.csv in words: "any κ", "no κ", "κ ≥ 355", "κ in [0.01, 5] or κ ≥ 30".
std::string kappa_set_words(const std::string& kappa_set);

// Words shared by the verdict's writers.
namespace verdict_words {
std::string join(const std::vector<std::string>& words);  // "a", "a and b", "a, b and c"
std::string digits(double x, int significant);            // "%.*g"; "nan"
std::string side_label(const VerdictSide& row);           // "P lower"
}  // namespace verdict_words

// The opening of a compare verdict: how many heads each assumption holds in, from the
// manifest's "assumptions" block (docs/commands/compare.md). A missing key or a value of the
// wrong type throws nlohmann::json's exception (the caller names the file).
std::string assumptions_opening(const nlohmann::json& manifest);

// The opening of a simulate verdict: whether Assumptions 1–3 hold for what the generator
// realised, from a manifest point's "assumptions" block; empty when absent (d = ∞).
std::string realised_assumptions_opening(const nlohmann::json& point);

// "2–48, 927 and 1025" from verdict.csv's "2-48;927;1025" (at most `shown` items, then "…").
std::string size_ranges_text(const std::string& sizes, std::size_t shown = 6);
// The N of verdict.csv's "2-5;9" as 2, 3, 4, 5, 9.
std::vector<int> expand_sizes(const std::string& sizes);

}  // namespace attngeo::reports
