// Theorems 1–2 and Corollary 1: the literal reference and the incremental all-N path.
// See bounds.hpp; SPEC §3 lists every decision taken where the paper is ambiguous.
#include "theory/bounds.hpp"

#include <immintrin.h>

#include <algorithm>
#include <boost/math/distributions/normal.hpp>
#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>
#include <stdexcept>

#include "common/cpu_features.hpp"
#include "common/errors.hpp"
#include "common/format.hpp"

#include "theory/models.hpp"

namespace attngeo::theory {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kUnitRoundoff = 0x1p-53;
// argmax of φ(ξ)/(ξ + 1/ξ) on ξ > 0: ξ⁴ + 2ξ² − 1 = 0, ξ* = √(√2 − 1). The function is
// increasing before ξ* and decreasing after, which lets the pair maximum use a binary search.
const double kPeakXi = std::sqrt(std::sqrt(2.0) - 1.0);
constexpr double kInvSqrt2Pi = 0.398942280401432677939946059934;

void validate_settings(const BoundSettings& s, const char* function) {
    if (!(s.d >= 1))
        throw_domain_error(function, "d = " + format_double(s.d) +
                                         ", expected d >= 1 (or inf for the d -> infinity limit)");
    if (!(s.kappa > 0) || !std::isfinite(s.kappa))
        throw_domain_error(function, "kappa = " + format_double(s.kappa) + ", expected kappa > 0");
}

Eigen::VectorXd effective_weights(const HeadModel& model) {
    return model.alpha.cwiseProduct(model.norms);  // a_i = α_i‖v_i‖
}

Eigen::VectorXd ranking_scores(const HeadModel& model, Ranking ranking) {
    return ranking == Ranking::attention ? model.alpha : effective_weights(model);
}

// p⁻ for one pair, with the limits: B = 0 (degenerate) gives 1/2; σ = 0 with B > 0 is
// d = ∞, where p⁻ is 0 for a positive gap and 1/2 otherwise.
double pair_probability_lower(double mu, double sigma, double B) {
    if (!(B > 0)) return 0.5;
    if (sigma == 0) return mu > 0 ? 0.0 : 0.5;
    return p_minus(mu / sigma);
}

// The variants' two choices (SPEC §3): μ from the expected Gram matrix including the sink, and
// B quadratic in the value scale.
bool uses_exact_mean(BoundVariant variant) {
    return variant == BoundVariant::exact_mean || variant == BoundVariant::corrected;
}
bool uses_scale_invariant_B(BoundVariant variant) {
    return variant == BoundVariant::scale_invariant || variant == BoundVariant::corrected;
}

void set_trivial(BoundRow& row) {
    row.trivial = true;
    row.deciding_xi_le0 = false;
    row.precision_lower = row.precision_upper = 1;
    row.recall_lower = row.recall_upper = 1;
    row.fmax_lower = row.fmax_upper = row.fmin_lower = row.fmin_upper = 1;
}

// Union term of eqs. (12) and (14): n_out·t(Δ) + (n_out/N)·t(Δ0), the second only when the
// sink is selected (SPEC §3).
double union_term(int n_out, int N, bool sink_selected, double tail_delta, double tail_delta0) {
    double u = n_out * tail_delta;
    if (sink_selected) u += static_cast<double>(n_out) / N * tail_delta0;
    return u;
}

void finish_row(BoundRow& row, double union_sum, double max_p, double recall_upper) {
    row.precision_lower = 1.0 / (1.0 + union_sum);
    row.recall_lower = std::max(0.0, 1.0 - union_sum);
    row.precision_upper = 1.0 - max_p / (row.N + 1);
    row.recall_upper = recall_upper;
    row.fmax_lower = f_of(row.precision_lower);
    row.fmax_upper = f_of(row.precision_upper);
    row.fmin_lower = f_of(row.recall_lower);
    row.fmin_upper = f_of(row.recall_upper);
}

extern "C" ATTNGEO_TARGET_AVX2_FMA __m256d
_ZGVdN4v_exp(__m256d x);  // glibc's libmvec, within 4 ulp of exp

ATTNGEO_TARGET_AVX2_FMA inline __m256d p_minus4(__m256d xi) {
    const __m256d positive = _mm256_cmp_pd(xi, _mm256_setzero_pd(), _CMP_GT_OQ);
    const __m256d x = _mm256_blendv_pd(_mm256_set1_pd(1.0), xi, positive);
    const __m256d density =
        _mm256_mul_pd(_mm256_set1_pd(kInvSqrt2Pi),
                      _ZGVdN4v_exp(_mm256_mul_pd(_mm256_set1_pd(-0.5), _mm256_mul_pd(x, x))));
    const __m256d p = _mm256_div_pd(_mm256_mul_pd(density, x),
                                    _mm256_add_pd(_mm256_mul_pd(x, x), _mm256_set1_pd(1.0)));
    return _mm256_and_pd(p, positive);
}

// p⁻ as the kernels write it, φ(ξ)·ξ/(ξ² + 1) = φ(ξ)/(ξ + 1/ξ) (one division; tiny ξ gives
// the limit 0 directly), 0 for ξ ≤ 0.
inline double p_minus_of_gap(double xi) {
    return xi > 0 ? kInvSqrt2Pi * std::exp(-0.5 * xi * xi) * xi / (xi * xi + 1) : 0.0;
}

// p_i of position i: 1/2 where half[i], else the larger p⁻ of its two candidate gaps.
inline double position_p(const double* near, const double* far, const char* half, int i) {
    return half[i] ? 0.5 : std::max(p_minus_of_gap(near[i]), p_minus_of_gap(far[i]));
}

// Positions [from, count) one at a time: the tail the four lanes leave.
void add_positions(const double* near, const double* far, const char* half, int from, int count,
                   bound_kernels::PMinusSums& out) {
    for (int i = from; i < count; ++i) {
        const double p = position_p(near, far, half, i);
        out.largest = std::max(out.largest, p);
        out.complement_sum += 1 - p;
    }
}

// Σ(1 − p) in four lanes as the AVX2 loop keeps it, so the two differ only by exp's ulps.
bound_kernels::PMinusSums reduce_lanes(const double (&largest)[4], const double (&sums)[4]) {
    bound_kernels::PMinusSums out;
    out.largest = std::max(std::max(largest[0], largest[1]), std::max(largest[2], largest[3]));
    out.complement_sum = (sums[0] + sums[1]) + (sums[2] + sums[3]);
    return out;
}

ATTNGEO_TARGET_AVX2_FMA bound_kernels::PMinusSums p_minus_sums_avx2(const double* near,
                                                                    const double* far,
                                                                    const char* half, int count) {
    __m256d largest = _mm256_setzero_pd(), complement = _mm256_setzero_pd();
    const __m256d one = _mm256_set1_pd(1.0), one_half = _mm256_set1_pd(0.5);
    int i = 0;
    for (; i + 4 <= count; i += 4) {
        __m256d p =
            _mm256_max_pd(p_minus4(_mm256_loadu_pd(near + i)), p_minus4(_mm256_loadu_pd(far + i)));
        int flags;  // four half_in bytes
        std::memcpy(&flags, half + i, sizeof flags);
        const __m256i halves = _mm256_cvtepi8_epi64(_mm_cvtsi32_si128(flags));
        const __m256d at_half =
            _mm256_castsi256_pd(_mm256_cmpgt_epi64(halves, _mm256_setzero_si256()));
        p = _mm256_blendv_pd(p, one_half, at_half);
        largest = _mm256_max_pd(largest, p);
        complement = _mm256_add_pd(complement, _mm256_sub_pd(one, p));
    }
    alignas(32) double lanes[4], sums[4];
    _mm256_store_pd(lanes, largest);
    _mm256_store_pd(sums, complement);
    bound_kernels::PMinusSums out = reduce_lanes(lanes, sums);
    add_positions(near, far, half, i, count, out);
    return out;
}

}  // namespace

