// `attngeo normalization` (docs/design.md §14, docs/commands/normalization.md): the predecessor
// paper's measurements ("Limitations of Normalization in Attention Mechanism") over every chosen
// query position of a checkpoint's windows — the distance d̃(N) against its random-selection
// expectation, separability and the softmax sensitivity g(T, ε). This is the estimate half;
// compare/normalization_limits_summary judges the critical N. The code is named after that
// paper's title (normalization_limits: the limits of softmax normalization); the command and its
// folder kind keep the name `normalization`. Not NormKind's RMSNorm/LayerNorm. Torch-free header.
#pragma once
#include <cstdint>
#include <string>

#include "empirical/extract/extract.hpp"

namespace attngeo::empirical {

// The flags of `attngeo normalization` as given.
struct NormalizationLimitsRequest {
    // Model, documents and windows as extract takes them (model, tokens_file, corpus, context,
    // docs, bos, stride, seed, dtype, device, quiet, command_line; out is the final folder).
    ExtractRequest windows;
    std::string queries = "every:8";  // --queries: last | all | every:K | positions:a,b,…
    int length_bins = 8;              // --length-bins: bins of L = t + 1
    std::string sizes = "pow2";       // --N: all | pow2 | list, within 1..context
    int subsets = 64;                 // --subsets: Monte Carlo N-subsets per query for E
    std::uint64_t random_seed = 1;    // --random-seed: the subsets and directions
    std::string temperatures = "0.01:100:17";  // --temperatures: lo:hi:count (log) or a list
    std::string epsilons = "0.001,0.1,10";     // --epsilons
    double ks_level = 0.01;                    // --ks-level: the critical N's test level
    int threads = 0;  // heads of a layer in parallel (statistics_threads); 0: every core
};

// Checks every flag (InputError naming it), runs the forward over every window with the chosen
// query rows recorded, and writes distance.csv, separability.csv, sensitivity.csv and
// manifest.json into `staging` (an OutputFolder's staging folder for request.windows.out).
// Ctrl-C or SIGTERM: Interrupted (there is no --resume; the folder is not written).
void run_normalization_limits(const NormalizationLimitsRequest& request, const std::string& staging);

}  // namespace attngeo::empirical
