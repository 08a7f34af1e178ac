// Tests for the simulator's fast random paths against plain references: buffered Philox words
// against Random123 one block at a time, fill_normals against repeated next_normal() (tail and
// wedge included, interleaved with the other draws), and draw_values/draw_directions against
// the whole-matrix passes they replaced, bit for bit.
#include <gtest/gtest.h>

#include <Random123/philox.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iostream>
#include <vector>

#include "simulate/generator.hpp"
#include "simulate/rng.hpp"

using namespace attngeo;
using namespace attngeo::simulate;

namespace {

struct StreamKey {
    std::uint64_t seed;
    std::uint32_t grid_point, trial, substream;
};
const StreamKey kKeys[] = {{1, 0, 0, 0}, {42, 3, 7, 0}, {0xdeadbeefcafeULL, 17, 123456, 2}};

RandomStream stream_for(const StreamKey& k) {
    return RandomStream(k.seed, k.grid_point, k.trial, k.substream);
}

double largest_difference(const std::vector<double>& a, const std::vector<double>& b) {
    double largest = 0;
    for (std::size_t i = 0; i < a.size(); ++i)
        largest = std::max(largest, std::abs(a[i] - b[i]));
    return largest;
}

bool same_bits(const double* a, const double* b, std::size_t count) {
    return std::memcmp(a, b, count * sizeof(double)) == 0;
}

// The generator as it was before the fused pass: whole-matrix passes, one normal at a time.
void reference_directions(const GeneratorSettings& s, RandomStream& stream, theory::RowMatrix& g) {
    const int n = static_cast<int>(s.norms.size()), d = s.d;
    g.resize(n, d);
    for (Eigen::Index i = 0; i < g.size(); ++i)
        g.data()[i] = stream.next_normal();
    g *= 1.0 / std::sqrt(static_cast<double>(d));
    if (s.cosine) {
        const Eigen::MatrixXd chol = Eigen::LLT<Eigen::MatrixXd>(*s.cosine).matrixL();
        for (int i = n - 1; i >= 0; --i)
            g.row(i) = chol.row(i).head(i + 1) * g.topRows(i + 1);
        return;
    }
    const double r = std::exp(-s.beta), innovation = std::sqrt(1 - r * r);
    for (int i = 2; i < n; ++i)
        g.row(i) = r * g.row(i - 1) + innovation * g.row(i);
    if (s.sink_mode == SinkMode::exact) {
        const int L = n - 1;
        const double tau = std::sqrt(1 - s.rho0 * s.rho0 * kms_inverse_sum(L, r));
        Eigen::VectorXd w = Eigen::VectorXd::Constant(n, s.rho0 * (1 - r) / (1 + r));
        if (L == 1) {
            w[1] = s.rho0;
        } else {
            w[1] = w[L] = s.rho0 / (1 + r);
        }
        Eigen::RowVectorXd sink = tau * g.row(0);
        for (int i = 1; i < n; ++i)
            sink += w[i] * g.row(i);
        g.row(0) = sink;
    } else {
        const double keep = std::sqrt(1 - s.rho0 * s.rho0);
        for (int i = 1; i < n; ++i)
            g.row(i) = s.rho0 * g.row(0) + keep * g.row(i);
    }
}

void reference_values(const GeneratorSettings& s, RandomStream& stream, theory::RowMatrix& v) {
    reference_directions(s, stream, v);
    const double log_sigma = std::sqrt(std::log1p(s.norm_cv * s.norm_cv));
    for (int i = 0; i < v.rows(); ++i) {
        double norm = s.norms[i];
        if (s.norm_cv > 0)
            norm *= std::exp(log_sigma * stream.next_normal() - 0.5 * log_sigma * log_sigma);
        const double length = v.row(i).norm();
        v.row(i) *= length > 0 ? norm / length : 0.0;
    }
}

}  // namespace

TEST(Rng, BufferedWordsAreRandom123BlocksInCounterOrder) {
    for (const StreamKey& k : kKeys) {
        RandomStream s = stream_for(k);
        const r123::Philox4x64::key_type key = {
            {k.seed, (static_cast<std::uint64_t>(k.grid_point) << 32) | k.substream}};
        for (std::uint64_t block = 0; block < 100; ++block) {
            const r123::Philox4x64::ctr_type counter = {{block, k.trial, 0, 0}};
            const r123::Philox4x64::ctr_type expected = r123::Philox4x64()(counter, key);
            for (int w = 0; w < 4; ++w)
                ASSERT_EQ(s.next_u64(), expected.v[w]) << "block " << block << " word " << w;
        }
    }
}

