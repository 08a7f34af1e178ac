// attngeo.metrics: the library's exact metrics (theory/metrics.hpp) of one head, or of a batch
// of heads on threads with the GIL released. The paths are `attngeo metrics`'s: N = "all" takes
// the Gram path, any other N the per-N reference; both give identical rows (docs/design.md §2).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cmath>

#include "common/format.hpp"
#include "common/number_list.hpp"
#include "common/size_checks.hpp"
#include "python/array_input.hpp"
#include "python/bindings.hpp"
#include "theory/metrics.hpp"

namespace attngeo::python {
namespace {

const std::string kFunction = "attngeo.metrics";

// The heads as the caller gave them: [heads, n] weights and [heads, n, d] values, C-ordered.
struct HeadBatch {
    py::array_t<double> alpha;   // [heads, n] (or [n] for one head)
    py::array_t<double> values;  // [heads, n, d] (or [n, d])
    int heads = 0, n = 0, d = 0;
    bool batched = false;
};

HeadBatch read_heads(const py::handle& alpha_in, const py::handle& values_in) {
    HeadBatch b;
    if (alpha_in.is_none()) throw_value_error(kFunction, "alpha is None, expected an array");
    const py::array alpha_any = py::module_::import("numpy").attr("asarray")(alpha_in);
    if (alpha_any.ndim() != 1 && alpha_any.ndim() != 2)
        throw_value_error(
            kFunction, "alpha has shape " + shape_text(alpha_any) + ", expected [n] or [heads, n]");
    b.batched = alpha_any.ndim() == 2;
    b.alpha = double_array(alpha_any, b.batched ? 2 : 1, kFunction, "alpha");
    b.values = double_array(values_in, b.batched ? 3 : 2, kFunction,
                            b.batched ? "values (alpha is [heads, n])" : "values");
    b.heads = b.batched ? static_cast<int>(b.alpha.shape(0)) : 1;
    b.n = static_cast<int>(b.alpha.shape(b.batched ? 1 : 0));
    const int axis = b.batched ? 1 : 0;
    if ((b.batched && b.values.shape(0) != b.heads) || b.values.shape(axis) != b.n) {
        throw_value_error(kFunction, "values has shape " + shape_text(b.values) + ", expected " +
                                         (b.batched ? "(" + std::to_string(b.heads) + ", " : "(") +
                                         std::to_string(b.n) + ", d) to match alpha " +
                                         shape_text(b.alpha));
    }
    b.d = static_cast<int>(b.values.shape(axis + 1));
    if (b.n < 1) throw_value_error(kFunction, "alpha has no tokens, expected n >= 1");
    if (b.d < 1) throw_value_error(kFunction, "values have d = 0, expected d >= 1");
    return b;
}

std::string head_name(const HeadBatch& b, int head) {
    return b.batched ? "alpha[" + std::to_string(head) + "]" : std::string("alpha");
}

// The checks `attngeo metrics` makes on points.csv: finite, α ≥ 0, Σα = 1 within 1e-6.
void check_head(const HeadBatch& b, int head) {
    const double* alpha = b.alpha.data() + static_cast<std::size_t>(head) * b.n;
    const double* values = b.values.data() + static_cast<std::size_t>(head) * b.n * b.d;
    double total = 0;
    for (int i = 0; i < b.n; ++i) {
        const std::string weight = head_name(b, head) + "[" + std::to_string(i) + "] = ";
        if (!std::isfinite(alpha[i]))
            throw_value_error(kFunction,
                              weight + format_double(alpha[i]) + ", expected a finite alpha >= 0");
        // Worded as `attngeo metrics` words a negative alpha in points.csv.
        if (alpha[i] < 0)
            throw_value_error(
                kFunction, weight + format_double(alpha[i]) + " is negative, expected alpha >= 0");
        total += alpha[i];
    }
    if (std::abs(total - 1) > 1e-6) {
        throw_value_error(kFunction, head_name(b, head) + " sums to " + format_double(total) +
                                         ", expected 1 within 1e-6");
    }
    for (std::size_t k = 0; k < static_cast<std::size_t>(b.n) * b.d; ++k) {
        if (!std::isfinite(values[k])) {
            throw_value_error(kFunction, std::string("values") +
                                             (b.batched ? "[" + std::to_string(head) + "]" : "") +
                                             " holds " + format_double(values[k]) + " at token " +
                                             std::to_string(k / b.d) + ", expected finite values");
        }
    }
}

theory::TokenGeometry head_geometry(const HeadBatch& b, int head) {
    theory::TokenGeometry tokens;
    tokens.alpha = Eigen::Map<const Eigen::VectorXd>(
        b.alpha.data() + static_cast<std::size_t>(head) * b.n, b.n);
    tokens.values = Eigen::Map<const theory::RowMatrix>(
        b.values.data() + static_cast<std::size_t>(head) * b.n * b.d, b.n, b.d);
    return tokens;
}

// The result columns, [heads, sizes] (or [sizes]), N once.
py::dict result_columns(const std::vector<std::vector<theory::SelectionMetrics>>& rows,
                        const std::vector<int>& sizes, bool batched) {
    const auto heads = static_cast<py::ssize_t>(rows.size());
    const auto count = static_cast<py::ssize_t>(sizes.size());
    std::vector<py::ssize_t> shape =
        batched ? std::vector<py::ssize_t>{heads, count} : std::vector<py::ssize_t>{count};
    auto column = [&](auto field, auto zero) {
        py::array_t<decltype(zero)> out(shape);
        auto* data = out.mutable_data();
        for (py::ssize_t h = 0; h < heads; ++h)
            for (py::ssize_t k = 0; k < count; ++k)
                data[h * count + k] = static_cast<decltype(zero)>(field(rows[h][k]));
        return out;
    };
    using M = theory::SelectionMetrics;
    py::dict out;
    out["N"] = py::array_t<std::int64_t>(
        count, std::vector<std::int64_t>(sizes.begin(), sizes.end()).data());
    out["r_min"] = column([](const M& m) { return m.r_min; }, 0.0);
    out["r_max"] = column([](const M& m) { return m.r_max; }, 0.0);
    out["K_in"] = column([](const M& m) { return m.K_in; }, std::int64_t{});
    out["K_out"] = column([](const M& m) { return m.K_out; }, std::int64_t{});
    out["P"] = column([](const M& m) { return m.precision_at_rmax; }, 0.0);
    out["R"] = column([](const M& m) { return m.recall_at_rmin; }, 0.0);
    out["F_max"] = column([](const M& m) { return m.f_at_rmax; }, 0.0);
    out["F_min"] = column([](const M& m) { return m.f_at_rmin; }, 0.0);
    out["exact_decisions"] = column([](const M& m) { return m.exact_decisions; }, std::int64_t{});
    return out;
}

py::dict metrics(const py::handle& alpha, const py::handle& values, const py::handle& sizes_in,
                 const std::string& rank, const std::string& distance_name, int threads) {
    const HeadBatch batch = read_heads(alpha, values);
    const std::string sizes_text = selection_size_text(sizes_in, kFunction);
    const std::vector<int> sizes = parse_selection_sizes(sizes_text, batch.n, kFunction + ": N");
    const theory::Ranking ranking = ranking_argument(rank, kFunction);
    const theory::Distance distance = distance_argument(distance_name, kFunction);
    for (int head = 0; head < batch.heads; ++head)
        check_head(batch, head);
    const bool all_sizes = sizes_text == "all";
    const int workers = worker_count(threads, batch.heads, kFunction);
    // Each worker of the Gram path holds an n × n matrix of doubles.
    if (all_sizes)
        check_allocation(checked_bytes(checked_bytes(batch.n, batch.n), workers), sizeof(double),
                         kFunction + ": " + std::to_string(workers) + " thread(s) x " +
                             std::to_string(batch.n) +
                             " tokens (an n x n Gram matrix each; pass fewer threads or a "
                             "list of N for the per-N path)");
    std::vector<std::vector<theory::SelectionMetrics>> rows(batch.heads);
    {
        const py::gil_scoped_release unlocked;
        parallel_for(batch.heads, workers, [&](int head) {
            const theory::TokenGeometry tokens = head_geometry(batch, head);
            rows[head] =
                theory::selection_metrics_scaled(tokens, sizes, ranking, distance, all_sizes);
        });
    }
    return result_columns(rows, sizes, batch.batched);
}

}  // namespace

void bind_metrics(py::module_& module) {
    module.def("metrics", &metrics, py::arg("alpha"), py::arg("values"), py::arg("N") = "all",
               py::arg("rank") = "attn", py::arg("distance") = "euclidean", py::arg("threads") = 0,
               R"doc(P(r_max,N), R(r_min,N) and F of top-N selection (docs/design.md §2),
exact counts.

alpha: [n] attention weights (token 0 is the sink; >= 0, sum 1 within 1e-6) and values:
[n, d] value vectors; or a batch: alpha [heads, n], values [heads, n, d] (computed on
`threads` threads, 0 = every core, with the GIL released). float32 or float64, any order.
N: "all" (Gram path), "pow2", "1,2,4", "1:16", an int or a list of ints (per-N path).
rank: "attn" (alpha_i) or "contrib" (alpha_i |v_i|); distance: "euclidean" or "cosine".
Returns a dict of arrays: N [sizes]; r_min, r_max, K_in, K_out, P, R, F_max, F_min,
exact_decisions [sizes] or [heads, sizes]. r_min is inf at N = n.)doc");
}

}  // namespace attngeo::python
