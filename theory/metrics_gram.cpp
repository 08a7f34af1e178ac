// The certified all-N Gram path of the selection metrics (docs/design.md §2): the Euclidean sweep
// over a double or single-precision Gram matrix, the cosine decider (double only), and the entry
// points on tokens and on a double Gram matrix. metrics_single.cpp adds the single-precision
// entries.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "common/errors.hpp"
#include "common/sum_of_squares.hpp"
#include "theory/exact_distance.hpp"
#include "theory/gram_kernels.hpp"
#include "theory/metrics.hpp"
#include "theory/metrics_detail.hpp"

namespace attngeo::theory {
namespace detail {
namespace {

// For selection size N (tokens ranked, I_N = rows 0..N−1) the Gram path evaluates the shifted
// distances v_ℓ = G_ℓℓ − 2c_ℓ = D_ℓ − ‖s‖², c_ℓ = Σ_{k<N} G_kℓ. ‖s‖² is common to every token,
// so the comparisons D_j ≤ max_i D_i and D_i ≤ min_j D_j can be made on v, and the target is v
// in exact arithmetic (docs/design.md §2), not any double evaluation of D. The Gram matrix may be
// double (G̃ = YYᵀ, any summation order) or single precision (G̃ = fl32(σY)·fl32(σY)ᵀ with σ = 2^e,
// everything then in σ-scaled units); its entries satisfy |G̃_kℓ − G_kℓ| ≤ g‖y_k‖‖y_ℓ‖ + a₀
// with g = γ^(32)_{d+2}, a₀ = 4d·2⁻¹⁵⁰ (float: rounding σy, then the dot product, subnormals
// included) or g = γ_d (folded into γ' below), a₀ = d·2⁻¹⁰⁷⁴ (double). With u = 2⁻⁵³,
// γ_m = m·u/(1 − m·u), A = Σ_{k<N} ‖y_k‖ and γ' = γ_{4N+2d+8} (≥ γ_N of the running sums
// plus γ_d, with room), per token
//   |ṽ_ℓ − v_ℓ| ≤ (g + γ')(‖y_ℓ‖² + 2A‖y_ℓ‖) + (2N+1)·1.01·a₀,
// with no term in A² (the bound is on distances to the exact s, not on any rounded D of
// another path), so a tail token's band is relative to its own norm. The band e_ℓ is twice that
// plus kTieBandCoefficient·(‖y_ℓ‖² + 2A‖y_ℓ‖) ≥ τ·w_ℓ(N) (the exact-decision threshold of
// metrics.hpp), evaluated at the largest ‖y‖ of ℓ's block of gram_kernels::kBandBlock tokens.
// The spare factor absorbs rounding e, v ± e and the thresholds t ∓ e: every threshold t is
// some token's v_j ± e_j, and u·|t| is far below e_j (γ' ≥ 16u). So max_i v_i lies in
// [max(v − e), max(v + e)] over the selected and min_j v_j in [min(v − e), min(v + e)] over the
// rest; a token whose band clears the other side's bracket is decided with a margin above
// τ·w_ℓ (so it is not an exact decision), and the others go to ExactShiftedDistances, which
// finds the exact extreme token and decides them exactly, counting those within τ·w_ℓ. The
// cosine distance (double Gram only) gets a per-token bound on a quotient (approximate_cosine)
// and falls back to the reference's double kernel, as docs/design.md §2 leaves it.

// R_b = max of row_norm over each block of gram_kernels::kBandBlock tokens (the last may be
// short): the norms the sweeps' bands are evaluated at.
std::vector<double> band_block_norms(const std::vector<double>& row_norm) {
    const std::size_t block = gram_kernels::kBandBlock;
    std::vector<double> largest((row_norm.size() + block - 1) / block, 0.0);
    for (std::size_t l = 0; l < row_norm.size(); ++l)
        largest[l / block] = std::max(largest[l / block], row_norm[l]);
    return largest;
}

// The Euclidean distance: one sweep over the n tokens per N (gram_kernels::sweep) reads column
// N−1 of G̃ from its lower triangle only (the part above the diagonal through upper_strip, so
// the matrix is never mirrored), moves v from step N−1 to N, brackets the extremes of step N,
// counts K_out(N) against the selected bracket and, on the values before the update, K_in of
// the step before (which needs step N−1's bracket of the rest, known only after its own
// sweep). v alternates between two buffers so that step N−1's values stay readable until its
// undecided tokens are settled with the reference kernel; s advances only after that.
template <class Scalar>
class EuclideanSweep {
  public:
    // `lower` holds the lower triangle of G̃ column-major with leading dimension ld ≥ n: the
    // Gram matrix of σ·ranked, σ = 2^scale_exponent (0 for a double G).
    EuclideanSweep(const RowMatrix& ranked, const Scalar* lower, int ld, int scale_exponent,
                   GramEntryError entry_error, bool radii, const std::vector<double>* row_norms)
        : ranked_(ranked),
          lower_(lower),
          ld_(ld),
          radii_(radii),
          n_(static_cast<int>(ranked.rows())),
          d_(static_cast<int>(ranked.cols())),
          stride_((n_ + 7) / 8 * 8),
          strip_(static_cast<std::size_t>(8) * stride_),
          exact_(ranked),
          row_norm_(row_norms != nullptr ? *row_norms : band_row_norms(ranked, scale_exponent)),
          block_norm_(band_block_norms(row_norm_)),
          entry_relative_(entry_error.relative),
          entry_absolute_(entry_error.absolute),
          candidates_(n_) {
        for (auto& v : values_)
            v.resize(n_);
        for (int l = 0; l < n_; ++l)  // v at N = 0: G_ℓℓ
            values_[0][l] = static_cast<double>(lower_[l + static_cast<std::ptrdiff_t>(l) * ld_]);
    }

