// Head-level tests of truncate's geometry link (docs/design.md §12, docs/commands/truncate.md):
// each Spearman correlation across heads gets a p-value and interval with heads as the sample,
// and the family of geometric tests of one (policy, renorm) is Holm-adjusted, with Bonferroni
// simultaneous intervals, so that "a quantity predicts the loss" is a controlled claim.
#pragma once
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace attngeo::compare {

// Fewer heads than this give no head-level test (as the claims' C2 rule: too few to tell).
constexpr int kLinkMinimumHeads = 10;

// Below this many heads the normal approximation of Fisher's z with the Fieller–Hartley–
// Pearson error is anti-conservative in the far tail a Bonferroni family needs (measured under
// independence: P(p < 0.05/39) about 2.2 times nominal at 10 heads, 1.5 times at 16, 1.05 at
// 40, below nominal from 50), so p-values and critical values come from the permutation null
// of Spearman's ρ instead (tests/compare/test_truncation_summary.cpp checks both regimes).
constexpr int kLinkExactNullBelow = 50;

// Permutations drawn for the null distribution of Spearman's ρ at one number of heads, and
// their seed (SplitMix64; the same table on every platform and thread count).
constexpr int kSpearmanNullDraws = 1 << 20;
constexpr std::uint64_t kSpearmanNullSeed = 0x5ea2a5eedULL;

// The family-wise error rate the adjusted decisions control.
constexpr double kLinkFamilyAlpha = 0.05;

struct HeadLevelTest {
    double p = std::numeric_limits<double>::quiet_NaN();   // two-sided, H0: no association
    double lo = std::numeric_limits<double>::quiet_NaN();  // interval for ρ at the level asked
    double hi = std::numeric_limits<double>::quiet_NaN();
};

// The Fieller, Hartley & Pearson (1957) standard error of atanh(Spearman's ρ) over `heads`
// pairs: sqrt(1.06 / (heads − 3)).
double fhp_standard_error(int heads);

// The normal-theory p-value 2(1 − Φ(|atanh ρ| / fhp_standard_error(heads))); 0 at |ρ| = 1.
double fhp_p_value(double rho, int heads);

// The permutation null of Spearman's ρ at `heads` pairs without ties: P(|ρ*| ≥ |ρ|) over
// kSpearmanNullDraws uniform random permutations (seeded; computed once per `heads` and kept),
// as (1 + count) / (draws + 1), a valid permutation p-value.
double permutation_p_value(double rho, int heads);

// Spearman's ρ of `heads` pairs tested with heads as the sample, on Fisher's z = atanh ρ: the
// interval is tanh(z ± h) and the p-value its inversion at 0 (the interval excludes 0 exactly
// when p ≤ 1 − level). From kLinkExactNullBelow heads on, h = Φ⁻¹(1 − (1 − level)/2) ·
// fhp_standard_error and p = fhp_p_value; below it, h = atanh(c) with c the critical |ρ| of the
// permutation null at tail 1 − level and p = permutation_p_value. |ρ| = 1 gives the interval
// [ρ, ρ] when p ≤ 1 − level. All NaN when ρ is not finite or heads < kLinkMinimumHeads.
// Throws std::domain_error for ρ outside [−1, 1] or level outside (0, 1).
HeadLevelTest spearman_head_test(double rho, int heads, double level = 0.95);

// One Spearman test of the link: a quantity at one N across the heads of one (policy, renorm).
struct LinkTest {
    // Given.
    std::string quantity;
    int N = 0;
    double spearman = std::numeric_limits<double>::quiet_NaN();
    int heads = 0;
    bool candidate = false;  // a geometric quantity that is not an identity at this N
    // Filled by test_link_family.
    HeadLevelTest head;   // 95 %, this test alone
    bool family = false;  // candidate with a defined p-value: enters the Holm family
    double p_holm = std::numeric_limits<double>::quiet_NaN();  // Holm-adjusted p (family only)
    double adj_lo = std::numeric_limits<double>::quiet_NaN();  // interval at 1 − α/m (family)
    double adj_hi = std::numeric_limits<double>::quiet_NaN();
    bool excludes_zero = false;  // the adjusted interval excludes 0 (family only)
};

// Fills every test's head-level p-value and 95 % interval, then over the family (the candidates
// whose p is defined; m of them) Holm's step-down adjusted p-values (Holm 1979: the j-th
// smallest p times m − j + 1, made monotone, capped at 1) and Bonferroni intervals at level
// 1 − kLinkFamilyAlpha / m. An adjusted interval excludes 0 exactly when p ≤ α/m, Holm's first
// step: the family-wise error of "some interval excludes 0" is ≤ α when no quantity is linked.
// Returns m.
int test_link_family(std::vector<LinkTest>& tests);

// The index of the family test of smallest Holm p (ties: the smaller unadjusted p, then the
// largest |ρ|, then the first); −1 when the family is empty. Its adjusted interval excludes 0
// exactly when any family test's does.
int strongest_link(const std::vector<LinkTest>& tests);

}  // namespace attngeo::compare
