// `attngeo simulate`, `attngeo sweep`, `attngeo merge`: Monte Carlo runs under Assumptions
// 1–3 with the bounds beside them (docs/design.md §5, §9), and `simulate --as-extract`, planted
// heads written as an extract folder (docs/design.md §7). The work is in simulate/run.hpp,
// simulate/planted.hpp.
#include <cmath>
#include <filesystem>
#include <iostream>
#include <limits>
#include <optional>
#include <sstream>

#include "app/commands.hpp"
#include "app/model_options.hpp"
#include "common/csv.hpp"
#include "common/errors.hpp"
#include "common/format.hpp"
#include "common/output_folder.hpp"
#include "common/progress.hpp"
#include "common/run_columns.hpp"
#include "common/run_schema.hpp"
#include "compare/truncation_summary.hpp"
#include "empirical/truncate/truncate_merge.hpp"
#include "simulate/calibration.hpp"
#include "simulate/planted.hpp"
#include "simulate/run.hpp"
#include "theory/bounds.hpp"
#ifdef ATTNGEO_WITH_EMPIRICAL
#include "common/json_file.hpp"
#include "empirical/extract/extract.hpp"
#endif

namespace attngeo::cli {
namespace {

namespace fs = std::filesystem;

#ifdef ATTNGEO_WITH_EMPIRICAL
// merge serves simulate/sweep shards and extract shards; the first folder's manifest decides.
bool is_extract_run(const std::string& dir) {
    try {
        (void)read_run_manifest(dir, {"extract"});
        return true;
    } catch (const InputError&) {
        return false;  // merge_runs names what is wrong with the folder
    }
}
#endif

struct SimulateOptions {
    simulate::RunConfig config;
    std::string d = theory::value_text(theory::parameter("d"), theory::paper_preset::d);
    std::string kappa;  // empty: fit
    std::string shard = "0/1";
    std::vector<std::string> sets;
    int threads = 0;
    bool quiet = false, resume = false;
    double checkpoint_every = 30;
    std::string out;
    int calibrate = 0;  // --calibrate R: runs of the verdict's calibration (0: none)
    // simulate --as-extract (planted heads; simulate/planted.hpp)
    std::string as_extract;
    int heads = 0;
    std::int64_t docs = 32;
    double alpha_noise = 0;
    std::vector<std::string> draws;
};

double parse_d(const std::string& text) {
    if (text == "inf") return std::numeric_limits<double>::infinity();
    return parse_finite_double(text, "--d");
}

void add_run_options(CLI::App& app, SimulateOptions& o) {
    auto& c = o.config;
    add_model_options(app, c.model);
    add_table_option(app, "d", o.d, " (expected Gram, no sampling)")->capture_default_str();
    add_table_option(app, "kappa", o.kappa,
                     "; judged alone; default: each side's kappa set by test inversion "
                     "(docs/design.md section 7)");
    app.add_option("--band-replicates", c.band_replicates,
                   "Bootstrap replicates of the verdict's simultaneous band over N")
        ->capture_default_str();
    app.add_option("--trials", c.trials, "Monte Carlo trials")->capture_default_str();
    app.add_option("--seed", c.seed,
                   "RNG seed (Philox key); trials are keyed by (seed, grid point, trial)")
        ->capture_default_str();
    app.add_option("--threads", o.threads,
                   "OpenMP threads (0 = all cores); results do not depend on it")
        ->capture_default_str();
    app.add_option("--N", c.sizes,
                   "Selection sizes: all (Gram path) | pow2 | list like 1,2,4 (per-N path)")
        ->capture_default_str();
    app.add_option("--rank", c.rank, "Top-N ranking: attn or contrib")
        ->check(CLI::IsMember(choice_list(theory::kRankingChoices)))
        ->capture_default_str();
    app.add_option("--distance", c.distance, "euclidean or cosine")
        ->check(CLI::IsMember(choice_list(theory::kDistanceChoices)))
        ->capture_default_str();
    app.add_option("--sink-mode", c.sink_mode,
                   "exact: sink from K^-1 1 (fails when rho0 is infeasible); project: mixes the "
                   "sink into every "
                   "token, which changes the token-token cosines to rho0^2 + (1 - rho0^2) r^|i-j|")
        ->check(CLI::IsMember(choice_list(simulate::kSinkModeChoices)))
        ->capture_default_str();
    add_table_option(app, "norm_cv", c.norm_cv)->capture_default_str();
    app.add_option("--shard", o.shard,
                   "Run shard i of n (i/n): trials [i T/n, (i+1) T/n); combine with attngeo merge")
        ->capture_default_str();
    app.add_option("--out", o.out, "Output folder");
    app.add_flag("--quiet", o.quiet, "No progress on stderr");
    app.add_flag("--resume", o.resume,
                 "Continue an interrupted run of the same command from OUT/.partial (the result "
                 "is bit-identical to an uninterrupted run)");
    app.add_option("--checkpoint-every", o.checkpoint_every,
                   "Seconds between saves of the exact state to OUT/.partial (0: every chunk)")
        ->capture_default_str();
}

nlohmann::json provenance(const CLI::App& app) {
    nlohmann::json from_preset = nlohmann::json::array();
    for (const theory::ParameterDescriptor& p : theory::parameter_table()) {
        if (p.from_preset && app.count(p.flag) == 0) from_preset.push_back(std::string(p.flag + 2));
    }
    return {{"command", command_line()},
            {"explicit_flags", explicit_flags(app)},
            {"from_preset", from_preset}};
}

void finish_config(SimulateOptions& o, const CLI::App& app) {
    note_explicit_model_flags(app, o.config.model);
    o.config.d = parse_d(o.d);
    if (!o.kappa.empty()) o.config.kappa = parse_finite_double(o.kappa, "--kappa");
    o.config.shard = parse_shard(o.shard);
    if (o.threads < 0)
        throw InputError("--threads: " + std::to_string(o.threads) + ", expected >= 0");
}

// One side of the verdict in a few words: its state, κ set and κ_edge, the worst point, the
// informative points.
std::string side_words(const nlohmann::json& side) {
    std::ostringstream s;
    s.precision(3);
    s << side.at("state").get<std::string>() << " (kappa "
      << side.at("kappa_set").get<std::string>();
    if (side.at("kappa_edge").is_number()) s << ", edge " << side.at("kappa_edge").get<double>();
    s << ")";
    const nlohmann::json& worst = side.at("worst");
    if (side.at("falsified_at_judged").get<int>() > 0 && worst.at("N").is_number() &&
        worst.at("z").is_number())
        s << " worst N=" << worst.at("N").get<int>() << " z=" << worst.at("z").get<double>();
    s << " informative " << side.at("informative_points").get<int>() << "/"
      << side.at("points").get<int>();
    return s.str();
}

// The verdict per variant (docs/design.md §7) on stdout, with the information share.
void print_summary(const nlohmann::json& manifest, const std::string& out) {
    std::ostringstream s;
    s.precision(3);
    for (const auto& point : manifest.at("points")) {
        if (manifest.at("kind") == "sweep") s << "grid " << point.at("grid").get<int>() << ":\n";
        for (theory::BoundVariant v : theory::bound_variants()) {
            const char* variant = theory::to_string(v);
            const nlohmann::json& env = point.at("envelopes").at(variant);
            s << "  " << variant << ":";
            for (const char* metric : {"P", "R"})
                for (const char* side : {"lower", "upper"})
                    s << " " << metric << " " << side << " "
                      << side_words(env.at("sides").at(metric).at(side)) << ";";
            const nlohmann::json& share = env.at("information_share").at("both");
            s << " information share ";
            if (share.is_number())
                s << share.get<double>();
            else
                s << "-";
            s << '\n';
        }
    }
    s << "wrote '" << out << "'\n";
    std::cout << s.str();
}

void add_planted_options(CLI::App& app, SimulateOptions& o) {
    app.add_option("--as-extract", o.as_extract,
                   "Instead of the Monte Carlo run: write an extract folder of --heads planted "
                   "heads (Assumptions 1-3 with the parameters above, or drawn per head by "
                   "--draw) and OUT/planted.csv, for attngeo compare --truth (not with --out)");
    app.add_option("--heads", o.heads, "--as-extract: planted heads K (all in layer 0)");
    app.add_option("--docs", o.docs, "--as-extract: documents per head")->capture_default_str();
    app.add_option("--alpha-noise", o.alpha_noise,
                   "--as-extract: sigma of the per-document log-normal noise on alpha_i, i >= 1 "
                   "(alpha_0 = p_sink exactly; renormalised)")
        ->capture_default_str();
    app.add_option("--draw", o.draws,
                   "--as-extract: name=lo:hi draws the parameter per head uniformly from "
                   "[lo, hi] (repeatable; C lambda beta rho0 p_sink eta omega T1 T2 norm_cv)");
}

// The flags of `simulate --as-extract` into a planted request; InputError naming the flag.
simulate::PlantedRequest planted_request(SimulateOptions& o, const CLI::App& app) {
    if (!o.out.empty())
        throw InputError("--out: not with --as-extract (the planted folder is --as-extract's)");
    if (app.count("--heads") == 0) throw InputError("--as-extract: needs --heads K");
    // Flags of the Monte Carlo run that a planted folder has no use for: refused, not ignored.
    for (const char* flag : {"--resume", "--shard", "--trials", "--kappa", "--checkpoint-every"})
        if (app.count(flag) > 0)
            throw InputError(std::string(flag) + ": not with --as-extract (no Monte Carlo run)");
    finish_config(o, app);
    const theory::ModelSource& source = o.config.model;
    if (source.profile != "assumption3" || !source.alpha_file.empty() ||
        !source.norms_file.empty() || !source.cos_file.empty())
        throw InputError(
            "--as-extract: plants Assumption 1-3 heads; --profile other than assumption3, "
            "--alpha, --norms and --cos do not apply");
    if (!std::isfinite(o.config.d) || o.config.d != std::floor(o.config.d) || o.config.d < 1 ||
        o.config.d > std::numeric_limits<int>::max())
        throw InputError("--d: " + o.d + ", expected a whole dimension >= 1 with --as-extract");
    const theory::ModelParameters params = load_checked_model(app, o.config.model);
    simulate::PlantedRequest r;
    r.base.profile = params.profile;
    r.base.C = params.C;
    r.base.lambda = params.lambda;
    r.base.beta = params.beta;
    r.base.rho0 = params.rho0;
    r.base.norm_cv = o.config.norm_cv;
    for (const std::string& draw : o.draws)
        r.draws.push_back(simulate::parse_planted_range(draw));
    r.d = static_cast<int>(o.config.d);
    r.heads = o.heads;
    r.docs = o.docs;
    r.alpha_noise = o.alpha_noise;
    r.sink_mode = simulate::parse_sink_mode(o.config.sink_mode);
    r.seed = o.config.seed;
    r.sizes = o.config.sizes;
    r.rank = o.config.rank;
    r.distance = o.config.distance;
    r.threads = o.threads;
    r.out = o.as_extract;
    r.command_line = command_line();
    return r;
}

void run_planted(SimulateOptions& o, const CLI::App& app) {
    const simulate::PlantedRequest request = planted_request(o, app);
    Progress progress("simulate --as-extract", 1, "folders", o.quiet);
    simulate::write_planted_extract(request);
    progress.finish("wrote '" + o.as_extract + "'");
    std::cout << "wrote '" << o.as_extract << "' (" << request.heads << " planted heads, "
              << request.docs << " documents; truth in planted.csv)\n";
}

// The verdict's calibration at the run's one grid point (docs/design.md §7).
simulate::CalibrationResult run_calibration(const SimulateOptions& o) {
    simulate::CalibrationSettings s;
    s.runs = o.calibrate;
    s.trials = o.config.trials;
    s.seed = o.config.seed;
    s.band_replicates = o.config.band_replicates;
    s.threads = o.threads;
    const simulate::PointSetup setup =
        simulate::setup_point(o.config, simulate::grid_points(o.config).front());
    Progress progress("calibrate", o.calibrate, "runs", o.quiet);
    simulate::CalibrationResult result = simulate::calibrate_verdict(setup, s, &progress);
    progress.finish(std::to_string(o.calibrate) + " runs judged");
    return result;
}

// --calibrate's preconditions, before any trial runs.
void check_calibration(const SimulateOptions& o, const CLI::App& app, const std::string& kind) {
    const CLI::Option* flag = app.get_option_no_throw("--calibrate");
    if (!flag || flag->count() == 0) return;  // sweep has no --calibrate
    if (kind != "simulate") throw InputError("--calibrate: only with simulate, not " + kind);
    if (o.calibrate < 10 || o.calibrate > 100000)
        throw InputError("--calibrate: " + std::to_string(o.calibrate) +
                         ", expected 10 to 100000 runs");
    if (app.count("--shard") > 0) throw InputError("--calibrate: not with --shard");
    if (std::isinf(o.config.d))
        throw InputError("--calibrate: needs a finite --d (at d = inf nothing is sampled)");
}

void run_simulate(SimulateOptions& o, const CLI::App& app, const std::string& kind) {
    if (!o.as_extract.empty()) return run_planted(o, app);
    for (const char* flag : {"--heads", "--docs", "--alpha-noise", "--draw"})
        if (kind == "simulate" && app.count(flag) > 0)
            throw InputError(std::string(flag) + ": only with --as-extract OUT");
    if (o.out.empty()) throw InputError("--out: an output folder is required");
    check_output_folder(o.out, "--out");  // before any work (a sweep can take hours)
    finish_config(o, app);
    o.config.kind = kind;
    check_calibration(o, app, kind);
    if (kind == "sweep") o.config.sweep = simulate::parse_sweep_sets(o.sets);
    simulate::RunTimings timings;
    const std::int64_t trials = simulate::shard_trial_count(o.config);  // validates every point
    const simulate::Checkpointing checkpointing =
        simulate::open_checkpointing(o.out, o.checkpoint_every, o.resume);
    try {
        Progress progress(kind, trials, "trials", o.quiet);
        const auto sums =
            simulate::run_grid(o.config, o.threads, &progress, timings, checkpointing);
        std::optional<simulate::CalibrationResult> calibration;
        if (o.calibrate > 0) calibration = run_calibration(o);
        const auto manifest = simulate::write_run(o.out, o.config, sums, o.threads, provenance(app),
                                                  timings, calibration ? &*calibration : nullptr);
        fs::remove_all(checkpointing.state_dir);
        progress.finish("wrote '" + o.out + "'");
        print_summary(manifest, o.out);
    } catch (const InputError&) {
        simulate::discard_checkpointing(o.out, checkpointing);
        throw;
    }
}

}  // namespace

Runner register_simulate(CLI::App& app) {
    auto o = std::make_shared<SimulateOptions>();
    add_run_options(app, *o);
    add_planted_options(app, *o);
    app.add_option("--calibrate", o->calibrate,
                   "Also calibrate the verdict: R runs of --trials judged against planted true "
                   "and false bounds (calibration.csv; docs/design.md section 7)");
    app.footer(
        "With --as-extract OUT: writes an extract folder of planted heads and OUT/planted.csv "
        "instead (docs/commands/simulate.md).\n"
        "Writes OUT/simulate.csv "
        "(" +
        schema::csv_header(schema::page::simulate, schema::file::simulate_estimates) +
        "),\n"
        "OUT/bounds.csv (every variant at its rows' kappa, each side's judgement), OUT/sums.csv "
        "and\n"
        "OUT/per_trial.safetensors (exact sums and per-trial counts for merge), "
        "OUT/kappa_scan.csv,\n"
        "OUT/verdict.csv, with --calibrate OUT/calibration.csv, and OUT/manifest.json.");
    CLI::App* self = &app;
    return [o, self] { run_simulate(*o, *self, "simulate"); };
}

// The parameters a sweep may vary, as the footer lists them.
static std::string sweepable_list() {
    std::string list;
    for (const std::string& key : theory::sweepable_keys())
        list += (list.empty() ? "" : " ") + key;
    return list;
}

Runner register_sweep(CLI::App& app) {
    auto o = std::make_shared<SimulateOptions>();
    add_run_options(app, *o);
    app.get_option("--out")->required();
    app.add_option(
           "--set", o->sets,
           "A swept parameter: name=v1,v2,... (repeatable; the grid is the cartesian product)")
        ->required();
    app.footer(
        "Writes OUT/sweep.csv (one row per grid point, N and bound variant; "
        "docs/commands/simulate.md), "
        "OUT/sums.csv and\n"
        "OUT/manifest.json. Sweepable: " +
        sweepable_list() + " (docs/parameters.md).");
    CLI::App* self = &app;
    return [o, self] { run_simulate(*o, *self, "sweep"); };
}

Runner register_merge(CLI::App& app) {
    struct MergeOptions {
        std::vector<std::string> dirs;
        std::string out;
        int threads = 0;
    };
    auto o = std::make_shared<MergeOptions>();
    app.add_option("dirs", o->dirs, "Shard run folders of one simulate or sweep configuration")
        ->required();
    app.add_option("--out", o->out, "Output folder")->required();
    app.add_option("--threads", o->threads, "Threads for the kappa fit")->capture_default_str();
    app.footer(
        "Adds the shards' exact sums (simulate, sweep or extract runs) or concatenates their "
        "windows (truncate runs): the result equals the "
        "unsharded run byte for byte (except the manifest).");
    return [o] {
#ifdef ATTNGEO_WITH_EMPIRICAL
        if (is_extract_run(o->dirs.front())) {
            empirical::merge_extract(o->dirs, o->out, command_line());
            std::cout << "merged " << o->dirs.size() << " extract shards into " << o->out << "\n";
            return;
        }
#endif
        if (empirical::is_truncate_run(o->dirs.front())) {
            OutputFolder folder(o->out, "--out");
            empirical::merge_truncate(o->dirs, folder.staging(), command_line());
            compare::summarise_truncation(folder.staging());
            folder.commit();
            std::cout << "merged " << o->dirs.size() << " truncate shards into " << o->out << "\n";
            return;
        }
        const auto manifest =
            simulate::merge_runs(o->dirs, o->out, o->threads, {{"command", command_line()}});
        print_summary(manifest, o->out);
    };
}

}  // namespace attngeo::cli
