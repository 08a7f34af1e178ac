// The judge of truncate folders (compare/truncation_summary.hpp): Spearman against a plain
// rank computation, the knee rule, and truncate.csv / effective_size.csv of a hand-written
// folder against means, standard errors and thresholds recomputed here; the head-level tests
// of the geometry link (compare/link_tests.hpp) against their formulas and a permutation test,
// calibrated on seeded head tables with no link and detecting a planted one; a scope-head
// folder's geometry_link.csv and link_summary.json against a plain recomputation.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <numeric>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/csv.hpp"
#include "common/errors.hpp"
#include "common/format.hpp"
#include "common/run_schema.hpp"
#include "common/safetensors.hpp"
#include "common/splitmix64.hpp"
#include "compare/bootstrap.hpp"
#include "compare/link_tests.hpp"
#include "compare/truncation_summary.hpp"
#include "tests/support/test_files.hpp"

namespace fs = std::filesystem;
using namespace attngeo;
using attngeo::compare::loss_knee;
using attngeo::compare::spearman;
using attngeo::compare::summarise_truncation;

namespace {

// A scope-all truncate folder of one attn curve at N = 1, 2, 4 over `loss` [3][D] (ΔNLL per
// document); the other measures are copies scaled by 2.
fs::path write_folder(const std::string& name, const std::vector<std::vector<double>>& loss,
                      const std::vector<double>& taus, int replicates) {
    const fs::path dir = test_support::scratch_folder("truncation_summary") / name;
    fs::remove_all(dir);
    fs::create_directories(dir);
    const std::int64_t C = static_cast<std::int64_t>(loss.size()),
                       D = static_cast<std::int64_t>(loss[0].size());
    std::vector<double> flat, twice;
    for (const auto& row : loss)
        for (double x : row) {
            flat.push_back(x);
            twice.push_back(2 * x);
        }
    std::vector<std::int64_t> zero(C, 0), minus(C, -1), N = {1, 2, 4};
    std::vector<HostTensor> tensors;
    for (const char* m : {"delta_nll", "kl"})
        tensors.push_back(tensor_view(m, DType::F64, {C, D}, flat.data(), flat.size() * 8));
    for (const char* m : {"top1", "dropped_mass", "output_error"})
        tensors.push_back(tensor_view(m, DType::F64, {C, D}, twice.data(), twice.size() * 8));
    tensors.push_back(tensor_view("policy", DType::I64, {C}, zero.data(), C * 8));
    tensors.push_back(tensor_view("renorm", DType::I64, {C}, zero.data(), C * 8));
    tensors.push_back(tensor_view("layer", DType::I64, {C}, minus.data(), C * 8));
    tensors.push_back(tensor_view("head", DType::I64, {C}, minus.data(), C * 8));
    tensors.push_back(tensor_view("N", DType::I64, {C}, N.data(), C * 8));
    write_safetensors((dir / schema::file::per_document).string(), tensors);
    const nlohmann::json manifest = {{"tool", "attngeo"},
                                     {"kind", "truncate"},
                                     {"format_version", schema::kFormatVersion},
                                     {"parameters",
                                      {{"scope", "all"},
                                       {"policies", {"attn"}},
                                       {"tau", taus},
                                       {"replicates", replicates},
                                       {"context", 16}}}};
    std::ofstream(dir / schema::file::manifest) << manifest.dump(2);
    return dir;
}

}  // namespace

TEST(Spearman, EqualsPearsonOfAverageRanks) {
    EXPECT_DOUBLE_EQ(spearman({1, 2, 3, 4}, {10, 20, 30, 40}), 1.0);
    EXPECT_DOUBLE_EQ(spearman({1, 2, 3, 4}, {4, 3, 2, 1}), -1.0);
    // Ties: x ranks 1, 2.5, 2.5, 4; y ranks 1, 2, 3, 4 → Pearson of those, by hand.
    const double rx[] = {1, 2.5, 2.5, 4}, ry[] = {1, 2, 3, 4};
    double mx = 2.5, my = 2.5, sxy = 0, sxx = 0, syy = 0;
    for (int i = 0; i < 4; ++i) {
        sxy += (rx[i] - mx) * (ry[i] - my);
        sxx += (rx[i] - mx) * (rx[i] - mx);
        syy += (ry[i] - my) * (ry[i] - my);
    }
    const double expected = sxy / std::sqrt(sxx * syy);
    const double got = spearman({0.1, 0.5, 0.5, 0.9}, {3, 5, 7, 100});
    std::cout << "difference from the by-hand value: " << std::abs(got - expected) << "\n";
    EXPECT_NEAR(got, expected, 1e-15);
    EXPECT_TRUE(std::isnan(spearman({1, 1, 1}, {1, 2, 3})));
    EXPECT_TRUE(std::isnan(spearman({1}, {2})));
}

TEST(LossKnee, FirstNWithinTheFractionOfTheFirstLoss) {
    EXPECT_EQ(loss_knee({1, 2, 4, 8}, {1.0, 0.5, 0.1, 0.01}), 4);
    EXPECT_EQ(loss_knee({1, 2, 4, 8}, {1.0, 0.5, 0.2, 0.11}), -1);
    EXPECT_EQ(loss_knee({1, 2}, {0.0, 0.0}), -1);
    EXPECT_EQ(loss_knee({1, 2, 4}, {1.0, 0.5, 0.3}, 0.5), 2);
}

TEST(TruncationSummary, MeansIntervalsAndEffectiveSizeRecomputeFromTheDocuments) {
    const std::vector<std::vector<double>> loss = {
        {0.30, 0.20, 0.25, 0.35}, {0.06, 0.02, 0.04, 0.08}, {0.004, -0.002, 0.001, 0.003}};
    const fs::path dir = write_folder("means", loss, {0.01, 0.1}, 200);
    summarise_truncation(dir.string());
    const CsvTable table = read_csv_table((dir / schema::file::truncation).string());
    ASSERT_EQ(table.rows.size(), 3u);
    double worst = 0;
    for (std::size_t c = 0; c < 3; ++c) {
        double mean = 0, squares = 0;
        for (double x : loss[c])
            mean += x / 4;
        for (double x : loss[c])
            squares += (x - mean) * (x - mean);
        const double se = std::sqrt(squares / 3 / 4);
        worst =
            std::max({worst, std::abs(table.number(c, "delta_nll") - mean),
                      std::abs(table.number(c, "delta_nll_se") - se),
                      std::abs(table.number(c, "delta_nll_hi") - (mean + 3.182446305284263 * se)),
                      std::abs(table.number(c, "dropped_mass") - 2 * mean)});
        EXPECT_EQ(table.integer(c, "N"), c == 0 ? 1 : c == 1 ? 2 : 4);
        EXPECT_EQ(table.integer(c, "layer"), -1);
    }
    std::cout << "largest difference from the plain recomputation: " << worst << "\n";
    EXPECT_LT(worst, 1e-12);
    const CsvTable sizes = read_csv_table((dir / schema::file::effective_size).string());
    ASSERT_EQ(sizes.rows.size(), 2u);
    EXPECT_EQ(sizes.number(0, "N_star"), 4);  // τ = 0.01: mean ΔNLL 0.0015 at N = 4
    EXPECT_EQ(sizes.number(1, "N_star"), 2);  // τ = 0.1: 0.05 at N = 2
    EXPECT_LE(sizes.number(1, "N_star_lo"), 2);
    EXPECT_GE(sizes.number(1, "N_star_hi"), 2);
    // The compression ratio 1 − N*/T at T = 16, its interval from N*'s ends swapped.
    EXPECT_EQ(sizes.number(0, "compression"), 1 - 4.0 / 16);
    EXPECT_EQ(sizes.number(1, "compression"), 1 - 2.0 / 16);
    EXPECT_EQ(sizes.number(1, "compression_lo"), 1 - sizes.number(1, "N_star_hi") / 16);
    EXPECT_EQ(sizes.number(1, "compression_hi"), 1 - sizes.number(1, "N_star_lo") / 16);
    EXPECT_FALSE(fs::exists(dir / schema::file::geometry_link));  // scope all: no link
}

