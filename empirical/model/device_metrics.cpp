// Batched Gram matrices of ranked contributions on the model's device; see device_metrics.hpp.
#include "empirical/model/device_metrics.hpp"

#include <stdexcept>
#include <string>

namespace attngeo::empirical {

std::vector<Eigen::MatrixXd> ranked_gram_batched(const torch::Tensor& alpha,
                                                 const torch::Tensor& values,
                                                 const std::vector<std::vector<int>>& orders) {
    if (alpha.dim() != 2 || values.dim() != 3 || alpha.size(1) != values.size(1) ||
        values.size(0) == 0 || alpha.size(0) % values.size(0) != 0 ||
        static_cast<std::int64_t>(orders.size()) != alpha.size(0))
        throw std::invalid_argument(
            "ranked_gram_batched: alpha [H, n], values [H_kv, n, d] and "
            "H orders expected");
    const std::int64_t H = alpha.size(0), n = alpha.size(1), d = values.size(2);
    const std::int64_t group = H / values.size(0);
    std::vector<std::int64_t> flat;
    flat.reserve(H * n);
    for (const auto& order : orders) {
        if (static_cast<std::int64_t>(order.size()) != n)
            throw std::invalid_argument("ranked_gram_batched: an order of " +
                                        std::to_string(order.size()) + " tokens, expected " +
                                        std::to_string(n));
        flat.insert(flat.end(), order.begin(), order.end());
    }
    torch::NoGradGuard no_grad;
    const auto device = values.device();
    const auto index = torch::tensor(flat, torch::kInt64).view({H, n}).to(device);
    // float64 throughout: the inputs are float32, so y_i = α_i v_i is exact in double and only
    // the matmul rounds, as theory/'s error bounds assume.
    const auto a = alpha.to(torch::kFloat64).gather(1, index);                          // [H, n]
    const auto v = values.to(torch::kFloat64).repeat_interleave(group, 0);              // [H, n, d]
    const auto y = v.gather(1, index.unsqueeze(2).expand({H, n, d})) * a.unsqueeze(2);  // [H, n, d]
    const auto gram = torch::bmm(y, y.transpose(1, 2)).to(torch::kCPU).contiguous();    // [H, n, n]
    std::vector<Eigen::MatrixXd> out(H);
    const double* g = gram.data_ptr<double>();
    for (std::int64_t h = 0; h < H; ++h) {
        // Row-major [n, n] into column-major Eigen: G is symmetric in exact arithmetic but not
        // necessarily bit-symmetric after the matmul, so copy with the transpose explicitly.
        out[h] = Eigen::Map<
            const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(
            g + h * n * n, n, n);
    }
    return out;
}

}  // namespace attngeo::empirical
