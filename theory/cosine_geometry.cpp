// The cosine model's closed forms; see cosine_geometry.hpp.
#include "theory/cosine_geometry.hpp"

#include <boost/math/special_functions/gamma.hpp>
#include <cmath>
#include <stdexcept>
#include <string>

#include "common/errors.hpp"

namespace attngeo::theory {

double kms_inverse_sum(int L, double r) {
    if (L < 1)
        throw_domain_error("kms_inverse_sum", "L = " + std::to_string(L) + ", expected L >= 1");
    return (L * (1 - r) + 2 * r) / (1 + r);
}

double max_feasible_rho0(int L, double beta) {
    return 1.0 / std::sqrt(kms_inverse_sum(L, std::exp(-beta)));
}

double expected_normalized_cosine(double rho, int d) {
    if (d < 1) throw std::domain_error("expected_normalized_cosine: d < 1");
    if (rho == 0) return 0;
    const double x = rho * rho;
    const double c = d / 2.0 + 1;
    double term = 1, series = 1;
    for (int k = 0; k < 1000000; ++k) {
        term *= (0.5 + k) * (0.5 + k) / ((c + k) * (k + 1)) * x;
        series += term;
        if (term < 1e-17 * series) break;
    }
    const double ratio = boost::math::tgamma_ratio((d + 1) / 2.0, d / 2.0);
    return rho * (2.0 / d) * ratio * ratio * series;
}

}  // namespace attngeo::theory
