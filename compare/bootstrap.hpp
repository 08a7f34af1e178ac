// The document bootstrap shared by corr(R, ρ0) and the fit intervals (docs/design.md §7): a fixed
// random stream per replicate, resample counts per document and percentiles, so every interval
// is the same bits on every platform, compiler and thread count.
#pragma once
#include <cstdint>
#include <vector>

#include "common/splitmix64.hpp"

namespace attngeo::compare {

using attngeo::SplitMix64;  // common/splitmix64.hpp

// How often each of `documents` documents is drawn in replicate `replicate` of a bootstrap
// keyed by `seed`: replicate r draws from SplitMix64(SplitMix64(key + r).next()) with
// key = SplitMix64(seed).next(), so replicates are independent of the order they run in. [docs]
std::vector<double> resample_counts(std::uint64_t seed, int replicate, int documents);

// Percentile with linear interpolation between order statistics (Hyndman–Fan type 7, the
// default of R and NumPy): position q·(m−1) in the sorted sample. Throws std::domain_error
// for an empty sample or q outside [0, 1].
double percentile_type7(std::vector<double> sample, double q);

}  // namespace attngeo::compare
