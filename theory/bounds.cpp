// Theorems 1–2 and Corollary 1: the literal reference and the incremental all-N path.
// See bounds.hpp; docs/design.md §3 lists every decision taken where the paper is ambiguous.
#include "theory/bounds.hpp"

#include <algorithm>
#include <boost/math/distributions/normal.hpp>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "common/errors.hpp"
#include "common/format.hpp"

#include "theory/assumption_models.hpp"

namespace attngeo::theory {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kUnitRoundoff = 0x1p-53;
// argmax of φ(ξ)/(ξ + 1/ξ) on ξ > 0: ξ⁴ + 2ξ² − 1 = 0, ξ* = √(√2 − 1). The function is
// increasing before ξ* and decreasing after, which lets the pair maximum use a binary search.
const double kPeakXi = std::sqrt(std::sqrt(2.0) - 1.0);
// p⁻(ξ) < φ(ξ)/ξ < 2⁻⁶⁰ for ξ ≥ 9, so 1 − p⁻ rounds to 1 and p⁻/(N + 1) cannot move 1 − it
// either (eq. 13): such pairs need no exp.
constexpr double kNegligibleXi = 9;

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

// The variants' two choices (docs/design.md §3): μ from the expected Gram matrix including the
// sink, and B quadratic in the value scale.
bool uses_exact_mean(BoundVariant variant) {
    return variant == BoundVariant::exact_mean || variant == BoundVariant::corrected;
}
bool uses_scale_invariant_B(BoundVariant variant) {
    return variant == BoundVariant::scale_invariant || variant == BoundVariant::corrected;
}

// At N = 1, s = y of the one selected token, so D = 0 for it and P(r_max,1) = R(r_min,1) = 1
// exactly: an upper bound below 1 there contradicts an identity (docs/design.md §3). The literal
// formula's anti-concentration term p⁻ models D_j − D_i as Gaussian, which fails when D_i ≡ 0.
void set_identity_upper(BoundRow& row) {
    row.precision_upper = row.recall_upper = 1;
    row.fmax_upper = row.fmin_upper = 1;
}

void set_trivial(BoundRow& row) {
    row.trivial = true;
    row.deciding_xi_le0 = false;
    row.precision_lower = row.precision_upper = 1;
    row.recall_lower = row.recall_upper = 1;
    row.fmax_lower = row.fmax_upper = row.fmin_lower = row.fmin_upper = 1;
}

// Every bound of Theorems 1–2 and Corollary 1 from the union tail (lower bounds) and the pair
// probabilities' maximum and complement sum (upper bounds).
void finish_row(BoundRow& row, double union_sum, double max_p, double complement_sum) {
    row.precision_lower = precision_lower_bound(union_sum);
    row.recall_lower = recall_lower_bound(union_sum);
    row.precision_upper = precision_upper_bound(max_p, row.N);
    row.recall_upper = recall_upper_bound(complement_sum, row.N);
    row.fmax_lower = f_of(row.precision_lower);
    row.fmax_upper = f_of(row.precision_upper);
    row.fmin_lower = f_of(row.recall_lower);
    row.fmin_upper = f_of(row.recall_upper);
}

// The lower bounds alone; the upper ones NaN (BoundTerms::evaluate with lower_only).
void finish_lower_only(BoundRow& row, double union_sum) {
    row.precision_lower = precision_lower_bound(union_sum);
    row.recall_lower = recall_lower_bound(union_sum);
    row.fmax_lower = f_of(row.precision_lower);
    row.fmin_lower = f_of(row.recall_lower);
    row.precision_upper = row.recall_upper = row.fmax_upper = row.fmin_upper = kNaN;
}

}  // namespace

bool keeps_identity_at_one(BoundVariant variant) {
    return variant == BoundVariant::corrected;
}

bool shares_mean(BoundVariant a, BoundVariant b) {
    return uses_exact_mean(a) == uses_exact_mean(b);
}

BoundVariant parse_bound_variant(const std::string& text, const std::string& source) {
    return parse_choice(text, source, kBoundVariantChoices);
}

const std::array<BoundVariant, 4>& bound_variants() {
    static const std::array<BoundVariant, 4> all = [] {
        static_assert(std::size(kBoundVariantChoices) == 4);
        std::array<BoundVariant, 4> out{};
        for (std::size_t i = 0; i < out.size(); ++i)
            out[i] = kBoundVariantChoices[i].value;
        return out;
    }();
    return all;
}

