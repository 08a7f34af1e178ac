// A run's configuration: its JSON form, the sweep grid and the validated setup of each grid
// point; see run.hpp.
#include "simulate/run.hpp"

#include <cmath>
#include <limits>
#include <sstream>
#include <string>

#include "common/csv.hpp"
#include "common/errors.hpp"
#include "common/format.hpp"
#include "common/json_file.hpp"
#include "common/manifest_values.hpp"
#include "common/number_list.hpp"
#include "simulate/run_internal.hpp"
#include "theory/parameter_table.hpp"

namespace attngeo::simulate {
namespace {

// A configuration number as json_number writes it (JSON has no infinity: "inf", "-inf"); "nan"
// is refused, no setting is undefined. A type error carries the value's JSON pointer
// (with_json_context names the file).
double number_from_json(const nlohmann::json& j) {
    if (j.is_number() || j == "inf" || j == "-inf") return json_number_value(j);
    throw nlohmann::json::type_error::create(302, "expected a number or \"inf\", found " + j.dump(),
                                             &j);
}

// The start of a message about an invalid value: the flag, or the manifest key it was read from.
std::string value_label(ConfigSource source, const std::string& flag, const std::string& key,
                        const std::string& value) {
    return source == ConfigSource::flags ? flag + ": " + value : key + " = " + value;
}

// How a message names a parameter of this grid point: "--set beta=0" where the sweep set it,
// its flag ("--beta 0") otherwise, or its manifest key ("beta = 0") for merge and report.
theory::ParameterLabel point_label(ConfigSource source, const GridPoint& point) {
    return [source, &point](const theory::ParameterDescriptor& p, const std::string& value) {
        if (source == ConfigSource::manifest) return theory::key_label(p, value);
        for (const auto& [name, unused] : point.values)
            if (name == p.key) return "--set " + name + "=" + value;
        return theory::flag_label(p, value);
    };
}

// Where the table's parameters live for one grid point (kappa through `kappa`, copied back by
// the caller).
theory::ParameterFields point_fields(PointSetup& setup, theory::ModelParameters& params,
                                     double& kappa) {
    theory::ParameterFields f = theory::parameter_fields(params);
    f.d = &setup.d;
    f.kappa = &kappa;
    f.norm_cv = &setup.spec.norm_cv;
    return f;
}

// The grid point's swept values into the setup; integers are checked before they are cast.
void apply_values(PointSetup& setup, theory::ModelParameters& params, const GridPoint& point,
                  ConfigSource source, const theory::ParameterLabel& label) {
    double kappa = setup.kappa.value_or(0);
    const theory::ParameterFields fields = point_fields(setup, params, kappa);
    for (const auto& [name, value] : point.values) {
        const theory::ParameterDescriptor* p = theory::find_parameter(name);
        if (p == nullptr || !p->sweepable)
            throw InputError(
                value_label(source, "--set", "sweep", "unknown parameter '" + name + "'"));
        if (p->integer) theory::check_value(*p, value, label);
        theory::set_value(*p, fields, value);
        if (name == "kappa") setup.kappa = kappa;
    }
}

// --set's values: numbers, or inf.
std::vector<double> set_values(const std::string& set, const std::string& name) {
    std::vector<double> values;
    std::istringstream in(set.substr(name.size() + 1));
    std::string item;
    while (std::getline(in, item, ','))
        values.push_back(item == "inf" ? std::numeric_limits<double>::infinity()
                                       : parse_finite_double(item, "--set " + name));
    if (values.empty()) throw InputError("--set '" + set + "': no values");
    return values;
}

}  // namespace

std::vector<int> point_sizes(const RunConfig& config, int n) {
    return parse_selection_sizes(config.sizes, n, "--N");
}

std::vector<std::pair<std::string, std::vector<double>>> parse_sweep_sets(
    const std::vector<std::string>& sets) {
    if (sets.empty()) throw InputError("--set: a sweep needs at least one --set name=v1,v2,...");
    std::vector<std::pair<std::string, std::vector<double>>> sweep;
    for (const std::string& set : sets) {
        const auto eq = set.find('=');
        if (eq == std::string::npos)
            throw InputError("--set '" + set + "': expected name=v1,v2,...");
        const std::string name = set.substr(0, eq);
        const theory::ParameterDescriptor* p = theory::find_parameter(name);
        if (p == nullptr || !p->sweepable) {
            std::string list;
            for (const std::string& key : theory::sweepable_keys())
                list += (list.empty() ? "" : ", ") + key;
            throw InputError("--set '" + set + "': unknown parameter '" + name +
                             "', expected one of " + list);
        }
        for (const auto& [existing, values] : sweep)
            if (existing == name) throw InputError("--set: parameter '" + name + "' given twice");
        sweep.emplace_back(name, set_values(set, name));
    }
    return sweep;
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
            {"band_replicates", c.band_replicates},
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
    c.band_replicates = json_integer<int>(j.at("band_replicates"));
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
    const theory::ParameterLabel parameter_label = point_label(source, point);
    apply_values(setup, params, point, source, parameter_label);
    theory::check_head_parameters(params, parameter_label);
    auto label = [&](const char* flag, const char* key, const std::string& value) {
        return value_label(source, flag, key, value);
    };
    const theory::ParameterDescriptor& d = theory::parameter("d");
    theory::check_value(d, setup.d, parameter_label);
    if (!std::isinf(setup.d) && (setup.d != std::floor(setup.d) || setup.d > 1e6)) {
        throw InputError(parameter_label(d, theory::value_text(d, setup.d)) +
                         ": expected an integer d >= 1 (at most 1e6) or inf");
    }
    if (setup.kappa) theory::check_value(theory::parameter("kappa"), *setup.kappa, parameter_label);
    if (config.band_replicates < 100 || config.band_replicates > 1000000)
        throw InputError(
            label("--band-replicates", "band_replicates", std::to_string(config.band_replicates)) +
            ", expected 100 <= replicates <= 1000000");
    if (config.trials < 2 || config.trials > kMaxTrials) {
        throw InputError(label("--trials", "trials", std::to_string(config.trials)) +
                         ", expected 2 <= trials <= " + std::to_string(kMaxTrials));
    }
    theory::check_value(theory::parameter("norm_cv"), setup.spec.norm_cv, parameter_label);
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
