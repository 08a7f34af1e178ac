// Tests of compare/fit_intervals and compare/bootstrap: the bootstrap intervals cover known
// parameters on synthetic per-document arrays, equal a plain independent bootstrap (own
// SplitMix64, own percentile) for the means and the profile's shape, the unidentified rule at
// spot values and for an unresolved oscillation, the warm-started decay refits, degenerate
// inputs (one document, no fit arrays) and bad input.
#include <gtest/gtest.h>

#include <boost/math/distributions/students_t.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iostream>
#include <random>
#include <vector>

#include "compare/bootstrap.hpp"
#include "compare/fit_intervals.hpp"
#include "theory/assumption_models.hpp"

namespace attngeo::compare {
namespace {

constexpr int kLags = 16, kContext = 48;
constexpr double kPi = 3.14159265358979323846;

// Head h's planted parameters.
double beta_of(int h) {
    return 0.08 + 0.04 * h;
}
theory::Assumption3Profile profile_of(int h) {
    theory::Assumption3Profile p;
    p.L = kContext - 1;
    p.p_sink = 0.2 + 0.05 * h;
    p.T1 = 6 + h;
    p.T2 = 30;
    p.eta = 0.2;
    p.omega = 0.5;
    return p;
}

// Per-document arrays around the planted parameters: cosines with noise σ, α with a
// multiplicative log-normal noise σ_α, C and λ with noise; `heads` heads in one layer.
PerDocArrays synthetic_arrays(int docs, int heads, double sigma, unsigned seed) {
    std::mt19937_64 rng(seed);
    std::normal_distribution<double> noise(0, 1);
    PerDocArrays a;
    a.docs = docs;
    a.layers = 1;
    a.heads = heads;
    a.sizes = {1};
    a.max_lag = kLags;
    a.context = kContext;
    for (int d = 0; d < docs; ++d)
        for (int h = 0; h < heads; ++h) {
            a.P.push_back(1);
            a.R.push_back(1);
            a.rho0.push_back(static_cast<float>(0.1 * h + sigma * noise(rng)));
            a.lambda.push_back(static_cast<float>(0.3 + 0.1 * sigma * noise(rng)));
            a.C.push_back(static_cast<float>(2 + sigma * noise(rng)));
            for (int k = 1; k <= kLags; ++k)
                a.cos_by_lag.push_back(static_cast<float>(
                    std::clamp(std::exp(-beta_of(h) * k) + sigma * noise(rng), -1.0, 1.0)));
            const Eigen::VectorXd alpha = theory::assumption3_weights(profile_of(h));
            std::vector<double> noisy(kContext);
            double total = 0;
            for (int i = 0; i < kContext; ++i)
                total += noisy[i] = alpha[i] * std::exp(i == 0 ? 0 : sigma * noise(rng));
            for (int i = 0; i < kContext; ++i)
                a.alpha.push_back(static_cast<float>(noisy[i] / total));
        }
    return a;
}

// The document mean of head h's values at `offset` of width `width` (a plain loop).
std::vector<double> doc_mean(const std::vector<float>& x, const PerDocArrays& a, int h, int width) {
    std::vector<double> mean(width, 0.0);
    for (int d = 0; d < a.docs; ++d)
        for (int j = 0; j < width; ++j)
            mean[j] += double(x[(static_cast<std::size_t>(d) * a.heads + h) * width + j]) / a.docs;
    return mean;
}

std::vector<double> normalised(std::vector<double> x) {
    double total = 0;
    for (double v : x)
        total += v;
    for (double& v : x)
        v /= total;
    return x;
}

// The point fits compare would make from the document means.
std::vector<PointFits> point_fits_of(const PerDocArrays& a) {
    std::vector<PointFits> points(a.heads);
    for (int h = 0; h < a.heads; ++h) {
        const std::vector<double> cos = doc_mean(a.cos_by_lag, a, h, kLags);
        points[h].decay = fit_exponential_decay(cos);
        points[h].offset = fit_offset_exponential_decay(cos);
        points[h].rho0 = doc_mean(a.rho0, a, h, 1)[0];
        points[h].C = doc_mean(a.C, a, h, 1)[0];
        points[h].lambda = 0.3;
        points[h].has_profile = true;
        points[h].profile = fit_assumption3_profile(normalised(doc_mean(a.alpha, a, h, kContext)));
    }
    return points;
}

FitIntervalSettings settings_for(const PerDocArrays& a, int replicates = 200) {
    FitIntervalSettings s;
    s.lags = kLags;
    s.replicates = replicates;
    s.seed = 7;
    s.threads = 2;
    s.counted.assign(static_cast<std::size_t>(a.layers) * a.heads, 1);
    return s;
}

// A plain SplitMix64 and type-7 percentile, written from their definitions.
std::uint64_t splitmix(std::uint64_t& state) {
    std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
double plain_percentile(std::vector<double> x, double q) {
    std::sort(x.begin(), x.end());
    const double at = q * (x.size() - 1);
    const std::size_t i = static_cast<std::size_t>(at);
    return i + 1 < x.size() ? x[i] + (at - i) * (x[i + 1] - x[i]) : x[i];
}

}  // namespace

TEST(FitIntervals, CoverThePlantedParametersOnSyntheticDocuments) {
    constexpr int kHeadsHere = 6;
    const PerDocArrays a = synthetic_arrays(40, kHeadsHere, 0.03, 11);
    const std::vector<PointFits> points = point_fits_of(a);
    PointFits global;
    global.has_profile = true;
    global.profile = points[0].profile;
    const FitIntervals got = fit_intervals(a, points, global, settings_for(a));
    ASSERT_TRUE(got.available) << got.note;
    ASSERT_EQ(got.heads.size(), static_cast<std::size_t>(kHeadsHere));
    int covered = 0, total = 0;
    for (int h = 0; h < kHeadsHere; ++h) {
        const ParameterIntervals& i = got.heads[h];
        const double truths[] = {beta_of(h), 0.1 * h, 2.0, profile_of(h).p_sink};
        const int params[] = {kBeta, kRho0, kC, kPSink};
        for (int j = 0; j < 4; ++j) {
            ASSERT_TRUE(i[params[j]].available()) << parameter_name(params[j]);
            EXPECT_LE(i[params[j]].lo, i[params[j]].hi);
            covered += truths[j] >= i[params[j]].lo && truths[j] <= i[params[j]].hi;
            ++total;
        }
        // Every interval holds its own point estimate here (a well-identified head).
        EXPECT_GE(points[h].decay.beta, i[kBeta].lo);
        EXPECT_LE(points[h].decay.beta, i[kBeta].hi);
        EXPECT_FALSE(i[kBeta].unidentified);
    }
    std::cout << "planted values inside their 95 % intervals: " << covered << " of " << total
              << "\n";
    EXPECT_GE(covered, total * 8 / 10);
    // The same seed gives the same bits, whatever the thread count.
    FitIntervalSettings one_thread = settings_for(a);
    one_thread.threads = 1;
    const FitIntervals again = fit_intervals(a, points, global, one_thread);
    for (int h = 0; h < kHeadsHere; ++h)
        for (int p = 0; p < kFitParameters; ++p) {
            EXPECT_EQ(again.heads[h][p].lo, got.heads[h][p].lo);
            EXPECT_EQ(again.heads[h][p].hi, got.heads[h][p].hi);
        }
}

TEST(FitIntervals, MeansEqualAPlainIndependentBootstrap) {
    const PerDocArrays a = synthetic_arrays(25, 2, 0.05, 3);
    const std::vector<PointFits> points = point_fits_of(a);
    PointFits global;
    const int B = 50;
    const FitIntervals got = fit_intervals(a, points, global, settings_for(a, B));
    ASSERT_TRUE(got.available);
    double largest = 0;
    for (int h = 0; h < a.heads; ++h) {
        std::vector<double> rho0, c;
        std::uint64_t seed_state = 7;
        const std::uint64_t key = splitmix(seed_state);
        for (int r = 0; r < B; ++r) {
            std::uint64_t state = key + r;
            std::uint64_t stream = splitmix(state);
            double sum_rho = 0, sum_c = 0;
            for (int d = 0; d < a.docs; ++d) {
                std::uint64_t x;
                do {  // masked rejection below 25: mask 31
                    x = splitmix(stream) & 31;
                } while (x >= static_cast<std::uint64_t>(a.docs));
                sum_rho += a.rho0[x * a.heads + h];
                sum_c += a.C[x * a.heads + h];
            }
            rho0.push_back(sum_rho / a.docs);
            c.push_back(points[h].C * (sum_c / a.docs) / points[h].C);
        }
        // Hesterberg's expanded percentile interval: the tails at Φ(−√(D/(D−1))·t_{D−1,0.975}).
        const double D = a.docs;
        const double width =
            std::sqrt(D / (D - 1)) * boost::math::quantile(boost::math::students_t(D - 1), 0.975);
        const double tail = 0.5 * std::erfc(width / std::sqrt(2.0));
        for (double q : {tail, 1 - tail}) {
            const Interval& ri = got.heads[h][kRho0];
            const Interval& ci = got.heads[h][kC];
            largest =
                std::max(largest, std::abs((q < 0.5 ? ri.lo : ri.hi) - plain_percentile(rho0, q)));
            largest =
                std::max(largest, std::abs((q < 0.5 ? ci.lo : ci.hi) - plain_percentile(c, q)));
        }
    }
    std::cout << "rho0 and C intervals against a plain bootstrap: largest difference " << largest
              << "\n";
    EXPECT_LE(largest, 1e-12);
}

TEST(FitIntervals, UnidentifiedRuleAtSpotValues) {
    PointFits p;
    p.profile.profile.T1 = 5;
    p.profile.profile.T2 = 20;
    p.profile.eta_limit = 0.999;
    auto interval = [](double lo, double hi) {
        Interval i;
        i.lo = lo;
        i.hi = hi;
        return i;
    };
    EXPECT_FALSE(parameter_unidentified(kBeta, interval(0.05, 0.2), p));
    EXPECT_TRUE(parameter_unidentified(kBeta, interval(0.05, 0.6), p));      // > factor 10
    EXPECT_TRUE(parameter_unidentified(kBeta, interval(0.5, kBetaMax), p));  // the clamp
    EXPECT_TRUE(parameter_unidentified(kBeta, interval(kBetaMin, 1e-5), p));
    EXPECT_TRUE(parameter_unidentified(kOmega, interval(0, 0.3), p));  // ω at 0 with T1 < T2
    EXPECT_FALSE(parameter_unidentified(kOmega, interval(0.3, 0.5), p));
    EXPECT_TRUE(parameter_unidentified(kOmega, interval(0.3, 2.0), p));  // wider than π/2
    EXPECT_TRUE(parameter_unidentified(kEta, interval(0.5, 0.999), p));
    EXPECT_TRUE(parameter_unidentified(kT1, interval(0, 4), p));  // from 0 to > 0
    EXPECT_FALSE(parameter_unidentified(kT1, interval(0, 0), p));
    EXPECT_FALSE(parameter_unidentified(kRho0, interval(-0.3, 0.3), p));  // signed: width ≤ 1
    EXPECT_TRUE(parameter_unidentified(kCInf, interval(-0.6, 0.6), p));
    EXPECT_TRUE(parameter_unidentified(kPSink, interval(1e-12, 1e-10), p));
    EXPECT_FALSE(parameter_unidentified(kLambda, Interval(), p));  // no interval
}

TEST(FitIntervals, DegenerateInputsGiveANoteAndBadInputThrows) {
    const PerDocArrays one = synthetic_arrays(1, 2, 0.01, 5);
    const std::vector<PointFits> points = point_fits_of(one);
    const FitIntervals single = fit_intervals(one, points, PointFits(), settings_for(one));
    EXPECT_FALSE(single.available);
    EXPECT_NE(single.note.find("documents"), std::string::npos) << single.note;
    EXPECT_EQ(single.global.size(), static_cast<std::size_t>(kFitParameters));

    const PerDocArrays a = synthetic_arrays(5, 2, 0.01, 5);
    EXPECT_FALSE(fit_intervals(a, points, PointFits(), settings_for(a, 0)).available);
    const std::vector<PointFits> too_few(1);
    EXPECT_THROW(fit_intervals(a, too_few, PointFits(), settings_for(a)), std::domain_error);
    FitIntervalSettings bad = settings_for(a);
    bad.lags = kLags + 1;
    EXPECT_THROW(fit_intervals(a, points, PointFits(), bad), std::domain_error);
    bad = settings_for(a);
    bad.replicates = -1;
    EXPECT_THROW(fit_intervals(a, points, PointFits(), bad), std::domain_error);
    bad = settings_for(a);
    bad.profile_replicates = -1;
    EXPECT_THROW(fit_intervals(a, points, PointFits(), bad), std::domain_error);
    EXPECT_THROW(parameter_name(kFitParameters), std::domain_error);
    EXPECT_THROW(percentile_type7({}, 0.5), std::domain_error);
    EXPECT_THROW(percentile_type7({1.0}, 1.5), std::domain_error);
}

TEST(FitIntervals, ResampleCountsAddUpAndPercentileInterpolates) {
    const std::vector<double> counts = resample_counts(3, 17, 9);
    double total = 0;
    for (double c : counts)
        total += c;
    EXPECT_EQ(total, 9);
    EXPECT_EQ(resample_counts(3, 17, 9), counts);
    EXPECT_NE(resample_counts(3, 18, 9), counts);
    EXPECT_DOUBLE_EQ(percentile_type7({4, 1, 3, 2}, 0.5), 2.5);
    EXPECT_DOUBLE_EQ(percentile_type7({4, 1, 3, 2}, 0.0), 1);
    EXPECT_DOUBLE_EQ(percentile_type7({4, 1, 3, 2}, 1.0), 4);
}

namespace {

// One head's per-document arrays around `profile`: α with multiplicative log-normal noise σ on
// positions ≥ 1 (α_0 = p_sink, as simulate --as-extract plants it), the other arrays fixed.
PerDocArrays profile_arrays(const theory::Assumption3Profile& profile, int docs, double sigma,
                            unsigned seed) {
    std::mt19937_64 rng(seed);
    std::normal_distribution<double> noise(0, 1);
    PerDocArrays a;
    a.docs = docs;
    a.layers = a.heads = 1;
    a.sizes = {1};
    a.max_lag = kLags;
    a.context = profile.L + 1;
    const Eigen::VectorXd w = theory::assumption3_weights(profile);
    for (int d = 0; d < docs; ++d) {
        a.P.push_back(1);
        a.R.push_back(1);
        a.rho0.push_back(0.1f);
        a.lambda.push_back(0.3f);
        a.C.push_back(2.0f);
        for (int k = 1; k <= kLags; ++k)
            a.cos_by_lag.push_back(static_cast<float>(std::exp(-0.1 * k)));
        std::vector<double> shape(a.context, 0.0);
        double total = 0;
        for (int i = 1; i < a.context; ++i)
            total += shape[i] = w[i] * std::exp(sigma * noise(rng));
        a.alpha.push_back(static_cast<float>(profile.p_sink));
        for (int i = 1; i < a.context; ++i)
            a.alpha.push_back(static_cast<float>((1 - profile.p_sink) * shape[i] / total));
    }
    return a;
}

// The point fits of profile_arrays' head, as compare makes them from the document means.
PointFits point_fit_of(const PerDocArrays& a) {
    PointFits p;
    const std::vector<double> cos = doc_mean(a.cos_by_lag, a, 0, kLags);
    p.decay = fit_exponential_decay(cos);
    p.offset = fit_offset_exponential_decay(cos);
    p.rho0 = 0.1;
    p.C = 2;
    p.lambda = 0.3;
    p.has_profile = true;
    p.profile = fit_assumption3_profile(normalised(doc_mean(a.alpha, a, 0, a.context)));
    return p;
}

theory::Assumption3Profile shape_profile(double eta, double omega) {
    theory::Assumption3Profile p;
    p.L = 63;
    p.p_sink = 0.3;
    p.T1 = 10;
    p.T2 = 50;
    p.eta = eta;
    p.omega = omega;
    return p;
}

}  // namespace

// The profile's intervals against a plain recomputation: the same 50 resamples drawn by an own
// SplitMix64, the full profile fit of each resampled mean α, the expanded type-7 percentiles
// and the union with point ± √(D/(D−1))·t·1.4826·MAD, on a head whose oscillation is resolved.
// The profile's intervals of `docs` documents against a plain loop that refits every draw.
void expect_profile_intervals_equal_a_plain_recomputation(int docs, unsigned seed) {
    const theory::Assumption3Profile truth = shape_profile(0.2, 0.5);
    const PerDocArrays a = profile_arrays(truth, docs, 0.05, seed);
    const PointFits point = point_fit_of(a);
    FitIntervalSettings s = settings_for(a);
    s.counted.assign(1, 1);
    const FitIntervals got = fit_intervals(a, {point}, PointFits(), s);
    ASSERT_TRUE(got.available);
    EXPECT_EQ(got.profile_replicates, kProfileReplicates);
    const double D = a.docs;
    const double width =
        std::sqrt(D / (D - 1)) * boost::math::quantile(boost::math::students_t(D - 1), 0.975);
    const double tail = 0.5 * std::erfc(width / std::sqrt(2.0));
    std::uint64_t seed_state = s.seed;
    const std::uint64_t key = splitmix(seed_state);
    std::vector<std::vector<double>> samples(kFitParameters);
    std::uint64_t mask = 1;
    while (mask < static_cast<std::uint64_t>(a.docs))
        mask <<= 1;
    mask -= 1;
    for (int r = 0; r < kProfileReplicates; ++r) {
        std::uint64_t state = key + r;
        std::uint64_t stream = splitmix(state);
        std::vector<double> mean(a.context, 0.0);
        for (int d = 0; d < a.docs; ++d) {
            std::uint64_t x;
            do {  // masked rejection below D: mask 2^⌈log2 D⌉ − 1
                x = splitmix(stream) & mask;
            } while (x >= static_cast<std::uint64_t>(a.docs));
            for (int i = 0; i < a.context; ++i)
                mean[i] += a.alpha[x * a.context + i];
        }
        const ProfileFit fit = fit_assumption3_profile(normalised(mean));
        samples[kPBase].push_back(fit.p_base);
        samples[kEta].push_back(fit.profile.eta);
        samples[kOmega].push_back(fit.profile.omega);
        samples[kT1].push_back(fit.profile.T1);
        samples[kT2].push_back(fit.profile.T2);
    }
    const double values[] = {point.profile.p_base, point.profile.profile.eta,
                             point.profile.profile.omega, double(point.profile.profile.T1),
                             double(point.profile.profile.T2)};
    double largest = 0;
    for (int p = kPBase; p <= kT2; ++p) {
        std::vector<double> x = samples[p];
        std::sort(x.begin(), x.end());
        const double median = 0.5 * (x[x.size() / 2 - 1] + x[x.size() / 2]);  // 50: even
        std::vector<double> deviation;
        for (double v : x)
            deviation.push_back(std::abs(v - median));
        std::sort(deviation.begin(), deviation.end());
        const double mad = 0.5 * (deviation[x.size() / 2 - 1] + deviation[x.size() / 2]);
        const double half = width * 1.4826 * mad, value = values[p - kPBase];
        const double lo = std::max(0.0, std::min(plain_percentile(x, tail), value - half));
        const double hi = std::max(plain_percentile(x, 1 - tail), value + half);
        const Interval& i = got.heads[0][p];
        largest = std::max({largest, std::abs(i.lo - lo) / std::max(1e-300, std::abs(lo) + 1e-12),
                            std::abs(i.hi - hi) / (std::abs(hi) + 1e-12)});
        EXPECT_FALSE(i.unidentified) << parameter_name(p);
        std::cout << parameter_name(p) << ": [" << i.lo << ", " << i.hi << "], planted "
                  << (p == kPBase   ? theory::assumption3_p_base(truth)
                      : p == kEta   ? truth.eta
                      : p == kOmega ? truth.omega
                      : p == kT1    ? truth.T1
                                    : truth.T2)
                  << "\n";
    }
    std::cout << "profile intervals of " << docs
              << " documents against a plain recomputation: largest relative difference " << largest
              << "\n";
    // The library sums a resampled document once per draw times its count, this loop once per
    // draw: the means differ in the last bits, which the fits' searches carry to ~1e-11.
    EXPECT_LE(largest, 1e-9);
}

TEST(FitIntervals, ProfileIntervalsEqualAPlainRecomputation) {
    expect_profile_intervals_equal_a_plain_recomputation(20, 17);
}

// Three documents have ten distinct resamples, so the library fits each once and looks the
// other draws up (DistinctResamples); the plain loop refits all fifty.
TEST(FitIntervals, RepeatedResamplesOfFewDocumentsEqualAPlainRecomputation) {
    expect_profile_intervals_equal_a_plain_recomputation(3, 23);
}

// A weak oscillation (η = 0.02) under σ = 0.3 over 16 documents: its frequency is not resolved,
// so ω and T1 are unidentified, and p_base's interval holds every p_base the oscillation's mass
// η Σ_{T1<i≤T2} cos ωi allows over ω ∈ [0, π], T1 ∈ [0, T2] (a plain double loop on a finer ω
// grid), the planted p_base among them.
TEST(FitIntervals, AnUnresolvedOscillationFlagsT1AndWidensPBase) {
    const theory::Assumption3Profile truth = shape_profile(0.02, 0.1);
    const PerDocArrays a = profile_arrays(truth, 16, 0.3, 5);
    const PointFits point = point_fit_of(a);
    FitIntervalSettings s = settings_for(a);
    s.counted.assign(1, 1);
    const FitIntervals got = fit_intervals(a, {point}, PointFits(), s);
    ASSERT_TRUE(got.available);
    const ParameterIntervals& i = got.heads[0];
    EXPECT_TRUE(i[kOmega].unidentified);
    EXPECT_TRUE(i[kT1].unidentified);
    const theory::Assumption3Profile& f = point.profile.profile;
    auto mass = [&](int T1, double omega) {
        double sum = 0;
        for (int k = T1 + 1; k <= f.T2; ++k)
            sum += f.eta * std::cos(omega * k);
        return sum;
    };
    double lo = 0, hi = 0;
    for (int j = 0; j <= 4 * f.L; ++j)
        for (int T1 = 0; T1 <= f.T2; ++T1) {
            const double m = mass(T1, kPi * j / (4 * f.L));
            lo = std::min(lo, m), hi = std::max(hi, m);
        }
    const double total = (1 - f.p_sink) / point.profile.p_base;
    const double fitted = f.T1 < f.T2 ? mass(f.T1, f.omega) : 0.0;
    const double p_lo = point.profile.p_base * total / (total - fitted + hi);
    const double p_hi = point.profile.p_base * total / (total - fitted + lo);
    std::cout << "p_base " << point.profile.p_base << " in [" << i[kPBase].lo << ", "
              << i[kPBase].hi << "]; the oscillation's mass allows [" << p_lo << ", " << p_hi
              << "]; planted " << theory::assumption3_p_base(truth) << "\n";
    // The library scans ω at step π/(2L), this loop at π/(4L): within a thousandth.
    EXPECT_LE(i[kPBase].lo, p_lo * (1 + 1e-3));
    EXPECT_GE(i[kPBase].hi, p_hi * (1 - 1e-3));
    EXPECT_LE(i[kPBase].lo, theory::assumption3_p_base(truth));
    EXPECT_GE(i[kPBase].hi, theory::assumption3_p_base(truth));
}

// The warm-started decay fits equal the full search (Brent's tolerance), from any start,
// including one so far away that the bracket misses the optimum (the full search then runs).
TEST(DecayRefit, EqualsTheFullFitFromAnyStart) {
    double largest = 0;
    for (double beta : {1e-3, 0.05, 0.4, 3.0}) {
        std::vector<double> c(32);
        for (int k = 1; k <= 32; ++k)
            c[k - 1] = 0.1 + 0.89 * std::exp(-beta * k) + 0.01 * std::sin(1.7 * k);
        const DecayFit full = fit_exponential_decay(c);
        const OffsetDecayFit offset = fit_offset_exponential_decay(c);
        for (double start : {full.beta / 3, full.beta * 3, full.beta * 300, 1e-6, 50.0}) {
            const DecayFit refit = refit_exponential_decay(c, start);
            const OffsetDecayFit refit_offset = refit_offset_exponential_decay(c, start);
            largest = std::max({largest, std::abs(refit.beta - full.beta) / full.beta,
                                std::abs(refit_offset.beta - offset.beta) / offset.beta,
                                std::abs(refit_offset.c_inf - offset.c_inf)});
        }
    }
    // A flat curve at 0: the bound, whatever the start.
    const std::vector<double> zeros(8, 0.0);
    EXPECT_EQ(refit_exponential_decay(zeros, 0.1).beta, kBetaMax);
    std::cout << "warm-started decay fits against the full search: largest relative difference "
              << largest << "\n";
    EXPECT_LE(largest, 1e-6);
    EXPECT_THROW(refit_exponential_decay({}, 0.1), std::domain_error);
    EXPECT_THROW(refit_offset_exponential_decay({0.5}, 0.1), std::domain_error);
    EXPECT_THROW(refit_exponential_decay({1.5}, 0.1), std::domain_error);
}

}  // namespace attngeo::compare
