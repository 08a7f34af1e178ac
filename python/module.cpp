// The `attngeo._core` extension: the library's kernels for Python (the package's __init__.py
// adds the table helpers). Input errors surface as ValueError with the CLI's one-line message.
#include <pybind11/pybind11.h>

#include "common/errors.hpp"
#include "common/run_schema.hpp"
#include "python/bindings.hpp"

PYBIND11_MODULE(_core, module) {
    module.doc() = "attngeo: exact top-N selection metrics, bounds and simulations";
    // pybind11 already maps std::domain_error (theory/'s argument errors) to ValueError.
    pybind11::register_exception_translator([](std::exception_ptr error) {
        try {
            if (error) std::rethrow_exception(error);
        } catch (const attngeo::InputError& input_error) {
            PyErr_SetString(PyExc_ValueError, input_error.what());
        }
    });
    module.attr("FORMAT_VERSION") = attngeo::schema::kFormatVersion;
    attngeo::python::bind_metrics(module);
    attngeo::python::bind_bounds(module);
    attngeo::python::bind_simulate(module);
    attngeo::python::bind_head_statistics(module);
    attngeo::python::bind_normalization_limits(module);
    attngeo::python::bind_run_folders(module);
}
