// Top-N truncation of attention rows for `attngeo truncate` (docs/design.md §12): which keys a
// head keeps at a query under each policy (plain per-row references, and the seeded random
// subset both paths share), the evaluation positions, and the next-token measures from logits.
// Torch-free (attngeo::empirical_core); the batched torch path is truncating_edit.hpp.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace attngeo::empirical {

// Which N keys a truncated head keeps at query t (of the keys 0..t it may attend to).
enum class TruncationPolicy {
    attn,     // the N largest α (ties: the lower index, as I_N)
    contrib,  // the N largest α_i‖v_i‖ (ties: the lower index)
    random,   // N distinct keys drawn uniformly (Philox keyed by seed, window, layer, head, t)
    window,   // token 0 and the N − 1 most recent keys (StreamingLLM's sink + recent window)
    recent,   // the N most recent keys, without the sink (StreamingLLM's plain window)
};
// Every policy, in the order the help and errors list them.
const std::vector<TruncationPolicy>& truncation_policies();
const char* to_string(TruncationPolicy policy);
// "attn,contrib,..." (each at most once, in the order given); InputError naming --policy.
std::vector<TruncationPolicy> parse_truncation_policies(const std::string& list);

// Which heads one truncated forward cuts.
enum class TruncationScope {
    all,    // every head of every layer at once (one N for all heads)
    layer,  // every head of one layer
    head,   // one head
};
const char* to_string(TruncationScope scope);
TruncationScope parse_truncation_scope(const std::string& text);  // InputError naming --scope

// --renorm no|yes|both: the settings to run, false (keep the original weights: the head's output
// is s(N)) before true (divide the kept weights by their sum). InputError naming --renorm.
std::vector<bool> parse_renorm(const std::string& text);

// What keys the random policy's draw for one row: the run's --seed, the window's index in run
// order (so that shards draw what the unsharded run draws), the layer and the query head.
struct RandomRowKey {
    std::uint64_t seed = 0;
    std::int64_t window = 0;
    int layer = 0, head = 0;
};

// The random policy's keep set at query t: min(N, t + 1) distinct keys of 0..t, ascending. A
// partial Fisher–Yates shuffle whose unbiased bounded integers come from the 32-bit words of
// Philox4x32-10 (Random123) with key {seed low, seed high} and counters {block, window,
// layer·2¹⁶ + head, t}: every row is its own stream, whatever the batch or thread.
std::vector<int> random_keep_set(const RandomRowKey& key, int t, int N);

// The plain reference of every policy for one row: the keys of 0..t kept at query t with N,
// ascending (all of 0..t when t + 1 ≤ N). alpha: [t + 1] the row's weights; value_norms:
// [t + 1] ‖v_i‖ (read by contrib only). std::domain_error for t < 0 or N < 1.
std::vector<int> keep_set_reference(TruncationPolicy policy, const float* alpha,
                                    const float* value_norms, int t, int N,
                                    const RandomRowKey& key);

// --eval-positions all|last:K: the query positions whose next-token prediction is scored,
// t = first..T − 2 of a window of T tokens (the last position has no next token).
struct EvalPositions {
    int last = 0;  // 0: all positions 0..T − 2; K > 0: the last K of them
    std::string text() const;
    // The first scored position of a window of `context` tokens.
    int first(int context) const { return last == 0 ? 0 : context - 1 - last; }
};
// InputError naming --eval-positions; K must be 1..context − 1.
EvalPositions parse_eval_positions(const std::string& text, int context);

// log-softmax of one row of logits in float64 (max-shifted, then log Σ exp).      [V] → [V]
void log_softmax_row(const float* logits, int vocab, std::vector<double>& out);

// One position's next-token comparison of the full and the truncated forward, from their
// float64 log-probabilities [V]: the truncated minus the full negative log-likelihood of
// `target`, KL(full ‖ truncated) = Σ p (log p − log q), and whether the argmaxes (ties: the
// lower id) agree.
struct NextTokenComparison {
    double delta_nll = 0, kl = 0;
    bool top1_agrees = true;
};
NextTokenComparison compare_next_token(const std::vector<double>& full,
                                       const std::vector<double>& truncated, std::int64_t target);

}  // namespace attngeo::empirical
