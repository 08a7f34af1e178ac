// The report's attention-sink section (issue 43, docs/design.md §15): extract's sink rate by
// layer, the sink key geometry per head, the massive activations by layer and the secondary
// sinks, and, in a compare report, their correlation with R(r_min, N), λ and ρ0.
#pragma once
#include <string>

#include "reports/sections.hpp"

namespace attngeo::reports::empirical {

// From the extract folder `extract_dir` (sinks.csv, sink_layers.csv, secondary_sinks.csv) and,
// when not empty, the compare folder `compare_dir` (sink_relations.csv). Figure ids start with
// `prefix`.
Section sink_section(const std::string& prefix, const std::string& extract_dir,
                     const std::string& compare_dir);

}  // namespace attngeo::reports::empirical
