// Tests for the per-trial counts (TrialCounts, per_trial.safetensors): K_in and K_out against a
// plain per-trial reference on every trial path, the same bytes for any thread count, shards
// merged and resumed runs equal to one run, and damaged files refused by `attngeo merge`.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "common/atomic_file.hpp"
#include "common/errors.hpp"
#include "common/safetensors.hpp"
#include "simulate/generator.hpp"
#include "simulate/montecarlo.hpp"
#include "simulate/rng.hpp"
#include "simulate/run.hpp"
#include "simulate/run_internal.hpp"
#include "simulate/trial_counts_file.hpp"
#include "tests/support/test_files.hpp"
#include "theory/metrics.hpp"

namespace fs = std::filesystem;
using namespace attngeo;
using namespace attngeo::simulate;

namespace {

fs::path scratch() {
    return test_support::scratch_folder("trial_counts");
}

test_support::CliResult run_cli(const std::string& args) {
    return test_support::run_program(ATTNGEO_EXE, args, scratch());
}

// n = 48 tokens, d = 16, κ given (no scan to wait for).
RunConfig counts_config(std::int64_t trials, const std::string& sizes = "pow2") {
    RunConfig config;
    config.model.assumption3.L = 47;
    config.model.assumption3.T1 = 6;
    config.model.assumption3.T2 = 36;
    config.model.length_given = true;
    config.d = 16;
    config.trials = trials;
    config.sizes = sizes;
    config.kappa = 1.0;
    return config;
}

// The CLI spelling of counts_config.
const std::string kModelFlags = " --L 47 --T1 6 --T2 36 --d 16 --kappa 1 --N pow2 --quiet";

SimulationSpec spec_of(const RunConfig& config) {
    return setup_point(config, grid_points(config).front()).spec;
}

}  // namespace

// Every trial path (the Euclidean single-precision Gram, the cosine double Gram, the per-N path,
// a trial-dependent ranking) stores the counts the per-N reference gives on the same trial's
// values, in row trial − first; the per-trial P and R are the reference's doubles, and they
// add up to the run's exact sums.
TEST(TrialCounts, EqualAPlainReferenceTrialByTrial) {
    struct Case {
        const char* name;
        std::string sizes, distance, rank;
        double norm_cv;
    };
    const std::vector<Case> cases = {
        {"all N, euclidean", "all", "euclidean", "attn", 0},
        {"all N, cosine", "all", "cosine", "attn", 0},
        {"per N, euclidean", "pow2", "euclidean", "attn", 0},
        {"all N, contrib, norm noise", "all", "euclidean", "contrib", 0.2}};
    const std::int64_t first = 7, last = 19;
    for (const Case& c : cases) {
        RunConfig config = counts_config(100, c.sizes);
        config.distance = c.distance;
        config.rank = c.rank;
        config.norm_cv = c.norm_cv;
        const SimulationSpec spec = spec_of(config);
        const SimulationSums sums = run_trials(spec, first, last, 2);
        const TrialCounts& counts = sums.counts;
        const int S = static_cast<int>(spec.sizes.size());
        ASSERT_EQ(counts.first, first) << c.name;
        ASSERT_EQ(counts.trials, last - first) << c.name;
        ASSERT_EQ(counts.size_count, S) << c.name;
        ASSERT_EQ(counts.K_in.size(), static_cast<std::size_t>((last - first) * S)) << c.name;
        const theory::HeadModel head = simulation_head(spec);
        const ValueGenerator generator(generator_settings(spec, head));
        std::vector<MomentSums> precision(S), recall(S);
        int largest = 0, differing = 0;
        for (std::int64_t trial = first; trial < last; ++trial) {
            RandomStream stream(spec.seed, spec.grid_point, static_cast<std::uint32_t>(trial));
            theory::TokenGeometry tokens;
            tokens.alpha = head.alpha;
            generator.draw_values(stream, tokens.values);
            const auto want = theory::selection_metrics_reference(tokens, spec.sizes, spec.ranking,
                                                                  spec.distance);
            const std::int64_t row = trial - first;
            for (int s = 0; s < S; ++s) {
                const std::size_t at = static_cast<std::size_t>(row * S + s);
                const int in = std::abs(counts.K_in[at] - want[s].K_in);
                const int out = std::abs(counts.K_out[at] - want[s].K_out);
                largest = std::max({largest, in, out});
                differing += in != 0 || out != 0;
                EXPECT_EQ(trial_precision(counts, row, s, spec.sizes[s]),
                          want[s].precision_at_rmax);
                EXPECT_EQ(trial_recall(counts, row, s, spec.sizes[s]), want[s].recall_at_rmin);
                precision[s].add(trial_precision(counts, row, s, spec.sizes[s]));
                recall[s].add(trial_recall(counts, row, s, spec.sizes[s]));
            }
        }
        for (int s = 0; s < S; ++s) {
            EXPECT_TRUE(precision[s] == sums.by_size[s].precision) << c.name << " N " << s;
            EXPECT_TRUE(recall[s] == sums.by_size[s].recall) << c.name << " N " << s;
        }
        std::printf("%-28s: %d trials x %d sizes, largest |K - reference| %d (%d differ)\n", c.name,
                    static_cast<int>(last - first), S, largest, differing);
        EXPECT_EQ(largest, 0) << c.name;
    }
}

