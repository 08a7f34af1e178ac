// Exact accumulators for Monte Carlo moments. Each per-trial value x ∈ [−1, 1] is rounded
// once to a 2⁻⁴⁰ fixed-point integer; sums of those and of their squares are 128-bit
// integers, so adding trials in any order, on any number of threads or shards, gives the
// same bits — merge(shard sums) equals the unsharded run exactly.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace attngeo {

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

// An order-independent sum of reals: each addend is rounded once to a 2⁻⁶⁴ fixed-point
// 128-bit integer (absolute resolution 5.4e-20), so documents added in any order, resumed
// from a checkpoint or merged from shards give the same bits. Addends and the running sum must
// stay below 2⁶² in magnitude; beyond that add() throws std::overflow_error rather than wrap.
struct ExactSum {
    Int128 fixed = 0;  // Σ round(x·2⁶⁴)
    void add(double x);
    void merge(const ExactSum& other);
    double value() const;  // the sum, rounded once to double
    bool operator==(const ExactSum& other) const { return fixed == other.fixed; }
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

}  // namespace attngeo
