// Exact accumulators for Monte Carlo moments. Each per-trial value x ∈ [−1, 1] is rounded
// once to a 2⁻⁴⁰ fixed-point integer; sums of those and of their squares are 128-bit
// integers, so adding trials in any order, on any number of threads or shards, gives the
// same bits — merge(shard sums) equals the unsharded run exactly.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace attngeo::simulate {

__extension__ typedef __int128 Int128;
__extension__ typedef unsigned __int128 UInt128;

std::string to_string_int128(Int128 value);
Int128 parse_int128(const std::string& text);  // throws std::invalid_argument

inline constexpr double kFixedPointScale = 0x1p40;
// At most 2^22 trials keep T·Σq² below 2^127 for |q| ≤ 2^40.
inline constexpr std::int64_t kMaxTrials = std::int64_t{1} << 22;

struct MomentSums {
    std::int64_t count = 0;
    Int128 sum = 0;          // Σ q,  q = round(x·2⁴⁰)
    Int128 sum_squares = 0;  // Σ q²
    void add(double x);
    void merge(const MomentSums& other);
    bool operator==(const MomentSums& other) const;
};

// Mean, standard error and 95% Student-t interval of the values behind `sums`.
struct Estimate {
    std::int64_t count = 0;
    double mean = 0;
    double se = 0;     // NaN when count < 2
    double ci_lo = 0;  // mean − t_{0.975, count−1}·se
    double ci_hi = 0;
};
Estimate estimate(const MomentSums& sums);

}  // namespace attngeo::simulate
