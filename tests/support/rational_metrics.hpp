// A plain rational-arithmetic reference for the Euclidean selection counts (docs/design.md §2
// "Counts are exact"), written from the definitions with Boost.Multiprecision cpp_rational, for the
// tests of every path (theory/ and empirical/). Slow on purpose: O(n·d) rational operations per N.
#pragma once
// GCC 12 warns maybe-uninitialized inside Boost.Multiprecision after inlining (a false
// positive in the library header); these tests include it only through here.
#if defined(__GNUC__) && !defined(__clang__)  // clang has no such warning
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <gtest/gtest.h>

#include <algorithm>
#include <boost/multiprecision/cpp_int.hpp>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "theory/exact_distance.hpp"
#include "theory/metrics.hpp"

namespace attngeo::test_support {

using Rational = boost::multiprecision::cpp_rational;
using theory::RowMatrix;
using theory::TokenGeometry;

// What the rational reference says at one N.
struct ExactRow {
    int K_in = 0, K_out = 0, exact_decisions = 0;
    double r_min = std::numeric_limits<double>::infinity(), r_max = 0;
};

// docs/design.md §2 in rational arithmetic on y_i = fl64(α_i v_i): ranking by α (ties to the lower
// index), D_ℓ = ‖s − y_ℓ‖² exactly, the extremes and counts, and the exact decisions of the
// definition in metrics.hpp: |D_ℓ − D_m| ≤ τ·p_ℓ(p_ℓ + 2P_N), p = the power of two just above
// max_t |y_ℓt|, P_N = Σ_{k<N} p_k in double in rank order. Radii: √ of the double
// Σ_t (s̃_t − y_mt)² at the exact extreme m (lowest rank among ties), s̃ summed in rank order.
inline std::vector<ExactRow> rational_metrics(const TokenGeometry& tokens) {
    const int n = static_cast<int>(tokens.alpha.size());
    const int d = static_cast<int>(tokens.values.cols());
    std::vector<int> order(n);
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](int a, int b) {
        return tokens.alpha[a] != tokens.alpha[b] ? tokens.alpha[a] > tokens.alpha[b] : a < b;
    });
    std::vector<std::vector<double>> y(n, std::vector<double>(d));
    std::vector<double> power(n, 0.0);
    for (int k = 0; k < n; ++k) {
        for (int t = 0; t < d; ++t) {
            y[k][t] = tokens.alpha[order[k]] * tokens.values(order[k], t);
            double p = std::abs(y[k][t]) > 0 ? std::ldexp(1.0, -1074) : 0.0;
            while (p > 0 && p <= std::abs(y[k][t]))
                p *= 2;
            power[k] = std::max(power[k], p);
        }
    }
    std::vector<ExactRow> rows;
    std::vector<Rational> s(d, Rational(0)), D(n);
    std::vector<double> s_double(d, 0.0);
    double power_sum = 0;
    for (int N = 1; N <= n; ++N) {
        for (int t = 0; t < d; ++t) {
            s[t] += Rational(y[N - 1][t]);
            s_double[t] += y[N - 1][t];
        }
        power_sum += power[N - 1];
        for (int l = 0; l < n; ++l) {
            D[l] = 0;
            for (int t = 0; t < d; ++t) {
                const Rational diff = s[t] - Rational(y[l][t]);
                D[l] += diff * diff;
            }
        }
        auto radius = [&](int m) {
            double sum = 0;
            for (int t = 0; t < d; ++t)
                sum += (s_double[t] - y[m][t]) * (s_double[t] - y[m][t]);
            return std::sqrt(std::max(sum, 0.0));
        };
        int max_in = 0;
        for (int l = 1; l < N; ++l)
            if (D[l] > D[max_in]) max_in = l;
        ExactRow row;
        row.r_max = radius(max_in);
        if (N == n) {
            row.K_in = n;
            rows.push_back(row);
            continue;
        }
        int min_out = N;
        for (int l = N + 1; l < n; ++l)
            if (D[l] < D[min_out]) min_out = l;
        row.r_min = radius(min_out);
        for (int l = 0; l < n; ++l) {
            const Rational& threshold = l < N ? D[min_out] : D[max_in];
            (l < N ? row.K_in : row.K_out) += D[l] <= threshold;
            const double tie = theory::kTieThreshold * power[l] * (power[l] + 2 * power_sum);
            const Rational margin = D[l] - threshold;
            row.exact_decisions += abs(margin) <= Rational(tie);
        }
        rows.push_back(row);
    }
    return rows;
}

// The counts of the old rule: D in double with the reference kernel, compared in double.
inline int double_rule_differences(const TokenGeometry& tokens,
                                   const std::vector<ExactRow>& exact) {
    const int n = static_cast<int>(tokens.alpha.size());
    const int d = static_cast<int>(tokens.values.cols());
    const auto order =
        theory::selection_order(theory::selection_scores(tokens, theory::Ranking::attention));
    RowMatrix ranked(n, d);
    for (int k = 0; k < n; ++k)
        ranked.row(k) = tokens.alpha[order[k]] * tokens.values.row(order[k]);
    std::vector<double> s(d, 0.0), D(n);
    int differences = 0;
    for (int N = 1; N < n; ++N) {
        for (int t = 0; t < d; ++t)
            s[t] += ranked(N - 1, t);
        for (int l = 0; l < n; ++l)
            D[l] = theory::squared_distance(s.data(), ranked.row(l).data(), d);
        const double max_in = *std::max_element(D.begin(), D.begin() + N);
        const double min_out = *std::min_element(D.begin() + N, D.end());
        int K_in = 0, K_out = 0;
        for (int l = 0; l < n; ++l)
            (l < N ? K_in : K_out) += D[l] <= (l < N ? min_out : max_in);
        differences += K_in != exact[N - 1].K_in || K_out != exact[N - 1].K_out;
    }
    return differences;
}

// A path's row at one N agrees exactly with the expected one (another path's SelectionMetrics
// or the rational reference's ExactRow): counts, exact decisions and radii.
template <class Expected>
void expect_same_selection(const theory::SelectionMetrics& got, const Expected& want,
                           const std::string& what) {
    EXPECT_EQ(got.K_in, want.K_in) << what;
    EXPECT_EQ(got.K_out, want.K_out) << what;
    EXPECT_EQ(got.exact_decisions, want.exact_decisions) << what;
    EXPECT_EQ(got.r_max, want.r_max) << what;
    EXPECT_EQ(got.r_min, want.r_min) << what;
}

}  // namespace attngeo::test_support