TEST(TruncationSummary, NoNReachingTauLeavesNStarEmpty) {
    const fs::path dir =
        write_folder("unreached", {{0.5, 0.6}, {0.4, 0.5}, {0.3, 0.4}}, {0.01}, 50);
    summarise_truncation(dir.string());
    const CsvTable sizes = read_csv_table((dir / schema::file::effective_size).string());
    EXPECT_EQ(sizes.text(0, "N_star"), "");
    EXPECT_EQ(sizes.text(0, "N_star_hi"), "");
    EXPECT_EQ(sizes.text(0, "compression"), "");
    EXPECT_EQ(sizes.text(0, "compression_lo"), "");
}

TEST(TruncationSummary, AFolderOfAnotherKindOrWithoutArraysIsAnInputError) {
    const fs::path dir = write_folder("broken", {{0.5, 0.6}, {0.4, 0.5}, {0.3, 0.4}}, {0.01}, 10);
    fs::remove(dir / schema::file::per_document);
    test_support::expect_input_error([&] { summarise_truncation(dir.string()); },
                                     {"per_doc.safetensors"});
    std::ofstream(dir / schema::file::manifest)
        << R"({"tool": "attngeo", "kind": "extract", "format_version": 4})";
    test_support::expect_input_error([&] { summarise_truncation(dir.string()); },
                                     {"manifest.json", "truncate"});
}

// ---- The head-level tests of the link --------------------------------------------------------

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
using compare::LinkTest;

// A standard normal draw (Box–Muller on SplitMix64, the same on every platform).
double normal_draw(SplitMix64& rng) {
    const double u = rng.open_uniform(), v = rng.open_uniform();
    return std::sqrt(-2 * std::log(u)) * std::cos(2 * M_PI * v);
}

// The x with P(Z > x) = tail for a standard normal Z, by bisection on erfc.
double upper_normal_quantile(double tail) {
    double lo = 0, hi = 40;
    for (int i = 0; i < 200; ++i) {
        const double mid = (lo + hi) / 2;
        (0.5 * std::erfc(mid / std::sqrt(2.0)) > tail ? lo : hi) = mid;
    }
    return (lo + hi) / 2;
}

// Spearman by counting: rank = 1 + #smaller + (#equal − 1)/2, then Pearson of the ranks.
double plain_spearman(const std::vector<double>& x, const std::vector<double>& y) {
    const std::size_t n = x.size();
    auto ranks = [n](const std::vector<double>& v) {
        std::vector<double> r(n, 1.0);
        for (std::size_t i = 0; i < n; ++i)
            for (std::size_t j = 0; j < n; ++j)
                if (j != i) r[i] += v[j] < v[i] ? 1.0 : v[j] == v[i] ? 0.5 : 0.0;
        return r;
    };
    const auto rx = ranks(x), ry = ranks(y);
    const double mean = (n + 1) / 2.0;
    double sxy = 0, sxx = 0, syy = 0;
    for (std::size_t i = 0; i < n; ++i) {
        sxy += (rx[i] - mean) * (ry[i] - mean);
        sxx += (rx[i] - mean) * (rx[i] - mean);
        syy += (ry[i] - mean) * (ry[i] - mean);
    }
    return sxx > 0 && syy > 0 ? sxy / std::sqrt(sxx * syy) : kNaN;
}

// The Fisher–FHP p-value written out: 2(1 − Φ(|atanh ρ| / sqrt(1.06/(n − 3)))).
double plain_p(double rho, int heads) {
    if (!std::isfinite(rho) || heads < 10) return kNaN;
    const double se = std::sqrt(1.06 / (heads - 3));
    return std::erfc(std::abs(std::atanh(rho)) / se / std::sqrt(2.0));
}

// The quantities of the link in geometry_link.csv's order; the family is the geometric ones,
// less P, R, F at N = 1 and N ≥ n, the window's length (docs/commands/truncate.md).
const std::vector<std::string> kLinkQuantities = {
    "precision", "recall", "f_score", "dropped_mass", "output_error", "lambda", "rho0", "beta"};
bool geometric(const std::string& q) {
    return q != "dropped_mass" && q != "output_error";
}
bool candidate(const std::string& q, int N, int context = 1 << 30) {
    return geometric(q) &&
           !((N == 1 || N >= context) && (q == "precision" || q == "recall" || q == "f_score"));
}

// A synthetic head table shaped like a real truncate link, over N = 1..64: P falls and R rises
// with N around a per-head geometry factor g (both 1 at N = 1, the identity), F = 2PR/(P + R);
// λ, ρ0 and β share g; ΔNLL ∝ e^u / N with its own per-head factor u, so the N are strongly
// correlated; dropped mass and output error follow ΔNLL (the reference predictors). `link` > 0
// plants ΔNLL ∝ e^(u/2 + link·ρ0) / N; link = 0 leaves ΔNLL independent of the geometry.
struct HeadTable {
    std::vector<int> sizes = {1, 2, 4, 8, 16, 32, 64};
    std::vector<std::vector<double>> loss;                          // [S][H]
    std::map<std::string, std::vector<std::vector<double>>> value;  // name → [S][H]
};
HeadTable head_table(std::uint64_t seed, int heads, double link) {
    SplitMix64 rng(seed);
    HeadTable t;
    const std::size_t S = t.sizes.size();
    t.loss.assign(S, std::vector<double>(heads));
    for (const std::string& q : kLinkQuantities)
        t.value[q].assign(S, std::vector<double>(heads));
    auto logistic = [](double x) { return 1 / (1 + std::exp(-x)); };
    for (int h = 0; h < heads; ++h) {
        const double g = normal_draw(rng), u = normal_draw(rng);
        const double rho0 = 0.7 * g + 0.7 * normal_draw(rng);
        const double lambda = std::exp(0.5 * g + 0.5 * normal_draw(rng));
        const double beta = std::exp(-1 + 0.6 * g + 0.6 * normal_draw(rng));
        const double scale = link > 0 ? std::exp(0.5 * u + link * rho0) : std::exp(u);
        for (std::size_t s = 0; s < S; ++s) {
            const double lg = std::log2(t.sizes[s]);
            const double P = s == 0 ? 1 : logistic(1 + 0.8 * g - 0.4 * lg + 0.3 * normal_draw(rng));
            const double R =
                s == 0 ? 1 : logistic(-2 + 0.5 * g + 0.6 * lg + 0.3 * normal_draw(rng));
            const double loss = scale / t.sizes[s] * (1 + 0.1 * normal_draw(rng));
            t.loss[s][h] = loss;
            t.value["precision"][s][h] = P;
            t.value["recall"][s][h] = R;
            t.value["f_score"][s][h] = 2 * P * R / (P + R);
            t.value["dropped_mass"][s][h] = 0.5 * loss + 0.05 * std::abs(normal_draw(rng));
            t.value["output_error"][s][h] = loss * std::exp(0.2 * normal_draw(rng));
            t.value["lambda"][s][h] = lambda;
            t.value["rho0"][s][h] = rho0;
            t.value["beta"][s][h] = beta;
        }
    }
    return t;
}

