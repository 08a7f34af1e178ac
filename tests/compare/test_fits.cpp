// Tests of compare/fits: known answers for the decay fits (clean and noisy), a plain dense-grid
// reference in long double for β, the offset model, Assumption-3 profile recovery, degenerate
// profiles and cosines, and bad input.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "compare/fits.hpp"
#include "theory/assumption_models.hpp"

namespace attngeo::compare {
namespace {

std::vector<double> exponential(double beta, int K, double c_inf = 0) {
    std::vector<double> c(K);
    for (int k = 1; k <= K; ++k)
        c[k - 1] = c_inf + (1 - c_inf) * std::exp(-beta * k);
    return c;
}

std::vector<double> with_noise(std::vector<double> c, double sigma, unsigned seed) {
    std::mt19937_64 rng(seed);
    std::normal_distribution<double> noise(0, sigma);
    for (double& x : c)
        x = std::clamp(x + noise(rng), -1.0, 1.0);
    return c;
}

// The plain reference: Σ(c − e^{−βk})² in long double on a dense log grid over [1e-6, 50]
// (20 001 points), then a second dense grid over the two cells around the best point.
double reference_beta(const std::vector<double>& c) {
    auto sse = [&](long double beta) {
        long double s = 0;
        for (std::size_t k = 0; k < c.size(); ++k) {
            const long double r = c[k] - std::exp(-beta * static_cast<long double>(k + 1));
            s += r * r;
        }
        return s;
    };
    auto scan = [&](long double u_lo, long double u_hi, int points) {
        long double best_u = u_lo, best = sse(std::exp(u_lo));
        for (int j = 1; j < points; ++j) {
            const long double u = u_lo + (u_hi - u_lo) * j / (points - 1);
            const long double s = sse(std::exp(u));
            if (s < best) best = s, best_u = u;
        }
        return best_u;
    };
    const long double lo = std::log(1e-6L), hi = std::log(50.0L);
    const long double step = (hi - lo) / 20000;
    const long double u = scan(lo, hi, 20001);
    const long double u2 = scan(std::max(lo, u - step), std::min(hi, u + step), 4001);
    return static_cast<double>(std::exp(u2));
}

theory::Assumption3Profile profile(int L, double p_sink, int T1, int T2, double eta, double omega) {
    theory::Assumption3Profile p;
    p.L = L;
    p.p_sink = p_sink;
    p.T1 = T1;
    p.T2 = T2;
    p.eta = eta;
    p.omega = omega;
    return p;
}

std::vector<double> weights(const theory::Assumption3Profile& p) {
    const Eigen::VectorXd a = theory::assumption3_weights(p);
    return std::vector<double>(a.data(), a.data() + a.size());
}

// Multiplies α_i (i ≥ 1) by e^{σ z_i} and renormalises the tokens to keep α_0 and Σ = 1.
std::vector<double> with_log_noise(std::vector<double> alpha, double sigma, unsigned seed) {
    std::mt19937_64 rng(seed);
    std::normal_distribution<double> noise(0, sigma);
    double total = 0;
    for (std::size_t i = 1; i < alpha.size(); ++i) {
        alpha[i] *= std::exp(noise(rng));
        total += alpha[i];
    }
    for (std::size_t i = 1; i < alpha.size(); ++i)
        alpha[i] *= (1 - alpha[0]) / total;
    return alpha;
}

TEST(DecayFit, CleanExponentialIsRecoveredToRounding) {
    double worst = 0;
    for (double beta : {0.001, 0.01, 0.05, 0.3, 2.0, 10.0}) {
        const DecayFit fit = fit_exponential_decay(exponential(beta, 64));
        const double rel = std::abs(fit.beta - beta) / beta;
        worst = std::max(worst, rel);
        EXPECT_LT(rel, 1e-6) << "beta " << beta;
        EXPECT_LT(fit.mae, 1e-8) << "beta " << beta;
        EXPECT_EQ(fit.lags, 64);
    }
    std::cout << "largest relative beta error (clean): " << worst << "\n";
}

TEST(DecayFit, NoisyExponentialWithinTwoPercent) {
    double worst = 0;
    for (unsigned seed = 1; seed <= 5; ++seed) {
        const double beta = 0.05 * seed;
        const auto c = with_noise(exponential(beta, 64), 0.005, seed);
        const DecayFit fit = fit_exponential_decay(c);
        const double rel = std::abs(fit.beta - beta) / beta;
        worst = std::max(worst, rel);
        EXPECT_LT(rel, 0.02) << "beta " << beta;
        EXPECT_NEAR(fit.mae, 0.005 * std::sqrt(2 / M_PI), 0.002);  // E|N(0, σ)| = σ√(2/π)
    }
    std::cout << "largest relative beta error (noise 0.005): " << worst << "\n";
}

TEST(DecayFit, AgreesWithDenseGridReference) {
    std::vector<std::vector<double>> cases = {
        with_noise(exponential(0.07, 64), 0.02, 11), with_noise(exponential(0.5, 10), 0.05, 12),
        exponential(0.1, 64, 0.3),  // an offset the plain model does not have
        with_noise(exponential(0.02, 126, 0.1), 0.01, 13), exponential(0.9, 3)};
    double worst = 0;
    for (std::size_t i = 0; i < cases.size(); ++i) {
        const DecayFit fit = fit_exponential_decay(cases[i]);
        const double reference = reference_beta(cases[i]);
        const double rel = std::abs(fit.beta - reference) / reference;
        worst = std::max(worst, rel);
        EXPECT_LT(rel, 1e-5) << "case " << i << " brent " << fit.beta << " grid " << reference;
        // Brent is never worse than the grid's best point (beyond rounding).
        EXPECT_LE(exponential_decay_sse(cases[i], fit.beta),
                  exponential_decay_sse(cases[i], reference) * (1 + 1e-12) + 1e-300)
            << "case " << i;
    }
    std::cout << "largest relative difference Brent vs dense grid: " << worst << "\n";
}

TEST(DecayFit, OffsetModelRecoversFloorAndRate) {
    double worst = 0;
    for (double c_inf : {-0.1, 0.0, 0.2, 0.6}) {
        for (double beta : {0.03, 0.2, 1.0}) {
            const OffsetDecayFit fit = fit_offset_exponential_decay(exponential(beta, 64, c_inf));
            worst =
                std::max({worst, std::abs(fit.beta - beta) / beta, std::abs(fit.c_inf - c_inf)});
            EXPECT_NEAR(fit.beta, beta, 1e-6 * beta) << c_inf << " " << beta;
            EXPECT_NEAR(fit.c_inf, c_inf, 1e-7) << c_inf << " " << beta;
            EXPECT_LT(fit.mae, 1e-8);
        }
    }
    std::cout << "largest offset-model error (relative beta, absolute c_inf): " << worst << "\n";
    // With noise: within 2% / 0.01.
    const auto noisy = with_noise(exponential(0.1, 64, 0.25), 0.003, 7);
    const OffsetDecayFit fit = fit_offset_exponential_decay(noisy);
    EXPECT_NEAR(fit.beta, 0.1, 0.002);
    EXPECT_NEAR(fit.c_inf, 0.25, 0.01);
    // The plain model cannot fit the floor: its MAE is much larger.
    EXPECT_GT(fit_exponential_decay(exponential(0.1, 64, 0.25)).mae, 20 * fit.mae);
}

TEST(DecayFit, DegenerateCosines) {
    const DecayFit ones = fit_exponential_decay(std::vector<double>(32, 1.0));
    EXPECT_EQ(ones.beta, kBetaMin);  // the optimum is the bound itself, reported exactly
    EXPECT_LT(ones.mae, 1e-3);
    const DecayFit zeros = fit_exponential_decay(std::vector<double>(32, 0.0));
    EXPECT_EQ(zeros.beta, kBetaMax);  // numerically e^{−βk} = 0: β → ∞, reported as the bound
    EXPECT_LT(zeros.mae, 1e-12);
    const DecayFit negative = fit_exponential_decay(std::vector<double>(8, -0.3));
    EXPECT_EQ(negative.beta, kBetaMax);
    // A measured curve whose lag-1 cosine is negative but later ones are not (as real heads
    // have): the objective only falls as β grows, so the answer is the bound, not wherever an
    // optimiser stops on the plateau.
    const DecayFit mixed = fit_exponential_decay({-0.04, -0.02, 0.01, 0.04, 0.0, 0.02});
    EXPECT_EQ(mixed.beta, kBetaMax);
    EXPECT_NEAR(negative.mae, 0.3, 1e-12);
    const DecayFit one_lag = fit_exponential_decay({0.5});
    EXPECT_NEAR(one_lag.beta, std::log(2.0), 1e-8);
    // Offset model on a constant: any β with c∞ = c fits exactly.
    const OffsetDecayFit constant = fit_offset_exponential_decay(std::vector<double>(16, 0.4));
    EXPECT_NEAR(constant.mae, 0, 1e-6);
    EXPECT_TRUE(std::isfinite(constant.beta) && std::isfinite(constant.c_inf));
}

TEST(DecayFit, BadInputThrowsNamingTheFunction) {
    EXPECT_THROW(fit_exponential_decay({}), std::domain_error);
    EXPECT_THROW(fit_exponential_decay({0.5, NAN}), std::domain_error);
    EXPECT_THROW(fit_exponential_decay({0.5, INFINITY}), std::domain_error);
    EXPECT_THROW(fit_exponential_decay({1.5}), std::domain_error);
    EXPECT_THROW(fit_offset_exponential_decay({0.5}), std::domain_error);
    EXPECT_THROW(fit_offset_exponential_decay({0.5, -1.2}), std::domain_error);
    try {
        fit_exponential_decay({0.2, 2.0});
        FAIL();
    } catch (const std::domain_error& e) {
        EXPECT_EQ(std::string(e.what()).rfind("fit_exponential_decay: c(2)", 0), 0u) << e.what();
    }
}

TEST(ProfileFit, RecoversAKnownFourPhaseProfile) {
    const auto truth = profile(255, 0.3, 30, 200, 0.02, 0.05);
    const auto alpha = weights(truth);
    const ProfileFit fit = fit_assumption3_profile(alpha);
    std::cout << "fit T1=" << fit.profile.T1 << " T2=" << fit.profile.T2
              << " eta=" << fit.profile.eta << " omega=" << fit.profile.omega
              << " r2_log=" << fit.r2_log << " rmse_log=" << fit.rmse_log << "\n";
    EXPECT_EQ(fit.profile.L, 255);
    EXPECT_DOUBLE_EQ(fit.profile.p_sink, 0.3);
    EXPECT_NEAR(fit.profile.T1, 30, 2);
    EXPECT_NEAR(fit.profile.T2, 200, 2);
    EXPECT_NEAR(fit.profile.eta, 0.02, 1e-3 * 0.02);
    EXPECT_NEAR(fit.profile.omega, 0.05, 1e-3 * 0.05);
    const double p_base = theory::assumption3_p_base(truth);
    EXPECT_NEAR(fit.p_base, p_base, 1e-4 * p_base);
    EXPECT_GT(fit.r2_log, 0.9999);
    EXPECT_LT(fit.rmse_log, 1e-3);
    EXPECT_EQ(fit.positions, 255);
    // The returned parameters reproduce the profile through theory::assumption3_weights.
    const auto refit = weights(fit.profile);
    double largest = 0;
    for (std::size_t i = 0; i < alpha.size(); ++i)
        largest = std::max(largest, std::abs(std::log(refit[i] / alpha[i])));
    std::cout << "largest |log alpha_fit - log alpha_true|: " << largest << "\n";
    EXPECT_LT(largest, 5e-3);
}

TEST(ProfileFit, RecoversProfilesUnderNoiseAtLeastAsWellAsTheTruth) {
    struct Case {
        int L, T1, T2;
        double p_sink, eta, omega, sigma;
    };
    const Case cases[] = {{255, 30, 200, 0.3, 0.05, 0.1, 0.01},
                          {1023, 100, 800, 0.3, 0.02, 0.05, 0.002},
                          {127, 20, 90, 0.05, 0.3, 0.4, 0.02},
                          {63, 10, 50, 0.2, 0.1, 0.3, 0.0}};
    double worst_T2 = 0, worst_eta = 0;
    for (const Case& c : cases) {
        const auto truth = profile(c.L, c.p_sink, c.T1, c.T2, c.eta, c.omega);
        const auto alpha = with_log_noise(weights(truth), c.sigma, 5);
        const ProfileFit fit = fit_assumption3_profile(alpha);
        const std::string where = "L=" + std::to_string(c.L);
        // The search found a minimum no worse than the generating parameters.
        EXPECT_LE(assumption3_log_sse(alpha, fit.profile),
                  assumption3_log_sse(alpha, truth) * (1 + 1e-9) + 1e-12)
            << where;
        EXPECT_NEAR(fit.profile.T2, c.T2, 3) << where;
        EXPECT_NEAR(fit.profile.eta, c.eta, 0.05 * c.eta) << where;
        EXPECT_NEAR(fit.profile.omega, c.omega, 0.05 * c.omega) << where;
        worst_T2 = std::max(worst_T2, std::abs(fit.profile.T2 - c.T2 + 0.0));
        worst_eta = std::max(worst_eta, std::abs(fit.profile.eta - c.eta) / c.eta);
    }
    std::cout << "largest |T2 error|: " << worst_T2 << ", largest relative eta error: " << worst_eta
              << "\n";
}

TEST(ProfileFit, NoOscillatoryPhase) {
    const auto truth = profile(127, 0.1, 100, 100, 0.08, 0.0);
    const ProfileFit fit = fit_assumption3_profile(weights(truth));
    EXPECT_EQ(fit.profile.T2, 100);
    EXPECT_NEAR(fit.profile.eta, 0.08, 1e-6);
    EXPECT_GT(fit.r2_log, 0.999999);
}

TEST(ProfileFit, DegenerateProfilesGiveFiniteHonestFits) {
    // Uniform after the sink: the flat model is exact.
    std::vector<double> flat(65, 0.5 / 64);
    flat[0] = 0.5;
    const ProfileFit f1 = fit_assumption3_profile(flat);
    EXPECT_NEAR(f1.p_base, 0.5 / 64, 1e-15);
    EXPECT_LT(f1.rmse_log, 1e-9);
    EXPECT_DOUBLE_EQ(f1.r2_log, 1.0);
    // A power-law decay is not four-phase: finite parameters, a valid profile, R² < 1.
    const Eigen::VectorXd z = theory::zipf_weights(127, 1.1);
    const ProfileFit f2 = fit_assumption3_profile(std::vector<double>(z.data(), z.data() + 128));
    EXPECT_TRUE(std::isfinite(f2.p_base) && std::isfinite(f2.profile.eta) &&
                std::isfinite(f2.profile.omega) && std::isfinite(f2.r2_log));
    EXPECT_LT(f2.r2_log, 1.0);
    EXPECT_NO_THROW(theory::validate_assumption3(f2.profile, "test"));
    // Zeros are left out of the log residuals.
    auto holes = weights(profile(63, 0.2, 10, 50, 0.1, 0.3));
    const double moved = holes[5] + holes[6];
    holes[5] = holes[6] = 0;
    holes[7] += moved;
    const ProfileFit f3 = fit_assumption3_profile(holes);
    EXPECT_EQ(f3.positions, 61);
    EXPECT_TRUE(std::isfinite(f3.r2_log));
}

// The at_bound flags of fits.csv and profile.csv: a value at a clamp of its search range is
// flagged, one inside it is not. The plain reference is the range itself.
TEST(FitClamps, BetaAtEitherEndOfItsRange) {
    EXPECT_TRUE(beta_at_bound(kBetaMin));
    EXPECT_TRUE(beta_at_bound(kBetaMax));
    EXPECT_FALSE(beta_at_bound(0.1));
    EXPECT_FALSE(beta_at_bound(kBetaMax * 0.99));
    EXPECT_FALSE(beta_at_bound(kBetaMin * 1.01));
    // Fits that end at the bound (see DecayFit.DegenerateCosines) are flagged; a clean decay
    // is not.
    EXPECT_TRUE(beta_at_bound(fit_exponential_decay(std::vector<double>(16, 0.0)).beta));
    EXPECT_TRUE(beta_at_bound(fit_exponential_decay(std::vector<double>(16, 1.0)).beta));
    EXPECT_FALSE(beta_at_bound(fit_exponential_decay(exponential(0.2, 32)).beta));
}

TEST(FitClamps, ProfileValuesAtTheirLimits) {
    ProfileFit fit;
    fit.profile = profile(255, 0.3, 30, 200, 0.02, 0.05);
    fit.eta_limit = 0.999;
    EXPECT_FALSE(profile_clamps(fit).any());
    fit.profile.eta = 0.999;
    EXPECT_TRUE(profile_clamps(fit).eta);
    fit.profile.eta = 0.02;
    fit.profile.omega = 3.14159265358979323846;
    EXPECT_TRUE(profile_clamps(fit).omega);
    EXPECT_FALSE(profile_clamps(fit).eta);
    fit.profile.T1 = fit.profile.T2;  // no oscillatory phase: ω plays no part
    EXPECT_FALSE(profile_clamps(fit).omega);
    fit.profile.p_sink = 3e-12;
    EXPECT_TRUE(profile_clamps(fit).p_sink);
    EXPECT_TRUE(profile_clamps(fit).any());
    // A real fit: the planted profile sits inside every range and records its η limit, which
    // is min(0.999, 600 / (L − T2)) with an oscillatory phase.
    const ProfileFit planted =
        fit_assumption3_profile(weights(profile(255, 0.3, 30, 200, 0.02, 0.05)));
    EXPECT_DOUBLE_EQ(planted.eta_limit, 0.999);
    EXPECT_FALSE(profile_clamps(planted).any());
    // A sink with almost no mass is flagged from the data itself.
    auto no_sink = weights(profile(63, 0.2, 10, 50, 0.1, 0.3));
    no_sink[1] += no_sink[0] - 3e-12;
    no_sink[0] = 3e-12;
    EXPECT_TRUE(profile_clamps(fit_assumption3_profile(no_sink)).p_sink);
}

TEST(ProfileFit, BadInputThrowsNamingTheFunction) {
    EXPECT_THROW(fit_assumption3_profile({0.5, 0.5}), std::domain_error);
    EXPECT_THROW(fit_assumption3_profile({0.5, 0.3, 0.3}), std::domain_error);   // sum 1.1
    EXPECT_THROW(fit_assumption3_profile({0.5, 0.6, -0.1}), std::domain_error);  // negative
    EXPECT_THROW(fit_assumption3_profile({0.0, 0.5, 0.5}), std::domain_error);   // no sink
    EXPECT_THROW(fit_assumption3_profile({0.5, 0.5, 0.0}), std::domain_error);   // one token
    EXPECT_THROW(fit_assumption3_profile({0.5, NAN, 0.5}), std::domain_error);
    try {
        fit_assumption3_profile({0.5, 0.3, 0.3});
        FAIL();
    } catch (const std::domain_error& e) {
        EXPECT_EQ(std::string(e.what()).rfind("fit_assumption3_profile: alpha sums to", 0), 0u)
            << e.what();
    }
}

}  // namespace
}  // namespace attngeo::compare
