// The flags that describe a parametric head (profile, norms, cosines) shared by `bounds`,
// `simulate` and `sweep`, registered from theory/parameter_table; their defaults are the paper
// preset (docs/design.md section 4).
#pragma once
#include <CLI/CLI.hpp>
#include <string>

#include "theory/model_source.hpp"
#include "theory/parameter_table.hpp"

namespace attngeo::cli {

// Registers --preset --profile, the table's head flags (--L --p-sink --T1 --T2 --eta --omega --C
// --lambda --beta --rho0) and --alpha --norms --cos on `app`, writing into `source`.
void add_model_options(CLI::App& app, theory::ModelSource& source);

// Registers the table's flag for `key` (d, kappa, norm_cv) with its help text, writing into
// `value`; `extra_help` is appended (what the command does without it).
template <typename T>
CLI::Option* add_table_option(CLI::App& app, const std::string& key, T& value,
                              const std::string& extra_help = "") {
    const theory::ParameterDescriptor& p = theory::parameter(key);
    return app.add_option(p.flag, value, p.help + extra_help);
}

// Marks which values came from explicit flags (for files that fix L, and for the manifest).
void note_explicit_model_flags(const CLI::App& app, theory::ModelSource& source);

// The head of `source` with its files read, every value in use checked against the table's
// range: an InputError naming the flag ("--p-sink 0: expected 0 < p_sink < 1").
theory::ModelParameters load_checked_model(const CLI::App& app, theory::ModelSource& source);

// Flags the user set explicitly (everything else came from the preset or defaults).
std::vector<std::string> explicit_flags(const CLI::App& app);

}  // namespace attngeo::cli