    // One row per size in `wanted` (ascending, no repeats), in that order.
    void run(const std::vector<int>& wanted, std::vector<SelectionMetrics>& rows) {
        rows.clear();
        std::size_t next = 0;
        for (int N = 1; N <= n_ && next < wanted.size(); ++N) {
            const bool want = wanted[next] == N;
            step(N, want, rows);
            if (want) ++next;
        }
        if (held_) {  // the last wanted N < n: its K_in from one more pass over its values
            const double* v = values_[current_].data();
            const gram_kernels::CountPair inside = gram_kernels::count_band(
                v, block_norm_.data(), held_band_, 0, held_row_.N, held_rest_.low, held_rest_.high);
            settle_held(v, inside, rows);
        }
    }

  private:
    static constexpr double kUnset = std::numeric_limits<double>::quiet_NaN();

    gram_kernels::Band band(int N) const {
        const double A = selected_norm_sum_;
        const double gamma = gamma_bound(4.0 * N + 2.0 * d_ + 8.0, kUnitRoundoff);
        gram_kernels::Band b;
        b.w = 2 * (entry_relative_ + gamma) + kTieBandCoefficient;
        b.q = 2 * A * b.w;
        // Kept normal: a subnormal addend costs a microcode assist in every band evaluation.
        b.c = std::max(2 * 1.01 * (2.0 * N + 1) * entry_absolute_, 0x1p-1022);
        return b;
    }

