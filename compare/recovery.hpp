// Planted-parameter recovery (docs/design.md §7): compare's fits of a planted extract folder
// (`attngeo simulate --as-extract`) set against the truth in its planted.csv, head by head, with
// the share of fit intervals that cover the truth. It reads compare's own fits.csv and
// profile.csv, so interval columns `<name>_lo`, `<name>_hi` are used wherever those tables have
// them.
#pragma once
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/csv.hpp"

namespace attngeo::compare {

// One planted head: its parameters by name (planted.csv's columns besides layer and head).
struct PlantedTruth {
    int layer = 0, head = 0;
    std::map<std::string, double> values;
};

// The parameters recovery reports, in order: beta, beta_offset, c_inf, lambda, C, rho0 (fitted
// in fits.csv) and p_sink, p_base, eta, omega, T1, T2 (profile.csv). A planted head's truth for
// beta_offset is its beta and for c_inf 0 (no floor under Assumption 2) unless planted.csv
// gives them.
const std::vector<std::string>& recovered_parameters();

// Reads planted.csv (written by simulate --as-extract, or by hand): columns layer and head, at
// least one column named like a recovered parameter, finite numbers, each (layer, head) within
// the extract's `layers` × `heads` and at most once. Extra columns are kept but not reported.
// InputError naming the file (line and column) otherwise.
std::vector<PlantedTruth> read_planted_truth(const std::string& path, int layers, int heads);

// One (head, parameter) of recovery.csv. Empty optionals are empty fields.
struct RecoveryRow {
    int layer = 0, head = 0;
    std::string parameter;
    double planted = 0;
    // What the pipeline can recover: the planted value, or for β and ρ0 what the generator
    // realises at the planted d (realised_truth); covered and the errors are against it.
    double truth = 0;
    std::optional<double> fitted;  // empty where the fit failed (profile.csv fit_failed)
    std::optional<double> lo, hi;  // the fit's interval, where the table has one
    // The interval has zero width (1e-6 relative, the float32 slack of `covered`) because
    // nothing the fit rests on varies between documents (no noise): every replicate gave the
    // same value. For η, ω, T1, T2 p_base's interval must have zero width too (an integer T1
    // or T2 can repeat in every replicate under noise). Not counted in coverage. Empty without
    // an interval.
    std::optional<bool> exact;
    std::optional<bool> covered;  // lo <= truth <= hi (ends widened by 1e-6 relative); empty
                                  // without an interval or when exact
    bool flagged = false;         // the fit is marked doubtful in compare's own tables
};

// Per parameter over the planted heads (recovery_coverage.csv).
struct RecoveryCoverage {
    std::string parameter;
    int heads = 0, fitted = 0;
    int with_interval = 0;  // heads with an interval of positive width
    int exact = 0;          // heads whose interval has zero width (RecoveryRow::exact)
    int covered = 0;        // of with_interval
    int flagged = 0;
    // The calibration rule's share (docs/design.md §7, "Fit intervals calibrated under noise"):
    // over the heads with a positive-width interval whose fit is not flagged.
    int unflagged = 0, unflagged_covered = 0;
    std::optional<double> coverage;            // covered / with_interval; empty when 0
    std::optional<double> unflagged_coverage;  // unflagged_covered / unflagged; empty when 0
    std::optional<double> median_abs_error, max_abs_error;  // |fitted − truth|
};

// The rows for every planted head and recovered parameter present in planted.csv. `fits` and
// `profile` are compare's fits.csv and profile.csv (rows matched by layer and head). flagged:
// for beta its beta_at_bound, for beta_offset and c_inf beta_offset_at_bound, for p_sink (α_0
// itself, whatever the shape) fit_failed or p_sink_at_bound, for the other profile parameters
// fit_failed, at_bound or r2_log < kProfileR2Threshold; and the parameter named in the table's
// `unidentified` list (';'-separated), a `<name>_unidentified` column set to 1, or (beta)
// `beta_uninformative` set to 1.
// `lags` is K of compare's decay fits (realised_truth).
std::vector<RecoveryRow> recovery_rows(const std::vector<PlantedTruth>& truth, const CsvTable& fits,
                                       const CsvTable& profile, int lags);

// The value compare can recover of a planted parameter. The generator draws Gaussian
// directions with Cov(g_i, g_j) = r^{|i−j|}·I/d and normalises them, so E cos(v_i, v_j) is
// c_d(r^{|i−j|}) = theory::expected_normalized_cosine, slightly below r^{|i−j|} at finite d:
// for β the least-squares decay rate of c_d(e^{−βk}) over k = 1..lags (as compare fits the
// measured cosines), for β_offset and c∞ the offset model's fit to the same curve, for ρ0
// c_d(ρ0); every other parameter (and any without d in planted.csv, or lags < 1) is its
// planted value.
double realised_truth(const std::string& parameter, double planted, const PlantedTruth& head,
                      int lags);

// R² of log α below which a profile fit is not reported as good (docs/design.md §7's A3 check).
inline constexpr double kProfileR2Threshold = 0.9;

std::vector<RecoveryCoverage> recovery_coverage(const std::vector<RecoveryRow>& rows);
std::string recovery_csv(const std::vector<RecoveryRow>& rows);
std::string recovery_coverage_csv(const std::vector<RecoveryCoverage>& coverage);
// The manifest's "recovery" block: the truth file, the rule for covered and flagged, and the
// coverage per parameter.
nlohmann::json recovery_manifest(const std::string& truth_path,
                                 const std::vector<RecoveryCoverage>& coverage);

}  // namespace attngeo::compare
