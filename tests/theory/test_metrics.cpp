// Tests of the selection metrics (docs/design.md §2, paper eqs. 1–5): a hand-computed example, the
// identities and conventions of eq. (4), ties, invariances, and agreement between the
// per-N reference, the all-N Gram path and an independent brute force written here.
#include <gtest/gtest.h>

#include <Eigen/QR>
#include <algorithm>
#include <cmath>
#include <iomanip>
#include <iostream>
#include <limits>
#include <numeric>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "theory/metrics.hpp"

namespace {

using attngeo::theory::BallMetrics;
using attngeo::theory::Distance;
using attngeo::theory::Ranking;
using attngeo::theory::RowMatrix;
using attngeo::theory::SelectionMetrics;
using attngeo::theory::TokenGeometry;

constexpr double kInf = std::numeric_limits<double>::infinity();

// The ASan/UBSan Debug build is ~30x slower: fewer random repetitions there.
#ifdef NDEBUG
constexpr int kRepeatScale = 1;
#else
constexpr int kRepeatScale = 5;
#endif
int repeats(int release_count) {
    return std::max(1, release_count / kRepeatScale);
}

const Ranking kRankings[] = {Ranking::attention, Ranking::contribution};
const Distance kDistances[] = {Distance::euclidean, Distance::cosine};

using MetricsFn = std::vector<SelectionMetrics> (*)(const TokenGeometry&, const std::vector<int>&,
                                                    Ranking, Distance);
const MetricsFn kPaths[] = {&attngeo::theory::selection_metrics_reference,
                            &attngeo::theory::selection_metrics_gram};

std::string label(Ranking r, Distance d) {
    return std::string(attngeo::theory::to_string(r)) + "/" + attngeo::theory::to_string(d);
}

TokenGeometry make_tokens(const std::vector<double>& alpha,
                          const std::vector<std::vector<double>>& values) {
    TokenGeometry t;
    const int n = static_cast<int>(alpha.size());
    const int d = values.empty() ? 0 : static_cast<int>(values[0].size());
    t.alpha = Eigen::Map<const Eigen::VectorXd>(alpha.data(), n);
    t.values.resize(n, d);
    for (int i = 0; i < n; ++i)
        for (int k = 0; k < d; ++k)
            t.values(i, k) = values[i][k];
    return t;
}

std::vector<int> all_sizes(int n) {
    std::vector<int> sizes(n);
    std::iota(sizes.begin(), sizes.end(), 1);
    return sizes;
}

// Random α: normalised exponential variates (a flat Dirichlet), so all values distinct.
std::vector<double> random_alpha(std::mt19937_64& rng, int n) {
    std::exponential_distribution<double> e(1.0);
    std::vector<double> a(n);
    double total = 0;
    for (double& x : a)
        total += (x = e(rng));
    for (double& x : a)
        x /= total;
    return a;
}

TokenGeometry random_tokens(std::mt19937_64& rng, int n, int d) {
    std::normal_distribution<double> g(0.0, 1.0);
    std::vector<std::vector<double>> v(n, std::vector<double>(d));
    for (auto& row : v)
        for (double& x : row)
            x = g(rng);
    return make_tokens(random_alpha(rng, n), v);
}

// ---------------------------------------------------------------------------------------------
// Independent brute force written from docs/design.md §2 with plain loops and std::vector<double>.

struct PlainRow {
    double r_min = kInf, r_max = 0;
    int K_in = 0, K_out = 0;
    double P = 1, R = 1, F_max = 1, F_min = 1;
};

std::vector<PlainRow> plain_metrics(const TokenGeometry& tokens, Ranking ranking,
                                    Distance distance) {
    const int n = static_cast<int>(tokens.alpha.size());
    const int d = static_cast<int>(tokens.values.cols());
    std::vector<double> alpha(n);
    std::vector<std::vector<double>> v(n, std::vector<double>(d)), y(n, std::vector<double>(d));
    for (int i = 0; i < n; ++i) {
        alpha[i] = tokens.alpha[i];
        for (int k = 0; k < d; ++k) {
            v[i][k] = tokens.values(i, k);
            y[i][k] = alpha[i] * v[i][k];  // y_i = α_i v_i
        }
    }
    auto norm = [](const std::vector<double>& x) {
        double s = 0;
        for (double c : x)
            s += c * c;
        return std::sqrt(s);
    };
    // Score α_i or a_i = α_i‖v_i‖; rank by score descending, ties by the lower index.
    std::vector<double> score(n);
    for (int i = 0; i < n; ++i)
        score[i] = ranking == Ranking::attention ? alpha[i] : alpha[i] * norm(v[i]);
    std::vector<int> rank(n);
    for (int i = 0; i < n; ++i)
        rank[i] = i;
    for (int a = 0; a < n; ++a) {  // selection sort: plain and obviously right
        int best = a;
        for (int b = a + 1; b < n; ++b) {
            const int x = rank[b], y_best = rank[best];
            if (score[x] > score[y_best] || (score[x] == score[y_best] && x < y_best)) best = b;
        }
        std::swap(rank[a], rank[best]);
    }

    std::vector<PlainRow> rows;
    for (int N = 1; N <= n; ++N) {
        std::vector<char> in(n, 0);
        std::vector<double> s(d, 0.0);
        for (int k = 0; k < N; ++k) {  // s(N) = Σ_{k∈I_N} y_k, summed in rank order (eq. 1)
            in[rank[k]] = 1;
            for (int c = 0; c < d; ++c)
                s[c] += y[rank[k]][c];
        }
        const double s_norm = norm(s);
        std::vector<double> D(n);
        for (int l = 0; l < n; ++l) {
            if (distance == Distance::euclidean) {
                double sum = 0;
                for (int c = 0; c < d; ++c)
                    sum += (s[c] - y[l][c]) * (s[c] - y[l][c]);
                D[l] = sum;
            } else {
                double dot = 0;
                for (int c = 0; c < d; ++c)
                    dot += y[l][c] * s[c];
                D[l] = 1.0 - dot / (norm(y[l]) * s_norm + 1e-12);
            }
        }
        double max_in = -kInf, min_out = kInf;
        for (int l = 0; l < n; ++l) {
            if (in[l]) max_in = std::max(max_in, D[l]);
            if (!in[l]) min_out = std::min(min_out, D[l]);
        }
        PlainRow row;
        row.r_max = std::sqrt(std::max(0.0, max_in));
        if (N == n) {  // nothing left out: r_min = +inf, K_in = n, K_out = 0
            row.K_in = n;
        } else {
            row.r_min = std::sqrt(std::max(0.0, min_out));
            // r_min² and r_max² are the extreme D values themselves (no round trip via √).
            for (int l = 0; l < n; ++l) {
                if (in[l] && D[l] <= min_out) ++row.K_in;
                if (!in[l] && D[l] <= max_in) ++row.K_out;
            }
        }
        row.P = double(N) / (N + row.K_out);
        row.R = double(row.K_in) / N;
        row.F_max = 2 * row.P / (1 + row.P);
        row.F_min = 2 * row.R / (1 + row.R);
        rows.push_back(row);
    }
    return rows;
}

// Largest differences seen, per distance: Euclidean radii relative, cosine D = r² absolute.
struct Worst {
    double euclidean_rel = 0, cosine_abs = 0;
    std::string text() const {
        std::ostringstream out;
        out << std::scientific << std::setprecision(3) << "euclidean radius rel. diff "
            << euclidean_rel << ", cosine D abs. diff " << cosine_abs;
        return out.str();
    }
};

// Radii agree: inf equals inf; Euclidean radii to `tol` relative. Cosine distances D ∈ [0, 2]
// carry an absolute rounding error ~1e-16, so tiny cosine radii (s itself) have no relative
// accuracy: they are compared through D = r² to `tol` absolute.
bool radius_close(double a, double b, double tol, Distance distance, Worst* worst) {
    if (std::isinf(a) || std::isinf(b)) return a == b;
    if (distance == Distance::cosine) {
        const double diff = std::abs(a * a - b * b);
        worst->cosine_abs = std::max(worst->cosine_abs, diff);
        return diff <= tol;
    }
    const double diff = std::abs(a - b);
    const double scale = std::max(std::abs(a), std::abs(b));
    const double rel = scale > 0 ? diff / scale : 0.0;
    worst->euclidean_rel = std::max(worst->euclidean_rel, rel);
    return rel <= tol;
}

void expect_same_rows(const std::vector<SelectionMetrics>& a,
                      const std::vector<SelectionMetrics>& b, double rel, Distance distance,
                      Worst* worst, const std::string& what) {
    ASSERT_EQ(a.size(), b.size()) << what;
    for (std::size_t k = 0; k < a.size(); ++k) {
        EXPECT_EQ(a[k].N, b[k].N) << what;
        EXPECT_EQ(a[k].K_in, b[k].K_in) << what << " N=" << a[k].N;
        EXPECT_EQ(a[k].K_out, b[k].K_out) << what << " N=" << a[k].N;
        EXPECT_TRUE(radius_close(a[k].r_min, b[k].r_min, rel, distance, worst))
            << what << " N=" << a[k].N << " r_min " << a[k].r_min << " vs " << b[k].r_min;
        EXPECT_TRUE(radius_close(a[k].r_max, b[k].r_max, rel, distance, worst))
            << what << " N=" << a[k].N << " r_max " << a[k].r_max << " vs " << b[k].r_max;
    }
}

// ---------------------------------------------------------------------------------------------
// Hand-computed 2-D example (in the spirit of the paper's Figure 1).
//
// α = (1/2, 1/4, 1/8, 3/32, 1/32): dyadic, distinct, rank order 0,1,2,3,4. The values are
// chosen so that y_i = α_i v_i are exact small numbers:
//   v0 = (2,0)  -> y0 = (1,0)        v1 = (0,4)   -> y1 = (0,1)       v2 = (8,8) -> y2 = (1,1)
//   v3 = (-8,0) -> y3 = (-0.75,0)    v4 = (64,0)  -> y4 = (2,0)
// Squared Euclidean distances D_ℓ = ‖s − y_ℓ‖² (selected set in brackets):
//   N=1 [0]       s=(1,0):    D = 0, 2, 1, 3.0625, 1          r_max=0,  r_min=√1=1
//        K_in = #{D0<=1} = 1, K_out = #{D_j<=0} = 0 -> P = 1, R = 1
//   N=2 [0,1]     s=(1,1):    D = 1, 1, 0, 4.0625, 2          r_max=1,  r_min=0 (y2 = s!)
//        K_in = #{D<=0 in I} = 0, K_out = #{D<=1 out} = 1 (y2) -> P = 2/3, R = 0
//   N=3 [0,1,2]   s=(2,2):    D = 5, 5, 2, 11.5625, 4         r_max=√5, r_min=2
//        K_in = #{D<=4 in I} = 1 (y2), K_out = #{D<=5 out} = 1 (y4) -> P = 3/4, R = 1/3
//   N=4 [0..3]    s=(1.25,2): D = 4.0625, 2.5625, 1.0625, 8, 4.5625   r_max=√8, r_min=√4.5625
//        K_in = #{D<=4.5625 in I} = 3, K_out = #{D4<=8} = 1 -> P = 4/5, R = 3/4
//   N=5 [all]     s=(3.25,2): D = 9.0625, 11.5625, 6.0625, 20, 5.5625 r_max=√20, r_min=+inf
//        convention: K_in = 5, K_out = 0, P = R = 1
// F(r_max) = 2P/(1+P): 1, 4/5, 6/7, 8/9, 1.  F(r_min) = 2R/(1+R): 1, 0, 1/2, 6/7, 1.
TokenGeometry hand_example() {
    return make_tokens({0.5, 0.25, 0.125, 3.0 / 32, 1.0 / 32},
                       {{2, 0}, {0, 4}, {8, 8}, {-8, 0}, {64, 0}});
}

struct HandRow {
    double r_max, r_min;
    int K_in, K_out;
    double P, R, F_max, F_min;
};

const HandRow kHandRows[] = {
    {0.0, 1.0, 1, 0, 1.0, 1.0, 1.0, 1.0},
    {1.0, 0.0, 0, 1, 2.0 / 3, 0.0, 4.0 / 5, 0.0},
    {std::sqrt(5.0), 2.0, 1, 1, 3.0 / 4, 1.0 / 3, 6.0 / 7, 1.0 / 2},
    {std::sqrt(8.0), std::sqrt(4.5625), 3, 1, 4.0 / 5, 3.0 / 4, 8.0 / 9, 6.0 / 7},
    {std::sqrt(20.0), kInf, 5, 0, 1.0, 1.0, 1.0, 1.0},
};

TEST(MetricsHandExample, EuclideanAttentionMatchesHandComputation) {
    const TokenGeometry tokens = hand_example();
    for (MetricsFn path : kPaths) {
        const auto rows = path(tokens, all_sizes(5), Ranking::attention, Distance::euclidean);
        ASSERT_EQ(rows.size(), 5u);
        for (int k = 0; k < 5; ++k) {
            const HandRow& h = kHandRows[k];
            SCOPED_TRACE("N=" + std::to_string(k + 1));
            EXPECT_EQ(rows[k].N, k + 1);
            // All distances are exact dyadic numbers, so radii are exactly √D.
            EXPECT_EQ(rows[k].r_max, h.r_max);
            EXPECT_EQ(rows[k].r_min, h.r_min);
            EXPECT_EQ(rows[k].K_in, h.K_in);
            EXPECT_EQ(rows[k].K_out, h.K_out);
            EXPECT_DOUBLE_EQ(rows[k].precision_at_rmax, h.P);
            EXPECT_DOUBLE_EQ(rows[k].recall_at_rmin, h.R);
            EXPECT_DOUBLE_EQ(rows[k].f_at_rmax, h.F_max);
            EXPECT_DOUBLE_EQ(rows[k].f_at_rmin, h.F_min);
        }
    }
}

TEST(MetricsHandExample, BallMetricsAtChosenRadii) {
    const TokenGeometry tokens = hand_example();
    // N=3, s=(2,2), D = 5, 5, 2 (selected 0,1,2), 11.5625, 4 (left out 3,4).
    // r = 2.1: D<=4.41 -> selected {2}, unselected {4}: P = 1/2, R = 1/3, F = 2/5.
    const BallMetrics b =
        attngeo::theory::metrics_at_radius(tokens, 3, 2.1, Ranking::attention, Distance::euclidean);
    EXPECT_EQ(b.selected_inside, 1);
    EXPECT_EQ(b.unselected_inside, 1);
    EXPECT_DOUBLE_EQ(b.precision, 0.5);
    EXPECT_DOUBLE_EQ(b.recall, 1.0 / 3);
    EXPECT_DOUBLE_EQ(b.f, 2 * 0.5 * (1.0 / 3) / (0.5 + 1.0 / 3));
    // r = 1 (< √2): empty ball -> P = 1 by convention, R = 0, F = 0.
    const BallMetrics empty =
        attngeo::theory::metrics_at_radius(tokens, 3, 1.0, Ranking::attention, Distance::euclidean);
    EXPECT_EQ(empty.selected_inside + empty.unselected_inside, 0);
    EXPECT_EQ(empty.precision, 1.0);
    EXPECT_EQ(empty.recall, 0.0);
    EXPECT_EQ(empty.f, 0.0);
}

TEST(MetricsHandExample, ContributionRankingWithTie) {
    // Scores a_i = ‖y_i‖ = 1, 1, √2, 0.75, 2: rank order 4, 2, 0, 1 (tie 0/1 -> index 0 first), 3.
    // N=1: s = y4 = (2,0), D = 1, 5, 2, 7.5625, 0 -> r_max = 0, r_min = 1.
    // N=3 [4,2,0]: s = (4,1), D = 10, 16, 9, 23.5625, 5 -> r_max = √10, r_min = 4;
    //   K_in = #{10,9,5 <= 16} = 3, K_out = #{16, 23.5625 <= 10} = 0.
    // If the tie went to token 1 instead, N=3 would be [4,2,1], s=(3,2) and r_max = √5.
    const auto rows = attngeo::theory::selection_metrics_reference(
        hand_example(), {1, 3}, Ranking::contribution, Distance::euclidean);
    EXPECT_EQ(rows[0].r_max, 0.0);
    EXPECT_EQ(rows[0].r_min, 1.0);
    EXPECT_EQ(rows[1].r_max, std::sqrt(10.0));
    EXPECT_EQ(rows[1].r_min, 4.0);
    EXPECT_EQ(rows[1].K_in, 3);
    EXPECT_EQ(rows[1].K_out, 0);
}

TEST(MetricsHandExample, CosineDistanceAtN1) {
    // N=1, s = y0 = (1,0), ‖s‖ = 1: cosine D_ℓ = 1 − ⟨y_ℓ,s⟩/(‖y_ℓ‖‖s‖ + 1e-12).
    //   D0 = 1 − 1/(1 + 1e-12) ≈ 1e-12      (s itself: not 0 because of the 1e-12 term)
    //   D1 = 1 (orthogonal), D2 = 1 − 1/(√2 + 1e-12), D3 = 1 + 0.75/(0.75 + 1e-12) (opposite)
    //   D4 = 1 − 2/(2 + 1e-12) ≈ 5e-13      (parallel, twice as long)
    // So the parallel left-out token 4 is "closer" to s than s's own token (D4 < D0):
    // r_max = √D0, r_min = √D4, K_in = #{D0 ≤ D4} = 0, K_out = #{D4 ≤ D0} = 1 -> P = 1/2, R = 0.
    // In cosine distance a parallel point counts as coinciding with s (docs/design.md §2 N = 1
    // rule).
    const auto rows = attngeo::theory::selection_metrics_reference(
        hand_example(), {1}, Ranking::attention, Distance::cosine);
    EXPECT_EQ(rows[0].r_max, std::sqrt(1.0 - 1.0 / (1.0 + 1e-12)));
    EXPECT_EQ(rows[0].r_min, std::sqrt(1.0 - 2.0 / (2.0 + 1e-12)));
    EXPECT_EQ(rows[0].K_in, 0);
    EXPECT_EQ(rows[0].K_out, 1);
    EXPECT_EQ(rows[0].precision_at_rmax, 0.5);
    EXPECT_EQ(rows[0].recall_at_rmin, 0.0);
    const auto gram = attngeo::theory::selection_metrics_gram(hand_example(), {1},
                                                              Ranking::attention, Distance::cosine);
    EXPECT_EQ(gram[0].r_max, rows[0].r_max);
    EXPECT_EQ(gram[0].r_min, rows[0].r_min);
    EXPECT_EQ(gram[0].K_in, 0);
    EXPECT_EQ(gram[0].K_out, 1);
}

// ---------------------------------------------------------------------------------------------
// Identities of eq. (4) and the N = 1, N = n conventions.

TEST(MetricsIdentities, RecallAtRmaxIsOneAndPrecisionJustBelowRminIsOne) {
    std::mt19937_64 rng(11);
    int checked_boundary = 0;
    for (int trial = 0; trial < repeats(40); ++trial) {
        const int n = 2 + static_cast<int>(rng() % 40), d = 1 + static_cast<int>(rng() % 6);
        const TokenGeometry tokens = random_tokens(rng, n, d);
        for (Ranking ranking : kRankings) {
            for (Distance distance : kDistances) {
                const auto rows = attngeo::theory::selection_metrics_reference(tokens, all_sizes(n),
                                                                               ranking, distance);
                for (const SelectionMetrics& m : rows) {
                    SCOPED_TRACE(label(ranking, distance) + " n=" + std::to_string(n) +
                                 " N=" + std::to_string(m.N));
                    // R(r_max, N) = 1: every selected token lies in the closed ball B_{r_max}.
                    const BallMetrics at_max =
                        attngeo::theory::metrics_at_radius(tokens, m.N, m.r_max, ranking, distance);
                    EXPECT_EQ(at_max.recall, 1.0);
                    EXPECT_EQ(at_max.selected_inside, m.N);
                    EXPECT_EQ(at_max.unselected_inside, m.K_out);
                    EXPECT_EQ(at_max.precision, m.precision_at_rmax);
                    if (m.N == n || m.r_min == 0) continue;
                    // P(r, N) = 1 for r just below r_min: no left-out token inside.
                    const double below = std::nextafter(m.r_min, 0.0);
                    const BallMetrics under =
                        attngeo::theory::metrics_at_radius(tokens, m.N, below, ranking, distance);
                    EXPECT_EQ(under.unselected_inside, 0);
                    EXPECT_EQ(under.precision, 1.0);
                    // At exactly r_min the closed ball holds the nearest left-out token, so
                    // P(r_min, N) < 1 as computed; eq. (4) holds as the limit from below.
                    const BallMetrics at_min =
                        attngeo::theory::metrics_at_radius(tokens, m.N, m.r_min, ranking, distance);
                    EXPECT_GE(at_min.unselected_inside, 1);
                    EXPECT_LT(at_min.precision, 1.0);
                    EXPECT_EQ(at_min.selected_inside, m.K_in);
                    EXPECT_DOUBLE_EQ(at_min.recall, m.recall_at_rmin);
                    ++checked_boundary;
                }
            }
        }
    }
    EXPECT_GT(checked_boundary, 100);
}

TEST(MetricsConventions, SingleSelectedToken) {
    // N = 1: s = y_{π0}, so r_max = 0, R = 1, and P = 1 on generic inputs.
    std::mt19937_64 rng(12);
    const TokenGeometry tokens = random_tokens(rng, 9, 3);
    for (Ranking ranking : kRankings) {
        for (Distance distance : kDistances) {
            for (MetricsFn path : kPaths) {
                const SelectionMetrics m = path(tokens, {1}, ranking, distance)[0];
                SCOPED_TRACE(label(ranking, distance));
                if (distance == Distance::euclidean) {
                    EXPECT_EQ(m.r_max, 0.0);
                }
                // cosine: D(s, s) = 1 − ‖s‖²/(‖s‖² + 1e-12) ≈ 1e-12/‖s‖², tiny but not 0.
                EXPECT_LT(m.r_max, 1e-5);
                EXPECT_EQ(m.K_in, 1);
                EXPECT_EQ(m.K_out, 0);
                EXPECT_EQ(m.recall_at_rmin, 1.0);
                EXPECT_EQ(m.precision_at_rmax, 1.0);
            }
        }
    }
}

TEST(MetricsConventions, SingleSelectedTokenWithCoincidentLeftOutPoint) {
    // α = (1/2, 1/4, 1/4); y0 = (1/2)(1,1) = (0.5,0.5), y1 = (1/4)(2,2) = (0.5,0.5) = s at N=1,
    // y2 = (1/4)(0,4) = (0,1). N=1: D = 0, 0, 0.5 -> r_max = 0, r_min = 0,
    // K_out = #{D_j ≤ 0} = 1 (token 1) -> P = 1/2; K_in = #{D0 ≤ 0} = 1 -> R = 1.
    const TokenGeometry tokens = make_tokens({0.5, 0.25, 0.25}, {{1, 1}, {2, 2}, {0, 4}});
    for (MetricsFn path : kPaths) {
        const SelectionMetrics m = path(tokens, {1}, Ranking::attention, Distance::euclidean)[0];
        EXPECT_EQ(m.r_max, 0.0);
        EXPECT_EQ(m.r_min, 0.0);
        EXPECT_EQ(m.K_out, 1);
        EXPECT_EQ(m.K_in, 1);
        EXPECT_EQ(m.precision_at_rmax, 0.5);
        EXPECT_EQ(m.recall_at_rmin, 1.0);
        EXPECT_DOUBLE_EQ(m.f_at_rmax, 2.0 / 3);
    }
}

TEST(MetricsConventions, AllTokensSelected) {
    std::mt19937_64 rng(13);
    for (int n : {1, 2, 7}) {
        const TokenGeometry tokens = random_tokens(rng, n, 4);
        for (Ranking ranking : kRankings) {
            for (Distance distance : kDistances) {
                for (MetricsFn path : kPaths) {
                    const SelectionMetrics m = path(tokens, {n}, ranking, distance)[0];
                    SCOPED_TRACE(label(ranking, distance) + " n=" + std::to_string(n));
                    EXPECT_EQ(m.N, n);
                    EXPECT_EQ(m.r_min, kInf);
                    EXPECT_EQ(m.K_in, n);
                    EXPECT_EQ(m.K_out, 0);
                    EXPECT_EQ(m.precision_at_rmax, 1.0);
                    EXPECT_EQ(m.recall_at_rmin, 1.0);
                    EXPECT_EQ(m.f_at_rmax, 1.0);
                    EXPECT_EQ(m.f_at_rmin, 1.0);
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Ties.

TEST(MetricsTies, EqualWeightsSelectLowerIndexFirst) {
    // α = (1/16, 5/16, 5/16, 5/16): tokens 1, 2, 3 tie; with the lower index first the rank
    // order is 1, 2, 3, 0. Values on a line, v = 0, 1, 3, 7 along x, so in units of 1/16
    // y = 0, 5, 15, 35 (exact dyadic numbers). Squared distances in units of 1/256:
    //   N=1 [1]:     s = 5:  D = 25, 0, 100, 900      -> r_max = 0, r_min = 5/16 (token 0)
    //   N=2 [1,2]:   s = 20: D = 400, 225, 25, 225    -> r_max = 15/16, r_min = 15/16 (token 3)
    //                K_in = #{225, 25 ≤ 225} = 2, K_out = #{400, 225 ≤ 225} = 1 -> P = 2/3, R = 1
    //   N=3 [1,2,3]: s = 55: D = 3025, 2500, 1600, 400 -> r_max = 50/16, r_min = 55/16
    // Had the tie gone to the higher index (order 3, 2, 1), N=1 would give s = 35 and
    // r_min = 20/16, and N=2 s = 50, r_max = 20/16.
    const TokenGeometry tokens =
        make_tokens({1.0 / 16, 5.0 / 16, 5.0 / 16, 5.0 / 16}, {{0, 0}, {1, 0}, {3, 0}, {7, 0}});
    for (MetricsFn path : kPaths) {
        const auto rows = path(tokens, {1, 2, 3}, Ranking::attention, Distance::euclidean);
        EXPECT_EQ(rows[0].r_max, 0.0);
        EXPECT_EQ(rows[0].r_min, 5.0 / 16);
        EXPECT_EQ(rows[1].r_max, 15.0 / 16);
        EXPECT_EQ(rows[1].r_min, 15.0 / 16);
        EXPECT_EQ(rows[1].K_in, 2);
        EXPECT_EQ(rows[1].K_out, 1);
        EXPECT_DOUBLE_EQ(rows[1].precision_at_rmax, 2.0 / 3);
        EXPECT_EQ(rows[1].recall_at_rmin, 1.0);
        EXPECT_EQ(rows[2].r_max, 50.0 / 16);
        EXPECT_EQ(rows[2].r_min, 55.0 / 16);
        EXPECT_EQ(rows[2].K_in, 3);
        EXPECT_EQ(rows[2].K_out, 0);
    }
    // selection_order itself: scores (0.2, 0.5, 0.5, 0.1, 0.5) -> 1, 2, 4, 0, 3.
    const Eigen::VectorXd scores = (Eigen::VectorXd(5) << 0.2, 0.5, 0.5, 0.1, 0.5).finished();
    EXPECT_EQ(attngeo::theory::selection_order(scores), (std::vector<int>{1, 2, 4, 0, 3}));
}

TEST(MetricsTies, DyadicTieAndDuplicatePointsCountInsideClosedBalls) {
    // α = (1/2, 1/4, 1/8, 1/8): tokens 2 and 3 tie in α and have the same value (duplicates).
    // y0 = (1/2)(2,0) = (1,0), y1 = (1/4)(-4,0) = (-1,0), y2 = y3 = (1/8)(0,8) = (0,1).
    // N=2 [0,1]: s = (0,0), D = 1, 1, 1, 1 -> r_max = r_min = 1; both left-out duplicates
    //            lie on the boundary of the closed ball: K_out = 2 -> P = 2/4; K_in = 2 -> R = 1.
    // N=3 [0,1,2] (tie 2/3 -> token 2): s = (0,1), D = 2, 2, 0, 0 -> r_max = √2, r_min = 0,
    //            K_out = 1 (token 3 coincides with s), K_in = 1 (token 2) -> P = 3/4, R = 1/3.
    // (Tokens 2 and 3 are interchangeable here; the second case below separates them.)
    const TokenGeometry tokens =
        make_tokens({0.5, 0.25, 0.125, 0.125}, {{2, 0}, {-4, 0}, {0, 8}, {0, 8}});
    for (MetricsFn path : kPaths) {
        for (Ranking ranking : kRankings) {  // a_i = 1, 1, 1, 1 under contrib: order 0,1,2,3
            const auto rows = path(tokens, {2, 3}, ranking, Distance::euclidean);
            EXPECT_EQ(rows[0].r_max, 1.0);
            EXPECT_EQ(rows[0].r_min, 1.0);
            EXPECT_EQ(rows[0].K_out, 2);
            EXPECT_EQ(rows[0].K_in, 2);
            EXPECT_EQ(rows[0].precision_at_rmax, 0.5);
            EXPECT_EQ(rows[0].recall_at_rmin, 1.0);
            EXPECT_EQ(rows[1].r_max, std::sqrt(2.0));
            EXPECT_EQ(rows[1].r_min, 0.0);
            EXPECT_EQ(rows[1].K_out, 1);
            EXPECT_EQ(rows[1].K_in, 1);
            EXPECT_EQ(rows[1].precision_at_rmax, 0.75);
            EXPECT_DOUBLE_EQ(rows[1].recall_at_rmin, 1.0 / 3);
        }
    }
    // Same α, but token 3 sits at y3 = (1/8)(0,16) = (0,2). The tie in α must select token 2:
    // N=3 [0,1,2]: s = (0,1), D = 2, 2, 0, 1 -> r_max = √2, r_min = 1, K_out = 1, K_in = 1.
    // Selecting token 3 instead would give s = (0,2), D = 5, 5, 1, 0 -> r_max = √5.
    const TokenGeometry moved =
        make_tokens({0.5, 0.25, 0.125, 0.125}, {{2, 0}, {-4, 0}, {0, 8}, {0, 16}});
    for (MetricsFn path : kPaths) {
        const SelectionMetrics m = path(moved, {3}, Ranking::attention, Distance::euclidean)[0];
        EXPECT_EQ(m.r_max, std::sqrt(2.0));
        EXPECT_EQ(m.r_min, 1.0);
        EXPECT_EQ(m.K_out, 1);
        EXPECT_EQ(m.K_in, 1);
    }
}

// ---------------------------------------------------------------------------------------------
// Invariances.

TEST(MetricsInvariance, PermutingTokensWithTheirWeights) {
    std::mt19937_64 rng(21);
    Worst worst;
    for (int trial = 0; trial < repeats(30); ++trial) {
        const int n = 2 + static_cast<int>(rng() % 60), d = 1 + static_cast<int>(rng() % 8);
        const TokenGeometry tokens = random_tokens(rng, n, d);  // distinct α: no ties
        // Keep the sink at index 0 and shuffle 1..L; also try a full shuffle (the metrics do
        // not single out token 0).
        for (bool keep_sink : {true, false}) {
            std::vector<int> perm(n);
            std::iota(perm.begin(), perm.end(), 0);
            std::shuffle(perm.begin() + (keep_sink ? 1 : 0), perm.end(), rng);
            TokenGeometry shuffled = tokens;
            for (int i = 0; i < n; ++i) {
                shuffled.alpha[i] = tokens.alpha[perm[i]];
                shuffled.values.row(i) = tokens.values.row(perm[i]);
            }
            for (MetricsFn path : kPaths) {
                for (Ranking ranking : kRankings) {
                    for (Distance distance : kDistances) {
                        expect_same_rows(path(tokens, all_sizes(n), ranking, distance),
                                         path(shuffled, all_sizes(n), ranking, distance), 1e-9,
                                         distance, &worst, "permute " + label(ranking, distance));
                    }
                }
            }
        }
    }
    std::cout << "[ info     ] permutation: " << worst.text() << "\n";
    RecordProperty("max_radius_diff", worst.text());
}

TEST(MetricsInvariance, RotatingAllValues) {
    std::mt19937_64 rng(22);
    std::normal_distribution<double> g(0.0, 1.0);
    Worst worst;
    for (int trial = 0; trial < repeats(30); ++trial) {
        const int n = 2 + static_cast<int>(rng() % 60), d = 1 + static_cast<int>(rng() % 10);
        const TokenGeometry tokens = random_tokens(rng, n, d);
        Eigen::MatrixXd m(d, d);
        for (int r = 0; r < d; ++r)
            for (int c = 0; c < d; ++c)
                m(r, c) = g(rng);
        const Eigen::MatrixXd q = Eigen::HouseholderQR<Eigen::MatrixXd>(m).householderQ();
        ASSERT_LT((q.transpose() * q - Eigen::MatrixXd::Identity(d, d)).norm(), 1e-12);
        TokenGeometry rotated = tokens;
        rotated.values = tokens.values * q;  // v_i ← Qᵀ v_i for every row
        for (MetricsFn path : kPaths) {
            for (Ranking ranking : kRankings) {
                for (Distance distance : kDistances) {
                    expect_same_rows(path(tokens, all_sizes(n), ranking, distance),
                                     path(rotated, all_sizes(n), ranking, distance), 1e-9, distance,
                                     &worst, "rotate " + label(ranking, distance));
                }
            }
        }
    }
    std::cout << "[ info     ] rotation: " << worst.text() << "\n";
    RecordProperty("max_radius_diff", worst.text());
}

TEST(MetricsInvariance, ScalingAllValues) {
    std::mt19937_64 rng(23);
    Worst worst;
    for (int trial = 0; trial < repeats(30); ++trial) {
        // d ≥ 2: in d = 1 all points are (anti)parallel, every cosine distance ties with the
        // rounding of the 1e-12 term, and the counts are decided by that rounding alone.
        const int n = 2 + static_cast<int>(rng() % 60), d = 2 + static_cast<int>(rng() % 9);
        // The 1e-12 in the cosine denominator breaks exact scale invariance by about
        // 1e-12/(‖y‖‖s‖): values are drawn large (x1e4) so that this stays far below 1e-9.
        TokenGeometry tokens = random_tokens(rng, n, d);
        tokens.values *= 1e4;
        for (double c : {0.37, 3.1, 1e3}) {
            TokenGeometry scaled = tokens;
            scaled.values *= c;
            for (MetricsFn path : kPaths) {
                for (Ranking ranking : kRankings) {
                    for (Distance distance : kDistances) {
                        auto base = path(tokens, all_sizes(n), ranking, distance);
                        // Euclidean radii scale by c; cosine distances do not change.
                        if (distance == Distance::euclidean) {
                            for (auto& row : base) {
                                row.r_min *= c;
                                row.r_max *= c;
                            }
                        }
                        expect_same_rows(
                            base, path(scaled, all_sizes(n), ranking, distance), 1e-9, distance,
                            &worst, "scale " + std::to_string(c) + " " + label(ranking, distance));
                    }
                }
            }
        }
    }
    std::cout << "[ info     ] scaling: " << worst.text() << "\n";
    RecordProperty("max_radius_diff", worst.text());
}

// ---------------------------------------------------------------------------------------------
// Gram path against the per-N reference, including adversarial inputs.

enum class Family {
    gaussian,
    duplicate_rows,
    equal_alpha,
    alpha_with_zeros,
    single_token,
    one_dimension,
    tiny_scale,
    subnormal_products,
    huge_scale,
    opposite_pairs,
    near_duplicates,
    integer_lattice,
    count
};

const char* family_name(Family f) {
    static const char* names[] = {"gaussian",         "duplicate_rows",     "equal_alpha",
                                  "alpha_with_zeros", "single_token",       "one_dimension",
                                  "tiny_scale",       "subnormal_products", "huge_scale",
                                  "opposite_pairs",   "near_duplicates",    "integer_lattice"};
    return names[static_cast<int>(f)];
}

TokenGeometry adversarial_tokens(std::mt19937_64& rng, Family family) {
    std::normal_distribution<double> g(0.0, 1.0);
    int n = 1 + static_cast<int>(rng() % 300);
    int d = 1 + static_cast<int>(rng() % 64);
    if (family == Family::single_token) n = 1;
    if (family == Family::one_dimension) d = 1;
    std::vector<double> alpha = random_alpha(rng, n);
    std::vector<std::vector<double>> v(n, std::vector<double>(d));
    for (auto& row : v)
        for (double& x : row)
            x = g(rng);
    switch (family) {
        case Family::duplicate_rows: {  // rows (and sometimes α) drawn from a small pool
            const int pool = 1 + static_cast<int>(rng() % 4);
            const bool same_alpha = rng() % 2 == 0;
            for (int i = 0; i < n; ++i) {
                const int p = static_cast<int>(rng() % pool);
                v[i] = v[p];
                if (same_alpha) alpha[i] = alpha[p];
            }
            break;
        }
        case Family::equal_alpha:
            std::fill(alpha.begin(), alpha.end(), 1.0 / n);
            break;
        case Family::alpha_with_zeros:
            for (double& a : alpha)
                if (rng() % 3 == 0) a = 0;
            break;
        case Family::tiny_scale:
        case Family::subnormal_products:
        case Family::huge_scale: {
            // 1e-158: the products y_t·y_t fall into the subnormal range, where rounding
            // errors are absolute (this found a gap in the Gram error bound).
            const double c = family == Family::tiny_scale           ? 1e-150
                             : family == Family::subnormal_products ? 1e-158
                                                                    : 1e150;
            for (auto& row : v)
                for (double& x : row)
                    x *= c;
            break;
        }
        case Family::opposite_pairs:  // v and −v with the same α: s cancels to 0 exactly
            for (int i = 1; i < n; i += 2) {
                for (int k = 0; k < d; ++k)
                    v[i][k] = -v[i - 1][k];
                alpha[i] = alpha[i - 1];
            }
            break;
        case Family::near_duplicates:  // a tight cluster: distances nearly tie
            for (int i = 1; i < n; ++i)
                for (int k = 0; k < d; ++k)
                    v[i][k] = v[0][k] + 1e-9 * g(rng);
            break;
        case Family::integer_lattice:  // small integers: many exact distance ties
            for (int i = 0; i < n; ++i) {
                alpha[i] = 1 + static_cast<int>(rng() % 3);
                for (double& x : v[i])
                    x = static_cast<int>(rng() % 3) - 1.0;
            }
            break;
        default:
            break;
    }
    return make_tokens(alpha, v);
}

TEST(MetricsGram, MatchesReferenceBitwiseOnRandomAndAdversarialInputs) {
    std::mt19937_64 rng(31);
    double worst = 0;
    int inputs = 0;
    long exact_decisions = 0;
    const int per_family = kRepeatScale == 1 ? 12 : 3;
    for (int f = 0; f < static_cast<int>(Family::count); ++f) {
        const Family family = static_cast<Family>(f);
        for (int trial = 0; trial < per_family; ++trial) {
            const TokenGeometry tokens = adversarial_tokens(rng, family);
            const int n = static_cast<int>(tokens.alpha.size());
            ++inputs;
            for (Ranking ranking : kRankings) {
                for (Distance distance : kDistances) {
                    const auto ref = attngeo::theory::selection_metrics_reference(
                        tokens, all_sizes(n), ranking, distance);
                    const auto gram = attngeo::theory::selection_metrics_gram(tokens, all_sizes(n),
                                                                              ranking, distance);
                    const std::string what = std::string(family_name(family)) + " " +
                                             label(ranking, distance) + " n=" + std::to_string(n) +
                                             " d=" + std::to_string(tokens.values.cols());
                    ASSERT_EQ(ref.size(), gram.size());
                    for (int k = 0; k < n; ++k) {
                        EXPECT_EQ(ref[k].K_in, gram[k].K_in) << what << " N=" << k + 1;
                        EXPECT_EQ(ref[k].K_out, gram[k].K_out) << what << " N=" << k + 1;
                        EXPECT_EQ(ref[k].exact_decisions, gram[k].exact_decisions)
                            << what << " N=" << k + 1;
                        exact_decisions += ref[k].exact_decisions;
                        // Bitwise: the Gram path re-evaluates extremes with the same kernel.
                        EXPECT_EQ(ref[k].r_min, gram[k].r_min) << what << " N=" << k + 1;
                        EXPECT_EQ(ref[k].r_max, gram[k].r_max) << what << " N=" << k + 1;
                        EXPECT_EQ(ref[k].precision_at_rmax, gram[k].precision_at_rmax);
                        EXPECT_EQ(ref[k].recall_at_rmin, gram[k].recall_at_rmin);
                        if (std::isfinite(ref[k].r_min))
                            worst = std::max(worst, std::abs(ref[k].r_min - gram[k].r_min));
                        worst = std::max(worst, std::abs(ref[k].r_max - gram[k].r_max));
                    }
                }
            }
            if (HasFailure()) return;  // one failing input is enough to read
        }
    }
    std::cout << "[ info     ] Gram vs reference: " << inputs
              << " inputs, largest radius difference " << worst << ", " << exact_decisions
              << " exact decisions\n";
    RecordProperty("max_abs_radius_diff", std::to_string(worst));
}

TEST(MetricsGram, SubsetOfSizesInAnyOrder) {
    // `sizes` selects and orders the rows; duplicates are allowed.
    std::mt19937_64 rng(32);
    const TokenGeometry tokens = random_tokens(rng, 40, 5);
    const std::vector<int> sizes = {40, 3, 17, 3, 1};
    for (Ranking ranking : kRankings) {
        for (Distance distance : kDistances) {
            const auto all = attngeo::theory::selection_metrics_reference(tokens, all_sizes(40),
                                                                          ranking, distance);
            const auto some =
                attngeo::theory::selection_metrics_gram(tokens, sizes, ranking, distance);
            ASSERT_EQ(some.size(), sizes.size());
            for (std::size_t k = 0; k < sizes.size(); ++k) {
                const SelectionMetrics& want = all[sizes[k] - 1];
                EXPECT_EQ(some[k].N, sizes[k]);
                EXPECT_EQ(some[k].K_in, want.K_in);
                EXPECT_EQ(some[k].K_out, want.K_out);
                EXPECT_EQ(some[k].exact_decisions, want.exact_decisions);
                EXPECT_EQ(some[k].r_min, want.r_min);
                EXPECT_EQ(some[k].r_max, want.r_max);
            }
        }
    }
}

TEST(MetricsGram, ExternallySuppliedGramWithDifferentRounding) {
    // selection_metrics_from_gram is fed a G computed here by a plain triple loop (different
    // summation order from Eigen's rankUpdate): the counts and radii must still be exact.
    std::mt19937_64 rng(33);
    const int families = static_cast<int>(Family::count);
    for (int trial = 0; trial < families * (kRepeatScale == 1 ? 3 : 1); ++trial) {
        const Family family = static_cast<Family>(trial % families);
        const TokenGeometry tokens = adversarial_tokens(rng, family);
        const int nn = static_cast<int>(tokens.alpha.size());
        const int dd = static_cast<int>(tokens.values.cols());
        for (Distance distance : kDistances) {
            const auto order = attngeo::theory::selection_order(
                attngeo::theory::selection_scores(tokens, Ranking::attention));
            RowMatrix ranked(nn, dd);
            for (int k = 0; k < nn; ++k)
                ranked.row(k) = tokens.alpha[order[k]] * tokens.values.row(order[k]);
            Eigen::MatrixXd gram(nn, nn);
            for (int a = 0; a < nn; ++a) {
                for (int b = 0; b < nn; ++b) {
                    double sum = 0;
                    for (int t = dd - 1; t >= 0; --t)
                        sum += ranked(a, t) * ranked(b, t);
                    gram(a, b) = sum;
                }
            }
            std::vector<SelectionMetrics> rows;
            attngeo::theory::selection_metrics_from_gram(ranked, gram, all_sizes(nn), distance,
                                                         rows);
            const auto ref = attngeo::theory::selection_metrics_reference(
                tokens, all_sizes(nn), Ranking::attention, distance);
            for (int k = 0; k < nn; ++k) {
                EXPECT_EQ(rows[k].K_in, ref[k].K_in) << family_name(family);
                EXPECT_EQ(rows[k].K_out, ref[k].K_out);
                EXPECT_EQ(rows[k].exact_decisions, ref[k].exact_decisions);
                EXPECT_EQ(rows[k].r_min, ref[k].r_min);
                EXPECT_EQ(rows[k].r_max, ref[k].r_max);
            }
        }
    }
}

// How a test perturbs a single-precision Gram matrix inside the error model the decider assumes
// (|G̃ − G| ≤ γ^(32)_{d+2}‖y_k‖‖y_ℓ‖ in σ-scaled units): not at all (a plain float loop), by
// half the dot-product bound with random signs, or all upwards (coherent errors in c_ℓ).
enum class Perturbation { none, random_signs, all_up };

TEST(MetricsGram, SinglePrecisionGramMatchesReferenceBitwise) {
    std::mt19937_64 rng(37);
    const int per_family = kRepeatScale == 1 ? 8 : 2;
    int inputs = 0;
    double largest_entry_error = 0;  // max |G̃ − σ²G| / (‖σy_k‖‖σy_ℓ‖) seen, vs γ_{d+2}
    for (int f = 0; f < static_cast<int>(Family::count); ++f) {
        const Family family = static_cast<Family>(f);
        for (int trial = 0; trial < per_family; ++trial) {
            const TokenGeometry tokens = adversarial_tokens(rng, family);
            const int nn = static_cast<int>(tokens.alpha.size());
            const int dd = static_cast<int>(tokens.values.cols());
            for (Ranking ranking : kRankings) {
                const auto order = attngeo::theory::selection_order(
                    attngeo::theory::selection_scores(tokens, ranking));
                RowMatrix ranked(nn, dd);
                for (int k = 0; k < nn; ++k)
                    ranked.row(k) = tokens.alpha[order[k]] * tokens.values.row(order[k]);
                attngeo::theory::SingleRowMatrix scaled;
                const int e = attngeo::theory::scaled_single_precision(ranked, scaled);
                const auto ref = attngeo::theory::selection_metrics_reference(
                    tokens, all_sizes(nn), ranking, Distance::euclidean);
                for (Perturbation mode :
                     {Perturbation::none, Perturbation::random_signs, Perturbation::all_up}) {
                    Eigen::MatrixXf gram(nn, nn);
                    for (int a = 0; a < nn; ++a) {
                        for (int b = 0; b <= a; ++b) {
                            float single = 0;  // float accumulation, reversed order
                            double exact = 0, norm_a = 0, norm_b = 0;
                            for (int t = dd - 1; t >= 0; --t) {
                                single += scaled(a, t) * scaled(b, t);
                                const double ya = std::ldexp(ranked(a, t), e);
                                const double yb = std::ldexp(ranked(b, t), e);
                                exact += ya * yb;
                                norm_a += ya * ya;
                                norm_b += yb * yb;
                            }
                            // Half of (d − 1)·u: with the float rounding of σy and of the result,
                            // at most γ_{d+2}.
                            const double bound =
                                0.5 * (dd - 1) * 0x1p-24 * std::sqrt(norm_a * norm_b);
                            double value = single;
                            if (mode == Perturbation::random_signs)
                                value = double(scaled.row(a).cast<double>().dot(
                                            scaled.row(b).cast<double>())) +
                                        (rng() % 2 ? bound : -bound);
                            if (mode == Perturbation::all_up)
                                value = double(scaled.row(a).cast<double>().dot(
                                            scaled.row(b).cast<double>())) +
                                        bound;
                            gram(a, b) = gram(b, a) = static_cast<float>(value);
                            if (norm_a > 0 && norm_b > 0 && std::isnormal(exact)) {
                                largest_entry_error =
                                    std::max(largest_entry_error, std::abs(gram(a, b) - exact) /
                                                                      std::sqrt(norm_a * norm_b) /
                                                                      ((dd + 2) * 0x1p-24));
                            }
                        }
                    }
                    std::vector<SelectionMetrics> rows;
                    attngeo::theory::selection_metrics_from_single_gram(ranked, gram, e,
                                                                        all_sizes(nn), rows);
                    const std::string what =
                        std::string(family_name(family)) + " " +
                        label(ranking, Distance::euclidean) + " n=" + std::to_string(nn) +
                        " d=" + std::to_string(dd) + " mode=" + std::to_string(int(mode));
                    // Only the lower triangle is read: the same from a buffer with a padded
                    // leading dimension (aligned, or not) whose other entries are NaN.
                    const int ld = (nn + 7) / 8 * 8 + (mode == Perturbation::none ? 0 : 3);
                    std::vector<float> lower(static_cast<std::size_t>(ld) * nn,
                                             std::numeric_limits<float>::quiet_NaN());
                    for (int b = 0; b < nn; ++b)
                        for (int a = b; a < nn; ++a)
                            lower[a + static_cast<std::size_t>(b) * ld] = gram(a, b);
                    std::vector<SelectionMetrics> from_lower;
                    // The perturbed inputs also take the caller's precomputed band norms.
                    const std::vector<double> band_norms =
                        attngeo::theory::band_row_norms(ranked, e);
                    attngeo::theory::selection_metrics_from_single_gram(
                        ranked, lower.data(), ld, e, all_sizes(nn), from_lower, true,
                        mode == Perturbation::none ? nullptr : &band_norms);
                    for (int k = 0; k < nn; ++k) {
                        EXPECT_EQ(rows[k].K_in, ref[k].K_in) << what << " N=" << k + 1;
                        EXPECT_EQ(rows[k].K_out, ref[k].K_out) << what << " N=" << k + 1;
                        EXPECT_EQ(rows[k].exact_decisions, ref[k].exact_decisions)
                            << what << " N=" << k + 1;
                        EXPECT_EQ(from_lower[k].exact_decisions, ref[k].exact_decisions) << what;
                        EXPECT_EQ(rows[k].r_min, ref[k].r_min) << what << " N=" << k + 1;
                        EXPECT_EQ(rows[k].r_max, ref[k].r_max) << what << " N=" << k + 1;
                        EXPECT_EQ(from_lower[k].K_in, ref[k].K_in) << what << " ld=" << ld;
                        EXPECT_EQ(from_lower[k].K_out, ref[k].K_out) << what << " ld=" << ld;
                        EXPECT_EQ(from_lower[k].r_max, ref[k].r_max) << what << " ld=" << ld;
                    }
                    ++inputs;
                    if (HasFailure()) return;
                }
            }
        }
    }
    std::cout << "[ info     ] single-precision Gram vs reference: " << inputs
              << " inputs, all counts and radii equal; largest entry error " << largest_entry_error
              << " x gamma_(d+2) (normal range)\n";
}

TEST(MetricsGram, SinglePrecisionScalingIsExactAndBounded) {
    for (double magnitude : {1e-300, 1e-40, 3e-8, 1.0, 7.5, 1e38, 1e300}) {
        RowMatrix ranked(3, 2);
        ranked << magnitude, -0.5 * magnitude, 0.25 * magnitude, 0, -magnitude, 1e-3 * magnitude;
        attngeo::theory::SingleRowMatrix scaled;
        const int e = attngeo::theory::scaled_single_precision(ranked, scaled);
        const float largest = scaled.cwiseAbs().maxCoeff();
        EXPECT_GE(largest, 0.5f) << magnitude;
        EXPECT_LE(largest, 1.0f) << magnitude;
        for (int i = 0; i < 3; ++i) {  // σ = 2^e is exact: only the float rounding remains
            for (int t = 0; t < 2; ++t) {
                const double want = std::ldexp(ranked(i, t), e);
                EXPECT_LE(std::abs(double(scaled(i, t)) - want),
                          0x1p-24 * std::abs(want) + 0x1p-150)
                    << magnitude;
            }
        }
    }
    RowMatrix zeros = RowMatrix::Zero(2, 2);
    attngeo::theory::SingleRowMatrix scaled;
    EXPECT_EQ(attngeo::theory::scaled_single_precision(zeros, scaled), 0);
    RowMatrix bad = RowMatrix::Zero(2, 2);
    bad(1, 1) = std::numeric_limits<double>::quiet_NaN();
    EXPECT_THROW(attngeo::theory::scaled_single_precision(bad, scaled), std::domain_error);
    Eigen::MatrixXf wrong(3, 2);
    std::vector<SelectionMetrics> rows;
    EXPECT_THROW(attngeo::theory::selection_metrics_from_single_gram(zeros, wrong, 0, {1}, rows),
                 std::domain_error);
    const std::vector<float> short_buffer(4, 0.0f);  // leading dimension 1 < n = 2
    EXPECT_THROW(attngeo::theory::selection_metrics_from_single_gram(zeros, short_buffer.data(), 1,
                                                                     0, {1}, rows),
                 std::domain_error);
    const std::vector<double> three_norms(3, 1.0);  // n = 2 rows
    EXPECT_THROW(attngeo::theory::selection_metrics_from_single_gram(
                     zeros, short_buffer.data(), 2, 0, {1}, rows, false, &three_norms),
                 std::domain_error);
}

// ---------------------------------------------------------------------------------------------
// Independent brute force against the library reference.

TEST(MetricsBruteForce, AgreesWithReference) {
    std::mt19937_64 rng(41);
    Worst worst;
    for (int trial = 0; trial < repeats(60); ++trial) {
        const int n = 1 + static_cast<int>(rng() % 80), d = 1 + static_cast<int>(rng() % 16);
        const TokenGeometry tokens = random_tokens(rng, n, d);
        for (Ranking ranking : kRankings) {
            for (Distance distance : kDistances) {
                const auto mine = plain_metrics(tokens, ranking, distance);
                const auto lib = attngeo::theory::selection_metrics_reference(tokens, all_sizes(n),
                                                                              ranking, distance);
                for (int k = 0; k < n; ++k) {
                    SCOPED_TRACE(label(ranking, distance) + " n=" + std::to_string(n) +
                                 " N=" + std::to_string(k + 1));
                    EXPECT_EQ(lib[k].K_in, mine[k].K_in);
                    EXPECT_EQ(lib[k].K_out, mine[k].K_out);
                    EXPECT_TRUE(radius_close(lib[k].r_min, mine[k].r_min, 1e-12, distance, &worst));
                    EXPECT_TRUE(radius_close(lib[k].r_max, mine[k].r_max, 1e-12, distance, &worst));
                    EXPECT_DOUBLE_EQ(lib[k].precision_at_rmax, mine[k].P);
                    EXPECT_DOUBLE_EQ(lib[k].recall_at_rmin, mine[k].R);
                    EXPECT_DOUBLE_EQ(lib[k].f_at_rmax, mine[k].F_max);
                    EXPECT_DOUBLE_EQ(lib[k].f_at_rmin, mine[k].F_min);
                }
            }
        }
    }
    std::cout << "[ info     ] brute force vs reference: " << worst.text() << "\n";
    RecordProperty("max_radius_diff", worst.text());
}

TEST(MetricsBruteForce, AgreesOnIntegerLatticeTies) {
    // Exact ties everywhere (small integer coordinates and weights): the closed-ball counts
    // of the brute force and the library must agree exactly.
    std::mt19937_64 rng(42);
    for (int trial = 0; trial < repeats(40); ++trial) {
        const TokenGeometry tokens = adversarial_tokens(rng, Family::integer_lattice);
        const int n = static_cast<int>(tokens.alpha.size());
        if (n > 100) continue;
        for (Ranking ranking : kRankings) {
            const auto mine = plain_metrics(tokens, ranking, Distance::euclidean);
            const auto lib = attngeo::theory::selection_metrics_reference(
                tokens, all_sizes(n), ranking, Distance::euclidean);
            for (int k = 0; k < n; ++k) {
                EXPECT_EQ(lib[k].K_in, mine[k].K_in) << "N=" << k + 1;
                EXPECT_EQ(lib[k].K_out, mine[k].K_out) << "N=" << k + 1;
                EXPECT_EQ(lib[k].r_min, mine[k].r_min);
                EXPECT_EQ(lib[k].r_max, mine[k].r_max);
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Bad input.

TEST(MetricsBadInput, ThrowsDomainError) {
    const TokenGeometry good = hand_example();
    for (MetricsFn path : kPaths) {
        TokenGeometry mismatched = good;
        mismatched.alpha.resize(4);
        EXPECT_THROW(path(mismatched, {1}, Ranking::attention, Distance::euclidean),
                     std::domain_error);
        TokenGeometry negative = good;
        negative.alpha[2] = -0.125;
        EXPECT_THROW(path(negative, {1}, Ranking::attention, Distance::euclidean),
                     std::domain_error);
        TokenGeometry nan_alpha = good;
        nan_alpha.alpha[1] = std::nan("");
        EXPECT_THROW(path(nan_alpha, {1}, Ranking::attention, Distance::euclidean),
                     std::domain_error);
        TokenGeometry nan_value = good;
        nan_value.values(3, 1) = std::nan("");
        EXPECT_THROW(path(nan_value, {1}, Ranking::attention, Distance::cosine), std::domain_error);
        TokenGeometry inf_value = good;
        inf_value.values(0, 0) = kInf;
        EXPECT_THROW(path(inf_value, {1}, Ranking::contribution, Distance::euclidean),
                     std::domain_error);
        TokenGeometry empty;
        EXPECT_THROW(path(empty, {1}, Ranking::attention, Distance::euclidean), std::domain_error);
        EXPECT_THROW(path(good, {0}, Ranking::attention, Distance::euclidean), std::domain_error);
        EXPECT_THROW(path(good, {6}, Ranking::attention, Distance::euclidean), std::domain_error);
        EXPECT_THROW(path(good, {2, -1}, Ranking::attention, Distance::euclidean),
                     std::domain_error);
    }
    EXPECT_THROW(
        attngeo::theory::metrics_at_radius(good, 0, 1.0, Ranking::attention, Distance::euclidean),
        std::domain_error);
    EXPECT_THROW(
        attngeo::theory::metrics_at_radius(good, 6, 1.0, Ranking::attention, Distance::euclidean),
        std::domain_error);
    EXPECT_THROW(
        attngeo::theory::metrics_at_radius(good, 2, -1.0, Ranking::attention, Distance::euclidean),
        std::domain_error);
    EXPECT_THROW(attngeo::theory::metrics_at_radius(good, 2, std::nan(""), Ranking::attention,
                                                    Distance::euclidean),
                 std::domain_error);
    EXPECT_THROW(attngeo::theory::parse_ranking("attention"), attngeo::InputError);
    try {
        attngeo::theory::parse_distance("l2", "distance");
        ADD_FAILURE() << "'l2' named a distance";
    } catch (const attngeo::InputError& error) {
        EXPECT_STREQ(error.what(), "distance: 'l2', expected euclidean or cosine");
    }
    EXPECT_EQ(attngeo::theory::parse_ranking("contrib"), Ranking::contribution);
    EXPECT_EQ(attngeo::theory::parse_distance("cosine"), Distance::cosine);
}

}  // namespace

namespace {

// s(N) of eq. (1): the hand example's centroids (all dyadic, so exact), invariance under a
// permutation of the tokens, a long-double sum on random inputs, and bad input.
TEST(MetricsCentroid, EquationOneOnTheHandExample) {
    const TokenGeometry tokens = hand_example();
    const RowMatrix y = attngeo::theory::selection_contributions(tokens);
    EXPECT_EQ(y(3, 0), -0.75);  // y_3 = (3/32)·(−8, 0)
    const std::vector<int> order = attngeo::theory::selection_order(
        attngeo::theory::selection_scores(tokens, Ranking::attention));
    const double expected[5][2] = {{1, 0}, {1, 1}, {2, 2}, {1.25, 2}, {3.25, 2}};
    for (int N = 1; N <= 5; ++N) {
        const std::vector<double> s = attngeo::theory::selection_centroid(y, order, N);
        ASSERT_EQ(s.size(), 2u);
        EXPECT_EQ(s[0], expected[N - 1][0]) << "N=" << N;
        EXPECT_EQ(s[1], expected[N - 1][1]) << "N=" << N;
    }
    // The same tokens listed in reverse: the same selection, the same s(N).
    TokenGeometry reversed = tokens;
    for (int i = 0; i < 5; ++i) {
        reversed.alpha[i] = tokens.alpha[4 - i];
        reversed.values.row(i) = tokens.values.row(4 - i);
    }
    const RowMatrix y_reversed = attngeo::theory::selection_contributions(reversed);
    const std::vector<int> order_reversed = attngeo::theory::selection_order(
        attngeo::theory::selection_scores(reversed, Ranking::attention));
    for (int N = 1; N <= 5; ++N)
        EXPECT_EQ(attngeo::theory::selection_centroid(y_reversed, order_reversed, N),
                  attngeo::theory::selection_centroid(y, order, N));
}

TEST(MetricsCentroid, MatchesALongDoubleSumOnRandomTokens) {
    std::mt19937_64 rng(17);
    std::normal_distribution<double> normal;
    double largest = 0;
    for (int repeat = 0; repeat < repeats(50); ++repeat) {
        const int n = 1 + static_cast<int>(rng() % 60), d = 1 + static_cast<int>(rng() % 9);
        RowMatrix y(n, d);
        for (Eigen::Index i = 0; i < y.size(); ++i)
            y.data()[i] = normal(rng);
        std::vector<int> order(n);
        std::iota(order.begin(), order.end(), 0);
        std::shuffle(order.begin(), order.end(), rng);
        for (int N = 1; N <= n; ++N) {
            const std::vector<double> s = attngeo::theory::selection_centroid(y, order, N);
            for (int t = 0; t < d; ++t) {
                long double sum = 0, magnitude = 0;
                for (int k = 0; k < N; ++k) {
                    sum += y(order[k], t);
                    magnitude += std::abs(y(order[k], t));
                }
                const double difference = std::abs(static_cast<double>(sum - s[t]));
                EXPECT_LE(difference, N * 0x1p-53 * static_cast<double>(magnitude));
                largest = std::max(largest, difference);
            }
        }
    }
    std::cout << "[ info     ] centroid vs long double sum: largest difference " << largest << "\n";
}

TEST(MetricsCentroid, BadInputThrows) {
    const TokenGeometry tokens = hand_example();
    const RowMatrix y = attngeo::theory::selection_contributions(tokens);
    const std::vector<int> order = {0, 1, 2, 3, 4};
    EXPECT_THROW(attngeo::theory::selection_centroid(y, order, 0), std::domain_error);
    EXPECT_THROW(attngeo::theory::selection_centroid(y, order, 6), std::domain_error);
    EXPECT_THROW(attngeo::theory::selection_centroid(y, {0, 1, 2}, 2), std::domain_error);
    EXPECT_THROW(attngeo::theory::selection_centroid(y, {0, 7, 2, 3, 4}, 2), std::domain_error);
    EXPECT_THROW(attngeo::theory::selection_centroid(y, {-1, 1, 2, 3, 4}, 1), std::domain_error);
    TokenGeometry mismatched = tokens;
    mismatched.alpha.resize(3);
    EXPECT_THROW(attngeo::theory::selection_contributions(mismatched), std::domain_error);
}

}  // namespace

// Values scaled by 2^±1000 (|v| near 1e300 or 1e-300, where squared distances overflow or
// underflow a double): selection_metrics_scaled gives, on both paths and for every ranking and
// distance, the rows of the same values brought to a largest |v| in [1/2, 1), bit for bit, with
// Euclidean radii 2^±1000 times theirs; Euclidean counts equal the unscaled values' counts (the
// cosine distance's absolute 1e-12 guard makes its rows depend on scale, so they are those of
// the unit-scaled values). At ordinary scale it is the plain path bit for bit. Values spanning
// more than the exponent range are refused up front.
TEST(MetricsScaled, ValuesNear1e300Or1eMinus300GiveTheUnitScaledRows) {
    std::mt19937_64 rng(91);
    int rows_checked = 0;
    double largest_radius_error = 0;
    const auto scaled_by = [](TokenGeometry tokens, int exponent) {
        tokens.values = tokens.values.unaryExpr([&](double x) { return std::ldexp(x, exponent); });
        return tokens;
    };
    for (int rep = 0; rep < repeats(20); ++rep) {
        const TokenGeometry tokens = random_tokens(rng, 17, 5);
        const int unit = -std::ilogb(tokens.values.cwiseAbs().maxCoeff()) - 1;
        const TokenGeometry unit_tokens = scaled_by(tokens, unit);
        std::vector<int> sizes(17);
        std::iota(sizes.begin(), sizes.end(), 1);
        for (Ranking r : kRankings)
            for (Distance d : kDistances)
                for (int path = 0; path < 2; ++path) {
                    const auto plain = kPaths[path](tokens, sizes, r, d);
                    const auto unit_plain = kPaths[path](unit_tokens, sizes, r, d);
                    const auto same =
                        attngeo::theory::selection_metrics_scaled(tokens, sizes, r, d, path == 1);
                    for (int exponent : {1000, -1000}) {
                        const auto far = attngeo::theory::selection_metrics_scaled(
                            scaled_by(tokens, exponent), sizes, r, d, path == 1);
                        ASSERT_EQ(far.size(), plain.size());
                        const int back = d == Distance::euclidean ? unit - exponent : 0;
                        for (std::size_t k = 0; k < plain.size(); ++k) {
                            const std::string where = label(r, d) + " path " +
                                                      std::to_string(path) + " N " +
                                                      std::to_string(plain[k].N);
                            EXPECT_EQ(far[k].K_in, unit_plain[k].K_in) << where;
                            EXPECT_EQ(far[k].K_out, unit_plain[k].K_out) << where;
                            EXPECT_EQ(far[k].precision_at_rmax, unit_plain[k].precision_at_rmax)
                                << where;
                            EXPECT_EQ(far[k].recall_at_rmin, unit_plain[k].recall_at_rmin) << where;
                            for (auto [got, want] : {std::pair{far[k].r_min, unit_plain[k].r_min},
                                                     std::pair{far[k].r_max, unit_plain[k].r_max}})
                                if (std::isfinite(want))
                                    largest_radius_error =
                                        std::max(largest_radius_error,
                                                 std::abs(std::ldexp(got, back) - want));
                            if (d == Distance::euclidean) {
                                EXPECT_EQ(far[k].K_in, plain[k].K_in) << where;
                                EXPECT_EQ(far[k].K_out, plain[k].K_out) << where;
                            }
                            EXPECT_EQ(same[k].r_max, plain[k].r_max) << where;
                            EXPECT_EQ(same[k].r_min, plain[k].r_min) << where;
                            EXPECT_EQ(same[k].K_out, plain[k].K_out) << where;
                            ++rows_checked;
                        }
                    }
                }
    }
    std::cout << rows_checked << " rows at 2^±1000 against the unit-scaled values: largest "
              << "radius difference " << largest_radius_error << "\n";
    EXPECT_EQ(largest_radius_error, 0.0);
    // The plain paths refuse such values rather than compare overflowed distances.
    const TokenGeometry far = make_tokens({0.5, 0.5}, {{1e300, 0}, {0, 1e300}});
    const TokenGeometry near_zero = make_tokens({0.5, 0.5}, {{1e-300, 0}, {0, 1e-300}});
    for (MetricsFn path : kPaths)
        for (const TokenGeometry* t : {&far, &near_zero})
            EXPECT_THROW(path(*t, {1, 2}, Ranking::attention, Distance::euclidean),
                         std::domain_error);
    TokenGeometry span = make_tokens({0.5, 0.5}, {{1e300, 0}, {1e-300, 1}});
    EXPECT_FALSE(attngeo::theory::unit_scale_exponent(span).has_value());
    EXPECT_THROW(attngeo::theory::selection_metrics_scaled(span, {1, 2}, Ranking::attention,
                                                           Distance::euclidean, true),
                 std::domain_error);
}
