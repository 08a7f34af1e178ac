// Per-document bounds and their tests; see document_bound_sample.hpp. The bounds of a batch of κ
// are computed head by head (one head's documents on one thread), then each κ and side is one
// matrix of per-document differences whose band is bootstrapped over the documents.
#include "compare/document_bound_sample.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>

#include "common/errors.hpp"
#include "common/size_checks.hpp"
#include "compare/parallel_for.hpp"

namespace attngeo::compare {
namespace {

// Bytes of per-document bounds held at once (four sides per κ); a larger batch of κ is split.
constexpr std::size_t kBoundBytes = std::size_t{256} << 20;
// The screens' subsets: the bootstrap over the points of largest z alone bounds the critical
// value below, tried with growing subsets before the whole product.
constexpr int kScreenPoints[] = {1, 16, 128};
// The share of attngeo's memory budget (memory_budget_bytes) that per-(head, document) bound
// terms may take between evaluations: the heads beyond it have theirs rebuilt for every batch
// of κ, which at n = 1024 costs O(n² log n) per document each time.
constexpr std::uint64_t kTermsCacheShare = 4;  // a quarter

// Per-document bounds of a batch of κ: [κ][side][U][M].
struct BatchBounds {
    int kappas = 0, units = 0, points = 0;
    std::vector<double> values;
    double& at(int k, int side, int u, int p) {
        return values[((static_cast<std::size_t>(k) * kSideCount + side) * units + u) * points + p];
    }
    const double* block(int k, int side) const {
        return values.data() + (static_cast<std::size_t>(k) * kSideCount + side) * units * points;
    }
};

// Document u's α of head h, renormalised to sum 1.
Eigen::VectorXd document_alpha(const DocumentSampleInputs& in, int u, int h) {
    const int H = static_cast<int>(in.heads.size());
    const double* a = in.alpha.data() + (static_cast<std::size_t>(u) * H + h) * in.tokens;
    Eigen::VectorXd alpha = Eigen::Map<const Eigen::VectorXd>(a, in.tokens);
    const double total = alpha.sum();
    if (!(total > 0))
        throw InputError("compare: document " + std::to_string(u) + " head index " +
                         std::to_string(h) + " has no attention mass");
    return alpha / total;
}

// The terms of head h for every document, or nullptr entries where they are not cached.
using HeadTerms = std::vector<std::unique_ptr<theory::BoundTerms>>;

}  // namespace

class DocumentTerms {
  public:
    std::vector<HeadTerms> heads;  // [H] of [U], or empty for a head beyond the cache's share
    theory::BoundVariant variant;  // the variant the cached terms are for
};

namespace {

std::unique_ptr<theory::BoundTerms> document_terms(const DocumentSampleInputs& in,
                                                   theory::HeadModel& model, int u, int h) {
    model.alpha = document_alpha(in, u, h);
    return std::make_unique<theory::BoundTerms>(model, in.sizes, in.variant);
}

void store(const std::vector<std::vector<theory::EnvelopeBounds>>& bounds, int u, int h, int S,
           BatchBounds& out) {
    for (std::size_t k = 0; k < bounds.size(); ++k)
        for (int s = 0; s < S; ++s) {
            const theory::EnvelopeBounds& e = bounds[k][s];
            const int p = h * S + s, kk = static_cast<int>(k);
            out.at(kk, 0, u, p) = e.precision_lower;
            out.at(kk, 1, u, p) = e.precision_upper;
            out.at(kk, 2, u, p) = e.recall_lower;
            out.at(kk, 3, u, p) = e.recall_upper;
        }
}

// Head h's per-document bounds at `kappas`; `cache` [U] keeps its terms when given. The head's
// model (with its n × n cosines) is copied only when some document's terms must be built.
void fill_head(const DocumentSampleInputs& in, int h, const std::vector<double>& kappas,
               HeadTerms* cache, BatchBounds& out) {
    std::optional<theory::HeadModel> model;
    auto build = [&](int u) {
        if (!model) model = in.heads[h];
        return document_terms(in, *model, u, h);
    };
    const int S = static_cast<int>(in.sizes.size());
    for (int u = 0; u < in.documents; ++u) {
        if (cache && !(*cache)[u]) (*cache)[u] = build(u);
        const std::unique_ptr<theory::BoundTerms> own = cache ? nullptr : build(u);
        const theory::BoundTerms& terms = cache ? *(*cache)[u] : *own;
        store(terms.envelopes_many(in.d, kappas, true), u, h, S, out);
    }
}

BatchBounds batch_bounds(const DocumentSampleInputs& in, const std::vector<double>& kappas,
                         DocumentTerms* cache) {
    if (cache && cache->variant != in.variant)
        throw_domain_error("document_bounds", std::string("terms cached for ") +
                                                  theory::to_string(cache->variant) +
                                                  ", inputs for " + theory::to_string(in.variant));
    BatchBounds b;
    b.kappas = static_cast<int>(kappas.size());
    b.units = in.documents;
    b.points = in.P.points;
    b.values.resize(static_cast<std::size_t>(b.kappas) * kSideCount * b.units * b.points);
    parallel_for(static_cast<int>(in.heads.size()), in.band.threads, [&](int h) {
        HeadTerms* head = cache && !cache->heads[h].empty() ? &cache->heads[h] : nullptr;
        fill_head(in, h, kappas, head, b);
    });
    return b;
}

// How many heads' terms, every document's, fit the cache: about n doubles per size each.
std::size_t cached_heads(const DocumentSampleInputs& in) {
    const double per_head =
        1.5 * sizeof(double) * in.documents * in.sizes.size() * static_cast<double>(in.tokens);
    const double budget = static_cast<double>(memory_budget_bytes() / kTermsCacheShare);
    return static_cast<std::size_t>(std::min<double>(in.heads.size(), budget / per_head));
}

// The per-document excess of one side: measurement − bound (upper) or bound − measurement.
UnitValues excess_values(const UnitValues& measured, const double* bound, bool upper) {
    UnitValues y;
    y.units = measured.units;
    y.points = measured.points;
    y.width = measured.width;  // the bound moves the range, not its width
    y.values.resize(measured.values.size());
    for (std::size_t i = 0; i < y.values.size(); ++i)
        y.values[i] = upper ? measured.values[i] - bound[i] : bound[i] - measured.values[i];
    return y;
}

// The tested points with a standard error and their z, largest first.
std::vector<std::pair<double, int>> by_z(const PointMoments& m, const std::vector<char>& tested) {
    std::vector<std::pair<double, int>> out;
    for (std::size_t p = 0; p < tested.size(); ++p)
        if (tested[p] && m.se[p] > 0) out.emplace_back(m.mean[p] / m.se[p], static_cast<int>(p));
    std::sort(out.begin(), out.end(),
              [](const auto& a, const auto& b) { return a.first > b.first; });
    return out;
}

// A lower bound of the bootstrap's critical value: the band over the `keep` points of largest
// z alone (a maximum over fewer points is never larger).
double screening_bound(const UnitValues& y, const PointMoments& m,
                       const std::vector<std::pair<double, int>>& ranked, std::size_t keep,
                       const Resamples& g, int first, int last, int threads) {
    std::vector<char> top(y.points, 0);
    for (std::size_t i = 0; i < std::min(keep, ranked.size()); ++i)
        top[ranked[i].second] = 1;
    return bootstrap_critical_values(y, m, top, g, first, last, kFamilyError, threads).upper_side;
}

bool any_beyond(const PointMoments& m, const std::vector<char>& tested, double critical) {
    for (std::size_t p = 0; p < tested.size(); ++p)
        if (tested[p] && m.mean[p] - critical * m.se[p] > kScanSlack) return true;
    return false;
}

// The critical value of one set's band and how it was found: screened below (none can be
// falsified) or computed.
void set_critical(const UnitValues& y, const PointMoments& m, const std::vector<char>& tested,
                  const Resamples& g, int first, int last, bool exact_critical, int threads,
                  SideTest& t) {
    const std::vector<std::pair<double, int>> ranked = by_z(m, tested);
    if (!exact_critical && !ranked.empty())
        for (int keep : kScreenPoints) {
            if (static_cast<std::size_t>(keep) >= ranked.size()) break;
            const double floor = screening_bound(y, m, ranked, keep, g, first, last, threads);
            if (!any_beyond(m, tested, floor)) {
                t.rule = CriticalRule::below_screen;
                return;
            }
        }
    // Where the critical value is not reported, the replicates stop once a lower bound of it
    // clears every point.
    std::function<bool(double)> clears;
    if (!exact_critical) clears = [&](double c) { return !any_beyond(m, tested, c); };
    const UpperCritical c =
        bootstrap_upper_critical(y, m, tested, g, first, last, kFamilyError, threads, clears);
    if (!c.exact) {
        t.rule = CriticalRule::below_screen;
        return;
    }
    t.critical = c.value;
    t.rule = CriticalRule::computed;
}

// Only the set of all units is computed exactly when `exact_critical`: the halves are judged by
// the scan alone.
std::array<SideTest, kUnitSets> side_tests(
    const UnitValues& y, const double* bound, const std::vector<char>& tested,
    const std::array<std::shared_ptr<Resamples>, kUnitSets>& draws, bool exact_critical,
    int threads) {
    std::array<SideTest, kUnitSets> out;
    const auto ranges = unit_set_ranges(y.units);
    for (int s = 0; s < kUnitSets; ++s) {
        const auto [first, last] = ranges[s];
        const PointMoments m = point_moments(y, first, last);
        SideTest& t = out[s];
        t.excess = m.mean;
        t.se = m.se;
        t.bound.assign(y.points, 0.0);
        for (int u = first; u < last; ++u)
            for (int p = 0; p < y.points; ++p)
                t.bound[p] += bound[static_cast<std::size_t>(u) * y.points + p];
        for (double& b : t.bound)
            b /= std::max(1, last - first);
        if (band_method_for(last - first) != BandMethod::bootstrap) continue;
        set_critical(y, m, tested, *draws[s], first, last, exact_critical && s == all_units,
                     threads, t);
    }
    return out;
}

class DocumentEvaluator {
  public:
    DocumentEvaluator(std::shared_ptr<const DocumentSampleInputs> inputs, std::vector<char> tested,
                      std::shared_ptr<DocumentTerms> terms)
        : in_(std::move(inputs)), tested_(std::move(tested)), cache_(std::move(terms)) {
        const auto ranges = unit_set_ranges(in_->documents);
        for (int s = 0; s < kUnitSets; ++s) {
            const int units = ranges[s].second - ranges[s].first;
            if (band_method_for(units) == BandMethod::bootstrap)
                draws_[s] =
                    std::make_shared<Resamples>(in_->band.seed, in_->band.replicates, units);
        }
    }

