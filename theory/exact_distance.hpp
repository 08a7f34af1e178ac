// Exact decisions of the Euclidean selection metrics (docs/design.md §2 "Counts are exact"): the
// order of the shifted distances v_ℓ = D_ℓ − ‖s(N)‖² = ‖y_ℓ‖² − 2⟨s(N), y_ℓ⟩ as exact arithmetic on
// the ranked contributions y (doubles, taken as exact) gives it, in tiers: a rigorous double band
// first, big integers (Boost.Multiprecision cpp_int) only for what the band cannot decide.
#pragma once
#include <Eigen/Dense>
#include <boost/multiprecision/cpp_int.hpp>
#include <vector>

namespace attngeo::theory {

// τ of the exact-decision count: a comparison of token ℓ with a threshold token m is an exact
// decision when |v_ℓ − v_m| ≤ τ·w_ℓ(N) (exact margin), with the token scale
// w_ℓ(N) = p_ℓ·(p_ℓ + 2·P_N), p_ℓ = 2^⌈log2 max_t |y_ℓt|⌉ (the power of two just above the
// largest entry; 0 for a zero row), P_N = Σ_{k<N} p_k summed in double in rank order. p is a
// function of the input bits alone and P_N a fixed double sum, so every path gets the same w.
// Since ‖y‖/√d ≤ p ≤ 2‖y‖, τ·w is between ~τ/d and 4τ of the natural size ‖y‖² + 2A‖y‖
// (A = Σ_{k<N} ‖y_k‖) of the floating-point error in v: about the double rounding level.
constexpr double kTieThreshold = 0x1p-44;
// What a floating-point band must add to its relative coefficient (the w of e = wR² + 2AwR + c,
// R ≥ ‖y_ℓ‖, A ≥ Σ‖y_k‖ up to the rounding of computed norms) to cover τ·w_ℓ(N) with room:
// p² ≤ 4‖y‖², 2p·P_N ≤ 8A‖y‖.
constexpr double kTieBandCoefficient = 4.5 * kTieThreshold;

// The decisions shared by every source of shifted distances: a per-token double value with a
// rigorous error bound (tier 2), exact values (tier 3) only where the bounds overlap.
class ExactComparisons {
  public:
    virtual ~ExactComparisons() = default;

    // The token of [candidates] with the exact largest (want_max) or smallest v, the lowest
    // index among exact ties. candidates non-empty.
    int extreme(const int* candidates, int count, bool want_max);

    struct Comparison {
        bool at_most = false;  // v_ℓ ≤ v_m exactly (D_ℓ ≤ D_m)
        bool exact = false;    // |v_ℓ − v_m| ≤ tie_scale(ℓ): counted in exact_decisions
    };
    Comparison compare(int l, int m);

    // The exact-decision threshold of token ℓ at the current N, as a double.
    virtual double tie_scale(int l) const = 0;

  protected:
    using BigInt = boost::multiprecision::cpp_int;
    struct Approximate {
        double value = 0, error = 0;  // |value − v_ℓ| < error
        double tie_room = 0;          // ≥ tie_scale(ℓ)·(1 + 2⁻⁴⁰), cheaper to know
    };
    virtual const Approximate& approximate(int l) = 0;
    // v_ℓ·2^exact_scale_exponent() as an integer.
    virtual const BigInt& exact(int l) = 0;
    virtual int exact_scale_exponent() const = 0;
};

// The shifted distances of one set of ranked contributions at a selection size N, compared
// exactly. Tier 2 (per token, O(d)): v̂_ℓ = Σ_t y_ℓt(y_ℓt − 2s̃_t) with s̃ summed in double in
// rank order (the reference's s), and a rigorous bound e_ℓ on |v̂_ℓ − v_ℓ| from the componentwise
// sums Σ_k |y_kt| (Higham, Accuracy and Stability, §3.1 and §4.2). Tier 3: all entries as
// integers at a common power-of-two scale, s(N) and v_ℓ as exact cpp_int.
class ExactShiftedDistances : public ExactComparisons {
  public:
    using RowMatrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
    // ranked: [n, d] row k = y_{π_k}; must outlive this object and stay unchanged.
    explicit ExactShiftedDistances(const RowMatrix& ranked);

