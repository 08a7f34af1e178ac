// Tests of the bounds of Theorems 1–2 and Corollary 1 (paper eqs. 7–17, docs/design.md §3): a
// literal implementation of the printed formulas written here is compared with bounds_reference and
// the fast bounds_all; plus monotonicity in d, lower ≤ upper, scale (in)variance, p⁻ at the
// edges, the named quantities on a hand case, and bad input.
#include <gtest/gtest.h>

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

#include "theory/assumption_models.hpp"
#include "theory/bounds.hpp"
#include "theory/far_moments.hpp"
#include "theory/parametric.hpp"

namespace {

using attngeo::theory::BoundRow;
using attngeo::theory::BoundSettings;
using attngeo::theory::BoundVariant;
using attngeo::theory::HeadModel;
using attngeo::theory::ModelParameters;
using attngeo::theory::Ranking;

constexpr double kInf = std::numeric_limits<double>::infinity();
const double kPi = std::acos(-1.0);

#ifdef NDEBUG
constexpr int kRepeatScale = 1;
#else
constexpr int kRepeatScale = 5;  // the ASan/UBSan Debug build is much slower
#endif
int repeats(int release_count) {
    return std::max(1, release_count / kRepeatScale);
}

const BoundVariant kVariants[] = {BoundVariant::paper, BoundVariant::exact_mean,
                                  BoundVariant::scale_invariant, BoundVariant::corrected};
const Ranking kRankings[] = {Ranking::attention, Ranking::contribution};

std::vector<int> all_sizes(int n) {
    std::vector<int> sizes(n);
    std::iota(sizes.begin(), sizes.end(), 1);
    return sizes;
}

std::string sci(double x) {
    std::ostringstream out;
    out << std::scientific << std::setprecision(3) << x;
    return out.str();
}

// ---------------------------------------------------------------------------------------------
// Literal evaluation of eqs. (7)–(17) with the docs/design.md §3 decisions, in plain loops.

// φ(ξ) = exp(−ξ²/2)/√(2π), written out (no Boost).
double phi(double xi) {
    return std::exp(-0.5 * xi * xi) / std::sqrt(2 * kPi);
}

// p⁻(ξ) = φ(ξ)/(ξ + 1/ξ) for ξ > 0 (written as φ(ξ)·ξ/(ξ² + 1), the same number without the
// overflow of 1/ξ), and 1/2 for ξ ≤ 0 (eq. 9, docs/design.md §3).
double literal_p_minus(double xi) {
    if (xi <= 0) return 0.5;
    if (std::isinf(xi)) return 0.0;
    return phi(xi) * xi / (xi * xi + 1);
}

struct Literal {
    bool sink_selected = false;
    bool has_nonsink = false;
    double delta = 0, delta0 = 0, scale = 0;
    double columns[8] = {1, 1, 1, 1, 1, 1, 1, 1};  // P lo, P up, R lo, R up, Fmax lo/up, Fmin lo/up
    bool trivial = false;                          // N = n or I_N∖{0} empty
    bool some_mu_le0 = false;  // some pair (i ∈ I_N, j ∉ I_N) with μ_ij ≤ 0
};

Literal literal_bounds(const HeadModel& model, int N, double d, double kappa, BoundVariant variant,
                       Ranking ranking) {
    const int n = static_cast<int>(model.alpha.size());
    std::vector<double> alpha(n), a(n), score(n);
    std::vector<std::vector<double>> rho(n, std::vector<double>(n));
    for (int i = 0; i < n; ++i) {
        alpha[i] = model.alpha[i];
        a[i] = model.alpha[i] * model.norms[i];  // a_i = α_i‖v_i‖
        score[i] = ranking == Ranking::attention ? alpha[i] : a[i];
        for (int j = 0; j < n; ++j)
            rho[i][j] = model.cosine(i, j);
    }
    // I_N: the N largest scores, ties to the lower index.
    std::vector<int> rank(n);
    std::iota(rank.begin(), rank.end(), 0);
    std::stable_sort(rank.begin(), rank.end(), [&](int x, int y) { return score[x] > score[y]; });
    std::vector<bool> in(n, false);
    for (int k = 0; k < N; ++k)
        in[rank[k]] = true;

    Literal out;
    out.sink_selected = in[0];
    // eq. (7)
    double S_in = 0, a_min_in = kInf, a_max_in = 0, a_max_out = 0, rho_out = -kInf, mass = 0;
    for (int k = 0; k < n; ++k) {
        if (in[k]) {
            a_max_in = std::max(a_max_in, a[k]);
            mass += a[k];
            if (k != 0) {
                S_in += a[k];
                a_min_in = std::min(a_min_in, a[k]);
                out.has_nonsink = true;
            }
        } else {
            a_max_out = std::max(a_max_out, a[k]);
        }
    }
    for (int j = 0; j < n; ++j)
        for (int k = 1; k < n; ++k)
            if (!in[j] && in[k]) rho_out = std::max(rho_out, rho[j][k]);
    if (rho_out == -kInf) rho_out = 0;  // an empty set: nothing to correlate with
    // eq. (8), Δ0 with ρ_out (docs/design.md §3 decision)
    out.delta = a_min_in * a_min_in - 2 * a_max_out * S_in * rho_out;
    out.delta0 = a[0] * a[0] - (S_in * rho_out) * (S_in * rho_out);
    // scale-invariant and corrected: B quadratic in the value scale.
    const bool quadratic_B =
        variant == BoundVariant::scale_invariant || variant == BoundVariant::corrected;
    out.scale = quadratic_B ? (a_max_in + a_max_out) * mass : a_max_in + a_max_out + S_in;
    out.trivial = N == n || !out.has_nonsink;
    if (out.trivial) return out;  // every bound is 1

    const double B = out.scale;
    auto t = [&](double x) {  // tail factor exp(−κd(max(x,0)/B)²); 1 for x ≤ 0 (also at d = ∞)
        if (x <= 0) return 1.0;
        const double r = x / B;
        return std::exp(-kappa * d * r * r);
    };
    const double n_out = n - N;
    double U = n_out * t(out.delta);
    if (out.sink_selected) U += n_out / N * t(out.delta0);
    const double P_lo = 1 / (1 + U);           // eq. (12)
    const double R_lo = std::max(0.0, 1 - U);  // eq. (14)

    // eqs. (9)–(11); exact-mean and corrected sum M_j over all of I_N, the sink included.
    const bool sink_in_M =
        variant == BoundVariant::exact_mean || variant == BoundVariant::corrected;
    std::vector<double> M(n, 0.0);
    for (int j = 0; j < n; ++j)
        for (int l = 0; l < n; ++l)
            if (in[l] && (l != 0 || sink_in_M)) M[j] += a[l] * rho[l][j];
    const double sigma = B / std::sqrt(2 * kappa * d);
    double max_p = 0, recall_sum = 0;
    for (int i = 0; i < n; ++i) {
        if (!in[i]) continue;
        double max_pi = 0;
        for (int j = 0; j < n; ++j) {
            if (in[j]) continue;
            const double mu = (a[j] * a[j] - a[i] * a[i]) - 2 * a[j] * M[j] + 2 * a[i] * M[i];
            out.some_mu_le0 = out.some_mu_le0 || mu <= 0;
            // ξ = μ/σ; at d = ∞ (σ = 0) p⁻ is 0 for μ > 0 and 1/2 otherwise.
            max_pi = std::max(max_pi, mu <= 0 ? 0.5 : literal_p_minus(mu / sigma));
        }
        max_p = std::max(max_p, max_pi);
        recall_sum += 1 - max_pi;
    }
    double P_up = 1 - max_p / (N + 1);  // eq. (13)
    double R_up = recall_sum / N;       // eq. (15)
    // corrected keeps the identity P(r_max,1) = R(r_min,1) = 1 (docs/design.md §3).
    if (N == 1 && variant == BoundVariant::corrected) P_up = R_up = 1;
    auto f_of_bound = [](double x) { return 2 * x / (1 + x); };  // Corollary 1
    const double cols[8] = {P_lo,
                            P_up,
                            R_lo,
                            R_up,
                            f_of_bound(P_lo),
                            f_of_bound(P_up),
                            f_of_bound(R_lo),
                            f_of_bound(R_up)};
    std::copy(cols, cols + 8, out.columns);
    return out;
}

std::vector<double> columns(const BoundRow& r) {
    return {r.precision_lower, r.precision_upper, r.recall_lower, r.recall_upper,
            r.fmax_lower,      r.fmax_upper,      r.fmin_lower,   r.fmin_upper};
}

const char* kColumnNames[8] = {"precision_lower", "precision_upper", "recall_lower", "recall_upper",
                               "fmax_lower",      "fmax_upper",      "fmin_lower",   "fmin_upper"};

// |x − y| ≤ tol·max(1, |x|, |y|), tracking the largest difference.
bool close(double x, double y, double tol, double* worst) {
    const double diff = std::abs(x - y);
    *worst = std::max(*worst, diff);
    return diff <= tol * std::max({1.0, std::abs(x), std::abs(y)});
}

void expect_matches_literal(const BoundRow& row, const Literal& lit, double* worst,
                            const std::string& what) {
    EXPECT_EQ(row.sink_selected, lit.sink_selected) << what;
    if (lit.has_nonsink) {
        EXPECT_TRUE(close(row.delta, lit.delta, 1e-12, worst))
            << what << " delta " << row.delta << " vs " << lit.delta;
    } else {
        EXPECT_TRUE(std::isnan(row.delta)) << what << " Δ of an empty I_N∖{0} is NaN";
    }
    EXPECT_TRUE(close(row.delta0, lit.delta0, 1e-12, worst)) << what;
    EXPECT_TRUE(close(row.scale, lit.scale, 1e-12, worst)) << what;
    EXPECT_EQ(row.trivial, lit.trivial) << what;
    EXPECT_EQ(row.deciding_xi_le0, lit.some_mu_le0) << what << " xi <= 0 on the deciding pair";
    const std::vector<double> got = columns(row);
    for (int c = 0; c < 8; ++c) {
        EXPECT_TRUE(close(got[c], lit.columns[c], 1e-12, worst))
            << what << " " << kColumnNames[c] << " " << got[c] << " vs literal " << lit.columns[c];
    }
}

// ---------------------------------------------------------------------------------------------
// Random head models.

std::vector<double> random_simplex(std::mt19937_64& rng, int n) {
    std::exponential_distribution<double> e(1.0);
    std::vector<double> w(n);
    double total = 0;
    for (double& x : w)
        total += (x = e(rng));
    for (double& x : w)
        x /= total;
    return w;
}

// A valid cosine matrix: Gram of random unit vectors in R^k (entries of either sign), made
// exactly symmetric with an exact unit diagonal.
Eigen::MatrixXd random_cosine(std::mt19937_64& rng, int n) {
    std::normal_distribution<double> g(0.0, 1.0);
    const int k = 2 + static_cast<int>(rng() % 5);
    Eigen::MatrixXd u(n, k);
    for (int i = 0; i < n; ++i) {
        for (int c = 0; c < k; ++c)
            u(i, c) = g(rng);
        u.row(i).normalize();
    }
    Eigen::MatrixXd c = u * u.transpose();
    c = (0.5 * (c + c.transpose())).eval();
    c.diagonal().setOnes();
    return c;
}

HeadModel random_model(std::mt19937_64& rng, int n) {
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    HeadModel m;
    const std::vector<double> w = random_simplex(rng, n);
    m.alpha = Eigen::Map<const Eigen::VectorXd>(w.data(), n);
    const int sink_kind = static_cast<int>(rng() % 3);
    if (sink_kind == 0) {  // a dominant sink, as in real heads
        m.alpha *= 0.5;
        m.alpha[0] += 0.5;
    } else if (sink_kind == 1) {  // a negligible sink: often not selected
        m.alpha[0] *= 0.01;
        m.alpha /= m.alpha.sum();
    }
    m.norms.resize(n);
    for (int i = 0; i < n; ++i)
        m.norms[i] = 0.2 + 1.8 * unit(rng);
    if (rng() % 2 == 0) m.norms[0] *= 0.1;  // Assumption 1: a short sink value
    if (rng() % 2 == 0) {
        m.cosine = random_cosine(rng, n);
    } else {
        const double beta = 0.02 + unit(rng), rho0 = unit(rng) - 0.5;
        m.cosine = attngeo::theory::exponential_cosine_matrix(n - 1, beta, rho0);
    }
    return m;
}

ModelParameters preset_with_length(int L) {
    // The paper preset with its phases scaled to a shorter context (T1/L, T2/L kept).
    ModelParameters p;
    p.profile.T1 = p.profile.T1 * L / p.profile.L;
    p.profile.T2 = p.profile.T2 * L / p.profile.L;
    p.profile.L = L;
    return p;
}

// ---------------------------------------------------------------------------------------------

TEST(BoundsLiteral, SmallCasesMatchPrintedFormulas) {
    std::mt19937_64 rng(101);
    double worst_ref = 0, worst_all = 0;
    int rows = 0;
    for (int trial = 0; trial < repeats(150); ++trial) {
        const int n = 6 + static_cast<int>(rng() % 7);
        const HeadModel model = random_model(rng, n);
        // d = ∞ is accepted as the d → ∞ limit (tails 0 for positive margins).
        const double ds[] = {1, 4, 32, 128, 1024, kInf};
        const double kappas[] = {0.25, 1, 3};
        BoundSettings s;
        s.d = ds[rng() % 6];
        s.kappa = kappas[rng() % 3];
        for (BoundVariant variant : kVariants) {
            for (Ranking ranking : kRankings) {
                s.variant = variant;
                s.ranking = ranking;
                const auto all = attngeo::theory::bounds_all(model, all_sizes(n), s);
                ASSERT_EQ(static_cast<int>(all.size()), n);
                for (int N = 1; N <= n; ++N) {
                    const std::string what = std::string(attngeo::theory::to_string(variant)) +
                                             "/" + attngeo::theory::to_string(ranking) +
                                             " n=" + std::to_string(n) + " N=" + std::to_string(N) +
                                             " d=" + std::to_string(s.d);
                    const Literal lit = literal_bounds(model, N, s.d, s.kappa, variant, ranking);
                    expect_matches_literal(attngeo::theory::bounds_reference(model, N, s), lit,
                                           &worst_ref, "reference " + what);
                    EXPECT_EQ(all[N - 1].N, N);
                    expect_matches_literal(all[N - 1], lit, &worst_all, "bounds_all " + what);
                    ++rows;
                }
            }
        }
        if (HasFailure()) break;
    }
    std::cout << "[ info     ] literal vs bounds_reference: largest difference " << sci(worst_ref)
              << "; literal vs bounds_all: " << sci(worst_all) << " (" << rows << " rows)\n";
    RecordProperty("max_diff_reference", sci(worst_ref));
    RecordProperty("max_diff_bounds_all", sci(worst_all));
}

TEST(BoundsLiteral, TrivialRowsAreOne) {
    // Sink on top at N = 1 (I_N∖{0} empty) and N = n: every bound is 1.
    HeadModel m;
    m.alpha = (Eigen::VectorXd(4) << 0.7, 0.1, 0.15, 0.05).finished();
    m.norms = (Eigen::VectorXd(4) << 0.1, 1, 1, 1).finished();
    m.cosine = attngeo::theory::exponential_cosine_matrix(3, 0.5, 0.0);
    for (BoundVariant variant : kVariants) {
        BoundSettings s;
        s.variant = variant;
        for (int N : {1, 4}) {
            const BoundRow r = attngeo::theory::bounds_reference(m, N, s);
            for (double c : columns(r))
                EXPECT_EQ(c, 1.0) << "N=" << N;
            const BoundRow f = attngeo::theory::bounds_all(m, {N}, s)[0];
            for (double c : columns(f))
                EXPECT_EQ(c, 1.0) << "N=" << N;
        }
        // N = 2 is not trivial here.
        const BoundRow r2 = attngeo::theory::bounds_reference(m, 2, s);
        EXPECT_LT(r2.precision_upper, 1.0);
    }
}

TEST(BoundsFastPath, MatchesReferenceOnLargerRandomModels) {
    std::mt19937_64 rng(102);
    double worst = 0;
    for (int trial = 0; trial < repeats(10); ++trial) {
        const int n = 20 + static_cast<int>(rng() % 181);
        const HeadModel model = random_model(rng, n);
        for (BoundVariant variant : kVariants) {
            BoundSettings s;
            s.variant = variant;
            s.d = trial % 2 ? 128 : 16;
            const auto all = attngeo::theory::bounds_all(model, all_sizes(n), s);
            for (int N = 1; N <= n; N += (kRepeatScale == 1 ? 1 : 7)) {
                const auto got = columns(all[N - 1]);
                const auto want = columns(attngeo::theory::bounds_reference(model, N, s));
                for (int c = 0; c < 8; ++c) {
                    EXPECT_TRUE(close(got[c], want[c], 1e-12, &worst))
                        << attngeo::theory::to_string(variant) << " n=" << n << " N=" << N << " "
                        << kColumnNames[c] << " " << got[c] << " vs " << want[c];
                }
            }
        }
    }
    std::cout << "[ info     ] bounds_all vs bounds_reference (random, n<=200): largest "
              << "difference " << sci(worst) << "\n";
    RecordProperty("max_diff", sci(worst));
}

TEST(BoundsFastPath, MatchesReferenceOnPaperPreset) {
    // The full preset (L = 1024) at selected N, and a shortened preset (L = 256) at every N.
    double worst = 0;
    struct Case {
        int L;
        std::vector<int> sizes;
    };
    std::vector<Case> cases = {
        {1024, {1, 2, 3, 10, 50, 100, 101, 102, 300, 700, 800, 801, 900, 1000, 1024, 1025}},
        {256, all_sizes(257)}};
    if (kRepeatScale != 1) {
        cases[0].sizes = {1, 2, 101, 801, 1024, 1025};
        cases[1].sizes = {1, 2, 3, 25, 26, 100, 200, 201, 256, 257};
    }
    for (const Case& c : cases) {
        const HeadModel model = attngeo::theory::build_head_model(preset_with_length(c.L));
        for (BoundVariant variant : kVariants) {
            BoundSettings s;
            s.variant = variant;
            const auto all = attngeo::theory::bounds_all(model, c.sizes, s);
            for (std::size_t k = 0; k < c.sizes.size(); ++k) {
                const int N = c.sizes[k];
                const auto got = columns(all[k]);
                const auto want = columns(attngeo::theory::bounds_reference(model, N, s));
                for (int col = 0; col < 8; ++col) {
                    EXPECT_TRUE(close(got[col], want[col], 1e-12, &worst))
                        << "L=" << c.L << " " << attngeo::theory::to_string(variant) << " N=" << N
                        << " " << kColumnNames[col] << " " << got[col] << " vs " << want[col];
                }
            }
        }
    }
    std::cout << "[ info     ] bounds_all vs bounds_reference (paper preset): largest difference "
              << sci(worst) << "\n";
    RecordProperty("max_diff", sci(worst));
}

TEST(BoundsFastPath, SizesSubsetAndOrder) {
    std::mt19937_64 rng(103);
    const HeadModel model = random_model(rng, 30);
    const std::vector<int> sizes = {30, 5, 1, 5, 17};
    BoundSettings s;
    const auto rows = attngeo::theory::bounds_all(model, sizes, s);
    ASSERT_EQ(rows.size(), sizes.size());
    for (std::size_t k = 0; k < sizes.size(); ++k) {
        EXPECT_EQ(rows[k].N, sizes[k]);
        const auto want = columns(attngeo::theory::bounds_reference(model, sizes[k], s));
        const auto got = columns(rows[k]);
        double worst = 0;
        for (int c = 0; c < 8; ++c)
            EXPECT_TRUE(close(got[c], want[c], 1e-12, &worst));
    }
    // BoundTerms evaluated at several (d, κ) equals bounds_all at each.
    const attngeo::theory::BoundTerms terms(model, sizes, BoundVariant::paper);
    for (double d : {1.0, 64.0, 4096.0}) {
        BoundSettings sd;
        sd.d = d;
        sd.kappa = 0.5;
        const auto a = terms.evaluate(d, 0.5);
        const auto b = attngeo::theory::bounds_all(model, sizes, sd);
        for (std::size_t k = 0; k < sizes.size(); ++k)
            EXPECT_EQ(columns(a[k]), columns(b[k]));
    }
}

// Over the κ scan's whole range (docs/design.md §7: 1e-8..1e8) every run of BoundTerms::evaluate's
// selected positions (negligible, near, merged, far) is taken somewhere; each κ is checked
// against the O(N·(n−N)·n) reference.
TEST(BoundsFastPath, MatchesReferenceAcrossTheKappaScan) {
    std::mt19937_64 rng(104);
    double worst = 0;
    int rows = 0;
    for (int trial = 0; trial < repeats(4); ++trial) {
        const int n = 30 + static_cast<int>(rng() % 91);
        const HeadModel model = random_model(rng, n);
        for (BoundVariant variant : kVariants) {
            const attngeo::theory::BoundTerms terms(model, all_sizes(n), variant);
            for (double kappa : {1e-8, 1e-4, 1e-2, 0.3, 3.0, 1e2, 1e4, 1e6, 1e8}) {
                BoundSettings s;
                s.variant = variant;
                s.d = 64;
                s.kappa = kappa;
                const auto all = terms.evaluate(s.d, kappa);
                for (int N = 1; N <= n; N += 3) {
                    const auto got = columns(all[N - 1]);
                    const auto want = columns(attngeo::theory::bounds_reference(model, N, s));
                    ++rows;
                    for (int c = 0; c < 8; ++c) {
                        EXPECT_TRUE(close(got[c], want[c], 1e-12, &worst))
                            << attngeo::theory::to_string(variant) << " kappa=" << kappa
                            << " N=" << N << " " << kColumnNames[c];
                    }
                }
            }
        }
    }
    std::cout << "[ info     ] BoundTerms vs bounds_reference over kappa 1e-8..1e8: largest "
                 "difference "
              << sci(worst) << " (" << rows << " rows)\n";
    RecordProperty("max_diff", sci(worst));
}

// A batch of κ (in any order: each size's run ends are carried from κ to κ) gives the same
// rows, bit for bit, as one κ at a time; terms switched to the variant with the same μ equal
// terms built for it.
TEST(BoundsFastPath, KappaBatchesAndSwitchedVariantsEqualSingleEvaluations) {
    std::mt19937_64 rng(105);
    const HeadModel model = random_model(rng, 150);
    const std::vector<double> kappas = {1e3, 1e-8, 0.5, 2e-3, 1e8, 0.51, 40.0, 1e-2, 3e5};
    std::size_t rows = 0;
    for (BoundVariant variant : kVariants) {
        const attngeo::theory::BoundTerms terms(model, all_sizes(150), variant);
        const auto batch = terms.evaluate_many(64, kappas);
        ASSERT_EQ(batch.size(), kappas.size());
        for (std::size_t k = 0; k < kappas.size(); ++k) {
            const auto single = terms.evaluate(64, kappas[k]);
            for (std::size_t s = 0; s < single.size(); ++s, ++rows)
                EXPECT_EQ(columns(batch[k][s]), columns(single[s]))
                    << attngeo::theory::to_string(variant) << " kappa " << kappas[k];
        }
    }
    for (auto [built, target] : {std::pair{BoundVariant::paper, BoundVariant::scale_invariant},
                                 std::pair{BoundVariant::corrected, BoundVariant::exact_mean}}) {
        attngeo::theory::BoundTerms switched(model, all_sizes(150), built);
        switched.switch_variant(target);
        EXPECT_EQ(switched.variant(), target);
        const attngeo::theory::BoundTerms fresh(model, all_sizes(150), target);
        const auto a = switched.evaluate_many(64, kappas);
        const auto b = fresh.evaluate_many(64, kappas);
        for (std::size_t k = 0; k < kappas.size(); ++k)
            for (std::size_t s = 0; s < a[k].size(); ++s)
                EXPECT_EQ(columns(a[k][s]), columns(b[k][s]));
    }
    attngeo::theory::BoundTerms paper(model, all_sizes(150), BoundVariant::paper);
    EXPECT_THROW(paper.switch_variant(BoundVariant::exact_mean), std::domain_error);
    EXPECT_THROW(paper.evaluate_many(64, {1.0, -1.0}), std::domain_error);
    std::cout << "[ info     ] kappa batches vs single evaluations: " << rows
              << " rows, all bit-identical\n";
}

// ---------------------------------------------------------------------------------------------
// Qualitative properties.

// Assumption-1–3 heads with ρ0 = 0 (non-negative cosines e^{−β|j−k|}).
ModelParameters random_exponential_parameters(std::mt19937_64& rng) {
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    ModelParameters p;
    p.profile.L = 8 + static_cast<int>(rng() % 193);
    p.profile.T1 = static_cast<int>(rng() % (p.profile.L + 1));
    p.profile.T2 = p.profile.T1 + static_cast<int>(rng() % (p.profile.L - p.profile.T1 + 1));
    p.profile.p_sink = 0.05 + 0.8 * unit(rng);
    p.profile.eta = 0.3 * unit(rng);
    p.profile.omega = 2 * unit(rng);
    p.C = 0.5 + 2 * unit(rng);
    p.lambda = 0.05 + 0.9 * unit(rng);
    p.beta = 0.01 + unit(rng);
    p.rho0 = 0;
    return p;
}

void expect_lower_at_most_upper(const HeadModel& model, const std::vector<double>& ds,
                                const std::string& what, double* tightest) {
    const int n = static_cast<int>(model.alpha.size());
    const attngeo::theory::BoundTerms terms(model, all_sizes(n), BoundVariant::exact_mean);
    for (double d : ds) {
        for (const BoundRow& r : terms.evaluate(d, 1.0)) {
            EXPECT_LE(r.precision_lower, r.precision_upper) << what << " d=" << d << " N=" << r.N;
            EXPECT_LE(r.recall_lower, r.recall_upper) << what << " d=" << d << " N=" << r.N;
            EXPECT_LE(r.fmax_lower, r.fmax_upper) << what << " d=" << d << " N=" << r.N;
            EXPECT_LE(r.fmin_lower, r.fmin_upper) << what << " d=" << d << " N=" << r.N;
            if (r.precision_lower < 1) {  // not a trivial row (all ones)
                *tightest = std::min({*tightest, r.precision_upper - r.precision_lower,
                                      r.recall_upper - r.recall_lower});
            }
        }
    }
}

TEST(BoundsProperties, LowerAtMostUpperForExactMeanWithRho0Zero) {
    double tightest = kInf;
    const HeadModel preset = attngeo::theory::build_head_model(ModelParameters{});
    expect_lower_at_most_upper(preset, {8.0, 128.0, 1024.0, 1e5, 1e7}, "paper preset", &tightest);
    std::mt19937_64 rng(104);
    for (int trial = 0; trial < repeats(40); ++trial) {
        const ModelParameters p = random_exponential_parameters(rng);
        const HeadModel model = attngeo::theory::build_head_model(p);
        expect_lower_at_most_upper(model, {4.0, 128.0, 1e5},
                                   "random L=" + std::to_string(p.profile.L), &tightest);
    }
    std::cout << "[ info     ] exact-mean: smallest upper − lower gap " << sci(tightest) << "\n";
}

TEST(BoundsProperties, LowerBoundsNonDecreasingInD) {
    std::mt19937_64 rng(105);
    std::vector<HeadModel> models = {attngeo::theory::build_head_model(preset_with_length(256))};
    for (int k = 0; k < repeats(10); ++k)
        models.push_back(random_model(rng, 10 + rng() % 60));
    const double ds[] = {1, 2, 4, 16, 64, 128, 512, 4096, 1e6};
    int strict_increases = 0;
    for (const HeadModel& model : models) {
        const int n = static_cast<int>(model.alpha.size());
        for (BoundVariant variant : kVariants) {
            const attngeo::theory::BoundTerms terms(model, all_sizes(n), variant);
            std::vector<BoundRow> previous = terms.evaluate(ds[0], 1.0);
            for (std::size_t k = 1; k < std::size(ds); ++k) {
                const std::vector<BoundRow> rows = terms.evaluate(ds[k], 1.0);
                for (int i = 0; i < n; ++i) {
                    const auto lo_prev = columns(previous[i]), lo = columns(rows[i]);
                    for (int c : {0, 2, 4, 6}) {  // the four lower bounds
                        EXPECT_GE(lo[c], lo_prev[c])
                            << attngeo::theory::to_string(variant) << " N=" << i + 1
                            << " d=" << ds[k] << " " << kColumnNames[c];
                        if (lo[c] > lo_prev[c]) ++strict_increases;
                    }
                }
                previous = rows;
            }
        }
    }
    EXPECT_GT(strict_increases, 100);  // the lower bounds do move with d
}

TEST(BoundsProperties, ScalingNormsChangesPaperButNotScaleInvariant) {
    std::mt19937_64 rng(106);
    std::vector<HeadModel> models = {attngeo::theory::build_head_model(preset_with_length(128))};
    for (int k = 0; k < 5; ++k)
        models.push_back(random_model(rng, 8 + rng() % 40));
    double largest_paper_change = 0, worst_invariant = 0;
    for (const HeadModel& model : models) {
        const int n = static_cast<int>(model.alpha.size());
        for (double c : {0.3, 3.7}) {
            HeadModel scaled = model;
            scaled.norms *= c;
            BoundSettings s;
            for (BoundVariant variant :
                 {BoundVariant::paper, BoundVariant::scale_invariant, BoundVariant::corrected}) {
                s.variant = variant;
                const auto base = attngeo::theory::bounds_all(model, all_sizes(n), s);
                const auto moved = attngeo::theory::bounds_all(scaled, all_sizes(n), s);
                for (int i = 0; i < n; ++i) {
                    const auto x = columns(base[i]), y = columns(moved[i]);
                    for (int col = 0; col < 8; ++col) {
                        const double diff = std::abs(x[col] - y[col]);
                        if (variant == BoundVariant::paper) {
                            largest_paper_change = std::max(largest_paper_change, diff);
                        } else {
                            worst_invariant = std::max(worst_invariant, diff);
                            EXPECT_LE(diff, 1e-12)
                                << attngeo::theory::to_string(variant) << " c=" << c
                                << " N=" << i + 1 << " " << kColumnNames[col];
                        }
                    }
                }
            }
        }
    }
    // The paper's B is linear in the scale while Δ and μ are quadratic (docs/design.md §3).
    EXPECT_GT(largest_paper_change, 1e-6);
    std::cout << "[ info     ] norms x c: paper bounds move by up to " << sci(largest_paper_change)
              << ", scale-invariant by " << sci(worst_invariant) << "\n";
    RecordProperty("paper_change", sci(largest_paper_change));
    RecordProperty("scale_invariant_change", sci(worst_invariant));
}

// ---------------------------------------------------------------------------------------------
// p⁻ at the edges.

TEST(BoundsPMinus, EdgeValues) {
    using attngeo::theory::p_minus;
    const double tiny = std::numeric_limits<double>::min();  // smallest normal
    const double denormal = std::numeric_limits<double>::denorm_min();
    EXPECT_EQ(p_minus(0.0), 0.5);  // no division by zero at ξ = 0
    EXPECT_EQ(p_minus(-0.0), 0.5);
    EXPECT_EQ(p_minus(-tiny), 0.5);
    EXPECT_EQ(p_minus(-denormal), 0.5);
    EXPECT_EQ(p_minus(-1e300), 0.5);
    EXPECT_EQ(p_minus(-kInf), 0.5);
    EXPECT_EQ(p_minus(kInf), 0.0);
    EXPECT_THROW(p_minus(std::nan("")), std::domain_error);
    // Positive ξ: φ(ξ)/(ξ + 1/ξ) → 0 as ξ → 0⁺ (the jump from 1/2 is the paper's eq. 9).
    double worst_rel = 0;
    for (double xi : {1e-300, 1e-200, 1e-20, 1e-8, 0.01, 0.3, std::sqrt(std::sqrt(2.0) - 1), 1.0,
                      2.5, 7.0, 20.0, 37.0}) {
        const double want = literal_p_minus(xi);
        const double got = p_minus(xi);
        const double rel = std::abs(got - want) / want;
        worst_rel = std::max(worst_rel, rel);
        EXPECT_LE(rel, 1e-12) << "xi=" << xi << " got " << got << " want " << want;
    }
    // Subnormal and near-overflow ξ: 1/ξ overflows, the true value is ~0.4·ξ or 0.
    for (double xi : {tiny, denormal, 1e-310, 1e154, 1e200, std::numeric_limits<double>::max()}) {
        const double got = p_minus(xi);
        EXPECT_TRUE(std::isfinite(got)) << xi;
        EXPECT_GE(got, 0.0) << xi;
        EXPECT_LE(std::abs(got - literal_p_minus(xi)), 1e-300) << xi;
    }
    // Hand values: p⁻(1) = φ(1)/2 = e^{−1/2}/(2√(2π)); p⁻(2) = φ(2)·2/5.
    EXPECT_NEAR(p_minus(1.0), std::exp(-0.5) / (2 * std::sqrt(2 * kPi)), 1e-16);
    EXPECT_NEAR(p_minus(2.0), std::exp(-2.0) / std::sqrt(2 * kPi) * 0.4, 1e-16);
    // The maximum of p⁻ on ξ > 0 is at ξ* = √(√2 − 1) and stays below 1/2.
    const double peak = std::sqrt(std::sqrt(2.0) - 1);
    EXPECT_GT(p_minus(peak), p_minus(peak * 0.99));
    EXPECT_GT(p_minus(peak), p_minus(peak * 1.01));
    EXPECT_LT(p_minus(peak), 0.5);
    std::cout << "[ info     ] p_minus vs exp(-x^2/2)/sqrt(2pi) formula: largest relative "
              << "difference " << sci(worst_rel) << "\n";
    RecordProperty("max_rel_diff", sci(worst_rel));
}

// ---------------------------------------------------------------------------------------------
// Named quantities on a hand case.
//
// n = 4, α = (0.4, 0.3, 0.2, 0.1), norms = (0.5, 1, 2, 1) -> a = (0.2, 0.3, 0.4, 0.1).
// ρ = [[1, .1, .2, .3], [.1, 1, .5, .25], [.2, .5, 1, .6], [.3, .25, .6, 1]].
// N = 3 by α: I_N = {0, 1, 2}, left out {3}.
//   S_in = a1 + a2 = 0.7;  a_min^in = min(a1, a2) = 0.3;  a_max^in = max(a0, a1, a2) = 0.4
//   a_max^out = a3 = 0.1;  ρ_out = max(ρ31, ρ32) = 0.6
//   Δ  = 0.3² − 2·0.1·0.7·0.6 = 0.09 − 0.084 = 0.006
//   Δ0 = 0.2² − (0.7·0.6)² = 0.04 − 0.1764 = −0.1364
//   B  = 0.4 + 0.1 + 0.7 = 1.2;  B_si = (0.4 + 0.1)·(0.2 + 0.3 + 0.4) = 0.45
//   M_j (l ∈ {1,2}): M0 = .3·.1 + .4·.2 = 0.11, M1 = .3 + .4·.5 = 0.5, M2 = .3·.5 + .4 = 0.55,
//                    M3 = .3·.25 + .4·.6 = 0.315;  with the sink (+0.2·ρ0j): 0.31, 0.52, 0.59,
//                    0.375
//   μ_13 = (.01 − .09) − 2·.1·.315 + 2·.3·.5   = −0.08 − 0.063 + 0.3  = 0.157
//   μ_23 = (.01 − .16) − 0.063     + 2·.4·.55  = −0.15 − 0.063 + 0.44 = 0.227
//   μ_03 = (.01 − .04) − 0.063     + 2·.2·.11  = −0.03 − 0.063 + 0.044 = −0.049 -> p⁻ = 1/2
//   d = 128, κ = 1: σ = 1.2/√256 = 0.075, t(Δ) = exp(−128·(0.006/1.2)²) = exp(−0.0032), t(Δ0) = 1
//   union = 1·t(Δ) + (1/3)·1;  P_lo = 1/(1 + union);  R_lo = max(0, 1 − union) = 0
//   P_up = 1 − (1/2)/4 = 0.875;  R_up = (1/3)[(1 − 1/2) + (1 − p⁻(0.157/0.075)) + (1 −
//   p⁻(0.227/0.075))]

HeadModel hand_model() {
    HeadModel m;
    m.alpha = (Eigen::VectorXd(4) << 0.4, 0.3, 0.2, 0.1).finished();
    m.norms = (Eigen::VectorXd(4) << 0.5, 1, 2, 1).finished();
    m.cosine = (Eigen::MatrixXd(4, 4) << 1, .1, .2, .3,  //
                .1, 1, .5, .25,                          //
                .2, .5, 1, .6,                           //
                .3, .25, .6, 1)
                   .finished();
    return m;
}

TEST(BoundsNamedQuantities, HandCase) {
    namespace th = attngeo::theory;
    const HeadModel m = hand_model();
    const Eigen::VectorXd a = m.alpha.cwiseProduct(m.norms);
    const std::vector<char> sel = {1, 1, 1, 0};
    constexpr double tol = 1e-15;
    EXPECT_NEAR(th::selected_mass_without_sink(a, sel), 0.7, tol);
    EXPECT_NEAR(th::min_selected_without_sink(a, sel), 0.3, tol);
    EXPECT_NEAR(th::max_selected(a, sel), 0.4, tol);
    EXPECT_NEAR(th::max_unselected(a, sel), 0.1, tol);
    EXPECT_EQ(th::max_outside_cosine(m.cosine, sel), 0.6);
    EXPECT_NEAR(th::margin_delta(0.3, 0.1, 0.7, 0.6), 0.006, tol);
    EXPECT_NEAR(th::sink_margin_delta0(0.2, 0.7, 0.6), -0.1364, tol);
    EXPECT_NEAR(th::scale_B(0.4, 0.1, 0.7), 1.2, tol);
    EXPECT_NEAR(th::scale_invariant_B(0.4, 0.1, 0.9), 0.45, tol);
    EXPECT_NEAR(th::tail_factor(0.006, 1.2, 1, 128), std::exp(-0.0032), tol);
    EXPECT_EQ(th::tail_factor(-0.1364, 1.2, 1, 128), 1.0);  // margin ≤ 0: bound by 1
    EXPECT_EQ(th::tail_factor(0.0, 1.2, 1, 128), 1.0);
    const double M_paper[] = {0.11, 0.5, 0.55, 0.315}, M_exact[] = {0.31, 0.52, 0.59, 0.375};
    for (int j = 0; j < 4; ++j) {
        EXPECT_NEAR(th::aggregated_cosine(a, m.cosine, sel, j, false), M_paper[j], tol) << j;
        EXPECT_NEAR(th::aggregated_cosine(a, m.cosine, sel, j, true), M_exact[j], tol) << j;
    }
    EXPECT_NEAR(th::mean_gap(0.3, 0.1, 0.5, 0.315), 0.157, tol);
    EXPECT_NEAR(th::mean_gap(0.4, 0.1, 0.55, 0.315), 0.227, tol);
    EXPECT_NEAR(th::mean_gap(0.2, 0.1, 0.11, 0.315), -0.049, tol);
    EXPECT_NEAR(th::pair_sigma(1.2, 1, 128), 0.075, tol);
    EXPECT_DOUBLE_EQ(th::f_of(0.5), 2.0 / 3);
    EXPECT_EQ(th::f_of(1.0), 1.0);
    EXPECT_EQ(th::f_of(0.0), 0.0);
    // Empty sets: I_N∖{0} empty -> S_in = 0, a_min^in = +inf, ρ_out = 0; nothing left out -> 0.
    const std::vector<char> sink_only = {1, 0, 0, 0}, everything = {1, 1, 1, 1};
    EXPECT_EQ(th::selected_mass_without_sink(a, sink_only), 0.0);
    EXPECT_EQ(th::min_selected_without_sink(a, sink_only), kInf);
    EXPECT_EQ(th::max_outside_cosine(m.cosine, sink_only), 0.0);
    EXPECT_EQ(th::max_unselected(a, everything), 0.0);
    EXPECT_EQ(th::max_outside_cosine(m.cosine, everything), 0.0);

    // The whole row at N = 3, d = 128, κ = 1, paper variant.
    BoundSettings s;
    const BoundRow r = th::bounds_reference(m, 3, s);
    const double u = std::exp(-0.0032) + 1.0 / 3;
    const double r_up =
        ((1 - 0.5) + (1 - literal_p_minus(0.157 / 0.075)) + (1 - literal_p_minus(0.227 / 0.075))) /
        3;
    EXPECT_TRUE(r.sink_selected);
    EXPECT_NEAR(r.delta, 0.006, tol);
    EXPECT_NEAR(r.delta0, -0.1364, tol);
    EXPECT_NEAR(r.scale, 1.2, tol);
    EXPECT_NEAR(r.precision_lower, 1 / (1 + u), 1e-14);
    EXPECT_EQ(r.recall_lower, 0.0);
    EXPECT_NEAR(r.precision_upper, 0.875, 1e-15);
    EXPECT_NEAR(r.recall_upper, r_up, 1e-14);
    EXPECT_NEAR(r.fmax_upper, 2 * 0.875 / 1.875, 1e-15);
    const BoundRow f = th::bounds_all(m, {3}, s)[0];
    EXPECT_NEAR(f.recall_upper, r_up, 1e-14);
    EXPECT_NEAR(f.precision_lower, 1 / (1 + u), 1e-14);
    // Scale-invariant: B_si = 0.45 replaces B.
    s.variant = BoundVariant::scale_invariant;
    EXPECT_NEAR(th::bounds_reference(m, 3, s).scale, 0.45, tol);
}

// ---------------------------------------------------------------------------------------------
// Bad input.

TEST(BoundsBadInput, ThrowsDomainError) {
    namespace th = attngeo::theory;
    const HeadModel good = hand_model();
    BoundSettings s;
    EXPECT_NO_THROW(th::validate_head_model(good, "test"));
    auto expect_all_throw = [&](const HeadModel& m, const std::string& what) {
        EXPECT_THROW(th::validate_head_model(m, "test"), std::domain_error) << what;
        EXPECT_THROW(th::bounds_reference(m, 2, s), std::domain_error) << what;
        EXPECT_THROW(th::bounds_all(m, {2}, s), std::domain_error) << what;
        EXPECT_THROW(th::BoundTerms(m, {2}, BoundVariant::paper), std::domain_error) << what;
    };
    HeadModel m = good;
    m.norms.resize(3);
    expect_all_throw(m, "norms size");
    m = good;
    m.cosine = Eigen::MatrixXd::Identity(3, 3);
    expect_all_throw(m, "cosine size");
    m = good;
    m.cosine(1, 2) = 0.5 + 1e-6;  // ρ12 ≠ ρ21
    expect_all_throw(m, "non-symmetric");
    m = good;
    m.cosine(2, 2) = 0.9;
    expect_all_throw(m, "diagonal");
    m = good;
    m.cosine(0, 3) = m.cosine(3, 0) = 1.5;
    expect_all_throw(m, "|rho| > 1");
    m = good;
    m.cosine(0, 3) = m.cosine(3, 0) = std::nan("");
    expect_all_throw(m, "NaN cosine");
    m = good;
    m.alpha[1] = -0.1;
    expect_all_throw(m, "negative alpha");
    m = good;
    m.norms[2] = std::nan("");
    expect_all_throw(m, "NaN norm");
    m = good;
    m.norms[2] = -1;
    expect_all_throw(m, "negative norm");
    m.alpha = Eigen::VectorXd::Ones(1);
    m.norms = Eigen::VectorXd::Ones(1);
    m.cosine = Eigen::MatrixXd::Ones(1, 1);
    expect_all_throw(m, "one token");

    for (double d : {0.5, 0.0, -3.0, std::nan(""), -kInf}) {  // d = +inf is the d → ∞ limit
        BoundSettings bad;
        bad.d = d;
        EXPECT_THROW(th::bounds_reference(good, 2, bad), std::domain_error) << "d=" << d;
        EXPECT_THROW(th::bounds_all(good, {2}, bad), std::domain_error) << "d=" << d;
        EXPECT_THROW(th::BoundTerms(good, {2}, BoundVariant::paper).evaluate(d, 1.0),
                     std::domain_error)
            << "d=" << d;
    }
    for (double kappa : {0.0, -1.0, std::nan(""), kInf}) {
        BoundSettings bad;
        bad.kappa = kappa;
        EXPECT_THROW(th::bounds_reference(good, 2, bad), std::domain_error) << "kappa=" << kappa;
        EXPECT_THROW(th::bounds_all(good, {2}, bad), std::domain_error) << "kappa=" << kappa;
    }
    EXPECT_THROW(th::bounds_reference(good, 0, s), std::domain_error);
    EXPECT_THROW(th::bounds_reference(good, 5, s), std::domain_error);
    EXPECT_THROW(th::bounds_all(good, {1, 5}, s), std::domain_error);
    EXPECT_THROW(th::bounds_all(good, {0}, s), std::domain_error);
    try {
        th::parse_bound_variant("exact");
        ADD_FAILURE() << "'exact' named a variant";
    } catch (const attngeo::InputError& error) {
        EXPECT_STREQ(
            error.what(),
            "--variant: 'exact', expected paper, exact-mean, scale-invariant or corrected");
    }
    EXPECT_EQ(th::parse_bound_variant("scale-invariant"), BoundVariant::scale_invariant);
    EXPECT_EQ(th::parse_bound_variant("corrected"), BoundVariant::corrected);
    for (BoundVariant v : th::bound_variants())
        EXPECT_EQ(th::parse_bound_variant(th::to_string(v)), v);
    EXPECT_STREQ(th::to_string(BoundVariant::exact_mean), "exact-mean");
}

}  // namespace