    // Step N: token k = N − 1 joins the selection.
    void step(int N, bool want, std::vector<SelectionMetrics>& rows) {
        const int k = N - 1;
        if (k % 8 == 0)
            gram_kernels::upper_strip(lower_, ld_, k, std::min(8, n_ - k), strip_.data(), stride_);
        const Scalar* upper = strip_.data() + static_cast<std::ptrdiff_t>(k % 8) * stride_;
        const Scalar* below = lower_ + static_cast<std::ptrdiff_t>(k) * ld_;  // G(ℓ, k), ℓ ≥ k
        selected_norm_sum_ += row_norm_[k];
        const gram_kernels::Band b = band(N);
        const double* v_old = values_[current_].data();
        double* v_new = values_[1 - current_].data();
        const double* block_norm = block_norm_.data();

        gram_kernels::SweepRequest selected;
        selected.band = b;
        selected.bracket = want;
        selected.count_before = held_;
        selected.before_band = held_band_;
        selected.before_low = held_rest_.low;
        selected.before_high = held_rest_.high;
        const gram_kernels::SweepResult kept =
            gram_kernels::sweep(v_old, v_new, upper, block_norm, selected, 0, k);
        selected.count_before = false;  // token k was not selected at N − 1
        const gram_kernels::SweepResult joined =
            gram_kernels::sweep(v_old, v_new, upper, block_norm, selected, k, N);
        gram_kernels::BandExtremes in;
        in.low = std::max(kept.extremes.low, joined.extremes.low);
        in.high = std::max(kept.extremes.high, joined.extremes.high);

        gram_kernels::SweepRequest rest;
        rest.band = b;
        rest.selected = false;
        rest.bracket = rest.count_after = want && N < n_;
        rest.after_low = in.low;
        rest.after_high = in.high;
        const gram_kernels::SweepResult outside =
            gram_kernels::sweep(v_old, v_new, below, block_norm, rest, N, n_);

        if (held_) settle_held(v_old, kept.before, rows);  // still at s(N − 1)
        exact_.set_size(N);
        current_ = 1 - current_;
        if (!want) return;

        // in.low ≤ max_i(D_i − ‖s‖²) ≤ in.high; outside.extremes brackets min_j(D_j − ‖s‖²).
        const double* v = v_new;
        SelectionMetrics m;
        m.N = N;
        int max_in_token = -1, min_out_token = -1;  // the exact extremes' tokens, when known
        if (radii_) {
            max_in_token = exact_max_selected(v, b, N, in.low);
            m.r_max = std::sqrt(std::max(exact_.radius_squared(max_in_token), 0.0));
        } else {
            m.r_max = m.r_min = kUnset;
        }
        if (N == n_) {
            finish_selection_row(m, n_);
            rows.push_back(m);
            return;
        }
        if (radii_) {
            min_out_token = exact_min_rest(v, b, N, outside.extremes.high);
            m.r_min = std::sqrt(std::max(exact_.radius_squared(min_out_token), 0.0));
        }
        if (outside.after.surely == outside.after.maybe) {
            m.K_out = outside.after.surely;
        } else {
            if (max_in_token < 0) max_in_token = exact_max_selected(v, b, N, in.low);
            m.K_out = outside.after.surely +
                      exact_count(v, b, N, n_, in.low, in.high, max_in_token, m.exact_decisions);
        }
        held_ = true;  // K_in(N) comes with the next sweep
        held_row_ = m;
        held_band_ = b;
        held_rest_ = outside.extremes;
        held_min_token_ = min_out_token;
    }

    // K_in of the held step from its counts on its own values v (s, the exact cache and the
    // bands still those of that step).
    void settle_held(const double* v, const gram_kernels::CountPair& inside,
                     std::vector<SelectionMetrics>& rows) {
        SelectionMetrics& m = held_row_;
        if (inside.surely == inside.maybe) {
            m.K_in = inside.surely;
        } else {
            if (held_min_token_ < 0)
                held_min_token_ = exact_min_rest(v, held_band_, m.N, held_rest_.high);
            m.K_in =
                inside.surely + exact_count(v, held_band_, 0, m.N, held_rest_.low, held_rest_.high,
                                            held_min_token_, m.exact_decisions);
        }
        finish_selection_row(m, n_);
        rows.push_back(m);
        held_ = false;
    }

    // The token of the exact max_i D_i over the selected [0, N): only tokens whose band
    // reaches the bracket's low end can be it.
    int exact_max_selected(const double* v, const gram_kernels::Band& b, int N,
                           double bracket_low) {
        const int found = gram_kernels::collect_band(v, block_norm_.data(), b, 0, N,
                                                     std::nextafter(bracket_low, -kInf), kInf,
                                                     candidates_.data());
        return exact_.extreme(candidates_.data(), found, true);
    }

