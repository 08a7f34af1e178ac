// Tests of compare/envelopes: bounds per head against theory::bounds_reference, the cosine
// sources, the κ rule and kappa_lower95 on heads whose bounds have a closed form (n = 2), thread
// invariance, bad input, and the exact headers of the output files.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/errors.hpp"
#include "common/format.hpp"
#include "compare/envelopes.hpp"
#include "theory/bounds.hpp"

namespace attngeo::compare {
namespace {

// A small head with a dominant sink, a few strong tokens and a flat tail; values near the
// middle of plausible bounds.
HeadInput small_head(int layer, int head, double beta, double rho0) {
    HeadInput h;
    h.layer = layer;
    h.head = head;
    const int n = 12;
    double total = 0;
    for (int i = 0; i < n; ++i) {
        const double a = i == 0 ? 4.0 : 1.0 + 0.37 * ((i * 7 + layer * 3 + head) % 5);
        h.alpha.push_back(a);
        total += a;
        h.norms.push_back(i == 0 ? 0.4 : 1.0 + 0.05 * ((i * 3 + head) % 4));
    }
    for (double& a : h.alpha)
        a /= total;
    h.beta = beta;
    h.rho0 = rho0;
    for (int k = 1; k <= 5; ++k)
        h.cos_by_lag.push_back(0.8 * std::exp(-0.3 * k) + 0.05);
    h.sizes = {1, 2, 3, 4, 6, 9, 12};
    for (std::size_t s = 0; s < h.sizes.size(); ++s) {
        h.P_mean.push_back(0.5 + 0.04 * static_cast<double>(s));
        h.R_mean.push_back(0.4 + 0.05 * static_cast<double>(s));
    }
    return h;
}

// The cosine matrix built entry by entry, independently of head_model.
theory::HeadModel reference_model(const HeadInput& h, CosineSource source) {
    const int n = static_cast<int>(h.alpha.size());
    theory::HeadModel m;
    m.alpha.resize(n);
    m.norms.resize(n);
    m.cosine.resize(n, n);
    for (int i = 0; i < n; ++i) {
        m.alpha[i] = h.alpha[i];
        m.norms[i] = h.norms[i];
    }
    for (int j = 0; j < n; ++j)
        for (int k = 0; k < n; ++k) {
            const int lag = std::abs(j - k);
            if (j == k)
                m.cosine(j, k) = 1;
            else if (j == 0 || k == 0)
                m.cosine(j, k) = h.rho0;
            else if (source == CosineSource::parametric)
                m.cosine(j, k) = std::exp(-h.beta * lag);
            else
                m.cosine(j, k) = h.cos_by_lag[std::min<std::size_t>(lag, h.cos_by_lag.size()) - 1];
        }
    return m;
}

double max_row_difference(const theory::BoundRow& a, const theory::BoundRow& b) {
    return std::max({std::abs(a.precision_lower - b.precision_lower),
                     std::abs(a.precision_upper - b.precision_upper),
                     std::abs(a.recall_lower - b.recall_lower),
                     std::abs(a.recall_upper - b.recall_upper)});
}

TEST(CompareEnvelopes, BoundsMatchReferencePerHead) {
    const std::vector<HeadInput> heads = {small_head(0, 0, 0.3, 0.1), small_head(0, 1, 0.05, -0.2),
                                          small_head(1, 0, 1.2, 0.4)};
    for (CosineSource source : {CosineSource::parametric, CosineSource::plug_in}) {
        EnvelopeSettings settings;
        settings.d = 16;
        settings.kappa = 0.7;
        settings.cosines = source;
        const EnvelopeResult r = evaluate_envelopes(heads, settings);
        ASSERT_EQ(r.variants.size(), 3u);
        double largest = 0;
        for (const VariantResult& v : r.variants) {
            EXPECT_EQ(v.kappa, 0.7);
            EXPECT_FALSE(v.kappa_fitted);
            for (std::size_t h = 0; h < heads.size(); ++h) {
                const theory::HeadModel model = reference_model(heads[h], source);
                for (std::size_t s = 0; s < heads[h].sizes.size(); ++s) {
                    theory::BoundSettings b;
                    b.d = 16;
                    b.kappa = 0.7;
                    b.variant = v.variant;
                    const theory::BoundRow ref =
                        theory::bounds_reference(model, heads[h].sizes[s], b);
                    EXPECT_EQ(v.rows[h][s].N, heads[h].sizes[s]);
                    largest = std::max(largest, max_row_difference(v.rows[h][s], ref));
                }
            }
        }
        std::printf("%s: largest |bounds - bounds_reference| = %.3g\n", to_string(source), largest);
        EXPECT_LE(largest, 1e-12);
    }
}

TEST(CompareEnvelopes, PlugInWithExponentialCosinesEqualsParametric) {
    std::vector<HeadInput> heads = {small_head(0, 0, 0.3, 0.1), small_head(2, 5, 0.9, 0.25)};
    for (HeadInput& h : heads) {
        h.cos_by_lag.clear();
        for (std::size_t k = 1; k < h.alpha.size(); ++k)
            h.cos_by_lag.push_back(std::exp(-h.beta * k));
    }
    EnvelopeSettings settings;
    settings.d = 32;
    settings.kappa = 0.2;
    const EnvelopeResult parametric = evaluate_envelopes(heads, settings);
    settings.cosines = CosineSource::plug_in;
    const EnvelopeResult plug_in = evaluate_envelopes(heads, settings);
    double largest = 0;
    for (int v = 0; v < 3; ++v)
        for (std::size_t h = 0; h < heads.size(); ++h)
            for (std::size_t s = 0; s < heads[h].sizes.size(); ++s)
                largest = std::max(largest, max_row_difference(parametric.variants[v].rows[h][s],
                                                               plug_in.variants[v].rows[h][s]));
    std::printf("largest |plug-in - parametric| = %.3g\n", largest);
    EXPECT_EQ(largest, 0);
    // The matrices themselves, including the lag clamp for a short cos_by_lag.
    HeadInput short_lags = heads[0];
    short_lags.cos_by_lag.resize(3);
    const theory::HeadModel got = head_model(short_lags, CosineSource::plug_in);
    const theory::HeadModel want = reference_model(short_lags, CosineSource::plug_in);
    EXPECT_EQ((got.cosine - want.cosine).cwiseAbs().maxCoeff(), 0);
    EXPECT_EQ(got.cosine(1, 11), short_lags.cos_by_lag[2]);
    EXPECT_EQ(got.cosine(0, 7), short_lags.rho0);
}

// n = 2 with α1 > α0 and N = 1: I_N = {1}, the sink is out, n_out = 1, so (paper variant)
// Δ = a1² − 2 a0 a1 ρ0, B = a0 + 2 a1 and the recall lower bound is 1 − exp(−κ d (Δ/B)²).
struct TwoTokenHead {
    double a0 = 0.3, a1 = 0.7, rho0 = 0.2, d = 16;
    double delta() const { return a1 * a1 - 2 * a0 * a1 * rho0; }
    double B() const { return a1 + a0 + a1; }
    double tail(double kappa) const { return std::exp(-kappa * d * std::pow(delta() / B(), 2)); }
    double recall_lower(double kappa) const { return 1 - tail(kappa); }
    double precision_lower(double kappa) const { return 1 / (1 + tail(kappa)); }
    HeadInput input(int layer, int head, double P, double R) const {
        HeadInput h;
        h.layer = layer;
        h.head = head;
        h.alpha = {a0, a1};
        h.norms = {1, 1};
        h.rho0 = rho0;
        h.beta = 0.5;
        h.sizes = {1};
        h.P_mean = {P};
        h.R_mean = {R};
        return h;
    }
};

TEST(CompareEnvelopes, ClosedFormSpotValues) {
    const TwoTokenHead t;
    EnvelopeSettings settings;
    settings.d = t.d;
    settings.kappa = 0.3;
    const EnvelopeResult r = evaluate_envelopes({t.input(0, 0, 0.5, 0.5)}, settings);
    const theory::BoundRow& row = r.variants[0].rows[0][0];
    EXPECT_NEAR(row.recall_lower, t.recall_lower(0.3), 1e-15);
    EXPECT_NEAR(row.precision_lower, t.precision_lower(0.3), 1e-15);
}

// Each head's R point sits exactly on its lower bound at κ_h: inside iff κ ≤ κ_h (the upper
// bound stays above 0.85 on [1e-4, 1e2], above every value used). P points are at −1, always
// outside. So the fraction inside is a step function of κ, and within the best
// step every κ ties: the narrower envelope (here the larger κ) must win.
TEST(CompareEnvelopes, KappaRuleByHand) {
    const TwoTokenHead t;
    auto heads_for = [&](const std::vector<double>& kappas) {
        std::vector<HeadInput> heads;
        for (std::size_t h = 0; h < kappas.size(); ++h)
            heads.push_back(t.input(0, static_cast<int>(h), -1, t.recall_lower(kappas[h])));
        return heads;
    };
    EnvelopeSettings settings;
    settings.d = t.d;
    // The mean width shrinks with κ on [1e-4, 0.1], so the tie goes to the largest κ inside.
    {
        EnvelopeSettings given = settings;
        double previous = INFINITY;
        for (double log_kappa = -4; log_kappa <= -1 + 1e-9; log_kappa += 0.25) {
            given.kappa = std::pow(10.0, log_kappa);
            const double width = evaluate_envelopes(heads_for({0.1}), given).variants[0].mean_width;
            EXPECT_LT(width, previous) << "log kappa " << log_kappa;
            previous = width;
        }
    }
    {  // the step function itself, at given κ
        EnvelopeSettings given = settings;
        const auto heads = heads_for({0.1, std::pow(10.0, -0.5), 0.01});
        for (auto [log_kappa, inside] :
             {std::pair{-3.0, 3}, {-1.95, 2}, {-1.05, 2}, {-0.95, 1}, {-0.45, 0}, {2.0, 0}}) {
            given.kappa = std::pow(10.0, log_kappa);
            EXPECT_EQ(evaluate_envelopes(heads, given).variants[0].global.inside, inside)
                << "log kappa " << log_kappa;
        }
    }
    // Two heads (κ_h = 0.1, 10^−0.5): 2/4 inside for κ ≤ 0.1, the narrowest there is κ = 0.1.
    const EnvelopeResult two = evaluate_envelopes(heads_for({0.1, std::pow(10.0, -0.5)}), settings);
    const VariantResult& paper2 = two.variants[0];
    EXPECT_TRUE(paper2.kappa_fitted);
    std::printf("two heads: fitted kappa %.17g (expected 0.1), fraction %.17g\n", paper2.kappa,
                paper2.fraction_inside);
    EXPECT_NEAR(std::log10(paper2.kappa), -1, 1e-9);
    EXPECT_EQ(paper2.fraction_inside, 0.5);
    // A third head with κ_h = 0.01: 3/6 for κ ≤ 0.01 beats 2/6 on (0.01, 0.1] although the
    // envelope is narrower there.
    const EnvelopeResult three =
        evaluate_envelopes(heads_for({0.1, std::pow(10.0, -0.5), 0.01}), settings);
    const VariantResult& paper3 = three.variants[0];
    std::printf("three heads: fitted kappa %.17g (expected 0.01)\n", paper3.kappa);
    EXPECT_NEAR(std::log10(paper3.kappa), -2, 1e-9);
    EXPECT_EQ(paper3.fraction_inside, 0.5);
    EXPECT_EQ(paper3.global.inside, 3);
    EXPECT_EQ(paper3.global.points, 6);
    // The P points are the violations, each 1 + its lower bound below it.
    ASSERT_EQ(paper3.violations.size(), 3u);
    EXPECT_EQ(paper3.violations[0].metric, "P");
    EXPECT_NEAR(paper3.violations[0].excess, t.precision_lower(paper3.kappa) + 1, 1e-12);
}

// Heads with P and R exactly on their lower bounds at κ_h = 10^(−3 + 0.2h), h = 0..19: at κ
// the fraction of lower bounds holding is #{h: κ ≤ κ_h}/20, so ≥ 95% up to the second
// smallest κ_h = 10^−2.8. Raising every κ_h by half a decade raises kappa_lower95 with it.
TEST(CompareEnvelopes, KappaLower95KnownAndMonotone) {
    const TwoTokenHead t;
    auto run = [&](double shift) {
        std::vector<HeadInput> heads;
        for (int h = 0; h < 20; ++h) {
            const double kappa = std::pow(10.0, -3 + 0.2 * h + shift);
            heads.push_back(t.input(h % 3, h, t.precision_lower(kappa), t.recall_lower(kappa)));
        }
        EnvelopeSettings settings;
        settings.d = t.d;
        return evaluate_envelopes(heads, settings);
    };
    const EnvelopeResult base = run(0), raised = run(0.5);
    for (int v = 0; v < 1; ++v) {  // the closed form is the paper variant's
        std::printf("kappa_lower95 %.17g -> %.17g\n", base.variants[v].kappa_lower95,
                    raised.variants[v].kappa_lower95);
        EXPECT_NEAR(std::log10(base.variants[v].kappa_lower95), -2.8, 1e-9);
        EXPECT_NEAR(std::log10(raised.variants[v].kappa_lower95), -2.3, 1e-9);
        EXPECT_EQ(base.variants[v].lower_fraction_at_kappa_lower95, 0.95);
    }
    for (int v = 0; v < 3; ++v)  // any variant: raising every value cannot lower it
        EXPECT_GE(raised.variants[v].kappa_lower95, base.variants[v].kappa_lower95);
    // Nothing holds even at 1e-4 → NaN.
    std::vector<HeadInput> hopeless = {t.input(0, 0, -1, -1)};
    EnvelopeSettings settings;
    settings.d = t.d;
    EXPECT_TRUE(std::isnan(evaluate_envelopes(hopeless, settings).variants[0].kappa_lower95));
}

TEST(CompareEnvelopes, ThreadCountDoesNotChangeResults) {
    std::vector<HeadInput> heads;
    for (int h = 0; h < 7; ++h)
        heads.push_back(small_head(h / 3, h % 3, 0.1 + 0.2 * h, 0.05 * h));
    EnvelopeSettings settings;
    settings.d = 64;
    settings.threads = 1;
    const EnvelopeResult one = evaluate_envelopes(heads, settings);
    settings.threads = 3;
    const EnvelopeResult three = evaluate_envelopes(heads, settings);
    for (int v = 0; v < 3; ++v) {
        EXPECT_EQ(one.variants[v].kappa, three.variants[v].kappa);
        EXPECT_EQ(format_double(one.variants[v].kappa_lower95),
                  format_double(three.variants[v].kappa_lower95));  // NaN equals NaN here
        EXPECT_EQ(one.variants[v].mean_width, three.variants[v].mean_width);
        for (std::size_t h = 0; h < heads.size(); ++h)
            for (std::size_t s = 0; s < heads[h].sizes.size(); ++s)
                EXPECT_EQ(
                    max_row_difference(one.variants[v].rows[h][s], three.variants[v].rows[h][s]),
                    0);
        ASSERT_EQ(one.variants[v].by_layer.size(), 3u);
        EXPECT_EQ(one.variants[v].by_layer[2].points, 2 * 7);  // layer 2: one head, 7 sizes
    }
}

TEST(CompareEnvelopes, BadInput) {
    EXPECT_EQ(parse_cosine_source("plug-in"), CosineSource::plug_in);
    EXPECT_EQ(parse_cosine_source("parametric"), CosineSource::parametric);
    try {
        parse_cosine_source("measured");
        ADD_FAILURE() << "no throw";
    } catch (const InputError& e) {
        EXPECT_NE(std::string(e.what()).find("--cosines"), std::string::npos) << e.what();
    }
    EnvelopeSettings settings;
    EXPECT_THROW(evaluate_envelopes({}, settings), InputError);
    HeadInput a = small_head(0, 0, 0.3, 0.1), b = small_head(0, 1, 0.3, 0.1);
    b.sizes.pop_back();
    EXPECT_THROW(evaluate_envelopes({a, b}, settings), InputError);
    b = a;
    b.R_mean.pop_back();
    EXPECT_THROW(evaluate_envelopes({a, b}, settings), InputError);
    b = a;
    b.sizes.back() = 13;  // N > n
    b.P_mean = a.P_mean;
    EXPECT_THROW(evaluate_envelopes({b}, settings), InputError);
    b = a;
    b.cos_by_lag.clear();
    EnvelopeSettings plug = settings;
    plug.cosines = CosineSource::plug_in;
    EXPECT_THROW(evaluate_envelopes({b}, plug), InputError);
    b = a;
    b.beta = -0.1;
    EXPECT_THROW(evaluate_envelopes({b}, settings), InputError);
    b = a;
    b.rho0 = 1.5;
    EXPECT_THROW(evaluate_envelopes({b}, settings), InputError);
    b.rho0 = 1 + 1e-7;  // float rounding of a mean cosine: clamped, not refused
    EXPECT_EQ(head_model(b, CosineSource::parametric).cosine(0, 3), 1);
    settings.kappa = 1;
    EXPECT_NO_THROW(evaluate_envelopes({b}, settings));
    settings.kappa.reset();
    b = a;
    b.alpha[3] = std::nan("");
    EXPECT_THROW(evaluate_envelopes({b}, settings), InputError);
    b = a;
    b.norms[2] = -1;
    EXPECT_THROW(evaluate_envelopes({b}, settings), InputError);
    EnvelopeSettings bad = settings;
    bad.kappa = -1;
    EXPECT_THROW(evaluate_envelopes({a}, bad), std::domain_error);
    bad = settings;
    bad.d = 0.5;
    EXPECT_THROW(evaluate_envelopes({a}, bad), std::domain_error);
}

std::vector<std::string> lines_of(const std::filesystem::path& path) {
    std::ifstream in(path);
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);)
        lines.push_back(line);
    return lines;
}