namespace {

// The upper bounds' inner loops: the AVX2 paths (libmvec's exp) against the plain loops
// (std::exp, same lane order) and both against p_minus, on gaps that include ξ ≤ 0, tiny and
// huge ξ.
struct KernelSums {
    double largest = 0, complement = 0;
};

// Independent: p_minus (Boost's pdf) of the best candidate, position by position, in order.
KernelSums p_minus_reference(const std::vector<std::vector<double>>& candidates) {
    KernelSums out;
    for (const std::vector<double>& gaps : candidates) {
        double p = 0;
        for (double xi : gaps)
            if (xi > 0) p = std::max(p, attngeo::theory::p_minus(xi));
        out.largest = std::max(out.largest, p);
        out.complement += 1 - p;
    }
    return out;
}

void expect_kernel_sums(const std::vector<attngeo::theory::bound_kernels::PMinusSums>& got,
                        const KernelSums& want, int count, double* largest_relative) {
    for (const auto& sums : got) {
        for (const auto& [value, reference] : {std::pair{sums.largest, want.largest},
                                               std::pair{sums.complement_sum, want.complement}}) {
            const double relative =
                std::abs(value - reference) / std::max(std::abs(reference), 1e-300);
            *largest_relative =
                std::max(*largest_relative, reference == 0 ? std::abs(value) : relative);
            EXPECT_NEAR(value, reference, 1e-13 * std::max(1.0, std::abs(reference)))
                << "count " << count;
        }
    }
}

TEST(BoundKernels, VectorPMinusSumsMatchThePlainLoop) {
    namespace bk = attngeo::theory::bound_kernels;
    std::mt19937_64 rng(21);
    std::uniform_real_distribution<double> gap(-1.0, 6.0);
    double largest_relative = 0;
    for (int count : {0, 1, 3, 4, 5, 8, 13, 1000}) {
        std::vector<double> near(count), far(count);
        std::vector<std::vector<double>> candidates(count);
        for (int i = 0; i < count; ++i) {
            near[i] = gap(rng);
            far[i] = i % 7 == 3 ? 1e-300 : (i % 11 == 5 ? 1e200 : gap(rng));
            candidates[i] = {near[i], far[i]};
        }
        // The AVX2 loop by its name where the CPU has it (ATTNGEO_PLAIN only changes the
        // dispatcher), else the dispatcher, then the plain loop.
        std::vector<bk::PMinusSums> got = {bk::p_minus_sums(near.data(), far.data(), count),
                                           bk::p_minus_sums_plain(near.data(), far.data(), count)};
#if ATTNGEO_X86
        if (attngeo::cpu_has_avx2_fma())
            got.push_back(bk::p_minus_sums_avx2(near.data(), far.data(), count));
#endif
        expect_kernel_sums(got, p_minus_reference(candidates), count, &largest_relative);
    }
    std::cout << "[ info     ] p_minus_sums: largest relative difference (vector vs plain vs "
                 "p_minus) "
              << largest_relative << "\n";
}

// ξ_i = (anchor − h_i)/σ with h_i on both sides of the anchor (ξ ≤ 0 gives 0) and ξ from tiny
// to beyond exp's underflow.
TEST(BoundKernels, AnchoredPMinusSumsMatchThePlainLoop) {
    namespace bk = attngeo::theory::bound_kernels;
    std::mt19937_64 rng(22);
    std::uniform_real_distribution<double> spread(-3.0, 60.0);
    double largest_relative = 0;
    for (int count : {0, 1, 3, 4, 5, 8, 13, 1000}) {
        const double anchor = 2.5, inverse_sigma = 1.0 / 0.37;
        std::vector<double> h(count);
        std::vector<std::vector<double>> candidates(count);
        for (int i = 0; i < count; ++i) {
            h[i] = i % 9 == 4 ? anchor - 1e-290 : anchor - spread(rng) / inverse_sigma;
            candidates[i] = {(anchor - h[i]) * inverse_sigma};
        }
        std::vector<bk::PMinusSums> got = {
            bk::anchored_p_minus_sums(h.data(), count, anchor, inverse_sigma),
            bk::anchored_p_minus_sums_plain(h.data(), count, anchor, inverse_sigma)};
#if ATTNGEO_X86
        if (attngeo::cpu_has_avx2_fma())
            got.push_back(bk::anchored_p_minus_sums_avx2(h.data(), count, anchor, inverse_sigma));
#endif
        expect_kernel_sums(got, p_minus_reference(candidates), count, &largest_relative);
    }
    std::cout << "[ info     ] anchored_p_minus_sums: largest relative difference (vector vs "
                 "plain vs p_minus) "
              << largest_relative << "\n";
}

}  // namespace