    // The token of the exact min_j D_j over the rest [N, n): only tokens whose band reaches
    // the bracket's high end can be it.
    int exact_min_rest(const double* v, const gram_kernels::Band& b, int N, double bracket_high) {
        const int found = gram_kernels::collect_band(v, block_norm_.data(), b, N, n_, -kInf,
                                                     bracket_high, candidates_.data());
        return exact_.extreme(candidates_.data(), found, false);
    }

    // How many tokens of [begin, end) whose band meets [low, high] have D_ℓ ≤ D_threshold,
    // decided exactly; adds the exact decisions among them to `exact_decisions`. The rest of
    // the range was decided by bands that include τ·w_ℓ, so none of it is an exact decision.
    int exact_count(const double* v, const gram_kernels::Band& b, int begin, int end, double low,
                    double high, int threshold, int& exact_decisions) {
        const int found = gram_kernels::collect_band(v, block_norm_.data(), b, begin, end, low,
                                                     high, candidates_.data());
        int count = 0;
        for (int k = 0; k < found; ++k) {
            const ExactShiftedDistances::Comparison c = exact_.compare(candidates_[k], threshold);
            count += c.at_most;
            exact_decisions += c.exact;
        }
        return count;
    }

    const RowMatrix& ranked_;
    const Scalar* lower_;  // [n, n] column-major with leading dimension ld_, lower triangle read
    int ld_;
    bool radii_;  // false: counts only (the simulator), radii left NaN
    int n_, d_;
    int stride_;                     // row stride of strip_: n rounded up to 8
    std::vector<Scalar> strip_;      // [8, stride] rows k0..k0+7 of G̃ up to the diagonal
    std::vector<double> values_[2];  // [n] each: v at the step before and the step being made
    int current_ = 0;                // which of values_ holds the last finished step
    ExactShiftedDistances exact_;    // decides what the bands cannot, at the state's N
    std::vector<double> row_norm_;   // [n] σ‖y_ℓ‖
    std::vector<double> block_norm_;  // [⌈n / kBandBlock⌉] the bands' R_b, max σ‖y_ℓ‖ per block
    double entry_relative_ = 0;  // g: |G̃_kℓ − G_kℓ| ≤ g‖y_k‖‖y_ℓ‖ + a₀ (scaled units)
    double entry_absolute_ = 0;     // a₀
    double selected_norm_sum_ = 0;  // A = Σ_{k<N} σ‖y_k‖
    std::vector<int> candidates_;   // [n] undecided tokens of one bracket
    // The last wanted step whose K_in waits for the next sweep.
    bool held_ = false;
    SelectionMetrics held_row_;
    gram_kernels::Band held_band_;
    gram_kernels::BandExtremes held_rest_;  // its bracket of min_j over the rest
    int held_min_token_ = -1;               // its exact min_j's token, −1 until needed
};

// The cosine distance on a double Gram matrix with both triangles: running c_ℓ = ⟨s, y_ℓ⟩ from
// G's columns and a per-token bound on the quotient. The target is not exact arithmetic but
// the reference's double value D^ref_ℓ = 1 − fl(⟨y_ℓ, s̃⟩)/(fl‖y_ℓ‖·fl‖s̃‖ + ε) (docs/design.md §2
// keeps the floating-point rule for the cosine), so bound_ℓ must cover |D̃_ℓ − D^ref_ℓ| with the
// errors of both evaluations. With u = 2⁻⁵³, A = Σ_{k<N} ‖y_k‖ and γ_m ≈ m·u (Higham §3.1):
// - the dot: c̃_ℓ = Σ_{k<N} G̃_kℓ is within (γ_d + γ_N)·A‖y_ℓ‖ of ⟨s, y_ℓ⟩ (each G̃ entry
//   within γ_d‖y_k‖‖y_ℓ‖, then N additions); the reference's s̃ is within γ_N Σ_k |y_kt| per
//   component and its dot adds γ_d, so by Cauchy–Schwarz it is within about the same: the two
//   differ by about 2(d + N)u·A‖y_ℓ‖;
// - ‖s‖²: the running Σ (2c̃_k + G̃_kk) is within about (d + 2N)u·A² (γ_d on the entries, γ_N
//   in c̃ and γ_N in the outer sum), the reference's fl Σ_t s̃_t² too (2γ_N from s̃, γ_d from the
//   sum): together (2d + 4N)u·A²; ‖s‖ then by |√a − √b| ≤ min(√|a − b|, |a − b|/√a);
// - ‖y_ℓ‖: both squares are within γ_d‖y_ℓ‖², so the roots differ by about γ_d‖y_ℓ‖ plus one
//   rounding each: (d + 2)u·‖y_ℓ‖.
// error_factor() = 2u(2d + 8N + 48) is at least twice each of these coefficients, which absorbs
// the 1/(1 − m·u) of γ_m, the second-order terms and the rounding of the bounds themselves. The
// denominator's error follows from |ab − a'b'| ≤ |a||b − b'| + |b||a − a'| + |a − a'||b − b'|
// plus two roundings on each side (product and + ε: 4u·denominator); the quotient's from
// |q − q'| ≤ (|dot − dot'| + |q|·|den − den'|)/den' with den' ≥ den − error (when that is not
// positive the bound is +∞); the division and 1 − q round once each on each side: 4u(1 + |q|),
// taken as 8u(1 + |q|). Products that underflow add at most (d + N)·2⁻¹⁰⁷⁴ to a dot, which
// divided by a denominator of at least ε = 1e-12 stays far inside that 8u term. A token whose
// interval [D̃ − bound, D̃ + bound] cannot decide a comparison is evaluated with the reference's
// kernel on s̃ (exact()), so every count equals the reference's.
class CosineDecider {
  public:
    CosineDecider(const RowMatrix& ranked, const GramView<double>& gram)
        : ranked_(ranked),
          gram_(gram),
          n_(static_cast<int>(ranked.rows())),
          d_(static_cast<int>(ranked.cols())),
          running_dot_(Eigen::ArrayXd::Zero(n_)),
          diagonal_(gram.diagonal().array()),
          s_(d_, 0.0),
          row_norm_(band_row_norms(ranked, 0)),
          exact_(n_, kUnset) {}

