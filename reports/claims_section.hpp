// The report's first table (docs/design.md §8): the paper's claims answered yes / no / can't
// tell, read from the claims.csv of every run folder that has one (compare, its models in a
// compare set, simulate, truncate), one column per folder.
#pragma once
#include <string>
#include <vector>

#include "reports/sections.hpp"

namespace attngeo::reports {

// The section, or none when no folder of `runs` has claims. `labels` [runs] as run_labels
// returns names each column; a compare set's models are named "<label>: <model folder>". A
// claims.csv without its columns, or with an answer other than yes, no or can't tell, is an
// InputError naming the file.
std::vector<Section> claims_sections(const std::vector<RunFolder>& runs,
                                     const std::vector<std::string>& labels);

}  // namespace attngeo::reports
