// The attention rows of chosen query positions as the forward computes them (scores and
// weights, every layer and head), for extract --queries and normalization (docs/design.md §14).
// Internal to empirical/ (torch headers).
#pragma once
#include <algorithm>
#include <cstring>
#include <limits>
#include <vector>

#include "empirical/model/transformer.hpp"

namespace attngeo::empirical {

// Keeps the scores and weights of the chosen query rows of every layer as the forward computes
// them, and leaves the forward unchanged (it returns the weights it was given).
class QueryRowRecorder : public AttentionEdit {
  public:
    QueryRowRecorder(int layers, int heads, std::vector<int> positions)
        : heads_(heads), positions_(std::move(positions)), scores_(layers), alpha_(layers) {}

    torch::Tensor edit(int layer, std::int64_t first_row, std::int64_t tokens,
                       const torch::Tensor& scores, const torch::Tensor& probs,
                       const torch::Tensor&) override {
        const std::int64_t rows = scores.size(2);
        if (tokens != tokens_) resize(static_cast<int>(tokens));
        std::vector<std::int64_t> local, slots;
        for (std::size_t p = 0; p < positions_.size(); ++p)
            if (positions_[p] >= first_row && positions_[p] < first_row + rows) {
                local.push_back(positions_[p] - first_row);
                slots.push_back(static_cast<std::int64_t>(p));
            }
        if (local.empty()) return probs;
        const auto index = torch::tensor(local, torch::kInt64).to(scores.device());
        copy_rows(scores[0].index_select(1, index), slots, scores_[layer],
                  -std::numeric_limits<float>::infinity());
        copy_rows(probs[0].index_select(1, index), slots, alpha_[layer], 0.0f);
        return probs;
    }

    // [H, P, T] of `layer`: row p holds query position positions[p] over the keys.
    const float* layer_rows(int layer) const { return alpha_[layer].data(); }
    // [T] of query row `slot` (positions()[slot]) of (layer, head).
    const float* scores(int layer, int head, std::size_t slot) const {
        return scores_[layer].data() + offset(head, slot);
    }
    const float* alpha(int layer, int head, std::size_t slot) const {
        return alpha_[layer].data() + offset(head, slot);
    }

  private:
    // Buffers for windows of `tokens` keys (the first window, or a window of another length).
    void resize(int tokens) {
        tokens_ = tokens;
        const std::size_t floats = static_cast<std::size_t>(heads_) * positions_.size() * tokens;
        for (std::size_t l = 0; l < scores_.size(); ++l) {
            scores_[l].assign(floats, 0.0f);
            alpha_[l].assign(floats, 0.0f);
        }
    }
    std::size_t offset(int head, std::size_t slot) const {
        return (static_cast<std::size_t>(head) * positions_.size() + slot) * tokens_;
    }
    // rows: [H, k, K] on any device → the slots of `target` ([H, P, T] on the host), the keys
    // from K on (masked for these rows) set to `masked`.
    void copy_rows(const torch::Tensor& rows, const std::vector<std::int64_t>& slots,
                   std::vector<float>& target, float masked) const {
        const auto host = rows.to(torch::kCPU, torch::kFloat32).contiguous();
        const float* data = host.data_ptr<float>();
        const std::size_t K = static_cast<std::size_t>(host.size(2));
        for (int h = 0; h < heads_; ++h)
            for (std::size_t k = 0; k < slots.size(); ++k) {
                float* row = target.data() + offset(h, slots[k]);
                std::memcpy(row, data + (static_cast<std::size_t>(h) * slots.size() + k) * K,
                            sizeof(float) * K);
                std::fill(row + K, row + tokens_, masked);
            }
    }

    int heads_, tokens_ = 0;
    std::vector<int> positions_;
    std::vector<std::vector<float>> scores_, alpha_;  // [layers] of [H, P, T]
};

}  // namespace attngeo::empirical