    // Adds ranked token N−1 to the selection, making the state that of size N.
    void add_next() {
        const int k = size_++;
        s_norm2_approx_ += 2 * running_dot_[k] + gram_(k, k);
        running_dot_ += gram_.col(k).array();
        const double* y = ranked_.row(k).data();
        for (int t = 0; t < d_; ++t)
            s_[t] += y[t];
        selected_norm_sum_ += row_norm_[k];
        s_norm_exact_ = -1;
    }

    SelectionMetrics evaluate() {
        for (int l : touched_)
            exact_[l] = kUnset;
        touched_.clear();
        const int N = size_;
        approximate_cosine();
        SelectionMetrics m;
        m.N = N;
        const double max_in = interval_extreme(0, N, true);
        m.r_max = std::sqrt(std::max(max_in, 0.0));
        if (N < n_) {
            const double min_out = interval_extreme(N, n_, false);
            m.r_min = std::sqrt(std::max(min_out, 0.0));
            m.K_out = interval_count_at_most(N, n_, max_in);
            m.K_in = interval_count_at_most(0, N, min_out);
        }
        finish_selection_row(m, n_);
        return m;
    }

  private:
    static constexpr double kUnset = std::numeric_limits<double>::quiet_NaN();

    double error_factor() const { return 2 * kUnitRoundoff * (2.0 * d_ + 8.0 * size_ + 48.0); }

