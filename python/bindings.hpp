// The parts of the `attngeo._core` extension, each registering its functions on the module.
#pragma once
#include <pybind11/pybind11.h>

namespace attngeo::python {

void bind_metrics(pybind11::module_& module);
void bind_bounds(pybind11::module_& module);
void bind_simulate(pybind11::module_& module);
void bind_head_statistics(pybind11::module_& module);
void bind_normalization_limits(pybind11::module_& module);
void bind_run_folders(pybind11::module_& module);

}  // namespace attngeo::python