namespace bound_kernels {

PMinusSums p_minus_sums_plain(const double* near, const double* far, const char* half, int count) {
    double largest[4] = {0, 0, 0, 0}, sums[4] = {0, 0, 0, 0};
    const int whole = count / 4 * 4;
    for (int i = 0; i < whole; ++i) {
        const double p = position_p(near, far, half, i);
        largest[i % 4] = std::max(largest[i % 4], p);
        sums[i % 4] += 1 - p;
    }
    PMinusSums out = reduce_lanes(largest, sums);
    add_positions(near, far, half, whole, count, out);
    return out;
}

PMinusSums p_minus_sums(const double* near, const double* far, const char* half, int count) {
    return cpu_has_avx2_fma() ? p_minus_sums_avx2(near, far, half, count)
                              : p_minus_sums_plain(near, far, half, count);
}

}  // namespace bound_kernels

BoundVariant parse_bound_variant(const std::string& text) {
    if (text == "paper") return BoundVariant::paper;
    if (text == "exact-mean") return BoundVariant::exact_mean;
    if (text == "scale-invariant") return BoundVariant::scale_invariant;
    if (text == "corrected") return BoundVariant::corrected;
    throw std::domain_error("parse_bound_variant: '" + text +
                            "', expected paper, exact-mean, scale-invariant or corrected");
}