std::vector<LinkTest> table_tests(const HeadTable& t) {
    std::vector<LinkTest> tests;
    for (std::size_t s = 0; s < t.sizes.size(); ++s)
        for (const std::string& q : kLinkQuantities) {
            LinkTest x;
            x.quantity = q;
            x.N = t.sizes[s];
            x.spearman = compare::spearman(t.loss[s], t.value.at(q)[s]);
            x.heads = static_cast<int>(t.loss[s].size());
            x.candidate = candidate(q, x.N);
            tests.push_back(x);
        }
    return tests;
}

}  // namespace

TEST(SpearmanHeadTest, FisherZWithTheFiellerHartleyPearsonErrorAsWrittenOut) {
    double worst = 0;
    for (int heads : {50, 80, 400})
        for (double rho : {-0.8, -0.3, 0.0, 0.2, 0.55, 0.95})
            for (double level : {0.95, 0.99}) {
                const auto t = compare::spearman_head_test(rho, heads, level);
                const double se = std::sqrt(1.06 / (heads - 3)), z = std::atanh(rho);
                const double q = upper_normal_quantile((1 - level) / 2);
                worst = std::max({worst, std::abs(t.p - plain_p(rho, heads)),
                                  std::abs(t.lo - std::tanh(z - q * se)),
                                  std::abs(t.hi - std::tanh(z + q * se))});
            }
    for (int heads : {10, 12, 30})
        for (double rho : {-0.8, 0.2, 0.55})
            worst =
                std::max(worst, std::abs(compare::fhp_p_value(rho, heads) - plain_p(rho, heads)));
    std::cout << "largest difference from the written-out formulas: " << worst << "\n";
    EXPECT_LT(worst, 1e-12);
    EXPECT_TRUE(std::isnan(compare::spearman_head_test(0.5, 9).p)) << "fewer than 10 heads";
    EXPECT_TRUE(std::isnan(compare::spearman_head_test(kNaN, 20).lo));
    for (int heads : {12, 60}) {
        const auto perfect = compare::spearman_head_test(-1.0, heads);
        EXPECT_LT(perfect.p, 1e-5) << heads;
        EXPECT_EQ(perfect.lo, -1.0);
        EXPECT_EQ(perfect.hi, -1.0);
    }
    EXPECT_THROW(compare::spearman_head_test(1.5, 20), std::domain_error);
    EXPECT_THROW(compare::spearman_head_test(0.5, 20, 1.0), std::domain_error);
}

TEST(SpearmanHeadTest, FewHeadsUseThePermutationNullAndItsIntervalInvertsTheTest) {
    // A plain permutation p-value of each data set against the library's null table, on 12
    // heads; the normal approximation printed beside it is what the table replaces.
    const int n = 12, permutations = 20000;
    SplitMix64 rng(2024);
    for (double slope : {0.35, 0.7, 1.2}) {
        std::vector<double> x(n), y(n);
        for (int i = 0; i < n; ++i) {
            x[i] = normal_draw(rng);
            y[i] = slope * x[i] + normal_draw(rng);
        }
        const double rho = plain_spearman(x, y);
        int as_large = 0;
        std::vector<double> shuffled = y;
        for (int b = 0; b < permutations; ++b) {
            for (int i = n - 1; i > 0; --i)  // Fisher–Yates
                std::swap(shuffled[i], shuffled[rng.below(i + 1)]);
            as_large += std::abs(plain_spearman(x, shuffled)) >= std::abs(rho) - 1e-12;
        }
        const double p_perm = (as_large + 1.0) / (permutations + 1.0);
        const double p = compare::spearman_head_test(rho, n).p;
        const double se = std::sqrt(p_perm * (1 - p_perm) / permutations);
        std::cout << "rho " << rho << ": head-level p " << p << ", plain permutation p " << p_perm
                  << " (se " << se << "), normal-theory Fisher-FHP p "
                  << compare::fhp_p_value(rho, n) << "\n";
        EXPECT_NEAR(p, p_perm, 4 * se + 1e-4) << "rho " << rho;
    }
    // The interval excludes 0 exactly when p ≤ 1 − level, over the whole lattice of ρ.
    for (int heads : {10, 16, 49})
        for (double level : {0.95, 1 - 0.05 / 39}) {
            int mismatches = 0;
            for (int k = -400; k <= 400; ++k) {
                const double rho = k / 400.0;
                const auto t = compare::spearman_head_test(rho, heads, level);
                mismatches += (t.lo > 0 || t.hi < 0) != (t.p <= 1 - level);
            }
            EXPECT_EQ(mismatches, 0) << heads << " heads, level " << level;
        }
}

TEST(SpearmanHeadTest, SizeIsNominalWhenHeadsAreIndependentDownToABonferroniTail) {
    const int draws = 200000;
    const double tail = 0.05 / 39;  // the family's per-test level on a 39-test grid
    for (int heads : {10, 16, 60}) {
        SplitMix64 rng(7 + heads);
        int at_5 = 0, at_tail = 0, normal_at_tail = 0;
        std::vector<double> x(heads), y(heads);
        for (int d = 0; d < draws; ++d) {
            for (int i = 0; i < heads; ++i) {
                x[i] = normal_draw(rng);
                y[i] = normal_draw(rng);
            }
            const double rho = compare::spearman(x, y);
            const double p = compare::spearman_head_test(rho, heads).p;
            at_5 += p <= 0.05;
            at_tail += p <= tail;
            normal_at_tail += compare::fhp_p_value(rho, heads) <= tail;
        }
        const double rate = static_cast<double>(at_5) / draws,
                     rate_tail = static_cast<double>(at_tail) / draws,
                     normal_tail = static_cast<double>(normal_at_tail) / draws;
        const double se_tail = std::sqrt(tail / draws);
        std::cout << heads << " heads, independent: p <= 0.05 in " << rate << "; p <= " << tail
                  << " in " << rate_tail << " (normal theory alone: " << normal_tail << ", se "
                  << se_tail << ")\n";
        EXPECT_NEAR(rate, 0.05, 0.008) << heads << " heads";
        EXPECT_LE(rate_tail, tail + 4 * se_tail) << heads << " heads";
        if (heads < compare::kLinkExactNullBelow) {
            EXPECT_GT(normal_tail, tail + 4 * se_tail)
                << "the normal approximation is what fails here, hence the permutation null";
        }
    }
}

