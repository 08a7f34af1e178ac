// Exact counts (docs/design.md §2): every Euclidean path (per-N reference, double Gram, an
// externally formed Gram, single-precision Gram) against a plain rational-arithmetic reference
// written here with Boost.Multiprecision cpp_rational, on inputs whose decisions hinge on ties far
// below double resolution: α tails down to 1e-28, duplicated and component-swapped value vectors,
// dyadic lattices at tiny scales, all float32-representable like a capture.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "tests/support/rational_metrics.hpp"
#include "theory/exact_distance.hpp"
#include "theory/metrics.hpp"

namespace {

using attngeo::test_support::double_rule_differences;
using attngeo::test_support::ExactRow;
using attngeo::test_support::rational_metrics;
using attngeo::theory::Distance;
using attngeo::theory::Ranking;
using attngeo::theory::RowMatrix;
using attngeo::theory::SelectionMetrics;
using attngeo::theory::TokenGeometry;

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
                    attngeo::test_support::expect_same_selection(paths[p][k], want[k], what);
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

// The d → ∞ path takes G itself as its input: its counts against rational arithmetic on G's
// entries, with its exact-decision scale w_ℓ = |G_ℓℓ| + 2Σ_{k<N}|G_kℓ| (ascending k, double).
TEST(ExactMetrics, ExpectedGramEqualsRationalArithmeticOnItsEntries) {
    std::mt19937_64 rng(99);
    long exact_decisions = 0;
    for (int trial = 0; trial < 8; ++trial) {
        const TokenGeometry tokens = make_input(rng, static_cast<Family>(trial % 4));
        const int n = static_cast<int>(tokens.alpha.size());
        const auto order = attngeo::theory::selection_order(tokens.alpha);
        RowMatrix ranked(n, tokens.values.cols());
        for (int k = 0; k < n; ++k)
            ranked.row(k) = tokens.alpha[order[k]] * tokens.values.row(order[k]);
        const Eigen::MatrixXd gram = ranked * ranked.transpose();
        const auto rows = attngeo::theory::selection_metrics_expected_gram(gram, all_sizes(n),
                                                                           Distance::euclidean);
        std::vector<attngeo::test_support::Rational> c(n, 0), v(n);
        std::vector<double> c_abs(n, 0.0);
        for (int N = 1; N <= n; ++N) {
            for (int l = 0; l < n; ++l) {
                c[l] += attngeo::test_support::Rational(gram(N - 1, l));
                c_abs[l] += std::abs(gram(N - 1, l));
                v[l] = attngeo::test_support::Rational(gram(l, l)) - 2 * c[l];
            }
            int max_in = 0, min_out = N;
            for (int l = 1; l < N; ++l)
                if (v[l] > v[max_in]) max_in = l;
            for (int l = N + 1; l < n; ++l)
                if (v[l] < v[min_out]) min_out = l;
            int K_in = N, K_out = 0, ties = 0;
            if (N < n) {
                K_in = 0;
                for (int l = 0; l < n; ++l) {
                    const auto& threshold = l < N ? v[min_out] : v[max_in];
                    (l < N ? K_in : K_out) += v[l] <= threshold;
                    const double tie =
                        attngeo::theory::kTieThreshold * (std::abs(gram(l, l)) + 2 * c_abs[l]);
                    ties += abs(v[l] - threshold) <= attngeo::test_support::Rational(tie);
                }
            }
            EXPECT_EQ(rows[N - 1].K_in, K_in) << "trial " << trial << " N=" << N;
            EXPECT_EQ(rows[N - 1].K_out, K_out) << "trial " << trial << " N=" << N;
            EXPECT_EQ(rows[N - 1].exact_decisions, ties) << "trial " << trial << " N=" << N;
            exact_decisions += ties;
        }
        if (HasFailure()) return;
    }
    std::cout << "[ info     ] expected-Gram path: counts equal rational arithmetic on G, "
              << exact_decisions << " exact decisions\n";
    EXPECT_GT(exact_decisions, 0);
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
    const Eigen::MatrixXd ones = Eigen::MatrixXd::Ones(2, 2);  // outlives the comparer
    attngeo::theory::ExactGramDistances from_gram(ones);
    from_gram.add_next();
    from_gram.add_next();
    EXPECT_THROW(from_gram.add_next(), std::domain_error);
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