    std::vector<KappaTests> operator()(const std::vector<double>& kappas, unsigned exact_sides) {
        const std::size_t per_kappa =
            sizeof(double) * kSideCount * std::max<std::size_t>(1, in_->P.values.size());
        const std::size_t batch = std::max<std::size_t>(1, kBoundBytes / per_kappa);
        std::vector<KappaTests> out;
        for (std::size_t begin = 0; begin < kappas.size(); begin += batch) {
            const std::vector<double> part(kappas.begin() + begin,
                                           kappas.begin() + std::min(kappas.size(), begin + batch));
            const BatchBounds bounds = batch_bounds(*in_, part, cache_.get());
            for (int k = 0; k < bounds.kappas; ++k)
                out.push_back(tests_at(part[k], bounds, k, exact_sides));
        }
        return out;
    }

  private:
    KappaTests tests_at(double kappa, const BatchBounds& bounds, int k, unsigned exact_sides) {
        KappaTests t;
        t.kappa = kappa;
        const auto ranges = unit_set_ranges(in_->documents);
        for (int s = 0; s < kUnitSets; ++s) {
            t.sets[s].units = ranges[s].second - ranges[s].first;
            t.sets[s].method = band_method_for(t.sets[s].units);
        }
        for (int side = 0; side < kSideCount; ++side) {
            const bool exact_critical = exact_sides & (1u << side);
            const double* block = bounds.block(k, side);
            const std::size_t size = static_cast<std::size_t>(bounds.units) * bounds.points;
            Memo& memo = memo_[side];
            const bool same = memo.valid && (memo.exact || !exact_critical) &&
                              std::equal(block, block + size, memo.bounds.begin());
            if (!same) {
                const bool upper = side_kind(side) == ScanSide::upper;
                const UnitValues& measured = side_metric(side) == ScanMetric::P ? in_->P : in_->R;
                const UnitValues y = excess_values(measured, block, upper);
                memo.tests =
                    side_tests(y, block, tested_, draws_, exact_critical, in_->band.threads);
                memo.bounds.assign(block, block + size);
                memo.valid = true;
                memo.exact = exact_critical;
            }
            for (int s = 0; s < kUnitSets; ++s)
                t.sets[s].sides[side] = memo.tests[s];
        }
        return t;
    }

