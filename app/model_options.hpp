// The flags that describe a parametric head (profile, norms, cosines) shared by `bounds`,
// `simulate` and `sweep`; their defaults are the paper preset (docs/design.md §4).
#pragma once
#include <CLI/CLI.hpp>
#include <string>

#include "theory/model_source.hpp"

namespace attngeo::cli {

// Registers --preset --profile --L --p-sink --T1 --T2 --eta --omega --C --lambda --beta --rho0
// --alpha --norms --cos on `app`, writing into `source`.
void add_model_options(CLI::App& app, theory::ModelSource& source);

// Marks which values came from explicit flags (for files that fix L, and for the manifest).
void note_explicit_model_flags(const CLI::App& app, theory::ModelSource& source);

// Flags the user set explicitly (everything else came from the preset or defaults).
std::vector<std::string> explicit_flags(const CLI::App& app);

}  // namespace attngeo::cli
