// Bootstrap intervals of the fits; see fit_intervals.hpp. Every replicate's resample is drawn
// once and shared by all heads, and heads are refitted in parallel into their own slots, so the
// intervals do not depend on the thread count.
#include "compare/fit_intervals.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <complex>
#include <map>
#include <stdexcept>

#include <boost/math/distributions/normal.hpp>
#include <boost/math/distributions/students_t.hpp>

#include "common/errors.hpp"
#include "common/order_statistics.hpp"
#include "common/run_columns.hpp"
#include "compare/bootstrap.hpp"
#include "compare/parallel_for.hpp"

namespace attngeo::compare {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kPi = 3.14159265358979323846;
constexpr double kInfinity = std::numeric_limits<double>::infinity();
using Values = std::array<double, kFitParameters>;  // one replicate's refitted parameters

// Σ_d w_d x[d·stride + offset + j] / Σ_d w_d for j < width: a resampled mean over documents.
std::vector<double> weighted_mean(const std::vector<float>& x, const std::vector<double>& w,
                                  std::size_t stride, std::size_t offset, std::size_t width) {
    std::vector<double> mean(width, 0.0);
    double total = 0;
    for (std::size_t d = 0; d < w.size(); ++d) {
        if (w[d] == 0) continue;
        total += w[d];
        const float* row = x.data() + d * stride + offset;
        for (std::size_t j = 0; j < width; ++j)
            mean[j] += w[d] * row[j];
    }
    for (double& m : mean)
        m /= total;
    return mean;
}

std::vector<double> renormalised(std::vector<double> alpha) {
    double total = 0;
    for (double a : alpha)
        total += a;
    for (double& a : alpha)
        a /= total;
    return alpha;
}

// The profile's shape (p_base, η, ω, T1, T2) of the full fit (fit_assumption3_profile, the point
// fit's own estimator) of a resampled mean α into `v` (NaN when it fails); p_sink is α_0 and
// set by the caller.
void refit_profile(const std::vector<double>& alpha, Values& v) {
    try {
        const ProfileFit fit = fit_assumption3_profile(renormalised(alpha));
        v[kPBase] = fit.p_base;
        v[kEta] = fit.profile.eta;
        v[kOmega] = fit.profile.omega;
        v[kT1] = fit.profile.T1;
        v[kT2] = fit.profile.T2;
    } catch (const std::domain_error&) {
        for (int p = kPBase; p <= kT2; ++p)
            v[p] = kNaN;
    }
}

// The replicates grouped by their resample: a replicate is a function of its counts (the
// weighted means sum documents in document order) and of whether the profile's shape is
// refitted, so draws alike give the same bits and are computed once. Few documents have few
// distinct resamples (3 have 10) and almost every refit is saved; many have none alike.
struct DistinctResamples {
    std::vector<int> index;            // [B] each replicate's group
    std::vector<int> first_replicate;  // [groups] the replicate that computes it
    DistinctResamples(const std::vector<std::vector<double>>& counts, int profile_B) {
        std::map<std::pair<std::vector<double>, bool>, int> groups;
        for (std::size_t r = 0; r < counts.size(); ++r) {
            const bool with_profile = static_cast<int>(r) < profile_B;
            const auto [it, added] = groups.try_emplace({counts[r], with_profile},
                                                        static_cast<int>(first_replicate.size()));
            if (added) first_replicate.push_back(static_cast<int>(r));
            index.push_back(it->second);
        }
    }
};

bool is_profile_shape(int parameter) {
    return parameter >= kPBase && parameter <= kT2;
}

// Head h's refitted parameters under resample weights w (λ and C as ratios to their
// full-sample proxies, multiplied out by the caller); the profile's shape only when
// `with_profile` (its full refit is most of a replicate's cost), else NaN.
Values replicate_head(const PerDocArrays& a, std::size_t h, const PointFits& point, int lags,
                      const std::vector<double>& w, bool with_profile) {
    Values v;
    v.fill(kNaN);
    const std::size_t H = static_cast<std::size_t>(a.layers) * a.heads;
    std::vector<double> cos = weighted_mean(a.cos_by_lag, w, H * a.max_lag, h * a.max_lag, lags);
    for (double& c : cos)  // float rounding may step a mean of cosines past ±1
        c = std::clamp(c, -1.0, 1.0);
    try {
        v[kBeta] = refit_exponential_decay(cos, point.decay.beta).beta;
        const OffsetDecayFit offset = refit_offset_exponential_decay(cos, point.offset.beta);
        v[kBetaOffset] = offset.beta;
        v[kCInf] = offset.c_inf;
    } catch (const std::domain_error&) {  // a NaN cosine: a lag without pairs
    }
    v[kRho0] = weighted_mean(a.rho0, w, H, h, 1)[0];
    // Σ λ_d C_d / Σ C_d = mean ‖v_0‖ / mean C_d, and mean C_d: the proxies of λ and C.
    double v0 = 0, c_sum = 0;
    for (std::size_t d = 0; d < w.size(); ++d) {
        const double c = a.C[d * H + h];
        v0 += w[d] * a.lambda[d * H + h] * c;
        c_sum += w[d] * c;
    }
    v[kLambda] = c_sum > 0 ? v0 / c_sum : kNaN;
    double total = 0;
    for (double x : w)
        total += x;
    v[kC] = c_sum / total;
    if (!point.has_profile) return v;
    const std::vector<double> alpha =
        weighted_mean(a.alpha, w, H * a.context, h * a.context, a.context);
    v[kPSink] = renormalised(alpha)[0];
    if (with_profile) refit_profile(alpha, v);
    return v;
}

// λ and C moved onto the point fit's estimator by ratio (the point times replicate / full,
// `full`: the proxies on all documents); every other value is the point fit's own estimator.
Values transferred(Values v, const Values& full, const PointFits& point) {
    v[kLambda] = point.lambda * v[kLambda] / full[kLambda];
    v[kC] = point.C * v[kC] / full[kC];
    return v;
}

// √(D/(D−1))·t_{D−1, 0.975}: the half-width of the expanded intervals in standard deviations
// of the replicates (Hesterberg 2015, "What teachers should know about the bootstrap", §4.4):
// the bootstrap's spread is the divide-by-D standard deviation, and a z-multiple of it covers
// well under 95 % over a few dozen documents; this multiple matches the t-interval for a mean
// and so its coverage.
double expanded_width(std::int64_t documents) {
    const double D = static_cast<double>(documents);
    const boost::math::students_t_distribution<double> t(D - 1);
    return std::sqrt(D / (D - 1)) * boost::math::quantile(t, 0.975);
}

// The tail probability of the expanded percentile interval: the percentiles at
// Φ(−expanded_width) and its complement instead of 2.5 % and 97.5 %.
double expanded_tail(std::int64_t documents) {
    if (documents < 2) return 0.025;
    return boost::math::cdf(boost::math::normal_distribution<double>(), -expanded_width(documents));
}

// The expanded percentile interval (tail `tail` each side) of one parameter over `count`
// replicates; none if any is NaN.
Interval percentile_interval(const std::vector<Values>& replicates, std::size_t count,
                             int parameter, double tail) {
    std::vector<double> sample;
    for (std::size_t r = 0; r < count; ++r) {
        if (std::isnan(replicates[r][parameter])) return {};
        sample.push_back(replicates[r][parameter]);
    }
    if (sample.empty()) return {};
    Interval interval;
    interval.lo = percentile_type7(sample, tail);
    interval.hi = percentile_type7(sample, 1 - tail);
    return interval;
}

// What one head's (or the global fits') intervals are drawn from.
struct Replicates {
    std::vector<Values> values;  // [B]; the profile's shape in the first `profile` only
    int profile = 0;
    std::array<Values, 2> halves;  // the fits on the two halves of the documents
};

// The two halves of the documents as weights: the first ⌈D/2⌉, then the rest.
std::array<std::vector<double>, 2> half_weights(int documents) {
    std::array<std::vector<double>, 2> w{std::vector<double>(documents, 0.0),
                                         std::vector<double>(documents, 0.0)};
    for (int d = 0; d < documents; ++d)
        w[d < (documents + 1) / 2 ? 0 : 1][d] = 1;
    return w;
}

// Whether both halves' fits of `parameter` land inside its interval: a fit that chases the
// noise of its documents does not (split replication, as for κ in docs/design.md §7).
bool replicates_on_halves(const Interval& interval, const Replicates& r, int parameter) {
    for (const Values& half : r.halves)
        if (!(half[parameter] >= interval.lo && half[parameter] <= interval.hi)) return false;
    return true;
}

// η Σ_{T1<i≤T2} cos(ωi): the oscillatory phase's share of the shape's mass (Assumption 3: the
// shape is T2 + this over positions 1..T2).
double oscillation_mass(double eta, int T1, int T2, double omega) {
    double sum = 0;
    for (int i = T1 + 1; i <= T2; ++i)
        sum += std::cos(omega * i);
    return eta * sum;
}

// The smallest and largest oscillation mass over every ω ∈ [0, π] (a grid of step π/(2L), the
// profile fit's) and every T1 ∈ [0, T2], at the fit's η and T2: cosines by rotation, partial
// sums from T2 down, O(L·T2).
std::pair<double, double> oscillation_mass_range(double eta, int T2, int L) {
    double lo = 0, hi = 0;
    const int steps = std::min(4096, 2 * std::max(L, 1));
    for (int j = 0; j <= steps; ++j) {
        const double omega = kPi * j / steps;
        const std::complex<double> step(std::cos(omega), std::sin(omega));
        std::complex<double> z = std::pow(step, T2 + 1);
        const std::complex<double> back = std::conj(step);
        double sum = 0;
        for (int i = T2; i >= 1; --i) {  // sum = Σ_{T1<i'≤T2} cos(ωi') with T1 = i − 1
            z *= back;
            sum += z.real();
            lo = std::min(lo, eta * sum);
            hi = std::max(hi, eta * sum);
        }
    }
    return {lo, hi};
}

// p_base = (1 − p_sink) / Σ_i w_i normalises the whole shape, the oscillation's mass included;
// when ω is not resolved (nor, then, T1) that mass is not known, and the fit's p_base is biased
// by the mass of whatever valley the noise carved (measured: −0.6 standard errors at σ = 0.3
// over 16 documents, p_base covered in 0.83 of planted heads), which the bootstrap, resampling
// the same noise, does not see. So p_base's interval is widened to every p_base the mass allows
// over ω ∈ [0, π] and T1 ∈ [0, T2] (a union over the nuisance parameters' whole range).
Interval widened_for_unresolved_oscillation(Interval interval, const PointFits& point) {
    const theory::Assumption3Profile& p = point.profile.profile;
    const double shape_mass = (1 - p.p_sink) / point.profile.p_base;  // Σ_{i≥1} w_i
    const double fitted = p.T1 < p.T2 ? oscillation_mass(p.eta, p.T1, p.T2, p.omega) : 0.0;
    const auto [lo, hi] = oscillation_mass_range(p.eta, p.T2, p.L);
    // More mass, a smaller p_base: the ratio of p_base with the other mass to the fitted one.
    interval.lo *= std::min(1.0, shape_mass / (shape_mass - fitted + hi));
    interval.hi *= std::max(1.0, shape_mass / (shape_mass - fitted + lo));
    return interval;
}

// The point value of a parameter of the profile's shape.
double shape_value(const PointFits& point, int parameter) {
    const theory::Assumption3Profile& p = point.profile.profile;
    switch (parameter) {
        case kPBase:
            return point.profile.p_base;
        case kEta:
            return p.eta;
        case kOmega:
            return p.omega;
        case kT1:
            return p.T1;
        default:
            return p.T2;
    }
}

// The profile's shape has 50 replicates (kProfileReplicates), so its expanded percentiles (the
// 1.4 % to 1.9 % tails for 16 to 32 documents) are read off the one or two most extreme
// replicates and vary a lot from run to run, too narrow as often as not. The interval is
// therefore the union of the percentile interval and the normal bootstrap interval (Efron &
// Tibshirani 1993, "An Introduction to the Bootstrap", §13.2) around the point value,
// √(D/(D−1))·t_{D−1, 0.975} times a robust standard deviation of the replicates, 1.4826 × their
// median absolute deviation (Hampel 1974), which a few replicates jumping to another valley of
// ω do not inflate; kept in the parameter's domain (≥ 0, ω ≤ π, T1, T2 ≤ L). Measured on planted
// heads at σ = 0.3 (6 × 64 heads): unflagged coverage of η 0.93 → 0.97, ω 0.94 → 0.96.
Interval with_robust_normal(Interval interval, const Replicates& r, int parameter,
                            const PointFits& point, std::int64_t documents) {
    std::vector<double> values(r.profile);
    for (int b = 0; b < r.profile; ++b)
        values[b] = r.values[b][parameter];
    const double centre = median(values);
    for (double& v : values)
        v = std::abs(v - centre);
    const double half = expanded_width(documents) * 1.4826 * median(values);
    const double value = shape_value(point, parameter);
    const double top = parameter == kOmega                    ? kPi
                       : parameter == kT1 || parameter == kT2 ? point.profile.profile.L
                                                              : kInfinity;
    interval.lo = std::max(0.0, std::min(interval.lo, value - half));
    interval.hi = std::min(top, std::max(interval.hi, value + half));
    return interval;
}

// The intervals of one head or of the global fits, with the unidentified rule and the
// profile's dependencies: ω is an argmax over many valleys of the oscillatory phase, and a
// valley carved by the noise of these documents stays put under their resampling, so ω must
// also replicate on the two halves of the documents; an oscillation whose frequency is not
// resolved has no resolved start (T1) and no known mass (p_base is widened for it).
ParameterIntervals intervals_of(const Replicates& r, const PointFits& point,
                                std::int64_t documents) {
    ParameterIntervals out(kFitParameters);
    const double tail = expanded_tail(documents);
    for (int p = 0; p < kFitParameters; ++p) {
        const bool shape = is_profile_shape(p);
        if (!shape || (point.has_profile && r.profile >= 2))
            out[p] = percentile_interval(r.values, shape ? r.profile : r.values.size(), p, tail);
        if (shape && out[p].available())
            out[p] = with_robust_normal(out[p], r, p, point, documents);
        out[p].unidentified = parameter_unidentified(p, out[p], point);
    }
    const theory::Assumption3Profile& fitted = point.profile.profile;
    if (out[kOmega].available() && fitted.T1 < fitted.T2 &&
        !replicates_on_halves(out[kOmega], r, kOmega))
        out[kOmega].unidentified = true;
    if (out[kOmega].unidentified) {
        out[kT1].unidentified = true;
        if (out[kPBase].available()) {
            out[kPBase] = widened_for_unresolved_oscillation(out[kPBase], point);
            out[kPBase].unidentified = parameter_unidentified(kPBase, out[kPBase], point);
        }
    }
    return out;
}

// The global fits in every replicate: medians over the counted heads of their replicates
// (`heads` [heads]), and the profile of the mean α over heads (the per-document α averaged over
// heads first, so each profile replicate costs one weighted mean and one fit).
Replicates replicate_global(const PerDocArrays& a, const std::vector<Replicates>& heads,
                            const PointFits& global, const std::vector<char>& counted,
                            const std::vector<std::vector<double>>& weights,
                            const DistinctResamples& distinct, int profile_B, int threads) {
    const std::size_t H = heads.size(), n = a.context;
    std::vector<float> head_mean_alpha(static_cast<std::size_t>(a.docs) * n, 0.0f);
    for (std::size_t d = 0; d < static_cast<std::size_t>(a.docs); ++d)
        for (std::size_t h = 0; h < H; ++h)
            for (std::size_t i = 0; i < n; ++i)
                head_mean_alpha[d * n + i] += a.alpha[(d * H + h) * n + i] / static_cast<float>(H);
    auto profile_of = [&](const std::vector<double>& w, bool with_profile, Values& v) {
        const std::vector<double> alpha = weighted_mean(head_mean_alpha, w, n, 0, n);
        v[kPSink] = renormalised(alpha)[0];
        if (with_profile) refit_profile(alpha, v);
    };
    // The profile of each distinct resample (its counts and whether the shape is refitted),
    // fitted once: few documents repeat their resamples.
    std::vector<Values> distinct_values(distinct.first_replicate.size());
    if (global.has_profile)
        parallel_for(static_cast<int>(distinct_values.size()), threads, [&](int k) {
            const int r = distinct.first_replicate[k];
            distinct_values[k].fill(kNaN);
            profile_of(weights[r], r < profile_B, distinct_values[k]);
        });
    Replicates out;
    out.values.resize(weights.size());
    out.profile = profile_B;
    const auto halves = half_weights(a.docs);
    for (int k = 0; k < 2; ++k) {
        out.halves[k].fill(kNaN);
        if (global.has_profile) profile_of(halves[k], true, out.halves[k]);
    }
    parallel_for(static_cast<int>(weights.size()), threads, [&](int r) {
        Values& v = out.values[r];
        v.fill(kNaN);
        for (int p = kBeta; p <= kRho0; ++p) {
            std::vector<double> values;
            for (std::size_t h = 0; h < H; ++h)
                if (counted[h]) values.push_back(heads[h].values[r][p]);
            const bool defined =
                !values.empty() &&
                std::none_of(values.begin(), values.end(), [](double x) { return std::isnan(x); });
            if (defined) v[p] = median(values);
        }
        if (global.has_profile)
            for (int p = kPSink; p <= kT2; ++p)
                v[p] = distinct_values[distinct.index[r]][p];
    });
    return out;
}

std::string why_no_intervals(const PerDocArrays& a, int replicates) {
    if (a.docs < kBootstrapMinimumDocuments) return bootstrap_note(a.docs);
    if (replicates == 0) return "--replicates 0: no fit intervals";
    return "";
}

void validate(const PerDocArrays& a, const std::vector<PointFits>& points,
              const FitIntervalSettings& s) {
    const char* fn = "attngeo::compare::fit_intervals";
    const std::size_t H = static_cast<std::size_t>(a.layers) * a.heads;
    if (points.size() != H || s.counted.size() != H)
        throw_domain_error(fn, std::to_string(points.size()) + " point fits and " +
                                   std::to_string(s.counted.size()) + " counted flags for " +
                                   std::to_string(H) + " heads");
    if (s.replicates < 0 || s.profile_replicates < 0)
        throw_domain_error(fn, "replicates = " + std::to_string(s.replicates) +
                                   ", profile_replicates = " +
                                   std::to_string(s.profile_replicates) + ", expected >= 0");
    if (s.lags < 1 || s.lags > a.max_lag)
        throw_domain_error(fn, "lags = " + std::to_string(s.lags) + ", expected 1.." +
                                   std::to_string(a.max_lag) + " (the per-document lags)");
    const std::size_t D = static_cast<std::size_t>(a.docs);
    if (a.cos_by_lag.size() != D * H * a.max_lag || a.alpha.size() != D * H * a.context ||
        a.C.size() != D * H || a.lambda.size() != D * H || a.rho0.size() != D * H)
        throw_domain_error(fn, "array sizes do not match [docs, layers, heads(, K | n)]");
}

}  // namespace

