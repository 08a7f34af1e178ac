// The JSON files of a compare folder (docs/commands/compare.md): manifest.json with its decisions,
// fitted_params.json, and the manifest of a set of models (several --emp), built from what the
// pipeline's steps hold (compare_steps.hpp); the pipeline (compare_run.cpp) writes them.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "compare/compare_run.hpp"
#include "compare/compare_steps.hpp"
#include "compare/correlation.hpp"
#include "compare/envelopes.hpp"
#include "compare/length_summary.hpp"
#include "compare/table1.hpp"

namespace attngeo::compare {

// manifest.json of one model, everything but "plug_in", "correlation.head_level", "by_length",
// "recovery" and "timings" (added by the functions below and the pipeline).
nlohmann::json compare_manifest(const CompareRequest& r, const CompareSettings& settings,
                                const CompareInputs& in, const FitResults& fits,
                                const FittedSummary& s, const EnvelopeResult& envelopes,
                                const Table1& table1, const AssumptionResults& checked);

// The manifest's "plug_in": why the plug-in verdict is written beside the parametric one.
nlohmann::json plug_in_manifest(const EnvelopeResult& plug_in, std::size_t heads,
                                const AssumptionResults& checked);

// The manifest's "correlation.head_level": the simultaneous head-level intervals' method.
nlohmann::json head_level_json(const HeadLevelFamily& family);

// The manifest's "by_length" block and its decision, for an extract run with --queries.
void add_by_length(nlohmann::json& manifest, const ByLengthRun& by_length,
                   const EmpiricalRun& run);

// fitted_params.json: the medians, the global profile, the clamps and intervals, the
// simulate command.
nlohmann::json fitted_params_json(const CompareRequest& r, const CompareInputs& in,
                                  const FitResults& fits, const FittedSummary& s,
                                  const AssumptionResults& checked);

// The manifest of a set of models: each extract folder (`emps`, as given) and its subfolder
// (`folders`), the universal κ.
nlohmann::json compare_set_manifest(const CompareRequest& r, const std::vector<std::string>& emps,
                                    const std::vector<std::string>& folders,
                                    const EnvelopeResults& envelopes);

}  // namespace attngeo::compare
