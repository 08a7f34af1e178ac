// A simulation run folder end to end (docs/design.md §5, §9): the run's configuration (what the
// manifest records, enough to redo or merge it), the grid of a sweep, sharding over trials, and the
// outputs simulate.csv | sweep.csv, bounds.csv, sums.csv, per_trial.safetensors and manifest.json.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/progress.hpp"
#include "common/shard.hpp"
#include "simulate/montecarlo.hpp"
#include "theory/model_source.hpp"

namespace attngeo::simulate {

// The grid of `--set name=v1,v2,...` flags (names and ranges from theory/parameter_table; "inf"
// allowed for d); InputError naming the --set flag.
std::vector<std::pair<std::string, std::vector<double>>> parse_sweep_sets(
    const std::vector<std::string>& sets);

struct RunConfig {
    std::string kind = "simulate";  // simulate | sweep
    theory::ModelSource model;
    double d = theory::paper_preset::d;  // +inf: the d → ∞ limit
    std::optional<double> kappa;         // judged alone; none: the κ set by test inversion
    int band_replicates = 2000;          // the verdict band's multiplier replicates (B)
    std::int64_t trials = 1000;
    std::uint64_t seed = 1;
    std::string sizes = "all";  // all | pow2 | list
    std::string rank = "attn", distance = "euclidean", sink_mode = "exact";
    double norm_cv = theory::paper_preset::norm_cv;
    std::vector<std::pair<std::string, std::vector<double>>> sweep;  // empty for simulate
    Shard shard;
};
nlohmann::json to_json(const RunConfig& config);
RunConfig run_config_from_json(const nlohmann::json& j);

// One point of the cartesian sweep grid (the only point of a simulate run has no values).
struct GridPoint {
    int index = 0;
    std::vector<std::pair<std::string, double>> values;
};
std::vector<GridPoint> grid_points(const RunConfig& config);

// Everything needed to run and evaluate one grid point.
struct PointSetup {
    SimulationSpec spec;
    std::optional<double> kappa;
    double d = 128;
    theory::HeadModel head;
};
// Where a configuration came from, so an invalid value is named as the user gave it: a flag
// (`--d: 0, expected ...`) or a key of a run folder's manifest (`d = 0, expected ...`), since
// merge and report never saw a flag.
enum class ConfigSource { flags, manifest };

// Loads files, applies the point's values and validates (InputError / std::domain_error,
// including an infeasible ρ0 with the largest feasible value).
PointSetup setup_point(const RunConfig& config, const GridPoint& point,
                       ConfigSource source = ConfigSource::flags);

struct RunTimings {
    double monte_carlo_s = 0, bounds_s = 0;
};

// Trials this shard runs over the whole grid (for progress).
std::int64_t shard_trial_count(const RunConfig& config);

// Where and how often run_grid saves its exact state, so a killed run can resume; an empty
// state_dir saves nothing. The state is sums.csv (the sums so far), per_trial.safetensors (their
// per-trial counts) and run.json (the configuration it belongs to).
struct Checkpointing {
    std::string state_dir;
    double every_s = 30;  // seconds between saves (0: after every chunk of trials)
    bool resume = false;  // continue from the saved state (which must be this configuration's)
};

// The checkpointing of a run writing into `out`: its state lives in OUT/.partial. A saved state
// is refused without `resume` (so a second command cannot silently mix with it; InputError naming
// --out) and continued with it; without one, any half-made state folder is removed.
Checkpointing open_checkpointing(const std::string& out, double every_s, bool resume);
// Removes the state folder, and `out` itself when that leaves it empty: a run that failed on bad
// input is not resumable and leaves nothing behind.
void discard_checkpointing(const std::string& out, const Checkpointing& checkpointing);

// Runs this shard's trials for every grid point (nothing to run when d = ∞), reporting the
// trials done to `progress` when given and saving the state as `checkpointing` says. A resumed
// run gives the same sums, bit for bit, as an uninterrupted one.
std::vector<SimulationSums> run_grid(const RunConfig& config, int threads, Progress* progress,
                                     RunTimings& timings, const Checkpointing& checkpointing = {});

struct CalibrationResult;  // simulate/calibration.hpp

// From sums to files: estimates, the verdict, simulate.csv (or sweep.csv), bounds.csv, sums.csv,
// per_trial.safetensors, manifest.json, each written atomically; with `calibration`,
// calibration.csv and the manifest's "calibration" block too. `provenance` is merged into the
// manifest. Returns the manifest.
nlohmann::json write_run(const std::string& dir, const RunConfig& config,
                         const std::vector<SimulationSums>& sums, int threads,
                         const nlohmann::json& provenance, RunTimings timings,
                         const CalibrationResult* calibration = nullptr);

// Reads the sums of several run folders of the same configuration (shards), adds them
// exactly, concatenates their per-trial counts in shard order and writes the combined folder as
// if it had been one run.
nlohmann::json merge_runs(const std::vector<std::string>& dirs, const std::string& out, int threads,
                          const nlohmann::json& provenance);

}  // namespace attngeo::simulate
