// The batched torch path of truncation (docs/design.md §12): an AttentionEdit that keeps, for the
// heads one configuration cuts, the N keys its policy chooses at every query and zeroes the rest
// (divided by the kept sum with renormalisation; the softmax of the kept keys' scores where every
// kept weight underflowed to 0 in float32), and measures on those heads the dropped mass
// and the output error at the evaluation positions. truncation.hpp holds the plain references.
// (Internal to empirical/: includes torch headers.)
#pragma once
#include <cstdint>
#include <vector>

#include "empirical/model/transformer.hpp"
#include "empirical/truncate/truncation.hpp"

namespace attngeo::empirical {

// One truncated forward's configuration.
struct TruncationCut {
    TruncationPolicy policy = TruncationPolicy::attn;
    int N = 1;
    bool renorm = false;
    TruncationScope scope = TruncationScope::all;
    int layer = -1, head = -1;  // the unit: the layer (scope layer), the layer and head (head)
    RandomRowKey random;        // seed and window (layer and head are filled per row)
    int eval_first = 0;         // measures over query rows eval_first..T − 2

    bool cuts(int at_layer, int at_head) const {
        return scope == TruncationScope::all ||
               (at_layer == layer && (scope == TruncationScope::layer || at_head == head));
    }
};

class TruncatingEdit : public AttentionEdit {
  public:
    explicit TruncatingEdit(const TruncationCut& cut) : cut_(cut) {}
    torch::Tensor edit(int layer, std::int64_t first_row, std::int64_t tokens,
                       const torch::Tensor& scores, const torch::Tensor& probs,
                       const torch::Tensor& values) override;

    // Means over the cut heads and evaluation rows of 1 − Σ_kept α (the total variation between
    // the original and the used weights) and of ‖Σ_i (α_i − α'_i) v_i‖ (the head's output change
    // in value space: ‖Σ_{i∉I_N} α_i v_i‖ with the weights kept, (1 − m)‖μ_tail − μ_kept‖
    // renormalised). 0 when nothing was measured.
    double dropped_mass() const { return rows_ ? dropped_sum_ / rows_ : 0; }
    double output_error() const { return rows_ ? error_sum_ / rows_ : 0; }

  private:
    // [B, H, rows, K] bool: the keys each row keeps (every key in rows with ≤ N keys).
    torch::Tensor keep_mask(int layer, std::int64_t first_row, const torch::Tensor& probs,
                            const torch::Tensor& values, const torch::Tensor& long_rows) const;
    // Evaluation rows are eval_first..tokens − 2 of the sequence.
    void measure(std::int64_t first_row, std::int64_t tokens, const torch::Tensor& probs,
                 const torch::Tensor& used, const torch::Tensor& kept_mass,
                 const torch::Tensor& long_rows, const torch::Tensor& values);

    TruncationCut cut_;
    double dropped_sum_ = 0, error_sum_ = 0;
    std::int64_t rows_ = 0;
};

}  // namespace attngeo::empirical
