// The assumption checks of a simulated grid point; see realised_assumptions.hpp.
#include "simulate/realised_assumptions.hpp"

#include <algorithm>
#include <cmath>

#include "common/exact_sums.hpp"
#include "common/manifest_values.hpp"
#include "theory/parametric.hpp"

namespace attngeo::simulate {
namespace {

double median_after_sink(const Eigen::VectorXd& x) {
    std::vector<double> rest(x.data() + 1, x.data() + x.size());
    std::sort(rest.begin(), rest.end());
    const std::size_t n = rest.size();
    return n % 2 ? rest[n / 2] : 0.5 * (rest[n / 2 - 1] + rest[n / 2]);
}

double cv_after_sink(const Eigen::VectorXd& x) {
    const Eigen::VectorXd rest = x.tail(x.size() - 1);
    const double mean = rest.mean();
    const double var = (rest.array() - mean).square().mean();
    return mean > 0 ? std::sqrt(var) / mean : 0.0;
}

}  // namespace

theory::AssumptionCheck realised_assumption_check(const SimulationSums& sums,
                                                  const SimulationSpec& spec,
                                                  const theory::HeadModel& head) {
    const int n = static_cast<int>(head.alpha.size());
    theory::AssumptionInputs in;
    const double c = median_after_sink(head.norms);
    in.lambda = c > 0 ? head.norms[0] / c : std::nan("");
    const double noise = estimate(sums.realised.norm_ratio_cv).mean,
                 nominal = cv_after_sink(head.norms);
    in.cv = std::sqrt(nominal * nominal + noise * noise);
    const int lags = std::min(kRealisedLags, n - 2);
    std::vector<double> realised, expected;
    for (int k = 1; k <= lags; ++k) {
        realised.push_back(estimate(sums.realised.cos_by_lag[k - 1]).mean);
        double mean = 0;
        for (int i = 1; i + k < n; ++i)
            mean += head.cosine(i, i + k);
        expected.push_back(mean / (n - 1 - k));
    }
    in.has_decay = lags >= 1;
    if (in.has_decay) in.decay = theory::decay_baselines(realised, expected);
    in.has_profile = true;
    in.p_sink = head.alpha[0];
    in.sink_mass = head.alpha[0];
    const auto phases = theory::phase_parameters(spec.model);
    if (phases) {
        in.p_base = phases->p_base;
        in.r2_log = 1;  // the weights are the profile itself
        in.profile_identified = true;
    } else {
        in.p_base = median_after_sink(head.alpha);
        in.r2_log = std::nan("");
        in.profile_identified = false;
    }
    return theory::check_assumptions(in);
}

nlohmann::json realised_assumptions_json(const SimulationSums& sums, const SimulationSpec& spec,
                                         const theory::HeadModel& head) {
    const theory::AssumptionCheck check = realised_assumption_check(sums, spec, head);
    const theory::AssumptionInputs& in = check.inputs;
    nlohmann::json block = theory::assumptions_summary({check});
    block["values"] = {{"lambda", json_number(in.lambda)},
                       {"cv", json_number(in.cv)},
                       {"mae_model", json_number(in.decay.mae_model)},
                       {"mae_constant", json_number(in.decay.mae_constant)},
                       {"mae_zero", json_number(in.decay.mae_zero)},
                       {"negative_cos_share", json_number(in.decay.negative_share)},
                       {"p_sink", json_number(in.p_sink)},
                       {"p_base", json_number(in.p_base)}};
    return block;
}

}  // namespace attngeo::simulate
