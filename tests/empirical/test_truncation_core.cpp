// The torch-free half of truncation (empirical/truncate/truncation.hpp): the plain keep sets of every
// policy on small rows, the seeded random subset, the flags and the next-token measures against
// direct float64 computations.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>
#include <stdexcept>
#include <vector>

#include "common/errors.hpp"
#include "empirical/truncate/truncation.hpp"

using namespace attngeo;
using namespace attngeo::empirical;

TEST(TruncationKeepSet, AttnKeepsTheLargestWeightsTiesToTheLowerIndex) {
    const std::vector<float> alpha = {0.1f, 0.3f, 0.1f, 0.3f, 0.2f};
    const std::vector<float> norms(5, 1.0f);
    EXPECT_EQ(keep_set_reference(TruncationPolicy::attn, alpha.data(), norms.data(), 4, 1, {}),
              std::vector<int>({1}));
    EXPECT_EQ(keep_set_reference(TruncationPolicy::attn, alpha.data(), norms.data(), 4, 3, {}),
              std::vector<int>({1, 3, 4}));
    EXPECT_EQ(keep_set_reference(TruncationPolicy::attn, alpha.data(), norms.data(), 4, 4, {}),
              std::vector<int>({0, 1, 3, 4}));  // 0.1 at 0 and 2: the lower index
    // A row with at most N keys keeps them all.
    EXPECT_EQ(keep_set_reference(TruncationPolicy::attn, alpha.data(), norms.data(), 2, 3, {}),
              std::vector<int>({0, 1, 2}));
}

TEST(TruncationKeepSet, ContribRanksWeightTimesNorm) {
    const std::vector<float> alpha = {0.5f, 0.25f, 0.25f};
    const std::vector<float> norms = {0.1f, 1.0f, 3.0f};
    EXPECT_EQ(keep_set_reference(TruncationPolicy::contrib, alpha.data(), norms.data(), 2, 1, {}),
              std::vector<int>({2}));
    EXPECT_EQ(keep_set_reference(TruncationPolicy::contrib, alpha.data(), norms.data(), 2, 2, {}),
              std::vector<int>({1, 2}));
}

TEST(TruncationKeepSet, WindowKeepsTheSinkAndTheMostRecent) {
    const std::vector<float> alpha(10, 0.1f);
    EXPECT_EQ(keep_set_reference(TruncationPolicy::window, alpha.data(), alpha.data(), 9, 1, {}),
              std::vector<int>({0}));
    EXPECT_EQ(keep_set_reference(TruncationPolicy::window, alpha.data(), alpha.data(), 9, 4, {}),
              std::vector<int>({0, 7, 8, 9}));
    EXPECT_EQ(keep_set_reference(TruncationPolicy::window, alpha.data(), alpha.data(), 4, 4, {}),
              std::vector<int>({0, 2, 3, 4}));
}

TEST(TruncationKeepSet, RecentKeepsTheMostRecentWithoutTheSink) {
    const std::vector<float> alpha(10, 0.1f);
    EXPECT_EQ(keep_set_reference(TruncationPolicy::recent, alpha.data(), alpha.data(), 9, 1, {}),
              std::vector<int>({9}));
    EXPECT_EQ(keep_set_reference(TruncationPolicy::recent, alpha.data(), alpha.data(), 9, 4, {}),
              std::vector<int>({6, 7, 8, 9}));
    // A row with no more than N keys keeps them all, the sink included.
    EXPECT_EQ(keep_set_reference(TruncationPolicy::recent, alpha.data(), alpha.data(), 3, 4, {}),
              std::vector<int>({0, 1, 2, 3}));
}

TEST(TruncationKeepSet, RandomIsSeededDistinctAndUniform) {
    RandomRowKey key{7, 3, 1, 2};
    const auto once = random_keep_set(key, 40, 5);
    EXPECT_EQ(once, random_keep_set(key, 40, 5));
    EXPECT_EQ(once.size(), 5u);
    EXPECT_EQ(std::set<int>(once.begin(), once.end()).size(), 5u);
    EXPECT_TRUE(std::is_sorted(once.begin(), once.end()));
    for (int k : once)
        EXPECT_TRUE(k >= 0 && k <= 40);
    RandomRowKey other = key;
    other.head = 3;
    EXPECT_NE(once, random_keep_set(other, 40, 5));
    EXPECT_NE(once, random_keep_set(key, 41, 5));
    // Each key of 0..9 drawn with probability 3/10: counts over 4000 rows within 5 sigma.
    std::map<int, int> counts;
    const int rows = 4000;
    for (int w = 0; w < rows; ++w) {
        key.window = w;
        for (int k : random_keep_set(key, 9, 3))
            ++counts[k];
    }
    const double expected = rows * 0.3, sigma = std::sqrt(rows * 0.3 * 0.7);
    double worst = 0;
    for (int k = 0; k < 10; ++k)
        worst = std::max(worst, std::abs(counts[k] - expected) / sigma);
    std::cout << "largest deviation of a key's count: " << worst << " sigma\n";
    EXPECT_LT(worst, 5.0);
}