    void approximate_cosine() {
        approx_.resize(n_);
        bound_.resize(n_);
        const double factor = error_factor();
        const double A = selected_norm_sum_;
        const double s_norm2 = std::max(s_norm2_approx_, 0.0);
        const double s_norm = std::sqrt(s_norm2);
        const double s_norm2_error = factor * A * A;
        const double s_norm_error = s_norm > 0
                                        ? std::min(std::sqrt(s_norm2_error), s_norm2_error / s_norm)
                                        : std::sqrt(s_norm2_error);
        for (int l = 0; l < n_; ++l) {
            const double y_norm = std::sqrt(std::max(diagonal_[l], 0.0));
            const double y_norm_error = factor * row_norm_[l];
            const double dot = running_dot_[l];
            const double dot_error = factor * A * row_norm_[l];
            const double denominator = y_norm * s_norm + kCosineEpsilon;
            const double denominator_error = y_norm * s_norm_error + s_norm * y_norm_error +
                                             s_norm_error * y_norm_error +
                                             4 * kUnitRoundoff * denominator;
            const double quotient = dot / denominator;
            approx_[l] = 1.0 - quotient;
            const double low = denominator - denominator_error;
            bound_[l] = low > 0 ? (dot_error + std::abs(quotient) * denominator_error) / low +
                                      8 * kUnitRoundoff * (1 + std::abs(quotient))
                                : kInf;
        }
    }

    double interval_extreme(int begin, int end, bool want_max) {
        double threshold = want_max ? -kInf : kInf;
        for (int l = begin; l < end; ++l) {
            threshold = want_max ? std::max(threshold, approx_[l] - bound_[l])
                                 : std::min(threshold, approx_[l] + bound_[l]);
        }
        double best = want_max ? -kInf : kInf;
        for (int l = begin; l < end; ++l) {
            const bool candidate = want_max ? approx_[l] + bound_[l] >= threshold
                                            : approx_[l] - bound_[l] <= threshold;
            if (candidate) best = want_max ? std::max(best, exact(l)) : std::min(best, exact(l));
        }
        return best;
    }

    int interval_count_at_most(int begin, int end, double limit) {
        int count = 0;
        for (int l = begin; l < end; ++l) {
            if (approx_[l] + bound_[l] <= limit)
                ++count;
            else if (approx_[l] - bound_[l] > limit)
                continue;
            else if (exact(l) <= limit)
                ++count;
        }
        return count;
    }

    double exact(int l) {
        if (std::isnan(exact_[l])) {
            if (s_norm_exact_ < 0) s_norm_exact_ = euclidean_norm(s_.data(), d_);
            exact_[l] = cosine_distance(s_.data(), s_norm_exact_, ranked_.row(l).data(), d_);
            touched_.push_back(l);
        }
        return exact_[l];
    }

