// Tests for the simulator's fast random paths against plain references: buffered Philox words
// against Random123 one block at a time (and the AVX2 refill against the plain one),
// fill_normals against repeated next_normal() (tail and wedge included, interleaved with the
// other draws), the generator's AVX2 row kernels against their plain twins, and
// draw_values/draw_directions against the whole-matrix passes they replaced, bit for bit.
#include <gtest/gtest.h>

#include <Random123/philox.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iostream>
#include <vector>

#include "common/cpu_features.hpp"
#include "common/sum_of_squares.hpp"
#include "simulate/generator.hpp"
#include "simulate/generator_kernels.hpp"
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

// The AVX2 loops by their own names wherever the CPU has them, so that the comparisons stay
// real under ATTNGEO_PLAIN=1 (which only changes what the dispatchers take); elsewhere the
// dispatchers, which are then the plain loops.
void fast_philox_words(Philox::ctr_type counter, Philox::key_type key, int blocks,
                       std::uint64_t* words) {
#if ATTNGEO_X86
    if (cpu_has_avx2()) return philox_words_avx2(counter, key, blocks, words);
#endif
    philox_words(counter, key, blocks, words);
}

void fast_ziggurat_cores(const std::uint64_t* words, int count, double* normals,
                         std::uint64_t& misses) {
#if ATTNGEO_X86
    if (cpu_has_avx2()) return ziggurat_cores_avx2(words, count, normals, misses);
#endif
    ziggurat_cores(words, count, normals, misses);
}

void fast_ar1_row(double* row, double* a, double* sink, const double* g0,
                  const generator_kernels::Ar1Row& step, int d) {
#if ATTNGEO_X86
    if (cpu_has_avx2()) return generator_kernels::ar1_row_avx2(row, a, sink, g0, step, d);
#endif
    generator_kernels::ar1_row(row, a, sink, g0, step, d);
}

void fast_normalise_and_scale_row(double* row, double norm, double alpha, int d) {
#if ATTNGEO_X86
    if (cpu_has_avx2()) return generator_kernels::normalise_and_scale_row_avx2(row, norm, alpha, d);
#endif
    generator_kernels::normalise_and_scale_row(row, norm, alpha, d);
}

double fast_sum_of_squares(const double* row, int d) {
#if ATTNGEO_X86
    if (cpu_has_avx2()) return sum_of_squares_avx2(row, d);
#endif
    return sum_of_squares(row, d);
}

// A row's Euclidean length the way the generator sums it: 8 partial sums over k mod 8, combined
// pairwise as ((p0 + p4) + (p2 + p6)) + ((p1 + p5) + (p3 + p7)).
double reference_length(const theory::RowMatrix& m, int i) {
    double p[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    for (int k = 0; k < m.cols(); ++k)
        p[k % 8] += m(i, k) * m(i, k);
    return std::sqrt(((p[0] + p[4]) + (p[2] + p[6])) + ((p[1] + p[5]) + (p[3] + p[7])));
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
        const double length = reference_length(v, i);
        v.row(i) *= length > 0 ? norm / length : 0.0;
    }
}

}  // namespace

TEST(Rng, BufferedWordsAreRandom123BlocksInCounterOrder) {
    for (const StreamKey& k : kKeys) {
        RandomStream s = stream_for(k);
        const r123::Philox4x32::key_type key = {
            {static_cast<std::uint32_t>(k.seed), static_cast<std::uint32_t>(k.seed >> 32)}};
        for (std::uint32_t block = 0; block < 200; ++block) {
            const r123::Philox4x32::ctr_type counter = {
                {block, k.trial, k.grid_point, k.substream}};
            const r123::Philox4x32::ctr_type x = r123::Philox4x32()(counter, key);
            const std::uint64_t expected[2] = {x.v[0] | (static_cast<std::uint64_t>(x.v[1]) << 32),
                                               x.v[2] | (static_cast<std::uint64_t>(x.v[3]) << 32)};
            for (int w = 0; w < 2; ++w)
                ASSERT_EQ(s.next_u64(), expected[w]) << "block " << block << " word " << w;
        }
    }
}

using PhiloxRefill = void (*)(Philox::ctr_type, Philox::key_type, int, std::uint64_t*);

