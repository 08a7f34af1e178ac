// Precision, Recall and F-score of top-N selection in value-state space (paper §3, eqs. 1–5;
// docs/design.md §2). Two implementations: a plain per-N reference (metrics_reference.cpp) and an
// all-N Gram-matrix path (metrics_gram.cpp; single precision: metrics_single.cpp; d → ∞:
// metrics_expected_gram.cpp); both give the counts of exact arithmetic (certified by error
// bounds, big integers where they fail).
//
// "The inputs" of the exact Euclidean counts are the contributions y_ℓ = fl64(α_ℓ·v_ℓ) in rank
// order (TokenGeometry: the double products, which are exact for float32 α and v such as
// captures; the ranked rows passed to the *_from_*gram functions: those rows as given, e.g.
// the simulator's drawn contributions). Ranking uses the double scores. Every comparison
// D_ℓ ≤ D_m is decided as exact rational arithmetic on these doubles decides it
// (theory/exact_distance). The cosine distance keeps its floating-point rule (the reference's
// double kernel, which every path reproduces bit for bit); its exact_decisions are 0.
#pragma once
#include <Eigen/Dense>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "common/flag_choice.hpp"

namespace attngeo::theory {

// Which score defines I_N: α_i (`attn`, the paper's choice) or a_i = α_i‖v_i‖ (`contrib`).
enum class Ranking { attention, contribution };
// D_ℓ = ‖s − y_ℓ‖² (euclidean) or 1 − ⟨y_ℓ,s⟩/(‖y_ℓ‖‖s‖ + 1e-12) (cosine).
enum class Distance { euclidean, cosine };

// The names --rank and --distance take (common/flag_choice): one table for the CLI's choices,
// the parsers and to_string.
inline constexpr FlagChoice<Ranking> kRankingChoices[] = {{"attn", Ranking::attention},
                                                          {"contrib", Ranking::contribution}};
inline constexpr FlagChoice<Distance> kDistanceChoices[] = {{"euclidean", Distance::euclidean},
                                                            {"cosine", Distance::cosine}};
// The value `text` names; InputError "SOURCE: 'TEXT', expected ..." otherwise (`source` is the
// flag, argument or file field the text came from).
Ranking parse_ranking(const std::string& text, const std::string& source = "--rank");
Distance parse_distance(const std::string& text, const std::string& source = "--distance");
const char* to_string(Ranking ranking);
const char* to_string(Distance distance);

using RowMatrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// What the metrics see of one (layer, head, query).
struct TokenGeometry {
    Eigen::VectorXd alpha;  // [n] attention weights α_0..α_L; token 0 is the sink
    RowMatrix values;       // [n, d] value vectors v_i, one per row
};

// The metrics at one selection size N (docs/design.md §2).
struct SelectionMetrics {
    int N = 0;
    double r_min = std::numeric_limits<double>::infinity();  // min_{j∉I_N} √D_j; +inf at N = n
    double r_max = 0;                                        // max_{i∈I_N} √D_i
    int K_in = 0;                                            // #{i ∈ I_N : D_i ≤ r_min²}
    int K_out = 0;                                           // #{j ∉ I_N : D_j ≤ r_max²}
    double precision_at_rmax = 1;                            // P(r_max,N) = N/(N + K_out)
    double recall_at_rmin = 1;                               // R(r_min,N) = K_in/N
    double f_at_rmax = 1;  // F(r_max,N) = 2P/(1+P), since R(r_max,N) ≡ 1
    double f_at_rmin = 1;  // F(r_min,N) = 2R/(1+R), since P(r_min,N) ≡ 1
    // Of the n − N comparisons D_j ≤ max_{i∈I_N} D_i and the N comparisons D_i ≤
    // min_{j∉I_N} D_j (0 at N = n), those whose exact margin |D_ℓ − D_m| (m the other side's
    // extreme token) is at most τ·w_ℓ(N), τ = 2⁻⁴⁴: the decisions that floating-point bounds
    // of double resolution cannot make (w_ℓ and τ: kTieThreshold in theory/exact_distance.hpp).
    // A function of the inputs alone, identical in every path. Euclidean only; 0 for cosine.
    int exact_decisions = 0;
};

// Harmonic mean of eq. (5); 0 when both are 0.
double f_score(double precision, double recall);

// Checks sizes, finiteness, α ≥ 0 and values of a size whose squared distances a double holds
// (a largest |v| of 0, or at least 2^-530 ≈ 3e-160 with 4·d·|v|² < 2^1020, about 1e150 at
// d = 64; selection_metrics_scaled brings any other values there); throws std::domain_error naming
// `function`.
void validate_token_geometry(const TokenGeometry& tokens, const char* function);

// Ranking scores: α_i, or a_i = α_i‖v_i‖.                                       [n]
Eigen::VectorXd selection_scores(const TokenGeometry& tokens, Ranking ranking);

// π: token indices by descending score, ties broken by the lower index (docs/design.md §2).
// I_N = {π_0, …, π_{N−1}}.
std::vector<int> selection_order(const Eigen::VectorXd& scores);

// y_i = α_i v_i, the contributions in token order.                                  [n, d]
RowMatrix selection_contributions(const TokenGeometry& tokens);

// s(N) = Σ_{i∈I_N} α_i v_i (eq. 1), the representative vector of the N selected tokens:
// the rows order[0..N−1] of `contributions` (y in token order, order = π) summed in double in
// rank order, the one evaluation the reference's distances and every path's radii start from.
// Throws std::domain_error unless order has n entries in 0..n−1 and 1 ≤ N ≤ n.        [d]
std::vector<double> selection_centroid(const RowMatrix& contributions,
                                       const std::vector<int>& order, int N);

// Plain per-N reference: for each N forms s(N) = Σ_{k<N} y_{π_k} (summed in rank order),
// every D_ℓ directly, then radii and counts. O(n·d) per N (after an O(n log n) sort), plus
// big-integer work for comparisons its double bounds cannot decide. Radii: r = √D̃_m at the
// exact extreme token m (the lowest rank among exact ties), D̃_m = squared_distance(s̃, y_m)
// with s̃ = s(N) summed in double in rank order — one fixed double evaluation for every path.
std::vector<SelectionMetrics> selection_metrics_reference(const TokenGeometry& tokens,
                                                          const std::vector<int>& sizes,
                                                          Ranking ranking, Distance distance);

// All-N Gram path: G = YYᵀ once (O(n²d)), then ⟨s(N), y_ℓ⟩ as running sums of G's columns
// (O(n²) for all N). Comparisons that rigorous floating-point error bounds cannot decide are
// decided exactly (theory/exact_distance), so counts, exact_decisions and radii are identical
// to selection_metrics_reference on any input. `sizes` selects the rows returned.
std::vector<SelectionMetrics> selection_metrics_gram(const TokenGeometry& tokens,
                                                     const std::vector<int>& sizes, Ranking ranking,
                                                     Distance distance);

// The metrics are the same for values c·v, c = 2^k (every distance scales alike and neither
// ranking changes), so values whose squared distances would overflow or underflow a double
// (a largest |v| outside [2^-400, 2^400), about 1e±120; the plain paths refuse them beyond
// about 1e-160 and 1e150) are scaled to a largest |v| in
// [1/2, 1) first, exactly, and the Euclidean radii scaled back (cosine radii do not scale).
// Otherwise the rows are those of selection_metrics_gram (all_sizes) or
// selection_metrics_reference, bit for bit.
// Throws std::domain_error when no common power of two keeps every value exact (values spanning
// more than about 2^2000); unit_scale_exponent says so up front (nullopt), else gives k.
std::optional<int> unit_scale_exponent(const TokenGeometry& tokens);
std::vector<SelectionMetrics> selection_metrics_scaled(TokenGeometry tokens,
                                                       const std::vector<int>& sizes,
                                                       Ranking ranking, Distance distance,
                                                       bool all_sizes);

// Core of the Gram path on already-ranked contributions: row k of `ranked` is y_{π_k}, `gram`
// is ranked·rankedᵀ (the Euclidean distance reads only its lower triangle, as SYRK leaves it;
// the cosine distance needs both triangles). Writes one row per N in `sizes`. Exposed so
// the simulator can supply G from BLAS SYRK; with radii = false only counts (and P, R, F)
// are computed, r_min and r_max are NaN, and the Euclidean case needs no exact evaluation
// unless a comparison is within rounding (or τ·w_ℓ) of its threshold.
void selection_metrics_from_gram(const RowMatrix& ranked,      // [n, d]
                                 const Eigen::MatrixXd& gram,  // [n, n]
                                 const std::vector<int>& sizes, Distance distance,
                                 std::vector<SelectionMetrics>& out, bool radii = true);

// The same from a single-precision Gram matrix, Euclidean distance only (the simulator's fast
// path): `gram` holds fl32(σY)·fl32(σY)ᵀ (any float32 summation order; only the lower triangle
// is read), with
// σ = 2^scale_exponent from scaled_single_precision. The error bound accounts for float32
// rounding (and subnormals), so counts and radii are still identical to the reference; only
// more comparisons fall through to the exact tiers.
using SingleRowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
void selection_metrics_from_single_gram(const RowMatrix& ranked,      // [n, d]
                                        const Eigen::MatrixXf& gram,  // [n, n]
                                        int scale_exponent, const std::vector<int>& sizes,
                                        std::vector<SelectionMetrics>& out, bool radii = true);
// The same with the lower triangle in a column-major buffer of leading dimension ld ≥ n
// (a multiple of 8 makes the reads above the diagonal aligned: ~40% faster at n = 1025).
// row_norms, when given, must be band_row_norms(ranked, scale_exponent) (a caller that has
// them already saves the pass); nullptr computes them here.
void selection_metrics_from_single_gram(const RowMatrix& ranked,  // [n, d]
                                        const float* lower,       // [n, n], leading dimension ld
                                        int ld, int scale_exponent, const std::vector<int>& sizes,
                                        std::vector<SelectionMetrics>& out, bool radii = true,
                                        const std::vector<double>* row_norms = nullptr);
// σ‖y_ℓ‖ with σ = 2^scale_exponent: the norms the certified path's error bands use (Eigen's
// row norm, then ldexp).                                                              [n]
std::vector<double> band_row_norms(const RowMatrix& ranked, int scale_exponent);
// scaled = fl32(σ·ranked) with σ = 2^e chosen so that max |σ·y| ∈ [½, 1) (no float overflow;
// σ is exact); returns e.                                                        [n, d]
int scaled_single_precision(const RowMatrix& ranked, SingleRowMatrix& scaled);
// That e alone (throws std::domain_error on NaN or inf, as scaled_single_precision does).
int single_precision_scale_exponent(const RowMatrix& ranked);

// Metrics when only the Gram matrix of the ranked contributions is known (the d → ∞ limit of
// the simulator): D_ℓ = ‖s‖² + G_ℓℓ − 2c_ℓ with c_ℓ = Σ_{k<N} G_kℓ and ‖s‖² = Σ_{k<N} c_k
// (cosine: 1 − c_ℓ/(√G_ℓℓ·‖s‖ + 1e-12)). Euclidean counts are those of exact arithmetic on
// the entries of G as given (ExactGramDistances, whose exact-decision scale is
// w_ℓ = |G_ℓℓ| + 2Σ_{k<N}|G_kℓ|); radii and the cosine rule use the double sums in ascending
// k, the radii at the exact extreme token. O(n²) for all N.
std::vector<SelectionMetrics> selection_metrics_expected_gram(
    const Eigen::MatrixXd& gram,  // [n, n]
    const std::vector<int>& sizes, Distance distance);

// Copies the lower triangle of a square matrix onto its upper triangle (after SYRK).
void symmetrize_from_lower(Eigen::MatrixXd& gram);

// P(r,N) and R(r,N) of eqs. (2)–(3) for an arbitrary radius r ≥ 0 (closed ball).
struct BallMetrics {
    int N = 0;
    double radius = 0;
    int selected_inside = 0;    // #{i ∈ I_N : D_i ≤ r²}
    int unselected_inside = 0;  // #{j ∉ I_N : D_j ≤ r²}
    double precision = 1;       // selected/(selected + unselected); 1 for an empty ball
    double recall = 0;          // selected/N
    double f = 0;
};
BallMetrics metrics_at_radius(const TokenGeometry& tokens, int N, double radius, Ranking ranking,
                              Distance distance);

// Distance kernels shared by every path so that "the same distance" rounds identically.
// s and y point at d contiguous doubles.
double squared_distance(const double* s, const double* y, int d);
double euclidean_norm(const double* x, int d);
// 1 − ⟨y,s⟩/(‖y‖‖s‖ + 1e-12); s_norm = euclidean_norm(s).
double cosine_distance(const double* s, double s_norm, const double* y, int d);

// The manifests' decision on the balls of eq. (4) (docs/design.md §2): the paper takes P(r_min, N)
// ≡ 1 (the excluded token at exactly r_min outside: an open ball) and R(r_max, N) ≡ 1 (the
// farthest selected token inside: a closed ball); the counts that matter use closed balls.
extern const char* const kBallConventionDecision;

}  // namespace attngeo::theory