const char* parameter_name(int parameter) {
    static_assert(kFitParameters == 12, "schema::fitted_parameters() lists twelve");
    if (parameter < 0 || parameter >= kFitParameters)
        throw_domain_error("attngeo::compare::parameter_name",
                           "parameter = " + std::to_string(parameter));
    return schema::fitted_parameters()[static_cast<std::size_t>(parameter)].c_str();
}

bool parameter_unidentified(int parameter, const Interval& interval, const PointFits& point) {
    if (!interval.available()) return false;
    const double lo = interval.lo, hi = interval.hi, relative = 1e-6;
    const theory::Assumption3Profile& profile = point.profile.profile;
    switch (parameter) {
        case kBeta:
        case kBetaOffset:
            if (beta_at_bound(lo) || beta_at_bound(hi)) return true;
            break;
        case kEta:
            if (point.profile.eta_limit > 0 && hi >= point.profile.eta_limit * (1 - relative))
                return true;
            break;
        case kOmega:
            if (profile.T1 < profile.T2 && (lo <= 0 || hi >= kPi * (1 - relative))) return true;
            if (hi - lo > kPi / 2) return true;  // more than half of [0, π]
            break;
        case kPSink:
            if (lo < kPSinkFloor) return true;
            break;
        case kCInf:
        case kRho0:
            return hi - lo > 1;
        default:
            break;
    }
    return !(hi <= 10 * lo);
}

