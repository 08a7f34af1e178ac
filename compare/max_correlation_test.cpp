// The max-|r| permutation test over N; see max_correlation_test.hpp.
#include "compare/max_correlation_test.hpp"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <string>

#include "common/errors.hpp"
#include "common/splitmix64.hpp"

namespace attngeo::compare {
namespace {

// `values` centred on the mean of each stratum, then scaled to unit norm; false when nothing
// varies (a zero norm).
bool standardise(std::vector<double>& values, const std::vector<int>& stratum) {
    std::map<int, std::pair<double, int>> sums;
    for (std::size_t u = 0; u < values.size(); ++u) {
        auto& s = sums[stratum[u]];
        s.first += values[u], s.second += 1;
    }
    double norm = 0;
    for (std::size_t u = 0; u < values.size(); ++u) {
        const auto& s = sums[stratum[u]];
        values[u] -= s.first / s.second;
        norm += values[u] * values[u];
    }
    if (!(norm > 0)) return false;
    const double scale = 1 / std::sqrt(norm);
    for (double& v : values)
        v *= scale;
    return true;
}

// The members of each stratum, for the within-stratum shuffles.
std::vector<std::vector<int>> members(const std::vector<int>& stratum) {
    std::map<int, std::vector<int>> by;
    for (std::size_t u = 0; u < stratum.size(); ++u)
        by[stratum[u]].push_back(static_cast<int>(u));
    std::vector<std::vector<int>> out;
    for (auto& [key, list] : by)
        out.push_back(std::move(list));
    return out;
}

// y permuted within each stratum by Fisher–Yates, permutation b of `seed`.
void shuffled(const Eigen::VectorXd& y, const std::vector<std::vector<int>>& groups,
              std::uint64_t seed, int b, Eigen::VectorXd& out) {
    SplitMix64 rng(SplitMix64(SplitMix64(seed).next() + static_cast<std::uint64_t>(b)).next());
    out = y;
    for (const std::vector<int>& g : groups)
        for (std::size_t i = g.size(); i > 1; --i) {
            const std::size_t j = rng.below(i);
            std::swap(out[g[i - 1]], out[g[j]]);
        }
}

}  // namespace

double max_abs_correlation_critical(const std::vector<std::vector<double>>& x,
                                    const std::vector<double>& y, const std::vector<int>& stratum,
                                    int permutations, std::uint64_t seed, double level) {
    const char* fn = "attngeo::compare::max_abs_correlation_critical";
    if (stratum.size() != y.size())
        throw_domain_error(fn, std::to_string(y.size()) + " values of y, " +
                                   std::to_string(stratum.size()) + " strata");
    std::vector<std::vector<double>> series;
    for (const std::vector<double>& xs : x) {
        if (xs.size() != y.size())
            throw_domain_error(fn, "a series of " + std::to_string(xs.size()) + " values, y of " +
                                       std::to_string(y.size()));
        series.push_back(xs);
        if (!standardise(series.back(), stratum)) series.pop_back();
    }
    std::vector<double> centred = y;
    const int rank = static_cast<int>(std::floor(level * (permutations + 1)));
    if (series.empty() || !standardise(centred, stratum) || rank < 1) return 1;
    const Eigen::Index S = static_cast<Eigen::Index>(series.size()),
                       U = static_cast<Eigen::Index>(y.size());
    Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> X(S, U);
    for (Eigen::Index s = 0; s < S; ++s)
        for (Eigen::Index u = 0; u < U; ++u)
            X(s, u) = series[s][u];
    const Eigen::VectorXd Y = Eigen::Map<const Eigen::VectorXd>(centred.data(), U);
    const std::vector<std::vector<int>> groups = members(stratum);
    std::vector<double> maxima(permutations);
    Eigen::VectorXd permuted(U);
    for (int b = 0; b < permutations; ++b) {
        shuffled(Y, groups, seed, b, permuted);
        maxima[b] = (X * permuted).cwiseAbs().maxCoeff();
    }
    // The rank-th largest maximum: |r| above it happens in at most rank − 1 of B + 1 arrangements
    // (the observed one counted), so p = (1 + #{max ≥ |r|}) / (B + 1) ≤ level.
    std::nth_element(maxima.begin(), maxima.begin() + (rank - 1), maxima.end(),
                     std::greater<double>());
    return std::min(1.0, maxima[rank - 1]);
}

std::pair<double, double> critical_interval(double r, double critical) {
    constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
    if (std::isnan(r)) return {kNaN, kNaN};
    if (std::abs(r) >= 1) return {r, r};
    if (critical >= 1) return {-1.0, 1.0};
    const double z = std::atanh(r), half = std::atanh(critical);
    return {std::tanh(z - half), std::tanh(z + half)};
}

}  // namespace attngeo::compare
