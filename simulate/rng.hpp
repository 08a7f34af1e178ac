// Counter-based random numbers for the simulator: Philox4x32-10 (Random123) keyed by the seed,
// with (trial, grid point, substream) in the counter, so any trial can be regenerated alone and
// the output does not depend on how trials are spread over threads or shards. Normals come from
// our own ziggurat transform (std::normal_distribution is implementation-defined): normal m
// starts from word m of the stream, and the ~1.4% that miss their layer's core finish with words
// of a companion miss stream (substream | 2³¹), so every normal keeps its word's position.
#pragma once
#include <Random123/philox.h>

#include <cstddef>
#include <cstdint>

#include "common/cpu_features.hpp"

namespace attngeo::simulate {

using Philox = r123::Philox4x32;

// The 64-bit words of Philox blocks counter, counter + 1, … (word 0 of the counter advances,
// wrapping at 2³²): block b's outputs (x0, x1, x2, x3) give words[2b] = x0 | x1 << 32 and
// words[2b + 1] = x2 | x3 << 32. `blocks` must be a multiple of 32. The AVX-512 and AVX2
// versions run 32 blocks side by side; the plain one calls Random123 block by block. Same bits.
void philox_words(Philox::ctr_type counter, Philox::key_type key, int blocks, std::uint64_t* words);
void philox_words_plain(Philox::ctr_type counter, Philox::key_type key, int blocks,
                        std::uint64_t* words);

// For each of `count` words (a multiple of 4, at most 64), the ziggurat's common case as
// next_normal computes it from that word: normals[i] = u·x[layer], and bit i of `misses` set
// where |u| is not below the layer's ratio (next_normal goes on to the tail or a wedge there and
// normals[i] is not its result). The AVX2 version and the plain one give the same bits.
void ziggurat_cores(const std::uint64_t* words, int count, double* normals, std::uint64_t& misses);
void ziggurat_cores_plain(const std::uint64_t* words, int count, double* normals,
                          std::uint64_t& misses);
#if ATTNGEO_X86
// The AVX2 loops the two dispatchers take when use_avx2() (common/cpu_features.hpp), for the
// tests that compare them with the plain twins whatever ATTNGEO_PLAIN says; only where
// cpu_has_avx2().
void philox_words_avx2(Philox::ctr_type counter, Philox::key_type key, int blocks,
                       std::uint64_t* words);
// The refill the dispatcher takes before the AVX2 one when use_avx512f(): 32 blocks as two
// groups of 16 lanes; only where cpu_has_avx512f().
void philox_words_avx512(Philox::ctr_type counter, Philox::key_type key, int blocks,
                         std::uint64_t* words);
void ziggurat_cores_avx2(const std::uint64_t* words, int count, double* normals,
                         std::uint64_t& misses);
#endif

class RandomStream {
  public:
    // Key {seed low 32 bits, seed high 32 bits}; block b has counter {b, trial, grid point,
    // substream}, the miss stream's block b {b, trial, grid point, substream | 2³¹}
    // (substream < 2³¹).
    RandomStream(std::uint64_t seed, std::uint32_t grid_point, std::uint32_t trial,
                 std::uint32_t substream = 0);

    // The words of Philox blocks 0, 1, 2, ... of this stream, in the order of philox_words.
    std::uint64_t next_u64() {
        if (used_ == kBufferWords) refill();
        return buffer_[used_++];
    }
    // Uniform on the open interval (0, 1), 53 random bits.
    double next_open_uniform() { return (static_cast<double>(next_u64() >> 11) + 0.5) * 0x1p-53; }
    // Standard normal (ziggurat, 256 layers, exact tail by Marsaglia's method): one word of
    // this stream, and on a miss the tail or wedge test (and a wedge rejection's fresh attempts)
    // from the miss stream. The plain reference for fill_normals.
    double next_normal();
    // `count` normals, bit-identical to as many next_normal() calls (and leaving both streams in
    // the same place): whole buffers of the common case go straight into `out`
    // (ziggurat_cores), and only the misses are redone there.
    void fill_normals(double* out, std::size_t count);

    // Philox blocks computed per refill (2 words each), a multiple of philox_words' 32.
    static constexpr int kBlocksPerRefill = 32;

  private:
    static constexpr int kBufferWords = 2 * kBlocksPerRefill;
    static_assert(kBufferWords <= 64, "one bit per buffered word in misses_");
    void next_words();  // buffer_ ← the next kBlocksPerRefill blocks' words
    void refill();      // next_words, their ziggurat cores, used_ = 0
    double normal_after_miss(double u, int layer);
    // The miss stream: words of Philox blocks 0, 1, … of counter {b, trial, grid point,
    // substream | 2³¹} (about one word per 36 normals), refilled kBlocksPerRefill blocks at a
    // time like the main stream: the vector refill, not one scalar block per two words.
    std::uint64_t next_miss_u64();
    double next_miss_open_uniform() {
        return (static_cast<double>(next_miss_u64() >> 11) + 0.5) * 0x1p-53;
    }
    double normal_from(std::uint64_t bits);
    // out[j] = the finished normal of buffer_[first + j] for every miss bit j of `misses`.
    void redo_misses(std::uint64_t misses, int first, double* out);
    Philox::key_type key_;
    Philox::ctr_type counter_;       // the next refill's first counter; word 0 advances
    Philox::ctr_type miss_counter_;  // the miss stream's next block
    alignas(32) std::uint64_t miss_words_[kBufferWords];
    int miss_used_ = kBufferWords;  // words of miss_words_ consumed
    alignas(32) std::uint64_t buffer_[kBufferWords];
    double cores_[kBufferWords];  // ziggurat_cores of buffer_
    std::uint64_t misses_ = 0;    // ziggurat_cores' misses of buffer_
    int used_ = kBufferWords;     // words of buffer_ consumed
};

}  // namespace attngeo::simulate