const std::array<BoundVariant, 4>& bound_variants() {
    static const std::array<BoundVariant, 4> all = {BoundVariant::paper, BoundVariant::exact_mean,
                                                    BoundVariant::scale_invariant,
                                                    BoundVariant::corrected};
    return all;
}

MarginFlags margin_flags(const BoundRow& row) {
    MarginFlags flags;
    if (row.trivial) return flags;
    flags.delta_le0 = row.delta <= 0;
    flags.delta0_le0 = row.sink_selected && row.delta0 <= 0;
    flags.xi_le0 = row.deciding_xi_le0;
    return flags;
}

EnvelopeFlags envelope_flags(double P_lower, double P_upper, double R_lower, double R_upper) {
    EnvelopeFlags flags;
    flags.P_inverted = P_lower > P_upper + kInvertedSlack;
    flags.R_inverted = R_lower > R_upper + kInvertedSlack;
    flags.P_trivial_lower = P_lower <= kTrivialLower;
    flags.R_trivial_lower = R_lower <= kTrivialLower;
    flags.P_trivial_upper = P_upper >= kTrivialUpper;
    flags.R_trivial_upper = R_upper >= kTrivialUpper;
    return flags;
}

const char* to_string(BoundVariant variant) {
    switch (variant) {
        case BoundVariant::paper:
            return "paper";
        case BoundVariant::exact_mean:
            return "exact-mean";
        case BoundVariant::scale_invariant:
            return "scale-invariant";
        case BoundVariant::corrected:
            return "corrected";
    }
    return "?";
}

void validate_head_model(const HeadModel& m, const char* function) {
    const auto n = m.alpha.size();
    if (n < 2)
        throw_domain_error(
            function, "need at least 2 tokens (the sink and one more), got " + std::to_string(n));
    if (m.norms.size() != n)
        throw_domain_error(function, "norms has " + std::to_string(m.norms.size()) +
                                         " entries, expected n = " + std::to_string(n));
    if (m.cosine.rows() != n || m.cosine.cols() != n) {
        throw_domain_error(function, "cosine matrix is " + std::to_string(m.cosine.rows()) + "x" +
                                         std::to_string(m.cosine.cols()) + ", expected " +
                                         std::to_string(n) + "x" + std::to_string(n));
    }
    for (Eigen::Index i = 0; i < n; ++i) {
        if (!std::isfinite(m.alpha[i]) || m.alpha[i] < 0)
            throw_domain_error(function, "alpha[" + std::to_string(i) +
                                             "] = " + format_double(m.alpha[i]) +
                                             ", expected finite and >= 0");
        if (!std::isfinite(m.norms[i]) || m.norms[i] < 0)
            throw_domain_error(function, "norms[" + std::to_string(i) +
                                             "] = " + format_double(m.norms[i]) +
                                             ", expected finite and >= 0");
    }
    validate_cosine_matrix(m.cosine, function);
}

