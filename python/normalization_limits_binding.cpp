// The predecessor paper's row measurements for Python (theory/normalization_limits.hpp,
// docs/design.md §14): d̃(N), E‖·‖² and its Monte Carlo E‖·‖ of one head's row, the softmax
// sensitivity g(T, ε), seeded unit directions, and the exact two-sample KS test
// (compare/ks_test.hpp). Argument errors are ValueErrors naming the function.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/number_list.hpp"
#include "compare/ks_test.hpp"
#include "python/array_input.hpp"
#include "python/bindings.hpp"
#include "theory/metrics.hpp"
#include "theory/normalization_limits.hpp"

namespace attngeo::python {
namespace {

// One head's row: alpha [n] and values [n, d], checked as the metrics check them (finite,
// α ≥ 0; Σα = 1 is not needed here).
theory::TokenGeometry row_geometry(const py::handle& alpha_in, const py::handle& values_in,
                                   const std::string& function) {
    const py::array_t<double> alpha = double_array(alpha_in, 1, function, "alpha");
    const py::array_t<double> values = double_array(values_in, 2, function, "values");
    if (values.shape(0) != alpha.shape(0))
        throw_value_error(function, "values has shape " + shape_text(values) + ", expected (" +
                                        std::to_string(alpha.shape(0)) + ", d) to match alpha " +
                                        shape_text(alpha));
    if (alpha.shape(0) < 1) throw_value_error(function, "alpha has no tokens, expected n >= 1");
    if (values.shape(1) < 1) throw_value_error(function, "values have d = 0, expected d >= 1");
    theory::TokenGeometry tokens;
    tokens.alpha = Eigen::Map<const Eigen::VectorXd>(alpha.data(), alpha.shape(0));
    tokens.values =
        Eigen::Map<const theory::RowMatrix>(values.data(), values.shape(0), values.shape(1));
    theory::validate_token_geometry(tokens, function.c_str());
    return tokens;
}

std::vector<double> vector_argument(const py::handle& object, const std::string& function,
                                    const std::string& name) {
    const py::array_t<double> array = double_array(object, 1, function, name);
    return std::vector<double>(array.data(), array.data() + array.shape(0));
}

py::dict selection_distance(const py::handle& alpha, const py::handle& values,
                            const py::handle& sizes_in, const std::string& rank) {
    const std::string function = "attngeo.selection_distance";
    const theory::TokenGeometry tokens = row_geometry(alpha, values, function);
    const int n = static_cast<int>(tokens.alpha.size());
    const std::vector<int> sizes =
        parse_selection_sizes(selection_size_text(sizes_in, function), n, function + ": sizes");
    const theory::Ranking ranking = ranking_argument(rank, function);
    const std::vector<int> order =
        theory::selection_order(theory::selection_scores(tokens, ranking));
    py::dict out;  // as attngeo.metrics: the sizes sorted and unique, N beside the values
    out["N"] = integer_column(std::vector<std::int64_t>(sizes.begin(), sizes.end()));
    out["distance"] = real_column(
        theory::selection_distance(theory::selection_contributions(tokens), order, sizes));
    return out;
}

double random_selection_mean_square(const py::handle& alpha, const py::handle& values, int N) {
    const theory::TokenGeometry tokens =
        row_geometry(alpha, values, "attngeo.random_selection_mean_square");
    return theory::random_selection_mean_square(theory::selection_contributions(tokens), N);
}

std::pair<double, double> random_selection_distance(const py::handle& alpha,
                                                    const py::handle& values, int N, int subsets,
                                                    std::uint64_t seed) {
    const theory::TokenGeometry tokens =
        row_geometry(alpha, values, "attngeo.random_selection_distance");
    const theory::RowMatrix contributions = theory::selection_contributions(tokens);
    theory::MonteCarloEstimate estimate;
    {
        const py::gil_scoped_release unlocked;
        estimate = theory::random_selection_distance(contributions, N, subsets, seed);
    }
    return {estimate.mean, estimate.standard_error};
}

double softmax_sensitivity(const py::handle& scores, const py::handle& direction,
                           double temperature, double epsilon) {
    const std::string function = "attngeo.softmax_sensitivity";
    return theory::softmax_sensitivity(vector_argument(scores, function, "scores"),
                                       vector_argument(direction, function, "direction"),
                                       temperature, epsilon);
}

py::array_t<double> random_unit_direction(int n, std::uint64_t seed) {
    return real_column(theory::random_unit_direction(n, seed));
}

std::pair<double, double> ks_2samp(const py::handle& a, const py::handle& b) {
    const std::string function = "attngeo.ks_2samp";
    const compare::KsTest test = compare::ks_two_sample(vector_argument(a, function, "a"),
                                                        vector_argument(b, function, "b"));
    return {test.statistic, test.p_value};
}

}  // namespace

void bind_normalization_limits(py::module_& module) {
    module.def("selection_distance", &selection_distance, py::arg("alpha"), py::arg("values"),
               py::arg("sizes") = "all", py::arg("rank") = "attn",
               R"doc(d~(N) = |sum_{i not in I_N} y_i - sum_{i in I_N} y_i| (docs/design.md §14).

alpha: [n] attention weights (finite, >= 0) and values: [n, d]; y_i = alpha_i v_i. I_N is the
top N by rank ("attn": alpha_i, "contrib": alpha_i |v_i|; ties by the lower index).
sizes: "all", "pow2", "1,2,4", "1:16", an int or a list of ints (sorted, repeats dropped).
Returns {"N": int64 [sizes], "distance": float64 [sizes]}.)doc");
    module.def("random_selection_mean_square", &random_selection_mean_square, py::arg("alpha"),
               py::arg("values"), py::arg("N"),
               R"doc(E_J |sum_{i not in J} y_i - sum_{i in J} y_i|^2 over J uniform among the
N-subsets of the n tokens, exactly (docs/design.md §14). y_i = alpha_i v_i.)doc");
    module.def("random_selection_distance", &random_selection_distance, py::arg("alpha"),
               py::arg("values"), py::arg("N"), py::arg("subsets"), py::arg("seed"),
               R"doc(E_J |sum_{i not in J} y_i - sum_{i in J} y_i| by Monte Carlo over `subsets`
(>= 2) uniform N-subsets drawn from SplitMix64(seed) (docs/design.md §14).
Returns (mean, standard_error).)doc");
    module.def("softmax_sensitivity", &softmax_sensitivity, py::arg("scores"), py::arg("direction"),
               py::arg("temperature"), py::arg("epsilon"),
               R"doc(g(T, eps) = |softmax((l + eps v)/T) - softmax(l/T)|_2 / eps (docs/design.md
§14). scores l: [n] (-inf for a masked key, at least one finite); direction v: [n].)doc");
    module.def("random_unit_direction", &random_unit_direction, py::arg("n"), py::arg("seed"),
               R"doc(A uniformly distributed unit vector of R^n from SplitMix64(seed): [n].)doc");
    module.def("ks_2samp", &ks_2samp, py::arg("a"), py::arg("b"),
               R"doc(Two-sided two-sample Kolmogorov-Smirnov test with the exact p-value (as
scipy.stats.ks_2samp(a, b, method="exact")). Returns (statistic, p_value).)doc");
}

}  // namespace attngeo::python
