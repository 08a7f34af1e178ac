// Internal to compare/: what each step of `attngeo compare` hands the next, shared by the
// pipeline (compare_run.cpp), its CSV tables (compare_tables.cpp) and its JSON files
// (compare_manifest.cpp). The steps: the flags, the extract folder, the fits, the fitted
// summary the simulator takes, the assumption checks.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "compare/correlation.hpp"
#include "compare/envelopes.hpp"
#include "compare/extract_folder_reader.hpp"
#include "compare/fit_intervals.hpp"
#include "compare/fits.hpp"
#include "theory/assumption_checks.hpp"

namespace attngeo::compare {

// The request's flags, checked and resolved.
struct CompareSettings {
    CosineSource cosines = CosineSource::parametric;
    int threads = 1;     // resolved: never 0
    bool per_kv = true;  // --count-per kv
};

// The extract folder, checked against itself, and how its heads are counted.
struct CompareInputs {
    std::string emp;  // the folder, as given
    EmpiricalRun run;
    PerDocArrays per_doc;
    int lags_fitted = 0;  // K = min(--max-lag-fit, context − 1, lags present)
    int group = 1;        // query heads per key/value head
    // [heads] head i enters medians and histograms (the first query head of each GQA group
    // per kv head; exact, since the group's value-state statistics are identical).
    std::vector<char> counted;
};

struct HeadFits {
    DecayFit decay;
    OffsetDecayFit offset;
    ProfileFit profile;
    // Why the profile could not be fitted (e.g. α_0 read as 0: the extract stores the mean α
    // in 2^-64 fixed point); empty when it was. One such head must not stop the comparison.
    std::string profile_failure;
};

struct FitResults {
    std::vector<HeadFits> heads;  // [heads]
    ProfileFit global_profile;    // of the mean α over heads
    FitIntervals intervals;       // bootstrap intervals (step 3b), when there can be any
};

// A simulator parameter: the fitted value and the value the simulate command uses.
struct SimParameter {
    const char* flag;
    double fitted, used;
    std::string why;  // empty when used == fitted
};

// Medians over the counted heads and the global profile, as the simulator takes them.
struct FittedSummary {
    int L = 0;
    std::size_t heads_counted = 0;
    double beta = 0, beta_offset = 0, c_inf = 0, lambda = 0, C = 0, rho0 = 0;
    std::vector<SimParameter> sim;  // --lambda, --C, --beta, --rho0 (clamped into the domain)
    std::string simulate_command;
};

// The assumption checks of every head and of the global profile (A3 only matters there).
struct AssumptionResults {
    std::vector<PointFits> points;               // [heads]
    std::vector<theory::AssumptionCheck> heads;  // [heads]
    theory::AssumptionCheck global;
};

}  // namespace attngeo::compare
