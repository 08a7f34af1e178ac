// Exact counts (SPEC §2): every Euclidean path (per-N reference, double Gram, an externally
// formed Gram, single-precision Gram) against a plain rational-arithmetic reference written
// here with Boost.Multiprecision cpp_rational, on inputs whose decisions hinge on ties far below
// double resolution: α tails down to 1e-28, duplicated and component-swapped value vectors,
// dyadic lattices at tiny scales, all float32-representable like a capture.
#include <gtest/gtest.h>

#include <algorithm>
#include <boost/multiprecision/cpp_int.hpp>
#include <cmath>
#include <iostream>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "theory/exact_distance.hpp"
#include "theory/metrics.hpp"

namespace {

using attngeo::theory::Distance;
using attngeo::theory::Ranking;
using attngeo::theory::RowMatrix;
using attngeo::theory::SelectionMetrics;
using attngeo::theory::TokenGeometry;
using Rational = boost::multiprecision::cpp_rational;

#ifdef NDEBUG
constexpr int kRepeatScale = 1;
#else
constexpr int kRepeatScale = 5;
#endif

std::vector<int> all_sizes(int n) {
    std::vector<int> sizes(n);
    std::iota(sizes.begin(), sizes.end(), 1);
    return sizes;
}

// What the rational reference says at one N.
struct ExactRow {
    int K_in = 0, K_out = 0, exact_decisions = 0;
    double r_min = std::numeric_limits<double>::infinity(), r_max = 0;
};

// SPEC §2 in rational arithmetic on y_i = fl64(α_i v_i): ranking by α (ties to the lower
// index), D_ℓ = ‖s − y_ℓ‖² exactly, the extremes and counts, and the exact decisions of the
// definition in metrics.hpp: |D_ℓ − D_m| ≤ τ·p_ℓ(p_ℓ + 2P_N), p = the power of two just above
// max_t |y_ℓt|, P_N = Σ_{k<N} p_k in double in rank order. Radii: √ of the double
// Σ_t (s̃_t − y_mt)² at the exact extreme m (lowest rank among ties), s̃ summed in rank order.
std::vector<ExactRow> rational_metrics(const TokenGeometry& tokens) {
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
            const double tie =
                attngeo::theory::kTieThreshold * power[l] * (power[l] + 2 * power_sum);
            const Rational margin = D[l] - threshold;
            row.exact_decisions += abs(margin) <= Rational(tie);
        }
        rows.push_back(row);
    }
    return rows;
}

// The counts of the old rule: D in double with the reference kernel, compared in double.
int double_rule_differences(const TokenGeometry& tokens, const std::vector<ExactRow>& exact) {
    const int n = static_cast<int>(tokens.alpha.size());
    const int d = static_cast<int>(tokens.values.cols());
    const auto order = attngeo::theory::selection_order(
        attngeo::theory::selection_scores(tokens, Ranking::attention));
    RowMatrix ranked(n, d);
    for (int k = 0; k < n; ++k)
        ranked.row(k) = tokens.alpha[order[k]] * tokens.values.row(order[k]);
    std::vector<double> s(d, 0.0), D(n);
    int differences = 0;
    for (int N = 1; N < n; ++N) {
        for (int t = 0; t < d; ++t)
            s[t] += ranked(N - 1, t);
        for (int l = 0; l < n; ++l)
            D[l] = attngeo::theory::squared_distance(s.data(), ranked.row(l).data(), d);
        const double max_in = *std::max_element(D.begin(), D.begin() + N);
        const double min_out = *std::min_element(D.begin() + N, D.end());
        int K_in = 0, K_out = 0;
        for (int l = 0; l < n; ++l)
            (l < N ? K_in : K_out) += D[l] <= (l < N ? min_out : max_in);
        differences += K_in != exact[N - 1].K_in || K_out != exact[N - 1].K_out;
    }
    return differences;
}

float to_float(double x) {
    return static_cast<float>(x);
}

// Families of float32-representable inputs with sub-double-resolution ties.
enum class Family { tiny_tail, duplicates, swapped_pairs, dyadic_lattice, count };
const char* family_name(Family f) {
    static const char* names[] = {"tiny_tail", "duplicates", "swapped_pairs", "dyadic_lattice"};
    return names[static_cast<int>(f)];
}

