// What the selection-metric files share (metrics.cpp, metrics_reference.cpp, metrics_gram.cpp,
// metrics_single.cpp, metrics_expected_gram.cpp): the row conventions of docs/design.md §2, size
// checks, the rounding constants and the precision-generic core of the Gram path. Private to
// theory/.
#pragma once

#include <Eigen/Dense>
#include <limits>
#include <vector>

#include "theory/metrics.hpp"

namespace attngeo::theory::detail {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kUnitRoundoff = 0x1p-53;
constexpr double kCosineEpsilon = 1e-12;  // docs/design.md §2: 1e-12 in the cosine denominator
// The plain paths' counts are exact for values whose largest |v| = L is at least 2^-530 and
// whose largest squared distance, at most 4·d·L² (s is a convex combination of the values),
// stays below 2^1020 (validate_token_geometry refuses others). Measured, the counts go wrong
// from L = 2^-535, where the largest products v_i·v_j keep under 4 bits in the subnormal range,
// and from L = 2^510 at d = 5, where squared distances overflow. selection_metrics_scaled moves
// values with L outside [2^-400, 2^400) to [1/2, 1) and leaves the rest, so ordinary rows keep
// their bits.
constexpr int kSmallestPlainExponent = -530;
constexpr int kLargestSquaredDistanceExponent = 1020;
constexpr int kUnscaledExponent = 400;

// P, R and F from the counts of `m`; at N = n the convention P = R = F = 1 with r_min = +∞.
void finish_selection_row(SelectionMetrics& m, int n);

// Throws std::domain_error naming `function` for a size outside 1..n.
void check_selection_sizes(const std::vector<int>& sizes, int n, const char* function);

// γ_m = m·unit/(1 − m·unit): the relative error bound of m roundings (Higham §3.1).
double gamma_bound(double m, double unit);

// `sizes` ascending and without repeats (returned as is when it already is: every N, a grid).
std::vector<int> ascending_unique(const std::vector<int>& sizes);

// One row per entry of `sizes` from the rows computed for `wanted` = ascending_unique(sizes).
void rows_in_caller_order(const std::vector<int>& sizes, const std::vector<int>& wanted,
                          std::vector<SelectionMetrics>& sorted_rows,
                          std::vector<SelectionMetrics>& out);

// A column-major Gram matrix in a buffer with leading dimension ≥ n.
template <class Scalar>
using GramView = Eigen::Map<const Eigen::Matrix<Scalar, Eigen::Dynamic, Eigen::Dynamic>, 0,
                            Eigen::OuterStride<>>;

// How far a computed Gram entry may be from the exact one, in the matrix's (σ-scaled) units:
// |G̃_kℓ − G_kℓ| ≤ relative·‖y_k‖‖y_ℓ‖ + absolute.
struct GramEntryError {
    double relative = 0, absolute = 0;
};

// The Gram path on ranked contributions for a double or float Gram matrix (metrics_gram.cpp):
// validates, runs the Euclidean sweep (or, double only, the cosine decider) and writes one row
// per entry of `sizes` into `out`. row_norms: band_row_norms(ranked, scale_exponent) or nullptr.
template <class Scalar>
void metrics_from_gram(const RowMatrix& ranked, const GramView<Scalar>& gram, int scale_exponent,
                       GramEntryError entry_error, const std::vector<int>& sizes, Distance distance,
                       std::vector<SelectionMetrics>& out, bool radii, const char* function,
                       const std::vector<double>* row_norms);

}  // namespace attngeo::theory::detail