const std::vector<std::string>& bound_variant_names() {
    static const std::vector<std::string> names = choice_list(kBoundVariantChoices);
    return names;
}

MarginFlags margin_flags(const BoundRow& row) {
    MarginFlags flags;
    flags.sink_selected = row.sink_selected;
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
    return choice_name(variant, kBoundVariantChoices);
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

double union_tail(int n_out, int N, bool sink_selected, double tail_delta, double tail_delta0) {
    if (n_out < 0 || N < 1)
        throw_domain_error("union_tail", "n_out = " + std::to_string(n_out) + ", N = " +
                                             std::to_string(N) + ", expected n_out >= 0, N >= 1");
    if (!(tail_delta >= 0 && tail_delta <= 1) || !(tail_delta0 >= 0 && tail_delta0 <= 1))
        throw_domain_error("union_tail", "tail factors " + format_double(tail_delta) + ", " +
                                             format_double(tail_delta0) + ", expected in [0, 1]");
    double u = n_out * tail_delta;
    if (sink_selected) u += static_cast<double>(n_out) / N * tail_delta0;
    return u;
}

double precision_lower_bound(double union_sum) {
    if (!(union_sum >= 0))
        throw_domain_error("precision_lower_bound",
                           "union tail = " + format_double(union_sum) + ", expected >= 0");
    return 1.0 / (1.0 + union_sum);
}

double recall_lower_bound(double union_sum) {
    if (!(union_sum >= 0))
        throw_domain_error("recall_lower_bound",
                           "union tail = " + format_double(union_sum) + ", expected >= 0");
    return std::max(0.0, 1.0 - union_sum);
}

double precision_upper_bound(double max_pair_probability, int N) {
    if (N < 1 || !(max_pair_probability >= 0 && max_pair_probability <= 1))
        throw_domain_error("precision_upper_bound",
                           "max p = " + format_double(max_pair_probability) + " at N = " +
                               std::to_string(N) + ", expected p in [0, 1] and N >= 1");
    return 1.0 - max_pair_probability / (N + 1);
}

double recall_upper_bound(double complement_sum, int N) {
    if (N < 1 || !(complement_sum >= 0))
        throw_domain_error("recall_upper_bound", "sum of 1 - p = " + format_double(complement_sum) +
                                                     " at N = " + std::to_string(N) +
                                                     ", expected >= 0 and N >= 1");
    return complement_sum / N;
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
    const double union_sum = union_tail(n_out, N, row.sink_selected, tail_delta, tail_delta0);

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
    finish_row(row, union_sum, max_p, recall_sum);
    if (N == 1 && keeps_identity_at_one(settings.variant)) set_identity_upper(row);
    return row;
}

// ---------------------------------------------------------------------------------------------

namespace {

// The quantities of eqs. (7)–(11) kept up to date as tokens join I_N in rank order.
struct RunningSelection {
    explicit RunningSelection(int n) : M(n, 0.0), max_rho_in(n, -kInf) {}

    // Token k joins I_N; M sums the sink too when include_sink (the exact-mean variants).
    // rho_transposed(j, k) = ρ_kj, so M's update reads a column (ρ need not be exactly symmetric).
    void add(int k, const Eigen::VectorXd& a, const Eigen::MatrixXd& rho,
             const Eigen::MatrixXd& rho_transposed, bool include_sink) {
        const int n = static_cast<int>(a.size());
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
                M[j] += a[k] * rho_transposed(j, k);
        }
        a_max_in = std::max(a_max_in, a[k]);
        selected_mass += a[k];
    }
    bool has_nonsink() const { return a_min_in < kInf; }

    std::vector<double> M;           // [n] M_j over the current selection
    std::vector<double> max_rho_in;  // [n] max_{k∈I_N∖{0}} ρ_jk, per j
    double s_in = 0, a_min_in = kInf, a_max_in = 0, selected_mass = 0;
    bool sink_selected = false;
};

// max(initial, values[index[0]], …, values[index[count − 1]]) as std::max folds it, in a
// function of its own so that the running maximum stays in a register (inlined into
// BoundTerms' constructor it was spilled, a store-to-load chain per element).
template <class IndexAt>
__attribute__((noinline)) double gathered_max(double initial, const double* values,
                                              std::size_t count, IndexAt index_at) {
    double largest = initial;
    for (std::size_t q = 0; q < count; ++q) {
        const double v = values[index_at(q)];
        largest = largest < v ? v : largest;
    }
    return largest;
}

// ρᵀ copied tile by tile, so neither matrix is walked across its columns' stride.
Eigen::MatrixXd transposed(const Eigen::MatrixXd& rho) {
    constexpr Eigen::Index kTile = 8;  // 8 lines a side: a power-of-two n aliases them to one set
    const Eigen::Index n = rho.rows();
    Eigen::MatrixXd out(rho.cols(), n);
    for (Eigen::Index j0 = 0; j0 < rho.cols(); j0 += kTile)
        for (Eigen::Index i0 = 0; i0 < n; i0 += kTile)
            for (Eigen::Index j = j0; j < std::min(j0 + kTile, rho.cols()); ++j)
                for (Eigen::Index i = i0; i < std::min(i0 + kTile, n); ++i)
                    out(j, i) = rho(i, j);
    return out;
}

// ρ_out = max over the unselected positions [N, n) of max_rho_in (eq. 7); 0 when empty.
double outside_cosine(const RunningSelection& state, const std::vector<int>& order, int N) {
    double rho_out = -kInf;
    if (state.has_nonsink())
        rho_out = gathered_max(rho_out, state.max_rho_in.data(), order.size() - N,
                               [&](std::size_t q) { return order[N + q]; });
    return rho_out == -kInf ? 0.0 : rho_out;
}

// Whether min_j μ_ij ≤ 0 for selected token i, so that max_j p⁻_ij = 1/2: from the smallest
// unselected h_j when the gap clears rounding, else from the printed formula (eq. 10) over
// every j, so rounding in h cannot flip it.
bool min_gap_nonpositive(const Eigen::VectorXd& a, const std::vector<double>& M,
                         const std::vector<int>& order, int N, int i, double gap,
                         double tolerance) {
    if (gap > tolerance) return false;
    if (gap < -tolerance) return true;
    double min_mu = kInf;
    for (std::size_t q = N; q < order.size(); ++q) {
        const int j = order[q];
        min_mu = std::min(min_mu, mean_gap(a[i], a[j], M[i], M[j]));
    }
    return min_mu <= 0;
}

// Positions kept in ascending order of a key that moves a little between calls (h of the
// growing selection): each call re-keys the previous order and repairs it by insertion, which
// costs O(count + inversions); past a budget of moves it sorts afresh. The sorted keys are the
// same values whichever way they were ordered, so the bounds do not depend on the path.
class KeyOrder {
  public:
    // `joined`: the positions new since the last call; key[l]: the current key of position l.
    void update(const std::vector<int>& joined, const std::vector<double>& key) {
        for (int l : joined)
            order_.push_back({0.0, l});
        for (auto& entry : order_)
            entry.first = key[entry.second];
        std::size_t moves = 0;
        const std::size_t budget = 8 * order_.size() + 64;
        for (std::size_t i = 1; i < order_.size(); ++i) {
            const std::pair<double, int> entry = order_[i];
            std::size_t j = i;
            for (; j > 0 && entry.first < order_[j - 1].first; --j)
                order_[j] = order_[j - 1];
            order_[j] = entry;
            moves += i - j;
            if (moves > budget) {
                std::sort(order_.begin(), order_.end());
                return;
            }
        }
    }
    // Drops `position` (it left the set).
    void remove(int position) {
        order_.erase(std::find_if(order_.begin(), order_.end(),
                                  [&](const auto& entry) { return entry.second == position; }));
    }
    const std::vector<std::pair<double, int>>& entries() const { return order_; }

  private:
    std::vector<std::pair<double, int>> order_;  // (key, position), ascending key
};

// The unselected and the selected positions of BoundTerms' growing selection, each in
// ascending h (KeyOrder), so each size re-sorts only what moved.
struct PairTermOrders {
    KeyOrder out, in;
    int next_joined = 0;  // order[0, next_joined) are in `in`, the rest in `out`
    bool started = false;
};

// h_ℓ = a_ℓ² − 2a_ℓM_ℓ (so μ_ij = h_j − h_i) of the unselected positions, ascending, and of the
// selected ones, ascending, apart from those whose max_j p⁻_ij is 1/2 (only counted): what
// BoundTerms::pair_sums needs per κ.
void sorted_pair_terms(const Eigen::VectorXd& a, const std::vector<double>& M,
                       const std::vector<int>& order, int N, PairTermOrders& orders,
                       std::vector<double>& h_in, int& half_count, std::vector<double>& h_out) {
    const int n = static_cast<int>(a.size());
    std::vector<double> h(n), h_scale(n);
    for (int l = 0; l < n; ++l) {
        h[l] = a[l] * a[l] - 2 * a[l] * M[l];
        h_scale[l] = a[l] * a[l] + 2 * a[l] * std::abs(M[l]);
    }
    std::vector<int> joined_out, joined_in;
    if (!orders.started) {
        joined_out.assign(order.begin() + N, order.end());
        joined_in.assign(order.begin(), order.begin() + N);
        orders.started = true;
    } else {
        for (int pos = orders.next_joined; pos < N; ++pos) {
            orders.out.remove(order[pos]);
            joined_in.push_back(order[pos]);
        }
    }
    orders.next_joined = N;
    orders.out.update(joined_out, h);
    orders.in.update(joined_in, h);
    const auto& out_entries = orders.out.entries();
    h_out.resize(out_entries.size());
    for (std::size_t q = 0; q < out_entries.size(); ++q)
        h_out[q] = out_entries[q].first;
    const double out_scale = gathered_max(0.0, h_scale.data(), out_entries.size(),
                                          [&](std::size_t q) { return out_entries[q].second; });
    // Only the maximum and the sum over i matter, so h_in can be sorted: then the targets
    // h_i + ξ*σ ascend and the regions of BoundTerms::pair_sums are runs of it.
    half_count = 0;
    h_in.reserve(N);
    for (const auto& [value, i] : orders.in.entries()) {
        const double tolerance = 16 * kUnitRoundoff * (h_scale[i] + out_scale);
        if (min_gap_nonpositive(a, M, order, N, i, h_out.front() - h[i], tolerance))
            ++half_count;
        else
            h_in.push_back(value);
    }
}

// The end of the run [from, end) of h where in_run holds (it holds on a prefix of [from, count)),
// searched outwards from `hint` (the end at a nearby κ) and then by bisection, so a scan over
// neighbouring κ pays O(log distance) per size instead of O(log count).
template <class InRun>
int run_end_near(const double* h, int from, int count, int hint, InRun in_run) {
    hint = std::clamp(hint, from, count);
    int lo = from, hi = count;
    if (hint < count && in_run(h[hint])) {
        lo = hint + 1;
        for (int step = 1;; step *= 2) {
            const int probe = lo + step - 1;
            if (probe >= count) break;
            if (!in_run(h[probe])) {
                hi = probe;
                break;
            }
            lo = probe + 1;
        }
    } else {
        hi = hint;
        for (int step = 1;; step *= 2) {
            const int probe = hi - step;
            if (probe < from) break;
            if (in_run(h[probe])) {
                lo = probe + 1;
                break;
            }
            hi = probe;
        }
    }
    return static_cast<int>(std::partition_point(h + lo, h + hi, in_run) - h);
}

// Σ and max of max_j p⁻_ij for positions h_in[0, count) whose peak h_i + ξ*σ lies inside h_out:
// the two candidate gaps of each (a sequential merge, the targets ascending: p⁻ is unimodal in
// the gap, so the best j neighbours h_i + ξ*σ in the sorted h_out), then p⁻ of all of them.
bound_kernels::PMinusSums merged_pair_sums(const std::vector<double>& h_out, const double* h_in,
                                           int count, double sigma, std::vector<double>& gap_near,
                                           std::vector<double>& gap_far) {
    gap_near.resize(count);
    gap_far.resize(count);
    const double inverse_sigma = 1.0 / sigma, peak_gap = kPeakXi * sigma;
    const int n_out = static_cast<int>(h_out.size());
    int j = 0;
    for (int pos = 0; pos < count; ++pos) {
        const double h_i = h_in[pos], target = h_i + peak_gap;
        // j = the first h_out ≥ target; the targets ascend, so from the previous j onwards
        // (galloping: a wide stretch of h_out between two targets costs O(log) steps).
        j = run_end_near(h_out.data(), j, n_out, j, [&](double h_j) { return h_j < target; });
        gap_near[pos] = j < n_out ? (h_out[j] - h_i) * inverse_sigma : 0.0;
        gap_far[pos] = j > 0 ? (h_out[j - 1] - h_i) * inverse_sigma : 0.0;
    }
    return bound_kernels::p_minus_sums(gap_near.data(), gap_far.data(), count);
}

// Whether the far run's gaps all lie before the peak, where p⁻ rises and is a polynomial: its
// first position has the largest gap, normally ≤ ξ*σ; rounding in h_i + ξ*σ can only push it
// past the polynomial's range when σ is below h's resolution, and then the exp form takes it.
bool far_run_rises(const double* h_in, int count, double highest_out, double inverse_sigma) {
    return count == 0 || (highest_out - h_in[0]) * inverse_sigma <= bound_kernels::kRisingXiLimit;
}

}  // namespace