TEST(LinkFamily, HolmAndBonferroniAgainstTheTextbookStepDown) {
    SplitMix64 rng(11);
    std::vector<LinkTest> tests;
    for (int i = 0; i < 30; ++i) {
        LinkTest t;
        t.quantity = "q" + std::to_string(i);
        t.N = 1 + i % 5;
        t.heads = 60;  // the normal-theory regime, where the intervals can be written out
        t.spearman = i % 7 == 0 ? 0.9 - 0.05 * i / 7 : std::tanh(0.25 * normal_draw(rng));
        t.candidate = i % 4 != 3;
        tests.push_back(t);
    }
    tests[1].spearman = kNaN;  // undefined: a constant series
    tests[2].heads = 8;        // undefined: too few heads
    const int m = compare::test_link_family(tests);
    std::vector<double> p;
    for (const LinkTest& t : tests) {
        const bool in = t.candidate && std::isfinite(plain_p(t.spearman, t.heads));
        EXPECT_EQ(t.family, in) << t.quantity;
        if (in) {
            // The step-down below runs on the function's own p (checked against the formula in
            // FisherZWithTheFiellerHartleyPearsonErrorAsWrittenOut), so rounding cannot move a
            // test across its neighbour.
            EXPECT_NEAR(t.head.p, plain_p(t.spearman, t.heads), 1e-15) << t.quantity;
            p.push_back(t.head.p);
        }
        if (!in) {
            EXPECT_TRUE(std::isnan(t.p_holm)) << t.quantity;
            EXPECT_FALSE(t.excludes_zero) << t.quantity;
        }
    }
    ASSERT_EQ(m, static_cast<int>(p.size()));
    std::sort(p.begin(), p.end());
    double worst = 0;
    const double q = upper_normal_quantile(0.05 / (2.0 * m));
    int excluding = 0;
    for (const LinkTest& t : tests) {
        if (!t.family) continue;
        // Holm's adjusted p written out: max over the j-th smallest p_(j) ≤ p of (m − j)·p_(j).
        double adjusted = 0;
        for (int j = 0; j < m && p[j] <= t.head.p; ++j)
            adjusted = std::max(adjusted, std::min(1.0, (m - j) * p[j]));
        const double se = std::sqrt(1.06 / (t.heads - 3)), z = std::atanh(t.spearman);
        worst = std::max({worst, std::abs(t.p_holm - adjusted),
                          std::abs(t.adj_lo - std::tanh(z - q * se)),
                          std::abs(t.adj_hi - std::tanh(z + q * se))});
        EXPECT_EQ(t.excludes_zero, t.head.p < 0.05 / m) << t.quantity;
        excluding += t.excludes_zero;
    }
    std::cout << m << " tests in the family, " << excluding
              << " exclude 0; largest difference from the written-out Holm and Bonferroni: "
              << worst << "\n";
    EXPECT_LT(worst, 1e-12);
    EXPECT_GT(excluding, 0) << "the fixture plants strong correlations";
    // Holm's decision at several α equals the textbook step-down: reject while p_(k) ≤ α/(m − k).
    for (double alpha : {0.01, 0.05, 0.2, 0.5}) {
        int k = 0;
        while (k < m && p[k] <= alpha / (m - k))
            ++k;
        for (const LinkTest& t : tests) {
            if (!t.family) continue;
            EXPECT_EQ(t.p_holm <= alpha, k > 0 && t.head.p <= p[k - 1])
                << t.quantity << " at alpha " << alpha;
        }
    }
    // The strongest: the smallest Holm p, then the smallest p, then the largest |ρ|.
    int strongest = -1;
    for (std::size_t i = 0; i < tests.size(); ++i)
        if (tests[i].family &&
            (strongest < 0 || tests[i].head.p < tests[strongest].head.p ||
             (tests[i].head.p == tests[strongest].head.p &&
              std::abs(tests[i].spearman) > std::abs(tests[strongest].spearman))))
            strongest = static_cast<int>(i);
    EXPECT_EQ(compare::strongest_link(tests), strongest);
    std::vector<LinkTest> none(3);
    EXPECT_EQ(compare::test_link_family(none), 0);
    EXPECT_EQ(compare::strongest_link(none), -1);
}

TEST(LinkFamily, WithoutALinkSomeAdjustedIntervalExcludesZeroInAtMostFivePercentOfTables) {
    const int replications = 2000;
    const double se = std::sqrt(0.05 * 0.95 / replications);
    for (int heads : {10, 16, 40}) {
        int any_adjusted = 0, any_raw = 0, m = 0;
        long raw = 0, family = 0;
        for (int r = 0; r < replications; ++r) {
            std::vector<LinkTest> tests = table_tests(head_table(1000 + r, heads, 0.0));
            m = compare::test_link_family(tests);
            bool adjusted = false, unadjusted = false;
            for (const LinkTest& t : tests) {
                if (!t.family) continue;
                ++family;
                raw += t.head.p <= 0.05;
                unadjusted = unadjusted || t.head.p <= 0.05;
                adjusted = adjusted || t.excludes_zero;
            }
            any_adjusted += adjusted;
            any_raw += unadjusted;
        }
        const double rate = static_cast<double>(any_adjusted) / replications;
        const double raw_share = static_cast<double>(raw) / family;
        const double raw_rate = static_cast<double>(any_raw) / replications;
        std::cout << replications << " head tables of " << heads << " heads, m = " << m
                  << " tests each, no link: some adjusted interval excludes 0 in " << rate
                  << " (bound 0.05 + 3 se = " << 0.05 + 3 * se
                  << "); unadjusted, some p <= 0.05 in " << raw_rate
                  << "; share of single tests with p <= 0.05: " << raw_share << "\n";
        EXPECT_EQ(m, 39) << "6 geometric quantities at 7 N, less P, R, F at N = 1";
        EXPECT_LE(rate, 0.05 + 3 * se) << heads << " heads";
        EXPECT_NEAR(raw_share, 0.05, 0.015) << "each test alone is calibrated";
        EXPECT_GT(raw_rate, 0.05 + 3 * se) << "without the adjustment the family would fail";
    }
}

