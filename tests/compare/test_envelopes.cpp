// Tests of compare/envelopes: each document's bound against theory::bounds_reference on that
// document's α and the bound rows as their mean, the cosine sources, closed-form spot values
// (n = 2), a given κ, the verdict's per-point judgement recounted, several models' universal κ,
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
#include "common/splitmix64.hpp"
#include "compare/envelopes.hpp"
#include "compare/verdict_tables.hpp"
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

// A model of `heads` over `documents` documents: document u's α is the head's with every
// non-sink weight scaled by a factor in [1 − jitter, 1 + jitter] (then renormalised), and its P, R
// the head's means plus noise of that size, clamped to their ranges.
ModelInput model_of(const std::vector<HeadInput>& heads, int documents, double jitter,
                    std::uint64_t seed = 3) {
    ModelInput m;
    m.name = "model";
    m.heads = heads;
    m.documents = documents;
    SplitMix64 rng(seed);
    // Each head's own sizes: a test may hand heads of different shapes (to be refused).
    std::size_t points = 0;
    for (const HeadInput& h : heads)
        points += h.sizes.size();
    for (UnitValues* v : {&m.P, &m.R}) {
        v->units = documents;
        v->points = static_cast<int>(points);
    }
    for (int u = 0; u < documents; ++u) {
        for (const HeadInput& h : heads)
            for (std::size_t i = 0; i < h.alpha.size(); ++i)
                m.alpha.push_back(h.alpha[i] *
                                  (i == 0 ? 1.0 : 1 + jitter * (2 * rng.open_uniform() - 1)));
        for (const HeadInput& h : heads)
            for (std::size_t k = 0; k < h.sizes.size(); ++k) {
                const double floor = static_cast<double>(h.sizes[k]) / h.alpha.size();
                m.P.values.push_back(
                    std::clamp(h.P_mean[k] + jitter * (2 * rng.open_uniform() - 1), floor, 1.0));
                m.R.values.push_back(
                    std::clamp(h.R_mean[k] + jitter * (2 * rng.open_uniform() - 1), 0.0, 1.0));
            }
    }
    return m;
}

// Document u's model of head h, renormalised, built independently of compare/.
theory::HeadModel document_model(const ModelInput& m, std::size_t h, int u, CosineSource source) {
    theory::HeadModel model = reference_model(m.heads[h], source);
    const std::size_t n = m.heads[h].alpha.size();
    double total = 0;
    for (std::size_t i = 0; i < n; ++i)
        total += m.alpha[(u * m.heads.size() + h) * n + i];
    for (std::size_t i = 0; i < n; ++i)
        model.alpha[i] = m.alpha[(u * m.heads.size() + h) * n + i] / total;
    return model;
}

EnvelopeResult evaluate_one(const ModelInput& m, const EnvelopeSettings& settings) {
    return evaluate_envelopes({m}, settings).models.front();
}

