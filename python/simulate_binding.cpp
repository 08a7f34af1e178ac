// attngeo.simulate's engine: one simulate or sweep run folder through simulate/run.hpp's entry
// points (run_grid, then write_run), exactly as `attngeo simulate` and `attngeo sweep` make it;
// the package's Python side reads the folder's CSVs back as tables.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <optional>

#include "common/output_folder.hpp"
#include "python/array_input.hpp"
#include "python/bindings.hpp"
#include "python/model_arguments.hpp"
#include "simulate/run.hpp"
#include "theory/parameter_table.hpp"

namespace attngeo::python {
namespace {

const std::string kFunction = "attngeo.simulate";

using SweepValues = std::vector<std::pair<std::string, std::vector<double>>>;

void check_sweep(const SweepValues& sweep) {
    for (std::size_t i = 0; i < sweep.size(); ++i) {
        const std::string& name = sweep[i].first;
        const theory::ParameterDescriptor* p = theory::find_parameter(name);
        if (p == nullptr || !p->sweepable) {
            std::string list;
            for (const std::string& key : theory::sweepable_keys())
                list += (list.empty() ? "" : ", ") + key;
            throw_value_error(kFunction,
                              "sweep: unknown parameter '" + name + "', expected one of " + list);
        }
        if (sweep[i].second.empty())
            throw_value_error(kFunction, "sweep: parameter '" + name + "' has no values");
        for (std::size_t j = 0; j < i; ++j)
            if (sweep[j].first == name)
                throw_value_error(kFunction, "sweep: parameter '" + name + "' given twice");
    }
}

// Runs the configuration into `out` and returns the manifest as JSON text.
std::string simulate_run(const std::string& out, const py::dict& model, double d,
                         std::optional<double> kappa, std::int64_t trials, std::uint64_t seed,
                         int threads, const py::handle& sizes, const std::string& rank,
                         const std::string& distance, const std::string& sink_mode, double norm_cv,
                         const SweepValues& sweep, const std::string& provenance_json) {
    check_output_folder(out, kFunction + ": out");
    if (threads < 0)
        throw_value_error(kFunction, "threads = " + std::to_string(threads) + ", expected >= 0");
    if (trials < 1)
        throw_value_error(kFunction, "trials = " + std::to_string(trials) + ", expected >= 1");
    simulate::RunConfig config;
    config.kind = sweep.empty() ? "simulate" : "sweep";
    config.model = model_source(model, kFunction);
    config.d = d;
    config.kappa = kappa;
    config.trials = trials;
    config.seed = seed;
    config.sizes = selection_size_text(sizes, kFunction);
    config.rank = rank;
    config.distance = distance;
    config.sink_mode = sink_mode;
    config.norm_cv = norm_cv;
    check_sweep(sweep);
    config.sweep = sweep;
    const nlohmann::json provenance = nlohmann::json::parse(provenance_json);
    simulate::shard_trial_count(config);  // validates every grid point before any work
    nlohmann::json manifest;
    {
        const py::gil_scoped_release unlocked;
        simulate::RunTimings timings;
        const auto sums = simulate::run_grid(config, threads, nullptr, timings);
        manifest = simulate::write_run(out, config, sums, threads, provenance, timings);
    }
    return manifest.dump();
}

// theory/parameter_table for the Python side: one dict per parameter, in table order.
py::list parameter_table() {
    py::list rows;
    for (const theory::ParameterDescriptor& p : theory::parameter_table()) {
        py::dict row;
        row["key"] = p.key;
        row["flag"] = p.flag;
        row["head"] = theory::is_head_flag(p);
        row["from_preset"] = p.from_preset;
        row["sweepable"] = p.sweepable;
        row["integer"] = p.integer;
        row["default"] = p.default_value;
        rows.append(row);
    }
    return rows;
}

}  // namespace

void bind_simulate(py::module_& module) {
    module.def("parameter_table", &parameter_table,
               "The model parameters (key, flag, head, from_preset, sweepable, integer, default) "
               "of theory/parameter_table, in its order.");
    module.def("simulate_run", &simulate_run, py::arg("out"), py::arg("model"), py::arg("d"),
               py::arg("kappa"), py::arg("trials"), py::arg("seed"), py::arg("threads"),
               py::arg("N"), py::arg("rank"), py::arg("distance"), py::arg("sink_mode"),
               py::arg("norm_cv"), py::arg("sweep"), py::arg("provenance"),
               "Writes a simulate (or sweep) run folder; returns its manifest as JSON text "
               "(attngeo.simulate wraps this).");
}

}  // namespace attngeo::python
