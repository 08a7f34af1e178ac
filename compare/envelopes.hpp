// Envelopes of Theorems 1–2 against measured heads (docs/design.md §5, §7; Figure 5): per head a
// HeadModel built from the measured α, norms and cosines, the κ scan and verdict per variant
// over all (head, N) points, agreement global and per layer, and the largest violations.
#pragma once
#include <cstdint>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "compare/kappa_scan.hpp"
#include "theory/bounds.hpp"

namespace attngeo::compare {

// One measured head: the inputs of its envelope and the means it is compared with.
struct HeadInput {
    int layer = 0, head = 0;
    std::vector<double> alpha;       // [n] mean α by position, renormalised to sum 1 (0 = sink)
    std::vector<double> norms;       // [n] mean ‖v_i‖ by position
    double beta = 0;                 // fitted decay of the cosines, ρ_jk = e^{−β|j−k|}
    double rho0 = 0;                 // measured mean cosine between the sink and other tokens
    std::vector<double> cos_by_lag;  // [K] measured mean cosine at lag 1..K
    std::vector<int> sizes;          // [S] the N grid (shared by all heads)
    std::vector<double> P_mean, R_mean;  // [S] measured means over documents
    // [S] standard errors over documents, or empty / NaN where undefined (one document): the
    // points then have no interval and the mean itself is checked.
    std::vector<double> P_se, R_se;
    std::int64_t documents = 0;
    // The head's fitted Assumption-3 profile, for the Table-2 regime of each N; NaN: none.
    double profile_p_base = std::numeric_limits<double>::quiet_NaN();
    double profile_eta = std::numeric_limits<double>::quiet_NaN();
};

enum class CosineSource { parametric, plug_in };
// "parametric" | "plug-in"; anything else is an InputError naming --cosines.
CosineSource parse_cosine_source(const std::string& text);
const char* to_string(CosineSource source);

struct EnvelopeSettings {
    double d = 128;  // head dimension
    CosineSource cosines = CosineSource::parametric;
    std::optional<double> kappa;  // given κ for every variant; the interval-score κ when empty
    int threads = 1;              // OpenMP threads over heads (results do not depend on it)
    // Called serially after each evaluation of every head's bounds at one κ, with the count so
    // far and kEvaluationsPerVariant · variants as the total (an upper bound: the refinement
    // often needs fewer); for progress lines. Empty: nothing is reported.
    std::function<void(std::int64_t done, std::int64_t total)> on_evaluation;
};

// Bound evaluations of one variant at most: the coarse κ grid, the refinement around five
// centres, the star envelopes of four sides and the rows at the chosen κ.
constexpr std::int64_t kEvaluationsPerVariant = 65 + 5 * 20 + 4 + 1;

// The HeadModel of one head: α and norms as given; cosines per `source`. Parametric:
// ρ_jk = e^{−β|j−k|} for j, k ≥ 1; plug-in: ρ_jk = cos_by_lag[|j−k|−1], lags beyond K take
// the value at K. Both: ρ_0j = ρ_j0 = ρ0, unit diagonal. Measured cosines are clamped to
// [−1, 1] (evaluate_envelopes rejects those more than 1e-6 outside).
theory::HeadModel head_model(const HeadInput& head, CosineSource source);

// One metric point outside its envelope.
struct Violation {
    int layer = 0, head = 0, N = 0;
    std::string metric;  // "P" | "R"
    double value = 0, lower = 0, upper = 0;
    double excess = 0;  // distance outside [lower, upper], > 1e-12
};

// Agreement of one scope (global: layer = −1; or one layer).
struct AgreementRow {
    int layer = -1;
    int points = 0, inside = 0;  // points = (heads in scope)·|sizes|·2
    double fraction = 0;
    double worst_excess = 0;  // largest distance outside; 0 when every point is inside
};

// One variant over all heads, at its κ.
struct VariantResult {
    theory::BoundVariant variant = theory::BoundVariant::paper;
    double kappa = 1;            // the rows' κ: the interval-score κ, or the given one
    bool kappa_fitted = false;   // false when given or d = ∞
    KappaScan scan;              // points in head order, then N: the scan and the verdict
    double fraction_inside = 0;  // over all (head, N, metric ∈ {P, R}) points, at kappa
    double mean_width = 0;       // mean over those points of upper − lower
    std::vector<std::vector<theory::BoundRow>> rows;    // [heads][S] at κ
    std::vector<std::vector<char>> P_inside, R_inside;  // [heads][S]
    AgreementRow global;
    std::vector<AgreementRow> by_layer;  // ascending layer, layers present only
    std::vector<Violation> violations;   // the 20 largest, excess descending
};

struct EnvelopeResult {
    CosineSource cosines = CosineSource::parametric;
    double d = 128;
    std::vector<int> sizes;        // [S]
    std::vector<int> layer, head;  // [heads] identity of each input head, in order
    std::vector<std::vector<double>> P_mean, R_mean;  // [heads][S] measured, copied from input
    std::vector<std::vector<int>> regime;             // [heads][S] Table-2 regime 1..5, 0: none
    std::vector<VariantResult> variants;              // [3] paper, exact-mean, scale-invariant
};

// Throws InputError for inconsistent inputs (sizes differing between heads, wrong lengths,
// empty cos_by_lag with plug-in) and std::domain_error for invalid d or κ.
EnvelopeResult evaluate_envelopes(const std::vector<HeadInput>& heads,
                                  const EnvelopeSettings& settings);

// bounds.csv, envelope.csv, agreement.csv, violations.csv, kappa_scan.csv, verdict.csv,
// kappa.json in `out_dir`
// (docs/compare-outputs.md).
void write_envelope_files(const EnvelopeResult& result, const std::string& out_dir);

// κ per variant and the decisions taken, for compare's manifest.
nlohmann::json envelope_manifest(const EnvelopeResult& result);

}  // namespace attngeo::compare
