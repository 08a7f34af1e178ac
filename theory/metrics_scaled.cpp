// Selection metrics of values far from 1 (|v| near 1e300 or 1e-300, whose squared distances
// overflow or underflow a double): the values are scaled by an exact power of two first, which
// changes no comparison, and the Euclidean radii are scaled back (docs/design.md §2).
#include <cmath>
#include <optional>

#include "common/errors.hpp"
#include "theory/metrics.hpp"
#include "theory/metrics_detail.hpp"

namespace attngeo::theory {
using detail::kUnscaledExponent;

std::optional<int> unit_scale_exponent(const TokenGeometry& tokens) {
    double largest = 0;
    for (Eigen::Index k = 0; k < tokens.values.size(); ++k)
        largest = std::max(largest, std::abs(tokens.values.data()[k]));
    if (!(largest > 0) || !std::isfinite(largest)) return 0;
    // Values of ordinary size are left as they are, so their rows keep their bits (the cosine
    // distance's absolute 1e-12 guard is not scale-free); beyond 2^±400, well inside the plain
    // paths' range (metrics_detail.hpp), they are brought to [1/2, 1).
    const int magnitude = std::ilogb(largest);
    if (magnitude >= -kUnscaledExponent && magnitude < kUnscaledExponent) return 0;
    const int exponent = -magnitude - 1;  // largest · 2^exponent in [1/2, 1)
    if (exponent < 0)  // scaling down: a value far below the largest may lose bits
        for (Eigen::Index k = 0; k < tokens.values.size(); ++k) {
            const double x = tokens.values.data()[k];
            if (std::ldexp(std::ldexp(x, exponent), -exponent) != x) return std::nullopt;
        }
    return exponent;
}

std::vector<SelectionMetrics> selection_metrics_scaled(TokenGeometry tokens,
                                                       const std::vector<int>& sizes,
                                                       Ranking ranking, Distance distance,
                                                       bool all_sizes) {
    const std::optional<int> exponent = unit_scale_exponent(tokens);
    if (!exponent)
        throw_domain_error("selection_metrics_scaled",
                           "the values span more than a double's exponent range: no common "
                           "power-of-two scale keeps them all exact");
    if (*exponent != 0)
        tokens.values = tokens.values.unaryExpr([&](double x) { return std::ldexp(x, *exponent); });
    std::vector<SelectionMetrics> rows =
        all_sizes ? selection_metrics_gram(tokens, sizes, ranking, distance)
                  : selection_metrics_reference(tokens, sizes, ranking, distance);
    if (*exponent != 0 && distance == Distance::euclidean)
        for (SelectionMetrics& m : rows) {
            m.r_min = std::ldexp(m.r_min, -*exponent);
            m.r_max = std::ldexp(m.r_max, -*exponent);
        }
    return rows;
}

}  // namespace attngeo::theory
