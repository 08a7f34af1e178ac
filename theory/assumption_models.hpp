// Assumption models of paper §3.1–3.3 (docs/design.md §4): value norms (Assumption 1), cosine decay
// with a sink (Assumption 2), the four-phase attention profile (Assumption 3) and the other
// profiles (uniform, zipf:s, file:PATH), plus the Table-2 regimes they induce.
#pragma once
#include <Eigen/Dense>
#include <string>
#include <vector>

#include "theory/parameter_table.hpp"

namespace attngeo::theory {

// Assumption 3: α_0 = p_sink; for 1 ≤ i ≤ L the shape w_i is 1 (i ≤ T1),
// 1 + η cos(ωi) (T1 < i ≤ T2), e^{η(i−T2)} (i > T2), scaled by p_base so that Σα = 1.
struct Assumption3Profile {
    int L = paper_preset::L;               // last token index; n = L + 1 tokens
    double p_sink = paper_preset::p_sink;  // exact mass of the sink token
    int T1 = paper_preset::T1;             // end of the constant phase
    int T2 = paper_preset::T2;       // end of the oscillatory phase / start of the exponential one
    double eta = paper_preset::eta;  // oscillation amplitude and growth rate
    double omega = paper_preset::omega;  // oscillation frequency (radians per token)
};

// Throws std::domain_error naming `function` unless 0 < p_sink < 1, η ≥ 0 (η < 1 when
// T1 < T2), 0 ≤ T1 ≤ T2 ≤ L, L ≥ 1 and ω finite.
void validate_assumption3(const Assumption3Profile& profile, const char* function);
// Unnormalised shape w_i for 1 ≤ i ≤ L.
double assumption3_shape(const Assumption3Profile& profile, int i);
// p_base = (1 − p_sink) / Σ_{i=1..L} w_i.
double assumption3_p_base(const Assumption3Profile& profile);
// α_0..α_L.                                                                       [n]
Eigen::VectorXd assumption3_weights(const Assumption3Profile& profile);

// α_i = 1/n for every token (the sink included).                                  [n]
Eigen::VectorXd uniform_weights(int L);
// α_i ∝ (i + 1)^{−s}: the sink first, then a power-law decay with position; s ≥ 0.  [n]
Eigen::VectorXd zipf_weights(int L, double exponent);
// Checks finite, ≥ 0, positive total; returns w / Σw.                             [n]
Eigen::VectorXd normalized_weights(const std::vector<double>& weights, const char* function);

// The profile named on the command line: assumption3 | uniform | zipf:s | file:PATH.
struct ProfileSpec {
    enum class Kind { assumption3, uniform, zipf, file } kind = Kind::assumption3;
    double zipf_exponent = 1.0;
    std::string path;  // for file:PATH
};
ProfileSpec parse_profile_spec(const std::string& text);
std::string to_string(const ProfileSpec& spec);

// Assumption 1: ‖v_0‖ = λC, ‖v_i‖ = C for i ≥ 1; C > 0, 0 < λ < 1.                 [n]
Eigen::VectorXd assumption1_norms(int L, double C, double lambda);

// Assumption 2: ρ_jk = e^{−β|j−k|} for j,k ≥ 1, ρ_0k = ρ0 (k ≥ 1), unit diagonal;
// β > 0, |ρ0| ≤ 1.                                                                [n, n]
Eigen::MatrixXd exponential_cosine_matrix(int L, double beta, double rho0);
// Checks square, finite, symmetric and unit diagonal within 1e-9, |ρ| ≤ 1 + 1e-9.
void validate_cosine_matrix(const Eigen::MatrixXd& cosine, const char* function);

// Table 2 regimes (docs/design.md §3) for a profile with the phases of Assumption 3.
enum class Regime { I, II, III, IV, V };
const char* to_string(Regime regime);
// Regime of every N = 1..n given α, p_base and η: with α_(N) the N-th largest weight,
// I: N = 1 and the sink on top; II: α_(N) > p_base(1+η); III: p_base < α_(N) ≤ p_base(1+η);
// IV: |α_(N) − p_base| ≤ iv_tolerance · p_base; V: α_(N) < p_base.                  [n]
// The default tolerance suits an exact profile (simulate); a profile fitted to a real head
// needs the fit's own (kFittedRegimeIVTolerance), since no measured α equals p_base.
inline constexpr double kExactRegimeIVTolerance = 1e-12;
std::vector<Regime> regimes_by_size(const Eigen::VectorXd& alpha, double p_base, double eta,
                                    double iv_tolerance = kExactRegimeIVTolerance);
// Regime IV's relative tolerance for a fitted profile (docs/design.md §3): the fit's own
// residual scale, exp(rmse of log α) − 1, capped at η/2 so that regime III keeps the upper half
// of its band; never below the exact tolerance. std::domain_error for η < 0 or rmse < 0.
double fitted_regime_iv_tolerance(double eta, double rmse_log);
// m1, m2, m3: the first N of regimes III, IV and V (0 when the regime never occurs).
struct RegimeBoundaries {
    int m1 = 0, m2 = 0, m3 = 0;
};
RegimeBoundaries regime_boundaries(const std::vector<Regime>& regimes);

}  // namespace attngeo::theory