// Blocks join only in trial order: a split run appends to the whole run's rows, and a block
// that does not start where the last one ended is a programming error.
TEST(TrialCounts, BlocksAppendInTrialOrderOnly) {
    const SimulationSpec spec = spec_of(counts_config(100));
    const SimulationSums whole = run_trials(spec, 0, 37, 3);
    SimulationSums split = run_trials(spec, 0, 11, 2);
    split.merge(run_trials(spec, 11, 37, 1));
    EXPECT_EQ(split.counts.first, 0);
    EXPECT_EQ(split.counts.trials, 37);
    EXPECT_EQ(split.counts.K_in, whole.counts.K_in);
    EXPECT_EQ(split.counts.K_out, whole.counts.K_out);
    SimulationSums gap = run_trials(spec, 0, 10, 1);
    EXPECT_THROW(gap.merge(run_trials(spec, 20, 30, 1)), std::logic_error);
    SimulationSums backwards = run_trials(spec, 10, 20, 1);
    EXPECT_THROW(backwards.merge(run_trials(spec, 0, 10, 1)), std::logic_error);
    EXPECT_EQ(backwards.trials, 10) << "a refused merge adds nothing";
    SimulationSums empty;
    empty.merge(run_trials(spec, 5, 9, 1));  // an empty block takes the other's place
    EXPECT_EQ(empty.counts.first, 5);
    EXPECT_EQ(empty.counts.trials, 4);
}

// --threads 1, 2 and 3 write the same per_trial.safetensors (and sums.csv), listed beside
// sums.csv in the manifest, with one [T, S] block per grid point.
TEST(TrialCounts, SameBytesForAnyThreadCount) {
    std::vector<fs::path> dirs;
    for (int threads : {1, 2, 3}) {
        dirs.push_back(scratch() / ("threads" + std::to_string(threads)));
        fs::remove_all(dirs.back());
        const auto r = run_cli("simulate" + kModelFlags + " --trials 300 --threads " +
                               std::to_string(threads) + " --out " + dirs.back().string());
        ASSERT_EQ(r.exit_code, 0) << r.err;
    }
    for (std::size_t i = 1; i < dirs.size(); ++i)
        for (const char* file : {"per_trial.safetensors", "sums.csv", "simulate.csv"})
            EXPECT_EQ(test_support::slurp(dirs[i] / file), test_support::slurp(dirs[0] / file))
                << file << " with " << i + 1 << " threads";
    const SafetensorsFile file((dirs[0] / "per_trial.safetensors").string());
    EXPECT_EQ(file.names(), (std::vector<std::string>{"K_in.0", "K_out.0", "N.0"}));
    const std::vector<int> sizes = spec_of(counts_config(300)).sizes;
    const std::int64_t S = static_cast<std::int64_t>(sizes.size());
    EXPECT_EQ(file.get("K_in.0").shape, (std::vector<std::int64_t>{300, S}));
    EXPECT_EQ(file.get("K_in.0").dtype, DType::I32);
    EXPECT_EQ(file.get("N.0").dtype, DType::I64);
    EXPECT_EQ(file.metadata().at("first_trial"), "0");
    const std::string manifest = test_support::slurp(dirs[0] / "manifest.json");
    EXPECT_NE(manifest.find("\"sums.csv\",\n    \"per_trial.safetensors\""), std::string::npos)
        << manifest.substr(manifest.find("\"outputs\""), 200);
    fs::remove_all(scratch());
}

