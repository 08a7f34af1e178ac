// Counter-based random numbers for the simulator: Philox4x32-10 (Random123) keyed by
// (seed, grid point, trial, substream), so any trial can be regenerated alone and the output
// does not depend on how trials are spread over threads or shards. Normals come from our own
// ziggurat transform (std::normal_distribution is implementation-defined).
#pragma once
#include <cstdint>

namespace attngeo::simulate {

class RandomStream {
public:
    RandomStream(std::uint64_t seed, std::uint32_t grid_point, std::uint32_t trial, std::uint32_t substream = 0);

    std::uint64_t next_u64();
    // Uniform on the open interval (0, 1), 53 random bits.
    double next_open_uniform();
    // Standard normal (ziggurat, 128 layers, exact tail by Marsaglia's method).
    double next_normal();
    void fill_normals(double* out, std::size_t count);

private:
    void refill();
    std::uint32_t key_[2];
    std::uint32_t counter_[4];
    std::uint32_t block_[4];
    int used_ = 4;  // 32-bit words of block_ consumed
};

}  // namespace attngeo::simulate