BoundTerms::BoundTerms(const HeadModel& model, const std::vector<int>& sizes, BoundVariant variant,
                       Ranking ranking)
    : sizes_(sizes), variant_(variant) {
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
    std::vector<double> suffix_max(n + 1, 0.0);  // a_max^out for each N
    for (int k = n - 1; k >= 0; --k)
        suffix_max[k] = std::max(suffix_max[k + 1], a[order[k]]);

    const bool include_sink = uses_exact_mean(variant);
    RunningSelection state(n);
    const Eigen::MatrixXd cosine_transposed = transposed(model.cosine);
    PairTermOrders orders;
    std::vector<PerSize> by_size;
    std::size_t next = 0;
    for (int N = 1; N <= n && next < wanted.size(); ++N) {
        state.add(order[N - 1], a, model.cosine, cosine_transposed, include_sink);
        if (N != wanted[next]) continue;
        ++next;

        PerSize t;
        t.N = N;
        t.n_out = n - N;
        t.sink_selected = state.sink_selected;
        const double a_max_out = suffix_max[N];
        const double rho_out = outside_cosine(state, order, N);
        t.delta = state.has_nonsink() ? margin_delta(state.a_min_in, a_max_out, state.s_in, rho_out)
                                      : kNaN;
        t.delta0 = sink_margin_delta0(a[0], state.s_in, rho_out);
        t.a_max_in = state.a_max_in;
        t.a_max_out = a_max_out;
        t.s_in = state.s_in;
        t.selected_mass = state.selected_mass;
        t.scale = scale_of(t, variant);
        t.trivial = t.n_out == 0 || !state.has_nonsink();
        t.identity_upper = N == 1 && keeps_identity_at_one(variant);
        if (!t.trivial) {
            sorted_pair_terms(a, state.M, order, N, orders, t.h_in, t.half_count, t.h_out);
            t.far =
                far_moments::build(t.h_in.data(), static_cast<int>(t.h_in.size()), t.h_out.back());
        }
        by_size.push_back(std::move(t));
    }
    if (sizes == wanted) {
        terms_ = std::move(by_size);
        return;
    }
    for (int N : sizes) {
        const auto it = std::lower_bound(wanted.begin(), wanted.end(), N);
        terms_.push_back(by_size[static_cast<std::size_t>(it - wanted.begin())]);
    }
}