// A sweep with a d = inf point, run as shards 0/3, 1/3, 2/3 and merged (named out of order),
// has the unsharded run's per_trial.safetensors byte for byte; the d = inf point has no
// tensors, and each shard's counts start at its first trial.
TEST(TrialCounts, MergedShardsEqualTheUnshardedRun) {
    const std::string sweep =
        "sweep --set d=16,inf --L 47 --T1 6 --T2 36 --kappa 1 --N pow2 --quiet --trials 300";
    const fs::path whole = scratch() / "shard_whole", merged = scratch() / "shard_merged";
    fs::remove_all(whole);
    fs::remove_all(merged);
    ASSERT_EQ(run_cli(sweep + " --out " + whole.string()).exit_code, 0);
    std::vector<std::string> shards;
    for (int i = 0; i < 3; ++i) {
        shards.push_back((scratch() / ("shard" + std::to_string(i))).string());
        fs::remove_all(shards.back());
        const auto r =
            run_cli(sweep + " --shard " + std::to_string(i) + "/3 --out " + shards.back());
        ASSERT_EQ(r.exit_code, 0) << r.err;
        const SafetensorsFile part(shards.back() + "/per_trial.safetensors");
        EXPECT_EQ(part.metadata().at("first_trial"), std::to_string(100 * i));
        EXPECT_EQ(part.get("K_out.0").shape.at(0), 100);
    }
    const auto m = run_cli("merge " + shards[2] + " " + shards[0] + " " + shards[1] + " --out " +
                           merged.string());
    ASSERT_EQ(m.exit_code, 0) << m.err;
    for (const char* file : {"per_trial.safetensors", "sums.csv", "sweep.csv"})
        EXPECT_EQ(test_support::slurp(merged / file), test_support::slurp(whole / file)) << file;
    EXPECT_EQ(SafetensorsFile((whole / "per_trial.safetensors").string()).names(),
              (std::vector<std::string>{"K_in.0", "K_out.0", "N.0"}));
    fs::remove_all(scratch());
}

namespace {

// A saved state as run_grid's save writes it: per_trial.safetensors, then sums.csv, from the
// first `counts_trials[g]` and `sums_trials[g]` trials of each grid point.
void write_state(const fs::path& state, const RunConfig& config,
                 const std::vector<std::int64_t>& counts_trials,
                 const std::vector<std::int64_t>& sums_trials) {
    const auto points = grid_points(config);
    std::vector<std::vector<int>> sizes;
    std::vector<SimulationSums> counted(points.size()), summed(points.size());
    std::ostringstream text;
    text << "grid,N,quantity,count,sum,sum_squares\n";
    for (const GridPoint& p : points) {
        const SimulationSpec spec = setup_point(config, p).spec;
        sizes.push_back(spec.sizes);
        counted[p.index] = run_trials(spec, 0, counts_trials[p.index], 2);
        summed[p.index] = run_trials(spec, 0, sums_trials[p.index], 2);
        if (sums_trials[p.index] > 0) write_sums_csv(text, p.index, spec.sizes, summed[p.index]);
    }
    write_trial_counts((state / "per_trial.safetensors").string(), config, sizes, counted);
    write_file_atomic((state / "sums.csv").string(), text.str());
}

}  // namespace

