// attngeo.bounds: the envelopes of Theorems 1–2 / Corollary 1 (theory/bounds.hpp) for a
// parametric or explicit head, with the columns of `attngeo bounds` (and a variant column), or
// the Table-1 sensitivities; the same library calls as app/cmd_bounds.cpp.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "common/errors.hpp"
#include "common/number_list.hpp"
#include "common/run_schema.hpp"
#include "python/array_input.hpp"
#include "python/bindings.hpp"
#include "python/model_arguments.hpp"
#include "theory/bounds.hpp"
#include "theory/parameter_table.hpp"

namespace attngeo::python {
namespace {

const std::string kFunction = "attngeo.bounds";

// "all" or the names given, each checked by parse_bound_variant.
std::vector<theory::BoundVariant> chosen_variants(const std::vector<std::string>& names) {
    if (names.size() == 1 && names[0] == "all")
        return {theory::bound_variants().begin(), theory::bound_variants().end()};
    if (names.empty()) throw_value_error(kFunction, "variant is empty, expected at least one");
    std::vector<theory::BoundVariant> variants;
    for (const auto& name : names)
        variants.push_back(theory::parse_bound_variant(name, "variant"));
    return variants;
}

py::dict sensitivity_table(const theory::ModelParameters& params, const std::vector<int>& sizes,
                           theory::BoundSettings settings,
                           const std::vector<theory::BoundVariant>& variants) {
    static const char* const kColumns[] = {"P_lower",    "P_upper",    "R_lower",    "R_upper",
                                           "Fmax_lower", "Fmax_upper", "Fmin_lower", "Fmin_upper"};
    std::vector<std::int64_t> N;
    std::vector<std::string> variant_names, parameters;
    std::vector<std::vector<double>> reals(8);
    for (theory::BoundVariant variant : variants) {
        settings.variant = variant;
        for (const auto& r : theory::bound_sensitivities(params, sizes, settings)) {
            N.push_back(r.N);
            variant_names.push_back(theory::to_string(variant));
            parameters.push_back(r.parameter);
            const double values[] = {r.precision_lower, r.precision_upper, r.recall_lower,
                                     r.recall_upper,    r.fmax_lower,      r.fmax_upper,
                                     r.fmin_lower,      r.fmin_upper};
            for (int c = 0; c < 8; ++c)
                reals[c].push_back(values[c]);
        }
    }
    py::dict table;
    table["N"] = integer_column(N);
    table["variant"] = text_column(variant_names);
    table["parameter"] = text_column(parameters);
    for (int c = 0; c < 8; ++c)
        table[kColumns[c]] = real_column(reals[c]);
    return table;
}

py::dict bound_table(const theory::ModelParameters& params, const std::vector<int>& sizes,
                     theory::BoundSettings settings,
                     const std::vector<theory::BoundVariant>& variants) {
    static const std::vector<std::string> kReals = schema::bound_value_columns();
    static const std::vector<std::string> kFlags = schema::bound_flag_columns();
    const theory::HeadModel model = theory::build_head_model(params);
    const int n = static_cast<int>(model.alpha.size());
    std::vector<std::string> regime(n + 1, "NA");
    if (const auto phases = theory::phase_parameters(params)) {
        const auto regimes = theory::regimes_by_size(model.alpha, phases->p_base, phases->eta);
        for (int N = 1; N <= n; ++N)
            regime[N] = theory::to_string(regimes[N - 1]);
    }
    std::vector<std::int64_t> N;
    std::vector<std::string> variant_names, regimes;
    std::vector<std::vector<double>> reals(11);
    std::vector<std::vector<std::int64_t>> flags(9);
    for (theory::BoundVariant variant : variants) {
        settings.variant = variant;
        for (const auto& r : theory::bounds_all(model, sizes, settings)) {
            N.push_back(r.N);
            variant_names.push_back(theory::to_string(variant));
            regimes.push_back(regime[r.N]);
            const double values[] = {r.delta,           r.delta0,          r.scale,
                                     r.precision_lower, r.precision_upper, r.recall_lower,
                                     r.recall_upper,    r.fmax_lower,      r.fmax_upper,
                                     r.fmin_lower,      r.fmin_upper};
            for (int c = 0; c < 11; ++c)
                reals[c].push_back(values[c]);
            const theory::MarginFlags m = theory::margin_flags(r);
            const theory::EnvelopeFlags e = theory::envelope_flags(
                r.precision_lower, r.precision_upper, r.recall_lower, r.recall_upper);
            const bool bits[] = {m.delta_le0,       m.delta0_le0,      m.xi_le0,
                                 e.P_inverted,      e.R_inverted,      e.P_trivial_lower,
                                 e.R_trivial_lower, e.P_trivial_upper, e.R_trivial_upper};
            for (int c = 0; c < 9; ++c)
                flags[c].push_back(bits[c]);
        }
    }
    py::dict table;
    table["N"] = integer_column(N);
    table["variant"] = text_column(variant_names);
    table["regime"] = text_column(regimes);
    for (int c = 0; c < 11; ++c)
        table[kReals[c].c_str()] = real_column(reals[c]);
    for (int c = 0; c < 9; ++c)
        table[kFlags[c].c_str()] = integer_column(flags[c]);
    return table;
}

py::dict bounds(const py::dict& model, const py::handle& alpha, const py::handle& norms,
                const py::handle& cosine, double d, double kappa,
                const std::vector<std::string>& variant_names, const std::string& rank,
                const py::handle& sizes_in, bool sensitivity) {
    const theory::ModelSource source = model_source(model, kFunction);
    const theory::ModelParameters params =
        model_parameters(source, alpha, norms, cosine, kFunction);
    // The table's ranges, named by the Python keyword: "attngeo.bounds: kappa = -1: expected ...".
    const theory::ParameterLabel label = [](const theory::ParameterDescriptor& p,
                                            const std::string& value) {
        return (p.key == std::string("lambda") ? "lambda_" : p.key) + (" = " + value);
    };
    try {
        theory::check_head_parameters(params, label);
        theory::check_value(theory::parameter("d"), d, label);
        theory::check_value(theory::parameter("kappa"), kappa, label);
    } catch (const InputError& e) {
        throw InputError(kFunction + ": " + e.what());
    }
    const int n = theory::token_count(params);
    const std::vector<int> sizes =
        parse_selection_sizes(selection_size_text(sizes_in, kFunction), n, kFunction + ": N");
    theory::BoundSettings settings;
    settings.d = d;
    settings.kappa = kappa;
    settings.ranking = ranking_argument(rank, kFunction);
    const auto variants = chosen_variants(variant_names);
    return sensitivity ? sensitivity_table(params, sizes, settings, variants)
                       : bound_table(params, sizes, settings, variants);
}

}  // namespace

void bind_bounds(py::module_& module) {
    module.def("bounds", &bounds, py::arg("model"), py::arg("alpha"), py::arg("norms"),
               py::arg("cos"), py::arg("d"), py::arg("kappa"), py::arg("variants"), py::arg("rank"),
               py::arg("N"), py::arg("sensitivity"),
               "The columns of `attngeo bounds` (attngeo.bounds wraps this).");
}

}  // namespace attngeo::python
