// Counter-based random numbers for the simulator: Philox4x64-10 (Random123) keyed by
// (seed, grid point, trial, substream), so any trial can be regenerated alone and the output
// does not depend on how trials are spread over threads or shards. Normals come from our own
// ziggurat transform (std::normal_distribution is implementation-defined).
#pragma once
#include <Random123/philox.h>

#include <cstddef>
#include <cstdint>

namespace attngeo::simulate {

class RandomStream {
  public:
    RandomStream(std::uint64_t seed, std::uint32_t grid_point, std::uint32_t trial,
                 std::uint32_t substream = 0);

    // The words of Philox blocks 0, 1, 2, ... of this key, each block's 4 words in order.
    std::uint64_t next_u64() {
        if (used_ == kBufferWords) refill();
        return buffer_[used_++];
    }
    // Uniform on the open interval (0, 1), 53 random bits.
    double next_open_uniform() { return (static_cast<double>(next_u64() >> 11) + 0.5) * 0x1p-53; }
    // Standard normal (ziggurat, 128 layers, exact tail by Marsaglia's method), one word per
    // attempt: the plain reference for fill_normals.
    double next_normal();
    // `count` normals, bit-identical to as many next_normal() calls (and leaving the stream in
    // the same place), with the common case run inline over the buffered words.
    void fill_normals(double* out, std::size_t count);

    // Philox blocks computed per refill: independent blocks overlap their multiplies.
    static constexpr int kBlocksPerRefill = 8;

  private:
    using Philox = r123::Philox4x64;
    static constexpr int kBufferWords = 4 * kBlocksPerRefill;
    void refill();
    double normal_after_miss(double u, int layer);
    Philox::key_type key_;
    Philox::ctr_type counter_;  // the next block's counter; word 0 advances
    std::uint64_t buffer_[kBufferWords];
    int used_ = kBufferWords;  // words of buffer_ consumed
};

}  // namespace attngeo::simulate
