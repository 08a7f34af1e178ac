// The judge of Monte Carlo estimates; see estimate_envelopes.hpp.
#include "compare/estimate_envelopes.hpp"

#include <omp.h>

#include <cmath>
#include <limits>
#include <memory>

#include "common/errors.hpp"
#include "compare/verdict_tables.hpp"

namespace attngeo::compare {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::array<SetBands, kUnitSets> point_bands(const PointInputs& p, const std::vector<char>& tested,
                                            const BandSettings& band) {
    if (p.measured.exact) return exact_bands(p.measured.P_exact, p.measured.R_exact);
    return unit_bands(p.measured.P, p.measured.R, tested, band);
}

PointBounds point_bounds(const std::vector<theory::EnvelopeBounds>& e) {
    PointBounds b;
    for (const theory::EnvelopeBounds& x : e) {
        b.P_lower.push_back(x.precision_lower);
        b.P_upper.push_back(x.precision_upper);
        b.R_lower.push_back(x.recall_lower);
        b.R_upper.push_back(x.recall_upper);
    }
    return b;
}

ScanPoints scan_points(const PointInputs& p, const std::vector<theory::BoundRow>& rows) {
    ScanPoints s;
    s.facts = point_facts(p.head, p.sizes, p.ranking);
    s.regime = p.regimes.empty() ? std::vector<int>(p.sizes.size(), 0) : p.regimes;
    for (const theory::BoundRow& r : rows)
        s.margins.push_back(theory::margin_flags(r));
    return s;
}

// The rows at the point's rows κ, or each side's bound at its own judged κ on rows of any κ.
std::vector<theory::BoundRow> shown_rows(const theory::BoundTerms& terms, double d,
                                         const KappaScan& scan) {
    if (!std::isnan(scan.rows_kappa)) return terms.evaluate(d, scan.rows_kappa);
    std::vector<theory::BoundRow> rows = terms.evaluate(d, 1.0);
    for (std::size_t s = 0; s < rows.size(); ++s) {
        theory::BoundRow& r = rows[s];
        r.precision_lower = scan.points.bound[0][s];
        r.precision_upper = scan.points.bound[1][s];
        r.recall_lower = scan.points.bound[2][s];
        r.recall_upper = scan.points.bound[3][s];
        r.fmax_lower = theory::f_of(r.precision_lower);
        r.fmax_upper = theory::f_of(r.precision_upper);
        r.fmin_lower = theory::f_of(r.recall_lower);
        r.fmin_upper = theory::f_of(r.recall_upper);
    }
    return rows;
}

// Each side's bound at the joint κ_edge of that side, [side][S]; NaN without a joint edge.
std::array<std::vector<double>, kSideCount> joint_side_bounds(const theory::BoundTerms& terms,
                                                              double d, const JointScan& joint) {
    std::array<std::vector<double>, kSideCount> out;
    for (int side = 0; side < kSideCount; ++side) {
        const double kappa = joint.sides[side].kappa_edge;
        if (std::isnan(kappa)) {
            out[side].assign(terms.sizes().size(), kNaN);
            continue;
        }
        const PointBounds b = point_bounds(terms.envelopes_many(d, {kappa}, true).front());
        out[side] = b.side(side);
    }
    return out;
}

struct PreparedPoint {
    std::vector<char> tested;
    std::shared_ptr<const std::array<SetBands, kUnitSets>> bands;
};

VariantEnvelope judge_variant(const std::vector<PointInputs>& points,
                              const std::vector<PreparedPoint>& prepared,
                              theory::BoundVariant variant, std::optional<double> kappa) {
    VariantEnvelope v;
    v.variant = variant;
    std::vector<std::shared_ptr<const theory::BoundTerms>> terms;
    std::vector<Sample> samples;
    bool any_finite_d = false;
    for (std::size_t g = 0; g < points.size(); ++g) {
        const PointInputs& p = points[g];
        auto t = std::make_shared<const theory::BoundTerms>(p.head, p.sizes, variant, p.ranking);
        terms.push_back(t);
        any_finite_d = any_finite_d || !std::isinf(p.d);
        const double d = p.d;
        samples.push_back(
            fixed_bound_sample(scan_points(p, t->evaluate(d, 1.0)), *prepared[g].bands,
                               [t, d](const std::vector<double>& kappas) {
                                   std::vector<PointBounds> out;
                                   for (const auto& e : t->envelopes_many(d, kappas, true))
                                       out.push_back(point_bounds(e));
                                   return out;
                               }));
    }
    // κ·d = ∞ at d = ∞ for any κ: the scan finds every side κ-free.
    ScanResult result = scan_kappa(samples, kappa);
    v.joint = result.joint;
    for (std::size_t g = 0; g < points.size(); ++g) {
        v.rows.push_back(shown_rows(*terms[g], points[g].d, result.samples[g]));
        if (points.size() > 1)
            v.joint_bounds.push_back(joint_side_bounds(*terms[g], points[g].d, v.joint));
        v.rows_rule.push_back(rows_rule(result.samples[g], kappa.has_value(), !any_finite_d));
    }
    v.scans = std::move(result.samples);
    return v;
}

}  // namespace

std::vector<PointFacts> point_facts(const theory::HeadModel& head, const std::vector<int>& sizes,
                                    theory::Ranking ranking) {
    const Eigen::Index n = head.alpha.size();
    if (n < 1 || head.norms.size() != n)
        throw_domain_error("attngeo::compare::point_facts", "alpha and norms differ in length");
    const Eigen::VectorXd scores = ranking == theory::Ranking::attention
                                       ? head.alpha
                                       : Eigen::VectorXd(head.alpha.cwiseProduct(head.norms));
    const bool sink_first = n == 1 || scores[0] >= scores.tail(n - 1).maxCoeff();
    std::vector<PointFacts> facts;
    for (int N : sizes)
        facts.push_back({N, static_cast<int>(n), N == n || (N == 1 && sink_first)});
    return facts;
}

std::vector<VariantEnvelope> judge_envelopes(const std::vector<PointInputs>& points,
                                             std::optional<double> kappa,
                                             const BandSettings& band) {
    if (points.empty()) throw_domain_error("attngeo::compare::judge_envelopes", "no points");
    std::vector<PreparedPoint> prepared;
    for (const PointInputs& p : points) {
        PreparedPoint q;
        q.tested = tested_points(point_facts(p.head, p.sizes, p.ranking));
        q.bands =
            std::make_shared<const std::array<SetBands, kUnitSets>>(point_bands(p, q.tested, band));
        prepared.push_back(std::move(q));
    }
    const auto& variants = theory::bound_variants();
    const int count = static_cast<int>(variants.size());
    const int threads = band.threads > 0 ? band.threads : omp_get_max_threads();
    std::vector<VariantEnvelope> out(count);
    std::vector<std::exception_ptr> errors(count);
    // The variants are independent: one task each.
#pragma omp parallel for num_threads(std::min(count, threads)) schedule(dynamic, 1)
    for (int index = 0; index < count; ++index) {
        try {
            out[index] = judge_variant(points, prepared, variants[index], kappa);
        } catch (...) {
            errors[index] = std::current_exception();
        }
    }
    for (const auto& e : errors)
        if (e) std::rethrow_exception(e);
    return out;
}

}  // namespace attngeo::compare