double selected_mass_without_sink(const Eigen::VectorXd& a, const std::vector<char>& selected) {
    double sum = 0;
    for (Eigen::Index k = 1; k < a.size(); ++k)
        if (selected[k]) sum += a[k];
    return sum;
}

double min_selected_without_sink(const Eigen::VectorXd& a, const std::vector<char>& selected) {
    double m = kInf;
    for (Eigen::Index k = 1; k < a.size(); ++k)
        if (selected[k]) m = std::min(m, a[k]);
    return m;
}

double max_selected(const Eigen::VectorXd& a, const std::vector<char>& selected) {
    double m = 0;
    for (Eigen::Index k = 0; k < a.size(); ++k)
        if (selected[k]) m = std::max(m, a[k]);
    return m;
}

double max_unselected(const Eigen::VectorXd& a, const std::vector<char>& selected) {
    double m = 0;
    for (Eigen::Index k = 0; k < a.size(); ++k)
        if (!selected[k]) m = std::max(m, a[k]);
    return m;
}

double max_outside_cosine(const Eigen::MatrixXd& cosine, const std::vector<char>& selected) {
    double m = -kInf;
    const auto n = cosine.rows();
    for (Eigen::Index j = 0; j < n; ++j) {
        if (selected[j]) continue;
        for (Eigen::Index k = 1; k < n; ++k)
            if (selected[k]) m = std::max(m, cosine(j, k));
    }
    return m == -kInf ? 0.0 : m;
}

double margin_delta(double a_min_in, double a_max_out, double s_in, double rho_out) {
    return a_min_in * a_min_in - 2 * a_max_out * s_in * rho_out;
}

double sink_margin_delta0(double a0, double s_in, double rho_out) {
    const double leak = s_in * rho_out;
    return a0 * a0 - leak * leak;
}

double scale_B(double a_max_in, double a_max_out, double s_in) {
    return a_max_in + a_max_out + s_in;
}

double scale_invariant_B(double a_max_in, double a_max_out, double selected_mass) {
    return (a_max_in + a_max_out) * selected_mass;
}

double tail_factor(double margin, double B, double kappa, double d) {
    if (!(B > 0)) return 1.0;  // degenerate scale (all weights zero): no concentration claim
    if (!(margin > 0)) return 1.0;
    const double x = margin / B;
    return std::exp(-kappa * d * x * x);
}

double aggregated_cosine(const Eigen::VectorXd& a, const Eigen::MatrixXd& cosine,
                         const std::vector<char>& selected, int j, bool include_sink) {
    double sum = 0;
    for (Eigen::Index l = include_sink ? 0 : 1; l < a.size(); ++l)
        if (selected[l]) sum += a[l] * cosine(l, j);
    return sum;
}

double mean_gap(double a_i, double a_j, double M_i, double M_j) {
    return (a_j * a_j - a_i * a_i) - 2 * a_j * M_j + 2 * a_i * M_i;
}

double p_minus(double xi) {
    if (std::isnan(xi)) throw_domain_error("p_minus", "xi is NaN");
    if (xi <= 0) return 0.5;
    if (std::isinf(xi)) return 0.0;
    static const boost::math::normal_distribution<double> standard_normal;
    // φ(ξ)/(ξ + 1/ξ): for tiny ξ, 1/ξ overflows to inf and the quotient is the right limit 0.
    return boost::math::pdf(standard_normal, xi) / (xi + 1.0 / xi);
}

double pair_sigma(double B, double kappa, double d) {
    return B / std::sqrt(2 * kappa * d);
}

double f_of(double x) {
    return 2 * x / (1 + x);
}

// ---------------------------------------------------------------------------------------------

