// What Python passes to the module, turned into the library's types: NumPy arrays (or anything
// with __array__, e.g. a CPU torch tensor) of float32/float64 in any memory order, checked for
// shape, dtype and finiteness, with a one-line ValueError naming the function and argument.
#pragma once
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "theory/metrics.hpp"

namespace attngeo::python {

namespace py = pybind11;

// A ValueError "<function>: <what>".
[[noreturn]] void throw_value_error(const std::string& function, const std::string& what);

// np.asarray(object) as a C-ordered float64 array of `dims` dimensions. Only float32 and
// float64 are accepted (both convert to double exactly); `name` names the argument in errors.
py::array_t<double> double_array(const py::handle& object, int dims, const std::string& function,
                                 const std::string& name);

// np.asarray(object) as a C-ordered float32 array of `dims` dimensions: float16 and float32
// convert exactly, float64 is rounded to float32 (the precision of the statistics,
// docs/design.md §6).
py::array_t<float> float_array(const py::handle& object, int dims, const std::string& function,
                               const std::string& name);

// "(3, 4)": a shape as Python prints it.
std::string shape_text(const py::array& array);

// A selection-size argument: "all" | "pow2" | "1,2,4" | "1:16", an int, or a sequence of ints.
// Returns the library's spelling for parse_selection_sizes.
std::string selection_size_text(const py::handle& sizes, const std::string& function);

// The rank and distance arguments, refused as `attngeo metrics` refuses --rank and --distance
// ("rank: top not in {attn,contrib}"), the flag named as the keyword.
theory::Ranking ranking_argument(const std::string& rank, const std::string& function);
theory::Distance distance_argument(const std::string& distance, const std::string& function);

// The number of worker threads for `tasks` independent jobs: `requested` (0 = every core).
int worker_count(int requested, int tasks, const std::string& function);

// Runs job(0..count−1) on `workers` threads; the first exception is rethrown in the caller.
// Call with the GIL released: jobs must not touch Python objects.
void parallel_for(int count, int workers, const std::function<void(int)>& job);

}  // namespace attngeo::python

namespace attngeo::python {

// Columns handed back to Python: numbers as NumPy arrays, text as a list of str.     [rows]
py::array_t<double> real_column(const std::vector<double>& values);
py::array_t<std::int64_t> integer_column(const std::vector<std::int64_t>& values);
py::list text_column(const std::vector<std::string>& values);

}  // namespace attngeo::python