TEST(LinkFamily, IndependentTestsTheHardestCaseForBonferroniStayAtFivePercent) {
    // m independent tests are where Bonferroni is tight: the family-wise rate is then
    // 1 − (1 − α/m)^m ≈ 4.9 %, and any excess of the single tests' far tail shows in full.
    const int replications = 4000, heads = 12, m = 40;
    const double se = std::sqrt(0.05 * 0.95 / replications);
    int adjusted = 0, normal_theory = 0;
    std::vector<double> x(heads), y(heads);
    for (int r = 0; r < replications; ++r) {
        SplitMix64 rng(90000 + r);
        std::vector<LinkTest> tests(m);
        for (int k = 0; k < m; ++k) {
            for (int i = 0; i < heads; ++i) {
                x[i] = normal_draw(rng);
                y[i] = normal_draw(rng);
            }
            tests[k].quantity = "q" + std::to_string(k);
            tests[k].spearman = compare::spearman(x, y);
            tests[k].heads = heads;
            tests[k].candidate = true;
        }
        ASSERT_EQ(compare::test_link_family(tests), m);
        bool any = false, any_normal = false;
        for (const LinkTest& t : tests) {
            any = any || t.excludes_zero;
            any_normal = any_normal || compare::fhp_p_value(t.spearman, heads) < 0.05 / m;
        }
        adjusted += any;
        normal_theory += any_normal;
    }
    const double rate = static_cast<double>(adjusted) / replications,
                 normal_rate = static_cast<double>(normal_theory) / replications;
    std::cout << replications << " families of " << m << " independent tests on " << heads
              << " heads: some adjusted interval excludes 0 in " << rate << " (bound "
              << 0.05 + 3 * se << "); with normal-theory Fisher-FHP p-values: " << normal_rate
              << "\n";
    EXPECT_LE(rate, 0.05 + 3 * se);
    EXPECT_GT(normal_rate, 0.05 + 3 * se) << "why few heads use the permutation null";
}

TEST(LinkFamily, APlantedLinkIsDetectedAndNamed) {
    const int replications = 500, heads = 16;
    int detected = 0, named = 0;
    for (int r = 0; r < replications; ++r) {
        std::vector<LinkTest> tests = table_tests(head_table(5000 + r, heads, 0.8));
        compare::test_link_family(tests);
        const int s = compare::strongest_link(tests);
        ASSERT_GE(s, 0);
        detected += tests[s].excludes_zero;
        named += tests[s].excludes_zero && tests[s].quantity == "rho0";
    }
    const double detection = static_cast<double>(detected) / replications,
                 naming = static_cast<double>(named) / replications;
    std::cout << replications << " head tables of " << heads
              << " heads with ΔNLL planted on rho0: some adjusted interval excludes 0 in "
              << detection << ", the best predictor is rho0 in " << naming << "\n";
    EXPECT_GE(detection, 0.8);
    EXPECT_GE(naming, 0.6);
}

// ---- A scope-head folder: geometry_link.csv and link_summary.json ---------------------------

