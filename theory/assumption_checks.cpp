// The assumption checks and their summary; see assumption_checks.hpp.
#include "theory/assumption_checks.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "common/errors.hpp"
#include "common/format.hpp"

namespace attngeo::theory {

DecayBaselines decay_baselines(const std::vector<double>& cosines,
                               const std::vector<double>& model) {
    const char* fn = "attngeo::theory::decay_baselines";
    if (cosines.empty() || cosines.size() != model.size())
        throw_domain_error(fn, std::to_string(cosines.size()) + " cosines and " +
                                   std::to_string(model.size()) +
                                   " model values, expected as many and at least one");
    for (std::size_t k = 0; k < cosines.size(); ++k)
        if (!std::isfinite(cosines[k]) || !std::isfinite(model[k]))
            throw_domain_error(
                fn, "lag " + std::to_string(k + 1) + ": c = " + format_double(cosines[k]) +
                        ", model = " + format_double(model[k]) + ", expected finite values");
    std::vector<double> sorted = cosines;
    std::sort(sorted.begin(), sorted.end());
    const std::size_t K = sorted.size();
    // Any point between the two middle values minimises Σ|c − m|; the midpoint is one.
    const double median = K % 2 ? sorted[K / 2] : 0.5 * (sorted[K / 2 - 1] + sorted[K / 2]);
    DecayBaselines b;
    int negative = 0;
    for (std::size_t k = 0; k < K; ++k) {
        b.mae_model += std::abs(cosines[k] - model[k]);
        b.mae_constant += std::abs(cosines[k] - median);
        b.mae_zero += std::abs(cosines[k]);
        negative += cosines[k] < 0;
    }
    b.mae_model /= K;
    b.mae_constant /= K;
    b.mae_zero /= K;
    b.negative_share = static_cast<double>(negative) / K;
    const double best_baseline = std::min(b.mae_constant, b.mae_zero);
    b.uninformative = !(best_baseline > 0 && b.mae_model <= (1 - kMinDecayGain) * best_baseline);
    return b;
}

AssumptionCheck check_assumptions(const AssumptionInputs& in) {
    AssumptionCheck c;
    c.inputs = in;
    c.compressed_sink = in.lambda > 0 && in.lambda < 1;
    c.stable_norms = in.cv <= kMaxNormCv;
    c.a1 = c.compressed_sink && c.stable_norms;
    c.beta_uninformative = !in.has_decay || in.decay.uninformative;
    c.a2 = !c.beta_uninformative;
    c.sink_exists = in.has_profile && in.p_sink > in.p_base;
    c.profile_r2_ok = in.has_profile && in.r2_log >= kMinProfileR2;
    c.a3 = c.sink_exists && c.profile_r2_ok && in.has_profile && in.profile_identified;
    return c;
}

nlohmann::json assumptions_summary(const std::vector<AssumptionCheck>& checks) {
    auto count = [&](bool AssumptionCheck::*flag) {
        return std::count_if(checks.begin(), checks.end(),
                             [&](const AssumptionCheck& c) { return c.*flag; });
    };
    std::int64_t identified = 0;
    std::vector<double> masses;
    for (const AssumptionCheck& c : checks) {
        identified += c.inputs.has_profile && c.inputs.profile_identified;
        masses.push_back(c.inputs.sink_mass);
    }
    nlohmann::json median = nullptr;
    if (!masses.empty()) {
        std::sort(masses.begin(), masses.end());
        const std::size_t n = masses.size();
        median = n % 2 ? masses[n / 2] : 0.5 * (masses[n / 2 - 1] + masses[n / 2]);
    }
    return {{"heads", checks.size()},
            {"A1_holds", count(&AssumptionCheck::a1)},
            {"compressed_sink", count(&AssumptionCheck::compressed_sink)},
            {"stable_norms", count(&AssumptionCheck::stable_norms)},
            {"A2_holds", count(&AssumptionCheck::a2)},
            {"beta_uninformative", count(&AssumptionCheck::beta_uninformative)},
            {"A3_holds", count(&AssumptionCheck::a3)},
            {"sink_exists", count(&AssumptionCheck::sink_exists)},
            {"profile_r2_ok", count(&AssumptionCheck::profile_r2_ok)},
            {"profile_identified", identified},
            {"median_sink_mass", median}};
}

}  // namespace attngeo::theory
