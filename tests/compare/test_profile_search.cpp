// The profile fit's grid scans: the AVX2 twins against the plain twins (the same candidate, to
// the bit, on noisy four-phase profiles and on degenerate ones), and the exact objective against
// theory's weights summed the plain way.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "common/cpu_features.hpp"
#include "compare/fits.hpp"
#include "compare/profile_search.hpp"
#include "theory/assumption_models.hpp"

namespace attngeo::compare {
namespace {

using profile_search::Candidate;

// A four-phase profile of L + 1 positions with log-normal noise; every `zero_every`-th token
// gets weight 0 (the fit masks it), none when 0.
std::vector<double> noisy_profile(int L, unsigned seed, int zero_every) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> unit(0, 1);
    theory::Assumption3Profile p;
    p.L = L;
    p.p_sink = 0.05 + 0.5 * unit(rng);
    p.T1 = static_cast<int>(unit(rng) * L / 2);
    p.T2 = p.T1 + static_cast<int>(unit(rng) * (L - p.T1));
    p.eta = p.T1 < p.T2 ? 0.9 * unit(rng) : 0.01 * unit(rng);
    p.omega = 3.1 * unit(rng);
    const Eigen::VectorXd a = theory::assumption3_weights(p);
    std::vector<double> alpha(a.data(), a.data() + a.size());
    std::normal_distribution<double> noise(0, 0.3);
    double total = 0;
    for (int i = 1; i <= L; ++i) {
        alpha[i] = zero_every > 0 && i % zero_every == 0 ? 0.0 : alpha[i] * std::exp(noise(rng));
        total += alpha[i];
    }
    for (int i = 1; i <= L; ++i)
        alpha[i] *= (1 - alpha[0]) / total;
    return alpha;
}

double largest_difference(const Candidate& a, const Candidate& b) {
    return std::max({std::abs(a.omega - b.omega), std::abs(a.eta - b.eta), std::abs(a.sse - b.sse),
                     std::abs(double(a.T1 - b.T1)), std::abs(double(a.T2 - b.T2))});
}

void expect_same(const Candidate& plain, const Candidate& fast, const char* what, int L) {
    std::printf("%s, L = %d: T1 %d/%d T2 %d/%d, largest difference %.3g\n", what, L, plain.T1,
                fast.T1, plain.T2, fast.T2, largest_difference(plain, fast));
    EXPECT_EQ(plain.T1, fast.T1);
    EXPECT_EQ(plain.T2, fast.T2);
    EXPECT_EQ(plain.omega, fast.omega);
    EXPECT_EQ(plain.eta, fast.eta);
    EXPECT_EQ(plain.sse, fast.sse);
}

TEST(ProfileSearch, Avx2TwinsReturnThePlainCandidatesToTheBit) {
    if (!cpu_has_avx2()) GTEST_SKIP() << "no AVX2 on this CPU";
    int cases = 0;
    for (int L : {2, 3, 7, 40, 129, 511}) {
        for (unsigned seed = 1; seed <= 4; ++seed) {
            const auto p =
                profile_search::make_log_profile(noisy_profile(L, seed, seed == 3 ? 5 : 0));
            // Grids whose ω count is not a multiple of the four lanes, and one that is.
            for (int steps : {2 * L, 2 * L + 1, 7}) {
                const Candidate plain = profile_search::coarse_search_plain(p, steps);
                expect_same(plain, profile_search::coarse_search_avx2(p, steps), "coarse", L);
                Candidate from = plain;
                if (from.T1 == from.T2) from.T1 = std::max(0, from.T2 - 1), from.T2 = from.T1 + 1;
                expect_same(profile_search::omega_grid_plain(p, from, steps),
                            profile_search::omega_grid_avx2(p, from, steps), "omega grid", L);
                ++cases;
            }
        }
    }
    EXPECT_EQ(cases, 72);
}

// A flat profile (every linear fit degenerate) and one with a single positive token pair.
TEST(ProfileSearch, Avx2TwinsAgreeOnDegenerateProfiles) {
    if (!cpu_has_avx2()) GTEST_SKIP() << "no AVX2 on this CPU";
    std::vector<double> flat(65, 0.5 / 64);
    flat[0] = 0.5;
    std::vector<double> sparse(65, 0.0);
    sparse[0] = 0.5;
    sparse[10] = sparse[40] = 0.25;
    for (const auto& alpha : {flat, sparse}) {
        const auto p = profile_search::make_log_profile(alpha);
        expect_same(profile_search::coarse_search_plain(p, 128),
                    profile_search::coarse_search_avx2(p, 128), "coarse, degenerate", 64);
    }
}

// The exact objective (with its cached cosines) against theory's p_base and shape.
TEST(ProfileSearch, ExactObjectiveEqualsTheoryWeightsToTheBit) {
    const std::vector<double> alpha = noisy_profile(300, 7, 11);
    double largest = 0;
    for (int T1 : {0, 40, 120})
        for (int T2 : {T1, T1 + 1, 200, 300})
            for (double eta : {0.0, 0.3, 0.95})
                for (double omega : {0.0, 0.7, 3.0}) {
                    theory::Assumption3Profile p;
                    p.L = 300;
                    p.p_sink = alpha[0];
                    p.T1 = T1;
                    p.T2 = T2;
                    p.eta = T1 < T2 ? eta : eta / 10;
                    p.omega = omega;
                    const double log_base = std::log(theory::assumption3_p_base(p));
                    double reference = 0;
                    for (int i = 1; i <= p.L; ++i) {
                        if (!(alpha[i] > 0)) continue;
                        const double log_w =
                            i > T2 ? p.eta * (i - T2) : std::log(theory::assumption3_shape(p, i));
                        const double r = std::log(alpha[i]) - log_base - log_w;
                        reference += r * r;
                    }
                    // Twice: the second call reads the cosines the first one cached.
                    for (int call = 0; call < 2; ++call) {
                        const double ours = assumption3_log_sse(alpha, p);
                        largest = std::max(largest, std::abs(ours - reference));
                        EXPECT_EQ(ours, reference) << T1 << " " << T2 << " " << eta << " " << omega;
                    }
                }
    std::printf("exact objective: largest difference %.3g\n", largest);
}

}  // namespace
}  // namespace attngeo::compare
