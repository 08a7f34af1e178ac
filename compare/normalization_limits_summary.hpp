// The judging half of `attngeo normalization` (docs/design.md §14): per length bin, the first N
// at which a two-sample KS test across heads cannot tell the top-N distance d̃(N) from its
// random-selection expectation E — the predecessor paper's critical N (≈ 0.06·L in GPT-2).
#pragma once
#include <string>

namespace attngeo::compare {

// Reads DIR/distance.csv and the manifest's parameters (ks_level, length_bins), writes
// DIR/critical_n.csv (every bin and N) and DIR/critical_n_by_length.csv (the critical N per bin)
// and adds "critical_n" to DIR/manifest.json. InputError naming the file for a damaged input.
void summarise_normalization_limits(const std::string& dir);

}  // namespace attngeo::compare
