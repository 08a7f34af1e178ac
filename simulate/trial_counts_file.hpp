// per_trial.safetensors, the per-trial counts K_in and K_out of a simulate or sweep run folder
// and of its saved state: written beside sums.csv, read back by merge and --resume and checked
// against the run's configuration and against sums.csv, which the counts must reproduce.
#pragma once
#include <string>
#include <vector>

#include "common/output_folder.hpp"
#include "simulate/run.hpp"

namespace attngeo::simulate {

// Writes `path` (atomically): for every grid point g whose sums hold trials, the int32 tensors
// K_in.<g> and K_out.<g> [T, S] and the int64 N.<g> [S] (point_sizes[g]), in grid order, and
// the metadata first_trial (the shard's first trial, where every point's counts start).
void write_trial_counts(const std::string& path, const RunConfig& config,
                        const std::vector<std::vector<int>>& point_sizes,  // [points][S]
                        const std::vector<SimulationSums>& sums);          // [points]
// The same into a run folder being written; a failure names the file at its destination.
void write_trial_counts(OutputFolder& folder, const RunConfig& config,
                        const std::vector<SimulationSums>& sums);

// How many trials a point's tensors hold against the trials of its sums.csv rows: a finished
// folder exactly those; a saved state at least those, since a save writes the counts before
// sums.csv and a kill between the two leaves counts one chunk ahead (the extra rows are
// dropped).
enum class TrialsHeld { exactly, at_least };

// DIR/per_trial.safetensors into sums[g].counts, after read_sums filled `sums` from DIR/sums.csv.
// Checked against `config` (the grid, each point's sizes and n, the shard's first trial) and
// against those sums: the shapes, N, 0 <= K_in <= N, 0 <= K_out <= n - N, the trials, and the
// P and R sums the counts reproduce. Anything else is one InputError line opening with `who`
// ("merge", "--resume") and naming the file and the tensor or grid point.
void read_trial_counts(const std::string& dir, const RunConfig& config,
                       std::vector<SimulationSums>& sums, const std::string& who,
                       TrialsHeld held = TrialsHeld::exactly);

}  // namespace attngeo::simulate
