// SplitMix64 (Steele, Lea, Flood 2014): the one fixed 64-bit recurrence behind every seeded draw
// outside the simulator (document order, bootstrap replicates, random subsets and directions),
// identical on every platform (std:: distributions are implementation-defined).
#pragma once
#include <cstdint>

namespace attngeo {

class SplitMix64 {
  public:
    explicit SplitMix64(std::uint64_t seed) : state_(seed) {}
    std::uint64_t next() {
        std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        return z ^ (z >> 31);
    }
    // Uniform on {0, …, bound−1} without modulo bias: draws masked to the next power of two
    // above bound − 1, rejecting those ≥ bound (fewer than half are rejected on average).
    std::uint64_t below(std::uint64_t bound) {
        std::uint64_t mask = bound - 1;
        for (int shift = 1; shift < 64; shift *= 2)
            mask |= mask >> shift;
        for (;;) {
            const std::uint64_t x = next() & mask;
            if (x < bound) return x;
        }
    }
    // Uniform on the open interval (0, 1) from 53 random bits.
    double open_uniform() { return (static_cast<double>(next() >> 11) + 0.5) * 0x1p-53; }

  private:
    std::uint64_t state_;
};

}  // namespace attngeo
