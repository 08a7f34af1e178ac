// The tiny simulate configuration the merge tests, the report fuzz target and its seeds share:
// n = 16 tokens (T1 = 3, T2 = 10), d = 8, 4 trials, N = powers of two, κ = 1; a sweep varies β
// over two values. Small enough to run thousands of times under a fuzzer.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "simulate/run.hpp"

namespace attngeo::test_support {

inline simulate::RunConfig tiny_run_config(const std::string& kind = "simulate") {
    simulate::RunConfig config;
    config.kind = kind;
    config.model.assumption3.L = 15;
    config.model.assumption3.T1 = 3;
    config.model.assumption3.T2 = 10;
    config.model.length_given = true;
    config.d = 8;
    config.trials = 4;
    config.sizes = "pow2";
    config.kappa = 1.0;
    if (kind == "sweep") config.sweep.emplace_back("beta", std::vector<double>{0.05, 0.1});
    return config;
}

}  // namespace attngeo::test_support
