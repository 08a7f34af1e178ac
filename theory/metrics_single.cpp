// The single-precision Gram path (the simulator's Euclidean trials): the power-of-two scaling
// that keeps fl32(σY) finite, and the error model of a float Gram matrix that lets the shared
// Gram sweep (metrics_gram.cpp) still give the reference's exact counts and radii.
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "common/errors.hpp"
#include "theory/gram_kernels.hpp"
#include "theory/metrics.hpp"
#include "theory/metrics_detail.hpp"

namespace attngeo::theory {
namespace {

using detail::GramView;

// |G̃_kℓ − G_kℓ| for G̃ = fl32(σY)·fl32(σY)ᵀ in any float summation order, σ-scaled units:
// rounding σy to float (one unit each factor) and the d-term dot product give γ^(32)_{d+2}
// relative (u = 2⁻²⁴); subnormal float products and sums add at most 4d·2⁻¹⁵⁰.
detail::GramEntryError single_gram_entry_error(const RowMatrix& ranked) {
    const double d = static_cast<double>(ranked.cols());
    return {detail::gamma_bound(d + 2.0, 0x1p-24), 4.0 * d * 0x1p-150};
}

}  // namespace

int single_precision_scale_exponent(const RowMatrix& ranked) {
    // One pass finds max |x| and any non-finite entry (whose pattern exceeds every finite one).
    const unsigned long long largest_bits =
        gram_kernels::largest_magnitude_bits(ranked.data(), static_cast<long>(ranked.size()));
    if (largest_bits >= 0x7FF0000000000000ull) {
        throw_domain_error("single_precision_scale_exponent",
                           "ranked contributions contain NaN or inf");
    }
    double largest;
    std::memcpy(&largest, &largest_bits, sizeof largest);
    int exponent = 0;
    if (largest > 0) std::frexp(largest, &exponent);  // largest = m·2^exponent, m ∈ [½, 1)
    return -exponent;
}

int scaled_single_precision(const RowMatrix& ranked, SingleRowMatrix& scaled) {
    const int scale_exponent = single_precision_scale_exponent(ranked);
    scaled.resize(ranked.rows(), ranked.cols());
    const double* from = ranked.data();
    float* to = scaled.data();
    // σ = 2^scale_exponent, applied as one exact multiply when σ is a normal double (the
    // usual case) and through ldexp otherwise.
    if (scale_exponent >= -1022 && scale_exponent <= 1023) {
        gram_kernels::scale_to_float(from, static_cast<long>(ranked.size()),
                                     std::ldexp(1.0, scale_exponent), to);
    } else {
        for (Eigen::Index i = 0; i < ranked.size(); ++i)
            to[i] = static_cast<float>(std::ldexp(from[i], scale_exponent));
    }
    return scale_exponent;
}

void selection_metrics_from_single_gram(const RowMatrix& ranked, const float* lower, int ld,
                                        int scale_exponent, const std::vector<int>& sizes,
                                        std::vector<SelectionMetrics>& out, bool radii,
                                        const std::vector<double>* row_norms) {
    const int n = static_cast<int>(ranked.rows());
    if (ld < n) {
        throw_domain_error(
            "selection_metrics_from_single_gram",
            "leading dimension " + std::to_string(ld) + " < n = " + std::to_string(n));
    }
    detail::metrics_from_gram(ranked, GramView<float>(lower, n, n, Eigen::OuterStride<>(ld)),
                              scale_exponent, single_gram_entry_error(ranked), sizes,
                              Distance::euclidean, out, radii, "selection_metrics_from_single_gram",
                              row_norms);
}

void selection_metrics_from_single_gram(const RowMatrix& ranked, const Eigen::MatrixXf& gram,
                                        int scale_exponent, const std::vector<int>& sizes,
                                        std::vector<SelectionMetrics>& out, bool radii) {
    detail::metrics_from_gram(
        ranked,
        GramView<float>(gram.data(), gram.rows(), gram.cols(), Eigen::OuterStride<>(gram.rows())),
        scale_exponent, single_gram_entry_error(ranked), sizes, Distance::euclidean, out, radii,
        "selection_metrics_from_single_gram", nullptr);
}

}  // namespace attngeo::theory