// A run resumed from a saved state writes the uninterrupted run's files byte for byte,
// per_trial.safetensors included — also from a state whose counts are a chunk ahead of its
// sums (killed between the two writes); counts behind the sums, or none, are refused.
TEST(TrialCounts, ResumedRunsEqualTheUninterruptedRun) {
    RunConfig config = counts_config(300);  // chunks of 256 trials: 256 + 44 per point
    config.kind = "sweep";
    config.sweep.emplace_back("beta", std::vector<double>{0.05, 0.2});
    const fs::path reference = scratch() / "resume_reference";
    fs::remove_all(reference);
    RunTimings timings;
    write_run(reference.string(), config, run_grid(config, 2, nullptr, timings), 2,
              nlohmann::json::object(), timings);
    struct State {
        const char* name;
        std::vector<std::int64_t> counts, sums;
    };
    for (const State& s : {State{"first chunk", {256, 0}, {256, 0}},
                           State{"second point started", {300, 256}, {300, 256}},
                           State{"counts a chunk ahead", {300, 256}, {300, 0}},
                           State{"nothing summed yet", {256, 0}, {0, 0}}}) {
        const fs::path out = scratch() / "resume_out";
        fs::remove_all(out);
        const Checkpointing fresh = open_checkpointing(out.string(), 0, false);
        (void)run_grid(config, 1, nullptr, timings, fresh);  // leaves run.json and a state
        write_state(out / ".partial", config, s.counts, s.sums);
        const Checkpointing resumed = open_checkpointing(out.string(), 0, true);
        ASSERT_TRUE(resumed.resume) << s.name;
        const auto sums = run_grid(config, 3, nullptr, timings, resumed);
        write_run(out.string(), config, sums, 2, nlohmann::json::object(), timings);
        for (const char* file : {"per_trial.safetensors", "sums.csv", "sweep.csv", "kappa_scan.csv",
                                 "verdict.csv", "table1.csv"})
            EXPECT_EQ(test_support::slurp(out / file), test_support::slurp(reference / file))
                << s.name << ": " << file;
    }
    const fs::path bad = scratch() / "resume_bad";
    fs::remove_all(bad);
    (void)run_grid(config, 1, nullptr, timings, open_checkpointing(bad.string(), 0, false));
    write_state(bad / ".partial", config, {256, 0}, {300, 0});
    test_support::expect_input_error(
        [&] { run_grid(config, 1, nullptr, timings, open_checkpointing(bad.string(), 0, true)); },
        {"--resume", "per_trial.safetensors", "K_in.0", "holds 256 trials, expected 300..300"});
    fs::remove(bad / ".partial" / "per_trial.safetensors");
    test_support::expect_input_error(
        [&] { run_grid(config, 1, nullptr, timings, open_checkpointing(bad.string(), 0, true)); },
        {"--resume", "per_trial.safetensors", "no such file"});
    fs::remove_all(scratch());
}

namespace {

// A copy of `good` whose per_trial.safetensors is rewritten by `edit` (tensors in file order,
// and the metadata).
using TensorEdit = std::function<void(std::vector<HostTensor>&, std::vector<std::vector<char>>&,
                                      std::map<std::string, std::string>&)>;

fs::path damaged_copy(const fs::path& good, const std::string& name, const TensorEdit& edit) {
    const fs::path dir = scratch() / ("damaged_" + name);
    fs::remove_all(dir);
    fs::copy(good, dir);
    std::vector<HostTensor> tensors;
    std::vector<std::vector<char>> bytes;  // each tensor's own copy, for edit to change
    std::map<std::string, std::string> metadata;
    {
        const SafetensorsFile file((good / "per_trial.safetensors").string());
        metadata = file.metadata();
        for (const char* tensor : {"K_in.0", "K_out.0", "N.0"}) {
            const HostTensor t = file.get(tensor);
            bytes.emplace_back(static_cast<const char*>(t.data),
                               static_cast<const char*>(t.data) + t.bytes);
            tensors.push_back(t);
        }
    }
    for (std::size_t i = 0; i < tensors.size(); ++i) {
        tensors[i].data = bytes[i].data();
        tensors[i].owner.reset();
    }
    edit(tensors, bytes, metadata);
    for (std::size_t i = 0; i < tensors.size(); ++i) {
        tensors[i].data = bytes[i].data();
        tensors[i].bytes = bytes[i].size();
    }
    write_safetensors((dir / "per_trial.safetensors").string(), tensors, metadata);
    return dir;
}

// Element `index` of a tensor's bytes, as type T.
template <class T>
T element(const std::vector<char>& bytes, std::size_t index) {
    T value;
    std::memcpy(&value, bytes.data() + index * sizeof(T), sizeof(T));
    return value;
}
template <class T>
void set_element(std::vector<char>& bytes, std::size_t index, T value) {
    std::memcpy(bytes.data() + index * sizeof(T), &value, sizeof(T));
}

}  // namespace

