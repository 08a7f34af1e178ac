// Merging the shards of one run: their configurations checked equal, their exact sums added,
// their per-trial counts concatenated in shard order, and the combined folder written as if it
// had been one run; see run.hpp.
#include "simulate/run.hpp"

#include <cmath>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "common/errors.hpp"
#include "common/json_file.hpp"
#include "common/manifest_values.hpp"
#include "simulate/run_internal.hpp"
#include "simulate/trial_counts_file.hpp"

namespace attngeo::simulate {
namespace {

// A shard's sums must hold exactly its slice of trials at every grid point: anything else is a
// shard that stopped early or was edited, and merging it would silently change the estimate.
void check_shard_trials(const std::string& dir, const RunConfig& config,
                        const std::vector<SimulationSums>& sums) {
    const auto [first, last] = shard_trials(config.trials, config.shard);
    for (std::size_t g = 0; g < sums.size(); ++g) {
        if (sums[g].by_size.empty() || sums[g].trials == last - first) continue;
        if (std::isinf(setup_point(config, grid_points(config)[g]).d)) continue;  // no trials
        throw InputError("merge: '" + dir + "' grid point " + std::to_string(g) + " holds " +
                         std::to_string(sums[g].trials) + " trials, expected " +
                         std::to_string(last - first) + " for shard " +
                         std::to_string(config.shard.index) + "/" +
                         std::to_string(config.shard.count));
    }
}

// A shard's configuration from its manifest: drawn from this version's random stream, with
// every parameter valid (an invalid one is named with this manifest, not as a flag).
RunConfig shard_config(const std::string& dir) {
    const nlohmann::json manifest = read_run_manifest(dir, {"simulate", "sweep"});
    const std::string path = run_manifest_path(dir);
    return with_json_context(path, [&] {
        const std::string stream =
            manifest.value("random_stream", std::string(kUnnamedRandomStream));
        if (stream != kRandomStream) {
            throw InputError("merge: '" + path + "' was drawn from the random stream '" + stream +
                             "', this attngeo draws '" + kRandomStream +
                             "': rerun that shard with this version");
        }
        RunConfig config;
        try {
            config = run_config_from_json(manifest.at("config"));
            for (const GridPoint& p : grid_points(config))
                (void)setup_point(config, p, ConfigSource::manifest);
        } catch (const InputError& e) {
            throw InputError("merge: '" + path + "': " + e.what());
        } catch (const std::domain_error& e) {
            throw InputError("merge: '" + path + "': " + e.what());
        }
        return config;
    });
}

// Every shard 0..count−1 exactly once, or the merged estimate would cover only part of the run.
void check_complete(const std::set<int>& shards, int count) {
    std::string missing;
    for (int i = 0; i < count; ++i)
        if (!shards.count(i))
            missing +=
                (missing.empty() ? "" : ", ") + std::to_string(i) + "/" + std::to_string(count);
    if (!missing.empty())
        throw InputError(
            "merge: shard" + std::string(missing.find(',') != std::string::npos ? "s " : " ") +
            missing + " missing: pass every shard of the run (" + std::to_string(shards.size()) +
            " of " + std::to_string(count) + " given)");
}

}  // namespace

nlohmann::json merge_runs(const std::vector<std::string>& dirs, const std::string& out, int threads,
                          const nlohmann::json& provenance) {
    if (dirs.empty()) throw InputError("merge: no run folders given");
    std::optional<RunConfig> merged;
    nlohmann::json reference_config;
    std::set<int> shards;
    std::map<int, std::vector<SimulationSums>> by_shard;  // merged by index: counts in trial order
    for (const auto& dir : dirs) {
        RunConfig config = shard_config(dir);
        nlohmann::json comparable = to_json(config);
        comparable.erase("shard");
        if (!merged) {
            merged = config;
            reference_config = comparable;
        } else if (comparable != reference_config) {
            throw InputError("merge: '" + dir + "' was run with a different configuration than '" +
                             dirs.front() + "' (only --shard may differ)");
        }
        if (config.shard.count != merged->shard.count) {
            throw InputError("merge: '" + dir + "' has shard count " +
                             std::to_string(config.shard.count) + ", expected " +
                             std::to_string(merged->shard.count));
        }
        if (!shards.insert(config.shard.index).second) {
            throw InputError("merge: shard " + std::to_string(config.shard.index) + "/" +
                             std::to_string(config.shard.count) + " appears twice ('" + dir + "')");
        }
        auto sums = read_sums(dir, config);
        check_shard_trials(dir, config, sums);
        read_trial_counts(dir, config, sums, "merge");
        by_shard[config.shard.index] = std::move(sums);
    }
    check_complete(shards, merged->shard.count);
    std::vector<SimulationSums> total = std::move(by_shard.begin()->second);
    for (auto shard = std::next(by_shard.begin()); shard != by_shard.end(); ++shard)
        for (std::size_t g = 0; g < total.size(); ++g)
            total[g].merge(shard->second[g]);
    RunConfig config = *merged;
    config.shard = Shard{};  // the merged folder covers what its shards covered
    nlohmann::json extra = provenance;
    extra["merged_from"] = dirs;
    extra["shards_present"] = std::vector<int>(shards.begin(), shards.end());
    extra["shards_expected"] = merged->shard.count;
    extra["complete"] = static_cast<int>(shards.size()) == merged->shard.count;
    return write_run(out, config, total, threads, extra, RunTimings{});
}

}  // namespace attngeo::simulate