    const RowMatrix& ranked_;
    GramView<double> gram_;
    int n_, d_;
    int size_ = 0;
    Eigen::ArrayXd running_dot_;    // [n] c_ℓ = ⟨s(N), y_ℓ⟩ from G
    Eigen::ArrayXd diagonal_;       // [n] G_ℓℓ = ‖y_ℓ‖²
    std::vector<double> s_;         // [d] s(N) summed in rank order, as the reference does
    std::vector<double> row_norm_;  // [n] ‖y_ℓ‖
    double s_norm2_approx_ = 0;
    double selected_norm_sum_ = 0;  // A = Σ_{k<N} ‖y_k‖
    double s_norm_exact_ = -1;
    std::vector<double> approx_, bound_, exact_;  // [n] each
    std::vector<int> touched_;
};

}  // namespace

template <class Scalar>
void metrics_from_gram(const RowMatrix& ranked, const GramView<Scalar>& gram, int scale_exponent,
                       GramEntryError entry_error, const std::vector<int>& sizes, Distance distance,
                       std::vector<SelectionMetrics>& out, bool radii, const char* function,
                       const std::vector<double>* row_norms) {
    const int n = static_cast<int>(ranked.rows());
    check_selection_sizes(sizes, n, function);
    if (row_norms != nullptr && row_norms->size() != static_cast<std::size_t>(n)) {
        throw_domain_error(function, std::to_string(row_norms->size()) + " row norms for " +
                                         std::to_string(n) + " rows");
    }
    if (gram.rows() != n || gram.cols() != n) {
        throw_domain_error(function, "Gram matrix is " + std::to_string(gram.rows()) + "x" +
                                         std::to_string(gram.cols()) + ", expected " +
                                         std::to_string(n) + "x" + std::to_string(n));
    }
    out.clear();
    const std::vector<int> wanted = ascending_unique(sizes);
    std::vector<SelectionMetrics> sorted_rows;
    sorted_rows.reserve(wanted.size());
    if (distance == Distance::euclidean) {
        EuclideanSweep<Scalar>(ranked, gram.data(), static_cast<int>(gram.outerStride()),
                               scale_exponent, entry_error, radii, row_norms)
            .run(wanted, sorted_rows);
    } else if constexpr (std::is_same_v<Scalar, double>) {
        CosineDecider decider(ranked, gram);  // both triangles
        std::size_t next = 0;
        for (int N = 1; N <= n && next < wanted.size(); ++N) {
            decider.add_next();
            if (N != wanted[next]) continue;
            sorted_rows.push_back(decider.evaluate());
            ++next;
        }
    } else {
        // approximate_cosine's bound has no float32 term (nor the σ-scaled epsilon).
        throw std::logic_error(std::string(function) +
                               ": the cosine distance needs a double Gram matrix");
    }
    rows_in_caller_order(sizes, wanted, sorted_rows, out);
}

template void metrics_from_gram<double>(const RowMatrix&, const GramView<double>&, int,
                                        GramEntryError, const std::vector<int>&, Distance,
                                        std::vector<SelectionMetrics>&, bool, const char*,
                                        const std::vector<double>*);
template void metrics_from_gram<float>(const RowMatrix&, const GramView<float>&, int,
                                       GramEntryError, const std::vector<int>&, Distance,
                                       std::vector<SelectionMetrics>&, bool, const char*,
                                       const std::vector<double>*);

}  // namespace detail

using detail::GramView;

// σ‖y_ℓ‖ for the error bands. Only the bands use these norms, so any sum order is fine: its
// rounding (≤ d·u relative) is far inside the bands' spare factor of 2.
std::vector<double> band_row_norms(const RowMatrix& ranked, int scale_exponent) {
    const int d = static_cast<int>(ranked.cols());
    std::vector<double> scaled(ranked.rows());
    for (Eigen::Index l = 0; l < ranked.rows(); ++l)
        scaled[l] = std::ldexp(std::sqrt(sum_of_squares(ranked.row(l).data(), d)), scale_exponent);
    return scaled;
}

namespace {

// A double Gram matrix computed in any order: γ_d relative (folded into the band's γ', so 0
// here) and d subnormal units for the products that underflow.
detail::GramEntryError double_gram_entry_error(int d) {
    return {0.0, d * std::numeric_limits<double>::denorm_min()};
}

}  // namespace

void selection_metrics_from_gram(const RowMatrix& ranked, const Eigen::MatrixXd& gram,
                                 const std::vector<int>& sizes, Distance distance,
                                 std::vector<SelectionMetrics>& out, bool radii) {
    detail::metrics_from_gram(
        ranked,
        GramView<double>(gram.data(), gram.rows(), gram.cols(), Eigen::OuterStride<>(gram.rows())),
        0, double_gram_entry_error(static_cast<int>(ranked.cols())), sizes, distance, out, radii,
        "selection_metrics_from_gram", nullptr);
}

std::vector<SelectionMetrics> selection_metrics_gram(const TokenGeometry& tokens,
                                                     const std::vector<int>& sizes, Ranking ranking,
                                                     Distance distance) {
    validate_token_geometry(tokens, "selection_metrics_gram");
    const int n = static_cast<int>(tokens.alpha.size());
    const int d = static_cast<int>(tokens.values.cols());
    detail::check_selection_sizes(sizes, n, "selection_metrics_gram");
    const std::vector<int> order = selection_order(selection_scores(tokens, ranking));
    RowMatrix ranked(n, d);
    for (int k = 0; k < n; ++k)
        ranked.row(k) = tokens.alpha[order[k]] * tokens.values.row(order[k]);
    Eigen::MatrixXd gram = Eigen::MatrixXd::Zero(n, n);
    gram.selfadjointView<Eigen::Lower>().rankUpdate(ranked);
    symmetrize_from_lower(gram);
    std::vector<SelectionMetrics> rows;
    selection_metrics_from_gram(ranked, gram, sizes, distance, rows);
    return rows;
}

}  // namespace attngeo::theory
