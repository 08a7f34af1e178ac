// Shared head-model flags; see model_options.hpp.
#include "app/model_options.hpp"

#include <cmath>

#include "common/csv.hpp"
#include "common/errors.hpp"

namespace attngeo::cli {

void add_model_options(CLI::App& app, ModelOptions& o) {
    auto& p = o.params;
    app.add_option("--preset", o.preset, "Parameter preset; every value below defaults to it")
        ->check(CLI::IsMember({"paper"}))
        ->capture_default_str();
    app.add_option("--profile", o.profile,
                   "Attention profile: assumption3 | uniform | zipf:s | file:PATH (one weight per line, normalised)")
        ->capture_default_str();
    app.add_option("--L", p.profile.L, "Index of the last token; n = L + 1 tokens")->capture_default_str();
    app.add_option("--p-sink", p.profile.p_sink, "Assumption 3: attention mass of the sink token")->capture_default_str();
    app.add_option("--T1", p.profile.T1, "Assumption 3: end of the constant phase")->capture_default_str();
    app.add_option("--T2", p.profile.T2, "Assumption 3: end of the oscillatory phase")->capture_default_str();
    app.add_option("--eta", p.profile.eta, "Assumption 3: oscillation amplitude and recency growth rate")->capture_default_str();
    app.add_option("--omega", p.profile.omega, "Assumption 3: oscillation frequency")->capture_default_str();
    app.add_option("--C", p.C, "Assumption 1: value norm of non-sink tokens")->capture_default_str();
    app.add_option("--lambda", p.lambda, "Assumption 1: sink norm ratio, 0 < lambda < 1")->capture_default_str();
    app.add_option("--beta", p.beta, "Assumption 2: cosine decay rate, cos = exp(-beta |i-j|)")->capture_default_str();
    app.add_option("--rho0", p.rho0, "Assumption 2: cosine between the sink and every other token")->capture_default_str();
    app.add_option("--alpha", o.alpha_file, "File of n attention weights (one per line, sum 1); replaces the profile");
    app.add_option("--norms", o.norms_file, "File of n value norms (one per line); replaces --C/--lambda");
    app.add_option("--cos", o.cos_file, "File with the n x n cosine matrix (CSV); replaces --beta/--rho0");
    app.add_option("--d", o.d, "Value dimension d (LLaMA-2-7B head size)")->capture_default_str();
    app.add_option("--kappa", o.kappa, "Concentration constant kappa of eq. (31) (the paper gives none)")->capture_default_str();
    app.add_option("--variant", o.variant, "Bound variant")
        ->check(CLI::IsMember({"paper", "exact-mean", "scale-invariant"}))
        ->capture_default_str();
    app.add_option("--rank", o.rank, "Top-N ranking: attn (alpha_i) or contrib (alpha_i |v_i|)")
        ->check(CLI::IsMember({"attn", "contrib"}))
        ->capture_default_str();
    app.add_option("--N", o.sizes, "Selection sizes: all | pow2 | list like 1,2,4 or 1:16")->capture_default_str();
}

std::vector<std::string> ModelOptions::explicit_flags(const CLI::App& app) const {
    std::vector<std::string> names;
    for (const CLI::Option* opt : app.get_options()) {
        if (opt->count() > 0) names.push_back(opt->get_name());
    }
    return names;
}

void resolve_model_options(ModelOptions& o) {
    auto& p = o.params;
    try {
        p.profile_kind = theory::parse_profile_spec(o.profile);
    } catch (const std::domain_error& e) {
        throw InputError("--profile: '" + o.profile + "': expected assumption3, uniform, zipf:s or file:PATH");
    }
    if (p.profile_kind.kind == theory::ProfileSpec::Kind::file) {
        const auto weights = read_numeric_column(p.profile_kind.path, "--profile file");
        try {
            p.alpha = theory::normalized_weights(weights, "--profile file");
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
                throw InputError("--alpha file '" + o.alpha_file + "': weight " + std::to_string(i) +
                                 " is negative, expected alpha >= 0");
            }
            total += weights[i];
        }
        if (std::abs(total - 1) > 1e-6) {
            throw InputError("--alpha file '" + o.alpha_file + "': weights sum to " + std::to_string(total) +
                             ", expected 1 within 1e-6");
        }
        if (weights.size() < 2) throw InputError("--alpha file '" + o.alpha_file + "': expected at least 2 weights");
        p.alpha = Eigen::Map<const Eigen::VectorXd>(weights.data(), static_cast<Eigen::Index>(weights.size()));
    }
    if (p.alpha) p.profile.L = static_cast<int>(p.alpha->size()) - 1;
    const int n = theory::token_count(p);
    if (!o.norms_file.empty()) {
        const auto norms = read_numeric_column(o.norms_file, "--norms file");
        if (static_cast<int>(norms.size()) != n) {
            throw InputError("--norms file '" + o.norms_file + "': has " + std::to_string(norms.size()) +
                             " values, expected n = " + std::to_string(n));
        }
        for (std::size_t i = 0; i < norms.size(); ++i) {
            if (norms[i] < 0) throw InputError("--norms file '" + o.norms_file + "': norm " + std::to_string(i) + " is negative");
        }
        p.norms = Eigen::Map<const Eigen::VectorXd>(norms.data(), n);
    }
    if (!o.cos_file.empty()) {
        const NumericTable table = read_numeric_table(o.cos_file, "--cos file");
        if (static_cast<int>(table.rows.size()) != n || static_cast<int>(table.columns()) != n) {
            throw InputError("--cos file '" + o.cos_file + "': is " + std::to_string(table.rows.size()) + "x" +
                             std::to_string(table.columns()) + ", expected " + std::to_string(n) + "x" +
                             std::to_string(n));
        }
        Eigen::MatrixXd cosine(n, n);
        for (int j = 0; j < n; ++j)
            for (int k = 0; k < n; ++k) cosine(j, k) = table.rows[j][k];
        try {
            theory::validate_cosine_matrix(cosine, "--cos file");
        } catch (const std::domain_error& e) {
            throw InputError(std::string(e.what()) + " ('" + o.cos_file + "')");
        }
        p.cosine = std::move(cosine);
    }
}

}  // namespace attngeo::cli
