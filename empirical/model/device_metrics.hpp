// The O(n²·d) part of P/R for every head of a layer at once: the Gram matrices of the ranked
// contributions, formed by one batched float64 matmul on the capture's device (CPU or CUDA).
// The O(n²) certified counting stays in theory/, so device and reference agree exactly.
#pragma once
#include <torch/torch.h>
#include <Eigen/Dense>
#include <vector>

namespace attngeo::empirical {

// alpha: [H, n] float32 final query rows; values: [H_kv, n, d] float32 (query head h reads
// value head h / (H/H_kv)); orders: [H][n] the rank order π of each head (head_order).
// Returns [H] matrices G_h[k, l] = ⟨y_{π_k}, y_{π_l}⟩ with y_i = α_i v_i, in double.
std::vector<Eigen::MatrixXd> ranked_gram_batched(const torch::Tensor& alpha,
                                                 const torch::Tensor& values,
                                                 const std::vector<std::vector<int>>& orders);

}  // namespace attngeo::empirical
