// The judge of `attngeo truncate` (docs/design.md §12, docs/commands/truncate.md): from a truncate
// folder's per-document measures, the means over documents with standard errors and 95 %
// intervals (truncate.csv), the effective set size N*_τ with a bootstrap interval
// (effective_size.csv) and, for scope head, the link of each head's loss to its geometry on the
// same windows (geometry_link.csv, head_link.csv, link_summary.json), each Spearman with a
// head-level test and the geometric ones Holm-adjusted as a family (compare/link_tests.hpp).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace attngeo::compare {

// The seed of the document bootstrap of every truncate summary (the resamples are
// compare/bootstrap.hpp's); the number of resamples is the manifest's parameters.replicates.
constexpr std::uint64_t kTruncationBootstrapSeed = 1;

// Reads `dir` (manifest.json of kind truncate, per_doc.safetensors and, with scope head, the
// extract/ folder of the same windows) and writes the summary files into it. InputError naming
// the file for anything missing or inconsistent.
void summarise_truncation(const std::string& dir);

// Spearman's rank correlation: Pearson's of the ranks, ties given their average rank; NaN when
// either series is constant or n < 2.
double spearman(const std::vector<double>& x, const std::vector<double>& y);

// The knee of a loss curve over an ascending N grid: the first N whose loss is at most
// `fraction` of the loss at the grid's first N (the loss recovered to within that share).
// −1 when the first loss is ≤ 0 or no N reaches it.
int loss_knee(const std::vector<int>& sizes, const std::vector<double>& loss,
              double fraction = 0.1);

}  // namespace attngeo::compare