    // Moves to selection size N (rows 0..N−1 selected), 0 ≤ N ≤ n; forgets per-step results.
    void set_size(int N);
    int size() const { return size_; }

    // The radius' square of the extreme token: squared_distance(s̃, y_ℓ), a fixed double
    // evaluation with s̃ summed in rank order (the same bits in every path).
    double radius_squared(int l);

    // τ·w_ℓ(N) (kTieThreshold).
    double tie_scale(int l) const override;

  private:
    const Approximate& approximate(int l) override;
    const BigInt& exact(int l) override;
    int exact_scale_exponent() const override { return 2 * scale_; }
    void catch_up_double(bool absolute);
    void allocate(bool exact);
    void total_absolute();
    void catch_up_exact();
    void convert_row(int k);

    const RowMatrix& ranked_;
    int n_, d_;
    int size_ = 0;
    double power(int l) const;
    mutable std::vector<double> power_;  // [n] p_ℓ, −1 until computed
    mutable double power_sum_ = 0;       // P_{powered_rows_}
    mutable int powered_rows_ = 0;
    // Tier 2
    std::vector<double> s_, s_abs_;            // [d] s̃ and Σ_k |y_kt|, both summed in rank order
    int summed_rows_ = 0, absolute_rows_ = 0;  // rows in s_ and in s_abs_
    double absolute_total_ = 0;                // Σ_t s_abs_t
    std::vector<Approximate> approx_;          // [n] valid where approx_step_ == step_
    std::vector<long> approx_step_;            // [n]
    long step_ = 0;                            // bumps on every set_size
    // Tier 3
    int scale_ = 0;  // F: y·2^F is an integer for every entry; set on first use
    bool scaled_ = false;
    std::vector<std::vector<BigInt>> rows_;  // [n][d] y·2^F, converted on demand
    std::vector<BigInt> s_exact_;            // [d] s·2^F
    int exact_rows_ = 0;
    std::vector<BigInt> exact_;     // [n] v·2^{2F}
    std::vector<long> exact_step_;  // [n]
};

// The same when only the Gram matrix G of the ranked contributions is given (the d → ∞ limit
// of the simulator; G's entries are the inputs): v_ℓ = G_ℓℓ − 2Σ_{k<N} G_kℓ exactly. Its
// exact-decision scale is w_ℓ(N) = |G_ℓℓ| + 2Σ_{k<N} |G_kℓ| summed in double in ascending k
// (the Gram analogue of ‖y_ℓ‖² + 2A‖y_ℓ‖), threshold kTieThreshold·w_ℓ.
class ExactGramDistances : public ExactComparisons {
  public:
    // gram: [n, n], must outlive this object. Starts at N = 0.
    explicit ExactGramDistances(const Eigen::MatrixXd& gram);
    // Adds ranked token N to the selection (N → N + 1).
    void add_next();
    int size() const { return size_; }
    // c_ℓ = Σ_{k<N} G_kℓ as summed in double in ascending k.                          [n]
    const std::vector<double>& running() const { return running_; }
    double tie_scale(int l) const override;

  private:
    const Approximate& approximate(int l) override;
    const BigInt& exact(int l) override;
    int exact_scale_exponent() const override { return scale_; }
    BigInt to_integer(double x) const;

    const Eigen::MatrixXd& gram_;
    int n_;
    int size_ = 0;
    std::vector<double> running_, running_abs_;   // [n] Σ_{k<N} G_kℓ and Σ_{k<N} |G_kℓ|
    std::vector<Approximate> approx_;             // [n]
    std::vector<long> approx_step_, exact_step_;  // [n]
    std::vector<BigInt> exact_;                   // [n]
    int scale_ = 0;                               // every G_kℓ·2^scale_ is an integer
    bool scaled_ = false;
};

}  // namespace attngeo::theory
