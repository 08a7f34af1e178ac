// Cross-model figures: several extract or compare folders, or several simulate
// folders, overlaid on shared axes with one colour per model and one legend, so the paper's
// Figures 5, 6 and 8 compare models the way the paper draws LLaMA, Mistral and Gemma together.
#pragma once
#include <string>
#include <vector>

#include "reports/figure.hpp"
#include "reports/sections.hpp"

namespace attngeo::reports {

// The name each run is drawn under, [runs]: `given` when not empty (--label, one per run in
// order; InputError naming --label for a wrong count or an empty name), else the model's name
// from the manifest (extract and truncate: model.path, compare: emp_model.path, simulate: the
// settings that differ between the simulate runs, else the folder's name), made unique by the
// context length and then by the position on the command line.
std::vector<std::string> run_labels(const std::vector<RunFolder>& runs,
                                    const std::vector<std::string>& given);

// The "Across models" sections: models_fig5_P, models_fig5_R, models_fig6 and models_fig8 when
// at least two runs are extract or compare folders, models_sim_P and models_sim_R when at
// least two are simulate folders; empty otherwise. `labels` [runs] as run_labels returns.
std::vector<Section> models_sections(const std::vector<RunFolder>& runs,
                                     const std::vector<std::string>& labels);

}  // namespace attngeo::reports