double BoundTerms::scale_of(const PerSize& t, BoundVariant variant) {
    return uses_scale_invariant_B(variant)
               ? scale_invariant_B(t.a_max_in, t.a_max_out, t.selected_mass)
               : scale_B(t.a_max_in, t.a_max_out, t.s_in);
}

void BoundTerms::switch_variant(BoundVariant variant) {
    if (!shares_mean(variant, variant_))
        throw_domain_error("BoundTerms::switch_variant",
                           std::string("terms built for ") + to_string(variant_) +
                               " have another mu than " + to_string(variant));
    variant_ = variant;
    for (PerSize& t : terms_) {
        t.scale = scale_of(t, variant);
        t.identity_upper = t.N == 1 && keeps_identity_at_one(variant);
    }
}

// The selected positions i fall, by h_i, into runs where max_j p⁻_ij needs different work (h_in
// and h_out ascending, so each run is found by a binary search on one monotone predicate):
//   negligible: every gap ≥ kNegligibleXi·σ, so p_i < 2⁻⁶⁰ and 1 − p_i is exactly 1;
//   near:       h_i + ξ*σ ≤ min h_out, p_i = p⁻((min h_out − h_i)/σ) (p⁻ falls after ξ*);
//   merge:      the peak h_i + ξ*σ inside h_out, p_i from its two neighbours in h_out;
//   far:        h_i + ξ*σ > max h_out, p_i = p⁻((max h_out − h_i)/σ) (p⁻ rises before ξ*,
//               where it is a polynomial summed through power sums: far_moments).
// Each run gives the same p_i as the merge over all positions would, so only the order of the
// complement sum differs; the positions with p_i = 1/2 are counted, not visited.
bound_kernels::PMinusSums BoundTerms::pair_sums(const PerSize& t, double sigma,
                                                PairWorkspace& workspace, bool with_sum) {
    const double* h = t.h_in.data();
    const int count = static_cast<int>(t.h_in.size());
    const double inverse_sigma = 1.0 / sigma, peak_gap = kPeakXi * sigma;
    const double lowest_out = t.h_out.front(), highest_out = t.h_out.back();
    int* hint = workspace.run_ends;
    const int negligible_end = hint[0] = run_end_near(h, 0, count, hint[0], [&](double h_i) {
        return (lowest_out - h_i) * inverse_sigma >= kNegligibleXi;
    });
    const int near_end = hint[1] = run_end_near(h, negligible_end, count, hint[1], [&](double h_i) {
        return lowest_out >= h_i + peak_gap;
    });
    const int merge_end = hint[2] = run_end_near(
        h, near_end, count, hint[2], [&](double h_i) { return highest_out >= h_i + peak_gap; });
    const bool far_rising =
        far_run_rises(h + merge_end, count - merge_end, highest_out, inverse_sigma);

    const bound_kernels::PMinusSums merged = merged_pair_sums(
        t.h_out, h + near_end, merge_end - near_end, sigma, workspace.gap_near, workspace.gap_far);
    bound_kernels::PMinusSums out;
    // The largest p_i: 1/2 beats every p⁻ (at most φ(ξ*)/(ξ* + 1/ξ*) < 0.15); past the peak
    // (near run) p⁻ falls with the gap, so the last position's is the largest, before it (far
    // run) p⁻ rises, so the first's. The negligible run's p_i < 2⁻⁶⁰ cannot move eq. (13).
    out.largest = t.half_count > 0 ? 0.5 : merged.largest;
    if (near_end > negligible_end)
        out.largest = std::max(
            out.largest, bound_kernels::p_minus_at((lowest_out - h[near_end - 1]) * inverse_sigma));
    // Rising, the far run's sum comes from its power sums (O(1) in its length); its largest p_i
    // is its first position's, below.
    bound_kernels::PMinusSums far;
    if (!far_rising)
        far = bound_kernels::anchored_p_minus_sums(h + merge_end, count - merge_end, highest_out,
                                                   inverse_sigma);
    else if (with_sum)
        far.complement_sum =
            far_moments::complement_sum(t.far, h, merge_end, highest_out, inverse_sigma);
    if (merge_end < count)
        out.largest =
            std::max(out.largest, far_rising ? bound_kernels::rising_p_minus_at(
                                                   (highest_out - h[merge_end]) * inverse_sigma)
                                             : far.largest);
    if (!with_sum) return out;
    const bound_kernels::PMinusSums near = bound_kernels::anchored_p_minus_sums(
        h + negligible_end, near_end - negligible_end, lowest_out, inverse_sigma);
    out.complement_sum = static_cast<double>(negligible_end) + 0.5 * t.half_count +
                         near.complement_sum + merged.complement_sum + far.complement_sum;
    return out;
}

