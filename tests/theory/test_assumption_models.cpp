// Tests of the assumption models (docs/design.md §4, paper §3.1–3.3), the Table-2 regimes and the
// Table-1 sensitivities: values against formulas written here, validation, regime boundaries
// counted by hand, and the central differences against our own finite differences.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <iostream>
#include <limits>
#include <map>
#include <numeric>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "theory/bounds.hpp"
#include "theory/assumption_models.hpp"
#include "theory/parametric.hpp"

namespace {

namespace th = attngeo::theory;
using th::Assumption3Profile;
using th::BoundRow;
using th::BoundSettings;
using th::BoundVariant;
using th::ModelParameters;
using th::Regime;

constexpr double kInf = std::numeric_limits<double>::infinity();
const double kPi = std::acos(-1.0);

std::string sci(double x) {
    std::ostringstream out;
    out << std::scientific << std::setprecision(3) << x;
    return out.str();
}

// Assumption 3 written out: shape 1 (i ≤ T1), 1 + η cos(ωi) (T1 < i ≤ T2), e^{η(i−T2)}
// (i > T2), scaled by p_base = (1 − p_sink)/Σw; α_0 = p_sink.
struct MyProfile {
    std::vector<double> shape, alpha;
    double p_base = 0;
};
MyProfile my_assumption3(const Assumption3Profile& p) {
    MyProfile out;
    out.shape.assign(p.L + 1, 0.0);
    double total = 0;
    for (int i = 1; i <= p.L; ++i) {
        if (i <= p.T1)
            out.shape[i] = 1;
        else if (i <= p.T2)
            out.shape[i] = 1 + p.eta * std::cos(p.omega * i);
        else
            out.shape[i] = std::exp(p.eta * (i - p.T2));
        total += out.shape[i];
    }
    out.p_base = (1 - p.p_sink) / total;
    out.alpha.assign(p.L + 1, p.p_sink);
    for (int i = 1; i <= p.L; ++i)
        out.alpha[i] = out.p_base * out.shape[i];
    return out;
}

// ---------------------------------------------------------------------------------------------
// Assumption 3.

TEST(ModelsAssumption3, WeightsFollowThePhases) {
    std::vector<Assumption3Profile> profiles;
    profiles.push_back(Assumption3Profile{});  // the paper preset: L=1024, T1=100, T2=800
    profiles.push_back({50, 0.6, 10, 30, 0.5, 0.7});
    profiles.push_back({20, 0.1, 0, 20, 0.9, 2.0});  // oscillation only
    profiles.push_back({20, 0.1, 0, 0, 0.1, 1.0});   // exponential only
    profiles.push_back({7, 0.5, 7, 7, 0.3, 1.0});    // plateau only
    double worst = 0;
    for (const Assumption3Profile& p : profiles) {
        SCOPED_TRACE("L=" + std::to_string(p.L) + " T1=" + std::to_string(p.T1) +
                     " T2=" + std::to_string(p.T2));
        const Eigen::VectorXd alpha = th::assumption3_weights(p);
        const MyProfile want = my_assumption3(p);
        ASSERT_EQ(alpha.size(), p.L + 1);
        EXPECT_EQ(alpha[0], p.p_sink);  // the sink mass is exact
        EXPECT_NEAR(alpha.sum(), 1.0, 1e-12);
        const double p_base = th::assumption3_p_base(p);
        EXPECT_NEAR(p_base, want.p_base, 1e-13 * want.p_base);
        for (int i = 1; i <= p.L; ++i) {
            if (i <= p.T1) {
                EXPECT_EQ(alpha[i], p_base) << "plateau i=" << i;  // exactly p_base
            }
            EXPECT_NEAR(th::assumption3_shape(p, i), want.shape[i], 1e-15 * want.shape[i]) << i;
            const double rel = std::abs(alpha[i] - want.alpha[i]) / want.alpha[i];
            worst = std::max(worst, rel);
            EXPECT_LE(rel, 1e-13) << "i=" << i;
        }
    }
    std::cout << "[ info     ] assumption3 weights: largest relative difference " << sci(worst)
              << "\n";
    RecordProperty("max_rel_diff", sci(worst));
}

TEST(ModelsAssumption3, HandComputedSmallProfile) {
    // L = 6, p_sink = 0.4, T1 = 2, T2 = 4, η = 0.5, ω = π: shapes
    //   i=1,2: 1;  i=3: 1 + 0.5·cos(3π) = 0.5;  i=4: 1 + 0.5·cos(4π) = 1.5;
    //   i=5: e^{0.5};  i=6: e^{1}.   Σ = 4 + e^{0.5} + e   -> p_base = 0.6/(4 + e^{0.5} + e).
    const Assumption3Profile p{6, 0.4, 2, 4, 0.5, kPi};
    const double p_base = 0.6 / (4 + std::exp(0.5) + std::exp(1.0));
    EXPECT_NEAR(th::assumption3_p_base(p), p_base, 1e-16);
    const Eigen::VectorXd a = th::assumption3_weights(p);
    const double want[] = {0.4,
                           p_base,
                           p_base,
                           0.5 * p_base,
                           1.5 * p_base,
                           std::exp(0.5) * p_base,
                           std::exp(1.0) * p_base};
    for (int i = 0; i <= 6; ++i)
        EXPECT_NEAR(a[i], want[i], 1e-16) << i;
}

TEST(ModelsAssumption3, NoOscillationWhenT1EqualsT2) {
    // T1 = T2: a plateau then the exponential phase; η ≥ 1 is allowed since no 1 + η cos term
    // can become negative.
    for (double eta : {0.3, 1.5}) {
        const Assumption3Profile p{30, 0.2, 12, 12, eta, 0.9};
        EXPECT_NO_THROW(th::validate_assumption3(p, "test"));
        const Eigen::VectorXd a = th::assumption3_weights(p);
        const double p_base = th::assumption3_p_base(p);
        for (int i = 1; i <= 12; ++i)
            EXPECT_EQ(a[i], p_base) << i;
        for (int i = 13; i <= 30; ++i) {
            EXPECT_NEAR(a[i], p_base * std::exp(eta * (i - 12)), 1e-15 * a[i]) << i;
        }
        // Σ = T1 + Σ_{k=1}^{L−T2} e^{ηk}: a geometric sum.
        const double q = std::exp(eta);
        const double total = 12 + q * (std::pow(q, 18) - 1) / (q - 1);
        EXPECT_NEAR(p_base, 0.8 / total, 1e-13 * p_base);
    }
    // Fully flat: T1 = T2 = L gives (1 − p_sink)/L everywhere.
    const Eigen::VectorXd flat = th::assumption3_weights({8, 0.2, 8, 8, 0.0, 0.0});
    for (int i = 1; i <= 8; ++i)
        EXPECT_DOUBLE_EQ(flat[i], 0.1);
}

TEST(ModelsAssumption3, ValidationThrows) {
    auto bad = [](Assumption3Profile p, const char* what) {
        EXPECT_THROW(th::validate_assumption3(p, "test"), std::domain_error) << what;
        EXPECT_THROW(th::assumption3_weights(p), std::domain_error) << what;
        ModelParameters params;
        params.profile = p;
        EXPECT_THROW(th::build_head_model(params), std::domain_error) << what;
    };
    const Assumption3Profile ok{20, 0.3, 5, 15, 0.2, 0.5};
    EXPECT_NO_THROW(th::validate_assumption3(ok, "test"));
    for (double p_sink : {0.0, 1.0, -0.1, 1.5, std::nan("")}) {
        Assumption3Profile p = ok;
        p.p_sink = p_sink;
        bad(p, "p_sink");
    }
    for (double eta : {-0.01, std::nan(""), kInf}) {
        Assumption3Profile p = ok;
        p.eta = eta;
        bad(p, "eta");
    }
    for (double eta : {1.0, 1.5}) {  // η ≥ 1 with T1 < T2
        Assumption3Profile p = ok;
        p.eta = eta;
        bad(p, "eta >= 1 with oscillation");
    }
    Assumption3Profile p = ok;
    p.T1 = 16;  // T1 > T2
    bad(p, "T1 > T2");
    p = ok;
    p.T2 = 21;  // T2 > L
    bad(p, "T2 > L");
    p = ok;
    p.T1 = -1;
    bad(p, "T1 < 0");
    p = ok;
    p.L = 0;
    p.T1 = p.T2 = 0;
    bad(p, "L = 0");
    p = ok;
    p.omega = kInf;
    bad(p, "omega inf");
    // e^{η(i−T2)} overflows the total: the parameters are individually valid, the weights
    // cannot be formed.
    p = {2000, 0.3, 0, 0, 1.0, 0.0};
    EXPECT_THROW(th::assumption3_weights(p), std::domain_error);
    EXPECT_THROW(th::assumption3_p_base(p), std::domain_error);
}

// ---------------------------------------------------------------------------------------------
// Other profiles, norms and cosines.

TEST(ModelsProfiles, UniformAndZipf) {
    const Eigen::VectorXd u = th::uniform_weights(9);
    ASSERT_EQ(u.size(), 10);
    for (int i = 0; i < 10; ++i)
        EXPECT_DOUBLE_EQ(u[i], 0.1);
    double worst = 0;
    for (double s : {0.0, 0.5, 1.0, 2.3}) {
        const int L = 40;
        const Eigen::VectorXd z = th::zipf_weights(L, s);
        double total = 0;
        for (int i = 0; i <= L; ++i)
            total += std::pow(i + 1.0, -s);
        EXPECT_NEAR(z.sum(), 1.0, 1e-14);
        for (int i = 0; i <= L; ++i) {
            const double want = std::pow(i + 1.0, -s) / total;
            worst = std::max(worst, std::abs(z[i] - want) / want);
            EXPECT_NEAR(z[i], want, 1e-14 * want) << "s=" << s << " i=" << i;
        }
        if (s > 0) {
            EXPECT_GT(z[0], z[1]);  // the sink is the heaviest token
        }
    }
    // Hand case: zipf:1 with L = 2 gives (1, 1/2, 1/3)/(11/6) = (6/11, 3/11, 2/11).
    const Eigen::VectorXd z = th::zipf_weights(2, 1.0);
    EXPECT_DOUBLE_EQ(z[0], 6.0 / 11);
    EXPECT_DOUBLE_EQ(z[1], 3.0 / 11);
    EXPECT_DOUBLE_EQ(z[2], 2.0 / 11);
    std::cout << "[ info     ] zipf weights: largest relative difference " << sci(worst) << "\n";

    for (double s : {-0.5, std::nan(""), kInf}) {
        EXPECT_THROW(th::zipf_weights(10, s), std::domain_error) << s;
    }
    EXPECT_THROW(th::zipf_weights(0, 1.0), std::domain_error);
    EXPECT_THROW(th::uniform_weights(0), std::domain_error);

    const Eigen::VectorXd w = th::normalized_weights({1, 3, 0, 4}, "test");
    EXPECT_DOUBLE_EQ(w[1], 3.0 / 8);
    EXPECT_EQ(w[2], 0.0);
    EXPECT_THROW(th::normalized_weights({1, -1, 2}, "test"), std::domain_error);
    EXPECT_THROW(th::normalized_weights({1, std::nan(""), 2}, "test"), std::domain_error);
    EXPECT_THROW(th::normalized_weights({0, 0, 0}, "test"), std::domain_error);
    EXPECT_THROW(th::normalized_weights({1}, "test"), std::domain_error);
}

TEST(ModelsProfiles, ParseProfileSpec) {
    EXPECT_EQ(th::parse_profile_spec("assumption3").kind, th::ProfileSpec::Kind::assumption3);
    EXPECT_EQ(th::parse_profile_spec("uniform").kind, th::ProfileSpec::Kind::uniform);
    const th::ProfileSpec z = th::parse_profile_spec("zipf:1.5");
    EXPECT_EQ(z.kind, th::ProfileSpec::Kind::zipf);
    EXPECT_EQ(z.zipf_exponent, 1.5);
    EXPECT_EQ(th::parse_profile_spec(th::to_string(z)).zipf_exponent, 1.5);  // round trip
    const th::ProfileSpec f = th::parse_profile_spec("file:weights.txt");
    EXPECT_EQ(f.kind, th::ProfileSpec::Kind::file);
    EXPECT_EQ(f.path, "weights.txt");
    for (const char* garbage : {"", "foo", "Uniform", "zipf", "zipf:", "zipf:abc", "zipf:-1",
                                "zipf:1x", "zipf:nan", "zipf:inf", "file:", "uniform2"}) {
        EXPECT_THROW(th::parse_profile_spec(garbage), std::domain_error) << garbage;
    }
}

TEST(ModelsNormsAndCosines, Assumption1Norms) {
    const Eigen::VectorXd v = th::assumption1_norms(5, 2.5, 0.2);
    ASSERT_EQ(v.size(), 6);
    EXPECT_DOUBLE_EQ(v[0], 0.5);  // λC
    for (int i = 1; i <= 5; ++i)
        EXPECT_EQ(v[i], 2.5);
    for (double lambda : {0.0, 1.0, 1.5, -0.1, std::nan("")}) {
        EXPECT_THROW(th::assumption1_norms(5, 1.0, lambda), std::domain_error) << lambda;
    }
    for (double C : {0.0, -1.0, std::nan(""), kInf}) {
        EXPECT_THROW(th::assumption1_norms(5, C, 0.5), std::domain_error) << C;
    }
    EXPECT_THROW(th::assumption1_norms(0, 1.0, 0.5), std::domain_error);
}

TEST(ModelsNormsAndCosines, ExponentialCosineMatrix) {
    // Hand case: β = ln 2, ρ0 = −0.25, L = 3:
    //   [[1, −.25, −.25, −.25], [−.25, 1, 1/2, 1/4], [−.25, 1/2, 1, 1/2], [−.25, 1/4, 1/2, 1]].
    const Eigen::MatrixXd c = th::exponential_cosine_matrix(3, std::log(2.0), -0.25);
    const double want[4][4] = {
        {1, -.25, -.25, -.25}, {-.25, 1, .5, .25}, {-.25, .5, 1, .5}, {-.25, .25, .5, 1}};
    for (int j = 0; j < 4; ++j)
        for (int k = 0; k < 4; ++k)
            EXPECT_NEAR(c(j, k), want[j][k], 1e-16) << j << "," << k;
    // Larger case against e^{−β|j−k|} written here.
    const int L = 50;
    const double beta = 0.13, rho0 = 0.4;
    const Eigen::MatrixXd m = th::exponential_cosine_matrix(L, beta, rho0);
    for (int j = 0; j <= L; ++j) {
        for (int k = 0; k <= L; ++k) {
            const double expected = j == k               ? 1.0
                                    : (j == 0 || k == 0) ? rho0
                                                         : std::exp(-beta * std::abs(j - k));
            EXPECT_NEAR(m(j, k), expected, 1e-15) << j << "," << k;
        }
    }
    EXPECT_NO_THROW(th::validate_cosine_matrix(m, "test"));
    for (double b : {0.0, -0.1, std::nan(""), kInf}) {
        EXPECT_THROW(th::exponential_cosine_matrix(5, b, 0.0), std::domain_error) << b;
    }
    for (double r : {1.01, -1.5, std::nan("")}) {
        EXPECT_THROW(th::exponential_cosine_matrix(5, 0.1, r), std::domain_error) << r;
    }
    EXPECT_NO_THROW(th::exponential_cosine_matrix(5, 0.1, -1.0));  // |ρ0| = 1 is allowed
    // build_head_model passes the same checks through.
    ModelParameters p;
    p.profile.L = 20;
    p.profile.T1 = 5;
    p.profile.T2 = 15;
    p.lambda = 1.0;
    EXPECT_THROW(th::build_head_model(p), std::domain_error);
    p.lambda = 0.1;
    p.beta = 0;
    EXPECT_THROW(th::build_head_model(p), std::domain_error);
    p.beta = 0.05;
    p.rho0 = -2;
    EXPECT_THROW(th::build_head_model(p), std::domain_error);
    p.rho0 = 0;
    p.C = -1;
    EXPECT_THROW(th::build_head_model(p), std::domain_error);
}

// ---------------------------------------------------------------------------------------------
// Table-2 regimes.

// L = 12, p_sink = 0.5, T1 = 4, T2 = 8, η = 0.5, ω = π. Shapes w_i (α_i = p_base·w_i):
//   i = 1..4: 1                 -> α = p_base            (IV)
//   i = 5, 7: 1 + 0.5cos(odd·π) = 0.5 -> below p_base     (V)
//   i = 6, 8: 1 + 0.5cos(even·π) = 1.5 = 1 + η -> the edge of III (≤ p_base(1+η) counts as III)
//   i = 9..12: e^{0.5}, e, e^{1.5}, e² > 1.5  -> II
// p_base = 0.5/(4 + 1 + 3 + e^{0.5} + e + e^{1.5} + e²) ≈ 0.02, so the sink (0.5) is on top.
// Ranked: N=1 sink (I); N=2..5 tokens 12, 11, 10, 9 (II); N=6, 7 tokens 6, 8 (III);
//         N=8..11 tokens 1..4 (IV); N=12, 13 tokens 5, 7 (V).  -> m1 = 6, m2 = 8, m3 = 12.
TEST(ModelsRegimes, BoundariesCountedByHand) {
    const Assumption3Profile p{12, 0.5, 4, 8, 0.5, kPi};
    const Eigen::VectorXd alpha = th::assumption3_weights(p);
    const double p_base = th::assumption3_p_base(p);
    const auto regimes = th::regimes_by_size(alpha, p_base, p.eta);
    ASSERT_EQ(regimes.size(), 13u);
    const std::vector<Regime> want = {Regime::I,   Regime::II,  Regime::II, Regime::II, Regime::II,
                                      Regime::III, Regime::III, Regime::IV, Regime::IV, Regime::IV,
                                      Regime::IV,  Regime::V,   Regime::V};
    for (std::size_t k = 0; k < want.size(); ++k) {
        EXPECT_EQ(regimes[k], want[k]) << "N=" << k + 1 << " got " << th::to_string(regimes[k]);
    }
    const th::RegimeBoundaries b = th::regime_boundaries(regimes);
    EXPECT_EQ(b.m1, 6);
    EXPECT_EQ(b.m2, 8);
    EXPECT_EQ(b.m3, 12);

    // The same shapes with a tiny sink (0.001 < p_base/2): the sink drops to the last place,
    // N = 1 is regime II (token 12) and every boundary moves down by one.
    // Ranked: 12, 11, 10, 9 (II), 6, 8 (III), 1..4 (IV), 5, 7, sink (V).
    const Assumption3Profile q{12, 0.001, 4, 8, 0.5, kPi};
    const auto r2 =
        th::regimes_by_size(th::assumption3_weights(q), th::assumption3_p_base(q), q.eta);
    EXPECT_EQ(r2[0], Regime::II);
    EXPECT_EQ(r2[12], Regime::V);
    const th::RegimeBoundaries b2 = th::regime_boundaries(r2);
    EXPECT_EQ(b2.m1, 5);
    EXPECT_EQ(b2.m2, 7);
    EXPECT_EQ(b2.m3, 11);

    // A regime that never occurs reports 0: uniform-like weights above p_base only.
    const Eigen::VectorXd top = (Eigen::VectorXd(3) << 0.5, 0.3, 0.2).finished();
    const th::RegimeBoundaries none = th::regime_boundaries(th::regimes_by_size(top, 0.1, 0.1));
    EXPECT_EQ(none.m1, 0);
    EXPECT_EQ(none.m2, 0);
    EXPECT_EQ(none.m3, 0);
    // IV uses a 1e-12 relative tolerance: p_base·(1 + 1e-13) is IV, p_base·(1 + 1e-11) is III.
    const Eigen::VectorXd near =
        (Eigen::VectorXd(3) << 0.5, 0.2 * (1 + 1e-13), 0.2 * (1 + 1e-11)).finished();
    const auto rn = th::regimes_by_size(near, 0.2, 0.1);
    EXPECT_EQ(rn[1], Regime::III);  // the larger one ranks first
    EXPECT_EQ(rn[2], Regime::IV);
    EXPECT_THROW(th::regimes_by_size(top, 0.0, 0.1), std::domain_error);
    EXPECT_THROW(th::regimes_by_size(top, 0.1, -0.1), std::domain_error);
}

// A fitted profile's regime IV (docs/design.md §3): within the fit's own scale of p_base, capped
// at η/2 so regime III keeps the upper half of its band — checked point by point against the
// plain definition on weights spread around p_base, which the exact 1e-12 never calls IV.
TEST(ModelsRegimes, AFittedProfilesRegimeIVUsesTheFitsTolerance) {
    const double p_base = 0.01, eta = 0.4;
    EXPECT_DOUBLE_EQ(th::fitted_regime_iv_tolerance(eta, 0.05), std::expm1(0.05));
    EXPECT_DOUBLE_EQ(th::fitted_regime_iv_tolerance(eta, 1.0), eta / 2);
    EXPECT_DOUBLE_EQ(th::fitted_regime_iv_tolerance(0.0, 0.0), th::kExactRegimeIVTolerance);
    EXPECT_THROW(th::fitted_regime_iv_tolerance(-0.1, 0.1), std::domain_error);
    EXPECT_THROW(th::fitted_regime_iv_tolerance(0.1, -0.1), std::domain_error);
    Eigen::VectorXd alpha(41);
    alpha[0] = 0.5;  // the sink on top: N = 1 is regime I
    for (int i = 1; i <= 40; ++i)
        alpha[i] = p_base * (0.7 + 0.6 * (i - 1) / 39.0 + 1e-9 * i);  // distinct, 0.7..1.3 p_base
    const double tolerance = th::fitted_regime_iv_tolerance(eta, 0.1);
    const auto fitted = th::regimes_by_size(alpha, p_base, eta, tolerance);
    const auto exact = th::regimes_by_size(alpha, p_base, eta);
    int fitted_iv = 0, exact_iv = 0;
    std::vector<double> ranked(alpha.data() + 1, alpha.data() + alpha.size());
    std::sort(ranked.rbegin(), ranked.rend());
    for (std::size_t k = 1; k < fitted.size(); ++k) {
        const double a = ranked[k - 1];
        Regime want = Regime::V;
        if (std::abs(a - p_base) <= tolerance * p_base)
            want = Regime::IV;
        else if (a > p_base * (1 + eta))
            want = Regime::II;
        else if (a > p_base)
            want = Regime::III;
        EXPECT_EQ(fitted[k], want) << "N = " << k + 1;
        fitted_iv += fitted[k] == Regime::IV;
        exact_iv += exact[k] == Regime::IV;
    }
    std::cout << "regime IV: " << fitted_iv << " of 40 N with the fit's tolerance " << tolerance
              << ", " << exact_iv << " with 1e-12\n";
    EXPECT_GT(fitted_iv, 10);
    EXPECT_EQ(exact_iv, 0);
    EXPECT_EQ(fitted[0], Regime::I);
}

// ---------------------------------------------------------------------------------------------
// Table-1 sensitivities.

ModelParameters small_preset() {
    ModelParameters p;  // the paper preset with a shorter context
    p.profile.L = 64;
    p.profile.T1 = 8;
    p.profile.T2 = 48;
    return p;
}

std::vector<double> bound_columns(const BoundRow& r) {
    return {r.precision_lower, r.precision_upper, r.recall_lower, r.recall_upper,
            r.fmax_lower,      r.fmax_upper,      r.fmin_lower,   r.fmin_upper};
}

std::vector<double> sensitivity_columns(const th::SensitivityRow& r) {
    return {r.precision_lower, r.precision_upper, r.recall_lower, r.recall_upper,
            r.fmax_lower,      r.fmax_upper,      r.fmin_lower,   r.fmin_upper};
}

// Rows of one parameter, in `sizes` order.
std::vector<th::SensitivityRow> rows_for(const std::vector<th::SensitivityRow>& rows,
                                         const std::string& name) {
    std::vector<th::SensitivityRow> out;
    for (const auto& r : rows)
        if (r.parameter == name) out.push_back(r);
    return out;
}

TEST(ModelsSensitivity, EveryParameterHasRows) {
    const std::vector<int> sizes = {1, 2, 10, 40};
    const BoundSettings s;
    const auto rows = th::bound_sensitivities(small_preset(), sizes, s);
    const std::set<std::string> expected = {"d",    "kappa",  "L",  "C",  "lambda", "beta",
                                            "rho0", "p_sink", "T1", "T2", "eta",    "omega"};
    std::map<std::string, int> seen;
    for (const auto& r : rows)
        ++seen[r.parameter];
    for (const std::string& name : expected) {
        EXPECT_EQ(seen[name], static_cast<int>(sizes.size())) << name;
        const auto mine = rows_for(rows, name);
        for (std::size_t k = 0; k < mine.size(); ++k)
            EXPECT_EQ(mine[k].N, sizes[k]) << name;
    }
    EXPECT_EQ(seen.count("zipf_s"), 0u);  // not a parameter of the assumption3 profile
    EXPECT_EQ(rows.size(), expected.size() * sizes.size());

    // A zipf profile has zipf_s and none of the Assumption-3 parameters.
    ModelParameters z = small_preset();
    z.profile_kind = th::parse_profile_spec("zipf:1.2");
    std::map<std::string, int> zseen;
    for (const auto& r : th::bound_sensitivities(z, sizes, s))
        ++zseen[r.parameter];
    EXPECT_EQ(zseen["zipf_s"], static_cast<int>(sizes.size()));
    EXPECT_EQ(zseen.count("p_sink"), 0u);
    EXPECT_EQ(zseen.count("T1"), 0u);
}

TEST(ModelsSensitivity, DimensionMatchesOwnFiniteDifference) {
    const ModelParameters p = small_preset();
    const std::vector<int> sizes = {1, 2, 5, 10, 30, 60};
    const th::HeadModel model = th::build_head_model(p);
    double worst = 0;
    for (BoundVariant variant :
         {BoundVariant::paper, BoundVariant::exact_mean, BoundVariant::scale_invariant}) {
        BoundSettings s;
        s.variant = variant;
        const auto rows = th::bound_sensitivities(p, sizes, s);
        const auto d_rows = rows_for(rows, "d");
        const auto kappa_rows = rows_for(rows, "kappa");
        // Our own central difference in log d with the step e^{±1e-4}.
        const double h = 1e-4;
        BoundSettings lo = s, hi = s;
        lo.d = s.d * std::exp(-h);
        hi.d = s.d * std::exp(h);
        const auto f_lo = th::bounds_all(model, sizes, lo);
        const auto f_hi = th::bounds_all(model, sizes, hi);
        ASSERT_EQ(d_rows.size(), sizes.size());
        for (std::size_t k = 0; k < sizes.size(); ++k) {
            const auto a = bound_columns(f_lo[k]), b = bound_columns(f_hi[k]);
            const auto got = sensitivity_columns(d_rows[k]);
            const auto got_kappa = sensitivity_columns(kappa_rows[k]);
            for (int c = 0; c < 8; ++c) {
                const double mine = (b[c] - a[c]) / (2 * h);
                worst = std::max(worst, std::abs(got[c] - mine));
                EXPECT_NEAR(got[c], mine, 1e-9 * std::max(1.0, std::abs(mine)))
                    << th::to_string(variant) << " N=" << sizes[k] << " column " << c;
                // d and κ enter only as κ·d: the two log-derivatives coincide.
                EXPECT_NEAR(got_kappa[c], got[c], 1e-6 * std::max(1.0, std::abs(got[c])));
            }
            // More dimensions never loosen the lower bounds.
            for (int c : {0, 2, 4, 6})
                EXPECT_GE(got[c], 0.0) << "N=" << sizes[k];
        }
    }
    std::cout << "[ info     ] d-sensitivity vs own central difference: largest difference "
              << sci(worst) << "\n";
    RecordProperty("max_diff", sci(worst));
}

TEST(ModelsSensitivity, RealAndLinearParametersMatchOwnFiniteDifference) {
    // λ (log step) and ρ0 (plain step, since ρ0 can be ≤ 0) against bounds_all on rebuilt heads.
    const ModelParameters p = small_preset();
    const std::vector<int> sizes = {2, 10, 40};
    const BoundSettings s;
    const auto rows = th::bound_sensitivities(p, sizes, s);
    double worst = 0;
    auto eval = [&](ModelParameters q) {
        return th::bounds_all(th::build_head_model(q), sizes, s);
    };
    {
        ModelParameters lo = p, hi = p;
        lo.lambda = p.lambda * std::exp(-1e-4);
        hi.lambda = p.lambda * std::exp(1e-4);
        const auto a = eval(lo), b = eval(hi);
        const auto got = rows_for(rows, "lambda");
        for (std::size_t k = 0; k < sizes.size(); ++k) {
            const auto x = bound_columns(a[k]), y = bound_columns(b[k]);
            const auto g = sensitivity_columns(got[k]);
            for (int c = 0; c < 8; ++c) {
                const double mine = (y[c] - x[c]) / 2e-4;
                worst = std::max(worst, std::abs(g[c] - mine));
                EXPECT_NEAR(g[c], mine, 1e-9 * std::max(1.0, std::abs(mine))) << "lambda " << c;
            }
        }
    }
    {
        ModelParameters lo = p, hi = p;
        lo.rho0 = p.rho0 - 1e-4;
        hi.rho0 = p.rho0 + 1e-4;
        const auto a = eval(lo), b = eval(hi);
        const auto got = rows_for(rows, "rho0");
        for (std::size_t k = 0; k < sizes.size(); ++k) {
            const auto x = bound_columns(a[k]), y = bound_columns(b[k]);
            const auto g = sensitivity_columns(got[k]);
            for (int c = 0; c < 8; ++c) {
                const double mine = (y[c] - x[c]) / 2e-4;
                worst = std::max(worst, std::abs(g[c] - mine));
                EXPECT_NEAR(g[c], mine, 1e-9 * std::max(1.0, std::abs(mine))) << "rho0 " << c;
            }
        }
    }
    // C scales every norm: the scale-invariant bounds do not move, the paper bounds do.
    BoundSettings si;
    si.variant = BoundVariant::scale_invariant;
    double largest_c_paper = 0;
    for (const auto& r : rows_for(th::bound_sensitivities(p, sizes, si), "C")) {
        for (double v : sensitivity_columns(r))
            EXPECT_NEAR(v, 0.0, 1e-8);
    }
    for (const auto& r : rows_for(rows, "C"))
        for (double v : sensitivity_columns(r))
            largest_c_paper = std::max(largest_c_paper, std::abs(v));
    EXPECT_GT(largest_c_paper, 1e-3);
    std::cout << "[ info     ] lambda/rho0 sensitivities vs own differences: largest difference "
              << sci(worst) << "; |d/dlogC| (paper) up to " << sci(largest_c_paper) << "\n";
}

TEST(ModelsSensitivity, IntegerParametersAtTheEdge) {
    const std::vector<int> sizes = {1, 5, 20};
    const BoundSettings s;
    // T1 = 0: T1 − 1 is invalid and log 0 undefined, so the row is NaN (or a one-sided value);
    // it must not throw and must not be infinite.
    ModelParameters p = small_preset();
    p.profile.T1 = 0;
    std::vector<th::SensitivityRow> rows;
    ASSERT_NO_THROW(rows = th::bound_sensitivities(p, sizes, s));
    const auto t1 = rows_for(rows, "T1");
    ASSERT_EQ(t1.size(), sizes.size());
    for (const auto& r : t1)
        for (double v : sensitivity_columns(r))
            EXPECT_TRUE(std::isnan(v) || std::isfinite(v)) << v;

    // T2 = L: T2 + 1 is invalid, so the difference is one-sided backward:
    // (f(T2) − f(T2 − 1))/(log T2 − log(T2 − 1)), checked against bounds_all here.
    p = small_preset();
    p.profile.T2 = p.profile.L;
    ASSERT_NO_THROW(rows = th::bound_sensitivities(p, sizes, s));
    const auto t2 = rows_for(rows, "T2");
    ModelParameters back = p;
    back.profile.T2 = p.profile.T2 - 1;
    const auto f_x = th::bounds_all(th::build_head_model(p), sizes, s);
    const auto f_b = th::bounds_all(th::build_head_model(back), sizes, s);
    const double step = std::log(double(p.profile.T2)) - std::log(double(p.profile.T2 - 1));
    for (std::size_t k = 0; k < sizes.size(); ++k) {
        const auto x = bound_columns(f_x[k]), b = bound_columns(f_b[k]);
        const auto g = sensitivity_columns(t2[k]);
        for (int c = 0; c < 8; ++c) {
            const double mine = (x[c] - b[c]) / step;
            EXPECT_NEAR(g[c], mine, 1e-9 * std::max(1.0, std::abs(mine))) << "T2 column " << c;
        }
    }
    // Interior integer: central difference over T1 ± 1.
    p = small_preset();
    ASSERT_NO_THROW(rows = th::bound_sensitivities(p, sizes, s));
    ModelParameters lo = p, hi = p;
    lo.profile.T1 -= 1;
    hi.profile.T1 += 1;
    const auto a = th::bounds_all(th::build_head_model(lo), sizes, s);
    const auto b = th::bounds_all(th::build_head_model(hi), sizes, s);
    const double central = std::log(double(hi.profile.T1)) - std::log(double(lo.profile.T1));
    const auto t1c = rows_for(rows, "T1");
    for (std::size_t k = 0; k < sizes.size(); ++k) {
        const auto x = bound_columns(a[k]), y = bound_columns(b[k]);
        const auto g = sensitivity_columns(t1c[k]);
        for (int c = 0; c < 8; ++c) {
            const double mine = (y[c] - x[c]) / central;
            EXPECT_NEAR(g[c], mine, 1e-9 * std::max(1.0, std::abs(mine))) << "T1 column " << c;
        }
    }
}

}  // namespace