namespace {

constexpr int kLinkLayers = 3, kLinkHeadsPerLayer = 4, kLinkUnits = 12, kLinkDocs = 6,
              kLinkContext = 32, kLinkLags = 14, kLinkReplicates = 200;
const std::vector<int> kLinkSizes = {1, 2, 4, 8, 16, 32};  // 32: every token of the window
const std::vector<std::string> kLinkPolicies = {"attn", "random"};

// What the fixture wrote, for the plain recomputation.
struct LinkFixture {
    fs::path dir;
    std::vector<double> loss;          // [policy][unit][s][doc]
    std::vector<double> P, R;          // [doc][unit][s]
    std::vector<double> rho0, lambda;  // [doc][unit]
    double loss_at(int p, int u, int s, int d) const {
        return loss[((p * kLinkUnits + u) * kLinkSizes.size() + s) * kLinkDocs + d];
    }
    std::size_t geo(int d, int u, int s) const {
        return (d * kLinkUnits + u) * kLinkSizes.size() + s;
    }
};

double fixture_rho0(int u) {
    return ((7 * u) % 12) / 12.0 - 0.3;
}

std::string csv_number(double x) {
    return format_double(x);
}

HostTensor f32(const std::string& name, std::vector<std::int64_t> shape,
               const std::vector<double>& values) {
    auto data = std::make_shared<std::vector<float>>(values.begin(), values.end());
    return tensor_view(name, DType::F32, std::move(shape), data->data(), data->size() * 4, data);
}

// extract/ of the link fixture: every file compare's readers need, with P, R, ρ0, λ from `f`
// and cosines decaying at a per-head β.
void write_link_extract(const fs::path& dir, const LinkFixture& f) {
    fs::create_directories(dir);
    const nlohmann::json manifest = {
        {"tool", "attngeo"},
        {"kind", "extract"},
        {"format_version", schema::kFormatVersion},
        {"model",
         {{"layers", kLinkLayers},
          {"heads", kLinkHeadsPerLayer},
          {"kv_heads", kLinkHeadsPerLayer},
          {"head_dim", 4},
          {"family", "synthetic"}}},
        {"parameters", {{"context", kLinkContext}, {"max_lag", kLinkLags}}}};
    std::ofstream(dir / schema::file::manifest) << manifest.dump(2);
    const char* regimes[3] = {"Retriever", "Mixer", "Reset"};
    std::ostringstream heads, pr, pos, lags;
    heads << "layer,head,kv_head,docs,norm_mean,norm_median,cv_positional,cv_pooled,lambda,rho0,"
             "sink_mass,last_mass,m_sink,m_last,m_rest,regime,regime_margin\n";
    pr << "layer,head,N,docs,P_mean,P_se,R_mean,R_se,Fmax_mean,Fmin_mean\n";
    pos << "layer,head,pos,norm_mean,alpha_mean,contrib_mean\n";
    lags << "layer,head,lag,cos_mean,pairs\n";
    const int S = static_cast<int>(kLinkSizes.size());
    std::vector<double> cos(kLinkDocs * kLinkUnits * kLinkLags),
        alpha(kLinkDocs * kLinkUnits * kLinkContext, 1.0 / kLinkContext),
        per_head(kLinkDocs * kLinkUnits, 0.5), per_size(kLinkDocs * kLinkUnits * S, 0.5);
    for (int u = 0; u < kLinkUnits; ++u) {
        const int l = u / kLinkHeadsPerLayer, h = u % kLinkHeadsPerLayer;
        const double beta = 0.05 + 0.02 * ((11 * u) % 12);
        heads << l << ',' << h << ',' << h << ',' << kLinkDocs << ",1,1,0.01,0.1,0.5,"
              << csv_number(fixture_rho0(u)) << ",0.1,0.1,0.1,0.2,0.3," << regimes[u % 3]
              << ",1.5\n";
        for (int s = 0; s < S; ++s)
            pr << l << ',' << h << ',' << kLinkSizes[s] << ',' << kLinkDocs << ",0.5,0.01,0.5,0.01,"
               << "0.5,0.5\n";
        for (int p = 0; p < kLinkContext; ++p)
            pos << l << ',' << h << ',' << p << ",1," << csv_number(1.0 / kLinkContext) << ','
                << csv_number(1.0 / kLinkContext) << '\n';
        for (int k = 1; k <= kLinkLags; ++k) {
            lags << l << ',' << h << ',' << k << ',' << csv_number(std::exp(-beta * k)) << ','
                 << kLinkDocs * (kLinkContext - k) << '\n';
            for (int d = 0; d < kLinkDocs; ++d)
                cos[(d * kLinkUnits + u) * kLinkLags + k - 1] = std::exp(-beta * k);
        }
    }
    std::ofstream(dir / schema::file::heads) << heads.str();
    std::ofstream(dir / schema::file::precision_recall) << pr.str();
    std::ofstream(dir / schema::file::by_position) << pos.str();
    std::ofstream(dir / schema::file::cos_by_lag) << lags.str();
    const std::vector<std::int64_t> dlh = {kLinkDocs, kLinkLayers, kLinkHeadsPerLayer},
                                    dlhs = {kLinkDocs, kLinkLayers, kLinkHeadsPerLayer, S};
    auto sizes = std::make_shared<std::vector<std::int64_t>>(kLinkSizes.begin(), kLinkSizes.end());
    std::vector<HostTensor> tensors = {
        tensor_view("N", DType::I64, {S}, sizes->data(), S * 8, sizes),
        f32("P", dlhs, f.P),
        f32("R", dlhs, f.R),
        f32("rho0", dlh, f.rho0),
        f32("lambda", dlh, f.lambda),
        f32("cos_by_lag", {kLinkDocs, kLinkLayers, kLinkHeadsPerLayer, kLinkLags}, cos),
        f32("alpha", {kLinkDocs, kLinkLayers, kLinkHeadsPerLayer, kLinkContext}, alpha),
        f32("C", dlh, per_head),
        f32("m_sink", dlh, per_head),
        f32("m_last", dlh, per_head),
        f32("m_rest", dlh, per_head),
        f32("Fmax", dlhs, per_size),
        f32("Fmin", dlhs, per_size),
        f32("cos_s_v0", dlhs, per_size),
        f32("cos_s_vL", dlhs, per_size)};
    write_safetensors((dir / schema::file::per_document).string(), tensors);
}

// A scope-head truncate folder of 12 heads, N = 1, 2, …, 32 = n and 6 windows: under `attn` each
// head's ΔNLL follows its ρ0 (a planted link), under `random` it follows nothing geometric.
// P and R are 1 at N = 1 and N = n (the identities) and vary by head and window elsewhere.
LinkFixture write_link_folder(const std::string& name) {
    LinkFixture f;
    f.dir = test_support::scratch_folder("truncation_summary") / name;
    fs::remove_all(f.dir);
    fs::create_directories(f.dir);
    const int S = static_cast<int>(kLinkSizes.size());
    f.P.resize(kLinkDocs * kLinkUnits * S);
    f.R.resize(f.P.size());
    f.rho0.resize(kLinkDocs * kLinkUnits);
    f.lambda.resize(f.rho0.size());
    for (int d = 0; d < kLinkDocs; ++d)
        for (int u = 0; u < kLinkUnits; ++u) {
            // Stored as float32 by extract: keep the fixture's values exactly representable.
            f.rho0[d * kLinkUnits + u] =
                static_cast<float>(fixture_rho0(u) + 0.01 * std::sin(d + u));
            f.lambda[d * kLinkUnits + u] =
                static_cast<float>(0.3 + ((5 * u) % 12) / 20.0 + 0.01 * std::cos(d * u));
            for (int s = 0; s < S; ++s) {
                const std::size_t i = f.geo(d, u, s);
                const bool identity = s == 0 || kLinkSizes[s] >= kLinkContext;
                f.P[i] = identity ? 1.0f
                                  : static_cast<float>(0.9 - 0.1 * s + 0.02 * ((3 * u) % 12) / 12 +
                                                       0.03 * std::sin(d + u + s));
                f.R[i] = identity
                             ? 1.0f
                             : static_cast<float>(0.3 + 0.15 * s + 0.03 * ((5 * u + 1) % 12) / 12 +
                                                  0.03 * std::cos(d * u + s));
            }
        }
    const std::int64_t C = static_cast<std::int64_t>(kLinkPolicies.size()) * kLinkUnits * S;
    f.loss.resize(C * kLinkDocs);
    std::vector<double> kl(f.loss.size()), top1(f.loss.size(), 0.9), dropped(f.loss.size()),
        output(f.loss.size());
    std::vector<std::int64_t> policy(C), renorm(C, 0), layer(C), head(C), N(C);
    for (int p = 0; p < 2; ++p)
        for (int u = 0; u < kLinkUnits; ++u)
            for (int s = 0; s < S; ++s) {
                const std::int64_t c = (p * kLinkUnits + u) * S + s;
                policy[c] = p;
                layer[c] = u / kLinkHeadsPerLayer;
                head[c] = u % kLinkHeadsPerLayer;
                N[c] = kLinkSizes[s];
                const double scale = p == 0 ? 1 + 2 * fixture_rho0(u) + 0.3 * std::sin(3.0 * u)
                                            : 1 + 0.5 * std::cos(2.3 * u + 1);
                for (int d = 0; d < kLinkDocs; ++d) {
                    const std::size_t i = c * kLinkDocs + d;
                    f.loss[i] = scale / kLinkSizes[s] + 0.01 * std::sin(d + 2.0 * u);
                    kl[i] = 0.8 * f.loss[i];
                    dropped[i] = 0.5 * f.loss[i];
                    output[i] = 1.1 * f.loss[i] + 0.001 * d;
                }
            }
    std::vector<HostTensor> tensors;
    const std::size_t bytes = f.loss.size() * 8;
    tensors.push_back(tensor_view("delta_nll", DType::F64, {C, kLinkDocs}, f.loss.data(), bytes));
    tensors.push_back(tensor_view("kl", DType::F64, {C, kLinkDocs}, kl.data(), bytes));
    tensors.push_back(tensor_view("top1", DType::F64, {C, kLinkDocs}, top1.data(), bytes));
    tensors.push_back(
        tensor_view("dropped_mass", DType::F64, {C, kLinkDocs}, dropped.data(), bytes));
    tensors.push_back(
        tensor_view("output_error", DType::F64, {C, kLinkDocs}, output.data(), bytes));
    tensors.push_back(tensor_view("policy", DType::I64, {C}, policy.data(), C * 8));
    tensors.push_back(tensor_view("renorm", DType::I64, {C}, renorm.data(), C * 8));
    tensors.push_back(tensor_view("layer", DType::I64, {C}, layer.data(), C * 8));
    tensors.push_back(tensor_view("head", DType::I64, {C}, head.data(), C * 8));
    tensors.push_back(tensor_view("N", DType::I64, {C}, N.data(), C * 8));
    write_safetensors((f.dir / schema::file::per_document).string(), tensors);
    const nlohmann::json manifest = {{"tool", "attngeo"},
                                     {"kind", "truncate"},
                                     {"format_version", schema::kFormatVersion},
                                     {"parameters",
                                      {{"scope", "head"},
                                       {"policies", kLinkPolicies},
                                       {"tau", {0.1}},
                                       {"replicates", kLinkReplicates},
                                       {"context", kLinkContext}}}};
    std::ofstream(f.dir / schema::file::manifest) << manifest.dump(2);
    write_link_extract(f.dir / schema::file::geometry_extract, f);
    return f;
}

// The head means the link correlates, recomputed from the fixture's arrays with document
// weights `w`: [unit] of ΔNLL (policy p, size index s) and of each quantity (β from
// head_link.csv: the fit is compare's, tested elsewhere).
struct PlainMeans {
    std::vector<double> loss;
    std::map<std::string, std::vector<double>> value;
};
PlainMeans plain_means(const LinkFixture& f, int p, int s, const std::vector<double>& w,
                       const std::vector<double>& beta) {
    PlainMeans m;
    const double total = std::accumulate(w.begin(), w.end(), 0.0);
    for (int u = 0; u < kLinkUnits; ++u) {
        double loss = 0, output = 0, P = 0, R = 0, F = 0, rho0 = 0, lambda = 0;
        for (int d = 0; d < kLinkDocs; ++d) {
            const double p_ = f.P[f.geo(d, u, s)], r_ = f.R[f.geo(d, u, s)];
            loss += w[d] * f.loss_at(p, u, s, d);
            output += w[d] * (1.1 * f.loss_at(p, u, s, d) + 0.001 * d);
            P += w[d] * p_;
            R += w[d] * r_;
            F += w[d] * 2 * p_ * r_ / (p_ + r_);
            rho0 += w[d] * f.rho0[d * kLinkUnits + u];
            lambda += w[d] * f.lambda[d * kLinkUnits + u];
        }
        m.loss.push_back(loss / total);
        m.value["precision"].push_back(P / total);
        m.value["recall"].push_back(R / total);
        m.value["f_score"].push_back(F / total);
        m.value["dropped_mass"].push_back(0.5 * loss / total);
        m.value["output_error"].push_back(output / total);
        m.value["lambda"].push_back(lambda / total);
        m.value["rho0"].push_back(rho0 / total);
        m.value["beta"].push_back(beta[u]);
    }
    return m;
}

// The N of 2 ≤ N < n of the largest head-mean F under weights `w` (ties: the smaller N).
int plain_largest_f(const LinkFixture& f, const std::vector<double>& w) {
    int at = -1;
    double best = -1;
    for (std::size_t s = 1; s < kLinkSizes.size() && kLinkSizes[s] < kLinkContext; ++s) {
        const auto v =
            plain_means(f, 0, static_cast<int>(s), w, std::vector<double>(kLinkUnits, 0.0))
                .value.at("f_score");
        const double mean = std::accumulate(v.begin(), v.end(), 0.0) / kLinkUnits;
        if (mean > best) {
            best = mean;
            at = kLinkSizes[s];
        }
    }
    return at;
}

double cell(const CsvTable& t, std::size_t r, const std::string& column) {
    return t.text(r, column).empty() ? kNaN : t.number(r, column);
}

// |a − b|, 0 when both are undefined, +inf when only one is.
double gap(double a, double b) {
    if (std::isnan(a) && std::isnan(b)) return 0;
    if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<double>::infinity();
    return std::abs(a - b);
}

}  // namespace

