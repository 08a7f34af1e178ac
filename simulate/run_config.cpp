// A run's configuration: its JSON form, the sweep grid and the validated setup of each grid
// point; see run.hpp.
#include "simulate/run.hpp"

#include <cmath>
#include <limits>
#include <string>

#include "common/errors.hpp"
#include "common/format.hpp"
#include "common/json_file.hpp"
#include "common/manifest_values.hpp"
#include "common/number_list.hpp"
#include "simulate/run_internal.hpp"

namespace attngeo::simulate {
namespace {

// A manifest number: JSON has no infinity, so json_number writes it as "inf" (or "-inf").
double number_from_json(const nlohmann::json& j) {
    if (!j.is_string()) return j.get<double>();
    const std::string text = j.get<std::string>();
    if (text == "inf") return std::numeric_limits<double>::infinity();
    if (text == "-inf") return -std::numeric_limits<double>::infinity();
    // A type error carries the value's JSON pointer (with_json_context names the file).
    throw nlohmann::json::type_error::create(
        302, "expected a number or \"inf\", found \"" + text + "\"", &j);
}

// The start of a message about an invalid value: the flag, or the manifest key it was read from.
std::string value_label(ConfigSource source, const std::string& flag, const std::string& key,
                        const std::string& value) {
    return source == ConfigSource::flags ? flag + ": " + value : key + " = " + value;
}

void apply_value(PointSetup& setup, theory::ModelParameters& params, const std::string& name,
                 double value, ConfigSource source) {
    auto integer = [&](const char* what) {
        if (value != std::floor(value) || std::abs(value) > 1e9) {
            throw InputError(
                value_label(source, "--set " + name, "sweep " + name, format_double(value)) +
                " is not an integer (" + what + ")");
        }
        return static_cast<int>(value);
    };
    if (name == "d")
        setup.d = value;
    else if (name == "kappa")
        setup.kappa = value;
    else if (name == "L")
        params.profile.L = integer("L");
    else if (name == "T1")
        params.profile.T1 = integer("T1");
    else if (name == "T2")
        params.profile.T2 = integer("T2");
    else if (name == "p_sink")
        params.profile.p_sink = value;
    else if (name == "eta")
        params.profile.eta = value;
    else if (name == "omega")
        params.profile.omega = value;
    else if (name == "C")
        params.C = value;
    else if (name == "lambda")
        params.lambda = value;
    else if (name == "beta")
        params.beta = value;
    else if (name == "rho0")
        params.rho0 = value;
    else if (name == "norm_cv")
        setup.spec.norm_cv = value;
    else if (name == "zipf_s")
        params.profile_kind.zipf_exponent = value;
    else
        throw InputError(value_label(source, "--set", "sweep", "unknown parameter '" + name + "'"));
}

}  // namespace

std::vector<int> point_sizes(const RunConfig& config, int n) {
    return parse_selection_sizes(config.sizes, n, "--N");
}

const std::vector<std::string>& sweepable_parameters() {
    static const std::vector<std::string> names = {"d",     "L",      "C",       "lambda", "beta",
                                                   "rho0",  "p_sink", "T1",      "T2",     "eta",
                                                   "omega", "kappa",  "norm_cv", "zipf_s"};
    return names;
}

nlohmann::json to_json(const RunConfig& c) {
    nlohmann::json sweep = nlohmann::json::array();
    for (const auto& [name, values] : c.sweep) {
        nlohmann::json list = nlohmann::json::array();
        for (double v : values)
            list.push_back(json_number(v));
        sweep.push_back({{"parameter", name}, {"values", list}});
    }
    return {{"kind", c.kind},
            {"model", theory::to_json(c.model)},
            {"d", json_number(c.d)},
            {"kappa", c.kappa ? json_number(*c.kappa) : nlohmann::json(nullptr)},
            {"trials", c.trials},
            {"seed", c.seed},
            {"N", c.sizes},
            {"rank", c.rank},
            {"distance", c.distance},
            {"sink_mode", c.sink_mode},
            {"norm_cv", c.norm_cv},
            {"sweep", sweep},
            {"shard", {{"index", c.shard.index}, {"count", c.shard.count}}}};
}

RunConfig run_config_from_json(const nlohmann::json& j) {
    RunConfig c;
    c.kind = j.at("kind").get<std::string>();
    c.model = theory::model_source_from_json(j.at("model"));
    c.d = number_from_json(j.at("d"));
    if (!j.at("kappa").is_null()) c.kappa = number_from_json(j.at("kappa"));
    c.trials = json_integer<std::int64_t>(j.at("trials"));
    c.seed = json_integer<std::uint64_t>(j.at("seed"));
    c.sizes = j.at("N").get<std::string>();
    c.rank = j.at("rank").get<std::string>();
    c.distance = j.at("distance").get<std::string>();
    c.sink_mode = j.at("sink_mode").get<std::string>();
    c.norm_cv = j.at("norm_cv").get<double>();
    for (const auto& s : j.at("sweep")) {
        std::vector<double> values;
        for (const auto& v : s.at("values"))
            values.push_back(number_from_json(v));
        c.sweep.emplace_back(s.at("parameter").get<std::string>(), values);
    }
    c.shard.index = json_integer<int>(j.at("shard").at("index"));
    c.shard.count = json_integer<int>(j.at("shard").at("count"));
    // shard_trials divides by the count, so a hand-edited manifest must not reach it with 0.
    check_shard(c.shard, "manifest shard " + std::to_string(c.shard.index) + "/" +
                             std::to_string(c.shard.count));
    return c;
}

std::vector<GridPoint> grid_points(const RunConfig& config) {
    std::vector<GridPoint> points(1);
    for (const auto& [name, values] : config.sweep) {
        std::vector<GridPoint> next;
        for (const GridPoint& p : points) {
            for (double v : values) {
                GridPoint q = p;
                q.values.emplace_back(name, v);
                next.push_back(q);
            }
        }
        points = std::move(next);
    }
    for (std::size_t i = 0; i < points.size(); ++i)
        points[i].index = static_cast<int>(i);
    return points;
}

PointSetup setup_point(const RunConfig& config, const GridPoint& point, ConfigSource source) {
    PointSetup setup;
    setup.d = config.d;
    setup.kappa = config.kappa;
    theory::ModelParameters params = theory::load_model(config.model);
    setup.spec.norm_cv = config.norm_cv;
    for (const auto& [name, value] : point.values)
        apply_value(setup, params, name, value, source);
    auto label = [&](const char* flag, const char* key, const std::string& value) {
        return value_label(source, flag, key, value);
    };
    if (!(setup.d >= 1))
        throw InputError(label("--d", "d", format_double(setup.d)) +
                         ", expected an integer >= 1 or inf");
    if (!std::isinf(setup.d) && (setup.d != std::floor(setup.d) || setup.d > 1e6)) {
        throw InputError(label("--d", "d", format_double(setup.d)) +
                         ", expected an integer >= 1 (at most 1e6) or inf");
    }
    if (setup.kappa && !(*setup.kappa > 0 && std::isfinite(*setup.kappa))) {
        throw InputError(label("--kappa", "kappa", format_double(*setup.kappa)) +
                         ", expected kappa > 0");
    }
    if (config.trials < 2 || config.trials > kMaxTrials) {
        throw InputError(label("--trials", "trials", std::to_string(config.trials)) +
                         ", expected 2 <= trials <= " + std::to_string(kMaxTrials));
    }
    if (!(setup.spec.norm_cv >= 0 && std::isfinite(setup.spec.norm_cv))) {
        throw InputError(label("--norm-cv", "norm_cv", format_double(setup.spec.norm_cv)) +
                         ", expected >= 0");
    }
    setup.spec.model = params;
    setup.spec.d_infinite = std::isinf(setup.d);
    setup.spec.d = setup.spec.d_infinite ? 0 : static_cast<int>(setup.d);
    setup.spec.trials = config.trials;
    setup.spec.seed = config.seed;
    setup.spec.grid_point = static_cast<std::uint32_t>(point.index);
    setup.spec.ranking = theory::parse_ranking(config.rank);
    setup.spec.distance = theory::parse_distance(config.distance);
    setup.spec.sink_mode = parse_sink_mode(config.sink_mode);
    setup.head = theory::build_head_model(params);
    const int n = static_cast<int>(setup.head.alpha.size());
    setup.spec.sizes =
        parse_selection_sizes(config.sizes, n, source == ConfigSource::flags ? "--N" : "N");
    setup.spec.all_sizes = static_cast<int>(setup.spec.sizes.size()) == n;
    if (!setup.spec.d_infinite)
        ValueGenerator check(generator_settings(setup.spec, setup.head));  // feasibility
    else if (!params.cosine && setup.spec.sink_mode == SinkMode::exact) {
        ValueGenerator check([&] {
            GeneratorSettings g = generator_settings(setup.spec, setup.head);
            g.d = 1;
            return g;
        }());
    }
    return setup;
}

std::int64_t shard_trial_count(const RunConfig& config) {
    const auto [first, last] = shard_trials(config.trials, config.shard);
    std::int64_t points = 0;
    for (const GridPoint& p : grid_points(config))
        points += !std::isinf(setup_point(config, p).d);
    return points * (last - first);
}

}  // namespace attngeo::simulate
