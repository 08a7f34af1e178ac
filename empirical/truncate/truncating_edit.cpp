// The batched truncation of attention rows inside the torch forward; see truncating_edit.hpp.
// Each policy's mask equals keep_set_reference row by row (tests/empirical/test_truncate.cpp).
#include "empirical/truncate/truncating_edit.hpp"

#include <algorithm>
#include <limits>

namespace attngeo::empirical {
namespace {

// [B, H, rows, K] bool: the `N` keys of largest `score` per row, ties to the lower index. The
// N-th largest score is found by topk (its values do not depend on how it orders ties); every
// key above it is kept, and of the keys equal to it the first ones by index, as many as places
// are left: the keys a stable descending sort would put first, without sorting T per row.
torch::Tensor top_n_mask(const torch::Tensor& score, int N) {
    const std::int64_t keep = std::min<std::int64_t>(N, score.size(-1));
    const auto nth_largest = std::get<0>(torch::topk(score, keep, -1, /*largest=*/true,
                                                     /*sorted=*/false))
                                 .amin(-1, /*keepdim=*/true);
    const auto above = score > nth_largest;
    const auto tied = score == nth_largest;
    const auto places_left = keep - above.sum(-1, /*keepdim=*/true);
    return above | (tied & (tied.cumsum(-1) <= places_left));
}

// [1, 1, rows, K] bool: the N − 1 keys up to and including each row's query and token 0
// (keep_sink: the window policy), or the N keys up to it (the recent policy).
torch::Tensor window_mask(std::int64_t first_row, std::int64_t rows, std::int64_t T, int N,
                          bool keep_sink, torch::Device device) {
    const auto options = torch::TensorOptions().dtype(torch::kInt64).device(device);
    const auto key = torch::arange(T, options).unsqueeze(0);
    const auto query = torch::arange(first_row, first_row + rows, options).unsqueeze(1);
    const auto recent = (key > query - N + (keep_sink ? 1 : 0)) & (key <= query);
    return (keep_sink ? recent | (key == 0) : recent).unsqueeze(0).unsqueeze(0);
}

// [B, H, rows, K] bool from random_keep_set, row by row on the host, for the cut heads' long
// rows (every other row keeps every key: it is not truncated, or not by this configuration).
torch::Tensor random_mask(const TruncationCut& cut, int layer, std::int64_t first_row,
                          const torch::Tensor& probs) {
    const std::int64_t B = probs.size(0), H = probs.size(1), rows = probs.size(2),
                       T = probs.size(3);
    std::vector<std::uint8_t> mask(static_cast<std::size_t>(B * H * rows * T), 1);
    for (std::int64_t b = 0; b < B; ++b)
        for (std::int64_t h = 0; h < H; ++h) {
            if (!cut.cuts(layer, static_cast<int>(h))) continue;
            RandomRowKey key = cut.random;
            key.layer = layer;
            key.head = static_cast<int>(h);
            for (std::int64_t r = 0; r < rows; ++r) {
                const int t = static_cast<int>(first_row + r);
                if (t + 1 <= cut.N) continue;
                std::uint8_t* row = mask.data() + ((b * H + h) * rows + r) * T;
                std::fill(row, row + T, 0);
                for (int i : random_keep_set(key, t, cut.N))
                    row[i] = 1;
            }
        }
    return torch::from_blob(mask.data(), {B, H, rows, T}, torch::kUInt8)
        .to(probs.device(), torch::kBool, /*non_blocking=*/false, /*copy=*/true);
}

// The kept weights divided by their sum. Where that sum is 0 (every kept α underflowed in
// float32: a random or window key far from the row's mass) the division is 0/0, and the limit it
// stands for — the softmax over the kept keys alone — is taken from the scores instead.
torch::Tensor renormalised(const torch::Tensor& scores, const torch::Tensor& mask,
                           const torch::Tensor& kept, const torch::Tensor& kept_mass) {
    const auto divided = kept / kept_mass;
    const auto empty = kept_mass == 0;
    if (!empty.any().item<bool>()) return divided;
    const auto kept_scores =
        scores.masked_fill(mask.logical_not(), -std::numeric_limits<float>::infinity());
    return torch::where(empty, torch::softmax(kept_scores, -1), divided);
}

}  // namespace

torch::Tensor TruncatingEdit::keep_mask(int layer, std::int64_t first_row,
                                        const torch::Tensor& probs, const torch::Tensor& values,
                                        const torch::Tensor& long_rows) const {
    const std::int64_t rows = probs.size(2), T = probs.size(3);
    torch::Tensor mask;
    switch (cut_.policy) {
        case TruncationPolicy::attn:
            mask = top_n_mask(probs, cut_.N);
            break;
        case TruncationPolicy::contrib: {
            const auto norms = values.to(torch::kFloat32).norm(2, -1).unsqueeze(2);  // [B,H,1,T]
            mask = top_n_mask(probs * norms, cut_.N);
            break;
        }
        case TruncationPolicy::random:
            return random_mask(cut_, layer, first_row, probs);
        case TruncationPolicy::window:
        case TruncationPolicy::recent:
            mask = window_mask(first_row, rows, T, cut_.N, cut_.policy == TruncationPolicy::window,
                               probs.device())
                       .expand_as(probs);
            break;
    }
    return mask | long_rows.logical_not();
}

torch::Tensor TruncatingEdit::edit(int layer, std::int64_t first_row, std::int64_t tokens,
                                   const torch::Tensor& scores, const torch::Tensor& probs,
                                   const torch::Tensor& values) {
    const std::int64_t H = probs.size(1), rows = probs.size(2);
    std::vector<std::uint8_t> cut_heads(static_cast<std::size_t>(H));
    for (std::int64_t h = 0; h < H; ++h)
        cut_heads[h] = cut_.cuts(layer, static_cast<int>(h));
    if (std::none_of(cut_heads.begin(), cut_heads.end(), [](std::uint8_t c) { return c != 0; }))
        return probs;
    const auto index_options = torch::TensorOptions().dtype(torch::kInt64).device(probs.device());
    // [1, 1, rows, 1]: rows whose query has more than N keys (0..t); the others stay untouched,
    // so N ≥ T reproduces the untruncated forward bit for bit, renormalised or not.
    const auto long_rows = (torch::arange(first_row, first_row + rows, index_options) + 1 > cut_.N)
                               .view({1, 1, rows, 1});
    const auto mask = keep_mask(layer, first_row, probs, values, long_rows);
    const auto kept = probs.masked_fill(mask.logical_not(), 0.0f);
    const auto kept_mass = kept.sum(-1, /*keepdim=*/true);
    auto used = cut_.renorm
                    ? torch::where(long_rows, renormalised(scores, mask, kept, kept_mass), probs)
                    : kept;
    const auto head_is_cut = torch::from_blob(cut_heads.data(), {H}, torch::kUInt8)
                                 .to(probs.device(), torch::kBool, false, true)
                                 .view({1, H, 1, 1});
    used = torch::where(head_is_cut, used, probs);
    measure(first_row, tokens, probs, used, kept_mass, long_rows, values);  // a cut head's layer
    return used;
}

void TruncatingEdit::measure(std::int64_t first_row, std::int64_t tokens,
                             const torch::Tensor& probs, const torch::Tensor& used,
                             const torch::Tensor& kept_mass, const torch::Tensor& long_rows,
                             const torch::Tensor& values) {
    const std::int64_t B = probs.size(0), rows = probs.size(2);
    const std::int64_t lo = std::max<std::int64_t>(cut_.eval_first, first_row),
                       hi = std::min<std::int64_t>(tokens - 1, first_row + rows);  // rows lo..hi−1
    if (lo >= hi) return;
    // The cut heads of this layer are contiguous: one under scope head, all of them otherwise;
    // the product below is taken over those alone.
    const std::int64_t h0 = cut_.scope == TruncationScope::head ? cut_.head : 0,
                       heads = cut_.scope == TruncationScope::head ? 1 : probs.size(1);
    const auto r0 = lo - first_row, r1 = hi - first_row;
    const auto change = (probs - used).slice(1, h0, h0 + heads).slice(2, r0, r1);
    const auto head_values = values.slice(1, h0, h0 + heads).to(torch::kFloat32);
    const auto error = torch::matmul(change, head_values).norm(2, -1);  // [B, heads, r]
    const auto dropped = torch::where(long_rows, 1.0f - kept_mass, torch::zeros_like(kept_mass))
                             .slice(1, h0, h0 + heads)
                             .slice(2, r0, r1)
                             .squeeze(-1);
    const auto host_error = error.to(torch::kCPU, torch::kFloat64).contiguous();
    const auto host_dropped = dropped.to(torch::kCPU, torch::kFloat64).contiguous();
    const double* e = host_error.data_ptr<double>();
    const double* m = host_dropped.data_ptr<double>();
    const std::int64_t n = r1 - r0;
    // A fixed order on the host, so the means do not depend on libtorch's reduction threads.
    for (std::int64_t b = 0; b < B; ++b)
        for (std::int64_t h = 0; h < heads; ++h) {
            for (std::int64_t r = 0; r < n; ++r) {
                error_sum_ += e[(b * heads + h) * n + r];
                dropped_sum_ += m[(b * heads + h) * n + r];
            }
            rows_ += n;
        }
}

}  // namespace attngeo::empirical