TEST(TruncationSummary, GeometryLinkRecomputesWithHeadLevelTestsAndTheHolmFamily) {
    const LinkFixture f = write_link_folder("link");
    summarise_truncation(f.dir.string());
    const CsvTable link = read_csv_table((f.dir / schema::file::geometry_link).string());
    const CsvTable heads = read_csv_table((f.dir / schema::file::head_link).string());
    std::vector<double> beta(kLinkUnits);
    for (std::size_t r = 0; r < heads.rows.size(); ++r)
        beta[heads.integer(r, "layer") * kLinkHeadsPerLayer + heads.integer(r, "head")] =
            heads.number(r, "beta");
    const std::vector<double> everyone(kLinkDocs, 1.0);
    ASSERT_EQ(link.rows.size(), kLinkPolicies.size() * kLinkSizes.size() * kLinkQuantities.size());
    double worst = 0;
    std::map<std::string, std::vector<std::size_t>> family;  // policy → its family's rows
    std::vector<double> half_95;  // every interval's half-width on Fisher's z: one value
    for (std::size_t r = 0; r < link.rows.size(); ++r) {
        const int p = link.text(r, "policy") == "attn" ? 0 : 1;
        const int N = static_cast<int>(link.integer(r, "N"));
        const int s = static_cast<int>(std::find(kLinkSizes.begin(), kLinkSizes.end(), N) -
                                       kLinkSizes.begin());
        const std::string q = link.text(r, "quantity");
        const PlainMeans m = plain_means(f, p, s, everyone, beta);
        const double rho = plain_spearman(m.loss, m.value.at(q));
        EXPECT_EQ(link.integer(r, "heads"), kLinkUnits);
        // 12 heads: the permutation null's p (checked against a plain permutation test in
        // FewHeadsUseThePermutationNullAndItsIntervalInvertsTheTest).
        const double p_value =
            std::isfinite(rho) ? compare::permutation_p_value(rho, kLinkUnits) : kNaN;
        worst = std::max(
            {worst, gap(cell(link, r, "spearman"), rho), gap(cell(link, r, "p_value"), p_value)});
        if (std::isfinite(rho) && std::abs(rho) < 1) {
            const double lo = link.number(r, "head_lo"), hi = link.number(r, "head_hi");
            half_95.push_back(std::atanh(hi) - std::atanh(rho));
            half_95.push_back(std::atanh(rho) - std::atanh(lo));
            EXPECT_EQ(lo > 0 || hi < 0, p_value <= 0.05) << q << " N = " << N;
        }
        const bool in = candidate(q, N, kLinkContext) && std::isfinite(p_value);
        EXPECT_EQ(link.integer(r, "family"), in ? 1 : 0) << q << " N = " << N;
        if (in) family[link.text(r, "policy")].push_back(r);
        if ((N == 1 || N == kLinkContext) &&
            (q == "precision" || q == "recall" || q == "f_score")) {
            EXPECT_EQ(link.text(r, "spearman"), "") << q << " is 1 for every head at N = " << N;
        }
        if (!in) {
            EXPECT_EQ(link.text(r, "p_holm"), "");
            EXPECT_EQ(link.text(r, "excludes_zero"), "");
        }
    }
    const nlohmann::json summary =
        nlohmann::json::parse(test_support::slurp(f.dir / schema::file::link_summary));
    ASSERT_EQ(summary.size(), 2u);
    for (const nlohmann::json& entry : summary) {
        const std::string policy = entry.at("policy").get<std::string>();
        const auto& rows = family[policy];
        const int m = static_cast<int>(rows.size());
        std::vector<double> p;
        for (std::size_t r : rows)
            p.push_back(link.number(r, "p_value"));
        std::sort(p.begin(), p.end());
        int excluding = 0;
        std::size_t strongest = rows.front();
        std::vector<double> half;  // the adjusted intervals' half-widths on Fisher's z
        for (std::size_t r : rows) {
            EXPECT_EQ(link.integer(r, "tests"), m);
            const double own = link.number(r, "p_value");
            double adjusted = 0;
            for (int j = 0; j < m && p[j] <= own; ++j)
                adjusted = std::max(adjusted, std::min(1.0, (m - j) * p[j]));
            const double rho = link.number(r, "spearman");
            worst = std::max(worst, gap(link.number(r, "p_holm"), adjusted));
            if (std::abs(rho) < 1) {
                half.push_back(std::atanh(link.number(r, "adj_hi")) - std::atanh(rho));
                half.push_back(std::atanh(rho) - std::atanh(link.number(r, "adj_lo")));
            }
            const bool excludes = own <= 0.05 / m;
            EXPECT_EQ(link.integer(r, "excludes_zero"), excludes ? 1 : 0);
            excluding += excludes;
            if (own < link.number(strongest, "p_value")) strongest = r;
        }
        EXPECT_EQ(entry.at("heads").get<int>(), kLinkUnits);
        EXPECT_EQ(entry.at("tests").get<int>(), m);
        EXPECT_EQ(entry.at("tests_excluding_zero").get<int>(), excluding);
        const nlohmann::json& top = entry.at("strongest");
        EXPECT_EQ(top.at("quantity").get<std::string>(), link.text(strongest, "quantity"));
        EXPECT_EQ(top.at("N").get<int>(), link.integer(strongest, "N"));
        worst = std::max({worst,
                          gap(top.at("spearman").get<double>(), link.number(strongest, "spearman")),
                          gap(top.at("p_holm").get<double>(), link.number(strongest, "p_holm")),
                          gap(top.at("adj_lo").get<double>(), link.number(strongest, "adj_lo")),
                          gap(top.at("adj_hi").get<double>(), link.number(strongest, "adj_hi"))});
        const auto [narrow, wide] = std::minmax_element(half.begin(), half.end());
        worst = std::max(worst, *wide - *narrow);
        EXPECT_GT(*narrow, *std::max_element(half_95.begin(), half_95.end()))
            << "the simultaneous intervals are wider than the 95 % ones";
        if (excluding > 0)
            EXPECT_EQ(entry.at("best_predictor").get<std::string>(),
                      top.at("quantity").get<std::string>());
        else
            EXPECT_TRUE(entry.at("best_predictor").is_null()) << policy;
        std::cout << policy << ": " << m << " tests, " << excluding << " exclude 0, strongest "
                  << top.dump() << ", best_predictor " << entry.at("best_predictor").dump() << "\n";
    }
    const auto [narrow, wide] = std::minmax_element(half_95.begin(), half_95.end());
    worst = std::max(worst, *wide - *narrow);
    std::cout << "largest difference from the plain recomputation (and between the Fisher-z "
                 "half-widths of one level): "
              << worst << "\n";
    EXPECT_LT(worst, 1e-9);
    // The fixture's design: a link planted on ρ0 under attn, none under random.
    EXPECT_EQ(summary[0].at("best_predictor"), "rho0");
    EXPECT_TRUE(summary[1].at("best_predictor").is_null());
    EXPECT_FALSE(summary[0].contains("mean_abs_spearman")) << "withdrawn: never a finding";
}