BoundRow bounds_reference(const HeadModel& model, int N, const BoundSettings& settings) {
    validate_head_model(model, "bounds_reference");
    validate_settings(settings, "bounds_reference");
    const int n = static_cast<int>(model.alpha.size());
    if (N < 1 || N > n)
        throw_domain_error("bounds_reference",
                           "N = " + std::to_string(N) + " outside 1.." + std::to_string(n));

    const Eigen::VectorXd a = effective_weights(model);
    const std::vector<int> order = selection_order(ranking_scores(model, settings.ranking));
    std::vector<char> selected(n, 0);
    for (int k = 0; k < N; ++k)
        selected[order[k]] = 1;

    BoundRow row;
    row.N = N;
    row.sink_selected = selected[0] != 0;
    const double s_in = selected_mass_without_sink(a, selected);
    const double a_min_in = min_selected_without_sink(a, selected);
    const double a_max_in = max_selected(a, selected);
    const double a_max_out = max_unselected(a, selected);
    const double rho_out = max_outside_cosine(model.cosine, selected);
    const bool has_nonsink = a_min_in < kInf;
    row.delta = has_nonsink ? margin_delta(a_min_in, a_max_out, s_in, rho_out) : kNaN;
    row.delta0 = sink_margin_delta0(a[0], s_in, rho_out);
    if (uses_scale_invariant_B(settings.variant)) {
        double mass = 0;
        for (int k = 0; k < n; ++k)
            if (selected[k]) mass += a[k];
        row.scale = scale_invariant_B(a_max_in, a_max_out, mass);
    } else {
        row.scale = scale_B(a_max_in, a_max_out, s_in);
    }
    if (N == n || !has_nonsink) {
        set_trivial(row);
        return row;
    }

    const int n_out = n - N;
    const double tail_delta = tail_factor(row.delta, row.scale, settings.kappa, settings.d);
    const double tail_delta0 = tail_factor(row.delta0, row.scale, settings.kappa, settings.d);
    const double union_sum = union_term(n_out, N, row.sink_selected, tail_delta, tail_delta0);

    const bool include_sink = uses_exact_mean(settings.variant);
    std::vector<double> M(n);
    for (int j = 0; j < n; ++j)
        M[j] = aggregated_cosine(a, model.cosine, selected, j, include_sink);
    const double sigma = pair_sigma(row.scale, settings.kappa, settings.d);
    double max_p = 0, recall_sum = 0;
    for (int i = 0; i < n; ++i) {
        if (!selected[i]) continue;
        double p_i = 0;
        for (int j = 0; j < n; ++j) {
            if (selected[j]) continue;
            const double mu = mean_gap(a[i], a[j], M[i], M[j]);
            if (mu <= 0) row.deciding_xi_le0 = true;
            p_i = std::max(p_i, pair_probability_lower(mu, sigma, row.scale));
        }
        max_p = std::max(max_p, p_i);
        recall_sum += 1 - p_i;
    }
    finish_row(row, union_sum, max_p, recall_sum / N);
    return row;
}

// ---------------------------------------------------------------------------------------------