TokenGeometry make_input(std::mt19937_64& rng, Family family) {
    std::normal_distribution<double> g(0.0, 1.0);
    std::uniform_real_distribution<double> uniform(0.0, 1.0);
    const int n = 8 + static_cast<int>(rng() % 70);
    const int d = 2 + static_cast<int>(rng() % 14);
    TokenGeometry tokens;
    tokens.alpha.resize(n);
    tokens.values.resize(n, d);
    // A sink, a few heads of the profile, then a tail of α down to 1e-28 (float32 throughout).
    for (int i = 0; i < n; ++i) {
        const double exponent = i == 0 ? 0.3 : i < 4 ? 1 + 2 * uniform(rng) : 6 + 22 * uniform(rng);
        tokens.alpha[i] = to_float(std::pow(10.0, -exponent));
        for (int t = 0; t < d; ++t)
            tokens.values(i, t) = to_float(g(rng));
    }
    switch (family) {
        case Family::duplicates:  // value rows from a small pool, α shared half of the time
            for (int i = 1; i < n; ++i) {
                const int source = static_cast<int>(rng() % std::min(i, 5));
                tokens.values.row(i) = tokens.values.row(source);
                if (rng() % 2) tokens.alpha[i] = tokens.alpha[source];
            }
            break;
        case Family::swapped_pairs:  // (v, v with components 0 and 1 swapped), same α
            for (int i = 1; i + 1 < n; i += 2) {
                tokens.values.row(i + 1) = tokens.values.row(i);
                std::swap(tokens.values(i + 1, 0), tokens.values(i + 1, 1));
                tokens.alpha[i + 1] = tokens.alpha[i];
            }
            tokens.values(0, 1) = tokens.values(0, 0);  // s symmetric in 0, 1 while pairs are
            break;
        case Family::dyadic_lattice:  // α = 2^−k, v ∈ {−1, 0, 1}: exact ties at every scale
            for (int i = 0; i < n; ++i) {
                tokens.alpha[i] = std::ldexp(1.0, -static_cast<int>(rng() % 93));
                for (int t = 0; t < d; ++t)
                    tokens.values(i, t) = static_cast<double>(static_cast<int>(rng() % 3) - 1);
            }
            break;
        default:
            break;
    }
    return tokens;
}

// Every Euclidean path on one input, in rank order of the attention ranking.
std::vector<std::vector<SelectionMetrics>> every_path(const TokenGeometry& tokens) {
    const int n = static_cast<int>(tokens.alpha.size());
    const int d = static_cast<int>(tokens.values.cols());
    std::vector<std::vector<SelectionMetrics>> paths;
    paths.push_back(attngeo::theory::selection_metrics_reference(
        tokens, all_sizes(n), Ranking::attention, Distance::euclidean));
    paths.push_back(attngeo::theory::selection_metrics_gram(
        tokens, all_sizes(n), Ranking::attention, Distance::euclidean));
    const auto order = attngeo::theory::selection_order(
        attngeo::theory::selection_scores(tokens, Ranking::attention));
    RowMatrix ranked(n, d);
    for (int k = 0; k < n; ++k)
        ranked.row(k) = tokens.alpha[order[k]] * tokens.values.row(order[k]);
    Eigen::MatrixXd gram(n, n);  // a plain loop in reverse order: other roundings than SYRK
    for (int a = 0; a < n; ++a) {
        for (int b = 0; b < n; ++b) {
            double sum = 0;
            for (int t = d - 1; t >= 0; --t)
                sum += ranked(a, t) * ranked(b, t);
            gram(a, b) = sum;
        }
    }
    paths.emplace_back();
    attngeo::theory::selection_metrics_from_gram(ranked, gram, all_sizes(n), Distance::euclidean,
                                                 paths.back());
    attngeo::theory::SingleRowMatrix scaled;
    const int e = attngeo::theory::scaled_single_precision(ranked, scaled);
    Eigen::MatrixXf single = (scaled * scaled.transpose()).eval();
    paths.emplace_back();
    attngeo::theory::selection_metrics_from_single_gram(ranked, single, e, all_sizes(n),
                                                        paths.back());
    return paths;
}

const char* kPathNames[] = {"reference", "gram", "external gram", "single gram"};