// Every damage to per_trial.safetensors is exit code 2 from `attngeo merge` with one line naming
// the file and what is wrong: a shape, a dtype, a missing or foreign tensor, N, a count out of
// range, counts that do not give sums.csv's sums, the first trial, a missing or truncated file.
TEST(TrialCounts, DamagedFilesAreOneLineNamingThem) {
    const fs::path good = scratch() / "damage_good";
    fs::remove_all(good);
    ASSERT_EQ(run_cli("simulate" + kModelFlags + " --trials 40 --out " + good.string()).exit_code,
              0);
    const std::vector<int> sizes = spec_of(counts_config(40)).sizes;
    const std::size_t S = sizes.size();
    const std::string shape = "[40, " + std::to_string(S) + "]";
    struct Damage {
        std::string name;
        TensorEdit edit;
        std::vector<std::string> needles;
    };
    const std::vector<Damage> damages = {
        {"short",
         [&](auto& t, auto& b, auto&) {
             b[0].resize(39 * S * 4);
             t[0].shape = {39, static_cast<std::int64_t>(S)};
         },
         {"K_in.0", "[39, " + std::to_string(S) + "], expected I32 " + shape}},
        {"dtype",
         [&](auto& t, auto& b, auto&) {
             b[1].resize(b[1].size() * 2);
             t[1].dtype = DType::I64;
         },
         {"K_out.0", "is I64", "expected I32"}},
        {"missing_tensor",
         [](auto& t, auto& b, auto&) {
             t.erase(t.begin() + 1);
             b.erase(b.begin() + 1);
         },
         {"no tensor 'K_out.0'", "expected I32 " + shape}},
        {"foreign_tensor",
         [](auto& t, auto& b, auto&) {
             t.push_back(t[2]);
             t.back().name = "N.1";
             b.push_back(b[2]);
         },
         {"unexpected tensor 'N.1'"}},
        {"sizes",
         [](auto&, auto& b, auto&) { set_element<std::int64_t>(b[2], 1, 3); },
         {"N.0", "holds N = 3 at index 1, expected " + std::to_string(sizes[1])}},
        {"k_out_range",
         [](auto&, auto& b, auto&) { set_element<std::int32_t>(b[1], 0, 48); },
         {"K_out.0", "row 0 (trial 0), N = 1", "K_out = 48, expected 0..47 (n = 48)"}},
        {"k_in_negative",
         [&](auto&, auto& b, auto&) { set_element<std::int32_t>(b[0], S + 1, -1); },
         {"K_in.0", "row 1 (trial 1), N = " + std::to_string(sizes[1]), "K_in = -1"}},
        {"not_the_sums",
         [&](auto&, auto& b, auto&) {
             // One K_out at N = 1 moved by one, inside its range: only sums.csv can tell.
             const auto k = element<std::int32_t>(b[1], 5 * S);
             set_element<std::int32_t>(b[1], 5 * S, k > 0 ? k - 1 : k + 1);
         },
         {"grid point 0, N = 1", "the counts give P's count, sum, sum_squares", "sums.csv holds"}},
        {"first_trial",
         [](auto&, auto&, auto& m) { m["first_trial"] = "4"; },
         {"metadata first_trial = '4', expected '0'"}},
    };
    auto expect_refused = [&](const fs::path& dir, const std::vector<std::string>& needles) {
        const auto r = run_cli("merge " + dir.string() + " --out " + (scratch() / "m").string());
        EXPECT_EQ(r.exit_code, 2) << dir << ": " << r.err;
        EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "not one line: " << r.err;
        const std::string file = (dir / "per_trial.safetensors").string();
        EXPECT_NE(r.err.find(file), std::string::npos) << "does not name " << file << ": " << r.err;
        for (const std::string& needle : needles)
            EXPECT_NE(r.err.find(needle), std::string::npos)
                << "lacks '" << needle << "': " << r.err;
        std::printf("refused: %s", r.err.c_str());
    };
    for (const Damage& d : damages)
        expect_refused(damaged_copy(good, d.name, d.edit), d.needles);
    const fs::path missing = scratch() / "damaged_missing_file";
    fs::remove_all(missing);
    fs::copy(good, missing);
    fs::remove(missing / "per_trial.safetensors");
    expect_refused(missing, {"merge", "no such file"});
    const fs::path truncated = scratch() / "damaged_truncated";
    fs::remove_all(truncated);
    fs::copy(good, truncated);
    const std::string text = test_support::slurp(good / "per_trial.safetensors");
    std::ofstream(truncated / "per_trial.safetensors", std::ios::binary)
        << text.substr(0, text.size() / 2);
    expect_refused(truncated, {"merge"});
    // The genuine folder still merges, to its own bytes.
    const fs::path merged = scratch() / "damage_merged";
    fs::remove_all(merged);
    ASSERT_EQ(run_cli("merge " + good.string() + " --out " + merged.string()).exit_code, 0);
    EXPECT_EQ(test_support::slurp(merged / "per_trial.safetensors"),
              test_support::slurp(good / "per_trial.safetensors"));
    fs::remove_all(scratch());
}
