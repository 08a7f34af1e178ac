// Envelopes, inside checks and the κ scan of each variant; see envelope.hpp.
#include "compare/estimate_envelopes.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "common/errors.hpp"

namespace attngeo::compare {
namespace {

std::vector<EnvelopeCheck> check_all(const std::vector<theory::BoundRow>& rows,
                                     const std::vector<SizeEstimates>& estimates) {
    std::vector<EnvelopeCheck> checks(rows.size());
    for (std::size_t s = 0; s < rows.size(); ++s) {
        const auto& b = rows[s];
        const auto& e = estimates[s];
        checks[s].precision_violation =
            envelope_violation(e.precision, b.precision_lower, b.precision_upper);
        checks[s].recall_violation = envelope_violation(e.recall, b.recall_lower, b.recall_upper);
        checks[s].fmax_violation = envelope_violation(e.fmax, b.fmax_lower, b.fmax_upper);
        checks[s].fmin_violation = envelope_violation(e.fmin, b.fmin_lower, b.fmin_upper);
    }
    return checks;
}

ScanPoint scan_point(const Estimate& e) {
    return {e.mean, std::isnan(e.ci_lo) ? e.mean : e.ci_lo, std::isnan(e.ci_hi) ? e.mean : e.ci_hi};
}

// Inside fractions, mean width and the largest violation at the rows' κ.
void summarise_agreement(VariantEnvelope& v) {
    int inside_p = 0, inside_r = 0, counted = 0;
    double width = 0;
    for (std::size_t s = 0; s < v.checks.size(); ++s) {
        const auto& c = v.checks[s];
        const auto& b = v.rows[s];
        if (b.trivial) continue;  // a convention point: every bound is 1 by definition
        counted += 1;
        inside_p += c.precision_inside();
        inside_r += c.recall_inside();
        width += (b.precision_upper - b.precision_lower) + (b.recall_upper - b.recall_lower);
        for (auto [violation, metric] :
             {std::pair{c.precision_violation, "P"}, std::pair{c.recall_violation, "R"}}) {
            if (violation > v.largest_violation) {
                v.largest_violation = violation;
                v.largest_violation_N = v.rows[s].N;
                v.largest_violation_metric = metric;
            }
        }
    }
    const double count = std::max(1, counted);
    v.fraction_inside_precision = inside_p / count;
    v.fraction_inside_recall = inside_r / count;
    v.fraction_inside = (inside_p + inside_r) / (2 * count);
    v.mean_width = width / (2 * count);
}

VariantEnvelope variant_envelope(const theory::HeadModel& head, const std::vector<int>& sizes,
                                 theory::BoundVariant variant, theory::Ranking ranking, double d,
                                 const std::vector<SizeEstimates>& estimates,
                                 const ScanInputs& inputs, std::optional<double> kappa) {
    const theory::BoundTerms terms(head, sizes, variant, ranking);
    VariantEnvelope v;
    v.variant = variant;
    // At d = ∞, κ·d = ∞ for every κ: the scan still runs (and finds every side κ-free), but
    // the rows keep κ = 1 unless one was given.
    const std::optional<double> fixed =
        std::isinf(d) ? std::optional<double>(kappa.value_or(1)) : kappa;
    v.scan = scan_kappa(
        inputs,
        [&](double k) {
            ScanBounds b;
            append_scan_bounds(b, terms.evaluate(d, k));
            return b;
        },
        fixed);
    v.kappa = fixed ? *fixed : v.scan.interval_score.kappa;
    v.kappa_fitted = !fixed;
    v.rows = terms.evaluate(d, v.kappa);
    judge_points(v.scan, inputs, margins_of(v.rows));
    v.checks = check_all(v.rows, estimates);
    summarise_agreement(v);
    return v;
}

}  // namespace

double envelope_violation(const Estimate& e, double lower, double upper) {
    const double lo = std::isnan(e.ci_lo) ? e.mean : e.ci_lo;
    const double hi = std::isnan(e.ci_hi) ? e.mean : e.ci_hi;
    return std::max({lower - hi, lo - upper, 0.0});
}

void append_scan_bounds(ScanBounds& out, const std::vector<theory::BoundRow>& rows) {
    for (const theory::BoundRow& r : rows) {
        out.P.lower.push_back(r.precision_lower);
        out.P.upper.push_back(r.precision_upper);
        out.R.lower.push_back(r.recall_lower);
        out.R.upper.push_back(r.recall_upper);
    }
}

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

std::vector<theory::MarginFlags> margins_of(const std::vector<theory::BoundRow>& rows) {
    std::vector<theory::MarginFlags> out;
    out.reserve(rows.size());
    for (const theory::BoundRow& row : rows)
        out.push_back(theory::margin_flags(row));
    return out;
}

ScanInputs scan_inputs(const std::vector<SizeEstimates>& estimates, const std::vector<int>& regimes,
                       const std::vector<PointFacts>& facts) {
    if (!regimes.empty() && regimes.size() != estimates.size())
        throw_domain_error("attngeo::compare::scan_inputs", "one regime per N expected");
    if (facts.size() != estimates.size())
        throw_domain_error("attngeo::compare::scan_inputs", "one point fact per N expected");
    ScanInputs in;
    in.facts = facts;
    for (std::size_t s = 0; s < estimates.size(); ++s) {
        in.P.push_back(scan_point(estimates[s].precision));
        in.R.push_back(scan_point(estimates[s].recall));
        in.regime.push_back(regimes.empty() ? 0 : regimes[s]);
        in.sizes.push_back(estimates[s].N);
    }
    return in;
}

std::vector<VariantEnvelope> envelopes(const theory::HeadModel& head, const std::vector<int>& sizes,
                                       theory::Ranking ranking, double d,
                                       const std::vector<SizeEstimates>& estimates,
                                       const std::vector<int>& regimes, std::optional<double> kappa,
                                       int threads) {
    const int thread_count = threads > 0 ? threads : omp_get_max_threads();
    const auto& variants = theory::bound_variants();
    const int count = static_cast<int>(variants.size());
    const ScanInputs inputs = scan_inputs(estimates, regimes, point_facts(head, sizes, ranking));
    std::vector<VariantEnvelope> out(count);
    // The variants are independent: one task each.
#pragma omp parallel for num_threads(std::min(count, thread_count)) schedule(dynamic, 1)
    for (int index = 0; index < count; ++index)
        out[index] =
            variant_envelope(head, sizes, variants[index], ranking, d, estimates, inputs, kappa);
    return out;
}

}  // namespace attngeo::compare