namespace {

// validate_cosine_matrix reads valid matrices column by column and in tiles, and names the
// first bad entry (row-major) through its element-wise loop: both must agree on every defect,
// wherever it sits relative to the 32 × 32 tiles. Defects sit on or above the diagonal, where
// the row-major loop meets them before their mirror's asymmetry.
TEST(CosineMatrixValidation, TiledCheckAcceptsValidAndNamesEveryDefect) {
    int defects = 0;
    for (int L : {1, 2, 31, 32, 40, 70}) {
        const Eigen::MatrixXd valid = attngeo::theory::exponential_cosine_matrix(L, 0.3, 0.1);
        EXPECT_NO_THROW(attngeo::theory::validate_cosine_matrix(valid, "test"));
        const int n = L + 1;
        for (auto [j, k] : {std::pair{0, n - 1}, std::pair{n / 3, n / 2}, std::pair{0, 0},
                            std::pair{n - 1, n - 1}}) {
            const std::string at = "cosine[" + std::to_string(j) + "][" + std::to_string(k) + "]";
            auto expect_named = [&](Eigen::MatrixXd bad, const std::string& phrase) {
                try {
                    attngeo::theory::validate_cosine_matrix(bad, "test");
                    ADD_FAILURE() << "accepted: " << phrase << " at " << at << " (n " << n << ")";
                } catch (const std::domain_error& e) {
                    EXPECT_NE(std::string(e.what()).find(phrase), std::string::npos) << e.what();
                    ++defects;
                }
            };
            Eigen::MatrixXd bad = valid;
            bad(j, k) = std::nan("");
            expect_named(bad, at + " = nan, expected within [-1, 1]");
            bad = valid;
            bad(j, k) = 1.5;
            expect_named(bad, at + " = 1.5, expected within [-1, 1]");
            if (j != k) {
                bad = valid;
                bad(j, k) += 1e-6;
                expect_named(bad, "differs from cosine[");
            } else {
                bad = valid;
                bad(j, k) = 0.5;
                expect_named(bad, at + " = 0.5, expected 1 on the diagonal");
            }
        }
    }
    std::cout << defects << " defects named\n";
}

}  // namespace
