// Envelopes of Theorems 1–2 against measured heads (docs/design.md §5, §7; Figure 5): per model
// and variant the verdict III scan over all (head, N) points, each document's bound from its own
// α (compare/document_bound_sample), several models judged together for a universal κ; the bound
// rows at the rows κ, agreement global and per layer, and the largest excesses.
#pragma once
#include <cstdint>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "compare/falsification.hpp"
#include "compare/fixed_bound_sample.hpp"
#include "theory/bounds.hpp"
#include "theory/assumption_models.hpp"

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
    // The head's fitted Assumption-3 profile, for the Table-2 regime of each N; NaN: none.
    double profile_p_base = std::numeric_limits<double>::quiet_NaN();
    double profile_eta = std::numeric_limits<double>::quiet_NaN();
    // Regime IV's relative tolerance around p_base (theory::fitted_regime_iv_tolerance).
    double profile_iv_tolerance = theory::kExactRegimeIVTolerance;
};

// One model (an extract folder): its heads and the per-document values the test reads.
struct ModelInput {
    std::string name;              // for messages and the universal table
    std::vector<HeadInput> heads;  // [H] layer-major
    int documents = 0;             // U
    // [U, H, n] each document's final-row α by position, per head.
    std::vector<double> alpha;
    // [U, H·S] each document's P(r_max,N) and R(r_min,N), point = head · S + size index.
    UnitValues P, R;
};

enum class CosineSource { parametric, plug_in };
// "parametric" | "plug-in"; anything else is an InputError naming --cosines.
CosineSource parse_cosine_source(const std::string& text);
const char* to_string(CosineSource source);

struct EnvelopeSettings {
    double d = 128;  // head dimension
    CosineSource cosines = CosineSource::parametric;
    std::optional<double> kappa;       // judge this κ alone; the scan's verdict when empty
    int threads = 1;                   // OpenMP threads (results do not depend on it)
    int replicates = kBandReplicates;  // the band's bootstrap replicates
    std::uint64_t seed = 1;            // the resamples' key
    // Called serially after each variant, with the variants done and their count; for progress
    // lines. Empty: nothing is reported.
    std::function<void(std::int64_t done, std::int64_t total)> on_variant;
};

// The HeadModel of one head: α and norms as given; cosines per `source`. Parametric:
// ρ_jk = e^{−β|j−k|} for j, k ≥ 1; plug-in: ρ_jk = cos_by_lag[|j−k|−1], lags beyond K take
// the value at K. Both: ρ_0j = ρ_j0 = ρ0, unit diagonal. Measured cosines are clamped to
// [−1, 1] (evaluate_envelopes rejects those more than 1e-6 outside).
theory::HeadModel head_model(const HeadInput& head, CosineSource source);

// One metric point outside its envelope at the rows κ (the measured mean against the mean of
// the documents' bounds).
struct Violation {
    int layer = 0, head = 0, N = 0;
    std::string metric;  // "P" | "R"
    double value = 0, lower = 0, upper = 0;
    double excess = 0;  // distance outside [lower, upper], > 1e-12
};

// Agreement of one scope (global: layer = −1; or one layer), plain means at the rows κ.
struct AgreementRow {
    int layer = -1;
    int points = 0, inside = 0;  // points = (heads in scope)·(non-convention N)·2
    double fraction = 0;
    double worst_excess = 0;  // largest distance outside; 0 when every point is inside
};

// One variant of one model.
struct VariantResult {
    theory::BoundVariant variant = theory::BoundVariant::paper;
    KappaScan scan;  // points in head order, then N: the verdict
    std::string rows_rule;
    // [heads][S] the bound rows: the mean over documents of each document's bound at the rows
    // κ (or each side at its own judged κ), with Δ, Δ0, B and the flags of the document-mean
    // profile.
    std::vector<std::vector<theory::BoundRow>> rows;
    double fraction_inside = 0;  // plain means inside [lower, upper] over the points
    double mean_width = 0;
    std::vector<std::vector<char>> P_inside, R_inside;  // [heads][S]
    AgreementRow global;
    std::vector<AgreementRow> by_layer;  // ascending layer, layers present only
    std::vector<Violation> violations;   // the 20 largest, excess descending
};

struct EnvelopeResult {
    std::string name;
    CosineSource cosines = CosineSource::parametric;
    double d = 128;
    int band_replicates = kBandReplicates;  // B of the bootstrap bands it was judged with
    std::vector<int> sizes;                 // [S]
    std::vector<int> layer, head;           // [heads] identity of each input head, in order
    std::vector<std::vector<double>> P_mean, R_mean;  // [heads][S] measured, copied from input
    std::vector<std::vector<int>> regime;             // [heads][S] Table-2 regime 1..5, 0: none
    std::vector<VariantResult> variants;              // [4] in bound_variants() order
};

// Every model judged, and per variant the intersection of their κ sets (more than one model).
struct EnvelopeResults {
    std::vector<EnvelopeResult> models;
    std::vector<JointScan> universal;  // [variants], empty with one model
};

// Throws InputError for inconsistent inputs (sizes differing between heads, wrong lengths,
// empty cos_by_lag with plug-in) and std::domain_error for invalid d or κ.
EnvelopeResults evaluate_envelopes(const std::vector<ModelInput>& models,
                                   const EnvelopeSettings& settings);

// bounds.csv, envelope.csv, agreement.csv, violations.csv, kappa_scan.csv, verdict.csv,
// kappa.json of one model in `out_dir` (docs/commands/compare.md). `suffix` names a second
// cosine source's files ("" or "_plug_in": verdict_plug_in.csv, kappa_scan_plug_in.csv only).
void write_envelope_files(const EnvelopeResult& result, const std::string& out_dir);
void write_verdict_files(const EnvelopeResult& result, const std::string& out_dir,
                         const std::string& suffix);

// κ per variant and the decisions taken, for compare's manifest.
nlohmann::json envelope_manifest(const EnvelopeResult& result);
// universal_kappa.csv of several models.
std::string universal_kappa_csv(const EnvelopeResults& results);
nlohmann::json universal_kappa_json(const EnvelopeResults& results);

}  // namespace attngeo::compare
