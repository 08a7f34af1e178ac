// Planted heads (docs/design.md §7, "Planted-parameter recovery"): an extract folder whose heads
// are drawn under Assumptions 1–3 with known parameters and fed through the real extract statistics
// and folder writer, so `attngeo compare --truth` can check the whole fitting pipeline. Torch-free.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "simulate/generator.hpp"
#include "simulate/rng.hpp"
#include "theory/assumption_models.hpp"

namespace attngeo::simulate {

// The known parameters of one planted head.
struct PlantedParameters {
    theory::Assumption3Profile profile;  // L, p_sink, T1, T2, η, ω (Assumption 3)
    double C = 1, lambda = 0.1;          // Assumption 1: ‖v_i‖ = C, ‖v_0‖ = λC
    double beta = 0.05, rho0 = 0;        // Assumption 2: E cos = e^{−β|i−j|}, ρ0 to the sink
    double norm_cv = 0;                  // log-normal noise on the norms (0: Assumption 1 exactly)
};

// `--draw name=lo:hi`: the parameter drawn per head uniformly from [lo, hi] (T1, T2 rounded).
struct PlantedRange {
    std::string name;
    double lo = 0, hi = 0;
};

// The names --draw accepts: C lambda beta rho0 p_sink eta omega T1 T2 norm_cv (L and d are
// shared by every head: the folder has one context and one head_dim).
const std::vector<std::string>& drawable_parameters();
// Parses "name=lo:hi"; InputError naming --draw for an unknown name, a bad number or lo > hi.
PlantedRange parse_planted_range(const std::string& text);

struct PlantedRequest {
    PlantedParameters base;           // every head's parameters where no range is drawn
    std::vector<PlantedRange> draws;  // per-head ranges, one per name
    int d = 128;                      // value dimension (head_dim)
    int heads = 0;                    // K heads, all in layer 0
    std::int64_t docs = 32;           // D documents (windows) per head
    double alpha_noise = 0;           // σ of the per-document log-normal noise on α_i, i ≥ 1
    SinkMode sink_mode = SinkMode::exact;
    std::uint64_t seed = 1;     // draws and documents: Philox keyed by the seed
    std::string sizes = "all";  // --N: all | pow2 | list
    std::string rank = "attn", distance = "euclidean";
    int max_lag = 128;  // cos by lag 1..min(max_lag, n − 2)
    int threads = 0;    // statistics threads over heads (0: every core)
    std::string out, command_line;
};

// Each head's parameters: `base` with every --draw range replaced by a uniform draw from the
// stream (seed, kPlantedDrawPoint, head, range index), so a head's draws do not depend on K.
// Checks each head against Assumptions 1–3 and the generator (an infeasible ρ0); InputError
// naming --draw (or --as-extract when nothing is drawn) and the head otherwise.        [K]
std::vector<PlantedParameters> planted_head_parameters(const PlantedRequest& request);

// One document's α [n]: α_0 = p_sink exactly (Assumption 3's sink mass), and for i ≥ 1
// α_i = (1 − p_sink)·w_i e^{σ z_i} / Σ_j w_j e^{σ z_j} with w the Assumption-3 shape and z_i
// independent standard normals from `stream`; σ = 0 gives the profile itself.
std::vector<float> planted_alpha(const theory::Assumption3Profile& profile, double sigma,
                                 RandomStream& stream);

// planted.csv: layer, head and every parameter of each head (p_base derived).
std::string planted_csv(const std::vector<PlantedParameters>& heads, int d, double alpha_noise);

// Validates the request (InputError naming the flag), draws every head's documents, adds them
// to HeadStatistics one window at a time and writes `out` through write_extract_outputs with
// planted.csv beside the extract files; the manifest's "synthetic" block says the folder is
// planted and gives the parameters. Returns the manifest.
nlohmann::json write_planted_extract(const PlantedRequest& request);

}  // namespace attngeo::simulate
