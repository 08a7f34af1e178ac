// Head-level tests of Spearman's ρ (Fisher's z with the Fieller–Hartley–Pearson error, or the
// permutation null for few heads) and the Holm/Bonferroni family of truncate's geometry link;
// see link_tests.hpp.
#include "compare/link_tests.hpp"

#include <algorithm>
#include <boost/math/distributions/normal.hpp>
#include <cmath>
#include <map>
#include <mutex>
#include <numeric>
#include <tuple>

#include "common/errors.hpp"
#include "common/splitmix64.hpp"

namespace attngeo::compare {
namespace {

// Two values of ρ this close are the same rank configuration: the data's ρ (Pearson of average
// ranks) and the null's (1 − 6Σd²/(n(n² − 1))) round differently.
constexpr double kSameRho = 1e-12;

// Φ⁻¹(1 − tail).
double normal_critical(double tail) {
    return boost::math::quantile(boost::math::complement(boost::math::normal(), tail));
}

// |ρ*| of kSpearmanNullDraws uniform permutations of `heads` ranks, ascending; one table per
// number of heads, built on first use and kept (node addresses of a std::map are stable).
const std::vector<double>& spearman_null(int heads) {
    static std::mutex mutex;
    static std::map<int, std::vector<double>> tables;
    const std::lock_guard<std::mutex> lock(mutex);
    const auto found = tables.find(heads);
    if (found != tables.end()) return found->second;
    SplitMix64 rng(SplitMix64(kSpearmanNullSeed + static_cast<std::uint64_t>(heads)).next());
    std::vector<int> order(static_cast<std::size_t>(heads));
    std::iota(order.begin(), order.end(), 0);
    const double scale = 6.0 / (heads * (static_cast<double>(heads) * heads - 1));
    std::vector<double> sample(kSpearmanNullDraws);
    for (double& rho : sample) {
        // Fisher–Yates from the previous permutation: uniform whatever it starts from.
        for (int i = heads - 1; i > 0; --i)
            std::swap(order[i], order[rng.below(static_cast<std::uint64_t>(i) + 1)]);
        std::int64_t squares = 0;
        for (int i = 0; i < heads; ++i)
            squares += static_cast<std::int64_t>(i - order[i]) * (i - order[i]);
        rho = std::abs(1 - scale * static_cast<double>(squares));
    }
    std::sort(sample.begin(), sample.end());
    return tables.emplace(heads, std::move(sample)).first->second;
}

// The permutation null's critical |ρ|: a test at tail `tail` excludes 0 when |ρ| exceeds it
// (p ≤ tail ⟺ at most ⌊tail·(draws + 1)⌋ − 1 draws reach |ρ|). 1 when no |ρ| can.
double permutation_critical(int heads, double tail) {
    const std::vector<double>& null = spearman_null(heads);
    const double allowed = std::floor(tail * (null.size() + 1.0)) - 1;
    if (allowed < 0) return 1;
    const auto k = static_cast<std::size_t>(std::min(allowed, null.size() - 1.0));
    return std::min(1.0, null[null.size() - 1 - k] + kSameRho);
}

// The Fisher-z half-width h of a two-sided interval with total tail `tail`.
double half_width(int heads, double tail) {
    if (heads < kLinkExactNullBelow) return std::atanh(permutation_critical(heads, tail));
    return normal_critical(tail / 2) * fhp_standard_error(heads);
}

// tanh(atanh ρ ± h); at |ρ| = 1, where atanh is infinite, [ρ, ρ] if the test rejects (h finite)
// and [−1, 1] otherwise.
void fisher_interval(double rho, double h, double& lo, double& hi) {
    if (std::abs(rho) == 1) {
        lo = std::isfinite(h) ? rho : -1;
        hi = std::isfinite(h) ? rho : 1;
        return;
    }
    const double z = std::atanh(rho);
    lo = std::tanh(z - h);
    hi = std::tanh(z + h);
}

}  // namespace

double fhp_standard_error(int heads) {
    return std::sqrt(1.06 / (heads - 3));
}

double fhp_p_value(double rho, int heads) {
    if (std::abs(rho) == 1) return 0;
    // 2(1 − Φ(|z|/se)) = erfc(|z| / (se·√2)), exact in the tail where 1 − Φ would cancel.
    return std::erfc(std::abs(std::atanh(rho)) / (fhp_standard_error(heads) * std::sqrt(2.0)));
}

double permutation_p_value(double rho, int heads) {
    const std::vector<double>& null = spearman_null(heads);
    const auto reach =
        null.end() - std::lower_bound(null.begin(), null.end(), std::abs(rho) - kSameRho);
    return (1.0 + static_cast<double>(reach)) / (null.size() + 1.0);
}

HeadLevelTest spearman_head_test(double rho, int heads, double level) {
    if (!(level > 0 && level < 1))
        throw_domain_error("attngeo::compare::spearman_head_test",
                           "level " + std::to_string(level) + ", expected a value in (0, 1)");
    HeadLevelTest test;
    if (!std::isfinite(rho) || heads < kLinkMinimumHeads) return test;
    if (rho < -1 || rho > 1)
        throw_domain_error("attngeo::compare::spearman_head_test",
                           "rho " + std::to_string(rho) + ", expected a correlation in [-1, 1]");
    test.p =
        heads < kLinkExactNullBelow ? permutation_p_value(rho, heads) : fhp_p_value(rho, heads);
    fisher_interval(rho, half_width(heads, 1 - level), test.lo, test.hi);
    return test;
}

int test_link_family(std::vector<LinkTest>& tests) {
    std::vector<std::size_t> family;
    for (std::size_t i = 0; i < tests.size(); ++i) {
        LinkTest& t = tests[i];
        t.head = spearman_head_test(t.spearman, t.heads);
        t.family = t.candidate && std::isfinite(t.head.p);
        t.p_holm = t.adj_lo = t.adj_hi = std::numeric_limits<double>::quiet_NaN();
        t.excludes_zero = false;
        if (t.family) family.push_back(i);
    }
    const int m = static_cast<int>(family.size());
    if (m == 0) return 0;
    // Holm (1979): the j-th smallest p (j from 0) times m − j, kept non-decreasing, capped at 1.
    std::stable_sort(family.begin(), family.end(), [&](std::size_t a, std::size_t b) {
        return tests[a].head.p < tests[b].head.p;
    });
    double running = 0;
    for (int j = 0; j < m; ++j) {
        LinkTest& t = tests[family[j]];
        running = std::max(running, std::min(1.0, (m - j) * t.head.p));
        t.p_holm = running;
    }
    // Bonferroni's simultaneous intervals: each at 1 − α/m, so all cover at once with
    // probability ≥ 1 − α; one excludes 0 exactly when p ≤ α/m, Holm's first step.
    for (std::size_t i : family) {
        LinkTest& t = tests[i];
        fisher_interval(t.spearman, half_width(t.heads, kLinkFamilyAlpha / m), t.adj_lo, t.adj_hi);
        t.excludes_zero = t.adj_lo > 0 || t.adj_hi < 0;
    }
    return m;
}

int strongest_link(const std::vector<LinkTest>& tests) {
    const auto key = [](const LinkTest& x) {
        return std::make_tuple(x.p_holm, x.head.p, -std::abs(x.spearman));
    };
    int best = -1;
    for (std::size_t i = 0; i < tests.size(); ++i)
        if (tests[i].family && (best < 0 || key(tests[i]) < key(tests[best])))
            best = static_cast<int>(i);
    return best;
}

}  // namespace attngeo::compare
