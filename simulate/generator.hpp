// Synthetic value states under Assumptions 1–2 (docs/design.md §4): Gaussian directions with
// exactly the covariance K_ij·I/d (AR(1) for tokens 1..L, the sink from K⁻¹1), normalised and
// scaled to the Assumption-1 norms. O(n·d) per trial.
#pragma once
#include <Eigen/Dense>
#include <optional>
#include <string>
#include <vector>

#include "simulate/rng.hpp"
#include "theory/cosine_geometry.hpp"
#include "theory/metrics.hpp"

namespace attngeo::simulate {

// How the sink's correlation ρ0 is realised.
//  exact:   g_0 = wᵀg + τz with w = ρ0 K⁻¹1 (Cov(g_0, g_j) = ρ0 exactly); needs τ² ≥ 0.
//  project: g_i ← ρ0 g_0 + √(1−ρ0²) g_i for i ≥ 1, which changes K_ij to ρ0² + (1−ρ0²)r^{|i−j|}.
enum class SinkMode { exact, project };
inline constexpr FlagChoice<SinkMode> kSinkModeChoices[] = {{"exact", SinkMode::exact},
                                                            {"project", SinkMode::project}};
// The mode `text` names; InputError "SOURCE: 'TEXT', expected exact or project" otherwise.
SinkMode parse_sink_mode(const std::string& text, const std::string& source = "--sink-mode");
const char* to_string(SinkMode mode);

using theory::kms_inverse_sum;
using theory::max_feasible_rho0;

struct GeneratorSettings {
    int d = 128;         // value dimension
    double beta = 0.05;  // cosine decay, r = e^{−β}
    double rho0 = 0;     // sink cosine
    SinkMode sink_mode = SinkMode::exact;
    Eigen::VectorXd norms;  // [n] nominal norms ‖v_i‖ (Assumption 1 or explicit)
    double norm_cv = 0;     // CV of multiplicative log-normal norm noise (0 = none)
    std::optional<Eigen::MatrixXd> cosine;  // [n, n] explicit K (replaces β, ρ0; Cholesky path)
};

// Draws value vectors for one trial. Thread-safe (const) once constructed.
class ValueGenerator {
  public:
    // Validates the settings; an infeasible (β, ρ0, L) throws std::domain_error with the
    // largest feasible |ρ0| in the message.
    explicit ValueGenerator(GeneratorSettings settings);

    int tokens() const { return n_; }
    int dimension() const { return settings_.d; }

    // The Gaussian directions g_i (rows, Cov = K_ij·I/d).                     [n, d]
    void draw_directions(RandomStream& stream, theory::RowMatrix& directions) const;
    // v_i = ‖v_i‖ g_i/‖g_i‖, with the norm noise if any.                       [n, d]
    void draw_values(RandomStream& stream, theory::RowMatrix& values) const;
    // The ranked contributions of a fixed ranking: row position[i] of `ranked` is α_i·v_i, the
    // same bits as draw_values followed by that copy, but without the copy when the rows can be
    // written in place (AR(1) without norm noise). `scratch` holds the values otherwise.
    void draw_ranked_contributions(RandomStream& stream, const std::vector<int>& position,
                                   const Eigen::VectorXd& alpha,
                                   theory::RowMatrix& ranked,  // [n, d]
                                   theory::RowMatrix& scratch) const;

  private:
    void draw_cholesky_directions(RandomStream& stream, theory::RowMatrix& directions) const;
    // The AR(1) directions in one pass over the rows; `normalised` also applies the norms.
    // With `position`, token i goes to row position[i]; with `alpha`, each finished row is
    // multiplied by α_i (only when the rows are normalised one at a time, or not at all).
    void draw_ar1(RandomStream& stream, theory::RowMatrix& g, bool normalised,
                  const std::vector<int>* position, const Eigen::VectorXd* alpha) const;
    static void scale_row(double* row, double alpha, int d);
    void normalise(RandomStream& stream, theory::RowMatrix& values) const;

    GeneratorSettings settings_;
    int n_;
    double r_ = 0, innovation_ = 0;  // AR(1): g_i = r g_{i−1} + √(1−r²) ε_i
    Eigen::VectorXd sink_weights_;   // [n] w = ρ0 K⁻¹1 over tokens 1..L (entry 0 unused)
    double sink_noise_ = 0;          // τ
    Eigen::MatrixXd cholesky_;       // [n, n] lower factor of the explicit K
    double log_sigma_ = 0;           // σ of log-normal noise with CV = norm_cv
};

}  // namespace attngeo::simulate