TEST(TruncationKeepSet, BadArgumentsThrow) {
    const float alpha[2] = {0.5f, 0.5f};
    EXPECT_THROW(keep_set_reference(TruncationPolicy::attn, alpha, alpha, -1, 1, {}),
                 std::domain_error);
    EXPECT_THROW(keep_set_reference(TruncationPolicy::attn, alpha, alpha, 1, 0, {}),
                 std::domain_error);
}

TEST(TruncationFlags, ParseAndNameTheFlag) {
    const auto policies = parse_truncation_policies("window,attn");
    ASSERT_EQ(policies.size(), 2u);
    EXPECT_EQ(policies[0], TruncationPolicy::window);
    for (TruncationPolicy p : truncation_policies())
        EXPECT_EQ(parse_truncation_policies(to_string(p)).at(0), p);
    EXPECT_EQ(truncation_policies().size(), 5u);
    EXPECT_THROW(parse_truncation_policies("attn,bogus"), InputError);
    EXPECT_THROW(parse_truncation_policies("attn,attn"), InputError);
    EXPECT_THROW(parse_truncation_policies(""), InputError);
    EXPECT_EQ(parse_renorm("both"), std::vector<bool>({false, true}));
    EXPECT_THROW(parse_renorm("maybe"), InputError);
    EXPECT_EQ(parse_truncation_scope("head"), TruncationScope::head);
    EXPECT_THROW(parse_truncation_scope("heads"), InputError);
    EXPECT_EQ(parse_eval_positions("all", 96).first(96), 0);
    EXPECT_EQ(parse_eval_positions("last:10", 96).first(96), 85);
    EXPECT_EQ(parse_eval_positions("last:95", 96).first(96), 0);
    for (const char* bad : {"last:0", "last:96", "last:", "last:x", "first:3", "last:-1"}) {
        try {
            parse_eval_positions(bad, 96);
            ADD_FAILURE() << bad << " was accepted";
        } catch (const InputError& e) {
            EXPECT_NE(std::string(e.what()).find("--eval-positions"), std::string::npos);
        }
    }
}

TEST(NextTokenMeasures, EqualADirectFloat64Computation) {
    const std::vector<float> full_logits = {1.0f, 2.0f, 0.5f, -1.0f};
    const std::vector<float> cut_logits = {1.5f, 1.0f, 0.5f, 0.0f};
    std::vector<double> full, cut;
    log_softmax_row(full_logits.data(), 4, full);
    log_softmax_row(cut_logits.data(), 4, cut);
    auto direct = [](const std::vector<float>& z, int i) {
        double total = 0;
        for (float x : z)
            total += std::exp(static_cast<double>(x));
        return static_cast<double>(z[i]) - std::log(total);
    };
    double kl = 0, worst = 0;
    for (int i = 0; i < 4; ++i) {
        worst = std::max({worst, std::abs(full[i] - direct(full_logits, i)),
                          std::abs(cut[i] - direct(cut_logits, i))});
        kl += std::exp(direct(full_logits, i)) * (direct(full_logits, i) - direct(cut_logits, i));
    }
    const auto compared = compare_next_token(full, cut, 2);
    std::cout << "largest log-probability difference: " << worst << "\n";
    EXPECT_LT(worst, 1e-15);
    EXPECT_NEAR(compared.delta_nll, direct(full_logits, 2) - direct(cut_logits, 2), 1e-15);
    EXPECT_NEAR(compared.kl, kl, 1e-15);
    EXPECT_FALSE(compared.top1_agrees);  // argmax 1 against 0
    EXPECT_TRUE(compare_next_token(full, full, 0).top1_agrees);
    EXPECT_EQ(compare_next_token(full, full, 0).kl, 0.0);
}
