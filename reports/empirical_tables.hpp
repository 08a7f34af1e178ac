// The empirical report's HTML tables and the sentences beside its figures: model facts, the
// per-layer summary, fitted parameters, κ, envelope agreement, violations and Table 1, each
// formatted from what the loaders read (empirical_data.hpp). Internal to reports/.
#pragma once
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "reports/empirical_data.hpp"

namespace attngeo::reports::empirical {

// ---- from an extract folder ---------------------------------------------------------------
std::string model_table(const ExtractData& e);
std::string layer_table(const ExtractData& e);  // means of heads.csv columns per layer
std::map<int, PerRegime<int>> regime_counts(const ExtractData& e);  // layer → heads per regime
// One value per head, or with per_kv one per key/value head (the first query head of each
// (layer, kv_head) group: value-state statistics are the same for the whole group).
std::vector<double> head_column(const ExtractData& e, double compare::EmpiricalHead::*field,
                                bool per_kv);
// " Near the boundary (regime_margin < 1.1): … per regime and overall", from (regime index,
// margin) pairs; "" when the folder records no margin (no regime_margin column).
std::string near_boundary_text(const std::vector<std::pair<int, double>>& regime_margins);
std::string near_boundary_of(const ExtractData& e);

// ---- from a compare folder ------------------------------------------------------------------
std::string fits_table(const CsvTable& fits, const std::string& unit);
std::string profile_table(const CsvTable& profile, const CsvTable& profile_global);
std::string kappa_table(const nlohmann::json& kappa, const std::string& source);
// `widths`: (variant, layer) → mean envelope width (mean_widths_by_layer; layer −1: global).
std::string agreement_tables(const CsvTable& agreement,
                             const std::map<std::pair<std::string, int>, double>& widths);
std::string violations_table(const CsvTable& violations);
std::string fitted_params_html(const std::string& path);  // the file is required
std::string parameters_table(const nlohmann::json& manifest);
// Table 1 as compare wrote it (table1.csv and the manifest's "table1").
std::string table1_html(const std::string& dir, const nlohmann::json& manifest);
// Planted-parameter recovery (compare --truth): recovery_coverage.csv per parameter, with the
// sentence on which intervals exist and what "exact (no noise)", "flagged" and the unflagged
// coverage mean.
std::string recovery_table(const CsvTable& coverage);

}  // namespace attngeo::reports::empirical
