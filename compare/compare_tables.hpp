// compare's per-head and per-regime CSV tables (docs/commands/compare.md): fits.csv, profile.csv,
// profile_global.csv, regimes.csv, regime_counts.csv, pr_by_regime.csv and contrib_by_regime.csv,
// formatted from the fits (compare_steps.hpp); the pipeline (compare_run.cpp) writes them.
#pragma once
#include <string>

#include "compare/compare_steps.hpp"
#include "compare/regime_rules.hpp"

namespace attngeo::compare {

// fits.csv, profile.csv, profile_global.csv, regimes.csv, regime_counts.csv, pr_by_regime.csv
// and contrib_by_regime.csv (docs/commands/compare.md).
struct CompareTables {
    std::string fits, profile, profile_global, regimes, regime_counts, pr_by_regime,
        contrib_by_regime, assumptions;
};

// Every table above from one model's fits and regime labels; `assumptions` is left empty.
CompareTables compare_tables(const CompareInputs& in, const FitResults& fits,
                             const RegimeLabels& labels);

}  // namespace attngeo::compare