double BoundTerms::union_sum_at(const PerSize& t, double d, double kappa) {
    const double tail_delta = tail_factor(t.delta, t.scale, kappa, d);
    const double tail_delta0 = tail_factor(t.delta0, t.scale, kappa, d);
    return union_tail(t.n_out, t.N, t.sink_selected, tail_delta, tail_delta0);
}

bound_kernels::PMinusSums BoundTerms::upper_sums_at(const PerSize& t, double d, double kappa,
                                                    PairWorkspace& workspace, bool with_sum) {
    const double sigma = pair_sigma(t.scale, kappa, d);
    if (sigma > 0) return pair_sums(t, sigma, workspace, with_sum);
    // d = ∞ (σ = 0 with B > 0): every positive gap gives p⁻ → 0; B = 0: all 1/2.
    const int halves = t.scale > 0 ? t.half_count : t.N;
    bound_kernels::PMinusSums sums;
    sums.largest = halves > 0 ? 0.5 : 0.0;
    sums.complement_sum = static_cast<double>(t.N - halves) + 0.5 * halves;
    return sums;
}

BoundRow BoundTerms::row_at(const PerSize& t, double d, double kappa, bool lower_only,
                            PairWorkspace& workspace) {
    BoundRow row;
    row.N = t.N;
    row.sink_selected = t.sink_selected;
    row.delta = t.delta;
    row.delta0 = t.delta0;
    row.scale = t.scale;
    row.deciding_xi_le0 = t.half_count > 0;
    if (t.trivial) {
        set_trivial(row);
        return row;
    }
    const double union_sum = union_sum_at(t, d, kappa);
    if (lower_only) {
        finish_lower_only(row, union_sum);
        return row;
    }
    const bound_kernels::PMinusSums sums = upper_sums_at(t, d, kappa, workspace, true);
    finish_row(row, union_sum, sums.largest, sums.complement_sum);
    if (t.identity_upper) set_identity_upper(row);
    return row;
}

