// Tests of compare/envelopes: bounds per head against theory::bounds_reference, the cosine
// sources, the interval-score κ and κ* per side on heads whose bounds have a closed form (n = 2),
// thread invariance, bad input, and the exact headers of the output files.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>
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
        ASSERT_EQ(r.variants.size(), 4u);
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

// The rows' κ minimises the mean interval score: no given κ of the grid scores lower, and the
// score at a given κ is the plain definition over the (head, N, metric) points.
TEST(CompareEnvelopes, RowsSitAtTheIntervalScoreKappa) {
    const TwoTokenHead t;
    std::vector<HeadInput> heads;
    for (int h = 0; h < 6; ++h)
        heads.push_back(t.input(0, h, t.precision_lower(std::pow(10.0, -2 + 0.5 * h)),
                                t.recall_lower(std::pow(10.0, -1.5 + 0.4 * h))));
    EnvelopeSettings settings;
    settings.d = t.d;
    const EnvelopeResult fitted = evaluate_envelopes(heads, settings);
    const VariantResult& paper = fitted.variants[0];
    EXPECT_TRUE(paper.kappa_fitted);
    EXPECT_EQ(paper.kappa, paper.scan.interval_score.kappa);
    double worst = 0;
    for (double log_kappa = -8; log_kappa <= 8 + 1e-9; log_kappa += 0.5) {
        EnvelopeSettings given = settings;
        given.kappa = std::pow(10.0, log_kappa);
        const EnvelopeResult at = evaluate_envelopes(heads, given);
        const VariantResult& v = at.variants[0];
        double plain = 0;
        for (std::size_t h = 0; h < heads.size(); ++h) {
            const theory::BoundRow& b = v.rows[h][0];
            for (auto [x, lo, hi] :
                 {std::tuple{heads[h].P_mean[0], b.precision_lower, b.precision_upper},
                  std::tuple{heads[h].R_mean[0], b.recall_lower, b.recall_upper}})
                plain += (hi - lo) + 40 * (std::max(lo - x, 0.0) + std::max(x - hi, 0.0));
        }
        plain /= 2.0 * heads.size();
        worst = std::max(worst, std::abs(plain - v.scan.interval_score.mean_score));
        EXPECT_GE(v.scan.interval_score.mean_score, paper.scan.interval_score.mean_score)
            << log_kappa;
    }
    std::printf("interval score: largest difference from the plain sum %.3g\n", worst);
    EXPECT_LE(worst, 1e-14);
}

// Heads with R exactly on its lower bound at κ_h = 10^(−3 + 0.2h), h = 0..19 (one document,
// so no interval): R's lower side is violated at a point iff κ > κ_h; 20 points may show 2
// violations by chance (the 95 % quantile of Binomial(20, 0.025)), and the gap shrinks as κ
// grows: κ* = the third smallest κ_h = 10^−2.6, coverage 0.9. Raising every κ_h by half a
// decade raises κ* with it; nothing covered leaves the side outside its allowance.
TEST(CompareEnvelopes, KappaStarOfTheLowerSideKnownAndMonotone) {
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
    using compare::ScanMetric;
    using compare::ScanSide;
    const auto& b = base.variants[0].scan.side(ScanMetric::R, ScanSide::lower);
    const auto& r = raised.variants[0].scan.side(ScanMetric::R, ScanSide::lower);
    std::printf("kappa* of R lower: %.17g -> %.17g\n", b.at_star.kappa, r.at_star.kappa);
    EXPECT_NEAR(std::log10(b.at_star.kappa), -2.6, 1e-9);
    EXPECT_NEAR(std::log10(r.at_star.kappa), -2.1, 1e-9);
    EXPECT_EQ(b.violations_allowed, 2);
    EXPECT_EQ(b.at_star.violations, 2);
    EXPECT_EQ(b.at_star.coverage, 0.9);
    EXPECT_TRUE(b.within_allowance);
    EXPECT_FALSE(b.kappa_free);
    EXPECT_FALSE(b.at_grid_edge);
    // Nothing covered at any κ: the fewest violations, flagged.
    std::vector<HeadInput> hopeless = {t.input(0, 0, -1, -1)};
    EnvelopeSettings settings;
    settings.d = t.d;
    const EnvelopeResult nothing = evaluate_envelopes(hopeless, settings);
    const auto& none = nothing.variants[0].scan.side(ScanMetric::R, ScanSide::lower);
    EXPECT_FALSE(none.coverage_met);
    EXPECT_FALSE(none.within_allowance);
    EXPECT_EQ(none.at_star.coverage, 0.0);
}