TEST(CompareEnvelopes, BoundRowsAreTheMeanOfEveryDocumentsReferenceBound) {
    const std::vector<HeadInput> heads = {small_head(0, 0, 0.3, 0.1), small_head(0, 1, 0.05, -0.2),
                                          small_head(1, 0, 1.2, 0.4)};
    const ModelInput model = model_of(heads, 6, 0.3);
    for (CosineSource source : {CosineSource::parametric, CosineSource::plug_in}) {
        EnvelopeSettings settings;
        settings.d = 16;
        settings.kappa = 0.7;
        settings.cosines = source;
        const EnvelopeResult r = evaluate_one(model, settings);
        ASSERT_EQ(r.variants.size(), 4u);
        double largest = 0;
        for (const VariantResult& v : r.variants) {
            EXPECT_EQ(v.scan.rows_kappa, 0.7);
            EXPECT_EQ(v.rows_rule, "given");
            theory::BoundSettings b;
            b.d = 16;
            b.kappa = 0.7;
            b.variant = v.variant;
            for (std::size_t h = 0; h < heads.size(); ++h)
                for (std::size_t s = 0; s < heads[h].sizes.size(); ++s) {
                    theory::BoundRow mean;
                    mean.precision_lower = mean.precision_upper = mean.recall_lower =
                        mean.recall_upper = 0;
                    for (int u = 0; u < model.documents; ++u) {
                        const theory::BoundRow ref = theory::bounds_reference(
                            document_model(model, h, u, source), heads[h].sizes[s], b);
                        mean.precision_lower += ref.precision_lower / model.documents;
                        mean.precision_upper += ref.precision_upper / model.documents;
                        mean.recall_lower += ref.recall_lower / model.documents;
                        mean.recall_upper += ref.recall_upper / model.documents;
                    }
                    EXPECT_EQ(v.rows[h][s].N, heads[h].sizes[s]);
                    largest = std::max(largest, max_row_difference(v.rows[h][s], mean));
                    // Δ and B are the document-mean profile's.
                    const theory::BoundRow of_mean = theory::bounds_reference(
                        reference_model(heads[h], source), heads[h].sizes[s], b);
                    if (!std::isnan(of_mean.delta))
                        largest = std::max(largest, std::abs(of_mean.delta - v.rows[h][s].delta));
                    largest = std::max(largest, std::abs(of_mean.scale - v.rows[h][s].scale));
                }
        }
        std::printf("%s: largest |rows - mean of the documents' bounds_reference| = %.3g\n",
                    to_string(source), largest);
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
    const ModelInput model = model_of(heads, 4, 0.2);
    EnvelopeSettings settings;
    settings.d = 32;
    settings.kappa = 0.2;
    const EnvelopeResult parametric = evaluate_one(model, settings);
    settings.cosines = CosineSource::plug_in;
    const EnvelopeResult plug_in = evaluate_one(model, settings);
    double largest = 0;
    for (int v = 0; v < 4; ++v)
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
    const EnvelopeResult r = evaluate_one(model_of({t.input(0, 0, 0.5, 0.5)}, 3, 0.0), settings);
    const theory::BoundRow& row = r.variants[0].rows[0][0];
    EXPECT_NEAR(row.recall_lower, t.recall_lower(0.3), 1e-15);
    EXPECT_NEAR(row.precision_lower, t.precision_lower(0.3), 1e-15);
}

// Three-token heads (α = 0.1, 0.5, 0.4, N = 2: the sink is left out and Δ > 0, so the R lower
// bound 1 − exp(−κd(Δ/B)²) rises from 0 to 1 with κ) whose R sits on that bound at
// κ_h = 10^(−1 + 0.3h): the side is consistent at small κ and falsified at large κ, and the
// judged κ's per-point flags recount from the per-document differences with the band's
// critical value.
TEST(CompareEnvelopes, FalsifiedPointsRecountFromThePerDocumentDifferences) {
    std::vector<HeadInput> heads;
    for (int h = 0; h < 8; ++h) {
        HeadInput head;
        head.layer = h / 4;
        head.head = h % 4;
        head.alpha = {0.1, 0.5, 0.4};
        head.norms = {1, 1, 1};
        head.rho0 = 0.2;
        head.beta = 0.5;
        head.sizes = {2};
        theory::BoundSettings at;
        at.d = 32;
        at.kappa = std::pow(10.0, -1 + 0.3 * h);
        head.P_mean = {0.8};
        head.R_mean = {
            theory::bounds_reference(reference_model(head, CosineSource::parametric), 2, at)
                .recall_lower};
        heads.push_back(head);
    }
    const ModelInput model = model_of(heads, 40, 0.02);  // 40 documents: the bootstrap
    EnvelopeSettings settings;
    settings.d = 32;
    settings.replicates = 400;
    const EnvelopeResult r = evaluate_one(model, settings);
    const SideVerdict& R_lower = r.variants[0].scan.side(ScanMetric::R, ScanSide::lower);
    EXPECT_EQ(R_lower.band_method, BandMethod::bootstrap);
    EXPECT_EQ(R_lower.units, 40);
    ASSERT_FALSE(R_lower.kappa_set.empty());
    EXPECT_TRUE(R_lower.kappa_set.front().open_below);  // consistent at small κ
    EXPECT_FALSE(R_lower.kappa_set.back().open_above);  // falsified at large κ
    // Recount at the judged κ and at a given κ where the side is falsified: per-document
    // reference bounds, the mean difference, its standard error with the pseudo-units, and the
    // critical value.
    settings.kappa = 1e3;
    const EnvelopeResult given = evaluate_one(model, settings);
    EXPECT_EQ(given.variants[0].scan.side(ScanMetric::R, ScanSide::lower).state,
              SideState::falsified_at_given_kappa);
    int mismatches = 0, falsified_total = 0;
    double largest = 0;
    for (const EnvelopeResult* result : {&r, &given}) {
        const KappaScan& scan = result->variants[0].scan;
        const SideVerdict& side = scan.side(ScanMetric::R, ScanSide::lower);
        theory::BoundSettings b;
        b.d = 32;
        b.kappa = side.kappa_judged;
        const double c = side.at_judged.critical;
        for (std::size_t h = 0; h < heads.size(); ++h) {
            std::vector<double> y;
            double sum = 0;
            for (int u = 0; u < model.documents; ++u) {
                const double bound =
                    theory::bounds_reference(document_model(model, h, u, CosineSource::parametric),
                                             2, b)
                        .recall_lower;
                y.push_back(bound - model.R.at(u, static_cast<int>(h)));
                sum += y.back();
            }
            const double mean = sum / model.documents;
            double squares = 0;
            for (double v : y)
                squares += (v - mean) * (v - mean);
            // The pseudo-units at the ends of R's range [0, 1].
            const double se = std::sqrt((squares + 2) / (model.documents - 1) / model.documents);
            const bool falsified = mean - c * se > 1e-12;
            falsified_total += falsified;
            mismatches += falsified != bool(scan.points.falsified[2][h]);
            largest = std::max(largest, std::abs(scan.points.z[2][h] - mean / se));
        }
        std::printf("R lower at kappa %.4g (c %.4f): recounted\n", side.kappa_judged, c);
    }
    std::printf("%d falsified, %d mismatches, largest z difference %.3g\n", falsified_total,
                mismatches, largest);
    EXPECT_GT(falsified_total, 0);
    EXPECT_EQ(mismatches, 0);
    EXPECT_LT(largest, 1e-9);
}

TEST(CompareEnvelopes, SeveralModelsScanInLockstepAndIntersect) {
    const TwoTokenHead t;
    auto heads_at = [&](double log_kappa) {
        std::vector<HeadInput> heads;
        for (int h = 0; h < 4; ++h)
            heads.push_back(
                t.input(0, h, 0.8, t.recall_lower(std::pow(10.0, log_kappa + 0.1 * h))));
        return heads;
    };
    EnvelopeSettings settings;
    settings.d = t.d;
    settings.replicates = 300;
    const ModelInput a = model_of(heads_at(0), 12, 0.02, 1), b = model_of(heads_at(1), 12, 0.02, 2);
    const EnvelopeResults both = evaluate_envelopes({a, b}, settings);
    ASSERT_EQ(both.models.size(), 2u);
    ASSERT_EQ(both.universal.size(), 4u);
    const JointSide& j = both.universal[0].sides[2];  // paper R lower
    const auto& sa = both.models[0].variants[0].scan.sides[2];
    const auto& sb = both.models[1].variants[0].scan.sides[2];
    // Model a holds R lower only up to a smaller κ than b: the intersection is a's set.
    ASSERT_FALSE(j.kappa_set.empty());
    EXPECT_DOUBLE_EQ(j.kappa_set.back().high,
                     std::min(sa.kappa_set.back().high, sb.kappa_set.back().high));
    EXPECT_EQ(j.consistent_samples, (std::vector<int>{0, 1}));
    const std::string csv = universal_kappa_csv(both);
    EXPECT_EQ(
        csv.substr(0, csv.find('\n')),
        "variant,metric,side,kappa_set,kappa_edge,gap_at_edge,models,models_consistent,state");
    // Alone, each model's scan equals its scan in the pair (the grid only gains κ in lockstep).
    const EnvelopeResult alone = evaluate_one(a, settings);
    EXPECT_EQ(alone.variants[0].scan.sides[2].state, sa.state);
}

TEST(CompareEnvelopes, ThreadCountDoesNotChangeResults) {
    std::vector<HeadInput> heads;
    for (int h = 0; h < 7; ++h)
        heads.push_back(small_head(h / 3, h % 3, 0.1 + 0.2 * h, 0.05 * h));
    const ModelInput model = model_of(heads, 35, 0.1);
    EnvelopeSettings settings;
    settings.d = 64;
    settings.threads = 1;
    settings.replicates = 300;
    const EnvelopeResult one = evaluate_one(model, settings);
    settings.threads = 3;
    const EnvelopeResult three = evaluate_one(model, settings);
    for (int v = 0; v < 4; ++v) {
        const KappaScan &x = one.variants[v].scan, &y = three.variants[v].scan;
        EXPECT_TRUE(x.rows_kappa == y.rows_kappa ||
                    (std::isnan(x.rows_kappa) && std::isnan(y.rows_kappa)));
        for (int side = 0; side < 4; ++side) {
            EXPECT_EQ(x.sides[side].state, y.sides[side].state);
            EXPECT_EQ(kappa_set_text(x.sides[side].kappa_set),
                      kappa_set_text(y.sides[side].kappa_set));
            EXPECT_EQ(x.sides[side].kappa_judged, y.sides[side].kappa_judged);
            EXPECT_EQ(x.sides[side].at_judged.critical, y.sides[side].at_judged.critical);
        }
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
    settings.kappa = 1;
    EXPECT_THROW(evaluate_envelopes({}, settings), InputError);
    const HeadInput a = small_head(0, 0, 0.3, 0.1);
    auto refused = [&](std::vector<HeadInput> heads, const EnvelopeSettings& s) {
        EXPECT_THROW(evaluate_envelopes({model_of(heads, 2, 0.1)}, s), InputError);
    };
    HeadInput b = small_head(0, 1, 0.3, 0.1);
    b.sizes.pop_back();
    b.P_mean.pop_back();
    b.R_mean.pop_back();
    EXPECT_THROW(evaluate_envelopes({model_of({a, b}, 2, 0.1)}, settings), std::exception);
    b = a;
    b.sizes.back() = 13;  // N > n
    refused({b}, settings);
    b = a;
    b.cos_by_lag.clear();
    EnvelopeSettings plug = settings;
    plug.cosines = CosineSource::plug_in;
    refused({b}, plug);
    b = a;
    b.beta = -0.1;
    refused({b}, settings);
    b = a;
    b.rho0 = 1.5;
    refused({b}, settings);
    b.rho0 = 1 + 1e-7;  // float rounding of a mean cosine: clamped, not refused
    EXPECT_EQ(head_model(b, CosineSource::parametric).cosine(0, 3), 1);
    EXPECT_NO_THROW(evaluate_envelopes({model_of({b}, 2, 0.0)}, settings));
    b = a;
    b.norms[2] = -1;
    refused({b}, settings);
    ModelInput m = model_of({a}, 3, 0.1);
    m.P.values.pop_back();  // per-document values of the wrong shape
    EXPECT_THROW(evaluate_envelopes({m}, settings), InputError);
    m = model_of({a}, 3, 0.1);
    m.documents = 0;
    EXPECT_THROW(evaluate_envelopes({m}, settings), InputError);
    EnvelopeSettings bad = settings;
    bad.kappa = -1;
    EXPECT_THROW(evaluate_envelopes({model_of({a}, 2, 0.1)}, bad), std::domain_error);
    bad = settings;
    bad.d = 0.5;
    EXPECT_THROW(evaluate_envelopes({model_of({a}, 2, 0.1)}, bad), std::domain_error);
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
// the informative points recounted plainly at each side's judged κ from its bound, the rows'
// margins and the per-point falsified and contradicted flags.
TEST(CompareEnvelopes, ConventionPointsAreSetApartAndInformativePointsRecount) {
    std::vector<HeadInput> heads;
    for (int h = 0; h < 4; ++h)
        heads.push_back(small_head(h / 2, h % 2, 0.2 + 0.1 * h, 0.05 * h));
    EnvelopeSettings settings;
    settings.d = 32;
    const EnvelopeResult r = evaluate_one(model_of(heads, 6, 0.05), settings);
    const int H = 4, S = 7, n = 12;
    for (const VariantResult& v : r.variants) {
        EXPECT_EQ(v.global.points, 2 * H * (S - 2));
        for (int s = 0; s < 4; ++s) {
            const SideVerdict& side = v.scan.sides[s];
            const bool P = side.metric == ScanMetric::P;
            const bool lower = side.side == ScanSide::lower;
            EXPECT_EQ(side.points, H * (S - 2));
            EXPECT_EQ(side.convention_points, H * 2);
            const std::vector<double>& bound = v.scan.points.bound[s];
            int informative = 0;
            for (int h = 0; h < H; ++h)
                for (int k = 0; k < S; ++k) {
                    const int N = heads[h].sizes[k], i = h * S + k;
                    const bool convention = N == 1 || N == n;
                    EXPECT_EQ(v.scan.points.convention[i], convention) << h << " " << N;
                    if (convention) continue;
                    const double floor = lower && P ? static_cast<double>(N) / n : 0;
                    const bool beyond = lower ? bound[i] >= floor + 0.01 : bound[i] <= 1 - 0.01;
                    const theory::MarginFlags f = theory::margin_flags(v.rows[h][k]);
                    const bool n_only =
                        lower ? f.lower_n_only() : (P ? f.xi_le0 : f.xi_le0 && bound[i] == 0.5);
                    const bool yes = beyond && !n_only && !v.scan.points.falsified[s][i] &&
                                     !v.scan.points.contradicted[s][i];
                    EXPECT_EQ(v.scan.points.informative[s][i], yes) << h << " " << N;
                    informative += yes;
                }
            EXPECT_EQ(side.informative_points, informative);
            EXPECT_EQ(side.band_method, BandMethod::holm);  // 6 documents
        }
    }
}

TEST(CompareEnvelopes, OutputFilesFollowTheContract) {
    const std::vector<HeadInput> heads = {small_head(0, 0, 0.3, 0.1), small_head(1, 2, 0.6, 0.2)};
    EnvelopeSettings settings;
    settings.d = 32;
    const EnvelopeResult r = evaluate_one(model_of(heads, 5, 0.05), settings);
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
              "kappa_R_upper,P_lower_edge,P_upper_edge,R_lower_edge,R_upper_edge,delta_le0,"
              "delta0_le0,xi_le0,P_inverted,R_inverted,P_trivial_lower,R_trivial_lower,"
              "P_trivial_upper,R_trivial_upper,sink_selected,convention,identity,z_P_lower,"
              "z_P_upper,z_R_lower,z_R_upper,falsified_P_lower,falsified_P_upper,"
              "falsified_R_lower,falsified_R_upper,contradicted_P_lower,contradicted_P_upper,"
              "contradicted_R_lower,contradicted_R_upper,informative_P_lower,informative_P_upper,"
              "informative_R_lower,informative_R_upper");
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
        for (const char* key : {"band", "rows_kappa", "rows_rule", "information_share", "sides",
                                "hypotheses", "fraction_inside", "mean_width"})
            EXPECT_TRUE(v.contains(key)) << name << " " << key;
        for (const char* metric : {"P", "R"})
            for (const char* side : {"lower", "upper"})
                for (const char* key : {"state", "kappa_set", "kappa_edge", "worst", "split",
                                        "informative", "kappa_free", "mean_gap_by_regime"})
                    EXPECT_TRUE(v.at("sides").at(metric).at(side).contains(key))
                        << name << metric << side << key;
    }
    const auto scan = lines_of(dir / "kappa_scan.csv");
    ASSERT_FALSE(scan.empty());
    EXPECT_EQ(scan[0], kKappaScanColumns);
    std::size_t scan_rows = 0;
    for (const VariantResult& v : r.variants)
        for (const auto& side : v.scan.sides)
            scan_rows += side.scan.size();
    EXPECT_EQ(scan.size(), 1 + scan_rows);
    const auto verdict = lines_of(dir / "verdict.csv");
    ASSERT_EQ(verdict.size(), 1u + 4 * 4);
    EXPECT_EQ(verdict[0], kVerdictColumns);
    EXPECT_EQ(verdict[1].rfind("paper,P,lower,", 0), 0u) << verdict[1];
    EXPECT_EQ(verdict[16].rfind("corrected,R,upper,", 0), 0u) << verdict[16];
    const nlohmann::json manifest = envelope_manifest(r);
    EXPECT_TRUE(manifest.contains("decisions"));
    EXPECT_TRUE(manifest.at("kappa").at("scale-invariant").contains("rows_kappa"));
    std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace attngeo::compare