void expect_refill_equals_plain(PhiloxRefill refill) {
    const int blocks = 4096;
    std::vector<std::uint64_t> fast(2 * blocks), plain(2 * blocks);
    // Counters from 0 and just below 2³² (word 0 wraps inside a refill), keys with both halves set.
    const std::uint32_t starts[] = {0, 16, 0xFFFFFF00u};
    for (const StreamKey& k : kKeys) {
        for (std::uint32_t start : starts) {
            const Philox::key_type key = {
                {static_cast<std::uint32_t>(k.seed), static_cast<std::uint32_t>(k.seed >> 32)}};
            const Philox::ctr_type counter = {{start, k.trial, k.grid_point, k.substream}};
            refill(counter, key, blocks, fast.data());
            philox_words_plain(counter, key, blocks, plain.data());
            int differing = 0;
            for (int w = 0; w < 2 * blocks; ++w)
                differing += fast[w] != plain[w];
            std::cout << "key (" << k.seed << ", " << k.grid_point << ", " << k.trial
                      << "), first block " << start << ": " << differing << " of " << 2 * blocks
                      << " words differ\n";
            EXPECT_EQ(fast, plain);
            const Philox::ctr_type last = {
                {start + blocks - 1, k.trial, k.grid_point, k.substream}};
            const Philox::ctr_type x = Philox()(last, key);
            EXPECT_EQ(fast[2 * blocks - 1], x.v[2] | (static_cast<std::uint64_t>(x.v[3]) << 32));
        }
    }
}

TEST(Rng, Avx2RefillEqualsPlainRefillBitForBit) {
    expect_refill_equals_plain(fast_philox_words);
}

TEST(Rng, Avx512RefillEqualsPlainRefillBitForBit) {
#if ATTNGEO_X86
    if (!cpu_has_avx512f()) GTEST_SKIP() << "this CPU has no AVX-512F";
    expect_refill_equals_plain(philox_words_avx512);
#else
    GTEST_SKIP() << "not an x86 build";
#endif
}

TEST(Rng, Avx2ZigguratCoresEqualPlainBitForBit) {
    const int blocks = 1 << 14;
    std::vector<std::uint64_t> words(2 * blocks);
    philox_words_plain({{0, 1, 2, 3}}, {{5, 6}}, blocks, words.data());
    double fast[64], plain[64];
    int differing = 0, misses = 0;
    for (int at = 0; at < 2 * blocks; at += 64) {
        for (int count : {64, 4, 36}) {
            std::uint64_t fast_misses = 0, plain_misses = 0;
            fast_ziggurat_cores(words.data() + at, count, fast, fast_misses);
            ziggurat_cores_plain(words.data() + at, count, plain, plain_misses);
            for (int i = 0; i < count; ++i)
                differing += std::memcmp(&fast[i], &plain[i], sizeof(double)) != 0;
            EXPECT_EQ(fast_misses, plain_misses);
            if (count == 64) misses += __builtin_popcountll(plain_misses);
        }
    }
    std::cout << 2 * blocks << " words: " << misses << " misses, " << differing
              << " normals differ\n";
    EXPECT_EQ(differing, 0);
    EXPECT_GT(misses, 2 * blocks / 100);  // ~1.4% of words leave their layer's core
}

TEST(Rng, FillNormalsEqualsRepeatedNextNormalBitForBit) {
    const std::size_t count = 1000003;  // ~1e4 draws take the tail or a wedge
    constexpr double kZigguratR = 3.6541528853610088;
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
        // Words consumed: exactly one of this stream per normal; the tail draws (2 or more
        // words each), wedge tests and rejections take theirs from the miss stream.
        RandomStream counter = stream_for(k);
        std::size_t words = 0;
        while (counter.next_u64() != next)
            ++words;
        std::cout << "key (" << k.seed << ", " << k.grid_point << ", " << k.trial
                  << "): largest difference " << largest_difference(whole, reference) << " / "
                  << largest_difference(pieces, reference) << ", tail draws " << tail << ", "
                  << words << " words for " << count << " normals\n";
        EXPECT_GT(tail, 100);
        EXPECT_EQ(words, count);
        EXPECT_TRUE(same_bits(whole.data(), reference.data(), count));
        EXPECT_TRUE(same_bits(pieces.data(), reference.data(), count));
        // Same words consumed: the streams go on identically.
        EXPECT_EQ(fast.next_u64(), next);
        EXPECT_EQ(chunked.next_u64(), next);
    }
}

