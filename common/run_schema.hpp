// The run folders attngeo writes are its API: this file names every kind of folder, every file
// in one and the format version their manifests carry, so writers and readers (every command,
// the report, Python's read_run) agree on one spelling (docs/design.md §1, docs/*-outputs.md).
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace attngeo::schema {

// The layout of every folder kind this attngeo writes. Bump it when any file's columns, any
// manifest key a reader needs, or any file's meaning changes; readers refuse other versions
// instead of guessing from columns.
inline constexpr int kFormatVersion = 4;
inline constexpr const char* kFormatVersionKey = "format_version";

// The manifest's "kind" of each folder.
namespace kind {
inline constexpr const char* simulate = "simulate";
inline constexpr const char* sweep = "sweep";
inline constexpr const char* extract = "extract";
inline constexpr const char* compare = "compare";
// compare with several --emp: one compare folder per model and their universal κ
inline constexpr const char* compare_set = "compare-set";
inline constexpr const char* report_files = "report-files";
inline constexpr const char* truncate = "truncate";
inline constexpr const char* normalization = "normalization";
}  // namespace kind

// Files of the folders (docs/commands/simulate.md, docs/commands/extract.md,
// docs/commands/compare.md).
namespace file {
// every folder
inline constexpr const char* manifest = "manifest.json";
// simulate and sweep
inline constexpr const char* simulate_estimates = "simulate.csv";
inline constexpr const char* sweep_estimates = "sweep.csv";
inline constexpr const char* monte_carlo_sums = "sums.csv";
// K_in and K_out per trial and N (int32 [T, S] per grid point): the per-unit values of the
// verdict's simultaneous band, concatenated in trial order by merge (docs/commands/simulate.md)
inline constexpr const char* trial_counts = "per_trial.safetensors";
inline constexpr const char* table1 = "table1.csv";
// simulate --calibrate R: the verdict judged on planted true and false bounds
inline constexpr const char* calibration = "calibration.csv";
// an interrupted run of any command keeps its resumable state in OUT/.partial/ (simulate and
// sweep: sums.csv and per_trial.safetensors so far and run.json, the configuration they belong
// to)
inline constexpr const char* resume_state_folder = ".partial";
inline constexpr const char* resume_config = "run.json";
// simulate, sweep and compare
inline constexpr const char* bounds = "bounds.csv";
inline constexpr const char* kappa_scan = "kappa_scan.csv";
inline constexpr const char* verdict = "verdict.csv";
// extract
inline constexpr const char* heads = "heads.csv";
inline constexpr const char* precision_recall = "pr.csv";
inline constexpr const char* by_position = "by_position.csv";
inline constexpr const char* cos_by_lag = "cos_by_lag.csv";
inline constexpr const char* diagnostics = "diag.csv";
inline constexpr const char* snapshot_table = "snapshot.csv";
inline constexpr const char* snapshot_scalars = "snapshot.json";
inline constexpr const char* contributions = "contributions.csv";
inline constexpr const char* per_document = "per_doc.safetensors";
inline constexpr const char* exact_state = "sums.safetensors";
inline constexpr const char* planted_truth = "planted.csv";
// extract with --queries other than last (docs/design.md §14): statistics by context length
inline constexpr const char* by_length = "by_length.csv";
inline constexpr const char* heads_by_length = "heads_by_length.csv";
// extract: the attention sink as the literature measures it (docs/design.md §15)
inline constexpr const char* sink_heads = "sinks.csv";
inline constexpr const char* sink_layers = "sink_layers.csv";
inline constexpr const char* secondary_sinks = "secondary_sinks.csv";
// truncate (docs/commands/truncate.md; per_doc.safetensors and an extract/ subfolder too)
inline constexpr const char* truncation = "truncate.csv";
inline constexpr const char* effective_size = "effective_size.csv";
inline constexpr const char* geometry_link = "geometry_link.csv";
inline constexpr const char* head_link = "head_link.csv";
inline constexpr const char* link_summary = "link_summary.json";
inline constexpr const char* windows = "windows.txt";
inline constexpr const char* geometry_extract = "extract";
// normalization (docs/commands/normalization.md): the predecessor paper's measurements
inline constexpr const char* selection_distance = "distance.csv";
inline constexpr const char* separability = "separability.csv";
inline constexpr const char* sensitivity = "sensitivity.csv";
inline constexpr const char* critical_n = "critical_n.csv";
inline constexpr const char* critical_n_by_length = "critical_n_by_length.csv";
// compare
inline constexpr const char* fits = "fits.csv";
inline constexpr const char* profile = "profile.csv";
inline constexpr const char* profile_global = "profile_global.csv";
inline constexpr const char* assumptions = "assumptions.csv";
inline constexpr const char* envelope = "envelope.csv";
inline constexpr const char* agreement = "agreement.csv";
inline constexpr const char* violations = "violations.csv";
inline constexpr const char* kappa = "kappa.json";
inline constexpr const char* corr_rho0 = "corr_rho0.csv";
// compare: the literature's sink measures against R(r_min, N), λ and ρ0 (docs/design.md §15)
inline constexpr const char* sink_relations = "sink_relations.csv";
// compare, simulate and truncate: the paper's claims answered (docs/design.md §7).
inline constexpr const char* claims = "claims.csv";
inline constexpr const char* regimes = "regimes.csv";
inline constexpr const char* regime_counts = "regime_counts.csv";
inline constexpr const char* pr_by_regime = "pr_by_regime.csv";
inline constexpr const char* contrib_by_regime = "contrib_by_regime.csv";
inline constexpr const char* fitted_params = "fitted_params.json";
inline constexpr const char* recovery = "recovery.csv";
inline constexpr const char* recovery_coverage = "recovery_coverage.csv";
// compare where Assumption 2 fails in most heads: the plug-in cosines' verdict beside
inline constexpr const char* verdict_plug_in = "verdict_plug_in.csv";
inline constexpr const char* kappa_scan_plug_in = "kappa_scan_plug_in.csv";
// compare with several --emp (kind compare-set): the intersection of the models' κ sets
inline constexpr const char* universal_kappa = "universal_kappa.csv";
// compare of an extract folder with by_length.csv
inline constexpr const char* by_length_summary = "by_length_summary.csv";
inline constexpr const char* regimes_by_length = "regimes_by_length.csv";
// report
inline constexpr const char* report_files = "report_files.json";
}  // namespace file

// The columns of one bound row (theory::BoundRow) wherever it is written (`attngeo bounds`,
// a simulate folder's and a compare folder's bounds.csv, Python's bounds()): Delta ..
// Fmin_upper, and its 0/1 margin flags (theory::MarginFlags, docs/design.md §7), delta_le0 ..
// R_trivial_upper; both from run_columns' entry for `attngeo bounds`.
std::vector<std::string> bound_value_columns();
std::vector<std::string> bound_flag_columns();

// Path of DIR's manifest.
std::string manifest_path(const std::string& dir);

// InputError naming `path` unless `manifest` carries this attngeo's format_version: a folder
// without one was written before run folders were versioned, one with another number by a
// different release; either is read by that release or rewritten by rerunning its command.
void check_format_version(const nlohmann::json& manifest, const std::string& path);

}  // namespace attngeo::schema
