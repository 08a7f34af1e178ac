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

    std::uint64_t next_u64() {
        if (used_ == 4) refill();
        return block_.v[used_++];
    }
    // Uniform on the open interval (0, 1), 53 random bits.
    double next_open_uniform() { return (static_cast<double>(next_u64() >> 11) + 0.5) * 0x1p-53; }
    // Standard normal (ziggurat, 128 layers, exact tail by Marsaglia's method).
    double next_normal();
    void fill_normals(double* out, std::size_t count);

  private:
    using Philox = r123::Philox4x64;
    void refill();
    Philox::key_type key_;
    Philox::ctr_type counter_;
    Philox::ctr_type block_;
    int used_ = 4;  // 64-bit words of block_ consumed
};

}  // namespace attngeo::simulate
