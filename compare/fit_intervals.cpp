// Bootstrap intervals of the fits; see fit_intervals.hpp. Every replicate's resample is drawn
// once and shared by all heads, and heads are refitted in parallel into their own slots, so the
// intervals do not depend on the thread count.
#include "compare/fit_intervals.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <stdexcept>

#include <boost/math/distributions/normal.hpp>
#include <boost/math/distributions/students_t.hpp>

#include "common/errors.hpp"
#include "common/order_statistics.hpp"
#include "compare/bootstrap.hpp"
#include "compare/parallel_for.hpp"

namespace attngeo::compare {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kPi = 3.14159265358979323846;
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

// The profile parameters of a refit into `v` (NaN when it fails).
void refit_profile(const std::vector<double>& alpha, const ProfileFit& from, Values& v) {
    try {
        const ProfileFit fit = refit_assumption3_profile(renormalised(alpha), from);
        v[kPSink] = fit.profile.p_sink;
        v[kPBase] = fit.p_base;
        v[kEta] = fit.profile.eta;
        v[kOmega] = fit.profile.omega;
        v[kT1] = fit.profile.T1;
        v[kT2] = fit.profile.T2;
    } catch (const std::domain_error&) {
        for (int p = kPSink; p <= kT2; ++p)
            v[p] = kNaN;
    }
}

// Head h's refitted parameters under resample weights w (λ and C as ratios to their
// full-sample proxies, multiplied out by the caller).
Values replicate_head(const PerDocArrays& a, std::size_t h, const PointFits& point, int lags,
                      const std::vector<double>& w) {
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
    if (point.has_profile)
        refit_profile(weighted_mean(a.alpha, w, H * a.context, h * a.context, a.context),
                      point.profile, v);
    return v;
}

// A replicate's profile values moved onto the point fit's estimator (`full`: the replicate
// estimator on all documents): p_base by ratio (the point times replicate / full); T1, T2, η, ω
// by shift (the point plus replicate − full: the cheap refit's spread around the point fit),
// kept in their domains. p_sink = α_0 is the point fit's own estimator.
Values transferred_profile(Values v, const Values& full, const PointFits& point) {
    if (!point.has_profile) return v;
    const theory::Assumption3Profile& p = point.profile.profile;
    v[kPBase] = point.profile.p_base * v[kPBase] / full[kPBase];
    v[kEta] = std::max(0.0, p.eta + v[kEta] - full[kEta]);
    v[kOmega] = std::clamp(p.omega + v[kOmega] - full[kOmega], 0.0, kPi);
    v[kT1] = std::clamp(p.T1 + v[kT1] - full[kT1], 0.0, double(p.L));
    v[kT2] = std::clamp(p.T2 + v[kT2] - full[kT2], 0.0, double(p.L));
    return v;
}

// A head's replicate with λ and C by ratio too; β, β_offset, c∞ (refitted from the point fit's
// β, the full fit's estimator wherever the optimum lies in the refit's bracket) and ρ0 as they
// are.
Values transferred(Values v, const Values& full, const PointFits& point) {
    v[kLambda] = point.lambda * v[kLambda] / full[kLambda];
    v[kC] = point.C * v[kC] / full[kC];
    return transferred_profile(v, full, point);
}

// The tail probability of the expanded percentile interval (Hesterberg 2015, "What teachers
// should know about the bootstrap", §4.4): the plain percentile interval is as narrow as a
// z-interval with the divide-by-D standard deviation, which covers well under 95 % over a few
// dozen documents; using the percentiles at Φ(−√(D/(D−1))·t_{D−1, 0.975}) instead matches the
// t-interval for a mean and so its coverage.
double expanded_tail(std::int64_t documents) {
    if (documents < 2) return 0.025;
    const double D = static_cast<double>(documents);
    const boost::math::students_t_distribution<double> t(D - 1);
    const double width = std::sqrt(D / (D - 1)) * boost::math::quantile(t, 0.975);
    return boost::math::cdf(boost::math::normal_distribution<double>(), -width);
}

// The expanded percentile interval (tail `tail` each side) of one parameter over replicates;
// none if any is NaN.
Interval percentile_interval(const std::vector<Values>& replicates, int parameter, double tail) {
    std::vector<double> sample;
    for (const Values& v : replicates) {
        if (std::isnan(v[parameter])) return {};
        sample.push_back(v[parameter]);
    }
    if (sample.empty()) return {};
    Interval interval;
    interval.lo = percentile_type7(sample, tail);
    interval.hi = percentile_type7(sample, 1 - tail);
    return interval;
}

ParameterIntervals intervals_of(const std::vector<Values>& replicates, const PointFits& point,
                                std::int64_t documents) {
    ParameterIntervals out(kFitParameters);
    const double tail = expanded_tail(documents);
    for (int p = 0; p < kFitParameters; ++p) {
        out[p] = percentile_interval(replicates, p, tail);
        out[p].unidentified = parameter_unidentified(p, out[p], point);
    }
    return out;
}

// The global fits in every replicate: medians over the counted heads of their replicates
// (`replicates` [heads][B]), and the profile of the mean α over heads (the per-document α
// averaged over heads first, so each replicate costs one weighted mean and one refit).
std::vector<Values> replicate_global(const PerDocArrays& a,
                                     const std::vector<std::vector<Values>>& replicates,
                                     const PointFits& global, const std::vector<char>& counted,
                                     const std::vector<std::vector<double>>& weights, int threads) {
    const std::size_t H = replicates.size(), n = a.context;
    std::vector<float> head_mean_alpha(static_cast<std::size_t>(a.docs) * n, 0.0f);
    for (std::size_t d = 0; d < static_cast<std::size_t>(a.docs); ++d)
        for (std::size_t h = 0; h < H; ++h)
            for (std::size_t i = 0; i < n; ++i)
                head_mean_alpha[d * n + i] += a.alpha[(d * H + h) * n + i] / static_cast<float>(H);
    Values full;
    full.fill(kNaN);
    if (global.has_profile)
        refit_profile(weighted_mean(head_mean_alpha, std::vector<double>(a.docs, 1.0), n, 0, n),
                      global.profile, full);
    std::vector<Values> out(weights.size());
    parallel_for(static_cast<int>(weights.size()), threads, [&](int r) {
        Values& v = out[r];
        v.fill(kNaN);
        for (int p = kBeta; p <= kRho0; ++p) {
            std::vector<double> values;
            for (std::size_t h = 0; h < H; ++h)
                if (counted[h]) values.push_back(replicates[h][r][p]);
            const bool defined =
                !values.empty() &&
                std::none_of(values.begin(), values.end(), [](double x) { return std::isnan(x); });
            if (defined) v[p] = median(values);
        }
        if (global.has_profile) {
            refit_profile(weighted_mean(head_mean_alpha, weights[r], n, 0, n), global.profile, v);
            v = transferred_profile(v, full, global);
        }
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
    if (s.replicates < 0)
        throw_domain_error(fn, "replicates = " + std::to_string(s.replicates) + " < 0");
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
    static const char* const names[kFitParameters] = {"beta", "beta_offset", "c_inf",  "lambda",
                                                      "C",    "rho0",        "p_sink", "p_base",
                                                      "eta",  "omega",       "T1",     "T2"};
    if (parameter < 0 || parameter >= kFitParameters)
        throw_domain_error("attngeo::compare::parameter_name",
                           "parameter = " + std::to_string(parameter));
    return names[parameter];
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
    const int B = s.replicates;
    const std::size_t H = points.size();
    std::vector<std::vector<double>> weights(B);
    for (int r = 0; r < B; ++r)
        weights[r] = resample_counts(s.seed, r, a.docs);
    const std::vector<double> ones(a.docs, 1.0);
    std::vector<std::vector<Values>> replicates(H, std::vector<Values>(B));  // [heads][B]
    parallel_for(static_cast<int>(H), s.threads, [&](int h) {
        const Values full = replicate_head(a, h, points[h], s.lags, ones);
        for (int r = 0; r < B; ++r)
            replicates[h][r] =
                transferred(replicate_head(a, h, points[h], s.lags, weights[r]), full, points[h]);
    });
    out.available = true;
    out.replicates = B;
    for (std::size_t h = 0; h < H; ++h)
        out.heads.push_back(intervals_of(replicates[h], points[h], a.docs));
    const std::vector<Values> global_replicates =
        replicate_global(a, replicates, global, s.counted, weights, s.threads);
    out.global = intervals_of(global_replicates, global, a.docs);
    return out;
}

}  // namespace attngeo::compare
