// The predecessor paper's row measurements; see normalization_limits.hpp.
#include "theory/normalization_limits.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>

#include "common/errors.hpp"
#include "common/splitmix64.hpp"

namespace attngeo::theory {
namespace {

void require_rows(const RowMatrix& contributions, const char* function) {
    if (contributions.rows() < 1 || contributions.cols() < 1)
        throw_domain_error(function, "contributions are " + std::to_string(contributions.rows()) +
                                         " x " + std::to_string(contributions.cols()) +
                                         ", expected n >= 1 tokens and d >= 1");
    if (!contributions.allFinite())
        throw_domain_error(function, "contributions hold a non-finite entry");
}

void require_size(int N, Eigen::Index n, const char* function) {
    if (N < 1 || N > n)
        throw_domain_error(
            function, "N = " + std::to_string(N) + ", expected 1 <= N <= n = " + std::to_string(n));
}

// Y = Σ_i y_i, summed in token order.                                                  [d]
Eigen::VectorXd total_contribution(const RowMatrix& contributions) {
    Eigen::VectorXd total = Eigen::VectorXd::Zero(contributions.cols());
    for (Eigen::Index i = 0; i < contributions.rows(); ++i)
        total += contributions.row(i).transpose();
    return total;
}

}  // namespace

std::vector<double> selection_distance(const RowMatrix& contributions,
                                       const std::vector<int>& order,
                                       const std::vector<int>& sizes) {
    const char* function = "attngeo::theory::selection_distance";
    require_rows(contributions, function);
    const Eigen::Index n = contributions.rows();
    if (static_cast<Eigen::Index>(order.size()) != n)
        throw_domain_error(function, "order has " + std::to_string(order.size()) +
                                         " entries, expected n = " + std::to_string(n));
    std::vector<char> seen(n, 0);
    for (int index : order) {
        if (index < 0 || index >= n || seen[index])
            throw_domain_error(function, "order is not a permutation of 0..n-1");
        seen[index] = 1;
    }
    for (int N : sizes)
        require_size(N, n, function);
    const Eigen::VectorXd total = total_contribution(contributions);
    // s(N) for every N by one pass in rank order; the grid reads its prefix sums.
    std::vector<double> by_size(n + 1, 0.0);
    Eigen::VectorXd selected = Eigen::VectorXd::Zero(contributions.cols());
    for (Eigen::Index k = 0; k < n; ++k) {
        selected += contributions.row(order[k]).transpose();
        by_size[k + 1] = (total - 2.0 * selected).norm();
    }
    std::vector<double> out;
    out.reserve(sizes.size());
    for (int N : sizes)
        out.push_back(by_size[N]);
    return out;
}

double random_selection_mean_square(const RowMatrix& contributions, int N) {
    const char* function = "attngeo::theory::random_selection_mean_square";
    require_rows(contributions, function);
    const Eigen::Index n = contributions.rows();
    require_size(N, n, function);
    const double squares = contributions.rowwise().squaredNorm().sum();
    if (n == 1) return squares;
    const double nd = static_cast<double>(n), gap = nd - 2.0 * N;
    const double pair_correlation = (gap * gap - nd) / (nd * (nd - 1.0));
    return squares + pair_correlation * (total_contribution(contributions).squaredNorm() - squares);
}

MonteCarloEstimate random_selection_distance(const RowMatrix& contributions, int N, int subsets,
                                             std::uint64_t seed) {
    const char* function = "attngeo::theory::random_selection_distance";
    require_rows(contributions, function);
    const Eigen::Index n = contributions.rows();
    require_size(N, n, function);
    if (subsets < 2)
        throw_domain_error(function,
                           "subsets = " + std::to_string(subsets) + ", expected at least 2");
    const Eigen::VectorXd total = total_contribution(contributions);
    const int drawn = static_cast<int>(std::min<Eigen::Index>(N, n - N));
    std::vector<int> tokens(n);
    SplitMix64 rng(seed);
    // Welford's running mean and sum of squared deviations: Σd² − s·mean² cancels to rounding
    // noise (a standard error of ~1e-9·mean where every draw gives the same distance, as at
    // N = n or n = 1, instead of 0).
    double mean = 0, squared_deviations = 0;
    for (int s = 0; s < subsets; ++s) {
        std::iota(tokens.begin(), tokens.end(), 0);
        Eigen::VectorXd chosen = Eigen::VectorXd::Zero(contributions.cols());
        for (int k = 0; k < drawn; ++k) {  // partial Fisher–Yates: tokens[0..drawn) uniform
            const auto pick = k + static_cast<Eigen::Index>(rng.below(n - k));
            std::swap(tokens[k], tokens[pick]);
            chosen += contributions.row(tokens[k]).transpose();
        }
        const double distance = (total - 2.0 * chosen).norm();
        const double before = distance - mean;
        mean += before / (s + 1);
        squared_deviations += before * (distance - mean);
    }
    MonteCarloEstimate estimate;
    estimate.samples = subsets;
    estimate.mean = mean;
    estimate.standard_error = std::sqrt(squared_deviations / (subsets - 1) / subsets);
    return estimate;
}

namespace {

// softmax(x / T) in double, shifted by the row's maximum (−∞ entries weigh 0).
std::vector<double> tempered_softmax(const std::vector<double>& x, double temperature) {
    const double top = *std::max_element(x.begin(), x.end());
    std::vector<double> p(x.size());
    double total = 0;
    for (std::size_t i = 0; i < x.size(); ++i)
        total += p[i] = std::isinf(x[i]) ? 0.0 : std::exp((x[i] - top) / temperature);
    for (double& w : p)
        w /= total;
    return p;
}

}  // namespace

double softmax_sensitivity(const std::vector<double>& scores, const std::vector<double>& direction,
                           double temperature, double epsilon) {
    const char* function = "attngeo::theory::softmax_sensitivity";
    if (scores.empty() || direction.size() != scores.size())
        throw_domain_error(function, "scores have " + std::to_string(scores.size()) +
                                         " entries and the direction " +
                                         std::to_string(direction.size()) +
                                         ", expected the same n >= 1");
    if (!(temperature > 0) || !std::isfinite(temperature))
        throw_domain_error(
            function, "temperature = " + std::to_string(temperature) + ", expected a finite T > 0");
    if (!(epsilon > 0) || !std::isfinite(epsilon))
        throw_domain_error(
            function, "epsilon = " + std::to_string(epsilon) + ", expected a finite epsilon > 0");
    bool any_finite = false;
    for (std::size_t i = 0; i < scores.size(); ++i) {
        if (std::isnan(scores[i]) || scores[i] == std::numeric_limits<double>::infinity())
            throw_domain_error(function, "scores hold NaN or +inf, expected finite or -inf");
        if (!std::isfinite(direction[i])) throw_domain_error(function, "direction is not finite");
        any_finite = any_finite || std::isfinite(scores[i]);
    }
    if (!any_finite) throw_domain_error(function, "every score is -inf, expected one finite");
    std::vector<double> moved(scores.size());
    for (std::size_t i = 0; i < scores.size(); ++i) {
        moved[i] = scores[i] + epsilon * direction[i];
        // An overflow would read as +inf (a NaN softmax) or, through ε·v, as a masked key.
        if (std::isfinite(scores[i]) && !std::isfinite(moved[i]))
            throw_domain_error(function, "score " + std::to_string(i) +
                                             " + epsilon * direction overflows, expected a "
                                             "finite moved score");
    }
    const std::vector<double> before = tempered_softmax(scores, temperature);
    const std::vector<double> after = tempered_softmax(moved, temperature);
    double squares = 0;
    for (std::size_t i = 0; i < before.size(); ++i)
        squares += (after[i] - before[i]) * (after[i] - before[i]);
    return std::sqrt(squares) / epsilon;
}

std::vector<double> random_unit_direction(int n, std::uint64_t seed) {
    if (n < 1)
        throw_domain_error("attngeo::theory::random_unit_direction",
                           "n = " + std::to_string(n) + ", expected n >= 1");
    SplitMix64 rng(seed);
    std::vector<double> v(n);
    double squares = 0;
    do {
        squares = 0;
        for (double& x : v) {
            const double radius = std::sqrt(-2.0 * std::log(rng.open_uniform()));
            x = radius * std::cos(2.0 * M_PI * rng.open_uniform());
            squares += x * x;
        }
    } while (squares == 0);
    const double norm = std::sqrt(squares);
    for (double& x : v)
        x /= norm;
    return v;
}

double predecessor_sensitivity_reference(double temperature) {
    if (!(temperature > 0))
        throw_domain_error("attngeo::theory::predecessor_sensitivity_reference",
                           "temperature must be > 0");
    return std::min(1.0 / (4.0 * temperature), std::sqrt(2.0));
}

double softmax_jacobian_bound(double temperature) {
    if (!(temperature > 0))
        throw_domain_error("attngeo::theory::softmax_jacobian_bound", "temperature must be > 0");
    return 1.0 / (2.0 * temperature);
}

}  // namespace attngeo::theory
