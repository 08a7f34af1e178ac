// The per-head assumption checks of compare; see assumptions.hpp.
#include "compare/assumptions.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "common/errors.hpp"
#include "common/format.hpp"
#include "common/run_columns.hpp"
#include "common/run_schema.hpp"

namespace attngeo::compare {
namespace {

std::string field(double x) {
    return std::isfinite(x) ? format_double(x) : std::string();
}

}  // namespace

bool profile_identified(const PointFits& point, const ParameterIntervals* intervals) {
    if (!point.has_profile || profile_clamps(point.profile).any()) return false;
    if (intervals == nullptr) return true;
    for (int p = kPSink; p <= kT2; ++p)
        if ((*intervals)[p].unidentified) return false;
    return true;
}

std::vector<theory::AssumptionCheck> check_heads(const EmpiricalRun& run,
                                                 const std::vector<PointFits>& points,
                                                 const std::vector<ParameterIntervals>& intervals) {
    if (points.size() != run.rows.size() ||
        (!intervals.empty() && intervals.size() != points.size()))
        throw_domain_error("attngeo::compare::check_heads",
                           std::to_string(points.size()) + " point fits and " +
                               std::to_string(intervals.size()) + " intervals for " +
                               std::to_string(run.rows.size()) + " heads");
    std::vector<theory::AssumptionCheck> checks;
    for (std::size_t i = 0; i < points.size(); ++i) {
        const EmpiricalHead& h = run.rows[i];
        const PointFits& point = points[i];
        theory::AssumptionInputs in;
        in.lambda = h.lambda;
        in.cv = h.cv_positional;
        const int K = point.decay.lags;
        in.has_decay = K >= 1;
        if (in.has_decay) {
            const std::vector<double> cos(h.cos_by_lag.begin(), h.cos_by_lag.begin() + K);
            std::vector<double> model(K);
            for (int k = 1; k <= K; ++k)
                model[k - 1] = std::exp(-point.decay.beta * k);
            in.decay = theory::decay_baselines(cos, model);
        }
        in.has_profile = point.has_profile;
        if (point.has_profile) {
            in.p_sink = point.profile.profile.p_sink;
            in.p_base = point.profile.p_base;
            in.r2_log = point.profile.r2_log;
        }
        in.profile_identified =
            profile_identified(point, intervals.empty() ? nullptr : &intervals[i]);
        in.sink_mass = h.sink_mass;
        checks.push_back(theory::check_assumptions(in));
    }
    return checks;
}

nlohmann::json strongest_sinks(const EmpiricalRun& run,
                               const std::vector<theory::AssumptionCheck>& checks, int top) {
    if (checks.size() != run.rows.size() || top < 0)
        throw_domain_error("attngeo::compare::strongest_sinks",
                           std::to_string(checks.size()) + " checks for " +
                               std::to_string(run.rows.size()) + " heads, top " +
                               std::to_string(top));
    std::vector<std::size_t> order;
    for (std::size_t i = 0; i < checks.size(); ++i)
        if (checks[i].sink_exists) order.push_back(i);
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
        return run.rows[a].sink_mass > run.rows[b].sink_mass;
    });
    nlohmann::json heads = nlohmann::json::array();
    for (std::size_t k = 0; k < order.size() && k < static_cast<std::size_t>(top); ++k) {
        const EmpiricalHead& h = run.rows[order[k]];
        heads.push_back({{"layer", h.layer}, {"head", h.head}, {"sink_mass", h.sink_mass}});
    }
    return heads;
}

std::string assumptions_csv(const EmpiricalRun& run, const std::vector<PointFits>& points,
                            const std::vector<theory::AssumptionCheck>& checks,
                            const std::vector<char>& counted) {
    std::ostringstream csv;
    csv << schema::csv_header(schema::page::compare, schema::file::assumptions) << '\n';
    for (std::size_t i = 0; i < checks.size(); ++i) {
        const EmpiricalHead& h = run.rows[i];
        const theory::AssumptionCheck& c = checks[i];
        const theory::AssumptionInputs& in = c.inputs;
        const double nan = std::nan("");
        csv << h.layer << ',' << h.head << ',' << h.kv_head << ',' << int(counted[i]) << ','
            << field(h.lambda) << ',' << field(h.cv_positional) << ',' << field(h.cv_pooled) << ','
            << int(c.compressed_sink) << ',' << int(c.stable_norms) << ',' << int(c.a1) << ','
            << field(points[i].decay.beta) << ',' << field(in.has_decay ? in.decay.mae_model : nan)
            << ',' << field(in.has_decay ? in.decay.mae_constant : nan) << ','
            << field(in.has_decay ? in.decay.mae_zero : nan) << ','
            << field(in.has_decay ? in.decay.negative_share : nan) << ','
            << int(c.beta_uninformative) << ',' << int(c.a2) << ','
            << field(in.has_profile ? in.p_sink : nan) << ','
            << field(in.has_profile ? in.p_base : nan) << ','
            << field(in.has_profile ? in.r2_log : nan) << ',' << field(in.sink_mass) << ','
            << int(c.sink_exists) << ',' << int(c.profile_r2_ok) << ','
            << int(in.has_profile && in.profile_identified) << ',' << int(c.a3) << '\n';
    }
    return csv.str();
}

}  // namespace attngeo::compare
