// The flags that describe a parametric head (profile, norms, cosines, d, κ) shared by
// `bounds` and, later, `simulate` and `sweep`; their defaults are the paper preset (SPEC §4).
#pragma once
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "theory/parametric.hpp"

namespace attngeo::cli {

struct ModelOptions {
    theory::ModelParameters params;
    std::string profile = "assumption3";
    std::string preset = "paper";
    std::string alpha_file, norms_file, cos_file;
    double d = 128;
    double kappa = 1;
    std::string variant = "paper";
    std::string rank = "attn";
    std::string sizes = "all";
    // Names of the flags the user set explicitly (everything else came from the preset).
    std::vector<std::string> explicit_flags(const CLI::App& app) const;
};

// Registers --L --p-sink --T1 --T2 --eta --omega --C --lambda --beta --rho0 --profile
// --preset --alpha --norms --cos --d --kappa --variant --rank --N on `app`.
void add_model_options(CLI::App& app, ModelOptions& options);

// Loads the files and the profile into options.params; throws InputError naming the flag.
void resolve_model_options(ModelOptions& options);

}  // namespace attngeo::cli
