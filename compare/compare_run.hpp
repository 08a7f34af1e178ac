// `attngeo compare` (docs/design.md §7, docs/commands/compare.md): reads an extract folder, fits the
// assumption parameters per head, evaluates the envelopes against the measured P and R, the
// recall–ρ0 correlation and the regime aggregates, and writes one output folder.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace attngeo::compare {

struct CompareRequest {
    // attngeo extract folders (at least one): with several, each is judged in its own
    // subfolder of `out` and the intersection of their κ sets is universal_kappa.csv.
    std::vector<std::string> emp;
    std::string sim;  // attngeo simulate folder, recorded in the manifest
    // planted.csv of a planted extract folder (attngeo simulate --as-extract): adds
    // recovery.csv and recovery_coverage.csv (compare/recovery.hpp); empty: no recovery.
    std::string truth;
    std::string out;                     // output folder (required)
    std::string cosines = "parametric";  // parametric | plug-in (envelope cosines)
    int max_lag_fit = 64;                // K = min(this, context − 1, lags present)
    std::optional<double> kappa;         // one κ for every variant; fitted when empty
    // How per-head statistics of the value states (λ, ρ0, β and its MAE, CV, cos by lag) are
    // counted in medians, histograms and corr(R, ρ0): "kv" once per key/value head (a GQA
    // group's query heads all repeat them), "query" once per query head.
    std::string count_per = "kv";
    int replicates = 2000;       // bootstrap resamples of documents
    int band_replicates = 2000;  // the verdict band's bootstrap replicates (B)
    std::uint64_t seed = 1;      // bootstrap seed
    int threads = 0;             // OpenMP threads over heads; 0 = all cores
    std::string command_line;    // for the manifest
    bool quiet = false;          // no progress lines (common/progress.hpp)
};

// Validates every input before anything is written (InputError naming the flag or file), then
// creates `out` and writes every file of docs/commands/compare.md atomically.
void run_compare(const CompareRequest& request);

}  // namespace attngeo::compare