FitIntervals fit_intervals(const PerDocArrays& a, const std::vector<PointFits>& points,
                           const PointFits& global, const FitIntervalSettings& s) {
    validate(a, points, s);
    FitIntervals out;
    out.note = why_no_intervals(a, s.replicates);
    if (!out.note.empty()) {
        out.global.assign(kFitParameters, Interval());
        return out;
    }
    const int B = s.replicates, profile_B = std::min(B, s.profile_replicates);
    const std::size_t H = points.size();
    std::vector<std::vector<double>> weights(B);
    for (int r = 0; r < B; ++r)
        weights[r] = resample_counts(s.seed, r, a.docs);
    const std::vector<double> ones(a.docs, 1.0);
    const auto halves = half_weights(a.docs);
    const DistinctResamples distinct(weights, profile_B);
    std::vector<Replicates> heads(H);
    parallel_for(static_cast<int>(H), s.threads, [&](int h) {
        Replicates& r = heads[h];
        const Values full = replicate_head(a, h, points[h], s.lags, ones, false);
        r.values.resize(B);
        r.profile = profile_B;
        std::vector<Values> computed(distinct.first_replicate.size());
        for (std::size_t k = 0; k < computed.size(); ++k) {
            const int b = distinct.first_replicate[k];
            computed[k] =
                transferred(replicate_head(a, h, points[h], s.lags, weights[b], b < profile_B),
                            full, points[h]);
        }
        for (int b = 0; b < B; ++b)
            r.values[b] = computed[distinct.index[b]];
        for (int k = 0; k < 2; ++k)
            r.halves[k] = replicate_head(a, h, points[h], s.lags, halves[k], true);
    });
    out.available = true;
    out.replicates = B;
    out.profile_replicates = profile_B;
    for (std::size_t h = 0; h < H; ++h)
        out.heads.push_back(intervals_of(heads[h], points[h], a.docs));
    out.global = intervals_of(
        replicate_global(a, heads, global, s.counted, weights, distinct, profile_B, s.threads),
        global, a.docs);
    return out;
}

}  // namespace attngeo::compare