TEST(TruncationSummary, LargestFIsOverNAtLeastTwoWithABootstrapIntervalOfTheArgmax) {
    const LinkFixture f = write_link_folder("largest_f");
    summarise_truncation(f.dir.string());
    const nlohmann::json summary =
        nlohmann::json::parse(test_support::slurp(f.dir / schema::file::link_summary));
    const int point = plain_largest_f(f, std::vector<double>(kLinkDocs, 1.0));
    std::vector<int> sample;
    for (int r = 0; r < kLinkReplicates; ++r)
        sample.push_back(plain_largest_f(
            f, compare::resample_counts(compare::kTruncationBootstrapSeed, r, kLinkDocs)));
    std::sort(sample.begin(), sample.end());
    const int lo = sample[static_cast<std::size_t>(std::ceil(0.025 * kLinkReplicates)) - 1],
              hi = sample[static_cast<std::size_t>(std::ceil(0.975 * kLinkReplicates)) - 1];
    std::cout << "largest head-mean F over N >= 2 at N = " << point << " [" << lo << ", " << hi
              << "]\n";
    for (const nlohmann::json& entry : summary) {
        EXPECT_EQ(entry.at("N_largest_F").get<int>(), point);
        EXPECT_GE(point, 2) << "N = 1 is an identity (F = 1) and never the argmax";
        EXPECT_LT(point, kLinkContext) << "so is N = n, where every token is kept";
        EXPECT_EQ(entry.at("N_largest_F_lo").get<int>(), lo);
        EXPECT_EQ(entry.at("N_largest_F_hi").get<int>(), hi);
        const nlohmann::json knee = entry.at("N_knee");
        const nlohmann::json before = entry.at("largest_F_before_knee");
        if (knee.is_null()) {
            EXPECT_TRUE(before.is_null());
        } else if (hi < knee.get<int>()) {
            EXPECT_EQ(before, true);
        } else if (lo >= knee.get<int>()) {
            EXPECT_EQ(before, false);
        } else {
            EXPECT_TRUE(before.is_null()) << "the interval reaches across the knee";
        }
    }
}

// claims.csv's C6 rows, one per (policy, renorm), recounted from link_summary.json: yes with a
// best predictor, no when the strongest adjusted interval lies within ±0.3, else can't tell.
TEST(TruncationSummary, ClaimSixIsAnsweredFromTheHolmFamily) {
    const LinkFixture f = write_link_folder("claims");
    summarise_truncation(f.dir.string());
    const nlohmann::json summary =
        nlohmann::json::parse(test_support::slurp(f.dir / schema::file::link_summary));
    const CsvTable claims = read_csv_table((f.dir / schema::file::claims).string());
    ASSERT_EQ(claims.rows.size(), summary.size());
    int yes = 0;
    for (std::size_t r = 0; r < claims.rows.size(); ++r) {
        const nlohmann::json& entry = summary[r];
        EXPECT_EQ(claims.text(r, "claim"), "C6");
        EXPECT_EQ(claims.text(r, "variant"), entry.at("policy").get<std::string>() + " renorm " +
                                                 entry.at("renorm").get<std::string>());
        const nlohmann::json& strongest = entry.at("strongest");
        std::string answer = "can't tell";
        if (!entry.at("best_predictor").is_null())
            answer = "yes";
        else if (!strongest.is_null() && strongest.at("adj_lo").get<double>() > -0.3 &&
                 strongest.at("adj_hi").get<double>() < 0.3)
            answer = "no";
        EXPECT_EQ(claims.text(r, "answer"), answer) << claims.text(r, "variant");
        yes += answer == "yes";
        if (!strongest.is_null()) {
            EXPECT_EQ(claims.number(r, "value"), strongest.at("spearman").get<double>());
            EXPECT_EQ(claims.number(r, "ci_lo"), strongest.at("adj_lo").get<double>());
        }
    }
    EXPECT_EQ(yes, 1);  // the link planted under attn, none under random
}

TEST(TruncationSummary, ScopeHeadCsvsHaveTheDocumentedTypes) {
    const fs::path source = fs::path(ATTNGEO_SOURCE_DIR);
    const std::string python = fs::exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
    if (std::system((python + " -c '' 2>/dev/null").c_str()) != 0) GTEST_SKIP() << "no python3";
    const LinkFixture f = write_link_folder("dtypes");
    summarise_truncation(f.dir.string());
    const std::string check =
        python + " " + (source / "tests/python/check_csv_dtypes.py").string() + " " +
        (source / "docs/commands/truncate.md").string() + " " + f.dir.string() + " 2>&1";
    FILE* pipe = popen(check.c_str(), "r");
    ASSERT_NE(pipe, nullptr);
    std::string log;
    char buffer[4096];
    while (std::size_t got = fread(buffer, 1, sizeof buffer, pipe))
        log.append(buffer, got);
    const int status = pclose(pipe);
    std::cout << log;
    EXPECT_EQ(status, 0) << log;
    EXPECT_NE(log.find("geometry_link.csv"), std::string::npos);
}
