// The verdict of a simulate or sweep folder in its report (docs/design.md §7): the verdict
// section first (with a simulate folder's calibration right after it), and the simulate
// folder's envelope agreement at the bound rows' κ with its falsified points. Internal to
// reports/ (simulation_report.cpp).
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "reports/csv_table.hpp"
#include "reports/sections.hpp"

namespace attngeo::reports {

// The manifest writes d = ∞ as the string "inf" (json_number); a number is accepted too.
bool infinite_d(const nlohmann::json& d);
// What a d = ∞ run is, for its report.
extern const char* const kExpectedGeometryNote;

// The verdict section of `run` (a simulate folder with its bounds.csv `bounds`, or a sweep with
// nullptr), then, when the folder has calibration.csv, the calibration section.
std::vector<Section> simulation_verdict_sections(const RunFolder& run, const CsvTable* bounds);

// "355 (joint)", "— (each side at its own kappa)": the bound rows' κ of a verdict block and the
// rule that chose it.
std::string rows_kappa_cell(const nlohmann::json& block);

// A simulate folder's envelope agreement: per variant the bound rows' κ, the information share
// and the envelopes' mean widths, then the falsified and contradicted points (bounds.csv's
// judgement columns) with the estimates of simulate.csv.
std::string simulate_agreement_html(const nlohmann::json& point, const CsvTable& sim,
                                    const CsvTable& bounds);

}  // namespace attngeo::reports
