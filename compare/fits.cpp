// Decay and profile fits; see fits.hpp. The searches scan a grid before any local method so a
// multimodal objective (ω of the oscillatory phase, above all) never strands the fit in the
// first valley it meets.
#include "compare/fits.hpp"

#include <algorithm>
#include <boost/math/tools/minima.hpp>
#include <cmath>
#include <limits>
#include <string>

#include "common/errors.hpp"
#include "common/format.hpp"
#include "compare/profile_search.hpp"

namespace attngeo::compare {
namespace {

constexpr int kBetaGrid = 240;  // intervals of the log-β scan
constexpr int kBrentBits = std::numeric_limits<double>::digits / 2;
constexpr double kPi = 3.14159265358979323846;

void validate_cosines(const std::vector<double>& cosines, std::size_t minimum,
                      const char* function) {
    if (cosines.size() < minimum)
        throw_domain_error(function, "got " + std::to_string(cosines.size()) +
                                         " lags, expected at least " + std::to_string(minimum));
    for (std::size_t k = 0; k < cosines.size(); ++k) {
        if (!std::isfinite(cosines[k]) || std::abs(cosines[k]) > 1 + 1e-9)
            throw_domain_error(function, "c(" + std::to_string(k + 1) +
                                             ") = " + format_double(cosines[k]) +
                                             ", expected a finite cosine in [-1, 1]");
    }
}

// The best of grid + 1 log-spaced points u_lo … u_hi of f(e^u).
struct GridBest {
    int index = 0;
    double value = std::numeric_limits<double>::infinity();
};
template <class F>
GridBest scan_log_grid(F f, double u_lo, double u_hi, int grid) {
    GridBest best;
    for (int j = 0; j <= grid; ++j) {
        const double value = f(std::exp(u_lo + (u_hi - u_lo) * j / grid));
        if (value < best.value) best.value = value, best.index = j;
    }
    return best;
}

// Brent in log β on the best grid point's two cells; when the least-squares optimum lies at a
// bound (c(1) ≤ 0: no decay to fit, β → ∞; or a constant cosine of 1: β → 0) the objective is
// flat to rounding near it and Brent stops anywhere on the plateau, so the bound itself is
// reported: the answer does not depend on the optimiser's path (and an independent refit can
// reproduce it).
template <class F>
double polish_on_grid(F f, double u_lo, double u_hi, int grid, const GridBest& best) {
    auto at = [&](int j) { return u_lo + (u_hi - u_lo) * j / grid; };
    const double lo = at(std::max(best.index - 1, 0)), hi = at(std::min(best.index + 1, grid));
    std::uintmax_t iterations = 200;
    const auto [u, value] = boost::math::tools::brent_find_minima(
        [&](double v) { return f(std::exp(v)); }, lo, hi, kBrentBits, iterations);
    const double beta = std::clamp(value <= best.value ? std::exp(u) : std::exp(at(best.index)),
                                   kBetaMin, kBetaMax);
    const double value_at_beta = f(beta);
    const double flat = value_at_beta + 1e-12 * std::abs(value_at_beta);
    if (f(kBetaMax) <= flat) return kBetaMax;
    if (f(kBetaMin) <= flat) return kBetaMin;
    return beta;
}

// Minimises f(β) over [kBetaMin, kBetaMax]: a log-spaced scan, then Brent in log β on the two
// grid cells around the best grid point. Returns the better of the two.
template <class F>
double minimise_over_beta(F f) {
    const double u_lo = std::log(kBetaMin), u_hi = std::log(kBetaMax);
    const GridBest best = scan_log_grid(f, u_lo, u_hi, kBetaGrid);
    return polish_on_grid(f, u_lo, u_hi, kBetaGrid, best);
}

// Minimises f(β) near `start` (a nearby fit's β): a 17-point log scan of [start/4, 4·start]
// within the search interval, then Brent on the best point's two cells, with the plateau rule of
// minimise_over_beta. Falls back to the full search when the best scan point is an end of the
// bracket that is not an end of the search interval (the optimum may lie beyond it).
template <class F>
double minimise_near_beta(F f, double start) {
    constexpr int kNearGrid = 16;
    const double u_lo = std::log(std::max(kBetaMin, start / 4)),
                 u_hi = std::log(std::min(kBetaMax, start * 4));
    if (!(start >= kBetaMin && start <= kBetaMax) || !(u_hi > u_lo)) return minimise_over_beta(f);
    const GridBest best = scan_log_grid(f, u_lo, u_hi, kNearGrid);
    if ((best.index == 0 && start / 4 > kBetaMin) ||
        (best.index == kNearGrid && start * 4 < kBetaMax))
        return minimise_over_beta(f);
    return polish_on_grid(f, u_lo, u_hi, kNearGrid, best);
}

double offset_c_inf(const std::vector<double>& cosines, double beta) {
    double numerator = 0, denominator = 0;
    for (std::size_t k = 0; k < cosines.size(); ++k) {
        const double e = std::exp(-beta * static_cast<double>(k + 1));
        numerator += (cosines[k] - e) * (1 - e);
        denominator += (1 - e) * (1 - e);
    }
    return denominator > 0 ? numerator / denominator : 0.0;
}

double offset_sse(const std::vector<double>& cosines, double beta, double c_inf) {
    double sse = 0;
    for (std::size_t k = 0; k < cosines.size(); ++k) {
        const double e = std::exp(-beta * static_cast<double>(k + 1));
        const double r = cosines[k] - c_inf - (1 - c_inf) * e;
        sse += r * r;
    }
    return sse;
}

// ---- Assumption 3 -------------------------------------------------------------------------

using namespace profile_search;

// Step (2): every (T1, T2) within ±radius of `from` at ω fixed.
Candidate refine_thresholds(const LogProfile& p, const Candidate& from, int radius) {
    Candidate best = from;
    const int L = p.L;
    CosinePrefixSums prefix;
    prefix.fill(p, from.omega);
    for (int T1 = std::max(0, from.T1 - radius); T1 <= std::min(L, from.T1 + radius); ++T1) {
        for (int T2 = std::max(T1, from.T2 - radius); T2 <= std::min(L, from.T2 + radius); ++T2) {
            const LinearFit fit = linear_fit(p, T1, T2, prefix.between(T1, T2));
            if (fit.sse < best.sse) best = {T1, T2, from.omega, fit.eta, fit.sse};
        }
    }
    return best;
}

// ω for fixed (T1, T2): the grid, then Brent on the linearised SSE around the best point.
Candidate refine_omega(const LogProfile& p, const Candidate& from, int omega_steps) {
    if (from.T1 == from.T2) {
        Candidate c = from;
        c.omega = 0;
        return c;
    }
    auto sse_at = [&](double omega) {
        return linear_fit(p, from.T1, from.T2, cosine_sums(p, from.T1, from.T2, omega));
    };
    Candidate best = omega_grid(p, from, omega_steps);
    const double width = kPi / omega_steps;
    std::uintmax_t iterations = 100;
    const auto [omega, sse] = boost::math::tools::brent_find_minima(
        [&](double w) { return sse_at(w).sse; }, std::max(0.0, best.omega - width),
        std::min(kPi, best.omega + width), kBrentBits, iterations);
    if (sse < best.sse) best.omega = omega, best.eta = sse_at(omega).eta, best.sse = sse;
    return best;
}

// cos(ωi) for i = from + 1..upto at the last (ω, from) asked on this thread, indexed by i: a
// Brent search over η at fixed ω (most of the polish) evaluates the objective dozens of times
// with the same cosines.
const double* cosines_at(double omega, int from, int upto) {
    thread_local double cached_omega = std::numeric_limits<double>::quiet_NaN();
    thread_local int cached_from = -1;
    thread_local std::vector<double> cosines;  // [upto + 1]; entries up to `from` unused
    if (!(omega == cached_omega) || std::signbit(omega) != std::signbit(cached_omega) ||
        from != cached_from) {
        cached_omega = omega;
        cached_from = from;
        cosines.assign(from + 1, 0.0);
    }
    for (int i = static_cast<int>(cosines.size()); i <= upto; ++i)
        cosines.push_back(std::cos(omega * i));
    return cosines.data();
}

// The exact objective: log residuals of the normalised Assumption-3 profile. The weights are
// theory::assumption3_shape's and the total theory::assumption3_p_base's, summed in the same
// order, with each cos(ωi) computed once (tests/compare/test_profile_search.cpp checks the
// bits).
double exact_sse(const LogProfile& p, int T1, int T2, double eta, double omega) {
    theory::Assumption3Profile profile;
    profile.L = p.L;
    profile.p_sink = p.p_sink;
    profile.T1 = T1;
    profile.T2 = T2;
    profile.eta = eta;
    profile.omega = omega;
    theory::validate_assumption3(profile, "assumption3_p_base");
    const double* cosine = cosines_at(omega, T1, T2);
    double total = 0;
    for (int i = 1; i <= p.L; ++i)
        total += i <= T1 ? 1.0 : i <= T2 ? 1.0 + eta * cosine[i] : std::exp(eta * (i - T2));
    if (!std::isfinite(total))
        throw_domain_error("assumption3_p_base",
                           "the exponential phase overflows (eta*(L-T2) too large)");
    const double log_base = std::log((1.0 - p.p_sink) / total);
    double sse = 0;
    for (int i = 1; i <= p.L; ++i) {
        if (p.mask[i] == 0) continue;
        // log w_i directly for the exponential phase, so η(i − T2) never round-trips exp/log;
        // log 1 = 0 exactly before T1.
        const double log_w = i > T2   ? eta * (i - T2)
                             : i > T1 ? std::log(1.0 + eta * cosine[i])
                                      : 0.0;
        const double r = p.y[i] - log_base - log_w;
        sse += r * r;
    }
    return sse;
}

// Brent over η ∈ [0, η_max] at fixed (T1, T2, ω).
Candidate polish_eta(const LogProfile& p, Candidate c, int bits) {
    const double limit = eta_max(p.L, c.T1, c.T2);
    if (limit <= 0) {
        c.eta = 0;
        c.sse = exact_sse(p, c.T1, c.T2, 0, c.omega);
        return c;
    }
    std::uintmax_t iterations = 100;
    const auto [eta, sse] = boost::math::tools::brent_find_minima(
        [&](double e) { return exact_sse(p, c.T1, c.T2, e, c.omega); }, 0.0, limit, bits,
        iterations);
    const double current = exact_sse(p, c.T1, c.T2, std::min(c.eta, limit), c.omega);
    if (sse <= current) {
        c.eta = eta;
        c.sse = sse;
    } else {
        c.eta = std::min(c.eta, limit);
        c.sse = current;
    }
    return c;
}

// Step (3): alternate Brent over η and over ω (within one ω grid cell either side).
Candidate polish(const LogProfile& p, Candidate c, double omega_width) {
    c = polish_eta(p, c, kBrentBits);
    if (c.T1 == c.T2) return c;
    for (int round = 0; round < 3; ++round) {
        std::uintmax_t iterations = 100;
        const auto [omega, sse] = boost::math::tools::brent_find_minima(
            [&](double w) { return exact_sse(p, c.T1, c.T2, c.eta, w); },
            std::max(0.0, c.omega - omega_width), std::min(kPi, c.omega + omega_width), kBrentBits,
            iterations);
        if (sse < c.sse) c.omega = omega, c.sse = sse;
        c = polish_eta(p, c, kBrentBits);
    }
    return c;
}

void validate_alpha(const std::vector<double>& alpha, const char* function) {
    if (alpha.size() < 3)
        throw_domain_error(function, "got " + std::to_string(alpha.size()) +
                                         " positions, expected at least 3 (sink + 2 tokens)");
    double total = 0;
    int positive = 0;
    for (std::size_t i = 0; i < alpha.size(); ++i) {
        if (!std::isfinite(alpha[i]) || alpha[i] < 0)
            throw_domain_error(function, "alpha[" + std::to_string(i) +
                                             "] = " + format_double(alpha[i]) +
                                             ", expected finite and >= 0");
        total += alpha[i];
        if (i > 0 && alpha[i] > 0) ++positive;
    }
    if (!(std::abs(total - 1) <= 1e-6))
        throw_domain_error(function,
                           "alpha sums to " + format_double(total) + ", expected 1 within 1e-6");
    if (!(alpha[0] > 0 && alpha[0] < 1))
        throw_domain_error(function,
                           "alpha[0] = " + format_double(alpha[0]) + ", expected 0 < p_sink < 1");
    if (positive < 2)
        throw_domain_error(function, "only " + std::to_string(positive) +
                                         " positive weights after the sink, expected >= 2");
}

}  // namespace

double exponential_decay_sse(const std::vector<double>& cosines, double beta) {
    double sse = 0;
    for (std::size_t k = 0; k < cosines.size(); ++k) {
        const double r = cosines[k] - std::exp(-beta * static_cast<double>(k + 1));
        sse += r * r;
    }
    return sse;
}

DecayFit fit_exponential_decay(const std::vector<double>& cosines) {
    validate_cosines(cosines, 1, "fit_exponential_decay");
    DecayFit fit;
    fit.lags = static_cast<int>(cosines.size());
    fit.beta = minimise_over_beta([&](double b) { return exponential_decay_sse(cosines, b); });
    for (std::size_t k = 0; k < cosines.size(); ++k)
        fit.mae += std::abs(cosines[k] - std::exp(-fit.beta * static_cast<double>(k + 1)));
    fit.mae /= static_cast<double>(cosines.size());
    return fit;
}

OffsetDecayFit fit_offset_exponential_decay(const std::vector<double>& cosines) {
    validate_cosines(cosines, 2, "fit_offset_exponential_decay");
    OffsetDecayFit fit;
    fit.lags = static_cast<int>(cosines.size());
    fit.beta = minimise_over_beta(
        [&](double b) { return offset_sse(cosines, b, offset_c_inf(cosines, b)); });
    fit.c_inf = offset_c_inf(cosines, fit.beta);
    for (std::size_t k = 0; k < cosines.size(); ++k) {
        const double e = std::exp(-fit.beta * static_cast<double>(k + 1));
        fit.mae += std::abs(cosines[k] - fit.c_inf - (1 - fit.c_inf) * e);
    }
    fit.mae /= static_cast<double>(cosines.size());
    return fit;
}

DecayFit refit_exponential_decay(const std::vector<double>& cosines, double start_beta) {
    validate_cosines(cosines, 1, "refit_exponential_decay");
    DecayFit fit;
    fit.lags = static_cast<int>(cosines.size());
    fit.beta =
        minimise_near_beta([&](double b) { return exponential_decay_sse(cosines, b); }, start_beta);
    for (std::size_t k = 0; k < cosines.size(); ++k)
        fit.mae += std::abs(cosines[k] - std::exp(-fit.beta * static_cast<double>(k + 1)));
    fit.mae /= static_cast<double>(cosines.size());
    return fit;
}

OffsetDecayFit refit_offset_exponential_decay(const std::vector<double>& cosines,
                                              double start_beta) {
    validate_cosines(cosines, 2, "refit_offset_exponential_decay");
    OffsetDecayFit fit;
    fit.lags = static_cast<int>(cosines.size());
    fit.beta = minimise_near_beta(
        [&](double b) { return offset_sse(cosines, b, offset_c_inf(cosines, b)); }, start_beta);
    fit.c_inf = offset_c_inf(cosines, fit.beta);
    for (std::size_t k = 0; k < cosines.size(); ++k) {
        const double e = std::exp(-fit.beta * static_cast<double>(k + 1));
        fit.mae += std::abs(cosines[k] - fit.c_inf - (1 - fit.c_inf) * e);
    }
    fit.mae /= static_cast<double>(cosines.size());
    return fit;
}

bool beta_at_bound(double beta) {
    constexpr double relative = 1e-6;
    return beta <= kBetaMin * (1 + relative) || beta >= kBetaMax * (1 - relative);
}

ProfileClamps profile_clamps(const ProfileFit& fit) {
    constexpr double relative = 1e-6;
    const theory::Assumption3Profile& p = fit.profile;
    ProfileClamps clamps;
    clamps.eta = fit.eta_limit > 0 && p.eta >= fit.eta_limit * (1 - relative);
    clamps.omega = p.T1 < p.T2 && (p.omega >= kPi * (1 - relative) || p.omega <= 0);
    clamps.p_sink = p.p_sink < kPSinkFloor;
    return clamps;
}

double assumption3_log_sse(const std::vector<double>& alpha,
                           const theory::Assumption3Profile& profile) {
    const LogProfile p = make_log_profile(alpha);
    return exact_sse(p, profile.T1, profile.T2, profile.eta, profile.omega);
}

namespace {

// Steps (2) and (3) of the profile search from candidate `c`, and the fit's quality.
ProfileFit finish_profile_fit(const LogProfile& p, Candidate c) {
    const int L = p.L;
    const int omega_steps = std::min(4096, 2 * L);
    const int radius = std::max(1, (L + 31) / 32);
    // (2) thresholds at step 1 and ω rescanned, twice.
    for (int round = 0; round < 2; ++round) {
        c = refine_thresholds(p, c, radius);
        c = refine_omega(p, c, omega_steps);
    }
    // (3) the exact objective: (η, ω) polished, then T1, T2 moved by ±1 while that helps.
    const double omega_width = kPi / omega_steps;
    c.eta = std::min(c.eta, eta_max(L, c.T1, c.T2));
    c = polish(p, c, omega_width);
    for (int move = 0; move < 20; ++move) {
        Candidate best = c;
        for (int d1 = -1; d1 <= 1; ++d1) {
            for (int d2 = -1; d2 <= 1; ++d2) {
                Candidate next = c;
                next.T1 += d1;
                next.T2 += d2;
                if ((d1 == 0 && d2 == 0) || next.T1 < 0 || next.T2 > L || next.T1 > next.T2)
                    continue;
                if (next.T1 == next.T2) next.omega = 0;
                next = polish_eta(p, next, 30);
                if (next.sse < best.sse) best = next;
            }
        }
        if (!(best.sse < c.sse)) break;
        c = polish(p, best, omega_width);
    }
    if (c.T1 == c.T2) c.omega = 0;

    ProfileFit fit;
    fit.profile.L = L;
    fit.profile.p_sink = p.p_sink;
    fit.profile.T1 = c.T1;
    fit.profile.T2 = c.T2;
    fit.profile.eta = c.eta;
    fit.profile.omega = c.omega;
    fit.p_base = theory::assumption3_p_base(fit.profile);
    fit.eta_limit = eta_max(L, c.T1, c.T2);
    const double sse = exact_sse(p, c.T1, c.T2, c.eta, c.omega);
    const double count = p.m[L], mean = p.my[L] / count;
    double sst = 0;
    for (int i = 1; i <= L; ++i)
        if (p.mask[i] != 0) sst += (p.y[i] - mean) * (p.y[i] - mean);
    fit.positions = static_cast<int>(count);
    fit.rmse_log = std::sqrt(sse / count);
    // A log profile that is constant up to rounding has no variance to explain: R² is 1 when
    // the fit is exact to the same rounding, else 0.
    const double rounding = count * 1e-24 * std::max(1.0, mean * mean);
    fit.r2_log = sst > rounding ? 1 - sse / sst : (sse <= rounding ? 1.0 : 0.0);
    return fit;
}

}  // namespace

ProfileFit fit_assumption3_profile(const std::vector<double>& alpha) {
    validate_alpha(alpha, "fit_assumption3_profile");
    const LogProfile p = make_log_profile(alpha);
    // (1) the coarse grid, then the shared refinement.
    return finish_profile_fit(p, coarse_search(p, std::min(4096, 2 * p.L)));
}

}  // namespace attngeo::compare