TEST(CompareEnvelopes, OutputFilesFollowTheContract) {
    const std::vector<HeadInput> heads = {small_head(0, 0, 0.3, 0.1), small_head(1, 2, 0.6, 0.2)};
    EnvelopeSettings settings;
    settings.d = 32;
    const EnvelopeResult r = evaluate_envelopes(heads, settings);
    const auto dir = std::filesystem::temp_directory_path() / "attngeo_test_compare_envelopes";
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    write_envelope_files(r, dir.string());
    const std::size_t S = heads[0].sizes.size();

    const auto bounds = lines_of(dir / "bounds.csv");
    ASSERT_FALSE(bounds.empty());
    EXPECT_EQ(bounds[0],
              "layer,head,N,variant,kappa,P_mean,R_mean,P_lower,P_upper,R_lower,R_upper,"
              "P_inside,R_inside");
    EXPECT_EQ(bounds.size(), 1 + 3 * heads.size() * S);
    EXPECT_EQ(bounds[1].rfind("0,0,1,paper,", 0), 0u) << bounds[1];

    const auto envelope = lines_of(dir / "envelope.csv");
    ASSERT_FALSE(envelope.empty());
    EXPECT_EQ(envelope[0], "variant,N,heads,P_mean,R_mean,P_lower,P_upper,R_lower,R_upper");
    EXPECT_EQ(envelope.size(), 1 + 3 * S);
    EXPECT_EQ(envelope[1].rfind("paper,1,2,", 0), 0u) << envelope[1];

    const auto agreement = lines_of(dir / "agreement.csv");
    ASSERT_FALSE(agreement.empty());
    EXPECT_EQ(agreement[0], "variant,scope,layer,points,inside,fraction,worst_excess");
    EXPECT_EQ(agreement.size(), 1u + 3 * (1 + 2));  // global + two layers per variant
    EXPECT_EQ(agreement[1].rfind("paper,global,-1," + std::to_string(2 * 2 * S) + ",", 0), 0u)
        << agreement[1];
    EXPECT_EQ(agreement[2].rfind("paper,layer,0,", 0), 0u) << agreement[2];

    const auto violations = lines_of(dir / "violations.csv");
    ASSERT_FALSE(violations.empty());
    EXPECT_EQ(violations[0], "variant,layer,head,N,metric,value,lower,upper,excess");
    std::size_t expected_violations = 0;
    for (const VariantResult& v : r.variants) {
        expected_violations += v.violations.size();
        EXPECT_LE(v.violations.size(), 20u);
        for (std::size_t i = 1; i < v.violations.size(); ++i)
            EXPECT_GE(v.violations[i - 1].excess, v.violations[i].excess);
    }
    EXPECT_EQ(violations.size(), 1 + expected_violations);

    std::ifstream kappa_file(dir / "kappa.json");
    const nlohmann::json kappa = nlohmann::json::parse(kappa_file);
    EXPECT_EQ(kappa.at("cosines"), "parametric");
    for (const char* name : {"paper", "exact-mean", "scale-invariant"}) {
        const auto& v = kappa.at("variants").at(name);
        for (const char* key : {"kappa", "fraction_inside", "mean_width", "kappa_lower95",
                                "lower_fraction_at_kappa_lower95"})
            EXPECT_TRUE(v.contains(key)) << name << " " << key;
    }
    EXPECT_EQ(kappa.at("variants").at("paper").at("kappa").get<double>(), r.variants[0].kappa);
    const nlohmann::json manifest = envelope_manifest(r);
    EXPECT_TRUE(manifest.contains("decisions"));
    EXPECT_EQ(manifest.at("kappa").at("scale-invariant").at("kappa").get<double>(),
              r.variants[2].kappa);
    std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace attngeo::compare
