// The verdict's calibration on planted bounds; see calibration.hpp.
#include "simulate/calibration.hpp"

#include <chrono>
#include <cmath>
#include <limits>
#include <memory>

#include "common/errors.hpp"
#include "common/format.hpp"
#include "common/manifest_values.hpp"
#include "common/run_columns.hpp"
#include "common/run_schema.hpp"
#include "common/splitmix64.hpp"
#include "compare/estimate_envelopes.hpp"
#include "compare/falsification.hpp"
#include "compare/fixed_bound_sample.hpp"

namespace attngeo::simulate {
namespace {

using namespace attngeo::compare;

// Keeps the calibration's trials apart from the run's own: "calibrat".
constexpr std::uint64_t kCalibrationStream = 0x63616C6962726174ull;

std::uint64_t calibration_seed(std::uint64_t seed) {
    return SplitMix64(seed ^ kCalibrationStream).next();
}

// The truth per point from the long run: means and the standard error of a T-trial mean.
struct Truth {
    std::vector<double> P, R;        // [S] E P_N, E R_N
    std::vector<double> P_sd, R_sd;  // [S] sd of one run's mean (per-trial sd / √T)
};

Truth long_run_truth(const TrialEngine& engine, const CalibrationSettings& s, std::size_t sizes,
                     int threads) {
    std::vector<SizeSums> total(sizes);
    const std::int64_t length = kCalibrationTruthFactor * s.trials;
    for (std::int64_t from = 0; from < length; from += s.trials) {  // chunks: counts stay small
        const SimulationSums part = engine.run(from, std::min(length, from + s.trials), threads);
        for (std::size_t k = 0; k < sizes; ++k)
            total[k].merge(part.by_size[k]);
    }
    Truth t;
    for (const SizeSums& z : total) {
        for (auto [m, mean, sd] :
             {std::tuple{&z.precision, &t.P, &t.P_sd}, std::tuple{&z.recall, &t.R, &t.R_sd}}) {
            const Estimate e = estimate(*m);
            mean->push_back(e.mean);
            sd->push_back(e.se * std::sqrt(static_cast<double>(e.count) / s.trials));
        }
    }
    return t;
}

// The false bounds' window of one metric: the ⌈M/10⌉ consecutive tested points (M of them)
// centred on the one whose mean varies most between runs, so that δ standard errors are a shift
// the band can see and not one below its pseudo-units' floor.
std::vector<std::size_t> shift_window(const std::vector<char>& tested,
                                      const std::vector<double>& sd) {
    std::vector<std::size_t> candidates;
    for (std::size_t p = 0; p < tested.size(); ++p)
        if (tested[p]) candidates.push_back(p);
    if (candidates.empty()) return {};
    std::size_t peak = 0;
    for (std::size_t i = 0; i < candidates.size(); ++i)
        if (sd[candidates[i]] > sd[candidates[peak]]) peak = i;
    if (!(sd[candidates[peak]] > 0)) return {};
    const std::size_t width = (candidates.size() + 9) / 10;
    const std::size_t first =
        std::min(peak >= width / 2 ? peak - width / 2 : 0, candidates.size() - width);
    return {candidates.begin() + first, candidates.begin() + first + width};
}

// The planted bounds of every side: on the truth, or moved by `shift` standard errors past it
// (below it for an upper side, above for a lower one) on each metric's window.
PointBounds planted_bounds(const Truth& t, const std::vector<std::size_t>& P_window,
                           const std::vector<std::size_t>& R_window, double shift) {
    PointBounds b{t.P, t.P, t.R, t.R};
    for (std::size_t p : P_window) {
        b.P_lower[p] += shift * t.P_sd[p];
        b.P_upper[p] -= shift * t.P_sd[p];
    }
    for (std::size_t p : R_window) {
        b.R_lower[p] += shift * t.R_sd[p];
        b.R_upper[p] -= shift * t.R_sd[p];
    }
    return b;
}

// One run's band over all its trials (the halves are not needed here).
std::array<SetBands, kUnitSets> run_bands(const SimulationSums& sums, const std::vector<int>& sizes,
                                          int tokens, const std::vector<char>& tested,
                                          const Resamples* draws, const CalibrationSettings& s) {
    UnitValues P, R;
    const TrialCounts& c = sums.counts;
    const int S = static_cast<int>(sizes.size());
    for (UnitValues* v : {&P, &R}) {
        v->units = static_cast<int>(c.trials);
        v->points = S;
    }
    for (std::int64_t t = 0; t < c.trials; ++t)
        for (int k = 0; k < S; ++k) {
            P.values.push_back(trial_precision(c, t, k, sizes[k]));
            R.values.push_back(trial_recall(c, t, k, sizes[k]));
        }
    P.width = metric_widths(sizes, tokens);
    R.width.assign(S, 1.0);
    SetBands all;
    all.units = P.units;
    all.method = band_method_for(all.units);
    all.P.moments = point_moments(P);
    all.R.moments = point_moments(R);
    if (all.method == BandMethod::bootstrap) {
        all.P.critical = bootstrap_critical_values(P, all.P.moments, tested, *draws, 0, all.units,
                                                   kFamilyError, s.threads);
        all.R.critical = bootstrap_critical_values(R, all.R.moments, tested, *draws, 0, all.units,
                                                   kFamilyError, s.threads);
    }
    return {all, all, all};
}

bool falsified_somewhere(const ScanPoints& points, const SetTests& set, int side) {
    const JudgedSide judged = judge_side(points, set, side);
    for (char f : judged.falsified)
        if (f) return true;
    return false;
}

void check_settings(const PointSetup& setup, const CalibrationSettings& s) {
    if (setup.spec.d_infinite)
        throw InputError("--calibrate: needs a finite --d (at d = inf nothing is sampled)");
    if (s.runs < 10 || s.runs > 100000)
        throw InputError("--calibrate: " + std::to_string(s.runs) + ", expected 10 to 100000 runs");
    const double trials = static_cast<double>(kCalibrationTruthFactor + s.runs) * s.trials;
    if (trials >= 4294967296.0)
        throw InputError("--calibrate: " + std::to_string(s.runs) + " runs of " +
                         std::to_string(s.trials) + " trials and a long run of " +
                         std::to_string(kCalibrationTruthFactor) +
                         "x need more than 2^32 trial indices; lower --calibrate or --trials");
}

}  // namespace

CalibrationResult calibrate_verdict(const PointSetup& setup, const CalibrationSettings& s,
                                    Progress* progress) {
    check_settings(setup, s);
    const auto start = std::chrono::steady_clock::now();
    SimulationSpec spec = setup.spec;
    spec.seed = calibration_seed(s.seed);
    const TrialEngine engine(spec);
    const std::vector<int>& sizes = spec.sizes;
    ScanPoints points;
    points.facts = point_facts(setup.head, sizes, spec.ranking);
    points.regime.assign(sizes.size(), 0);
    const std::vector<char> tested = tested_points(points.facts);
    const Truth truth = long_run_truth(engine, s, sizes.size(), s.threads);
    const std::vector<std::size_t> P_window = shift_window(tested, truth.P_sd);
    const std::vector<std::size_t> R_window = shift_window(tested, truth.R_sd);
    if (P_window.empty() || R_window.empty())
        throw InputError("--calibrate: no N of this run varies across trials; nothing to judge");
    std::vector<double> shifts = {0};
    for (double shift : kCalibrationShifts)
        shifts.push_back(shift);
    std::vector<PointBounds> planted;
    for (double shift : shifts)
        planted.push_back(planted_bounds(truth, P_window, R_window, shift));

    CalibrationResult result;
    result.settings = s;
    for (std::size_t p : P_window)
        result.P_window.push_back(sizes[p]);
    for (std::size_t p : R_window)
        result.R_window.push_back(sizes[p]);
    std::vector<std::array<int, kSideCount>> falsified(shifts.size(), {0, 0, 0, 0});
    const std::int64_t offset = kCalibrationTruthFactor * s.trials;
    const bool bootstrap = band_method_for(static_cast<int>(s.trials)) == BandMethod::bootstrap;
    for (int r = 0; r < s.runs; ++r) {
        // Each run resamples with its own key, so the runs' verdicts are independent.
        std::unique_ptr<Resamples> draws;
        if (bootstrap)
            draws = std::make_unique<Resamples>(calibration_seed(s.seed + 1 + r), s.band_replicates,
                                                static_cast<int>(s.trials));
        const std::int64_t first = offset + static_cast<std::int64_t>(r) * s.trials;
        const SimulationSums run = engine.run(first, first + s.trials, s.threads);
        const auto bands = run_bands(run, sizes, static_cast<int>(setup.head.alpha.size()), tested,
                                     draws.get(), s);
        for (std::size_t c = 0; c < shifts.size(); ++c) {
            const KappaTests tests = fixed_bound_tests(bands, 1.0, planted[c]);
            for (int side = 0; side < kSideCount; ++side)
                falsified[c][side] += falsified_somewhere(points, tests.sets[all_units], side);
        }
        if (progress) progress->update(r + 1);
    }
    for (std::size_t c = 0; c < shifts.size(); ++c)
        for (int side = 0; side < kSideCount; ++side) {
            CalibrationCase k;
            k.metric = to_string(side_metric(side));
            k.side = to_string(side_kind(side));
            k.planted_true = shifts[c] == 0;
            k.shift = shifts[c];
            k.runs = s.runs;
            k.falsified = falsified[c][side];
            k.rate = static_cast<double>(k.falsified) / k.runs;
            std::tie(k.ci_lo, k.ci_hi) = clopper_pearson(k.falsified, k.runs);
            result.cases.push_back(k);
        }
    result.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return result;
}

std::string calibration_csv(const CalibrationResult& result) {
    std::string out = schema::csv_header(schema::page::simulate, schema::file::calibration) + '\n';
    for (const CalibrationCase& c : result.cases)
        out += c.metric + ',' + c.side + ',' + (c.planted_true ? "true" : "false") + ',' +
               format_double(c.shift) + ',' + std::to_string(c.runs) + ',' +
               std::to_string(c.falsified) + ',' + format_double(c.rate) + ',' +
               format_double(c.ci_lo) + ',' + format_double(c.ci_hi) + '\n';
    return out;
}

nlohmann::json calibration_json(const CalibrationResult& result) {
    nlohmann::json cases = nlohmann::json::array();
    for (const CalibrationCase& c : result.cases)
        cases.push_back({{"metric", c.metric},
                         {"side", c.side},
                         {"planted", c.planted_true ? "true" : "false"},
                         {"shift", c.shift},
                         {"runs", c.runs},
                         {"falsified", c.falsified},
                         {"rate", json_number(c.rate)},
                         {"ci_lo", json_number(c.ci_lo)},
                         {"ci_hi", json_number(c.ci_hi)}});
    return {{"runs", result.settings.runs},
            {"trials_per_run", result.settings.trials},
            {"truth_trials", kCalibrationTruthFactor * result.settings.trials},
            {"window_N", {{"P", result.P_window}, {"R", result.R_window}}},
            {"level", kFamilyError},
            {"seconds", result.seconds},
            {"rule",
             "truth = the means of a run 50x as long (its own random stream); per side a planted "
             "true bound on the truth at every N, and planted false bounds moved 2, 4 and 8 "
             "standard errors of a run's mean past the truth (below it for an upper side) on "
             "a window of N per metric (the tenth of the tested N centred on the one whose mean "
             "varies most), the truth elsewhere; each of R independent runs judged by the "
             "verdict's band; rate = the share of runs falsified somewhere, with its "
             "Clopper-Pearson 95 % interval: the false-alarm rate for the true bounds, the "
             "detection rate for the false ones"},
            {"cases", cases}};
}

}  // namespace attngeo::simulate
