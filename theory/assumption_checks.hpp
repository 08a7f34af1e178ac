// Whether the paper's Assumptions 1–3 hold where they are applied (docs/design.md §7 "Assumption
// checks"): the per-head decisions and their summary, shared by compare (fitted heads) and
// simulate (what the generator realised) so both write the same "assumptions" block.
#pragma once
#include <nlohmann/json.hpp>
#include <vector>

namespace attngeo::theory {

inline constexpr double kMaxNormCv = 0.05;    // A1: norms stable to 5 % (coefficient of variation)
inline constexpr double kMinDecayGain = 0.2;  // A2: e^{−βk} beats both baselines' MAE by 20 %
inline constexpr double kMinProfileR2 = 0.9;  // A3: R² of the profile on log α

// A2's comparison: the model curve's MAE next to the best constant's and β = ∞'s (predicting 0).
struct DecayBaselines {
    double mae_model = 0;       // mean_k |c(k) − model(k)|
    double mae_constant = 0;    // mean_k |c(k) − median c|: the constant with the least MAE
    double mae_zero = 0;        // mean_k |c(k)|
    double negative_share = 0;  // share of lags with c(k) < 0
    // The model does not beat both baselines by kMinDecayGain: mae_model > 0.8·min(baselines),
    // or both baselines are 0 (nothing to explain).
    bool uninformative = true;
};

// cosines [K] the measured c(k), model [K] the curve under test (e^{−βk}); K ≥ 1, all finite.
// std::domain_error naming the function otherwise.
DecayBaselines decay_baselines(const std::vector<double>& cosines,
                               const std::vector<double>& model);

// The inputs of one head's checks.
struct AssumptionInputs {
    double lambda = 0;       // ‖v_0‖ / median_{i≥1} ‖v_i‖
    double cv = 0;           // coefficient of variation of ‖v_i‖, i ≥ 1
    bool has_decay = false;  // false: no cosine model to check (A2 fails)
    DecayBaselines decay;
    bool has_profile = false;  // false: no profile (A3 fails)
    double p_sink = 0, p_base = 0, r2_log = 0;
    bool profile_identified = false;  // no fitted profile parameter at a clamp or unidentified
    double sink_mass = 0;             // mean α_0
};

// One head's verdicts.
struct AssumptionCheck {
    AssumptionInputs inputs;
    bool compressed_sink = false;  // A1: 0 < λ < 1
    bool stable_norms = false;     // A1: cv ≤ kMaxNormCv
    bool a1 = false;
    bool beta_uninformative = true;  // A2: see DecayBaselines
    bool a2 = false;
    bool sink_exists = false;    // A3: p_sink > p_base
    bool profile_r2_ok = false;  // A3: r2_log ≥ kMinProfileR2
    bool a3 = false;             // sink_exists, profile_r2_ok and profile_identified
};

AssumptionCheck check_assumptions(const AssumptionInputs& inputs);

// The summary block {"heads", "A1_holds", "compressed_sink", "stable_norms", "A2_holds",
// "beta_uninformative", "A3_holds", "sink_exists", "profile_r2_ok", "profile_identified",
// "median_sink_mass"}: counts of heads, and the median of inputs.sink_mass (null without heads).
nlohmann::json assumptions_summary(const std::vector<AssumptionCheck>& checks);

}  // namespace attngeo::theory