// The degeneracy flags of docs/design.md §7 at and around their thresholds.
TEST(BoundsDegeneracy, FlagsAtTheirThresholds) {
    namespace th = attngeo::theory;
    BoundRow row;
    row.N = 3;
    row.delta = 0;
    row.delta0 = -1;
    row.sink_selected = false;  // Δ0's term is dropped: not a degeneracy
    row.deciding_xi_le0 = true;
    auto m = th::margin_flags(row);
    EXPECT_TRUE(m.delta_le0);
    EXPECT_FALSE(m.delta0_le0);
    EXPECT_TRUE(m.xi_le0);
    row.sink_selected = true;
    row.delta = 1e-300;
    m = th::margin_flags(row);
    EXPECT_FALSE(m.delta_le0);
    EXPECT_TRUE(m.delta0_le0);
    row.trivial = true;  // every bound 1 by convention: nothing is degenerate
    m = th::margin_flags(row);
    EXPECT_FALSE(m.delta_le0 || m.delta0_le0 || m.xi_le0);

    auto e = th::envelope_flags(0.5 + 1e-13, 0.5, 0.01, 0.99);
    EXPECT_FALSE(e.P_inverted);  // within the 1e-12 slack
    EXPECT_TRUE(e.R_trivial_lower);
    EXPECT_TRUE(e.R_trivial_upper);
    EXPECT_FALSE(e.P_trivial_lower || e.P_trivial_upper || e.R_inverted);
    e = th::envelope_flags(0.6, 0.5, 0.0100001, 0.9899999);
    EXPECT_TRUE(e.P_inverted);
    EXPECT_FALSE(e.R_trivial_lower || e.R_trivial_upper);
    // A real case: the paper preset with fast decay under the scale-invariant B at large κ.
    th::ModelParameters p;
    p.beta = 5;
    const HeadModel model = th::build_head_model(p);
    BoundSettings s;
    s.variant = BoundVariant::scale_invariant;
    s.kappa = 4e6;
    const BoundRow inverted = th::bounds_reference(model, 2, s);
    EXPECT_TRUE(th::envelope_flags(inverted.precision_lower, inverted.precision_upper,
                                   inverted.recall_lower, inverted.recall_upper)
                    .P_inverted);
    s.variant = BoundVariant::corrected;  // both fixes: the sink's self-term restored
    const BoundRow fixed = th::bounds_reference(model, 2, s);
    EXPECT_FALSE(th::envelope_flags(fixed.precision_lower, fixed.precision_upper,
                                    fixed.recall_lower, fixed.recall_upper)
                     .P_inverted);
}

