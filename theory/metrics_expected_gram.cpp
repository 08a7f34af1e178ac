// The selection metrics when only the Gram matrix of the ranked contributions is known: the
// d → ∞ limit of the simulator (docs/design.md §4, `--d inf`), where Ḡ_kl = a_k a_l ρ_kl. Euclidean
// counts are decided exactly on the entries as given; the cosine keeps its floating-point rule.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "common/errors.hpp"
#include "theory/exact_distance.hpp"
#include "theory/metrics.hpp"
#include "theory/metrics_detail.hpp"

namespace attngeo::theory {
namespace {

using detail::finish_selection_row;
using detail::kCosineEpsilon;
using detail::kInf;

// The d → ∞ metrics, Euclidean: counts decided exactly on the Gram entries
// (ExactGramDistances); radii √(‖s‖² + G_mm − 2c_m) in double at the exact extreme token m.
// `wanted` ascending; one row per entry.
std::vector<SelectionMetrics> expected_gram_euclidean(const Eigen::MatrixXd& gram,
                                                      const std::vector<int>& wanted) {
    const int n = static_cast<int>(gram.rows());
    ExactGramDistances exact(gram);
    std::vector<int> tokens(n);
    std::iota(tokens.begin(), tokens.end(), 0);
    std::vector<SelectionMetrics> sorted_rows;
    std::size_t next = 0;
    for (int N = 1; N <= n && next < wanted.size(); ++N) {
        exact.add_next();
        if (N != wanted[next]) continue;
        const std::vector<double>& running = exact.running();
        double s_norm2 = 0;
        for (int k = 0; k < N; ++k)
            s_norm2 += running[k];
        auto radius = [&](int l) {
            return std::sqrt(std::max(s_norm2 + gram(l, l) - 2 * running[l], 0.0));
        };
        SelectionMetrics m;
        m.N = N;
        const int max_in = exact.extreme(tokens.data(), N, true);
        m.r_max = radius(max_in);
        if (N < n) {
            const int min_out = exact.extreme(tokens.data() + N, n - N, false);
            m.r_min = radius(min_out);
            for (int l = 0; l < n; ++l) {
                const ExactComparisons::Comparison c = exact.compare(l, l < N ? min_out : max_in);
                (l < N ? m.K_in : m.K_out) += c.at_most;
                m.exact_decisions += c.exact;
            }
        }
        finish_selection_row(m, n);
        while (next < wanted.size() && wanted[next] == N) {
            sorted_rows.push_back(m);
            ++next;
        }
    }
    return sorted_rows;
}

// The d → ∞ metrics, cosine: the floating-point rule of docs/design.md §2 (no exact decisions).
std::vector<SelectionMetrics> expected_gram_cosine(const Eigen::MatrixXd& gram,
                                                   const std::vector<int>& wanted) {
    const int n = static_cast<int>(gram.rows());
    std::vector<double> running(n, 0.0), D(n);
    std::vector<SelectionMetrics> sorted_rows;
    std::size_t next = 0;
    for (int N = 1; N <= n && next < wanted.size(); ++N) {
        for (int l = 0; l < n; ++l)
            running[l] += gram(N - 1, l);
        if (N != wanted[next]) continue;
        double s_norm2 = 0;
        for (int k = 0; k < N; ++k)
            s_norm2 += running[k];
        const double s_norm = std::sqrt(std::max(s_norm2, 0.0));
        for (int l = 0; l < n; ++l)
            D[l] =
                1.0 - running[l] / (std::sqrt(std::max(gram(l, l), 0.0)) * s_norm + kCosineEpsilon);
        SelectionMetrics m;
        m.N = N;
        double max_in = -kInf, min_out = kInf;
        for (int l = 0; l < N; ++l)
            max_in = std::max(max_in, D[l]);
        for (int l = N; l < n; ++l)
            min_out = std::min(min_out, D[l]);
        m.r_max = std::sqrt(std::max(max_in, 0.0));
        if (N < n) {
            m.r_min = std::sqrt(std::max(min_out, 0.0));
            for (int l = 0; l < N; ++l)
                m.K_in += D[l] <= min_out;
            for (int l = N; l < n; ++l)
                m.K_out += D[l] <= max_in;
        }
        finish_selection_row(m, n);
        while (next < wanted.size() && wanted[next] == N) {
            sorted_rows.push_back(m);
            ++next;
        }
    }
    return sorted_rows;
}

}  // namespace

std::vector<SelectionMetrics> selection_metrics_expected_gram(const Eigen::MatrixXd& gram,
                                                              const std::vector<int>& sizes,
                                                              Distance distance) {
    const int n = static_cast<int>(gram.rows());
    if (gram.cols() != n || n < 1)
        throw_domain_error("selection_metrics_expected_gram",
                           "Gram matrix must be square and non-empty");
    if (!gram.allFinite())
        throw_domain_error("selection_metrics_expected_gram", "Gram matrix has NaN or inf");
    detail::check_selection_sizes(sizes, n, "selection_metrics_expected_gram");
    const std::vector<int> wanted = detail::ascending_unique(sizes);
    std::vector<SelectionMetrics> sorted_rows = distance == Distance::euclidean
                                                    ? expected_gram_euclidean(gram, wanted)
                                                    : expected_gram_cosine(gram, wanted);
    std::vector<SelectionMetrics> rows;
    detail::rows_in_caller_order(sizes, wanted, sorted_rows, rows);
    return rows;
}

}  // namespace attngeo::theory
