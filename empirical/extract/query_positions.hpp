// Which query positions of a window are measured (`--queries` of extract and normalization,
// docs/design.md §14) and the bins of context length L = t + 1 their rows are averaged in.
// Torch-free (attngeo::empirical_core).
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace attngeo::empirical {

// --queries: the query positions t of a window to measure, ascending. "last" → {context − 1};
// "all" → 0..context − 1; "every:K" → context − 1, context − 1 − K, … ≥ 0 (anchored at the
// last, so the position extract measures is always one); "positions:a,b,…" → those, each
// 0 ≤ t < context. InputError naming --queries otherwise.
std::vector<int> parse_query_positions(const std::string& text, int context);

// A bin of context lengths L = t + 1, inclusive, and the shortest L measured in it: the sizes
// N ≤ shortest are the ones every query of the bin has.
struct LengthBin {
    int lo = 1, hi = 1;
    int shortest = 1;
};
// --length-bins K: K bins of equal width over L = 1..context (bin b: lo = 1 + ⌊b·context/K⌋,
// hi = ⌊(b+1)·context/K⌋; K is capped at context), keeping the bins a position falls in.
// InputError naming --length-bins for K < 1.
std::vector<LengthBin> make_length_bins(int count, int context, const std::vector<int>& positions);

// The bins as a manifest lists them: [{lo, hi, shortest, positions, length_mean}, …] with
// `positions` the chosen positions in the bin and length_mean their mean L.
nlohmann::json length_bins_json(const std::vector<LengthBin>& bins,
                                const std::vector<int>& positions);

}  // namespace attngeo::empirical
