// The shared document bootstrap; see bootstrap.hpp.
#include "compare/bootstrap.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "common/errors.hpp"
#include "common/format.hpp"

namespace attngeo::compare {

std::vector<double> resample_counts(std::uint64_t seed, int replicate, int documents) {
    const std::uint64_t key = SplitMix64(seed).next();
    SplitMix64 rng(SplitMix64(key + static_cast<std::uint64_t>(replicate)).next());
    std::vector<double> counts(documents, 0.0);
    for (int d = 0; d < documents; ++d)
        counts[rng.below(static_cast<std::uint64_t>(documents))] += 1;
    return counts;
}

double percentile_type7(std::vector<double> sample, double q) {
    if (sample.empty()) throw_domain_error("attngeo::compare::percentile_type7", "empty sample");
    if (!(q >= 0 && q <= 1))
        throw_domain_error("attngeo::compare::percentile_type7",
                           "q = " + format_double(q) + ", expected 0 <= q <= 1");
    std::sort(sample.begin(), sample.end());
    const double position = q * static_cast<double>(sample.size() - 1);
    const auto below = static_cast<std::size_t>(std::floor(position));
    const std::size_t above = std::min(below + 1, sample.size() - 1);
    const double fraction = position - static_cast<double>(below);
    return sample[below] + fraction * (sample[above] - sample[below]);
}

}  // namespace attngeo::compare
