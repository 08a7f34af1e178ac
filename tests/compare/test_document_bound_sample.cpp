// Tests of compare/document_bound_sample: each document's bound from its own α (theory's plain
// per-N reference, bounds_reference, computed here) and the per-document difference as the unit
// of the test — excess, standard error and the bootstrap's critical value against a plain
// recomputation; and that the mean of per-document bounds, not the bound of the mean α, is what
// the measurement is compared with.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>

#include "common/splitmix64.hpp"
#include "compare/document_bound_sample.hpp"

namespace attngeo::compare {
namespace {

constexpr int kTokens = 9, kHeads = 2;

theory::HeadModel head_model(double beta, double rho0) {
    theory::HeadModel m;
    m.alpha = Eigen::VectorXd::Constant(kTokens, 1.0 / kTokens);
    m.norms = Eigen::VectorXd::Ones(kTokens);
    m.norms[0] = 0.3;
    m.cosine.resize(kTokens, kTokens);
    for (int j = 0; j < kTokens; ++j)
        for (int k = 0; k < kTokens; ++k)
            m.cosine(j, k) =
                j == k ? 1.0 : (j == 0 || k == 0 ? rho0 : std::exp(-beta * std::abs(j - k)));
    return m;
}

// U documents with random α (a sink of 0.3–0.6, the rest random) and random P, R per point.
std::shared_ptr<DocumentSampleInputs> inputs(int documents, theory::BoundVariant variant) {
    auto in = std::make_shared<DocumentSampleInputs>();
    in->heads = {head_model(0.2, 0.1), head_model(0.05, 0.0)};
    for (int N = 1; N <= kTokens; ++N)
        in->sizes.push_back(N);
    in->documents = documents;
    in->tokens = kTokens;
    in->d = 16;
    in->variant = variant;
    in->band.replicates = 300;
    in->band.seed = 5;
    SplitMix64 rng(17);
    const int M = kHeads * kTokens;
    for (UnitValues* v : {&in->P, &in->R}) {
        v->units = documents;
        v->points = M;
    }
    for (int u = 0; u < documents; ++u) {
        for (int h = 0; h < kHeads; ++h) {
            in->alpha.push_back(0.3 + 0.3 * rng.open_uniform());
            for (int i = 1; i < kTokens; ++i)
                in->alpha.push_back(0.7 * rng.open_uniform() / kTokens);
        }
        for (int p = 0; p < M; ++p) {
            in->P.values.push_back(0.5 + 0.5 * rng.open_uniform());
            in->R.values.push_back(rng.open_uniform());
        }
    }
    return in;
}

ScanPoints points_for() {
    ScanPoints p;
    for (int h = 0; h < kHeads; ++h)
        for (int N = 1; N <= kTokens; ++N) {
            p.facts.push_back({N, kTokens, N == kTokens});  // the sink leads: N = 1 convention too
            p.regime.push_back(0);
            p.layer.push_back(0);
            p.head.push_back(h);
        }
    for (int h = 0; h < kHeads; ++h)
        p.facts[h * kTokens].convention = true;
    return p;
}

// Plain: document u's bound of every point at κ through bounds_reference, N by N.
std::array<std::vector<double>, 4> plain_bounds(const DocumentSampleInputs& in, int u,
                                                double kappa) {
    std::array<std::vector<double>, 4> out;
    for (int h = 0; h < kHeads; ++h) {
        theory::HeadModel m = in.heads[h];
        double total = 0;
        for (int i = 0; i < kTokens; ++i)
            total += in.alpha[(u * kHeads + h) * kTokens + i];
        for (int i = 0; i < kTokens; ++i)
            m.alpha[i] = in.alpha[(u * kHeads + h) * kTokens + i] / total;
        theory::BoundSettings s;
        s.d = in.d;
        s.kappa = kappa;
        s.variant = in.variant;
        for (int N : in.sizes) {
            const theory::BoundRow r = theory::bounds_reference(m, N, s);
            out[0].push_back(r.precision_lower);
            out[1].push_back(r.precision_upper);
            out[2].push_back(r.recall_lower);
            out[3].push_back(r.recall_upper);
        }
    }
    return out;
}

// Plain: every document's bounds at κ, [U] of plain_bounds.
std::vector<std::array<std::vector<double>, 4>> plain_document_bounds(
    const DocumentSampleInputs& in, double kappa) {
    std::vector<std::array<std::vector<double>, 4>> bounds;
    for (int u = 0; u < in.documents; ++u)
        bounds.push_back(plain_bounds(in, u, kappa));
    return bounds;
}

// Plain: one side's per-document differences, measurement − bound (an upper side) or bound −
// measurement (a lower one), with the measurement's widths.
UnitValues plain_differences(const DocumentSampleInputs& in,
                             const std::vector<std::array<std::vector<double>, 4>>& bounds,
                             int side) {
    const bool upper = side % 2 == 1;
    const UnitValues& x = side < 2 ? in.P : in.R;
    UnitValues y;
    y.units = x.units;
    y.points = x.points;
    y.width = x.width;
    for (int u = 0; u < y.units; ++u)
        for (int p = 0; p < y.points; ++p)
            y.values.push_back(upper ? x.at(u, p) - bounds[u][side][p]
                                     : bounds[u][side][p] - x.at(u, p));
    return y;
}

TEST(DocumentBoundSample, ExcessAndErrorAreThoseOfThePerDocumentDifference) {
    for (theory::BoundVariant variant :
         {theory::BoundVariant::paper, theory::BoundVariant::corrected}) {
        const auto in = inputs(40, variant);
        const Sample sample = document_bound_sample(points_for(), in);
        const double kappa = 0.7;
        const KappaTests t = sample.evaluate({kappa}, 0xFu).at(0);
        const int U = in->documents, M = in->P.points;
        const auto bounds = plain_document_bounds(*in, kappa);
        double largest = 0;
        for (int side = 0; side < 4; ++side) {
            const UnitValues& x = side < 2 ? in->P : in->R;
            const UnitValues y = plain_differences(*in, bounds, side);
            for (int p = 0; p < M; ++p) {
                double mean = 0, mean_bound = 0;
                for (int u = 0; u < U; ++u)
                    mean += y.at(u, p), mean_bound += bounds[u][side][p];
                mean /= U;
                mean_bound /= U;
                double squares = 0;
                for (int u = 0; u < U; ++u)
                    squares += (y.at(u, p) - mean) * (y.at(u, p) - mean);
                const double w = x.width_at(p);  // the pseudo-units of point_moments
                const double se = std::sqrt((squares + 2 * w * w) / (U - 1) / U);
                const SideTest& s = t.sets[all_units].sides[side];
                largest = std::max({largest, std::fabs(s.excess[p] - mean), std::fabs(s.se[p] - se),
                                    std::fabs(s.bound[p] - mean_bound)});
            }
            const std::vector<char> tested = tested_points(points_for().facts);
            const Resamples g(5, 300, U);
            const double c =
                bootstrap_critical_values_plain(y, point_moments(y), tested, g, 0, U, 0.05)
                    .upper_side;
            largest = std::max(largest, std::fabs(t.sets[all_units].sides[side].critical - c));
            EXPECT_EQ(t.sets[second_half].method, BandMethod::holm);  // 20 < 30 documents
        }
        std::printf("%s: largest difference from the plain per-document recomputation %.3g\n",
                    theory::to_string(variant), largest);
        EXPECT_LT(largest, 1e-12);
    }
}

// During the scan (no side exact) a side's critical value may be screened: then no point is
// beyond the plain bootstrap's critical value; where it is computed it is that value. Over a
// range of κ, so both cases occur.
TEST(DocumentBoundSample, ScreenedScanRowsDecideAsThePlainBootstrap) {
    const auto in = inputs(40, theory::BoundVariant::paper);
    for (double& p : in->P.values)
        p = 0.2 * p;  // below the P lower bound at some κ: computed rows too
    const Sample sample = document_bound_sample(points_for(), in);
    const std::vector<char> tested = tested_points(points_for().facts);
    const std::vector<double> kappas = {1e-3, 0.1, 0.7, 5.0, 50.0, 1e3};
    const std::vector<KappaTests> tests = sample.evaluate(kappas, 0u);
    const int U = in->documents, M = in->P.points;
    int screened = 0, computed = 0;
    double largest = 0;
    for (std::size_t k = 0; k < kappas.size(); ++k) {
        const auto bounds = plain_document_bounds(*in, kappas[k]);
        for (int side = 0; side < 4; ++side) {
            const UnitValues y = plain_differences(*in, bounds, side);
            const PointMoments m = point_moments(y);
            const double c =
                bootstrap_critical_values_plain(y, m, tested, Resamples(5, 300, U), 0, U, 0.05)
                    .upper_side;
            const SideTest& s = tests[k].sets[all_units].sides[side];
            if (s.rule == CriticalRule::computed) {
                computed += 1;
                largest = std::max(largest, std::fabs(s.critical - c));
            } else {
                ASSERT_EQ(s.rule, CriticalRule::below_screen);
                screened += 1;
                for (int p = 0; p < M; ++p)
                    EXPECT_FALSE(tested[p] && m.se[p] > 0 && m.mean[p] - c * m.se[p] > 1e-12)
                        << "κ " << kappas[k] << " side " << side << " point " << p;
            }
        }
    }
    std::printf("%d rows screened, %d computed; largest difference of c %.3g\n", screened, computed,
                largest);
    EXPECT_GT(screened, 0);
    EXPECT_GT(computed, 0);
    EXPECT_LT(largest, 1e-12);
}

// The terms cache changes no bit: the bounds through a cache the scan filled, through one that
// holds only the first head (a memory budget too small for both), and from scratch are the
// same, and the plain per-N reference's; the scan's tests agree too.
TEST(DocumentBoundSample, TheTermsCacheWholeOrPartialChangesNoBit) {
    const auto in = inputs(12, theory::BoundVariant::corrected);
    const std::vector<double> kappas = {0.05, 0.7, 3.0};
    const auto whole = document_terms_cache(*in);
    const Sample cached = document_bound_sample(points_for(), in, whole);
    const auto cached_tests = cached.evaluate(kappas, 0xFu);
    // One head's terms are about 1.5 · 8 · U · S · n bytes; a quarter of the budget holds one.
    const double per_head = 1.5 * sizeof(double) * in->documents * in->sizes.size() * kTokens;
    ::setenv("ATTNGEO_MEMORY_BUDGET",
             std::to_string(static_cast<long long>(4 * 1.5 * per_head)).c_str(), 1);
    const auto partial = document_terms_cache(*in);
    const Sample partly = document_bound_sample(points_for(), in, partial);
    const auto partly_tests = partly.evaluate(kappas, 0xFu);
    const auto partial_bounds = document_bounds(*in, 0.7, partial.get());
    ::unsetenv("ATTNGEO_MEMORY_BUDGET");
    const auto through_whole = document_bounds(*in, 0.7, whole.get());
    const auto scratch = document_bounds(*in, 0.7);
    const auto plain = plain_document_bounds(*in, 0.7);
    double largest_from_plain = 0;
    for (int u = 0; u < in->documents; ++u)
        for (int side = 0; side < 4; ++side) {
            EXPECT_EQ(through_whole[u][side], scratch[u][side]);
            EXPECT_EQ(partial_bounds[u][side], scratch[u][side]);
            for (std::size_t p = 0; p < plain[u][side].size(); ++p)
                largest_from_plain = std::max(largest_from_plain,
                                              std::fabs(scratch[u][side][p] - plain[u][side][p]));
        }
    for (std::size_t k = 0; k < kappas.size(); ++k)
        for (int side = 0; side < 4; ++side) {
            const SideTest &a = cached_tests[k].sets[all_units].sides[side],
                           &b = partly_tests[k].sets[all_units].sides[side];
            EXPECT_EQ(a.bound, b.bound);
            EXPECT_EQ(a.excess, b.excess);
            EXPECT_TRUE(a.critical == b.critical ||
                        (std::isnan(a.critical) && std::isnan(b.critical)));  // Holm: NaN
        }
    std::printf(
        "cached, partly cached and uncached bounds: the same bits; largest difference "
        "from the plain reference %.3g\n",
        largest_from_plain);
    EXPECT_LT(largest_from_plain, 1e-12);
}

// Terms cached for one variant and switched to the variant that shares its μ (what compare does
// between paper and scale-invariant, exact-mean and corrected) give that variant's bounds bit for
// bit; a head beyond the cache's share is built afresh for the new variant.
TEST(DocumentBoundSample, SwitchedTermsGiveTheOtherVariantsBitsWholeOrPartial) {
    using theory::BoundVariant;
    for (auto [from, to] : {std::pair{BoundVariant::paper, BoundVariant::scale_invariant},
                            std::pair{BoundVariant::exact_mean, BoundVariant::corrected},
                            std::pair{BoundVariant::corrected, BoundVariant::exact_mean}})
        for (bool partial : {false, true}) {
            const auto source = inputs(12, from);
            const double per_head =
                1.5 * sizeof(double) * source->documents * source->sizes.size() * kTokens;
            if (partial)
                ::setenv("ATTNGEO_MEMORY_BUDGET",
                         std::to_string(static_cast<long long>(4 * 1.5 * per_head)).c_str(), 1);
            const auto terms = document_terms_cache(*source);
            ::unsetenv("ATTNGEO_MEMORY_BUDGET");
            (void)document_bounds(*source, 0.7, terms.get());  // fills the cache for `from`
            switch_variant(*terms, to);
            const auto target = inputs(12, to);
            int differing = 0;
            for (double kappa : {0.05, 0.7, 3.0}) {
                const auto switched = document_bounds(*target, kappa, terms.get());
                const auto fresh = document_bounds(*target, kappa);
                for (int u = 0; u < target->documents; ++u)
                    for (int side = 0; side < 4; ++side)
                        differing += switched[u][side] != fresh[u][side];
            }
            EXPECT_EQ(differing, 0) << theory::to_string(from) << " -> " << theory::to_string(to)
                                    << (partial ? " (partial cache)" : "");
        }
    EXPECT_THROW(switch_variant(*document_terms_cache(*inputs(12, BoundVariant::paper)),
                                BoundVariant::corrected),
                 std::domain_error);
}

TEST(DocumentBoundSample, TheMeanOfDocumentBoundsIsNotTheBoundOfTheMeanProfile) {
    const auto in = inputs(40, theory::BoundVariant::paper);
    const Sample sample = document_bound_sample(points_for(), in);
    const KappaTests t = sample.evaluate({20.0}, 0xFu).at(0);
    // The bound of the document-mean α, plainly.
    DocumentSampleInputs mean_in = *in;
    mean_in.documents = 1;
    mean_in.alpha.assign(kHeads * kTokens, 0.0);
    for (int u = 0; u < in->documents; ++u)
        for (int i = 0; i < kHeads * kTokens; ++i) {
            const int h = i / kTokens;
            double total = 0;
            for (int k = 0; k < kTokens; ++k)
                total += in->alpha[(u * kHeads + h) * kTokens + k];
            mean_in.alpha[i] += in->alpha[u * kHeads * kTokens + i] / total / in->documents;
        }
    const auto of_mean = plain_bounds(mean_in, 0, 20.0);
    double largest = 0;
    for (int side = 0; side < 4; ++side)
        for (int p = 0; p < in->P.points; ++p)
            largest = std::max(
                largest, std::fabs(of_mean[side][p] - t.sets[all_units].sides[side].bound[p]));
    std::printf("mean of document bounds vs bound of the mean profile differ by up to %.3g\n",
                largest);
    EXPECT_GT(largest, 1e-4);
}

TEST(DocumentBoundSample, FewDocumentsUseHolmAndTheHalvesSplitByDocumentOrder) {
    const auto in = inputs(12, theory::BoundVariant::corrected);
    const Sample sample = document_bound_sample(points_for(), in);
    EXPECT_TRUE(sample.split);
    const KappaTests t = sample.evaluate({1.0}, 0u).at(0);
    EXPECT_EQ(t.sets[all_units].method, BandMethod::holm);
    EXPECT_EQ(t.sets[first_half].units, 6);
    EXPECT_EQ(t.sets[second_half].units, 6);
    EXPECT_TRUE(std::isnan(t.sets[all_units].sides[0].critical));
    const ScanResult r = scan_kappa({sample}, std::nullopt);
    for (const SideVerdict& v : r.samples[0].sides)
        EXPECT_EQ(v.band_method, BandMethod::holm);
}

}  // namespace
}  // namespace attngeo::compare
