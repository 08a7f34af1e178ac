// Tiered exact comparisons of shifted Euclidean distances; see exact_distance.hpp for the
// definition of an exact decision and the bound of the double tier.
// GCC 12 warns maybe-uninitialized inside cpp_int's limb copies after inlining: a false
// positive in the library header, not in this file's use of it.
#if defined(__GNUC__) && !defined(__clang__)  // clang has no such warning
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include "theory/exact_distance.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "common/errors.hpp"
#include "theory/gram_kernels.hpp"
#include "theory/metrics.hpp"

namespace attngeo::theory {
namespace {

constexpr double kUnitRoundoff = 0x1p-53;
// The comparisons of the double tier add this relative room to τ·w so that a margin decided
// there exceeds τ·w despite the rounding of v̂ ± e ± τ·w.
constexpr double kTieRoom = 1 + 0x1p-40;
// The absolute part of the double tier's bounds: at least the products' underflow (≤ 2⁻¹⁰⁷⁵
// each, fewer than 2⁵⁰ of them), and a normal number, since subnormal operands cost a
// microcode assist per operation on x86.
constexpr double kAbsoluteError = 0x1p-1022;

double gamma_of(double m) {
    return m * kUnitRoundoff / (1 - m * kUnitRoundoff);
}

// x = m·2^(e − 53) with an integer |m| < 2^53 (x finite, non-zero): its mantissa and exponent.
std::int64_t integer_mantissa(double x, int& exponent) {
    const double fraction = std::frexp(x, &exponent);
    return static_cast<std::int64_t>(std::ldexp(fraction, 53));
}

}  // namespace

ExactShiftedDistances::ExactShiftedDistances(const RowMatrix& ranked)
    : ranked_(ranked),
      n_(static_cast<int>(ranked.rows())),
      d_(static_cast<int>(ranked.cols())),
      s_(d_, 0.0),
      s_abs_(d_, 0.0) {}

// The per-token caches, sized on first use: most inputs of the fast paths never need them.
void ExactShiftedDistances::allocate(bool exact) {
    if (approx_step_.empty()) {
        approx_.resize(n_);
        approx_step_.assign(n_, -1);
    }
    if (exact && exact_step_.empty()) {
        exact_.resize(n_);
        exact_step_.assign(n_, -1);
    }
}

// p_ℓ, computed on first use: most tokens never need a tie scale.
double ExactShiftedDistances::power(int l) const {
    if (power_.empty()) power_.assign(n_, -1.0);
    if (power_[l] < 0) {
        double largest = 0;
        const double* y = ranked_.row(l).data();
        for (int t = 0; t < d_; ++t)
            largest = std::max(largest, std::abs(y[t]));
        int exponent = 0;
        std::frexp(largest, &exponent);  // largest ∈ [2^(exponent−1), 2^exponent)
        power_[l] = largest > 0 ? std::ldexp(1.0, exponent) : 0.0;
    }
    return power_[l];
}

void ExactShiftedDistances::set_size(int N) {
    if (N < 0 || N > n_)
        throw_domain_error("ExactShiftedDistances::set_size",
                           "N = " + std::to_string(N) + " outside 0.." + std::to_string(n_));
    if (N == size_) return;
    size_ = N;
    ++step_;
}

// P_N catches up lazily, always as the same sum in the same order (restarted when N shrinks).
double ExactShiftedDistances::tie_scale(int l) const {
    if (powered_rows_ > size_) {
        power_sum_ = 0;
        powered_rows_ = 0;
    }
    for (; powered_rows_ < size_; ++powered_rows_)
        power_sum_ += power(powered_rows_);
    return kTieThreshold * power(l) * (power(l) + 2 * power_sum_);
}

// s̃ and Σ|y| catch up with the selection in one pass over the new rows when both are behind
// by the same rows; Σ_t Σ|y| is retotalled only when a row was added.
void ExactShiftedDistances::catch_up_double(bool absolute) {
    if (summed_rows_ > size_) {
        std::fill(s_.begin(), s_.end(), 0.0);
        summed_rows_ = 0;
    }
    if (absolute && absolute_rows_ > size_) {
        std::fill(s_abs_.begin(), s_abs_.end(), 0.0);
        absolute_rows_ = 0;
        absolute_total_ = 0;
    }
    const bool absolute_behind = absolute && absolute_rows_ < size_;
    if (absolute_behind && absolute_rows_ == summed_rows_) {
        gram_kernels::add_rows(ranked_.row(summed_rows_).data(), size_ - summed_rows_, d_,
                               s_.data(), s_abs_.data());
        summed_rows_ = absolute_rows_ = size_;
        total_absolute();
        return;
    }
    if (summed_rows_ < size_) {
        gram_kernels::add_rows(ranked_.row(summed_rows_).data(), size_ - summed_rows_, d_,
                               s_.data(), nullptr);
        summed_rows_ = size_;
    }
    if (absolute_behind) {
        gram_kernels::add_rows(ranked_.row(absolute_rows_).data(), size_ - absolute_rows_, d_,
                               nullptr, s_abs_.data());
        absolute_rows_ = size_;
        total_absolute();
    }
}

void ExactShiftedDistances::total_absolute() {
    absolute_total_ = 0;
    for (int t = 0; t < d_; ++t)
        absolute_total_ += s_abs_[t];
}

// v̂ = Σ_t y_t·z_t, z_t = fl(y_t − 2s̃_t). With a_t = Σ_k |y_kt|: |s̃_t − s_t| ≤ γ_{N−1}a_t, so
// |v̂ − v| ≤ γ_d·Σ|y_t z_t| + u·Σ|y_t z_t|/(1 − u) + 2γ_{N−1}·Σ|y_t|a_t. The bound is doubled
// (covering the rounding of the two sums that evaluate it and of v̂ ± e) and widened by two
// more roundings of |v̂| ≤ Σ|y_t z_t|; products that underflow add at most 2⁻¹⁰⁷⁵ each
// (kAbsoluteError). γ_d bounds a sum of d terms in any order, so the lanes of
// gram_kernels::shifted_value_sums (fused products: fewer roundings still) keep it rigorous.
const ExactComparisons::Approximate& ExactShiftedDistances::approximate(int l) {
    allocate(false);
    if (approx_step_[l] == step_) return approx_[l];
    catch_up_double(true);
    const auto [value, magnitude, across, largest] =
        gram_kernels::shifted_value_sums(ranked_.row(l).data(), s_.data(), s_abs_.data(), d_);
    Approximate& a = approx_[l];
    a.value = value;
    // τ·w_ℓ without P_N (which needs every selected row's p): P_N ≤ 2Σ_k max_t|y_kt| ≤
    // 2Σ_t a_t, and Σ_t a_t is computed with relative error below 2⁻³⁰ (N + d < 2²⁰).
    int exponent = 0;
    std::frexp(largest, &exponent);
    const double p = largest > 0 ? std::ldexp(1.0, exponent) : 0.0;
    a.tie_room = kTieThreshold * p * (p + 4 * absolute_total_ * (1 + 0x1p-30)) * kTieRoom;
    a.error =
        2 * (gamma_of(d_ + 4.0) * magnitude + 2 * gamma_of(size_ + 1.0) * across) + kAbsoluteError;
    approx_step_[l] = step_;
    return a;
}

void ExactShiftedDistances::convert_row(int k) {
    if (!scaled_) {
        // F = −(lowest exponent of any entry's last mantissa bit), so y·2^F is an integer.
        int lowest = std::numeric_limits<int>::max();
        for (Eigen::Index i = 0; i < ranked_.size(); ++i) {
            const double x = ranked_.data()[i];
            if (x != 0) lowest = std::min(lowest, std::ilogb(x) - 52);
        }
        scale_ = lowest == std::numeric_limits<int>::max() ? 0 : -lowest;
        scaled_ = true;
        rows_.resize(n_);
        s_exact_.assign(d_, BigInt(0));
    }
    if (!rows_[k].empty()) return;
    rows_[k].resize(d_);
    const double* y = ranked_.row(k).data();
    for (int t = 0; t < d_; ++t) {
        if (y[t] == 0) continue;
        int exponent = 0;
        const std::int64_t mantissa = integer_mantissa(y[t], exponent);
        rows_[k][t] = BigInt(mantissa) << (exponent - 53 + scale_);
    }
}

void ExactShiftedDistances::catch_up_exact() {
    if (exact_rows_ > size_) {
        for (auto& x : s_exact_)
            x = 0;
        exact_rows_ = 0;
    }
    for (; exact_rows_ < size_; ++exact_rows_) {
        convert_row(exact_rows_);
        for (int t = 0; t < d_; ++t)
            s_exact_[t] += rows_[exact_rows_][t];
    }
}

const ExactComparisons::BigInt& ExactShiftedDistances::exact(int l) {
    allocate(true);
    if (exact_step_[l] == step_) return exact_[l];
    convert_row(l);
    catch_up_exact();
    BigInt sum = 0;
    for (int t = 0; t < d_; ++t) {
        const BigInt& y = rows_[l][t];
        if (y != 0) sum += y * (y - 2 * s_exact_[t]);
    }
    exact_[l] = std::move(sum);
    exact_step_[l] = step_;
    return exact_[l];
}

int ExactComparisons::extreme(const int* candidates, int count, bool want_max) {
    if (count < 1) throw_domain_error("ExactComparisons::extreme", "no candidate tokens");
    if (count == 1) return candidates[0];
    // The double tier first: only tokens whose interval reaches the best bound can be extreme.
    double bound = want_max ? -std::numeric_limits<double>::infinity()
                            : std::numeric_limits<double>::infinity();
    for (int c = 0; c < count; ++c) {
        const Approximate& a = approximate(candidates[c]);
        bound = want_max ? std::max(bound, a.value - a.error) : std::min(bound, a.value + a.error);
    }
    int best = -1;
    for (int c = 0; c < count; ++c) {
        const int l = candidates[c];
        const Approximate& a = approximate(l);
        const bool contender = want_max ? a.value + a.error >= bound : a.value - a.error <= bound;
        if (!contender) continue;
        if (best < 0) {
            best = l;
            continue;
        }
        const BigInt& candidate = exact(l);
        const BigInt& incumbent = exact(best);
        const bool better = want_max ? candidate > incumbent : candidate < incumbent;
        if (better || (candidate == incumbent && l < best)) best = l;
    }
    return best;
}

ExactComparisons::Comparison ExactComparisons::compare(int l, int m) {
    const Approximate& a = approximate(l);
    const Approximate& b = approximate(m);
    // a.tie_room ≥ τ·w_ℓ·kTieRoom: a margin decided here is above τ·w_ℓ.
    Comparison result;
    if (a.value + a.error + a.tie_room < b.value - b.error) {
        result.at_most = true;
        return result;
    }
    if (a.value - a.error - a.tie_room > b.value + b.error) return result;
    const double tie = tie_scale(l);
    const BigInt margin = exact(l) - exact(m);
    result.at_most = margin <= 0;
    if (tie == 0) {
        result.exact = margin == 0;
        return result;
    }
    // |margin|·2^−scale ≤ τ·w with τ·w = mantissa·2^(exponent − 53), compared as integers.
    int exponent = 0;
    const BigInt limit = BigInt(integer_mantissa(tie, exponent));
    const int shift = exponent - 53 + exact_scale_exponent();
    const BigInt magnitude = abs(margin);
    result.exact = shift >= 0 ? magnitude <= (limit << shift) : (magnitude << -shift) <= limit;
    return result;
}

double ExactShiftedDistances::radius_squared(int l) {
    catch_up_double(false);
    return squared_distance(s_.data(), ranked_.row(l).data(), d_);
}

ExactGramDistances::ExactGramDistances(const Eigen::MatrixXd& gram)
    : gram_(gram),
      n_(static_cast<int>(gram.rows())),
      running_(n_, 0.0),
      running_abs_(n_, 0.0),
      approx_(n_),
      approx_step_(n_, -1),
      exact_step_(n_, -1),
      exact_(n_) {}

void ExactGramDistances::add_next() {
    if (size_ >= n_) throw_domain_error("ExactGramDistances::add_next", "every token selected");
    const int k = size_++;
    for (int l = 0; l < n_; ++l) {
        running_[l] += gram_(k, l);
        running_abs_[l] += std::abs(gram_(k, l));
    }
}

double ExactGramDistances::tie_scale(int l) const {
    return kTieThreshold * (std::abs(gram_(l, l)) + 2 * running_abs_[l]);
}

// v̂ = G_ℓℓ − 2c̃_ℓ: N − 1 roundings in c̃ (sums of doubles, no underflow error) and one in the
// difference, so |v̂ − v| ≤ γ_N·(|G_ℓℓ| + 2Σ|G_kℓ|); doubled, plus kAbsoluteError so that the
// bound is strict even at 0.
const ExactComparisons::Approximate& ExactGramDistances::approximate(int l) {
    if (approx_step_[l] == size_) return approx_[l];
    Approximate& a = approx_[l];
    a.value = gram_(l, l) - 2 * running_[l];
    a.error =
        2 * gamma_of(size_ + 2.0) * (std::abs(gram_(l, l)) + 2 * running_abs_[l]) + kAbsoluteError;
    a.tie_room = tie_scale(l) * kTieRoom;
    approx_step_[l] = size_;
    return a;
}

ExactComparisons::BigInt ExactGramDistances::to_integer(double x) const {
    if (x == 0) return BigInt(0);
    int exponent = 0;
    const std::int64_t mantissa = integer_mantissa(x, exponent);
    return BigInt(mantissa) << (exponent - 53 + scale_);
}

const ExactComparisons::BigInt& ExactGramDistances::exact(int l) {
    if (!scaled_) {
        int lowest = std::numeric_limits<int>::max();
        for (Eigen::Index i = 0; i < gram_.size(); ++i) {
            const double x = gram_.data()[i];
            if (x != 0) lowest = std::min(lowest, std::ilogb(x) - 52);
        }
        scale_ = lowest == std::numeric_limits<int>::max() ? 0 : -lowest;
        scaled_ = true;
    }
    if (exact_step_[l] == size_) return exact_[l];
    BigInt sum = 0;
    for (int k = 0; k < size_; ++k)
        sum += to_integer(gram_(k, l));
    exact_[l] = to_integer(gram_(l, l)) - 2 * sum;
    exact_step_[l] = size_;
    return exact_[l];
}

}  // namespace attngeo::theory
