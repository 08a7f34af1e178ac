// The parts every section builder shares; see sections.hpp.
#include "reports/sections.hpp"

#include "reports/html.hpp"

namespace attngeo::reports {

std::string figure_prefix(const RunFolder& run) {
    return run.id_prefix.empty() ? "run" + std::to_string(run.index) + "_" : run.id_prefix;
}

Section decisions_section(const nlohmann::json& manifest) {
    Section decisions;
    decisions.title = "Decisions taken";
    decisions.html_before = decisions_list(manifest);
    return decisions;
}

}  // namespace attngeo::reports
