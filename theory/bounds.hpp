// Theorems 1–2 and Corollary 1 (paper §3.4, eqs. 7–17; docs/design.md §3): lower and upper
// envelopes on E P(r_max,N), E R(r_min,N) and the F-scores, for the variants `paper` (as printed),
// `exact-mean` (μ from the expected Gram matrix), `scale-invariant` (B quadratic in scale) and
// `corrected` (both fixes at once); and the per-point degeneracies of docs/design.md §7.
#pragma once
#include <Eigen/Dense>
#include <array>
#include <string>
#include <vector>

#include "theory/bound_kernels.hpp"
#include "theory/far_moments.hpp"
#include "theory/metrics.hpp"
#include "theory/parameter_table.hpp"

namespace attngeo::theory {

// The variants of docs/design.md §3. `corrected` = the exact-mean μ with the scale-invariant B,
// and the upper bounds at N = 1 set to the identity P(r_max,1) = R(r_min,1) = 1 (§3).
enum class BoundVariant { paper, exact_mean, scale_invariant, corrected };
// Whether the variant's upper bounds at N = 1 are the identity 1 (only `corrected`).
bool keeps_identity_at_one(BoundVariant variant);
// Their names (--variant), in the order tables and figures list them.
inline constexpr FlagChoice<BoundVariant> kBoundVariantChoices[] = {
    {"paper", BoundVariant::paper},
    {"exact-mean", BoundVariant::exact_mean},
    {"scale-invariant", BoundVariant::scale_invariant},
    {"corrected", BoundVariant::corrected}};
// The variant `text` names; InputError "SOURCE: 'TEXT', expected paper, ..." otherwise.
BoundVariant parse_bound_variant(const std::string& text, const std::string& source = "--variant");
const char* to_string(BoundVariant variant);
// Every variant, in the order tables and figures list them.
const std::array<BoundVariant, 4>& bound_variants();
// Their names (to_string), in the same order: --variant's choices and every table's labels.
const std::vector<std::string>& bound_variant_names();
// Whether two variants use the same μ (docs/design.md §3), so BoundTerms::switch_variant moves
// between them.
bool shares_mean(BoundVariant a, BoundVariant b);

// Everything the bounds need from one (layer, head, query).
struct HeadModel {
    Eigen::VectorXd alpha;   // [n] attention weights; token 0 is the sink
    Eigen::VectorXd norms;   // [n] value norms ‖v_i‖
    Eigen::MatrixXd cosine;  // [n, n] expected cosines ρ_jk, unit diagonal
};
// Throws std::domain_error naming `function` on mismatched sizes, negative or non-finite
// weights or norms, or an invalid cosine matrix.
void validate_head_model(const HeadModel& model, const char* function);

// Envelope parameters: d and κ enter only as κ·d, but both are validated (d ≥ 1, κ > 0).
struct BoundSettings {
    double d = paper_preset::d;
    double kappa = paper_preset::kappa;
    BoundVariant variant = BoundVariant::paper;
    Ranking ranking = Ranking::attention;  // how I_N is chosen (the theorems use α)
};

// One row of `attngeo bounds` (docs/design.md §9).
struct BoundRow {
    int N = 0;
    bool sink_selected = false;
    double delta = 0;   // Δ of eq. (8); NaN when I_N∖{0} is empty
    double delta0 = 0;  // Δ0 of eq. (8) with ρ_out in place of ρ_in (eq. 29)
    double scale = 0;   // B of eq. (8), or the scale-invariant B
    double precision_lower = 1, precision_upper = 1;  // eqs. (12), (13)
    double recall_lower = 1, recall_upper = 1;        // eqs. (14), (15)
    double fmax_lower = 1, fmax_upper = 1;            // eq. (17): f(P bounds)
    double fmin_lower = 1, fmin_upper = 1;            // eq. (16): f(R bounds)
    bool trivial = false;  // N = n, or I_N∖{0} empty: every bound is 1 by convention
    // Some pair (i ∈ I_N, j ∉ I_N) has μ_ij ≤ 0, so the deciding p⁻ of the upper bounds is
    // 1/2 whatever κ is (ξ = μ/σ and σ > 0). False when trivial.
    bool deciding_xi_le0 = false;
};

// ---- Degeneracies of one point (docs/design.md §7).
// From the margins, independent of κ: Δ ≤ 0 (so t(Δ) = 1), Δ0 ≤ 0 with the sink selected (so
// t(Δ0) = 1), and ξ ≤ 0 on the deciding pair. All false for a trivial row.
struct MarginFlags {
    bool delta_le0 = false, delta0_le0 = false, xi_le0 = false;
    bool sink_selected = false;  // the sink is in I_N (so the Δ0 term exists when not trivial)
    // Both lower bounds are then functions of N and n alone: every tail factor is 1.
    bool lower_n_only() const { return delta_le0 && (!sink_selected || delta0_le0); }
};
MarginFlags margin_flags(const BoundRow& row);
// From one envelope (each side possibly at its own κ): inverted (lower > upper + 1e-12) and
// trivial sides (lower ≤ 0.01: says nothing; upper ≥ 0.99: says nothing).
constexpr double kTrivialLower = 0.01, kTrivialUpper = 0.99, kInvertedSlack = 1e-12;
struct EnvelopeFlags {
    bool P_inverted = false, R_inverted = false;
    bool P_trivial_lower = false, R_trivial_lower = false;
    bool P_trivial_upper = false, R_trivial_upper = false;
};
EnvelopeFlags envelope_flags(double P_lower, double P_upper, double R_lower, double R_upper);

// ---- The named quantities of eqs. (7)–(11), for a selection given by membership flags
// `selected` [n] (1 = in I_N). Token 0 is the sink.
// S_in = Σ_{k∈I_N∖{0}} a_k (eq. 7).
double selected_mass_without_sink(const Eigen::VectorXd& a, const std::vector<char>& selected);
// a_min^in = min_{I_N∖{0}} a; +inf when I_N∖{0} is empty (eq. 7).
double min_selected_without_sink(const Eigen::VectorXd& a, const std::vector<char>& selected);
// a_max^in = max_{I_N} a (eq. 8).
double max_selected(const Eigen::VectorXd& a, const std::vector<char>& selected);
// a_max^out = max_{j∉I_N} a_j; 0 when nothing is left out (eq. 7).
double max_unselected(const Eigen::VectorXd& a, const std::vector<char>& selected);
// ρ_out = max_{j∉I_N, k∈I_N∖{0}} ρ_jk; 0 when either set is empty (eq. 7).
double max_outside_cosine(const Eigen::MatrixXd& cosine, const std::vector<char>& selected);
// Δ = (a_min^in)² − 2 a_max^out S_in ρ_out (eq. 8).
double margin_delta(double a_min_in, double a_max_out, double s_in, double rho_out);
// Δ0 = a_0² − (S_in ρ_out)² (eq. 8 with eq. 29's ρ_out; docs/design.md §3 decision).
double sink_margin_delta0(double a0, double s_in, double rho_out);
// B = a_max^in + a_max^out + S_in (eq. 8).
double scale_B(double a_max_in, double a_max_out, double s_in);
// B_si = (a_max^in + a_max^out)·Σ_{k∈I_N} a_k: quadratic in scale like Δ (docs/design.md §3).
double scale_invariant_B(double a_max_in, double a_max_out, double selected_mass);
// t(x) = exp(−κ d (max(x,0)/B)²): the pair tail bound of eq. (31), 1 for a margin ≤ 0.
double tail_factor(double margin, double B, double kappa, double d);
// M_j = Σ_{l∈I_N∖{0}} a_l ρ_lj (eq. 11; includes l = j). With include_sink, the sum runs
// over all of I_N (the exact mean of the `exact-mean` variant).
double aggregated_cosine(const Eigen::VectorXd& a, const Eigen::MatrixXd& cosine,
                         const std::vector<char>& selected, int j, bool include_sink);
// μ_ij = (a_j² − a_i²) − 2 a_j M_j + 2 a_i M_i (eq. 10).
double mean_gap(double a_i, double a_j, double M_i, double M_j);
// p⁻(ξ) = φ(ξ)/(ξ + 1/ξ) for ξ > 0, 1/2 for ξ ≤ 0 (eq. 9; ξ = 0 gives 1/2, no division).
double p_minus(double xi);
// σ = B/√(2κd) (eq. 10).
double pair_sigma(double B, double kappa, double d);
// f(x) = 2x/(1+x) (Corollary 1).
double f_of(double x);

// ---- The statements of Theorems 1–2 from their ingredients (n_out = n − N, docs/design.md §3).
// n_out·t(Δ) + (n_out/N)·t(Δ0), the second term only when the sink is selected: the union
// bound that both lower bounds subtract (tails t in [0, 1], n_out ≥ 0, N ≥ 1).
double union_tail(int n_out, int N, bool sink_selected, double tail_delta, double tail_delta0);
// E P(r_max,N) ≥ 1/(1 + union_tail) (eq. 12).
double precision_lower_bound(double union_tail);
// E R(r_min,N) ≥ max(0, 1 − union_tail) (eq. 14).
double recall_lower_bound(double union_tail);
// E P(r_max,N) ≤ 1 − max_{i∈I_N, j∉I_N} p⁻_ij/(N + 1) (eq. 13), given that maximum in [0, 1].
double precision_upper_bound(double max_pair_probability, int N);
// E R(r_min,N) ≤ (1/N) Σ_{i∈I_N} (1 − max_{j∉I_N} p⁻_ij) (eq. 15), given the sum.
double recall_upper_bound(double complement_sum, int N);

// Direct evaluation of the printed formulas for one N: every pair (i, j) explicitly.
// O(N·(n−N)·n); the reference for bounds_all.
BoundRow bounds_reference(const HeadModel& model, int N, const BoundSettings& settings);

// The four bounds of one size at one κ, eqs. (12)–(15) (all 1 for a trivial size).
struct EnvelopeBounds {
    double precision_lower = 1, precision_upper = 1, recall_lower = 1, recall_upper = 1;
};

// The κ-independent part of the bounds for many N: margins, scales and, per N, the
// quantities h_ℓ = a_ℓ² − 2a_ℓM_ℓ (so μ_ij = h_j − h_i) sorted for O(log n) pair maxima.
// Built in one incremental pass, O(n² log n) for all N; memory O(n·|sizes|).
class BoundTerms {
  public:
    BoundTerms(const HeadModel& model, const std::vector<int>& sizes, BoundVariant variant,
               Ranking ranking = Ranking::attention);
    // The bounds at the given d (may be +inf) and κ for every N of `sizes`, in that order.
    // With lower_only the upper bounds (the costly part) are left NaN.
    std::vector<BoundRow> evaluate(double d, double kappa, bool lower_only = false) const;
    // The same at several κ: [kappas.size()][sizes().size()]. Each size's terms are read once
    // for all of them, so a κ scan costs memory traffic once per batch, not once per κ.
    std::vector<std::vector<BoundRow>> evaluate_many(double d, const std::vector<double>& kappas,
                                                     bool lower_only = false) const;
    // Only the four P/R bounds at several κ, [kappas.size()][sizes().size()], equal to
    // evaluate_many's: what a κ scan reads, without the rest of each row. Without with_recall
    // the R bounds are NaN and the cost is that of the P bounds alone (no Σ over I_N).
    std::vector<std::vector<EnvelopeBounds>> envelopes_many(double d,
                                                            const std::vector<double>& kappas,
                                                            bool with_recall = true) const;
    const std::vector<int>& sizes() const { return sizes_; }
    BoundVariant variant() const { return variant_; }
    // Turns these terms into another variant's with the same μ (paper ↔ scale-invariant,
    // exact-mean ↔ corrected): only B changes, so the sorted h arrays are kept. Throws
    // std::domain_error for a variant with the other μ.
    void switch_variant(BoundVariant variant);

