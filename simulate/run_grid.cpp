// The Monte Carlo driver of a run: every grid point's trials of this shard, in chunks, with
// progress and a resumable exact state; see run.hpp.
#include "simulate/run.hpp"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "common/atomic_file.hpp"
#include "common/errors.hpp"
#include "common/format.hpp"
#include "common/manifest_values.hpp"
#include "common/progress.hpp"
#include "common/run_columns.hpp"
#include "common/run_schema.hpp"
#include "simulate/run_internal.hpp"
#include "simulate/trial_counts_file.hpp"

namespace fs = std::filesystem;

namespace attngeo::simulate {
namespace {

using Clock = std::chrono::steady_clock;

// The resumable state of a run: the exact sums so far, in sums.csv's format (a point's count
// is the trials it has done), and their per-trial counts, beside the configuration they belong to.
std::string checkpoint_config_text(const RunConfig& config) {
    nlohmann::json j = {{"config", to_json(config)}, {"random_stream", kRandomStream}};
    return j.dump(2) + "\n";
}

// The counts go first and sums.csv, the state's commit point, last: a kill between the two
// leaves counts ahead of the sums, which --resume cuts back (TrialsHeld::at_least).
void save_checkpoint(const Checkpointing& c, const RunConfig& config,
                     const std::vector<PointSetup>& setups,
                     const std::vector<SimulationSums>& sums) {
    std::vector<std::vector<int>> sizes;
    for (const PointSetup& setup : setups)
        sizes.push_back(setup.spec.sizes);
    write_trial_counts((fs::path(c.state_dir) / schema::file::trial_counts).string(), config, sizes,
                       sums);
    std::ostringstream text;
    text << schema::csv_header(schema::page::simulate, schema::file::monte_carlo_sums) << '\n';
    for (std::size_t g = 0; g < sums.size(); ++g)
        if (sums[g].trials > 0)
            write_sums_csv(text, static_cast<int>(g), setups[g].spec.sizes, sums[g]);
    write_file_atomic((fs::path(c.state_dir) / schema::file::monte_carlo_sums).string(),
                      text.str());
}

// The sums of an interrupted run, after checking they belong to this configuration.
std::vector<SimulationSums> load_checkpoint(const Checkpointing& c, const RunConfig& config) {
    const std::string config_path = (fs::path(c.state_dir) / schema::file::resume_config).string();
    std::ifstream in(config_path);
    std::ostringstream saved;
    saved << in.rdbuf();
    if (!in || saved.str() != checkpoint_config_text(config))
        throw InputError("--resume: '" + config_path +
                         "' is not the state of this command (other parameters, seed or version); "
                         "rerun without --resume into a new --out");
    if (!fs::exists(fs::path(c.state_dir) /
                    schema::file::monte_carlo_sums))  // killed before its first save
        return std::vector<SimulationSums>(grid_points(config).size());
    std::vector<SimulationSums> sums = read_sums(c.state_dir, config, "--resume");
    read_trial_counts(c.state_dir, config, sums, "--resume", TrialsHeld::at_least);
    return sums;
}

}  // namespace

Checkpointing open_checkpointing(const std::string& out, double every_s, bool resume) {
    if (!(every_s >= 0)) throw InputError("--checkpoint-every: expected seconds >= 0");
    Checkpointing c;
    c.state_dir = (fs::path(out) / schema::file::resume_state_folder).string();
    c.every_s = every_s;
    std::error_code ec;
    const bool saved = fs::exists(fs::path(c.state_dir) / schema::file::resume_config, ec);
    if (saved && !resume)
        throw InputError("--out '" + out +
                         "': holds an interrupted run (.partial/); pass --resume to continue it, "
                         "or remove that folder");
    c.resume = resume && saved;
    if (!c.resume) fs::remove_all(c.state_dir, ec);  // a state killed before its first save
    return c;
}

void discard_checkpointing(const std::string& out, const Checkpointing& checkpointing) {
    std::error_code ec;
    fs::remove_all(checkpointing.state_dir, ec);
    if (fs::is_empty(out, ec)) fs::remove(out, ec);
}

std::vector<SimulationSums> run_grid(const RunConfig& config, int threads, Progress* progress,
                                     RunTimings& timings, const Checkpointing& checkpointing) {
    const auto points = grid_points(config);
    std::vector<PointSetup> setups;
    for (const auto& p : points)
        setups.push_back(setup_point(config, p));  // validate all before running
    const bool checkpoints = !checkpointing.state_dir.empty();
    std::vector<SimulationSums> sums(points.size());
    if (checkpoints && checkpointing.resume) {
        sums = load_checkpoint(checkpointing, config);
    } else if (checkpoints) {
        std::error_code ec;
        fs::create_directories(checkpointing.state_dir, ec);
        if (ec)
            throw InputError("--out: cannot create '" + checkpointing.state_dir +
                             "': " + ec.message());
        write_file_atomic(
            (fs::path(checkpointing.state_dir) / schema::file::resume_config).string(),
            checkpoint_config_text(config));
    }
    const auto [first, last] = shard_trials(config.trials, config.shard);
    // Trials run in chunks so progress can be reported and the state saved; the sums are exact
    // integers, so the chunks add up to the same bits as one call, whatever was resumed.
    const std::int64_t chunk = std::max<std::int64_t>(256, (last - first + 63) / 64);
    std::int64_t done = 0;
    const auto start = Clock::now();
    auto last_save = start;
    for (std::size_t g = 0; g < points.size(); ++g) {
        sums[g].by_size.resize(setups[g].spec.sizes.size());
        if (setups[g].spec.d_infinite) continue;
        std::string where;  // a sweep's lines say which point is running
        if (points.size() > 1) {
            where = "grid point " + std::to_string(g + 1) + "/" + std::to_string(points.size());
            for (const auto& [name, value] : points[g].values)
                where += " " + name + "=" + format_double(value);
        }
        const std::int64_t resumed = sums[g].trials;
        if (resumed > last - first || (resumed % chunk != 0 && resumed != last - first))
            throw InputError("--resume: '" + checkpointing.state_dir + "/sums.csv' holds " +
                             std::to_string(resumed) + " trials for grid point " +
                             std::to_string(g) + ", not a saved chunk boundary");
        done += resumed;
        for (std::int64_t from = first + resumed; from < last; from += chunk) {
            const std::int64_t to = std::min(last, from + chunk);
            SimulationSums part = run_trials(setups[g].spec, from, to, threads);
            if (sums[g].trials == 0)
                sums[g] = std::move(part);
            else
                sums[g].merge(part);
            done += to - from;
            if (progress) progress->update(done, where);
            if (checkpoints && seconds_since(last_save) >= checkpointing.every_s) {
                save_checkpoint(checkpointing, config, setups, sums);
                last_save = Clock::now();
            }
        }
    }
    timings.monte_carlo_s = seconds_since(start);
    return sums;
}

}  // namespace attngeo::simulate
