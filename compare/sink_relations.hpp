// The attention sink as the literature measures it, beside the paper's quantities (issue 43,
// docs/design.md §15): across heads, Pearson's r of each head's sink rate and sink key-norm
// ratio with its recall R(r_min, N) at every N, its λ and its ρ0, with heads as the sample.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "compare/correlation.hpp"

namespace attngeo::compare {

struct SinkRelationRow {
    std::string measure;  // sink_rate (the head's share of windows with α(0) > ε) | key_norm_ratio
    std::string quantity;  // recall (R(r_min, N)) | lambda | rho0
    int N = 0;             // recall's N; 0 for lambda and rho0
    int heads = 0;         // units correlated (heads, or key/value heads with group > 1)
    // r and its head-level interval tanh(atanh r ± atanh c), c the max-|r| permutation critical
    // value (compare/max_correlation_test.hpp; over the N of the recall curve together, alone
    // for λ and ρ0); the partial r given the layer with its own (within-layer) interval. NaN
    // where undefined (a variance is 0).
    double corr = 0, head_lo = 0, head_hi = 0;
    double partial = 0, partial_lo = 0, partial_hi = 0;
};

// The rows in the order measure (sink_rate, key_norm_ratio) × quantity (recall at each N, then
// lambda, rho0); none when the arrays hold no sink measure (an older or planted folder, or every
// window unmeasured). A unit's values are its heads' means over the measured windows (a GQA
// group's heads averaged when group > 1, as corr_rho0.csv). Deterministic in `seed`.
std::vector<SinkRelationRow> sink_relations(const PerDocArrays& arrays, int group,
                                            std::uint64_t seed);

// sink_relations.csv; an undefined value is an empty field, and N is empty for λ and ρ0.
void write_sink_relations_csv(const std::vector<SinkRelationRow>& rows, const std::string& path);

}  // namespace attngeo::compare
