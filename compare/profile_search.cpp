// The grid stages of the profile fit; see profile_search.hpp. The AVX2 twins hold four ω in the
// lanes of one vector and repeat the plain twins' operations in the same order (the build never
// contracts a·b + c), so each lane's value is the plain value to the bit.
#include "compare/profile_search.hpp"

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstring>

#include "common/cpu_features.hpp"

namespace attngeo::compare::profile_search {
namespace {

constexpr double kPi = 3.14159265358979323846;

// The profile's totals every linear fit uses.
struct Totals {
    double n = 0, sy = 0, syy_centred = 0;
};

Totals totals(const LogProfile& p) {
    Totals t;
    t.n = p.m[p.L];
    t.sy = p.my[p.L];
    t.syy_centred = p.myy[p.L] - t.sy * t.sy / t.n;
    return t;
}

// The ω-free parts of a linear fit at (T1, T2): the exponential phase's sums of f_i = i − T2
// (and f², y·f), and η's upper limit.
struct PairTerms {
    int T1 = 0, T2 = 0;
    double sf_rest = 0, sff_rest = 0, syf_rest = 0, limit = 0;
};

PairTerms pair_terms(const LogProfile& p, int T1, int T2) {
    const int L = p.L;
    const double count = p.m[L] - p.m[T2], si = p.mi[L] - p.mi[T2], sii = p.mii[L] - p.mii[T2];
    const double sy_e = p.my[L] - p.my[T2], syi = p.myi[L] - p.myi[T2];
    const double t = T2;
    PairTerms q;
    q.T1 = T1;
    q.T2 = T2;
    q.sf_rest = si - t * count;
    q.sff_rest = sii - 2 * t * si + t * t * count;
    q.syf_rest = syi - t * sy_e;
    q.limit = eta_max(L, T1, T2);
    return q;
}

LinearFit fit_from(const Totals& g, const PairTerms& q, const CosineSums& osc) {
    const double sf = osc.c + q.sf_rest;
    const double sff = osc.cc + q.sff_rest;
    const double syf = osc.yc + q.syf_rest;
    const double var_f = sff - sf * sf / g.n, cov = syf - g.sy * sf / g.n;
    LinearFit fit;
    fit.eta = var_f > 1e-12 * (sff + 1) ? std::clamp(cov / var_f, 0.0, q.limit) : 0.0;
    fit.sse = std::max(g.syy_centred - 2 * fit.eta * cov + fit.eta * fit.eta * var_f, 0.0);
    return fit;
}

// The coarse grid of T: 0, ⌈L/32⌉, 2⌈L/32⌉, … below L, then L.
std::vector<int> coarse_grid(int L) {
    const int step = std::max(1, (L + 31) / 32);
    std::vector<int> grid;
    for (int t = 0; t < L; t += step)
        grid.push_back(t);
    grid.push_back(L);
    return grid;
}

// Every pair T1 ≤ T2 of the grid, in (T1, T2) order, with the grid indices of both.
struct GridPair {
    int low = 0, high = 0;
    PairTerms terms;
};

std::vector<GridPair> grid_pairs(const LogProfile& p, const std::vector<int>& grid) {
    std::vector<GridPair> pairs;
    for (std::size_t a = 0; a < grid.size(); ++a)
        for (std::size_t b = a; b < grid.size(); ++b)
            pairs.push_back(
                {static_cast<int>(a), static_cast<int>(b), pair_terms(p, grid[a], grid[b])});
    return pairs;
}

double omega_at(int j, int omega_steps) {
    return kPi * j / omega_steps;
}

}  // namespace

LogProfile make_log_profile(const std::vector<double>& alpha) {
    LogProfile p;
    p.L = static_cast<int>(alpha.size()) - 1;
    p.p_sink = alpha[0];
    p.y.assign(p.L + 1, 0);
    p.mask.assign(p.L + 1, 0);
    for (auto* v : {&p.m, &p.mi, &p.mii, &p.my, &p.myi, &p.myy})
        v->assign(p.L + 1, 0);
    for (int i = 1; i <= p.L; ++i) {
        const double m = alpha[i] > 0 ? 1.0 : 0.0;
        const double y = alpha[i] > 0 ? std::log(alpha[i]) : 0.0;
        p.y[i] = y;
        p.mask[i] = m;
        p.m[i] = p.m[i - 1] + m;
        p.mi[i] = p.mi[i - 1] + m * i;
        p.mii[i] = p.mii[i - 1] + m * i * static_cast<double>(i);
        p.my[i] = p.my[i - 1] + m * y;
        p.myi[i] = p.myi[i - 1] + m * y * i;
        p.myy[i] = p.myy[i - 1] + m * y * y;
    }
    return p;
}

double eta_max(int L, int T1, int T2) {
    double limit = T1 < T2 ? 0.999 : 20.0;
    if (L > T2) limit = std::min(limit, 600.0 / (L - T2));
    return T2 == L && T1 == T2 ? 0.0 : limit;
}

LinearFit linear_fit(const LogProfile& p, int T1, int T2, const CosineSums& osc) {
    return fit_from(totals(p), pair_terms(p, T1, T2), osc);
}

CosineSums cosine_sums(const LogProfile& p, int T1, int T2, double omega) {
    CosineSums s;
    const std::complex<double> step(std::cos(omega), std::sin(omega));
    std::complex<double> z = std::polar(1.0, omega * (T1 + 1));
    for (int i = T1 + 1; i <= T2; ++i, z *= step) {
        const double c = z.real() * p.mask[i];
        s.c += c;
        s.cc += c * c;
        s.yc += c * p.y[i];
    }
    return s;
}

void CosinePrefixSums::fill(const LogProfile& p, double omega) {
    c.assign(p.L + 1, 0.0);
    cc.assign(p.L + 1, 0.0);
    yc.assign(p.L + 1, 0.0);
    const std::complex<double> rotation(std::cos(omega), std::sin(omega));
    std::complex<double> z = rotation;
    for (int i = 1; i <= p.L; ++i, z *= rotation) {
        const double term = z.real() * p.mask[i];
        c[i] = c[i - 1] + term;
        cc[i] = cc[i - 1] + term * term;
        yc[i] = yc[i - 1] + term * p.y[i];
    }
}

// ---- Plain twins ---------------------------------------------------------------------------

Candidate coarse_search_plain(const LogProfile& p, int omega_steps) {
    const std::vector<int> grid = coarse_grid(p.L);
    const std::vector<GridPair> pairs = grid_pairs(p, grid);
    const Totals g = totals(p);
    CosinePrefixSums prefix;
    Candidate best;
    for (int j = 0; j <= omega_steps; ++j) {
        const double omega = omega_at(j, omega_steps);
        prefix.fill(p, omega);
        for (const GridPair& q : pairs) {
            // ω plays no part without an oscillatory phase.
            if (q.terms.T1 == q.terms.T2 && j > 0) continue;
            const LinearFit fit = fit_from(g, q.terms, prefix.between(q.terms.T1, q.terms.T2));
            if (fit.sse < best.sse) best = {q.terms.T1, q.terms.T2, omega, fit.eta, fit.sse};
        }
    }
    return best;
}

Candidate omega_grid_plain(const LogProfile& p, const Candidate& from, int omega_steps) {
    const Totals g = totals(p);
    const PairTerms q = pair_terms(p, from.T1, from.T2);
    Candidate best = from;
    best.sse = fit_from(g, q, cosine_sums(p, from.T1, from.T2, from.omega)).sse;
    for (int j = 0; j <= omega_steps; ++j) {
        const double omega = omega_at(j, omega_steps);
        const LinearFit fit = fit_from(g, q, cosine_sums(p, from.T1, from.T2, omega));
        if (fit.sse < best.sse) best.omega = omega, best.eta = fit.eta, best.sse = fit.sse;
    }
    return best;
}

// ---- AVX2 twins ----------------------------------------------------------------------------

#if ATTNGEO_X86
namespace {

constexpr int kLanes = 4;
using Lanes = double __attribute__((vector_size(32)));

// Lanes kept in std::vector<double> (whose storage is only 16-byte aligned) go through these.
ATTNGEO_TARGET_AVX2 inline Lanes load(const double* from) {
    Lanes v;
    std::memcpy(&v, from, sizeof v);
    return v;
}
ATTNGEO_TARGET_AVX2 inline void store(double* to, Lanes v) {
    std::memcpy(to, &v, sizeof v);
}

struct LaneFit {
    Lanes sse, eta;
};

// fit_from in four lanes, operation for operation.
ATTNGEO_TARGET_AVX2 inline LaneFit fit_lanes(const Totals& g, const PairTerms& q, Lanes osc_c,
                                             Lanes osc_cc, Lanes osc_yc) {
    const Lanes zero = {0, 0, 0, 0}, limit = zero + q.limit;
    const Lanes sf = osc_c + q.sf_rest;
    const Lanes sff = osc_cc + q.sff_rest;
    const Lanes syf = osc_yc + q.syf_rest;
    const Lanes var_f = sff - sf * sf / g.n, cov = syf - g.sy * sf / g.n;
    Lanes ratio = cov / var_f;
    ratio = ratio < zero ? zero : ratio;  // std::clamp(ratio, 0, limit)
    ratio = limit < ratio ? limit : ratio;
    LaneFit fit;
    fit.eta = var_f > 1e-12 * (sff + 1.0) ? ratio : zero;
    const Lanes sse = g.syy_centred - 2.0 * fit.eta * cov + fit.eta * fit.eta * var_f;
    fit.sse = sse < zero ? zero : sse;  // std::max(sse, 0)
    return fit;
}

// The four lanes' ω (the last valid one repeated past `count`), with cos and sin of each.
struct LaneOmegas {
    double omega[kLanes];
    Lanes cos_omega, sin_omega;
    int count = 0;
};

LaneOmegas lane_omegas(int first, int omega_steps) {
    LaneOmegas w;
    w.count = std::min(kLanes, omega_steps + 1 - first);
    for (int l = 0; l < kLanes; ++l) {
        w.omega[l] = omega_at(first + std::min(l, w.count - 1), omega_steps);
        w.cos_omega[l] = std::cos(w.omega[l]);
        w.sin_omega[l] = std::sin(w.omega[l]);
    }
    return w;
}

// CosinePrefixSums::fill at the grid points only, four ω at once: e^{iωi} rotated
// as std::complex multiplies (re = ac − bd, im = ad + bc).
ATTNGEO_TARGET_AVX2 void grid_prefix_lanes(const LogProfile& p, const std::vector<int>& grid,
                                           const LaneOmegas& w, double* c, double* cc, double* yc) {
    const Lanes zero = {0, 0, 0, 0};
    Lanes re = w.cos_omega, im = w.sin_omega, sum_c = zero, sum_cc = zero, sum_yc = zero;
    store(c, zero);
    store(cc, zero);
    store(yc, zero);
    std::size_t next = 1;
    for (int i = 1; i <= p.L; ++i) {
        const Lanes term = re * p.mask[i];
        sum_c += term;
        sum_cc += term * term;
        sum_yc += term * p.y[i];
        if (i == grid[next]) {
            store(c + kLanes * next, sum_c);
            store(cc + kLanes * next, sum_cc);
            store(yc + kLanes * next++, sum_yc);
        }
        const Lanes next_re = re * w.cos_omega - im * w.sin_omega;
        const Lanes next_im = re * w.sin_omega + im * w.cos_omega;
        re = next_re;
        im = next_im;
    }
}

// cosine_sums over (T1, T2] in four lanes.
ATTNGEO_TARGET_AVX2 void cosine_sums_lanes(const LogProfile& p, int T1, int T2, const LaneOmegas& w,
                                           Lanes& c, Lanes& cc, Lanes& yc) {
    Lanes re, im;
    for (int l = 0; l < kLanes; ++l) {
        const double angle = w.omega[l] * (T1 + 1);
        re[l] = std::cos(angle);
        im[l] = std::sin(angle);
    }
    c = cc = yc = Lanes{0, 0, 0, 0};
    for (int i = T1 + 1; i <= T2; ++i) {
        const Lanes term = re * p.mask[i];
        c += term;
        cc += term * term;
        yc += term * p.y[i];
        const Lanes next_re = re * w.cos_omega - im * w.sin_omega;
        const Lanes next_im = re * w.sin_omega + im * w.cos_omega;
        re = next_re;
        im = next_im;
    }
}

}  // namespace

ATTNGEO_TARGET_AVX2 Candidate coarse_search_avx2(const LogProfile& p, int omega_steps) {
    const std::vector<int> grid = coarse_grid(p.L);
    const std::vector<GridPair> pairs = grid_pairs(p, grid);
    const Totals g = totals(p);
    std::vector<double> c(kLanes * grid.size()), cc(c.size()), yc(c.size());
    std::vector<double> sse(kLanes * pairs.size()), eta(sse.size());
    Candidate best;
    for (int first = 0; first <= omega_steps; first += kLanes) {
        const LaneOmegas w = lane_omegas(first, omega_steps);
        grid_prefix_lanes(p, grid, w, c.data(), cc.data(), yc.data());
        for (std::size_t k = 0; k < pairs.size(); ++k) {
            const GridPair& q = pairs[k];
            const std::size_t high = kLanes * q.high, low = kLanes * q.low;
            const LaneFit fit =
                fit_lanes(g, q.terms, load(&c[high]) - load(&c[low]),
                          load(&cc[high]) - load(&cc[low]), load(&yc[high]) - load(&yc[low]));
            store(&sse[kLanes * k], fit.sse);
            store(&eta[kLanes * k], fit.eta);
        }
        // The plain twin's order: ω outer, pairs inner, the first strict improvement kept.
        for (int l = 0; l < w.count; ++l)
            for (std::size_t k = 0; k < pairs.size(); ++k) {
                const PairTerms& q = pairs[k].terms;
                if (q.T1 == q.T2 && first + l > 0) continue;
                const std::size_t at = kLanes * k + l;
                if (sse[at] < best.sse) best = {q.T1, q.T2, w.omega[l], eta[at], sse[at]};
            }
    }
    return best;
}

ATTNGEO_TARGET_AVX2 Candidate omega_grid_avx2(const LogProfile& p, const Candidate& from,
                                              int omega_steps) {
    const Totals g = totals(p);
    const PairTerms q = pair_terms(p, from.T1, from.T2);
    Candidate best = from;
    best.sse = fit_from(g, q, cosine_sums(p, from.T1, from.T2, from.omega)).sse;
    for (int first = 0; first <= omega_steps; first += kLanes) {
        const LaneOmegas w = lane_omegas(first, omega_steps);
        Lanes c, cc, yc;
        cosine_sums_lanes(p, from.T1, from.T2, w, c, cc, yc);
        const LaneFit fit = fit_lanes(g, q, c, cc, yc);
        for (int l = 0; l < w.count; ++l)
            if (fit.sse[l] < best.sse)
                best.omega = w.omega[l], best.eta = fit.eta[l], best.sse = fit.sse[l];
    }
    return best;
}
#else
Candidate coarse_search_avx2(const LogProfile& p, int omega_steps) {
    return coarse_search_plain(p, omega_steps);
}
Candidate omega_grid_avx2(const LogProfile& p, const Candidate& from, int omega_steps) {
    return omega_grid_plain(p, from, omega_steps);
}
#endif

Candidate coarse_search(const LogProfile& p, int omega_steps) {
    return use_avx2() ? coarse_search_avx2(p, omega_steps) : coarse_search_plain(p, omega_steps);
}

Candidate omega_grid(const LogProfile& p, const Candidate& from, int omega_steps) {
    return use_avx2() ? omega_grid_avx2(p, from, omega_steps)
                      : omega_grid_plain(p, from, omega_steps);
}

}  // namespace attngeo::compare::profile_search