EnvelopeBounds BoundTerms::envelope_at(const PerSize& t, double d, double kappa,
                                       PairWorkspace& workspace, bool with_recall) {
    EnvelopeBounds e;
    if (t.trivial) return e;
    const double union_sum = union_sum_at(t, d, kappa);
    e.precision_lower = precision_lower_bound(union_sum);
    const bound_kernels::PMinusSums sums = upper_sums_at(t, d, kappa, workspace, with_recall);
    e.precision_upper = t.identity_upper ? 1.0 : precision_upper_bound(sums.largest, t.N);
    if (!with_recall) {
        e.recall_lower = e.recall_upper = kNaN;
        return e;
    }
    e.recall_lower = recall_lower_bound(union_sum);
    e.recall_upper = recall_upper_bound(sums.complement_sum, t.N);
    if (t.identity_upper) e.recall_upper = 1;
    return e;
}

std::vector<BoundRow> BoundTerms::evaluate(double d, double kappa, bool lower_only) const {
    return evaluate_many(d, {kappa}, lower_only).front();
}

template <class Value, class At>
std::vector<std::vector<Value>> BoundTerms::over_batch(double d, const std::vector<double>& kappas,
                                                       const char* function, At at) const {
    for (double kappa : kappas) {
        BoundSettings settings;
        settings.d = d;
        settings.kappa = kappa;
        validate_settings(settings, function);
    }
    std::vector<std::vector<Value>> out(kappas.size(), std::vector<Value>(terms_.size()));
    PairWorkspace workspace;
    // Sizes outside, κ inside: a size's h arrays are read from memory once for every κ.
    for (std::size_t s = 0; s < terms_.size(); ++s) {
        std::fill(std::begin(workspace.run_ends), std::end(workspace.run_ends), 0);
        for (std::size_t k = 0; k < kappas.size(); ++k)
            out[k][s] = at(terms_[s], kappas[k], workspace);
    }
    return out;
}

std::vector<std::vector<BoundRow>> BoundTerms::evaluate_many(double d,
                                                             const std::vector<double>& kappas,
                                                             bool lower_only) const {
    return over_batch<BoundRow>(d, kappas, "BoundTerms::evaluate",
                                [&](const PerSize& t, double kappa, PairWorkspace& workspace) {
                                    return row_at(t, d, kappa, lower_only, workspace);
                                });
}

std::vector<std::vector<EnvelopeBounds>> BoundTerms::envelopes_many(
    double d, const std::vector<double>& kappas, bool with_recall) const {
    return over_batch<EnvelopeBounds>(
        d, kappas, "BoundTerms::envelopes_many",
        [&](const PerSize& t, double kappa, PairWorkspace& workspace) {
            return envelope_at(t, d, kappa, workspace, with_recall);
        });
}

std::vector<BoundRow> bounds_all(const HeadModel& model, const std::vector<int>& sizes,
                                 const BoundSettings& settings) {
    validate_settings(settings, "bounds_all");
    return BoundTerms(model, sizes, settings.variant, settings.ranking)
        .evaluate(settings.d, settings.kappa);
}

}  // namespace attngeo::theory
