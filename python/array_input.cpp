// Checked conversion of Python arguments; see array_input.hpp.
#include "python/array_input.hpp"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <thread>

namespace attngeo::python {

void throw_value_error(const std::string& function, const std::string& what) {
    throw py::value_error(function + ": " + what);
}

theory::Ranking ranking_argument(const std::string& rank, const std::string& function) {
    // CLI11's IsMember words it this way for the CLI; the library's own message names itself.
    if (rank != "attn" && rank != "contrib")
        throw_value_error(function, "rank: " + rank + " not in {attn,contrib}");
    return theory::parse_ranking(rank);
}

theory::Distance distance_argument(const std::string& distance, const std::string& function) {
    if (distance != "euclidean" && distance != "cosine")
        throw_value_error(function, "distance: " + distance + " not in {euclidean,cosine}");
    return theory::parse_distance(distance);
}

std::string shape_text(const py::array& array) {
    std::string text = "(";
    for (py::ssize_t axis = 0; axis < array.ndim(); ++axis)
        text += (axis ? ", " : "") + std::to_string(array.shape(axis));
    return text + (array.ndim() == 1 ? ",)" : ")");
}

namespace {

// np.asarray(object), checked to be a floating array of an accepted width and `dims` dimensions.
py::array floating_input(const py::handle& object, int dims, const std::vector<int>& widths,
                         const std::string& expected, const std::string& function,
                         const std::string& name) {
    if (object.is_none()) throw_value_error(function, name + " is None, expected an array");
    // np.asarray honours __array__ (torch tensors, pandas columns) without copying NumPy input.
    py::array array = py::module_::import("numpy").attr("asarray")(object);
    const py::dtype dtype = array.dtype();
    if (dtype.kind() != 'f' ||
        std::find(widths.begin(), widths.end(), dtype.itemsize()) == widths.end()) {
        throw_value_error(function, name + " has dtype " + dtype.attr("name").cast<std::string>() +
                                        ", expected " + expected);
    }
    if (array.ndim() != dims) {
        throw_value_error(function, name + " has shape " + shape_text(array) + ", expected " +
                                        std::to_string(dims) + " dimension(s)");
    }
    return array;
}

}  // namespace

py::array_t<double> double_array(const py::handle& object, int dims, const std::string& function,
                                 const std::string& name) {
    const py::array array =
        floating_input(object, dims, {4, 8}, "float32 or float64", function, name);
    // A C-ordered float64 copy when the input is float32, F-ordered or strided; else a view.
    return py::array_t<double, py::array::c_style | py::array::forcecast>::ensure(array);
}

py::array_t<float> float_array(const py::handle& object, int dims, const std::string& function,
                               const std::string& name) {
    const py::array array =
        floating_input(object, dims, {2, 4, 8}, "float16, float32 or float64", function, name);
    return py::array_t<float, py::array::c_style | py::array::forcecast>::ensure(array);
}

std::string selection_size_text(const py::handle& sizes, const std::string& function) {
    if (py::isinstance<py::str>(sizes)) return sizes.cast<std::string>();
    if (py::isinstance<py::bool_>(sizes))
        throw_value_error(function, "N is a bool, expected 'all', 'pow2', an int or a list");
    if (py::isinstance<py::int_>(sizes)) return std::to_string(sizes.cast<long long>());
    std::string text;
    try {
        for (const py::handle item : py::iter(sizes)) {
            // Only whole numbers: an int, a NumPy integer (operator.index accepts both).
            const long long size =
                py::module_::import("operator").attr("index")(item).cast<long long>();
            text += (text.empty() ? "" : ",") + std::to_string(size);
        }
    } catch (const py::error_already_set&) {
        throw_value_error(function,
                          "N must be 'all', 'pow2', a text like '1,2,4' or '1:16', an "
                          "int or a sequence of ints");
    }
    if (text.empty()) throw_value_error(function, "N is empty, expected at least one size");
    return text;
}

int worker_count(int requested, int tasks, const std::string& function) {
    if (requested < 0)
        throw_value_error(function, "threads = " + std::to_string(requested) + ", expected >= 0");
    int workers = requested > 0 ? requested : static_cast<int>(std::thread::hardware_concurrency());
    if (workers < 1) workers = 1;
    return std::max(1, std::min(workers, tasks));
}

void parallel_for(int count, int workers, const std::function<void(int)>& job) {
    std::atomic<int> next{0};
    std::exception_ptr failure;
    std::mutex failure_mutex;
    auto drain = [&] {
        for (int task = next++; task < count; task = next++) {
            try {
                job(task);
            } catch (...) {
                const std::lock_guard<std::mutex> lock(failure_mutex);
                if (!failure) failure = std::current_exception();
                next = count;  // the others stop after their current job
            }
        }
    };
    std::vector<std::thread> threads;
    for (int w = 1; w < workers; ++w)
        threads.emplace_back(drain);
    drain();
    for (auto& thread : threads)
        thread.join();
    if (failure) std::rethrow_exception(failure);
}

}  // namespace attngeo::python

namespace attngeo::python {

py::array_t<double> real_column(const std::vector<double>& values) {
    return py::array_t<double>(static_cast<py::ssize_t>(values.size()), values.data());
}

py::array_t<std::int64_t> integer_column(const std::vector<std::int64_t>& values) {
    return py::array_t<std::int64_t>(static_cast<py::ssize_t>(values.size()), values.data());
}

py::list text_column(const std::vector<std::string>& values) {
    py::list column;
    for (const auto& value : values)
        column.append(value);
    return column;
}

}  // namespace attngeo::python
