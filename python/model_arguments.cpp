// Model descriptions from Python; see model_arguments.hpp.
#include "python/model_arguments.hpp"

#include <cmath>
#include <optional>

#include "common/format.hpp"
#include "python/array_input.hpp"
#include "theory/parameter_table.hpp"

namespace attngeo::python {
namespace {

int integer_entry(const py::handle& value, const std::string& key, const std::string& function) {
    try {
        if (py::isinstance<py::bool_>(value)) throw py::type_error();
        return py::module_::import("operator").attr("index")(value).cast<int>();
    } catch (const std::exception&) {
        throw_value_error(function,
                          key + " = " + py::repr(value).cast<std::string>() + ", expected an int");
    }
}

double real_entry(const py::handle& value, const std::string& key, const std::string& function) {
    try {
        if (py::isinstance<py::bool_>(value) || py::isinstance<py::str>(value))
            throw py::type_error();
        return py::float_(py::reinterpret_borrow<py::object>(value)).cast<double>();
    } catch (const std::exception&) {
        throw_value_error(
            function, key + " = " + py::repr(value).cast<std::string>() + ", expected a number");
    }
}

std::string text_entry(const py::handle& value, const std::string& key,
                       const std::string& function) {
    // A path may come as a pathlib.Path: its str() is the path.
    if (py::isinstance<py::str>(value) || py::hasattr(value, "__fspath__"))
        return py::str(value).cast<std::string>();
    throw_value_error(function,
                      key + " = " + py::repr(value).cast<std::string>() + ", expected a string");
}

Eigen::VectorXd weights_array(const py::handle& alpha, bool length_given, int L,
                              const std::string& function) {
    const py::array_t<double> a = double_array(alpha, 1, function, "alpha");
    const auto n = static_cast<int>(a.shape(0));
    double total = 0;
    for (int i = 0; i < n; ++i) {
        if (!std::isfinite(a.at(i)) || a.at(i) < 0)
            throw_value_error(function, "alpha[" + std::to_string(i) +
                                            "] = " + format_double(a.at(i)) +
                                            ", expected a finite alpha >= 0");
        total += a.at(i);
    }
    if (std::abs(total - 1) > 1e-6)
        throw_value_error(function,
                          "alpha sums to " + format_double(total) + ", expected 1 within 1e-6");
    if (n < 2)
        throw_value_error(function,
                          "alpha has " + std::to_string(n) + " weight(s), expected at least 2");
    if (length_given && L + 1 != n)
        throw_value_error(function, "L = " + std::to_string(L) +
                                        " disagrees with alpha, which has n = " +
                                        std::to_string(n) + " (L = n - 1)");
    return Eigen::Map<const Eigen::VectorXd>(a.data(), n);
}

Eigen::VectorXd norms_array(const py::handle& norms, int n, const std::string& function) {
    const py::array_t<double> v = double_array(norms, 1, function, "norms");
    if (v.shape(0) != n)
        throw_value_error(function, "norms has " + std::to_string(v.shape(0)) +
                                        " values, expected n = " + std::to_string(n));
    for (int i = 0; i < n; ++i)
        if (!std::isfinite(v.at(i)) || v.at(i) < 0)
            throw_value_error(function, "norms[" + std::to_string(i) +
                                            "] = " + format_double(v.at(i)) +
                                            ", expected a finite norm >= 0");
    return Eigen::Map<const Eigen::VectorXd>(v.data(), n);
}

Eigen::MatrixXd cosine_array(const py::handle& cosine, int n, const std::string& function) {
    const py::array_t<double> c = double_array(cosine, 2, function, "cos");
    if (c.shape(0) != n || c.shape(1) != n)
        throw_value_error(function, "cos has shape " + shape_text(c) + ", expected (" +
                                        std::to_string(n) + ", " + std::to_string(n) + ")");
    const Eigen::MatrixXd matrix =
        Eigen::Map<const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(
            c.data(), n, n);
    const std::string where = function + ": cos";
    theory::validate_cosine_matrix(matrix, where.c_str());  // std::domain_error → ValueError
    return matrix;
}

}  // namespace

theory::ModelSource model_source(const py::dict& model, const std::string& function) {
    theory::ModelSource s;
    for (const auto& [key_handle, value] : model) {
        const std::string key = py::str(key_handle).cast<std::string>();
        if (value.is_none()) continue;
        if (key == "preset") {
            s.preset = text_entry(value, key, function);
            if (s.preset != "paper")
                throw_value_error(function, "preset = '" + s.preset + "', expected 'paper'");
        } else if (key == "profile") {
            s.profile = text_entry(value, key, function);
        } else if (const theory::ParameterDescriptor* p = theory::find_parameter(key);
                   p != nullptr && theory::is_head_flag(*p)) {
            const theory::ParameterFields fields = theory::parameter_fields(s);
            if (p->integer)
                *p->whole(fields) = integer_entry(value, key, function);
            else
                *p->real(fields) = real_entry(value, key, function);
            if (key == "L") s.length_given = true;
        } else if (key == "alpha_file" || key == "norms_file" || key == "cos_file") {
            (key == "alpha_file"   ? s.alpha_file
             : key == "norms_file" ? s.norms_file
                                   : s.cos_file) = text_entry(value, key, function);
        } else {
            throw_value_error(function, "unknown model parameter '" + key + "'");
        }
    }
    return s;
}

theory::ModelParameters model_parameters(const theory::ModelSource& source, const py::handle& alpha,
                                         const py::handle& norms, const py::handle& cosine,
                                         const std::string& function) {
    // Explicit weights fix n before the files are read (a norms file is checked against it).
    theory::ModelSource sized = source;
    std::optional<Eigen::VectorXd> weights;
    if (!alpha.is_none()) {
        if (!source.alpha_file.empty() || source.profile.rfind("file:", 0) == 0)
            throw_value_error(function,
                              "alpha cannot be combined with a file: profile or alpha file");
        weights = weights_array(alpha, source.length_given, source.assumption3.L, function);
        sized.assumption3.L = static_cast<int>(weights->size()) - 1;
        sized.length_given = false;
    }
    theory::ModelParameters p = theory::load_model(sized);
    if (weights) p.alpha = std::move(weights);
    const int n = theory::token_count(p);
    if (!norms.is_none()) {
        if (!source.norms_file.empty())
            throw_value_error(function, "norms cannot be combined with a norms file");
        p.norms = norms_array(norms, n, function);
    }
    if (!cosine.is_none()) {
        if (!source.cos_file.empty())
            throw_value_error(function, "cos cannot be combined with a cos file");
        p.cosine = cosine_array(cosine, n, function);
    }
    return p;
}

}  // namespace attngeo::python