BoundTerms::BoundTerms(const HeadModel& model, const std::vector<int>& sizes, BoundVariant variant,
                       Ranking ranking)
    : sizes_(sizes) {
    validate_head_model(model, "BoundTerms");
    const int n = static_cast<int>(model.alpha.size());
    for (int N : sizes) {
        if (N < 1 || N > n)
            throw_domain_error("BoundTerms",
                               "N = " + std::to_string(N) + " outside 1.." + std::to_string(n));
    }
    std::vector<int> wanted(sizes);
    std::sort(wanted.begin(), wanted.end());
    wanted.erase(std::unique(wanted.begin(), wanted.end()), wanted.end());

    const Eigen::VectorXd a = effective_weights(model);
    const std::vector<int> order = selection_order(ranking_scores(model, ranking));
    const Eigen::MatrixXd& rho = model.cosine;
    std::vector<double> suffix_max(n + 1, 0.0);  // a_max^out for each N
    for (int k = n - 1; k >= 0; --k)
        suffix_max[k] = std::max(suffix_max[k + 1], a[order[k]]);

    const bool include_sink = uses_exact_mean(variant);
    std::vector<double> M(n, 0.0);             // M_j over the current selection
    std::vector<double> max_rho_in(n, -kInf);  // max_{k∈I_N∖{0}} ρ_jk, per j
    std::vector<double> h(n), h_scale(n);
    double s_in = 0, a_min_in = kInf, a_max_in = 0, selected_mass = 0;
    bool sink_selected = false;

    std::vector<PerSize> by_size;
    std::size_t next = 0;
    for (int N = 1; N <= n && next < wanted.size(); ++N) {
        const int k = order[N - 1];
        if (k == 0) {
            sink_selected = true;
        } else {
            s_in += a[k];
            a_min_in = std::min(a_min_in, a[k]);
            for (int j = 0; j < n; ++j)
                max_rho_in[j] = std::max(max_rho_in[j], rho(j, k));
        }
        if (k != 0 || include_sink) {
            for (int j = 0; j < n; ++j)
                M[j] += a[k] * rho(k, j);
        }
        a_max_in = std::max(a_max_in, a[k]);
        selected_mass += a[k];
        if (N != wanted[next]) continue;
        ++next;

        PerSize t;
        t.N = N;
        t.n_out = n - N;
        t.sink_selected = sink_selected;
        const bool has_nonsink = a_min_in < kInf;
        const double a_max_out = suffix_max[N];
        double rho_out = -kInf;
        if (has_nonsink)
            for (int pos = N; pos < n; ++pos)
                rho_out = std::max(rho_out, max_rho_in[order[pos]]);
        if (rho_out == -kInf) rho_out = 0;
        t.delta = has_nonsink ? margin_delta(a_min_in, a_max_out, s_in, rho_out) : kNaN;
        t.delta0 = sink_margin_delta0(a[0], s_in, rho_out);
        t.scale = uses_scale_invariant_B(variant)
                      ? scale_invariant_B(a_max_in, a_max_out, selected_mass)
                      : scale_B(a_max_in, a_max_out, s_in);
        t.trivial = t.n_out == 0 || !has_nonsink;
        if (!t.trivial) {
            for (int l = 0; l < n; ++l) {
                h[l] = a[l] * a[l] - 2 * a[l] * M[l];
                h_scale[l] = a[l] * a[l] + 2 * a[l] * std::abs(M[l]);
            }
            double out_scale = 0;
            t.h_out.reserve(t.n_out);
            for (int pos = N; pos < n; ++pos) {
                t.h_out.push_back(h[order[pos]]);
                out_scale = std::max(out_scale, h_scale[order[pos]]);
            }
            std::sort(t.h_out.begin(), t.h_out.end());
            t.h_in.resize(N);
            t.half_in.resize(N);
            for (int pos = 0; pos < N; ++pos) {
                const int i = order[pos];
                t.h_in[pos] = h[i];
                // μ_ij = h_j − h_i; the sign of the smallest decides p⁻ = 1/2. Near a tie the
                // printed formula (eq. 10) decides, so rounding in h cannot flip it.
                const double gap = t.h_out.front() - h[i];
                const double tolerance = 16 * kUnitRoundoff * (h_scale[i] + out_scale);
                if (gap > tolerance) {
                    t.half_in[pos] = 0;
                } else if (gap < -tolerance) {
                    t.half_in[pos] = 1;
                } else {
                    double min_mu = kInf;
                    for (int q = N; q < n; ++q) {
                        const int j = order[q];
                        min_mu = std::min(min_mu, mean_gap(a[i], a[j], M[i], M[j]));
                    }
                    t.half_in[pos] = min_mu <= 0;
                }
            }
            // Only the maximum and the sum over i matter, so h_in can be sorted: then the
            // targets h_i + ξ*σ ascend and one merge pass over h_out finds every i's best j.
            std::vector<std::pair<double, char>> in(N);
            for (int pos = 0; pos < N; ++pos)
                in[pos] = {t.h_in[pos], t.half_in[pos]};
            std::sort(in.begin(), in.end());
            for (int pos = 0; pos < N; ++pos) {
                t.h_in[pos] = in[pos].first;
                t.half_in[pos] = in[pos].second;
            }
            t.any_half = std::any_of(t.half_in.begin(), t.half_in.end(), [](char x) { return x; });
        }
        by_size.push_back(std::move(t));
    }
    for (int N : sizes) {
        const auto it = std::lower_bound(wanted.begin(), wanted.end(), N);
        terms_.push_back(by_size[static_cast<std::size_t>(it - wanted.begin())]);
    }
}