  private:
    struct PerSize {
        int N = 0;
        int n_out = 0;
        bool trivial = false;         // N = n, or I_N∖{0} empty: every bound is 1
        bool identity_upper = false;  // N = 1 in `corrected`: both upper bounds are 1
        bool sink_selected = false;
        double delta = 0, delta0 = 0, scale = 0;
        double a_max_in = 0, a_max_out = 0, s_in = 0, selected_mass = 0;  // B's ingredients
        int half_count = 0;         // selected i with min_j μ_ij ≤ 0, so max_j p⁻_ij = 1/2
        std::vector<double> h_in;   // [N − half_count] h_i of the other selected i, ascending
        std::vector<double> h_out;  // [n − N] h_j for j ∉ I_N, ascending
        far_moments::Moments far;   // power sums of max h_out − h_in for the far run's Σ
    };
    // What one size's evaluation at a κ leaves for the next κ: the candidate gaps of the
    // positions that need the merge ([N] each at most) and the ends of pair_sums' runs.
    struct PairWorkspace {
        std::vector<double> gap_near, gap_far;
        int run_ends[3] = {0, 0, 0};
    };
    // max_{i∈I_N} max_j p⁻_ij and Σ_{i∈I_N} (1 − max_j p⁻_ij) at pair scale σ > 0.
    // (with_sum false: the largest only; complement_sum is left 0)
    static bound_kernels::PMinusSums pair_sums(const PerSize& t, double sigma,
                                               PairWorkspace& workspace, bool with_sum);
    // One size's bounds at (d, κ): the union tail of the lower bounds, the pair sums of the
    // upper ones, then the whole row or only the envelope.
    static double union_sum_at(const PerSize& t, double d, double kappa);
    static bound_kernels::PMinusSums upper_sums_at(const PerSize& t, double d, double kappa,
                                                   PairWorkspace& workspace, bool with_sum);
    static BoundRow row_at(const PerSize& t, double d, double kappa, bool lower_only,
                           PairWorkspace& workspace);
    static EnvelopeBounds envelope_at(const PerSize& t, double d, double kappa,
                                      PairWorkspace& workspace, bool with_recall);
    static double scale_of(const PerSize& t, BoundVariant variant);
    // at(size, κ, workspace) for every κ and size, [κ][size], after checking every κ.
    template <class Value, class At>
    std::vector<std::vector<Value>> over_batch(double d, const std::vector<double>& kappas,
                                               const char* function, At at) const;
    std::vector<int> sizes_;
    BoundVariant variant_;
    std::vector<PerSize> terms_;
};

// bounds for every N of `sizes` through BoundTerms (the fast path).
std::vector<BoundRow> bounds_all(const HeadModel& model, const std::vector<int>& sizes,
                                 const BoundSettings& settings);

}  // namespace attngeo::theory
