// Where a parametric head comes from, as a user states it (flags or a run manifest): the
// Assumption 1–3 parameters, a profile name, and optional files for α, norms and cosines.
// load_model turns it into ModelParameters, reading and checking the files.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "theory/parametric.hpp"

namespace attngeo::theory {

struct ModelSource {
    std::string preset = "paper";
    std::string profile = "assumption3";  // assumption3 | uniform | zipf:s | file:PATH
    Assumption3Profile assumption3;       // L, p_sink, T1, T2, η, ω
    bool length_given = false;            // --L was set explicitly (checked against files)
    double C = paper_preset::C, lambda = paper_preset::lambda, beta = paper_preset::beta,
           rho0 = paper_preset::rho0;
    std::string alpha_file, norms_file, cos_file;  // empty = not given
};

// Reads the files and assembles the parameters. File and flag problems throw
// attngeo::InputError naming the flag and file; invalid values surface later as
// std::domain_error from build_head_model.
ModelParameters load_model(const ModelSource& source);

nlohmann::json to_json(const ModelSource& source);
ModelSource model_source_from_json(const nlohmann::json& j);

}  // namespace attngeo::theory
