// The attention sink as the 2024–26 literature measures it, per window, torch-free (issue 43):
// the sink rate of Gu et al. (ICLR 2025), the sink token's key geometry, secondary sinks and the
// massive activations of Sun et al. (2024). Extract streams them per window (layer_sinks,
// window_secondary_sinks); each measure has a plain computation here a test can check by hand.
#pragma once
#include <cstdint>
#include <vector>

#include "theory/head_regime.hpp"

namespace attngeo::empirical {

// Gu et al.'s default threshold ε on a head's mean attention to a token.
using theory::kSinkThreshold;

// One head's attention rows of one window: row r holds α at query position positions[r] over
// the keys 0..keys−1 (zero beyond the position: causal).
struct AttentionRows {
    const float* alpha = nullptr;    // [rows, keys], row-major
    const int* positions = nullptr;  // [rows], ascending, each in 0..keys−1
    int rows = 0;
    int keys = 0;
};

// Gu et al.'s α(k) = mean over the query rows t ≥ k of α_t[k], for every key k: [keys]. NaN
// for a key no row sees. Sums in double, rows in order.
std::vector<double> mean_attention_by_key(const AttentionRows& head);

// The share of `head_means` (one head's α(k) each) above `epsilon` (strictly): the sink rate
// Sink_k^ε over those heads. NaN entries count as not above; an empty list gives NaN.
double sink_rate(const std::vector<double>& head_means, double epsilon = kSinkThreshold);

// A token other than position 0 that collects attention in many heads.
struct SecondarySink {
    int position = 0;         // k ≥ 1
    int heads = 0;            // heads whose α(k) > ε
    double largest_mean = 0;  // the largest α(k) over the heads
};

// The keys k ≥ 1 seen by at least `min_rows` query rows whose α(k) exceeds ε in at least
// `min_heads` heads. `by_head` is [heads][keys] (mean_attention_by_key of each head), `rows_seeing`
// [keys] the number of query rows t ≥ k. Ascending positions.
std::vector<SecondarySink> secondary_sinks(const std::vector<std::vector<double>>& by_head,
                                           const std::vector<int>& rows_seeing, int min_rows,
                                           int min_heads, double epsilon = kSinkThreshold);

// The number of rows at positions ≥ k, for every key k: [keys].
std::vector<int> rows_seeing_each_key(const int* positions, int rows, int keys);

// The sink token's key geometry in one head of one window.
struct KeyGeometry {
    double key_norm_ratio = 0;  // ‖k_0‖ / median_{1≤j<T} ‖k_j‖ (NaN when T = 1 or the median is 0)
    double cos_query_sink = 0;  // mean over query rows t ≥ 1 of cos(q_t, k_0)
    double cos_query_rest = 0;  // mean over rows t ≥ 1 of mean_{1≤j≤t} cos(q_t, k_j)
    int rows = 0;               // query rows t ≥ 1 averaged
};

// queries [rows, d] at `positions` (as AttentionRows), keys [T, d] of the same head (a GQA
// query head reads its key/value head's keys). A cosine with a zero vector is 0.
KeyGeometry key_geometry(const float* queries, const int* positions, int rows, const float* keys,
                         int tokens, int d_head);

// Sun et al.'s massive activations in one layer's hidden state of one window.
struct MassiveActivation {
    double largest = 0;  // max |h_{t,i}|
    double median = 0;   // median |h_{t,i}| over every entry
    double ratio = 0;    // largest / median (inf when the median is 0 and largest > 0)
    int token = 0;       // where the largest sits (the first in row-major order on ties)
    int dim = 0;
    bool massive = false;  // their rule: largest > 100 and largest ≥ 1000 × median
};

// hidden [tokens, dims], row-major.
MassiveActivation massive_activation(const float* hidden, int tokens, int dims);

// key_geometry for every query row t = 0..tokens−1 (queries [tokens, d_head]) in O(tokens·d_head):
// mean_{1≤j≤t} cos(q_t, k_j) = q̂_t · (Σ_{j=1..t} k̂_j) / t with the unit keys' prefix sum, in
// double. Equals key_geometry with positions 0..tokens−1 up to rounding.
KeyGeometry key_geometry_all_rows(const float* queries, const float* keys, int tokens, int d_head);

// One layer of one window as the forward hands it to the sink measures (ForwardEngine's
// LayerView): every query row of the window was measured.
struct SinkInputs {
    const double* key_attention = nullptr;  // [H, T] Σ_{t≥k} α_t[k] over every query row t
    const float* queries = nullptr;         // [H, T, d_head] after the rotary embedding
    const float* keys = nullptr;            // [H_kv, T, d_head] (query head h reads h / (H/H_kv))
    const float* hidden = nullptr;          // [T, hidden] the residual stream after the layer
    int heads = 0, kv_heads = 0, tokens = 0, d_head = 0, hidden_size = 0;
};

// The sink measures of one layer of one window.
struct LayerSinks {
    std::vector<double> mean_by_key;    // [H, T] Gu et al.'s α(k) of each head
    std::vector<KeyGeometry> geometry;  // [H]
    MassiveActivation massive;          // of the layer's output
    double sink_attention(int head) const {
        return mean_by_key[static_cast<std::size_t>(head) * (mean_by_key.size() / geometry.size())];
    }
};
LayerSinks layer_sinks(const SinkInputs& in);

// A window's secondary sinks over every layer and head (docs/design.md §15): keys seen by at
// least half of the window's rows (k ≤ T/2) with α(k) > ε in at least
// secondary_min_heads(layers · heads) heads, the `keep` with the most heads (ties: the earlier
// position), in that order.
std::vector<SecondarySink> window_secondary_sinks(const std::vector<LayerSinks>& layers, int tokens,
                                                  std::size_t keep);
// The head count a secondary sink needs: 2, or 5% of the model's heads when that is more.
int secondary_min_heads(int model_heads);

}  // namespace attngeo::empirical
