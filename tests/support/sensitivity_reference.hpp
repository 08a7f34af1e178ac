// An independent reference for Table 1's derivatives (compare/table1): central differences in
// log x of the per-N reference bounds (theory::bounds_reference, every pair explicitly), for
// the tests of simulate and compare.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "theory/bounds.hpp"
#include "theory/assumption_models.hpp"
#include "theory/parametric.hpp"

namespace attngeo::test_support {

// d(column)/d(log name) at N, from bounds_reference at x·e^{±1e-4}; column 0..3 is P_lower,
// P_upper, R_lower, R_upper.
inline double reference_log_derivative(const theory::ModelParameters& p,
                                       const theory::BoundSettings& s, const std::string& name,
                                       int N, int column) {
    auto bound = [&](double factor) {
        theory::ModelParameters q = p;
        theory::BoundSettings t = s;
        if (name == "beta") q.beta *= factor;
        if (name == "lambda") q.lambda *= factor;
        if (name == "C") q.C *= factor;
        if (name == "d") t.d *= factor;
        if (name == "kappa") t.kappa *= factor;
        const theory::BoundRow r = theory::bounds_reference(theory::build_head_model(q), N, t);
        const double columns[4] = {r.precision_lower, r.precision_upper, r.recall_lower,
                                   r.recall_upper};
        return columns[column];
    };
    return (bound(std::exp(1e-4)) - bound(std::exp(-1e-4))) / 2e-4;
}

// Largest difference between the rows of the log parameters (β, λ, C, d, κ) and the reference;
// fails when there is no such row to compare.
inline double largest_log_derivative_difference(const std::vector<theory::SensitivityRow>& rows,
                                                const theory::ModelParameters& p,
                                                const theory::BoundSettings& s) {
    double worst = 0;
    int compared = 0;
    for (const auto& r : rows) {
        if (r.parameter != "beta" && r.parameter != "lambda" && r.parameter != "C" &&
            r.parameter != "d" && r.parameter != "kappa")
            continue;
        const double mine[4] = {r.precision_lower, r.precision_upper, r.recall_lower,
                                r.recall_upper};
        for (int c = 0; c < 4; ++c) {
            const double reference = reference_log_derivative(p, s, r.parameter, r.N, c);
            worst = std::max(worst, std::abs(mine[c] - reference));
            ++compared;
        }
    }
    EXPECT_GT(compared, 0);
    return worst;
}

}  // namespace attngeo::test_support