TEST(ExactMetrics, EveryPathEqualsRationalArithmetic) {
    std::mt19937_64 rng(2026);
    long comparisons = 0, exact_decisions = 0;
    int double_rule_wrong = 0, inputs = 0;
    const int per_family = 12 / kRepeatScale + 1;
    for (int f = 0; f < static_cast<int>(Family::count); ++f) {
        const Family family = static_cast<Family>(f);
        for (int trial = 0; trial < per_family; ++trial) {
            const TokenGeometry tokens = make_input(rng, family);
            const int n = static_cast<int>(tokens.alpha.size());
            const std::vector<ExactRow> want = rational_metrics(tokens);
            const auto paths = every_path(tokens);
            for (std::size_t p = 0; p < paths.size(); ++p) {
                ASSERT_EQ(paths[p].size(), want.size());
                for (int k = 0; k < n; ++k) {
                    const std::string what = std::string(family_name(family)) + " " +
                                             kPathNames[p] + " n=" + std::to_string(n) +
                                             " N=" + std::to_string(k + 1);
                    EXPECT_EQ(paths[p][k].K_in, want[k].K_in) << what;
                    EXPECT_EQ(paths[p][k].K_out, want[k].K_out) << what;
                    EXPECT_EQ(paths[p][k].exact_decisions, want[k].exact_decisions) << what;
                    EXPECT_EQ(paths[p][k].r_max, want[k].r_max) << what;
                    EXPECT_EQ(paths[p][k].r_min, want[k].r_min) << what;
                }
            }
            for (const ExactRow& row : want)
                exact_decisions += row.exact_decisions;
            comparisons += static_cast<long>(n) * (n - 1);
            double_rule_wrong += double_rule_differences(tokens, want);
            ++inputs;
            if (HasFailure()) return;
        }
    }
    std::cout << "[ info     ] " << inputs << " inputs, " << comparisons
              << " comparisons: " << exact_decisions
              << " exact decisions; largest count difference to rational "
              << "arithmetic 0 on every path; (input, N) where plain double comparisons differ: "
              << double_rule_wrong << "\n";
    RecordProperty("exact_decisions", std::to_string(exact_decisions));
    RecordProperty("double_rule_differences", std::to_string(double_rule_wrong));
    EXPECT_GT(exact_decisions, 0);  // the inputs do reach the exact tier
}

TEST(ExactMetrics, PowerOfTwoScalingKeepsCountsAndExactDecisions) {
    // Scaling every α by 2^k scales each D and each τ·w by 4^k exactly.
    std::mt19937_64 rng(7);
    for (int trial = 0; trial < 4; ++trial) {
        const TokenGeometry tokens = make_input(rng, static_cast<Family>(trial));
        const int n = static_cast<int>(tokens.alpha.size());
        const auto base = attngeo::theory::selection_metrics_gram(
            tokens, all_sizes(n), Ranking::attention, Distance::euclidean);
        for (int k : {-200, 37}) {
            TokenGeometry scaled = tokens;
            scaled.alpha *= std::ldexp(1.0, k);
            const auto rows = attngeo::theory::selection_metrics_gram(
                scaled, all_sizes(n), Ranking::attention, Distance::euclidean);
            for (int N = 0; N < n; ++N) {
                EXPECT_EQ(rows[N].K_in, base[N].K_in);
                EXPECT_EQ(rows[N].K_out, base[N].K_out);
                EXPECT_EQ(rows[N].exact_decisions, base[N].exact_decisions);
            }
        }
    }
}

TEST(ExactMetrics, DegenerateInputs) {
    // One token: nothing left out. All-zero contributions: every D equals ‖s‖² = 0, every
    // comparison is an exact tie (margin 0 ≤ τ·0) and every ball holds everything.
    TokenGeometry one;
    one.alpha = Eigen::VectorXd::Constant(1, 1.0);
    one.values = RowMatrix::Constant(1, 3, 0.5);
    const auto single =
        attngeo::theory::selection_metrics_gram(one, {1}, Ranking::attention, Distance::euclidean);
    EXPECT_EQ(single[0].exact_decisions, 0);
    EXPECT_EQ(single[0].K_in, 1);
    TokenGeometry zeros;
    zeros.alpha = Eigen::VectorXd::Constant(5, 0.2);
    zeros.values = RowMatrix::Zero(5, 2);
    const std::vector<ExactRow> want = rational_metrics(zeros);
    for (const auto& rows : every_path(zeros)) {
        for (int N = 0; N < 5; ++N) {
            EXPECT_EQ(rows[N].K_in, want[N].K_in);
            EXPECT_EQ(rows[N].K_out, want[N].K_out);
            EXPECT_EQ(rows[N].exact_decisions, want[N].exact_decisions);
            EXPECT_EQ(rows[N].exact_decisions, N + 1 < 5 ? 5 : 0);
            EXPECT_EQ(rows[N].K_in, N + 1);
            EXPECT_EQ(rows[N].K_out, 4 - N);
        }
    }
}

TEST(ExactMetrics, ComparerRejectsBadArguments) {
    RowMatrix ranked = RowMatrix::Ones(3, 2);
    attngeo::theory::ExactShiftedDistances exact(ranked);
    EXPECT_THROW(exact.set_size(-1), std::domain_error);
    EXPECT_THROW(exact.set_size(4), std::domain_error);
    exact.set_size(2);
    EXPECT_THROW(exact.extreme(nullptr, 0, true), std::domain_error);
    // Equal rows: an exact tie, decided exactly and counted.
    const auto c = exact.compare(2, 0);
    EXPECT_TRUE(c.at_most);
    EXPECT_TRUE(c.exact);
}

}  // namespace
