// Envelopes, inside checks and κ fitting; see envelope.hpp.
#include "simulate/envelope.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "common/errors.hpp"

namespace attngeo::simulate {
namespace {

constexpr double kLogKappaMin = -4, kLogKappaMax = 2;

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

KappaAgreement agreement(const std::vector<theory::BoundRow>& rows,
                         const std::vector<SizeEstimates>& estimates) {
    KappaAgreement a;
    int inside = 0;
    for (std::size_t s = 0; s < rows.size(); ++s) {
        const auto& b = rows[s];
        inside +=
            envelope_violation(estimates[s].precision, b.precision_lower, b.precision_upper) == 0;
        inside += envelope_violation(estimates[s].recall, b.recall_lower, b.recall_upper) == 0;
        a.width += (b.precision_upper - b.precision_lower) + (b.recall_upper - b.recall_lower);
    }
    a.fraction = rows.empty() ? 1.0 : inside / (2.0 * rows.size());
    return a;
}

double interval_top(const Estimate& e) {
    return std::isnan(e.ci_hi) ? e.mean : e.ci_hi;
}

// Fraction of P and R lower bounds that the estimates do not violate.
double lower_bound_fraction(const std::vector<theory::BoundRow>& rows,
                            const std::vector<SizeEstimates>& estimates) {
    int holding = 0;
    for (std::size_t s = 0; s < rows.size(); ++s) {
        holding += interval_top(estimates[s].precision) >= rows[s].precision_lower;
        holding += interval_top(estimates[s].recall) >= rows[s].recall_lower;
    }
    return rows.empty() ? 1.0 : holding / (2.0 * rows.size());
}

// κ maximising agreement: a 0.2-decade grid over [1e-4, 1e2], then two refinements (0.02 and
// 0.002 decades) around the best point.
double fit_kappa(const theory::BoundTerms& terms, double d,
                 const std::vector<SizeEstimates>& estimates, int threads) {
    auto score = [&](const std::vector<double>& kappas) {
        const int count = static_cast<int>(kappas.size());
        std::vector<KappaAgreement> results(count);
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
        for (int i = 0; i < count; ++i)
            results[i] = agreement(terms.evaluate(d, kappas[i]), estimates);
        return results;
    };
    return fit_kappa_log_grid(score, {0.2, 0.02, 0.002});
}

// Largest κ with ≥ 95% of lower bounds holding. Lower bounds grow with κ, so the fraction is
// non-increasing and bisection in log κ applies.
double largest_kappa_lower95(const theory::BoundTerms& terms, double d,
                             const std::vector<SizeEstimates>& estimates) {
    return largest_kappa_where([&](double kappa) {
        return lower_bound_fraction(terms.evaluate(d, kappa, /*lower_only=*/true), estimates) >=
               0.95;
    });
}

}  // namespace

double fit_kappa_log_grid(const KappaScorer& score, const std::vector<double>& steps) {
    if (steps.empty() || !(steps[0] > 0))
        throw_domain_error("attngeo::simulate::fit_kappa_log_grid", "need positive grid steps");
    double best_log = kLogKappaMin;
    KappaAgreement best;
    bool have = false;
    auto search = [&](double from, double to, double step) {
        const int count = static_cast<int>(std::lround((to - from) / step)) + 1;
        std::vector<double> kappas(count);
        for (int i = 0; i < count; ++i)
            kappas[i] = std::pow(10.0, from + i * step);
        const std::vector<KappaAgreement> results = score(kappas);
        for (int i = 0; i < count; ++i) {  // in order, so ties go to the smaller κ
            if (!have || results[i].better_than(best)) {
                best = results[i];
                best_log = from + i * step;
                have = true;
            }
        }
    };
    search(kLogKappaMin, kLogKappaMax, steps[0]);
    for (std::size_t stage = 1; stage < steps.size(); ++stage) {
        const double around = best_log, window = steps[stage - 1];
        search(std::max(kLogKappaMin, around - window), std::min(kLogKappaMax, around + window),
               steps[stage]);
    }
    return std::pow(10.0, best_log);
}

double largest_kappa_where(const std::function<bool(double kappa)>& holds) {
    auto holds_log = [&](double log_kappa) { return holds(std::pow(10.0, log_kappa)); };
    if (!holds_log(kLogKappaMin)) return std::numeric_limits<double>::quiet_NaN();
    if (holds_log(kLogKappaMax)) return std::pow(10.0, kLogKappaMax);
    double lo = kLogKappaMin, hi = kLogKappaMax;
    for (int iteration = 0; iteration < 40; ++iteration) {
        const double mid = 0.5 * (lo + hi);
        (holds_log(mid) ? lo : hi) = mid;
    }
    return std::pow(10.0, lo);
}

double envelope_violation(const Estimate& e, double lower, double upper) {
    const double lo = std::isnan(e.ci_lo) ? e.mean : e.ci_lo;
    const double hi = std::isnan(e.ci_hi) ? e.mean : e.ci_hi;
    return std::max({lower - hi, lo - upper, 0.0});
}

std::vector<VariantEnvelope> envelopes(const theory::HeadModel& head, const std::vector<int>& sizes,
                                       theory::Ranking ranking, double d,
                                       const std::vector<SizeEstimates>& estimates,
                                       std::optional<double> kappa, int threads) {
    const int thread_count = threads > 0 ? threads : omp_get_max_threads();
    const theory::BoundVariant variants[3] = {theory::BoundVariant::paper,
                                              theory::BoundVariant::exact_mean,
                                              theory::BoundVariant::scale_invariant};
    std::vector<VariantEnvelope> out(3);
    // The variants are independent: one task each (the κ grid inside runs serially then).
#pragma omp parallel for num_threads(std::min(3, thread_count)) schedule(dynamic, 1)
    for (int index = 0; index < 3; ++index) {
        const theory::BoundVariant variant = variants[index];
        const theory::BoundTerms terms(head, sizes, variant, ranking);
        VariantEnvelope v;
        v.variant = variant;
        if (kappa) {
            v.kappa = *kappa;
        } else if (std::isinf(d)) {
            v.kappa = 1;  // κ·d = ∞ whatever κ is: nothing to fit
        } else {
            v.kappa = fit_kappa(terms, d, estimates, thread_count > 2 ? thread_count / 3 : 1);
            v.kappa_fitted = true;
        }
        v.kappa_lower95 = std::isinf(d) ? std::numeric_limits<double>::quiet_NaN()
                                        : largest_kappa_lower95(terms, d, estimates);
        v.rows = terms.evaluate(d, v.kappa);
        v.checks = check_all(v.rows, estimates);
        int inside_p = 0, inside_r = 0;
        for (std::size_t s = 0; s < v.checks.size(); ++s) {
            const auto& c = v.checks[s];
            inside_p += c.precision_inside();
            inside_r += c.recall_inside();
            for (auto [violation, metric] :
                 {std::pair{c.precision_violation, "P"}, std::pair{c.recall_violation, "R"}}) {
                if (violation > v.largest_violation) {
                    v.largest_violation = violation;
                    v.largest_violation_N = v.rows[s].N;
                    v.largest_violation_metric = metric;
                }
            }
        }
        const double count = std::max<std::size_t>(1, v.checks.size());
        v.fraction_inside_precision = inside_p / count;
        v.fraction_inside_recall = inside_r / count;
        v.fraction_inside = (inside_p + inside_r) / (2 * count);
        out[index] = std::move(v);
    }
    return out;
}

}  // namespace attngeo::simulate
