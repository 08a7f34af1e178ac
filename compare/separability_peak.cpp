// The N of strongest non-trivial separability and its bootstrap interval; see
// separability_peak.hpp.
#include "compare/separability_peak.hpp"

#include <omp.h>

#include <string>
#include <vector>

#include "common/errors.hpp"
#include "compare/bootstrap.hpp"

namespace attngeo::compare {
namespace {

// The mean over heads and weighted documents of `values` [docs, H, S] at each s. [S]
std::vector<double> weighted_means(const std::vector<float>& values, const PerDocArrays& a,
                                   const std::vector<double>& weight) {
    const std::size_t H = static_cast<std::size_t>(a.layers) * a.heads, S = a.sizes.size();
    std::vector<double> mean(S, 0.0);
    double total = 0;
    for (int d = 0; d < a.docs; ++d) {
        if (weight[d] == 0) continue;
        total += weight[d] * static_cast<double>(H);
        const float* doc = values.data() + static_cast<std::size_t>(d) * H * S;
        for (std::size_t h = 0; h < H; ++h)
            for (std::size_t s = 0; s < S; ++s)
                mean[s] += weight[d] * doc[h * S + s];
    }
    for (double& m : mean)
        m /= total;
    return mean;
}

// The share of the range above the floor, (F − floor)/(1 − floor), at each N of the grid. [S]
std::vector<double> shares_above_floor(const char* metric, const std::vector<double>& mean,
                                       const std::vector<int>& sizes, int context) {
    std::vector<double> share(mean.size());
    for (std::size_t s = 0; s < mean.size(); ++s) {
        const double floor = separability_floor(metric, sizes[s], context);
        share[s] = (mean[s] - floor) / (1 - floor);
    }
    return share;
}

// The grid index of the largest share among 2 ≤ N < n (the first on a tie); −1 when none.
int peak_index(const char* metric, const std::vector<double>& mean, const std::vector<int>& sizes,
               int context) {
    const std::vector<double> share = shares_above_floor(metric, mean, sizes, context);
    int best = -1;
    for (std::size_t s = 0; s < sizes.size(); ++s)
        if (sizes[s] >= 2 && sizes[s] < context && (best < 0 || share[s] > share[best]))
            best = static_cast<int>(s);
    return best;
}

SeparabilityPeak peak_of(const char* metric, const std::vector<float>& values,
                         const PerDocArrays& a, int context, int replicates, std::uint64_t seed,
                         int threads) {
    SeparabilityPeak peak;
    peak.metric = metric;
    const std::vector<double> mean = weighted_means(values, a, std::vector<double>(a.docs, 1.0));
    const int best = peak_index(metric, mean, a.sizes, context);
    if (best < 0) return peak;
    peak.N = a.sizes[best];
    peak.value = mean[best];
    peak.share = shares_above_floor(metric, mean, a.sizes, context)[best];
    if (a.docs < kBootstrapMinimumDocuments || replicates == 0) return peak;
    std::vector<double> argmax(replicates);
#pragma omp parallel for num_threads(threads > 0 ? threads : omp_get_max_threads()) \
    schedule(dynamic, 8)
    for (int r = 0; r < replicates; ++r)
        argmax[r] = a.sizes[peak_index(
            metric, weighted_means(values, a, resample_counts(seed, r, a.docs)), a.sizes, context)];
    peak.replicates = replicates;
    peak.lo = percentile_type7(argmax, 0.025);
    peak.hi = percentile_type7(argmax, 0.975);
    return peak;
}

}  // namespace

double separability_floor(const char* metric, int N, int context) {
    if (std::string(metric) != "F(r_max)") return 0;
    const double fraction = static_cast<double>(N) / context;  // P(r_max, N) ≥ N/n
    return 2 * fraction / (1 + fraction);
}

std::array<SeparabilityPeak, 2> separability_peaks(const PerDocArrays& arrays, int context,
                                                   int replicates, std::uint64_t seed,
                                                   int threads) {
    const std::size_t cells =
        static_cast<std::size_t>(arrays.docs) * arrays.layers * arrays.heads * arrays.sizes.size();
    if (arrays.Fmax.size() != cells || arrays.Fmin.size() != cells || arrays.docs < 1)
        throw_domain_error("attngeo::compare::separability_peaks",
                           "Fmax or Fmin does not have [docs, layers, heads, S] values");
    if (replicates < 0)
        throw_domain_error("attngeo::compare::separability_peaks",
                           "replicates = " + std::to_string(replicates) + " < 0");
    return {peak_of("F(r_max)", arrays.Fmax, arrays, context, replicates, seed, threads),
            peak_of("F(r_min)", arrays.Fmin, arrays, context, replicates, seed, threads)};
}

}  // namespace attngeo::compare