std::vector<BoundRow> BoundTerms::evaluate(double d, double kappa, bool lower_only) const {
    BoundSettings settings;
    settings.d = d;
    settings.kappa = kappa;
    validate_settings(settings, "BoundTerms::evaluate");
    std::vector<BoundRow> rows;
    rows.reserve(terms_.size());
    std::vector<double> gap_near, gap_far;  // [N] the vector path's candidate ξ per position
    for (const PerSize& t : terms_) {
        BoundRow row;
        row.N = t.N;
        row.sink_selected = t.sink_selected;
        row.delta = t.delta;
        row.delta0 = t.delta0;
        row.scale = t.scale;
        row.deciding_xi_le0 = t.any_half;
        if (t.trivial) {
            set_trivial(row);
            rows.push_back(row);
            continue;
        }
        const double tail_delta = tail_factor(t.delta, t.scale, kappa, d);
        const double tail_delta0 = tail_factor(t.delta0, t.scale, kappa, d);
        const double union_sum = union_term(t.n_out, t.N, t.sink_selected, tail_delta, tail_delta0);
        if (lower_only) {
            finish_row(row, union_sum, 0.5, std::numeric_limits<double>::quiet_NaN());
            row.precision_upper = row.fmax_upper = std::numeric_limits<double>::quiet_NaN();
            rows.push_back(row);
            continue;
        }
        const double sigma = pair_sigma(t.scale, kappa, d);
        const double peak_gap = kPeakXi * sigma;
        const std::size_t n_out = t.h_out.size();
        double max_p = 0, recall_sum = 0;
        if (sigma > 0) {
            // The two candidate gaps of every position (a sequential merge: max_j p⁻ over the
            // gaps h_j − h_i > 0, p⁻ unimodal in the gap, is at a neighbour of h_i + ξ*σ in the
            // sorted h_out), then p⁻ of all of them (bound_kernels::p_minus_sums).
            gap_near.resize(t.N);
            gap_far.resize(t.N);
            const double inverse_sigma = 1.0 / sigma;
            std::size_t j = 0;
            for (int pos = 0; pos < t.N; ++pos) {
                const double h_i = t.h_in[pos];
                while (j < n_out && t.h_out[j] < h_i + peak_gap)
                    ++j;
                gap_near[pos] = j < n_out ? (t.h_out[j] - h_i) * inverse_sigma : 0.0;
                gap_far[pos] = j > 0 ? (t.h_out[j - 1] - h_i) * inverse_sigma : 0.0;
            }
            const bound_kernels::PMinusSums sums =
                bound_kernels::p_minus_sums(gap_near.data(), gap_far.data(), t.half_in.data(), t.N);
            max_p = sums.largest;
            recall_sum = sums.complement_sum;
        } else {
            for (int pos = 0; pos < t.N; ++pos) {
                // d = ∞ (σ = 0 with B > 0): every gap is positive, so p⁻ → 0; B = 0: 1/2.
                const double p_i = !t.half_in[pos] && t.scale > 0 ? 0.0 : 0.5;
                max_p = std::max(max_p, p_i);
                recall_sum += 1 - p_i;
            }
        }
        finish_row(row, union_sum, max_p, recall_sum / t.N);
        rows.push_back(row);
    }
    return rows;
}

std::vector<BoundRow> bounds_all(const HeadModel& model, const std::vector<int>& sizes,
                                 const BoundSettings& settings) {
    validate_settings(settings, "bounds_all");
    return BoundTerms(model, sizes, settings.variant, settings.ranking)
        .evaluate(settings.d, settings.kappa);
}

}  // namespace attngeo::theory