    // The last κ's bounds of a side and their tests: a bound that does not move with κ (most
    // of the grid's ends) is not bootstrapped again.
    struct Memo {
        bool valid = false, exact = false;
        std::vector<double> bounds;
        std::array<SideTest, kUnitSets> tests;
    };
    std::shared_ptr<const DocumentSampleInputs> in_;
    std::vector<char> tested_;
    std::array<std::shared_ptr<Resamples>, kUnitSets> draws_;  // per set of units
    std::array<Memo, kSideCount> memo_;
    std::shared_ptr<DocumentTerms> cache_;
};

void validate(const DocumentSampleInputs& in, const ScanPoints& points) {
    const char* fn = "attngeo::compare::document_bound_sample";
    const std::size_t H = in.heads.size(), S = in.sizes.size(), U = in.documents;
    const std::size_t M = H * S;
    if (H == 0 || S == 0 || U == 0) throw_domain_error(fn, "no heads, sizes or documents");
    if (points.facts.size() != M) throw_domain_error(fn, "points differ from heads × sizes");
    if (in.alpha.size() != U * H * static_cast<std::size_t>(in.tokens))
        throw_domain_error(fn, "alpha is not [documents, heads, tokens]");
    for (const UnitValues* v : {&in.P, &in.R})
        if (v->units != in.documents || v->points != static_cast<int>(M) ||
            v->values.size() != U * M)
            throw_domain_error(fn, "P or R is not [documents, heads × sizes]");
    for (const theory::HeadModel& h : in.heads)
        if (h.norms.size() != in.tokens) throw_domain_error(fn, "a head's norms differ from n");
}

}  // namespace

std::shared_ptr<DocumentTerms> document_terms_cache(const DocumentSampleInputs& inputs) {
    auto terms = std::make_shared<DocumentTerms>();
    terms->variant = inputs.variant;
    terms->heads.resize(inputs.heads.size());
    const std::size_t cached = cached_heads(inputs);
    for (std::size_t h = 0; h < cached; ++h)
        terms->heads[h].resize(inputs.documents);
    return terms;
}

void switch_variant(DocumentTerms& terms, theory::BoundVariant variant) {
    if (!theory::shares_mean(terms.variant, variant))
        throw_domain_error("switch_variant", std::string("document terms built for ") +
                                                 theory::to_string(terms.variant) +
                                                 " have another mu than " +
                                                 theory::to_string(variant));
    terms.variant = variant;
    for (HeadTerms& head : terms.heads)
        for (std::unique_ptr<theory::BoundTerms>& document : head)
            if (document) document->switch_variant(variant);
}

Sample document_bound_sample(ScanPoints points, std::shared_ptr<const DocumentSampleInputs> inputs,
                             std::shared_ptr<DocumentTerms> terms) {
    validate(*inputs, points);
    if (!terms) terms = document_terms_cache(*inputs);
    Sample sample;
    const int half = inputs->documents / 2;
    sample.split = half >= 2 && inputs->documents - half >= 2;
    auto evaluator =
        std::make_shared<DocumentEvaluator>(inputs, tested_points(points.facts), std::move(terms));
    sample.points = std::move(points);
    sample.evaluate = [evaluator](const std::vector<double>& kappas, unsigned exact_sides) {
        return (*evaluator)(kappas, exact_sides);
    };
    return sample;
}

std::vector<std::array<std::vector<double>, kSideCount>> document_bounds(
    const DocumentSampleInputs& inputs, double kappa, DocumentTerms* terms) {
    const BatchBounds b = batch_bounds(inputs, {kappa}, terms);
    std::vector<std::array<std::vector<double>, kSideCount>> out(inputs.documents);
    for (int u = 0; u < inputs.documents; ++u)
        for (int side = 0; side < kSideCount; ++side) {
            const double* row = b.block(0, side) + static_cast<std::size_t>(u) * b.points;
            out[u][side].assign(row, row + b.points);
        }
    return out;
}

}  // namespace attngeo::compare
