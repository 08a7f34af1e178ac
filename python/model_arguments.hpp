// The parametric head of Assumptions 1–3 as Python describes it: a dict of the CLI's model
// flags (preset, profile, theory/parameter_table's head keys, file paths)
// and, for the bounds, explicit α / norms / cosine arrays in place of the files.
#pragma once
#include <pybind11/pybind11.h>

#include <string>

#include "theory/model_source.hpp"
#include "theory/parametric.hpp"

namespace attngeo::python {

// The dict's entries over the paper preset; None entries keep the preset's value. Unknown
// keys and wrong types are ValueErrors naming `function`.
theory::ModelSource model_source(const pybind11::dict& model, const std::string& function);

// load_model(source), then the arrays that are not None: alpha [n] (≥ 0, sum 1 within 1e-6,
// n ≥ 2), norms [n] (≥ 0) and cos [n, n] (a cosine matrix), checked as the CLI checks files.
theory::ModelParameters model_parameters(const theory::ModelSource& source,
                                         const pybind11::handle& alpha,
                                         const pybind11::handle& norms,
                                         const pybind11::handle& cosine,
                                         const std::string& function);

}  // namespace attngeo::python