TEST(Rng, FillNormalsEqualsRepeatedNextNormalBitForBit) {
    const std::size_t count = 1000003;  // ~1e4 draws take the tail or a wedge
    constexpr double kZigguratR = 3.442619855899;
    for (const StreamKey& k : kKeys) {
        RandomStream fast = stream_for(k), chunked = stream_for(k), plain = stream_for(k);
        std::vector<double> whole(count), pieces(count), reference(count);
        fast.fill_normals(whole.data(), count);
        for (std::size_t done = 0, piece = 1; done < count; piece = piece % 300 + 7) {
            const std::size_t take = std::min(piece, count - done);
            chunked.fill_normals(pieces.data() + done, take);
            done += take;
        }
        for (double& z : reference)
            z = plain.next_normal();
        const auto tail = std::count_if(reference.begin(), reference.end(),
                                        [&](double z) { return std::abs(z) > kZigguratR; });
        const std::uint64_t next = plain.next_u64();
        std::cout << "key (" << k.seed << ", " << k.grid_point << ", " << k.trial
                  << "): largest difference " << largest_difference(whole, reference) << " / "
                  << largest_difference(pieces, reference) << ", tail draws " << tail << "\n";
        EXPECT_GT(tail, 100);
        EXPECT_TRUE(same_bits(whole.data(), reference.data(), count));
        EXPECT_TRUE(same_bits(pieces.data(), reference.data(), count));
        // Same words consumed: the streams go on identically.
        EXPECT_EQ(fast.next_u64(), next);
        EXPECT_EQ(chunked.next_u64(), next);
    }
}

TEST(Rng, FillNormalsInterleavedWithOtherDrawsKeepsTheReferenceSequence) {
    for (const StreamKey& k : kKeys) {
        RandomStream fast = stream_for(k), plain = stream_for(k);
        std::vector<double> got, expected;
        std::vector<std::uint64_t> got_words, expected_words;
        double buffer[61];
        for (int step = 0; step < 20000; ++step) {
            const std::size_t take = static_cast<std::size_t>(step * 13 % 61);
            fast.fill_normals(buffer, take);
            got.insert(got.end(), buffer, buffer + take);
            for (std::size_t i = 0; i < take; ++i)
                expected.push_back(plain.next_normal());
            if (step % 3 == 0) {
                got_words.push_back(fast.next_u64());
                expected_words.push_back(plain.next_u64());
            }
            if (step % 5 == 0) {
                got.push_back(fast.next_normal());
                expected.push_back(plain.next_normal());
            }
            if (step % 7 == 0) {
                got.push_back(fast.next_open_uniform());
                expected.push_back(plain.next_open_uniform());
            }
        }
        ASSERT_EQ(got.size(), expected.size());
        std::cout << "interleaved, " << got.size() << " draws: largest difference "
                  << largest_difference(got, expected) << "\n";
        EXPECT_TRUE(same_bits(got.data(), expected.data(), got.size()));
        EXPECT_EQ(got_words, expected_words);
        EXPECT_EQ(fast.next_u64(), plain.next_u64());
    }
}

TEST(Generator, FusedPassEqualsThePlainPassesBitForBit) {
    struct Case {
        int n, d;
        double beta, rho0, norm_cv;
        SinkMode mode;
        bool cosine;
    };
    const Case cases[] = {
        {1025, 128, 0.05, 0.15, 0, SinkMode::exact, false},
        {257, 33, 0.2, 0.5, 0.3, SinkMode::project, false},
        {130, 128, 0.01, 0.9, 0, SinkMode::project, false},
        {64, 7, 1.0, -0.1, 0.5, SinkMode::exact, false},
        {3, 5, 0.1, 0.4, 0.1, SinkMode::exact, false},
        {2, 1, 0.1, 0.5, 0, SinkMode::exact, false},
        {40, 9, 0, 0, 0.2, SinkMode::exact, true},
    };
    for (const Case& c : cases) {
        GeneratorSettings s;
        s.d = c.d;
        s.beta = c.beta;
        s.rho0 = c.rho0;
        s.norm_cv = c.norm_cv;
        s.sink_mode = c.mode;
        s.norms = Eigen::VectorXd::LinSpaced(c.n, 2.0, 1.0);
        if (c.n > 5) s.norms[5] = 0;  // a zero norm gives a zero row
        if (c.cosine) {
            Eigen::MatrixXd K(c.n, c.n);
            for (int i = 0; i < c.n; ++i)
                for (int j = 0; j < c.n; ++j)
                    K(i, j) = std::pow(0.7, std::abs(i - j));
            s.cosine = K;
        }
        const ValueGenerator generator(s);
        double largest = 0;
        for (std::uint32_t trial = 0; trial < 4; ++trial) {
            theory::RowMatrix values, expected_values, directions, expected_directions;
            RandomStream fast(9, 2, trial), plain(9, 2, trial);
            generator.draw_values(fast, values);
            reference_values(s, plain, expected_values);
            ASSERT_EQ(values.rows(), c.n);
            ASSERT_EQ(values.cols(), c.d);
            largest = std::max(largest, (values - expected_values).cwiseAbs().maxCoeff());
            EXPECT_TRUE(same_bits(values.data(), expected_values.data(), values.size()));
            EXPECT_EQ(fast.next_u64(), plain.next_u64());

            RandomStream fast_directions(9, 2, trial), plain_directions(9, 2, trial);
            generator.draw_directions(fast_directions, directions);
            reference_directions(s, plain_directions, expected_directions);
            largest = std::max(largest, (directions - expected_directions).cwiseAbs().maxCoeff());
            EXPECT_TRUE(
                same_bits(directions.data(), expected_directions.data(), directions.size()));
        }
        std::cout << "n = " << c.n << ", d = " << c.d << ", " << to_string(c.mode)
                  << (c.cosine ? " (cosine)" : "") << ", cv " << c.norm_cv
                  << ": largest difference " << largest << "\n";
    }
}