namespace {

namespace th = attngeo::theory;

// The theorem statements (eqs. 12–15) as named functions: spot values worked by hand, the
// degenerate ends, and every row of bounds_reference and bounds_all rebuilt from them.
TEST(TheoremStatements, SpotValuesWorkedByHand) {
    // n_out = 10, N = 4, t(Δ) = 0.125, t(Δ0) = 0.25: 10·0.125 + (10/4)·0.25 = 1.875.
    EXPECT_EQ(th::union_tail(10, 4, true, 0.125, 0.25), 1.875);
    EXPECT_EQ(th::union_tail(10, 4, false, 0.125, 0.25), 1.25);  // no sink term
    EXPECT_EQ(th::precision_lower_bound(1.875), 1 / 2.875);
    EXPECT_EQ(th::recall_lower_bound(1.875), 0.0);  // clipped at 0
    EXPECT_EQ(th::recall_lower_bound(0.25), 0.75);
    EXPECT_EQ(th::precision_upper_bound(0.5, 4), 0.9);  // 1 − 0.5/5
    EXPECT_EQ(th::recall_upper_bound(3.0, 4), 0.75);
    // Nothing left out, or every tail 0: both lower bounds are 1; no pair probability: P ≤ 1.
    EXPECT_EQ(th::union_tail(0, 7, true, 1.0, 1.0), 0.0);
    EXPECT_EQ(th::precision_lower_bound(0.0), 1.0);
    EXPECT_EQ(th::recall_lower_bound(0.0), 1.0);
    EXPECT_EQ(th::precision_upper_bound(0.0, 1), 1.0);
    EXPECT_EQ(th::recall_upper_bound(5.0, 5), 1.0);
}

TEST(TheoremStatements, EveryBoundRowIsTheStatementsOfItsOwnMargins) {
    std::mt19937_64 rng(33);
    double largest = 0;
    int rows = 0;
    for (int repeat = 0; repeat < repeats(20); ++repeat) {
        const int n = 3 + static_cast<int>(rng() % 40);
        const HeadModel model = random_model(rng, n);
        BoundSettings settings;
        settings.kappa = std::exp(std::uniform_real_distribution<double>(-4, 4)(rng));
        settings.variant = th::bound_variants()[rng() % 4];
        for (int N = 1; N <= n; ++N) {
            const BoundRow row = th::bounds_reference(model, N, settings);
            if (row.trivial) continue;
            const double tail = th::tail_factor(row.delta, row.scale, settings.kappa, settings.d);
            const double tail0 = th::tail_factor(row.delta0, row.scale, settings.kappa, settings.d);
            const double u = th::union_tail(n - N, N, row.sink_selected, tail, tail0);
            // Independent of the named functions: eqs. (12) and (14) written out.
            double by_hand = (n - N) * tail;
            if (row.sink_selected) by_hand += static_cast<double>(n - N) / N * tail0;
            EXPECT_EQ(th::precision_lower_bound(u), row.precision_lower) << "N=" << N;
            EXPECT_EQ(th::recall_lower_bound(u), row.recall_lower) << "N=" << N;
            largest = std::max({largest, std::abs(row.precision_lower - 1 / (1 + by_hand)),
                                std::abs(row.recall_lower - std::max(0.0, 1 - by_hand))});
            // eq. (13) inverted for max p⁻, then eq. (15) from its own row.
            const double max_p = (1 - row.precision_upper) * (N + 1);
            EXPECT_NEAR(th::precision_upper_bound(max_p, N), row.precision_upper, 1e-15);
            EXPECT_NEAR(th::recall_upper_bound(row.recall_upper * N, N), row.recall_upper, 1e-15);
            ++rows;
        }
    }
    std::cout << "[ info     ] " << rows << " rows; largest difference to eqs. (12), (14) by hand "
              << largest << "\n";
    EXPECT_GT(rows, 0);
    EXPECT_LE(largest, 1e-15);
}

TEST(TheoremStatements, BadIngredientsThrow) {
    EXPECT_THROW(th::union_tail(-1, 4, true, 0.5, 0.5), std::domain_error);
    EXPECT_THROW(th::union_tail(3, 0, true, 0.5, 0.5), std::domain_error);
    EXPECT_THROW(th::union_tail(3, 2, true, 1.5, 0.5), std::domain_error);
    EXPECT_THROW(th::union_tail(3, 2, true, 0.5, std::nan("")), std::domain_error);
    EXPECT_THROW(th::precision_lower_bound(-0.25), std::domain_error);
    EXPECT_THROW(th::recall_lower_bound(std::nan("")), std::domain_error);
    EXPECT_THROW(th::precision_upper_bound(1.5, 3), std::domain_error);
    EXPECT_THROW(th::precision_upper_bound(0.25, 0), std::domain_error);
    EXPECT_THROW(th::recall_upper_bound(-1.0, 3), std::domain_error);
    EXPECT_THROW(th::recall_upper_bound(1.0, 0), std::domain_error);
}

// Before the peak p⁻ is a polynomial by tiers of ξ (no exp): each value within a few units of
// 2⁻⁵³ of Boost's p_minus, the AVX2 and plain loops equal bit for bit (both use fused
// multiply-adds), on runs that cross every tier.
TEST(BoundKernels, RisingPMinusSumsMatchBoostBeforeThePeak) {
    namespace bk = attngeo::theory::bound_kernels;
    const double peak = std::sqrt(std::sqrt(2.0) - 1.0);
    double largest_relative = 0;
    for (int k = 0; k <= 20000; ++k) {
        const double xi = k == 0 ? 1e-300 : bk::kRisingXiLimit * k / 20000;
        const double h = -xi;  // ξ = (0 − h)·1
        const double got = bk::rising_p_minus_sums_plain(&h, 1, 0.0, 1.0).largest;
        const double want = attngeo::theory::p_minus(xi);
        largest_relative = std::max(largest_relative, std::abs(got - want) / want);
    }
    EXPECT_LT(largest_relative, 6e-16);
    std::mt19937_64 rng(23);
    std::uniform_real_distribution<double> spread(-0.1, peak);
    double largest_sum_relative = 0;
    for (int count : {0, 1, 3, 4, 5, 8, 13, 1000}) {
        const double anchor = -4.0, inverse_sigma = 1.0 / 3e-3;
        std::vector<double> h(count);
        std::vector<std::vector<double>> candidates(count);
        for (int i = 0; i < count; ++i)
            h[i] = anchor - spread(rng) / inverse_sigma;
        std::sort(h.begin(), h.end());  // the kernel's precondition: ξ descends, tier by tier
        for (int i = 0; i < count; ++i)
            candidates[i] = {(anchor - h[i]) * inverse_sigma};
        const bk::PMinusSums plain =
            bk::rising_p_minus_sums_plain(h.data(), count, anchor, inverse_sigma);
        std::vector<bk::PMinusSums> got = {
            bk::rising_p_minus_sums(h.data(), count, anchor, inverse_sigma), plain};
#if ATTNGEO_X86
        if (attngeo::cpu_has_avx2_fma()) {
            const bk::PMinusSums vector =
                bk::rising_p_minus_sums_avx2(h.data(), count, anchor, inverse_sigma);
            EXPECT_EQ(vector.largest, plain.largest) << "count " << count;
            EXPECT_EQ(vector.complement_sum, plain.complement_sum) << "count " << count;
        }
#endif
        expect_kernel_sums(got, p_minus_reference(candidates), count, &largest_sum_relative);
    }
    std::cout << "[ info     ] rising p_minus (polynomial) vs Boost: largest relative difference "
              << largest_relative << " per value, " << largest_sum_relative << " in the sums\n";
}

// The far run's Σ(1 − p_i) from power sums of the gaps equals the position-by-position sum: runs
// starting on, between and past the checkpoints, gaps scaled from 1e-12 to 1e6 (the power sums
// are scaled per checkpoint), σ from the run's largest ξ = kRisingXiLimit down to ξ ~ 1e-9, and
// tails at and past the anchor (ξ ≤ 0: p = 0). Compared on Σ p_i, the digits the bound depends on.
TEST(FarMoments, PowerSumsEqualThePositionByPositionSum) {
    namespace bk = attngeo::theory::bound_kernels;
    namespace fm = attngeo::theory::far_moments;
    std::mt19937_64 rng(31);
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    double largest_vs_plain = 0, largest_vs_boost = 0;
    int runs = 0;
    for (int count : {1, 5, 63, 64, 65, 200, 1000}) {
        for (double scale : {1e-12, 1e-3, 1.0, 1e6}) {
            const double anchor = 0.25 * scale;
            std::vector<double> h(count);
            for (int i = 0; i < count; ++i)  // gaps in [−0.05, 1]·scale, a few at or past anchor
                h[i] = anchor - scale * (i % 17 == 16 ? -0.05 * unit(rng) : unit(rng));
            if (count > 3) h[count - 1] = anchor;
            std::sort(h.begin(), h.end());
            const fm::Moments moments = fm::build(h.data(), count, anchor);
            for (int from : {0, 1, 37, 64, 100, count - 1, count}) {
                if (from < 0 || from > count) continue;
                const double largest_gap = from < count ? anchor - h[from] : 0.0;
                for (double xi_top : {bk::kRisingXiLimit, 0.3, 1e-3, 1e-9}) {
                    const double inverse_sigma =
                        largest_gap > 0 ? xi_top / largest_gap : 1.0 / scale;
                    const double got = fm::complement_sum_by_moments(moments, h.data(), from,
                                                                     anchor, inverse_sigma);
                    const double plain = bk::rising_p_minus_sums_plain(
                                             h.data() + from, count - from, anchor, inverse_sigma)
                                             .complement_sum;
                    double p_sum = 0;  // Σ p_i by the closed form, summed directly
                    for (int i = from; i < count; ++i) {
                        const double xi = (anchor - h[i]) * inverse_sigma;
                        if (xi > 0) p_sum += attngeo::theory::p_minus(xi);
                    }
                    const double reference = (count - from) - p_sum;
                    // Σ p_i sits beside count − from in the sum: a few units of 2⁻⁵³ of Σ p and
                    // the rounding of adding up count − from ones (the plain loop's lanes).
                    const double allowed = 2e-14 * p_sum + 32 * 0x1p-53 * (count - from);
                    EXPECT_LE(std::abs(got - plain), allowed)
                        << "count " << count << " from " << from << " scale " << scale << " xi "
                        << xi_top;
                    EXPECT_LE(std::abs(got - reference), allowed)
                        << "count " << count << " from " << from << " scale " << scale << " xi "
                        << xi_top;
                    if (p_sum > 1e-3 * (count - from)) {  // where Σ p's digits show
                        largest_vs_plain =
                            std::max(largest_vs_plain, std::abs(got - plain) / p_sum);
                        largest_vs_boost =
                            std::max(largest_vs_boost, std::abs(got - reference) / p_sum);
                    }
                    ++runs;
                }
            }
        }
    }
    std::cout << "[ info     ] far run by power sums, " << runs
              << " runs: largest difference relative to sum p (where it is above 1e-3 per "
                 "position) to the plain loop "
              << largest_vs_plain << ", to the closed form " << largest_vs_boost << "\n";
}

}  // namespace
