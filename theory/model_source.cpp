// Loading a head description's files; see model_source.hpp.
#include "theory/model_source.hpp"

#include "common/json_file.hpp"

#include <cmath>

#include "common/csv.hpp"
#include "common/errors.hpp"
#include "common/format.hpp"

namespace attngeo::theory {

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
    if (p.profile_kind.kind == ProfileSpec::Kind::file) {
        const auto weights = read_numeric_column(p.profile_kind.path, "--profile file");
        try {
            p.alpha = normalized_weights(weights, "normalized_weights");
        } catch (const std::domain_error& e) {
            throw InputError("--profile file '" + p.profile_kind.path + "': " + e.what());
        }
    }
    if (!o.alpha_file.empty()) {
        if (p.alpha) throw InputError("--alpha: cannot be combined with --profile file:PATH");
        const auto weights = read_numeric_column(o.alpha_file, "--alpha file");
        double total = 0;
        for (std::size_t i = 0; i < weights.size(); ++i) {
            if (weights[i] < 0) {
                throw InputError("--alpha file '" + o.alpha_file + "': weight " +
                                 std::to_string(i) + " is negative, expected alpha >= 0");
            }
            total += weights[i];
        }
        if (std::abs(total - 1) > 1e-6) {
            throw InputError("--alpha file '" + o.alpha_file + "': weights sum to " +
                             format_double(total) + ", expected 1 within 1e-6");
        }
        if (weights.size() < 2)
            throw InputError("--alpha file '" + o.alpha_file + "': expected at least 2 weights");
        p.alpha = Eigen::Map<const Eigen::VectorXd>(weights.data(),
                                                    static_cast<Eigen::Index>(weights.size()));
    }
    if (p.alpha) {
        if (o.length_given && o.assumption3.L + 1 != p.alpha->size()) {
            throw InputError("--L " + std::to_string(o.assumption3.L) +
                             " disagrees with the weights file, which has n = " +
                             std::to_string(p.alpha->size()) + " (L = n - 1)");
        }
        p.profile.L = static_cast<int>(p.alpha->size()) - 1;
    }
    const int n = token_count(p);
    if (!o.norms_file.empty()) {
        const auto norms = read_numeric_column(o.norms_file, "--norms file");
        if (static_cast<int>(norms.size()) != n) {
            throw InputError("--norms file '" + o.norms_file + "': has " +
                             std::to_string(norms.size()) +
                             " values, expected n = " + std::to_string(n));
        }
        for (std::size_t i = 0; i < norms.size(); ++i) {
            if (norms[i] < 0)
                throw InputError("--norms file '" + o.norms_file + "': norm " + std::to_string(i) +
                                 " is negative");
        }
        p.norms = Eigen::Map<const Eigen::VectorXd>(norms.data(), n);
    }
    if (!o.cos_file.empty()) {
        const NumericTable table = read_numeric_table(o.cos_file, "--cos file");
        if (static_cast<int>(table.rows.size()) != n || static_cast<int>(table.columns()) != n) {
            throw InputError("--cos file '" + o.cos_file + "': is " +
                             std::to_string(table.rows.size()) + "x" +
                             std::to_string(table.columns()) + ", expected " + std::to_string(n) +
                             "x" + std::to_string(n));
        }
        Eigen::MatrixXd cosine(n, n);
        for (int j = 0; j < n; ++j)
            for (int k = 0; k < n; ++k)
                cosine(j, k) = table.rows[j][k];
        try {
            validate_cosine_matrix(cosine, "--cos file");
        } catch (const std::domain_error& e) {
            throw InputError(std::string(e.what()) + " ('" + o.cos_file + "')");
        }
        p.cosine = std::move(cosine);
    }
    return p;
}

nlohmann::json to_json(const ModelSource& o) {
    return {{"preset", o.preset},
            {"profile", o.profile},
            {"L", o.assumption3.L},
            {"p_sink", o.assumption3.p_sink},
            {"T1", o.assumption3.T1},
            {"T2", o.assumption3.T2},
            {"eta", o.assumption3.eta},
            {"omega", o.assumption3.omega},
            {"C", o.C},
            {"lambda", o.lambda},
            {"beta", o.beta},
            {"rho0", o.rho0},
            {"alpha_file", o.alpha_file},
            {"norms_file", o.norms_file},
            {"cos_file", o.cos_file},
            {"L_given", o.length_given}};
}

ModelSource model_source_from_json(const nlohmann::json& j) {
    ModelSource o;
    o.preset = j.at("preset").get<std::string>();
    o.profile = j.at("profile").get<std::string>();
    o.assumption3.L = json_integer<int>(j.at("L"));
    o.assumption3.p_sink = j.at("p_sink").get<double>();
    o.assumption3.T1 = json_integer<int>(j.at("T1"));
    o.assumption3.T2 = json_integer<int>(j.at("T2"));
    o.assumption3.eta = j.at("eta").get<double>();
    o.assumption3.omega = j.at("omega").get<double>();
    o.C = j.at("C").get<double>();
    o.lambda = j.at("lambda").get<double>();
    o.beta = j.at("beta").get<double>();
    o.rho0 = j.at("rho0").get<double>();
    o.alpha_file = j.at("alpha_file").get<std::string>();
    o.norms_file = j.at("norms_file").get<std::string>();
    o.cos_file = j.at("cos_file").get<std::string>();
    o.length_given = j.at("L_given").get<bool>();
    return o;
}

}  // namespace attngeo::theory
