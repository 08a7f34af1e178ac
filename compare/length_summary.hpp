// An extract folder's statistics against context length (docs/design.md §14, written by
// `extract --queries` other than `last`): by_length.csv and heads_by_length.csv read back
// strictly, and compare's summaries over heads per length bin (by_length_summary.csv,
// regimes_by_length.csv; docs/commands/compare.md).
#pragma once
#include <array>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "compare/extract_folder_reader.hpp"

namespace attngeo::compare {

// One bin of the context length L = t + 1 of the measured query positions, as the extract
// manifest's parameters.length_bins lists it.
struct LengthBin {
    int lo = 0, hi = 0;      // L ∈ [lo, hi]
    double length_mean = 0;  // mean L of the measured positions in the bin
};

// The per-head values of one extract folder's by-length files.
struct ByLengthRun {
    std::vector<LengthBin> bins;  // [bins] ascending lo, from the manifest
    // by_length.csv: (bin index, N) → per head P_mean and R_mean.          [heads] each
    std::map<std::pair<int, int>, std::pair<std::vector<double>, std::vector<double>>> pr;
    // heads_by_length.csv: bin index → per head regime index (theory::kHeadRegimes order).
    std::map<int, std::vector<int>> regimes;  // [heads] each
    std::string by_length_path, heads_by_length_path;
};

// Reads `run`'s by_length.csv and heads_by_length.csv (beside its manifest); nullopt when the
// folder has no by_length.csv (extract --queries last: nothing changes). Every defect is an
// InputError naming the file: a missing column or file, a bin the manifest's
// parameters.length_bins does not list, a layer or head outside the model, an N not in pr.csv's
// grid or above the bin's hi, a standard error empty with 2 or more queries, a duplicate row, a
// head missing from a (bin, N) that another head has, or a regime other than the three.
std::optional<ByLengthRun> read_by_length(const EmpiricalRun& run);

// by_length_summary.csv: per bin and N, the mean and the standard deviation (n − 1 divisor;
// empty with one head) over heads of the heads' P_mean and R_mean.
std::string by_length_summary_csv(const ByLengthRun& by_length);
// regimes_by_length.csv: per bin, the share of heads in each regime.
std::string regimes_by_length_csv(const ByLengthRun& by_length);

}  // namespace attngeo::compare
