// Documents to windows for extract (docs/design.md §6): the corpus reader, the seeded document
// order and the cut into BOS-led windows of `context` tokens. Torch-free (attngeo::empirical_core).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace attngeo::empirical {

// --bos: whether a window starts with the model's BOS id.
enum class BosPolicy {
    automatic,  // auto: added unless the document already starts with it
    always,     // yes
    never,      // no
};
// "auto" | "yes" | "no"; InputError naming --bos otherwise.
BosPolicy parse_bos_policy(const std::string& text);
const char* to_string(BosPolicy policy);

// Documents of a corpus: plain text separated by blank lines, or JSONL (.jsonl) with "text".
// InputError naming --corpus and the line.
std::vector<std::string> read_corpus(const std::string& path);

// Deterministic Fisher–Yates with SplitMix64 (Steele, Lea, Flood 2014), so the order is the
// same on every platform.
void seeded_shuffle(std::vector<std::vector<std::int64_t>>& documents, std::uint64_t seed);

// Cuts documents into windows: BOS + the next context − 1 tokens (automatic adds it unless the
// document starts with it; a document that starts with BOS and has exactly `context` ids is one
// window as given), skipping documents that are too short; stride > 0 takes more windows per
// document, this many tokens apart; max_docs > 0 stops after that many used documents.
// bos_id < 0 (the model has none): InputError naming --bos and `missing_bos` (why there is
// none) as soon as a window needs one.
// Returns the windows and sets `skipped`.
std::vector<std::vector<std::int64_t>> make_windows(
    const std::vector<std::vector<std::int64_t>>& documents, int context, int bos_id, BosPolicy bos,
    int stride, std::int64_t max_docs, std::int64_t& skipped,
    const std::string& missing_bos = "no bos_token_id in its config.json");

}  // namespace attngeo::empirical
