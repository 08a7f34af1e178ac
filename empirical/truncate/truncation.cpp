// The truncation policies as plain per-row references, the random keep set, the evaluation
// positions and the next-token measures; see truncation.hpp.
#include "empirical/truncate/truncation.hpp"

#include <Random123/philox.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

#include "common/errors.hpp"
#include "common/flag_choice.hpp"

namespace attngeo::empirical {
namespace {

// 32-bit words of the Philox blocks {0, 1, 2, …} of one row's counter, in order.
class RowWords {
  public:
    explicit RowWords(const RandomRowKey& key, int t)
        : key_{{static_cast<std::uint32_t>(key.seed), static_cast<std::uint32_t>(key.seed >> 32)}},
          counter_{
              {0, static_cast<std::uint32_t>(key.window),
               static_cast<std::uint32_t>(key.layer) << 16 | static_cast<std::uint32_t>(key.head),
               static_cast<std::uint32_t>(t)}} {}
    std::uint32_t next() {
        if (used_ == 4) {
            block_ = r123::Philox4x32()(counter_, key_);
            ++counter_[0];
            used_ = 0;
        }
        return block_[used_++];
    }
    // Uniform on {0, …, bound − 1}: words masked to the next power of two above bound − 1,
    // rejecting those ≥ bound.
    std::uint32_t below(std::uint32_t bound) {
        std::uint32_t mask = bound - 1;
        for (int shift = 1; shift < 32; shift <<= 1)
            mask |= mask >> shift;
        for (;;) {
            const std::uint32_t word = next() & mask;
            if (word < bound) return word;
        }
    }

