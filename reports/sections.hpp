// What the report is made of: sections (HTML and figures) built from run folders, and the
// section builders of every run kind with a report, each in its own file (simulation_report.cpp,
// empirical_sections.cpp, …). run_folder.hpp dispatches a folder to its builder; report.hpp
// writes the page.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "reports/figure.hpp"

namespace attngeo::reports {

// One part of the report: HTML (tables, text) followed by figures.
struct Section {
    std::string title;
    std::string html_before;  // shown above the figures
    std::vector<Figure> figures;
    std::string html_after;  // shown below the figures
};

// A run folder and its manifest.
struct RunFolder {
    std::string dir;
    nlohmann::json manifest;
    int index = 0;                  // position on the command line: prefixes figure ids
    std::string named_by = "--in";  // what named the folder, for messages: a flag or a function
    // What figure ids start with: "run<index>_" when empty; a model folder of a compare set has
    // its own ("run<index>_m<k>_"), so ids stay unique in one page.
    std::string id_prefix;
};
// The figure-id prefix of `run`: its id_prefix, or "run<index>_".
std::string figure_prefix(const RunFolder& run);

// The sections of a run, by the manifest's "kind". To support a new kind of run or figure,
// write one function like these and register it in run_folder.cpp.
std::vector<Section> simulation_sections(const RunFolder& run);
std::vector<Section> sweep_sections(const RunFolder& run);
// `attngeo extract` folders and `attngeo compare` folders (empirical_sections.cpp): the paper's
// Section-4 figures; a compare report includes its extract folder's figures with overlays.
std::vector<Section> extract_sections(const RunFolder& run);
std::vector<Section> compare_sections(const RunFolder& run);
// `attngeo compare` with several --emp folders (compare_set_report.cpp): the universal κ over the
// models (universal_kappa.csv), then each model's compare sections, titled by its folder.
std::vector<Section> compare_set_sections(const RunFolder& run);
// `attngeo truncate` folders (truncation_report.cpp): ΔNLL and KL against N, N*_τ, and for
// scope head each head's ΔNLL against its geometry.
std::vector<Section> truncate_sections(const RunFolder& run);
// `attngeo normalization` folders (normalization_limits_report.cpp): the predecessor paper's figures
// (docs/design.md §14) — d̃(N) against L and N beside a random selection, the critical N against
// L, separability per N across heads, the softmax sensitivity g against T.
std::vector<Section> normalization_limits_sections(const RunFolder& run);
// The truncate folders among `runs` overlaid (models_truncate_delta_nll) when there are at
// least two; empty otherwise. `labels` [runs] as run_labels returns.
std::vector<Section> truncate_overlay_sections(const std::vector<RunFolder>& runs,
                                               const std::vector<std::string>& labels);

// The "Decisions taken" section: the manifest's "decisions" as a list (empty without any).
Section decisions_section(const nlohmann::json& manifest);

}  // namespace attngeo::reports
