// The plain per-N reference of the selection metrics (docs/design.md §2): for every N, s(N) from
// scratch and every distance directly. Its own ranking (std::sort on a total order), so that the
// Gram path's selection_order is checked against something independent.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "theory/exact_distance.hpp"
#include "theory/metrics.hpp"
#include "theory/metrics_detail.hpp"

namespace attngeo::theory {
namespace {

using detail::finish_selection_row;
using detail::kInf;

// π by score descending, ties to the lower index, as docs/design.md §2 defines I_N.
std::vector<int> reference_order(const Eigen::VectorXd& scores) {
    std::vector<int> order(scores.size());
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(),
              [&](int a, int b) { return scores[a] != scores[b] ? scores[a] > scores[b] : a < b; });
    return order;
}

// The Euclidean reference on y [n, d] (token order) ranked by `order`: every comparison
// through ExactShiftedDistances (its double tier, then big integers), so the counts are those
// of exact arithmetic on y; the radii are the fixed double evaluation at the exact extreme.
std::vector<SelectionMetrics> euclidean_reference(const RowMatrix& y, const std::vector<int>& order,
                                                  const std::vector<int>& sizes) {
    const int n = static_cast<int>(y.rows());
    RowMatrix ranked(n, y.cols());
    for (int k = 0; k < n; ++k)
        ranked.row(k) = y.row(order[k]);
    ExactShiftedDistances exact(ranked);
    std::vector<int> tokens(n);
    std::iota(tokens.begin(), tokens.end(), 0);
    std::vector<SelectionMetrics> rows;
    for (int N : sizes) {
        exact.set_size(N);
        SelectionMetrics m;
        m.N = N;
        const int max_in = exact.extreme(tokens.data(), N, true);
        m.r_max = std::sqrt(std::max(exact.radius_squared(max_in), 0.0));
        if (N < n) {
            const int min_out = exact.extreme(tokens.data() + N, n - N, false);
            m.r_min = std::sqrt(std::max(exact.radius_squared(min_out), 0.0));
            for (int l = 0; l < n; ++l) {
                const ExactShiftedDistances::Comparison c =
                    exact.compare(l, l < N ? min_out : max_in);
                (l < N ? m.K_in : m.K_out) += c.at_most;
                m.exact_decisions += c.exact;
            }
        }
        finish_selection_row(m, n);
        rows.push_back(m);
    }
    return rows;
}

// One cosine row: the double kernel on every token, radii and counts from the extremes.
SelectionMetrics cosine_reference_row(const RowMatrix& y, const std::vector<int>& order, int N) {
    const int n = static_cast<int>(y.rows());
    const int d = static_cast<int>(y.cols());
    const std::vector<double> s = selection_centroid(y, order, N);
    const double s_norm = euclidean_norm(s.data(), d);
    std::vector<char> selected(n, 0);
    for (int k = 0; k < N; ++k)
        selected[order[k]] = 1;
    std::vector<double> D(n);
    double max_in = -kInf, min_out = kInf;
    for (int l = 0; l < n; ++l) {
        D[l] = cosine_distance(s.data(), s_norm, y.row(l).data(), d);
        if (selected[l])
            max_in = std::max(max_in, D[l]);
        else
            min_out = std::min(min_out, D[l]);
    }
    SelectionMetrics m;
    m.N = N;
    m.r_max = std::sqrt(std::max(max_in, 0.0));
    m.r_min = N < n ? std::sqrt(std::max(min_out, 0.0)) : kInf;
    for (int l = 0; l < n; ++l) {
        if (selected[l] && D[l] <= min_out) ++m.K_in;
        if (!selected[l] && D[l] <= max_in) ++m.K_out;
    }
    finish_selection_row(m, n);
    return m;
}

}  // namespace

std::vector<SelectionMetrics> selection_metrics_reference(const TokenGeometry& tokens,
                                                          const std::vector<int>& sizes,
                                                          Ranking ranking, Distance distance) {
    validate_token_geometry(tokens, "selection_metrics_reference");
    const int n = static_cast<int>(tokens.alpha.size());
    detail::check_selection_sizes(sizes, n, "selection_metrics_reference");
    const std::vector<int> order = reference_order(selection_scores(tokens, ranking));
    const RowMatrix y = selection_contributions(tokens);
    if (distance == Distance::euclidean) return euclidean_reference(y, order, sizes);
    std::vector<SelectionMetrics> rows;
    for (int N : sizes)
        rows.push_back(cosine_reference_row(y, order, N));
    return rows;
}

}  // namespace attngeo::theory
