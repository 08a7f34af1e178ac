// The parametric head of Assumptions 1–3 as the command line describes it (docs/design.md §4), with
// the paper preset, optional explicit α / norms / cosines, and the Table-1 sensitivities
// d(bound)/d(log parameter) by central differences.
#pragma once
#include <Eigen/Dense>
#include <optional>
#include <string>
#include <vector>

#include "theory/bounds.hpp"
#include "theory/assumption_models.hpp"

namespace attngeo::theory {

struct ModelParameters {
    Assumption3Profile profile;            // L, p_sink, T1, T2, η, ω (defaults: the paper preset)
    ProfileSpec profile_kind;              // assumption3 (default), uniform, zipf:s, file:PATH
    double C = paper_preset::C;            // Assumption 1: ‖v_i‖ = C
    double lambda = paper_preset::lambda;  // Assumption 1: ‖v_0‖ = λC
    double beta = paper_preset::beta;      // Assumption 2: ρ_jk = e^{−β|j−k|}
    double rho0 = paper_preset::rho0;      // Assumption 2: ρ_0k = ρ0
    std::optional<Eigen::VectorXd> alpha;  // [n] explicit weights (replaces the profile)
    std::optional<Eigen::VectorXd> norms;  // [n] explicit norms (replaces C, λ)
    std::optional<Eigen::MatrixXd> cosine;  // [n, n] explicit cosines (replaces β, ρ0)
};

// n = L + 1, or the length of the explicit α.
int token_count(const ModelParameters& params);
// α, norms and cosines of the described head; throws std::domain_error on invalid values.
HeadModel build_head_model(const ModelParameters& params);
// p_base and η when the weights follow Assumption 3 (needed for Table-2 regimes).
struct PhaseParameters {
    double p_base = 0, eta = 0;
};
std::optional<PhaseParameters> phase_parameters(const ModelParameters& params);

// d(bound)/d(log x) for each bound column at each N, by central differences (multiplicative
// step e^{±1e-4} for real parameters, ±1 for the integers L, T1, T2, one-sided at the edge of
// the valid range); ρ0 can be ≤ 0, so it gets the plain derivative d(bound)/dρ0.
struct SensitivityRow {
    int N = 0;
    std::string
        parameter;  // d, kappa, L, C, lambda, beta, rho0, p_sink, T1, T2, eta, omega, zipf_s
    double precision_lower = 0, precision_upper = 0, recall_lower = 0, recall_upper = 0;
    double fmax_lower = 0, fmax_upper = 0, fmin_lower = 0, fmin_upper = 0;
};
std::vector<SensitivityRow> bound_sensitivities(const ModelParameters& params,
                                                const std::vector<int>& sizes,
                                                const BoundSettings& settings);

}  // namespace attngeo::theory