  private:
    r123::Philox4x32::key_type key_;
    r123::Philox4x32::ctr_type counter_;
    r123::Philox4x32::ctr_type block_{};
    int used_ = 4;
};

std::vector<int> every_key(int t) {
    std::vector<int> keys(static_cast<std::size_t>(t) + 1);
    std::iota(keys.begin(), keys.end(), 0);
    return keys;
}

// The N best keys of 0..t by descending `score`, ties to the lower index, ascending.
std::vector<int> top_keys(const std::vector<double>& score, int N) {
    std::vector<int> keys = every_key(static_cast<int>(score.size()) - 1);
    std::stable_sort(keys.begin(), keys.end(), [&](int a, int b) { return score[a] > score[b]; });
    keys.resize(static_cast<std::size_t>(N));
    std::sort(keys.begin(), keys.end());
    return keys;
}

}  // namespace

const char* to_string(TruncationPolicy policy) {
    switch (policy) {
        case TruncationPolicy::attn:
            return "attn";
        case TruncationPolicy::contrib:
            return "contrib";
        case TruncationPolicy::random:
            return "random";
        case TruncationPolicy::window:
            return "window";
        case TruncationPolicy::recent:
            return "recent";
    }
    return "?";
}

const std::vector<TruncationPolicy>& truncation_policies() {
    static const std::vector<TruncationPolicy> all{
        TruncationPolicy::attn, TruncationPolicy::contrib, TruncationPolicy::random,
        TruncationPolicy::window, TruncationPolicy::recent};
    return all;
}

std::vector<TruncationPolicy> parse_truncation_policies(const std::string& list) {
    const std::vector<TruncationPolicy>& all = truncation_policies();
    std::string names;
    for (TruncationPolicy p : all)
        names += (names.empty() ? "" : ", ") + std::string(to_string(p));
    std::vector<TruncationPolicy> policies;
    std::size_t start = 0;
    while (start <= list.size()) {
        const std::size_t comma = std::min(list.find(',', start), list.size());
        const std::string name = list.substr(start, comma - start);
        const auto found = std::find_if(all.begin(), all.end(),
                                        [&](TruncationPolicy p) { return name == to_string(p); });
        if (found == all.end())
            throw InputError("--policy '" + list + "': unknown policy '" + name +
                             "', expected a list of " + names);
        if (std::find(policies.begin(), policies.end(), *found) != policies.end())
            throw InputError("--policy '" + list + "': '" + name + "' given twice");
        policies.push_back(*found);
        start = comma + 1;
    }
    return policies;
}

namespace {
const FlagChoice<TruncationScope> kScopes[] = {{"all", TruncationScope::all},
                                               {"layer", TruncationScope::layer},
                                               {"head", TruncationScope::head}};
}  // namespace

const char* to_string(TruncationScope scope) {
    return choice_name(scope, kScopes);
}

TruncationScope parse_truncation_scope(const std::string& text) {
    return parse_choice(text, "--scope", kScopes);
}

std::vector<bool> parse_renorm(const std::string& text) {
    if (text == "no") return {false};
    if (text == "yes") return {true};
    if (text == "both") return {false, true};
    throw InputError("--renorm '" + text + "': expected no, yes or both");
}

std::vector<int> random_keep_set(const RandomRowKey& key, int t, int N) {
    if (t + 1 <= N) return every_key(t);
    std::vector<int> keys = every_key(t);
    RowWords words(key, t);
    for (int i = 0; i < N; ++i) {
        const auto j = i + static_cast<int>(words.below(static_cast<std::uint32_t>(t + 1 - i)));
        std::swap(keys[i], keys[j]);
    }
    keys.resize(static_cast<std::size_t>(N));
    std::sort(keys.begin(), keys.end());
    return keys;
}

std::vector<int> keep_set_reference(TruncationPolicy policy, const float* alpha,
                                    const float* value_norms, int t, int N,
                                    const RandomRowKey& key) {
    if (t < 0 || N < 1) throw std::domain_error("keep_set_reference: requires t >= 0 and N >= 1");
    if (t + 1 <= N) return every_key(t);
    std::vector<double> score(static_cast<std::size_t>(t) + 1);
    switch (policy) {
        case TruncationPolicy::attn:
            for (int i = 0; i <= t; ++i)
                score[i] = alpha[i];
            return top_keys(score, N);
        case TruncationPolicy::contrib:
            // The product in float32, as the batched path forms it, so equal scores tie alike.
            for (int i = 0; i <= t; ++i)
                score[i] = static_cast<float>(alpha[i] * value_norms[i]);
            return top_keys(score, N);
        case TruncationPolicy::random:
            return random_keep_set(key, t, N);
        case TruncationPolicy::window: {
            std::vector<int> keys{0};
            for (int i = t - (N - 1) + 1; i <= t; ++i)
                keys.push_back(i);
            return keys;
        }
        case TruncationPolicy::recent: {
            std::vector<int> keys;
            for (int i = t - N + 1; i <= t; ++i)
                keys.push_back(i);
            return keys;
        }
    }
    return {};
}

std::string EvalPositions::text() const {
    return last == 0 ? "all" : "last:" + std::to_string(last);
}

EvalPositions parse_eval_positions(const std::string& text, int context) {
    if (text == "all") return {};
    const std::string expected =
        "', expected all or last:K with 1 <= K <= " + std::to_string(context - 1) +
        " (context - 1)";
    if (text.rfind("last:", 0) != 0) throw InputError("--eval-positions '" + text + expected);
    const std::string digits = text.substr(5);
    const bool whole =
        !digits.empty() && digits.size() <= 9 &&
        std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; });
    const int K = whole ? std::stoi(digits) : 0;
    if (K < 1 || K > context - 1) throw InputError("--eval-positions '" + text + expected);
    return EvalPositions{K};
}

void log_softmax_row(const float* logits, int vocab, std::vector<double>& out) {
    out.assign(logits, logits + vocab);
    const double top = *std::max_element(out.begin(), out.end());
    double total = 0;
    for (double x : out)
        total += std::exp(x - top);
    const double shift = top + std::log(total);
    for (double& x : out)
        x -= shift;
}

NextTokenComparison compare_next_token(const std::vector<double>& full,
                                       const std::vector<double>& truncated, std::int64_t target) {
    NextTokenComparison c;
    c.delta_nll = full[target] - truncated[target];
    for (std::size_t i = 0; i < full.size(); ++i) {
        const double p = std::exp(full[i]);
        if (p > 0) c.kl += p * (full[i] - truncated[i]);
    }
    const auto argmax = [](const std::vector<double>& row) {
        return std::max_element(row.begin(), row.end()) - row.begin();  // first of equals
    };
    c.top1_agrees = argmax(full) == argmax(truncated);
    return c;
}

}  // namespace attngeo::empirical
