// Philox streams and the ziggurat normal transform; see rng.hpp.
#include "simulate/rng.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>

namespace attngeo::simulate {
namespace {

// Ziggurat tables (Marsaglia & Tsang 2000, in Doornik's 2005 formulation): 128 layers of
// equal area V with the base layer's right edge at R.
constexpr int kLayers = 128;
constexpr double kR = 3.442619855899;
constexpr double kV = 9.91256303526217e-3;

struct ZigguratTables {
    double x[kLayers + 1];  // layer right edges, x[0] = V/f(R) (base layer incl. tail)
    double ratio[kLayers];  // x[i+1]/x[i]: the fraction of layer i inside the density
    ZigguratTables() {
        double f = std::exp(-0.5 * kR * kR);
        x[0] = kV / f;
        x[1] = kR;
        x[kLayers] = 0;
        for (int i = 2; i < kLayers; ++i) {
            x[i] = std::sqrt(-2 * std::log(kV / x[i - 1] + f));
            f = std::exp(-0.5 * x[i] * x[i]);
        }
        for (int i = 0; i < kLayers; ++i)
            ratio[i] = x[i + 1] / x[i];
    }
};

const ZigguratTables& tables() {
    static const ZigguratTables t;
    return t;
}

// Top 53 bits: u uniform on (-1, 1); low 7 bits: the layer.
inline double ziggurat_u(std::uint64_t bits) {
    return (static_cast<double>(bits >> 11) + 0.5) * 0x1p-52 - 1.0;
}
inline int ziggurat_layer(std::uint64_t bits) {
    return static_cast<int>(bits & (kLayers - 1));
}

}  // namespace

RandomStream::RandomStream(std::uint64_t seed, std::uint32_t grid_point, std::uint32_t trial,
                           std::uint32_t substream)
    : buffer_{} {
    key_ = {{seed, (static_cast<std::uint64_t>(grid_point) << 32) | substream}};
    counter_ = {{0, trial, 0, 0}};
    tables();
}

// Blocks in counter order, each block's words in order: the same words as one block at a time.
// The blocks are independent, so their multiplies overlap.
void RandomStream::refill() {
    for (int b = 0; b < kBlocksPerRefill; ++b) {
        const Philox::ctr_type block = Philox()(counter_, key_);
        ++counter_.v[0];
        for (int w = 0; w < 4; ++w)
            buffer_[4 * b + w] = block.v[w];
    }
    used_ = 0;
}

double RandomStream::next_normal() {
    const ZigguratTables& t = tables();
    const std::uint64_t bits = next_u64();
    // Top 53 bits: u uniform on (-1, 1); low 7 bits: the layer.
    const double u = (static_cast<double>(bits >> 11) + 0.5) * 0x1p-52 - 1.0;
    const int layer = static_cast<int>(bits & (kLayers - 1));
    if (std::abs(u) < t.ratio[layer]) return u * t.x[layer];
    return normal_after_miss(u, layer);  // a wedge rejection comes back here for a fresh word
}

// What next_normal() does after its first word (u, layer) fell outside the layer's core: the
// tail or the wedge test with the following words, and on a wedge rejection a fresh attempt.
double RandomStream::normal_after_miss(double u, int layer) {
    const ZigguratTables& t = tables();
    if (layer == 0) {
        double x, y;
        do {
            x = std::log(next_open_uniform()) / kR;
            y = std::log(next_open_uniform());
        } while (-2 * y < x * x);
        return u < 0 ? x - kR : kR - x;
    }
    const double x = u * t.x[layer];
    const double f0 = std::exp(-0.5 * (t.x[layer] * t.x[layer] - x * x));
    const double f1 = std::exp(-0.5 * (t.x[layer + 1] * t.x[layer + 1] - x * x));
    if (f1 + next_open_uniform() * (f0 - f1) < 1.0) return x;
    return next_normal();
}

void RandomStream::fill_normals(double* out, std::size_t count) {
    const ZigguratTables& t = tables();
    while (count > 0) {
        if (used_ == kBufferWords) refill();
        const std::uint64_t* words = buffer_ + used_;
        const int available = static_cast<int>(std::min<std::size_t>(count, kBufferWords - used_));
        int taken = 0;
        for (; taken < available; ++taken) {
            const std::uint64_t bits = words[taken];
            const double u = ziggurat_u(bits);
            const int layer = ziggurat_layer(bits);
            if (!(std::abs(u) < t.ratio[layer])) break;
            out[taken] = u * t.x[layer];
        }
        used_ += taken;
        out += taken;
        count -= static_cast<std::size_t>(taken);
        if (taken < available) {  // about 1 word in 100: the tail or a wedge, with the words after
            const std::uint64_t bits = buffer_[used_++];
            *out++ = normal_after_miss(ziggurat_u(bits), ziggurat_layer(bits));
            --count;
        }
    }
}

}  // namespace attngeo::simulate