// With standard errors the scan checks the interval mean ± t(0.975, docs − 1)·se: a point just
// below its lower bound is covered once its interval reaches it.
TEST(CompareEnvelopes, CoverageUsesTheIntervalOverDocuments) {
    const TwoTokenHead t;
    EnvelopeSettings settings;
    settings.d = t.d;
    settings.kappa = 1;
    const double bound = t.recall_lower(1);
    HeadInput h = t.input(0, 0, 0.5, bound - 0.01);
    using compare::ScanMetric;
    using compare::ScanSide;
    auto coverage = [&](const HeadInput& head) {
        return evaluate_envelopes({head}, settings)
            .variants[0]
            .scan.side(ScanMetric::R, ScanSide::lower)
            .at_star.coverage;
    };
    EXPECT_EQ(coverage(h), 0.0);  // no standard error: the mean alone
    h.documents = 5;
    h.R_se = {0.01 / 2.7764451051977987 * 1.001};  // t(0.975, 4) = 2.776…: just reaches it
    h.P_se = {0.0};
    EXPECT_EQ(coverage(h), 1.0);
    h.R_se = {0.01 / 2.7764451051977987 * 0.999};
    EXPECT_EQ(coverage(h), 0.0);
    h.R_se = {std::numeric_limits<double>::quiet_NaN()};  // undefined: the mean alone
    EXPECT_EQ(coverage(h), 0.0);
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
    for (int v = 0; v < 4; ++v) {
        EXPECT_EQ(one.variants[v].kappa, three.variants[v].kappa);
        for (int side = 0; side < 4; ++side)
            EXPECT_EQ(one.variants[v].scan.sides[side].at_star.kappa,
                      three.variants[v].scan.sides[side].at_star.kappa);
        EXPECT_EQ(one.variants[v].mean_width, three.variants[v].mean_width);
        for (std::size_t h = 0; h < heads.size(); ++h)
            for (std::size_t s = 0; s < heads[h].sizes.size(); ++s)
                EXPECT_EQ(
                    max_row_difference(one.variants[v].rows[h][s], three.variants[v].rows[h][s]),
                    0);
        ASSERT_EQ(one.variants[v].by_layer.size(), 3u);
        // Layer 2: one head, 7 sizes of which N = 1 (sink first) and N = n are conventions.
        EXPECT_EQ(one.variants[v].by_layer[2].points, 2 * 5);
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

// The (head, N) points of compare's verdict: N = 1 (the sink ranks first in small_head) and
// N = n are convention points, set apart from every count and from agreement.csv's points;
// the informative points recounted plainly from the star bounds, the rows' margins and the
// means (one document: no interval, the mean itself is checked).
TEST(CompareEnvelopes, ConventionPointsAreSetApartAndInformativePointsRecount) {
    std::vector<HeadInput> heads;
    for (int h = 0; h < 4; ++h)
        heads.push_back(small_head(h / 2, h % 2, 0.2 + 0.1 * h, 0.05 * h));
    EnvelopeSettings settings;
    settings.d = 32;
    const EnvelopeResult r = evaluate_envelopes(heads, settings);
    const int H = 4, S = 7, n = 12;
    for (const VariantResult& v : r.variants) {
        EXPECT_EQ(v.global.points, 2 * H * (S - 2));
        for (int s = 0; s < 4; ++s) {
            const compare::SideVerdict& side = v.scan.sides[s];
            const bool P = side.metric == compare::ScanMetric::P;
            const bool lower = side.side == compare::ScanSide::lower;
            EXPECT_EQ(side.points, H * (S - 2));
            EXPECT_EQ(side.convention_points, H * 2);
            const compare::MetricBounds& m = P ? v.scan.at_star.P : v.scan.at_star.R;
            const std::vector<double>& bound = lower ? m.lower : m.upper;
            int informative = 0;
            for (int h = 0; h < H; ++h)
                for (int k = 0; k < S; ++k) {
                    const int N = heads[h].sizes[k], i = h * S + k;
                    const bool convention = N == 1 || N == n;
                    EXPECT_EQ(v.scan.points.convention[i], convention) << h << " " << N;
                    if (convention) continue;
                    const double x = P ? heads[h].P_mean[k] : heads[h].R_mean[k];
                    const double floor = lower && P ? static_cast<double>(N) / n : 0;
                    const bool beyond = lower ? bound[i] > floor + 1e-12 : bound[i] < 1 - 1e-12;
                    const bool violated = lower ? bound[i] > x + 1e-12 : bound[i] < x - 1e-12;
                    const theory::MarginFlags f = theory::margin_flags(v.rows[h][k]);
                    const bool n_only =
                        lower ? f.lower_n_only() : (P ? f.xi_le0 : f.xi_le0 && bound[i] == 0.5);
                    const bool yes = beyond && !violated && !n_only;
                    EXPECT_EQ(v.scan.points.informative[s][i], yes) << h << " " << N;
                    informative += yes;
                }
            EXPECT_EQ(side.informative_points, informative);
        }
    }
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
              "P_inside,R_inside,regime,Delta,Delta0,B,kappa_P_lower,kappa_P_upper,kappa_R_lower,"
              "kappa_R_upper,P_lower_star,P_upper_star,R_lower_star,R_upper_star,delta_le0,"
              "delta0_le0,xi_le0,P_inverted,R_inverted,P_trivial_lower,R_trivial_lower,P_trivial_"
              "upper,R_trivial_upper,sink_selected,convention,identity_contradicted,informative_P_"
              "lower,informative_P_upper,informative_R_lower,informative_R_upper");
    EXPECT_EQ(bounds.size(), 1 + 4 * heads.size() * S);
    EXPECT_EQ(bounds[1].rfind("0,0,1,paper,", 0), 0u) << bounds[1];

    const auto envelope = lines_of(dir / "envelope.csv");
    ASSERT_FALSE(envelope.empty());
    EXPECT_EQ(envelope[0], "variant,N,heads,P_mean,R_mean,P_lower,P_upper,R_lower,R_upper");
    EXPECT_EQ(envelope.size(), 1 + 4 * S);
    EXPECT_EQ(envelope[1].rfind("paper,1,2,", 0), 0u) << envelope[1];

    const auto agreement = lines_of(dir / "agreement.csv");
    ASSERT_FALSE(agreement.empty());
    EXPECT_EQ(agreement[0], "variant,scope,layer,points,inside,fraction,worst_excess");
    EXPECT_EQ(agreement.size(), 1u + 4 * (1 + 2));  // global + two layers per variant
    // Two heads × (S − 2) non-convention N × {P, R}.
    EXPECT_EQ(agreement[1].rfind("paper,global,-1," + std::to_string(2 * 2 * (S - 2)) + ",", 0), 0u)
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
    for (const char* name : {"paper", "exact-mean", "scale-invariant", "corrected"}) {
        const auto& v = kappa.at("variants").at(name);
        for (const char* key : {"kappa", "kappa_rule", "fraction_inside", "mean_width",
                                "interval_score", "sides", "degenerate"})
            EXPECT_TRUE(v.contains(key)) << name << " " << key;
        for (const char* metric : {"P", "R"})
            for (const char* side : {"lower", "upper"})
                for (const char* key :
                     {"kappa_star", "coverage", "mean_gap", "mean_gap_by_regime",
                      "fraction_degenerate", "informative", "at_grid_edge", "kappa_free"})
                    EXPECT_TRUE(v.at("sides").at(metric).at(side).contains(key))
                        << name << metric << side << key;
    }
    const auto scan = lines_of(dir / "kappa_scan.csv");
    ASSERT_FALSE(scan.empty());
    EXPECT_EQ(scan[0],
              "variant,metric,side,kappa,coverage,mean_width,median_width,mean_gap,violations,"
              "largest_excess");
    std::size_t scan_rows = 0;
    for (const VariantResult& v : r.variants)
        for (const auto& side : v.scan.sides)
            scan_rows += side.scan.size();
    EXPECT_EQ(scan.size(), 1 + scan_rows);
    const auto verdict = lines_of(dir / "verdict.csv");
    ASSERT_EQ(verdict.size(), 1u + 4 * 4);
    EXPECT_EQ(verdict[1].rfind("paper,P,lower,", 0), 0u) << verdict[1];
    EXPECT_EQ(verdict[16].rfind("corrected,R,upper,", 0), 0u) << verdict[16];
    EXPECT_EQ(kappa.at("variants").at("paper").at("kappa").get<double>(), r.variants[0].kappa);
    const nlohmann::json manifest = envelope_manifest(r);
    EXPECT_TRUE(manifest.contains("decisions"));
    EXPECT_EQ(manifest.at("kappa").at("scale-invariant").at("kappa").get<double>(),
              r.variants[2].kappa);
    std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace attngeo::compare
