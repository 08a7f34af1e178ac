// Loading a head description's files; see model_source.hpp.
#include "theory/model_source.hpp"

#include <cmath>

#include "common/csv.hpp"
#include "common/errors.hpp"
#include "common/format.hpp"
#include "common/json_file.hpp"

namespace attngeo::theory {

namespace {

// --profile file:PATH: weights normalised to sum to 1.
Eigen::VectorXd profile_file_weights(const std::string& path) {
    const auto weights = read_numeric_column(path, "--profile file");
    try {
        return normalized_weights(weights, "normalized_weights");
    } catch (const std::domain_error& e) {
        throw InputError("--profile file '" + path + "': " + e.what());
    }
}

// --alpha: at least two weights >= 0 that already sum to 1 (within 1e-6).
Eigen::VectorXd alpha_file_weights(const std::string& path) {
    const auto weights = read_numeric_column(path, "--alpha file");
    double total = 0;
    for (std::size_t i = 0; i < weights.size(); ++i) {
        if (weights[i] < 0) {
            throw InputError("--alpha file '" + path + "': weight " + std::to_string(i) +
                             " is negative, expected alpha >= 0");
        }
        total += weights[i];
    }
    if (std::abs(total - 1) > 1e-6) {
        throw InputError("--alpha file '" + path + "': weights sum to " + format_double(total) +
                         ", expected 1 within 1e-6");
    }
    if (weights.size() < 2)
        throw InputError("--alpha file '" + path + "': expected at least 2 weights");
    return Eigen::Map<const Eigen::VectorXd>(weights.data(),
                                             static_cast<Eigen::Index>(weights.size()));
}

// --norms: n norms >= 0.
Eigen::VectorXd norms_file_values(const std::string& path, int n) {
    const auto norms = read_numeric_column(path, "--norms file");
    if (static_cast<int>(norms.size()) != n) {
        throw InputError("--norms file '" + path + "': has " + std::to_string(norms.size()) +
                         " values, expected n = " + std::to_string(n));
    }
    for (std::size_t i = 0; i < norms.size(); ++i) {
        if (norms[i] < 0)
            throw InputError("--norms file '" + path + "': norm " + std::to_string(i) +
                             " is negative");
    }
    return Eigen::Map<const Eigen::VectorXd>(norms.data(), n);
}

// --cos: an n × n cosine matrix (validate_cosine_matrix's conditions).
Eigen::MatrixXd cosine_file_matrix(const std::string& path, int n) {
    const NumericTable table = read_numeric_table(path, "--cos file");
    if (static_cast<int>(table.rows.size()) != n || static_cast<int>(table.columns()) != n) {
        throw InputError("--cos file '" + path + "': is " + std::to_string(table.rows.size()) +
                         "x" + std::to_string(table.columns()) + ", expected " + std::to_string(n) +
                         "x" + std::to_string(n));
    }
    Eigen::MatrixXd cosine(n, n);
    for (int j = 0; j < n; ++j)
        for (int k = 0; k < n; ++k)
            cosine(j, k) = table.rows[j][k];
    try {
        validate_cosine_matrix(cosine, "--cos file");
    } catch (const std::domain_error& e) {
        throw InputError(std::string(e.what()) + " ('" + path + "')");
    }
    return cosine;
}

// The attention weights from a file, if one is given (--profile file:PATH or --alpha, not
// both); the sequence length follows them and must agree with an explicit --L.
void load_weights(const ModelSource& o, ModelParameters& p) {
    if (p.profile_kind.kind == ProfileSpec::Kind::file)
        p.alpha = profile_file_weights(p.profile_kind.path);
    if (!o.alpha_file.empty()) {
        if (p.alpha) throw InputError("--alpha: cannot be combined with --profile file:PATH");
        p.alpha = alpha_file_weights(o.alpha_file);
    }
    if (!p.alpha) return;
    if (o.length_given && o.assumption3.L + 1 != p.alpha->size()) {
        throw InputError("--L " + std::to_string(o.assumption3.L) +
                         " disagrees with the weights file, which has n = " +
                         std::to_string(p.alpha->size()) + " (L = n - 1)");
    }
    p.profile.L = static_cast<int>(p.alpha->size()) - 1;
}

}  // namespace

ModelParameters load_model(const ModelSource& o) {
    ModelParameters p;
    p.profile = o.assumption3;
    p.C = o.C;
    p.lambda = o.lambda;
    p.beta = o.beta;
    p.rho0 = o.rho0;
    try {
        p.profile_kind = parse_profile_spec(o.profile);
    } catch (const std::domain_error&) {
        throw InputError("--profile: '" + o.profile +
                         "': expected assumption3, uniform, zipf:s or file:PATH");
    }
    load_weights(o, p);
    const int n = token_count(p);
    if (!o.norms_file.empty()) p.norms = norms_file_values(o.norms_file, n);
    if (!o.cos_file.empty()) p.cosine = cosine_file_matrix(o.cos_file, n);
    return p;
}

// The head parameters of a ModelSource, in table order.
template <typename Visit>
void for_each_head_parameter(Visit visit) {
    for (const ParameterDescriptor& p : parameter_table())
        if (is_head_flag(p)) visit(p);
}

nlohmann::json to_json(const ModelSource& o) {
    nlohmann::json j = {{"preset", o.preset},         {"profile", o.profile},
                        {"alpha_file", o.alpha_file}, {"norms_file", o.norms_file},
                        {"cos_file", o.cos_file},     {"L_given", o.length_given}};
    const ParameterFields f = parameter_fields(const_cast<ModelSource&>(o));
    for_each_head_parameter([&](const ParameterDescriptor& p) {
        if (p.integer)
            j[p.key] = *p.whole(f);
        else
            j[p.key] = *p.real(f);
    });
    return j;
}

ModelSource model_source_from_json(const nlohmann::json& j) {
    ModelSource o;
    o.preset = j.at("preset").get<std::string>();
    o.profile = j.at("profile").get<std::string>();
    const ParameterFields f = parameter_fields(o);
    for_each_head_parameter([&](const ParameterDescriptor& p) {
        if (p.integer)
            *p.whole(f) = json_integer<int>(j.at(p.key));
        else
            *p.real(f) = j.at(p.key).get<double>();
    });
    o.alpha_file = j.at("alpha_file").get<std::string>();
    o.norms_file = j.at("norms_file").get<std::string>();
    o.cos_file = j.at("cos_file").get<std::string>();
    o.length_given = j.at("L_given").get<bool>();
    return o;
}

}  // namespace attngeo::theory
