// A run folder read through its manifest, and its sections by the manifest's kind: the registry
// of the run kinds with a report (run_folder.cpp). Used by `attngeo report`, by a compare set's
// model folders and by Python's attngeo.read_run (no figure drawn).
#pragma once
#include <string>
#include <vector>

#include "reports/sections.hpp"

namespace attngeo::reports {

// DIR/manifest.json read and checked for a kind with a report (InputError naming the folder
// otherwise); `index` is the folder's position among --in, `named_by` what gave DIR (the --in
// flag; Python's attngeo.read_run).
RunFolder read_run_folder(const std::string& dir, int index, const std::string& named_by = "--in");
// The sections of `run` by its kind, as `attngeo report` builds them (no figure drawn yet): a
// damaged or inconsistent file of the folder is an InputError naming that file where known.
std::vector<Section> run_sections(const RunFolder& run);

}  // namespace attngeo::reports
