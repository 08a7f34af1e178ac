// attngeo._core.check_run_folder: a run folder read by the C++ reader of its kind — the one
// `attngeo report` uses — so Python's read_run refuses what the CLI refuses, with its message.
#include <pybind11/pybind11.h>

#include <string>

#include "python/bindings.hpp"
#include "reports/run_folder.hpp"

namespace attngeo::python {

namespace {

// Reads every file of the folder as the report's sections do (no figure is drawn, nothing is
// written); an InputError naming the damaged file becomes a ValueError.
void check_run_folder(const std::string& dir) {
    const reports::RunFolder run = reports::read_run_folder(dir, 0, "attngeo.read_run");
    static_cast<void>(reports::run_sections(run));
}

}  // namespace

void bind_run_folders(pybind11::module_& module) {
    module.def("check_run_folder", &check_run_folder, pybind11::arg("path"),
               "Reads the run folder PATH with the reader of its manifest's kind (simulate, "
               "sweep, extract, compare, compare-set with each model's folder, truncate, "
               "normalization), as `attngeo report` does; ValueError naming the file for a "
               "damaged or inconsistent folder or one of another format_version.");
}

}  // namespace attngeo::python
