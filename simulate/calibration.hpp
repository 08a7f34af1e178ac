// The calibration of the verdict itself (docs/design.md §7, `simulate --calibrate R`): the truth
// E P_N, E R_N of a grid point from one long run (50× the trials), then R independent runs of the
// usual length judged by the verdict's band against planted bounds — true ones on the truth (the
// hardest case: the bound sits on the mean) and false ones moved δ standard errors of a run's
// mean past the truth on a window of N — giving the false-alarm rate and the detection rates.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/progress.hpp"
#include "compare/claims.hpp"
#include "simulate/run.hpp"

namespace attngeo::simulate {

// The long run is this many times a run's trials.
inline constexpr int kCalibrationTruthFactor = 50;
// The planted false bounds' shifts, in standard errors of a run's mean.
inline constexpr double kCalibrationShifts[] = {2, 4, 8};

struct CalibrationSettings {
    int runs = 200;           // R
    std::int64_t trials = 0;  // T per run (the run's --trials)
    std::uint64_t seed = 1;   // the run's seed; the calibration draws from a stream of its own
    int band_replicates = 2000;
    int threads = 0;
};

// One planted case of one side: how often R runs found the planted bound falsified somewhere.
struct CalibrationCase {
    std::string metric, side;  // "P" | "R", "lower" | "upper"
    bool planted_true = true;  // the bound on the truth; else moved by `shift` on the window
    double shift = 0;          // δ
    int runs = 0, falsified = 0;
    double rate = 0, ci_lo = 0, ci_hi = 0;  // falsified / runs and its Clopper–Pearson 95 %
};

struct CalibrationResult {
    CalibrationSettings settings;
    std::vector<int> P_window, R_window;  // the N of each metric's false bounds' window
    std::vector<CalibrationCase> cases;
    double seconds = 0;
};

// Runs the calibration at `setup` (a grid point with finite d), reporting the runs done to
// `progress` when given. InputError when the point has no testable N.
CalibrationResult calibrate_verdict(const PointSetup& setup, const CalibrationSettings& settings,
                                    Progress* progress);

// calibration.csv: metric,side,planted,shift,runs,falsified,rate,ci_lo,ci_hi.
std::string calibration_csv(const CalibrationResult& result);
// The manifest's "calibration" block.
nlohmann::json calibration_json(const CalibrationResult& result);

// The exact Clopper–Pearson 95 % interval of k successes in n trials (compare/claims.hpp's).
using compare::clopper_pearson;

}  // namespace attngeo::simulate