TEST(Rng, SubstreamsFromTwoToThe31AreReservedForTheMissStreams) {
    EXPECT_NO_THROW(RandomStream(1, 0, 0, 0x7FFFFFFFu));
    EXPECT_THROW(RandomStream(1, 0, 0, 0x80000000u), std::invalid_argument);
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

            // The ranked contributions written in place: row position[i] = α_i·v_i, as the
            // reference values scaled and copied one row at a time (a reversed ranking here).
            std::vector<int> position(c.n);
            Eigen::VectorXd alpha(c.n);
            for (int i = 0; i < c.n; ++i) {
                position[i] = c.n - 1 - i;
                alpha[i] = 1.0 / (3.0 + i);
            }
            theory::RowMatrix ranked, scratch;
            RandomStream fast_ranked(9, 2, trial);
            generator.draw_ranked_contributions(fast_ranked, position, alpha, ranked, scratch);
            theory::RowMatrix expected_ranked(c.n, c.d);
            for (int i = 0; i < c.n; ++i)
                expected_ranked.row(position[i]) = alpha[i] * expected_values.row(i);
            largest = std::max(largest, (ranked - expected_ranked).cwiseAbs().maxCoeff());
            EXPECT_TRUE(same_bits(ranked.data(), expected_ranked.data(), ranked.size()));

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

TEST(Generator, Avx2RowKernelsEqualTheirPlainTwinsBitForBit) {
    namespace gk = generator_kernels;
    RandomStream stream(3, 1, 4);
    double largest = 0;
    for (int d : {1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 33, 128, 131}) {
        std::vector<double> z(d), g0(d), a(d), sink(d);
        stream.fill_normals(z.data(), z.size());
        stream.fill_normals(g0.data(), g0.size());
        stream.fill_normals(a.data(), a.size());
        stream.fill_normals(sink.data(), sink.size());
        for (bool exact : {true, false}) {
            for (bool first : {true, false}) {
                gk::Ar1Row step;
                step.scale = 1 / std::sqrt(static_cast<double>(d));
                step.r = std::exp(-0.05);
                step.innovation = std::sqrt(1 - step.r * step.r);
                step.first = first;
                step.exact = exact;
                step.weight = 0.013;
                step.rho0 = 0.3;
                step.keep = std::sqrt(1 - 0.09);
                std::vector<double> row = z, a_fast = a, sink_fast = sink;
                std::vector<double> row_plain = z, a_plain = a, sink_plain = sink;
                fast_ar1_row(row.data(), a_fast.data(), sink_fast.data(), g0.data(), step, d);
                gk::ar1_row_plain(row_plain.data(), a_plain.data(), sink_plain.data(), g0.data(),
                                  step, d);
                largest = std::max({largest, largest_difference(row, row_plain),
                                    largest_difference(a_fast, a_plain),
                                    largest_difference(sink_fast, sink_plain)});
                EXPECT_TRUE(same_bits(row.data(), row_plain.data(), row.size())) << d;
                EXPECT_TRUE(same_bits(a_fast.data(), a_plain.data(), a.size())) << d;
                EXPECT_TRUE(same_bits(sink_fast.data(), sink_plain.data(), sink.size())) << d;
            }
        }
        const double fast_sum = fast_sum_of_squares(z.data(), d);
        const double plain_sum = attngeo::sum_of_squares_plain(z.data(), d);
        largest = std::max(largest, std::abs(fast_sum - plain_sum));
        EXPECT_EQ(std::memcmp(&fast_sum, &plain_sum, sizeof fast_sum), 0) << d;
        std::vector<double> row = z, row_plain = z;
        fast_normalise_and_scale_row(row.data(), 1.7, 1.0, d);  // normalise_row's pass
        gk::normalise_row_plain(row_plain.data(), 1.7, d);
        largest = std::max(largest, largest_difference(row, row_plain));
        EXPECT_TRUE(same_bits(row.data(), row_plain.data(), row.size())) << d;
        // The fused normalise-then-α pass against its twin and against the two passes.
        std::vector<double> scaled = z, scaled_plain = z, two_passes = row_plain;
        fast_normalise_and_scale_row(scaled.data(), 1.7, 0.0123, d);
        gk::normalise_and_scale_row_plain(scaled_plain.data(), 1.7, 0.0123, d);
        for (double& x : two_passes)
            x = 0.0123 * x;
        largest = std::max(largest, largest_difference(scaled, two_passes));
        EXPECT_TRUE(same_bits(scaled.data(), scaled_plain.data(), scaled.size())) << d;
        EXPECT_TRUE(same_bits(scaled.data(), two_passes.data(), scaled.size())) << d;
        std::vector<double> zero(d, 0.0);
        gk::normalise_row(zero.data(), 1.7, d);
        EXPECT_EQ(*std::max_element(zero.begin(), zero.end()), 0.0);
    }
    std::cout << "row kernels: largest difference " << largest << "\n";
}
