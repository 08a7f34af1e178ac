// The grid stages of the Assumption-3 profile fit (compare/fits.cpp): the linearised model
// log α_i ≈ c + η f_i scanned over (T1, T2, ω). Each scan has a plain twin and an AVX2 twin that
// evaluates four ω at once in the same operation order, so the two return the same bits
// (tests/compare/test_profile_search.cpp); the bootstrap of verdict III refits thousands of them.
#pragma once
#include <limits>
#include <vector>

namespace attngeo::compare::profile_search {

// The data of a profile fit: y_i = log α_i, m_i = 1 where α_i > 0 (i = 1..L).
struct LogProfile {
    int L = 0;                    // positions after the sink
    double p_sink = 0;            // α_0
    std::vector<double> y, mask;  // [L + 1], index 0 unused
    // Prefix sums over i = 1..k of m, m·i, m·i², m·y, m·y·i, m·y².              [L + 1]
    std::vector<double> m, mi, mii, my, myi, myy;
};

// alpha [L + 1]: α_0 (the sink), then α_1..α_L.
LogProfile make_log_profile(const std::vector<double>& alpha);

// The largest admissible η for (T1, T2): < 1 with an oscillatory phase (1 + η cos ωi > 0), and
// η(L − T2) ≤ 600 so the exponential phase cannot overflow (e^600 ≈ 4e260, with room for
// the sum over any realistic number of tokens).
double eta_max(int L, int T1, int T2);

// Sums of the oscillatory regressor f_i = cos(ωi) over a range, with y.
struct CosineSums {
    double c = 0, cc = 0, yc = 0;
};

// The least-squares fit of the linearised model with free offset and η ∈ [0, η_max].
struct LinearFit {
    double sse = std::numeric_limits<double>::infinity();
    double eta = 0;
};

// The fit at (T1, T2) from the oscillatory phase's sums `osc` and the profile's prefix sums.
LinearFit linear_fit(const LogProfile& p, int T1, int T2, const CosineSums& osc);

// Σ over (T1, T2] of m·cos(ωi), m·cos², m·y·cos, by rotating e^{iωk} (error ~ k·ε).
CosineSums cosine_sums(const LogProfile& p, int T1, int T2, double omega);

// Prefix sums over i = 1..L of m·cos(ωi), m·cos², m·y·cos (rotating e^{iωi}), so the sums over
// any (T1, T2] cost O(1).
struct CosinePrefixSums {
    std::vector<double> c, cc, yc;  // [L + 1], entry 0 = 0

    void fill(const LogProfile& p, double omega);
    CosineSums between(int T1, int T2) const {
        return {c[T2] - c[T1], cc[T2] - cc[T1], yc[T2] - yc[T1]};
    }
};

// A point of the search and its linearised SSE.
struct Candidate {
    int T1 = 0, T2 = 0;
    double omega = 0, eta = 0;
    double sse = std::numeric_limits<double>::infinity();
};

// Step (1) of the fit: the coarse (T1, T2) grid (step ⌈L/32⌉, and L) against every
// ω = πj/omega_steps, j = 0..omega_steps; the first best in (j, T1, T2) order.
Candidate coarse_search(const LogProfile& p, int omega_steps);
Candidate coarse_search_plain(const LogProfile& p, int omega_steps);
Candidate coarse_search_avx2(const LogProfile& p, int omega_steps);  // needs cpu_has_avx2()

// The ω grid of step (2) at fixed (from.T1 < from.T2): `from` rescored at from.omega, then the
// first ω = πj/omega_steps that lowers its SSE, in j order.
Candidate omega_grid(const LogProfile& p, const Candidate& from, int omega_steps);
Candidate omega_grid_plain(const LogProfile& p, const Candidate& from, int omega_steps);
Candidate omega_grid_avx2(const LogProfile& p, const Candidate& from, int omega_steps);

}  // namespace attngeo::compare::profile_search
