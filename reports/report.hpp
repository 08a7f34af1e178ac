// `attngeo report`: run folders (read through their manifests) to an offline HTML report with
// SVG/PNG figures, the gnuplot scripts and data beside them, and the tables (docs/design.md §8).
// The folders' sections come from run_folder.hpp (included here for callers that build them
// without writing a page), the section builders are declared in sections.hpp.
#pragma once
#include <string>
#include <vector>

#include "reports/run_folder.hpp"

namespace attngeo::reports {

// Writes OUT/index.html, OUT/figures/* and OUT/report_files.json (the files this report wrote);
// returns the path of index.html. `labels`: one name per run folder to draw it under in the
// cross-model figures (--label), or empty for the models' names. Files an earlier report listed
// in report_files.json and this one no longer writes are removed (figures of a run no longer
// given); other files in OUT are kept. Throws InputError for a folder without a readable
// manifest or of an unknown kind, and for a wrong number of labels.
std::string write_report(const std::vector<std::string>& run_dirs, const std::string& out_dir,
                         const std::vector<std::string>& labels = {});

}  // namespace attngeo::reports
