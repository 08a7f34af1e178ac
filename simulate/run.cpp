// Run folders: configuration, grid, sharding, outputs and merging; see run.hpp.
#include "simulate/run.hpp"

#include <omp.h>

#include <array>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <set>
#include <sstream>

#include "common/atomic_file.hpp"
#include "common/csv.hpp"
#include "common/errors.hpp"
#include "common/format.hpp"
#include "common/json_file.hpp"
#include "common/manifest_values.hpp"
#include "common/number_list.hpp"
#include "common/output_folder.hpp"
#include "common/progress.hpp"
#include "simulate/envelope.hpp"
#include "simulate/generator.hpp"
#include "simulate/realised_assumptions.hpp"
#include "simulate/table1.hpp"
#include "simulate/verdict_output.hpp"

namespace fs = std::filesystem;

namespace attngeo::simulate {
namespace {

using Clock = std::chrono::steady_clock;

// A manifest number: JSON has no infinity, so json_number writes it as "inf" (or "-inf").
double number_from_json(const nlohmann::json& j) {
    if (!j.is_string()) return j.get<double>();
    const std::string text = j.get<std::string>();
    if (text == "inf") return std::numeric_limits<double>::infinity();
    if (text == "-inf") return -std::numeric_limits<double>::infinity();
    // A type error carries the value's JSON pointer (with_json_context names the file).
    throw nlohmann::json::type_error::create(
        302, "expected a number or \"inf\", found \"" + text + "\"", &j);
}

// The start of a message about an invalid value: the flag, or the manifest key it was read from.
std::string value_label(ConfigSource source, const std::string& flag, const std::string& key,
                        const std::string& value) {
    return source == ConfigSource::flags ? flag + ": " + value : key + " = " + value;
}

void apply_value(PointSetup& setup, theory::ModelParameters& params, const std::string& name,
                 double value, ConfigSource source) {
    auto integer = [&](const char* what) {
        if (value != std::floor(value) || std::abs(value) > 1e9) {
            throw InputError(
                value_label(source, "--set " + name, "sweep " + name, format_double(value)) +
                " is not an integer (" + what + ")");
        }
        return static_cast<int>(value);
    };
    if (name == "d")
        setup.d = value;
    else if (name == "kappa")
        setup.kappa = value;
    else if (name == "L")
        params.profile.L = integer("L");
    else if (name == "T1")
        params.profile.T1 = integer("T1");
    else if (name == "T2")
        params.profile.T2 = integer("T2");
    else if (name == "p_sink")
        params.profile.p_sink = value;
    else if (name == "eta")
        params.profile.eta = value;
    else if (name == "omega")
        params.profile.omega = value;
    else if (name == "C")
        params.C = value;
    else if (name == "lambda")
        params.lambda = value;
    else if (name == "beta")
        params.beta = value;
    else if (name == "rho0")
        params.rho0 = value;
    else if (name == "norm_cv")
        setup.spec.norm_cv = value;
    else if (name == "zipf_s")
        params.profile_kind.zipf_exponent = value;
    else
        throw InputError(value_label(source, "--set", "sweep", "unknown parameter '" + name + "'"));
}

std::vector<SizeEstimates> estimates_from_sums(const std::vector<int>& sizes,
                                               const SimulationSums& sums) {
    std::vector<SizeEstimates> out(sizes.size());
    for (std::size_t s = 0; s < sizes.size(); ++s) {
        out[s].N = sizes[s];
        out[s].precision = estimate(sums.by_size[s].precision);
        out[s].recall = estimate(sums.by_size[s].recall);
        out[s].fmax = estimate(sums.by_size[s].fmax);
        out[s].fmin = estimate(sums.by_size[s].fmin);
    }
    return out;
}

Estimate exact_value(double x) {
    Estimate e;
    e.mean = e.ci_lo = e.ci_hi = x;
    e.se = 0;
    return e;
}

std::vector<SizeEstimates> estimates_exact(const std::vector<theory::SelectionMetrics>& rows) {
    std::vector<SizeEstimates> out(rows.size());
    for (std::size_t s = 0; s < rows.size(); ++s) {
        out[s].N = rows[s].N;
        out[s].precision = exact_value(rows[s].precision_at_rmax);
        out[s].recall = exact_value(rows[s].recall_at_rmin);
        out[s].fmax = exact_value(rows[s].f_at_rmax);
        out[s].fmin = exact_value(rows[s].f_at_rmin);
    }
    return out;
}

std::string estimate_columns(const SizeEstimates& e, std::int64_t trials) {
    std::ostringstream out;
    out << trials;
    for (const Estimate* m : {&e.precision, &e.recall}) {
        out << ',' << format_double(m->mean) << ',' << format_double(m->se) << ','
            << format_double(m->ci_lo) << ',' << format_double(m->ci_hi);
    }
    out << ',' << format_double(e.fmax.mean) << ',' << format_double(e.fmin.mean);
    return out.str();
}

nlohmann::json moment_json(const MomentSums& sums) {
    const Estimate e = estimate(sums);
    return {{"mean", json_number(e.mean)}, {"se", json_number(e.se)}, {"trials", sums.count}};
}

nlohmann::json realised_json(const SimulationSums& sums, const PointSetup& setup) {
    nlohmann::json lags = nlohmann::json::array();
    const double r = std::exp(-setup.spec.model.beta);
    const bool parametric = !setup.spec.model.cosine;
    for (int k = 1; k <= kRealisedLags; ++k) {
        nlohmann::json lag = moment_json(sums.realised.cos_by_lag[k - 1]);
        lag["lag"] = k;
        if (parametric) {
            double requested = std::pow(r, k);
            if (setup.spec.sink_mode == SinkMode::project) {
                const double rho0 = setup.spec.model.rho0;
                requested = rho0 * rho0 + (1 - rho0 * rho0) * requested;
            }
            lag["requested"] = requested;
            if (!std::isinf(setup.d))
                lag["expected_after_normalisation"] =
                    expected_normalized_cosine(requested, setup.spec.d);
        }
        lags.push_back(lag);
    }
    nlohmann::json sink = moment_json(sums.realised.cos_to_sink);
    if (parametric) {
        sink["requested"] = setup.spec.model.rho0;
        if (!std::isinf(setup.d))
            sink["expected_after_normalisation"] =
                expected_normalized_cosine(setup.spec.model.rho0, setup.spec.d);
    }
    return {{"cos_by_lag", lags},
            {"cos_to_sink", sink},
            {"norm_ratio_mean", moment_json(sums.realised.norm_ratio_mean)},
            {"norm_ratio_cv", moment_json(sums.realised.norm_ratio_cv)}};
}

std::vector<int> point_sizes(const RunConfig& config, int n) {
    return parse_selection_sizes(config.sizes, n, "--N");
}

void write_sums_csv(std::ostringstream& out, int grid, const std::vector<int>& sizes,
                    const SimulationSums& sums) {
    auto row = [&](int N, const std::string& quantity, const MomentSums& m) {
        out << grid << ',' << N << ',' << quantity << ',' << m.count << ','
            << to_string_int128(m.sum) << ',' << to_string_int128(m.sum_squares) << '\n';
    };
    for (std::size_t s = 0; s < sizes.size(); ++s) {
        const SizeSums& z = sums.by_size[s];
        row(sizes[s], "P", z.precision);
        row(sizes[s], "R", z.recall);
        row(sizes[s], "Fmax", z.fmax);
        row(sizes[s], "Fmin", z.fmin);
    }
    for (int k = 0; k < kRealisedLags; ++k)
        row(0, "cos_lag" + std::to_string(k + 1), sums.realised.cos_by_lag[k]);
    row(0, "cos_sink", sums.realised.cos_to_sink);
    row(0, "norm_ratio_mean", sums.realised.norm_ratio_mean);
    row(0, "norm_ratio_cv", sums.realised.norm_ratio_cv);
}

MomentSums* sums_slot(SimulationSums& sums, const std::vector<int>& sizes, int N,
                      const std::string& quantity) {
    if (N == 0) {
        for (int k = 0; k < kRealisedLags; ++k)
            if (quantity == "cos_lag" + std::to_string(k + 1)) return &sums.realised.cos_by_lag[k];
        if (quantity == "cos_sink") return &sums.realised.cos_to_sink;
        if (quantity == "norm_ratio_mean") return &sums.realised.norm_ratio_mean;
        if (quantity == "norm_ratio_cv") return &sums.realised.norm_ratio_cv;
        return nullptr;
    }
    const auto it = std::lower_bound(sizes.begin(), sizes.end(), N);
    if (it == sizes.end() || *it != N) return nullptr;
    SizeSums& z = sums.by_size[static_cast<std::size_t>(it - sizes.begin())];
    if (quantity == "P") return &z.precision;
    if (quantity == "R") return &z.recall;
    if (quantity == "Fmax") return &z.fmax;
    if (quantity == "Fmin") return &z.fmin;
    return nullptr;
}

// Moments that `count` per-trial values can have in 2⁻⁴⁰ fixed point (P, R and F lie in
// [0, 1]; the realised statistics at N = 0 may be any sign), with T·Σq² and (Σq)² representable
// so that estimate() computes the spread exactly: a sums.csv row outside them was edited or
// corrupted, and would overflow instead of giving a number.
void check_moments(const MomentSums& m, std::int64_t trials, bool unit_interval,
                   const std::string& where) {
    constexpr Int128 one = static_cast<Int128>(1) << 40,
                     largest = static_cast<Int128>(~static_cast<UInt128>(0) >> 1);
    const Int128 sum_magnitude = m.sum < 0 ? -m.sum : m.sum;  // |Σq| < 2¹²⁷ after parsing
    bool possible = m.count >= 0 && m.count <= trials && m.sum_squares >= 0 && m.sum > -largest &&
                    (m.sum_squares == 0 || m.count <= largest / m.sum_squares) &&
                    (m.sum == 0 || sum_magnitude <= largest / sum_magnitude) &&
                    m.sum * m.sum <= m.count * m.sum_squares;  // Cauchy–Schwarz
    if (possible && unit_interval)
        possible = m.count <= (static_cast<std::int64_t>(1) << 46) && m.sum >= 0 &&
                   m.sum <= m.count * one && m.sum_squares <= m.count * one * one;
    if (!possible)
        throw InputError(where + ": count " + std::to_string(m.count) +
                         ", sum and sum_squares are not the sums of that many values" +
                         (unit_interval ? " in [0, 1]" : "") + " (at most " +
                         std::to_string(trials) + " trials)");
}

Int128 int128_field(const CsvRow& row, std::size_t column) {
    try {
        return parse_int128(row.text(column));
    } catch (const std::invalid_argument& e) {
        throw InputError(row.where(column) + ": " + e.what());
    }
}

// One sums.csv row into its slot of `sums` (the sizes of each grid point given), checked to be
// sums that that many trials can produce.
void read_sums_row(const CsvRow& row, const std::array<std::size_t, 6>& column,
                   const std::vector<std::vector<int>>& sizes, std::int64_t trials,
                   std::vector<SimulationSums>& sums) {
    const std::int64_t grid = row.integer(column[0]), N = row.integer(column[1]);
    if (grid < 0 || grid >= static_cast<std::int64_t>(sums.size()))
        throw InputError(row.where(column[0]) + ": grid index " + std::to_string(grid) +
                         " out of range, expected 0.." + std::to_string(sums.size() - 1));
    const std::string& quantity = row.text(column[2]);
    MomentSums* slot = N >= 0 && N <= std::numeric_limits<int>::max()
                           ? sums_slot(sums[grid], sizes[grid], static_cast<int>(N), quantity)
                           : nullptr;
    if (!slot)
        throw InputError(row.where(column[2]) + ": unknown quantity '" + quantity +
                         "' at N = " + std::to_string(N));
    slot->count = row.integer(column[3]);
    slot->sum = int128_field(row, column[4]);
    slot->sum_squares = int128_field(row, column[5]);
    check_moments(*slot, trials, N != 0, row.where());
}

// DIR/sums.csv of a run folder (or of a saved state), laid out by `config`'s grid. `who` opens
// every message ("merge", "--resume").
std::vector<SimulationSums> read_sums(const std::string& dir, const RunConfig& config,
                                      const std::string& who = "merge") {
    const auto points = grid_points(config);
    std::vector<SimulationSums> sums(points.size());
    std::vector<std::vector<int>> sizes(points.size());
    for (const auto& p : points) {
        sizes[p.index] = setup_point(config, p).spec.sizes;
        sums[p.index].by_size.resize(sizes[p.index].size());
    }
    try {
        CsvReader reader((fs::path(dir) / "sums.csv").string(),
                         "the exact sums of a simulate or sweep run folder");
        std::array<std::size_t, 6> column{};
        std::size_t k = 0;
        for (const char* name : {"grid", "N", "quantity", "count", "sum", "sum_squares"})
            column[k++] = reader.column(name);
        while (reader.next())
            read_sums_row(reader.row(), column, sizes, config.trials, sums);
    } catch (const InputError& e) {
        throw InputError(who + ": " + e.what());
    }
    for (auto& s : sums)
        s.trials = s.by_size.empty() ? 0 : s.by_size.front().precision.count;
    return sums;
}

// Names the random numbers a run drew (generator, key and counter layout, normal transform),
// so that shards drawn by different versions are never merged into one estimate.
constexpr const char* kRandomStream =
    "philox4x32-10 key=seed counter=(block,trial,grid_point,substream); ziggurat-256 normals, "
    "one word each, misses finished from substream|2^31";
// What a manifest without random_stream drew from (the field came with the second stream).
constexpr const char* kUnnamedRandomStream = "philox4x64-10";

nlohmann::json decisions_json() {
    return nlohmann::json::array({
        "Metrics (docs/design.md section 2): I_N = top-N by the ranking score, ties to the lower "
        "index; s(N) summed in rank order; "
        "closed balls; N = n gives P = R = F = 1 with r_min = inf.",
        "Bounds (docs/design.md section 3): union factors n - N; Delta0 uses rho_out (eq. 29); "
        "t(x) = exp(-kappa d (max(x,0)/B)^2) "
        "(1 for a margin <= 0); the Delta0 term is dropped when the sink is not selected; all "
        "bounds are 1 when "
        "I_N minus the sink is empty or N = n; p-(xi) = 1/2 for xi <= 0.",
        "paper variant keeps eq. (10) literally: the sink's M_0 has no self term, so mu_0j is ~2 "
        "a_0^2 too small "
        "and the upper bound on P can fail at small N (reported, not corrected).",
        "exact-mean variant: mu_ij from the expected Gram matrix including the sink (d -> inf "
        "geometry).",
        "scale-invariant variant: B = (a_max_in + a_max_out) * sum_{k in I_N} a_k, quadratic in "
        "scale like Delta.",
        "corrected variant: the exact-mean mu with the scale-invariant B (neither fix alone "
        "removes "
        "both defects).",
        "Expectation over direction randomness with alpha and the nominal norms fixed "
        "(docs/design.md section 5); norm noise "
        "(--norm-cv) is multiplicative log-normal per trial and the bounds use the nominal norms.",
        "Directions: Gaussian with covariance K_ij I/d exactly (AR(1); sink from K^-1 1); after "
        "normalisation "
        "E cos is rho * c(d, rho) (reported as expected_after_normalisation), which tends to rho "
        "as d -> inf.",
        "Estimates: per-trial values rounded once to 2^-40 fixed point and summed exactly in "
        "128-bit integers "
        "(bit-identical for any thread count or sharding); 95% Student-t intervals.",
        "Envelope check: a metric violates its envelope only when its whole 95% interval lies "
        "outside "
        "[lower, upper]; the fraction inside counts (N, metric) points for P and R.",
        kScanDecision,
        kIntervalScoreDecision,
        "d = inf: metrics of the expected Gram matrix a_k a_l K_kl (no sampling, trials = 0); "
        "bounds at "
        "kappa d = inf (t = 0 for a positive margin, p- = 0 for a positive gap).",
    });
}

}  // namespace

Shard parse_shard(const std::string& text) {
    const auto slash = text.find('/');
    Shard s;
    try {
        if (slash == std::string::npos) throw std::invalid_argument("no slash");
        std::size_t used = 0;
        s.index = std::stoi(text.substr(0, slash), &used);
        if (used != slash) throw std::invalid_argument("index");
        const std::string count = text.substr(slash + 1);
        s.count = std::stoi(count, &used);
        if (used != count.size()) throw std::invalid_argument("count");
    } catch (const std::exception&) {
        throw InputError("--shard: '" + text + "', expected i/n such as 0/4");
    }
    check_shard(s, "--shard: '" + text + "'");
    return s;
}

void check_shard(Shard shard, const std::string& where) {
    if (shard.count < 1 || shard.index < 0 || shard.index >= shard.count) {
        throw InputError(where + ", expected shard i/n with 0 <= i < n");
    }
}

std::pair<std::int64_t, std::int64_t> shard_trials(std::int64_t trials, Shard shard) {
    const auto first =
        static_cast<std::int64_t>(static_cast<Int128>(trials) * shard.index / shard.count);
    const auto last =
        static_cast<std::int64_t>(static_cast<Int128>(trials) * (shard.index + 1) / shard.count);
    return {first, last};
}

const std::vector<std::string>& sweepable_parameters() {
    static const std::vector<std::string> names = {"d",     "L",      "C",       "lambda", "beta",
                                                   "rho0",  "p_sink", "T1",      "T2",     "eta",
                                                   "omega", "kappa",  "norm_cv", "zipf_s"};
    return names;
}

nlohmann::json to_json(const RunConfig& c) {
    nlohmann::json sweep = nlohmann::json::array();
    for (const auto& [name, values] : c.sweep) {
        nlohmann::json list = nlohmann::json::array();
        for (double v : values)
            list.push_back(json_number(v));
        sweep.push_back({{"parameter", name}, {"values", list}});
    }
    return {{"kind", c.kind},
            {"model", theory::to_json(c.model)},
            {"d", json_number(c.d)},
            {"kappa", c.kappa ? json_number(*c.kappa) : nlohmann::json(nullptr)},
            {"trials", c.trials},
            {"seed", c.seed},
            {"N", c.sizes},
            {"rank", c.rank},
            {"distance", c.distance},
            {"sink_mode", c.sink_mode},
            {"norm_cv", c.norm_cv},
            {"sweep", sweep},
            {"shard", {{"index", c.shard.index}, {"count", c.shard.count}}}};
}

RunConfig run_config_from_json(const nlohmann::json& j) {
    RunConfig c;
    c.kind = j.at("kind").get<std::string>();
    c.model = theory::model_source_from_json(j.at("model"));
    c.d = number_from_json(j.at("d"));
    if (!j.at("kappa").is_null()) c.kappa = number_from_json(j.at("kappa"));
    c.trials = json_integer<std::int64_t>(j.at("trials"));
    c.seed = json_integer<std::uint64_t>(j.at("seed"));
    c.sizes = j.at("N").get<std::string>();
    c.rank = j.at("rank").get<std::string>();
    c.distance = j.at("distance").get<std::string>();
    c.sink_mode = j.at("sink_mode").get<std::string>();
    c.norm_cv = j.at("norm_cv").get<double>();
    for (const auto& s : j.at("sweep")) {
        std::vector<double> values;
        for (const auto& v : s.at("values"))
            values.push_back(number_from_json(v));
        c.sweep.emplace_back(s.at("parameter").get<std::string>(), values);
    }
    c.shard.index = json_integer<int>(j.at("shard").at("index"));
    c.shard.count = json_integer<int>(j.at("shard").at("count"));
    // shard_trials divides by the count, so a hand-edited manifest must not reach it with 0.
    check_shard(c.shard, "manifest shard " + std::to_string(c.shard.index) + "/" +
                             std::to_string(c.shard.count));
    return c;
}

std::vector<GridPoint> grid_points(const RunConfig& config) {
    std::vector<GridPoint> points(1);
    for (const auto& [name, values] : config.sweep) {
        std::vector<GridPoint> next;
        for (const GridPoint& p : points) {
            for (double v : values) {
                GridPoint q = p;
                q.values.emplace_back(name, v);
                next.push_back(q);
            }
        }
        points = std::move(next);
    }
    for (std::size_t i = 0; i < points.size(); ++i)
        points[i].index = static_cast<int>(i);
    return points;
}

PointSetup setup_point(const RunConfig& config, const GridPoint& point, ConfigSource source) {
    PointSetup setup;
    setup.d = config.d;
    setup.kappa = config.kappa;
    theory::ModelParameters params = theory::load_model(config.model);
    setup.spec.norm_cv = config.norm_cv;
    for (const auto& [name, value] : point.values)
        apply_value(setup, params, name, value, source);
    auto label = [&](const char* flag, const char* key, const std::string& value) {
        return value_label(source, flag, key, value);
    };
    if (!(setup.d >= 1))
        throw InputError(label("--d", "d", format_double(setup.d)) +
                         ", expected an integer >= 1 or inf");
    if (!std::isinf(setup.d) && (setup.d != std::floor(setup.d) || setup.d > 1e6)) {
        throw InputError(label("--d", "d", format_double(setup.d)) +
                         ", expected an integer >= 1 (at most 1e6) or inf");
    }
    if (setup.kappa && !(*setup.kappa > 0 && std::isfinite(*setup.kappa))) {
        throw InputError(label("--kappa", "kappa", format_double(*setup.kappa)) +
                         ", expected kappa > 0");
    }
    if (config.trials < 2 || config.trials > kMaxTrials) {
        throw InputError(label("--trials", "trials", std::to_string(config.trials)) +
                         ", expected 2 <= trials <= " + std::to_string(kMaxTrials));
    }
    if (!(setup.spec.norm_cv >= 0 && std::isfinite(setup.spec.norm_cv))) {
        throw InputError(label("--norm-cv", "norm_cv", format_double(setup.spec.norm_cv)) +
                         ", expected >= 0");
    }
    setup.spec.model = params;
    setup.spec.d_infinite = std::isinf(setup.d);
    setup.spec.d = setup.spec.d_infinite ? 0 : static_cast<int>(setup.d);
    setup.spec.trials = config.trials;
    setup.spec.seed = config.seed;
    setup.spec.grid_point = static_cast<std::uint32_t>(point.index);
    setup.spec.ranking = theory::parse_ranking(config.rank);
    setup.spec.distance = theory::parse_distance(config.distance);
    setup.spec.sink_mode = parse_sink_mode(config.sink_mode);
    setup.head = theory::build_head_model(params);
    const int n = static_cast<int>(setup.head.alpha.size());
    setup.spec.sizes =
        parse_selection_sizes(config.sizes, n, source == ConfigSource::flags ? "--N" : "N");
    setup.spec.all_sizes = static_cast<int>(setup.spec.sizes.size()) == n;
    if (!setup.spec.d_infinite)
        ValueGenerator check(generator_settings(setup.spec, setup.head));  // feasibility
    else if (!params.cosine && setup.spec.sink_mode == SinkMode::exact) {
        ValueGenerator check([&] {
            GeneratorSettings g = generator_settings(setup.spec, setup.head);
            g.d = 1;
            return g;
        }());
    }
    return setup;
}

std::int64_t shard_trial_count(const RunConfig& config) {
    const auto [first, last] = shard_trials(config.trials, config.shard);
    std::int64_t points = 0;
    for (const GridPoint& p : grid_points(config))
        points += !std::isinf(setup_point(config, p).d);
    return points * (last - first);
}

namespace {

// The resumable state of a run: the exact sums so far, in sums.csv's format (a point's count
// is the trials it has done), beside the configuration they belong to.
std::string checkpoint_config_text(const RunConfig& config) {
    nlohmann::json j = {{"config", to_json(config)}, {"random_stream", kRandomStream}};
    return j.dump(2) + "\n";
}

void save_checkpoint(const Checkpointing& c, const std::vector<PointSetup>& setups,
                     const std::vector<SimulationSums>& sums) {
    std::ostringstream text;
    text << "grid,N,quantity,count,sum,sum_squares\n";
    for (std::size_t g = 0; g < sums.size(); ++g)
        if (sums[g].trials > 0)
            write_sums_csv(text, static_cast<int>(g), setups[g].spec.sizes, sums[g]);
    write_file_atomic((fs::path(c.state_dir) / "sums.csv").string(), text.str());
}

// The sums of an interrupted run, after checking they belong to this configuration.
std::vector<SimulationSums> load_checkpoint(const Checkpointing& c, const RunConfig& config) {
    const std::string config_path = (fs::path(c.state_dir) / "run.json").string();
    std::ifstream in(config_path);
    std::ostringstream saved;
    saved << in.rdbuf();
    if (!in || saved.str() != checkpoint_config_text(config))
        throw InputError("--resume: '" + config_path +
                         "' is not the state of this command (other parameters, seed or version); "
                         "rerun without --resume into a new --out");
    if (!fs::exists(fs::path(c.state_dir) / "sums.csv"))  // killed before its first save
        return std::vector<SimulationSums>(grid_points(config).size());
    return read_sums(c.state_dir, config, "--resume");
}

}  // namespace

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
        write_file_atomic((fs::path(checkpointing.state_dir) / "run.json").string(),
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
                save_checkpoint(checkpointing, setups, sums);
                last_save = Clock::now();
            }
        }
    }
    timings.monte_carlo_s = seconds_since(start);
    return sums;
}

namespace {

// A run folder's CSV outputs while they are assembled, each opened with its header.
struct RunTables {
    std::ostringstream main;     // simulate.csv or sweep.csv
    std::ostringstream bounds;   // bounds.csv (simulate only)
    std::ostringstream sums;     // sums.csv
    std::ostringstream scan;     // kappa_scan.csv
    std::ostringstream verdict;  // verdict.csv
    std::string table1;          // table1.csv (sweep only)
};

void write_main_header(std::ostream& out, const RunConfig& config) {
    if (config.kind != "sweep") {
        out << "N,trials,P_mean,P_se,P_ci_lo,P_ci_hi,R_mean,R_se,R_ci_lo,R_ci_hi,Fmax_mean,"
               "Fmin_mean\n";
        return;
    }
    out << "grid";
    for (const auto& [name, values] : config.sweep)
        out << ',' << name;
    // Long format: one row per (grid point, N, variant), so no column name carries a variant.
    out << ",N,trials,P_mean,P_se,P_ci_lo,P_ci_hi,R_mean,R_se,R_ci_lo,R_ci_hi,Fmax_mean,"
           "Fmin_mean,variant,kappa,P_lower,P_upper,R_lower,R_upper,P_inside,R_inside,"
           "P_lower_joint,P_upper_joint,R_lower_joint,R_upper_joint,P_inside_joint,"
           "R_inside_joint\n";
}

void open_tables(RunTables& tables, const RunConfig& config) {
    std::string grid_columns = "grid,";
    for (const auto& [name, values] : config.sweep)
        grid_columns += name + ',';
    tables.scan << grid_columns << kScanColumns << '\n';
    tables.verdict << grid_columns << kVerdictColumns << '\n';
    write_main_header(tables.main, config);
    tables.bounds << "N,variant,kappa,regime,Delta,Delta0,B,P_lower,P_upper,R_lower,R_upper,"
                     "Fmax_lower,Fmax_upper,Fmin_lower,Fmin_upper,P_inside,R_inside,Fmax_inside,"
                     "Fmin_inside,P_violation,R_violation,"
                  << kStarFlagColumns << '\n';
    tables.sums << "grid,N,quantity,count,sum,sum_squares\n";
}

// Table 2's regime of every N of a point whose profile has phases (docs/design.md §3).
struct PointRegimes {
    std::vector<std::string> names;  // [n + 1] by N, "NA" without phases (index 0 unused)
    std::vector<int> numbers;        // [|sizes|] 1..5 for the scan's by-regime gaps, or empty
    nlohmann::json boundaries;       // p_base and m1..m3, or null
};

PointRegimes point_regimes(const PointSetup& setup) {
    const int n = static_cast<int>(setup.head.alpha.size());
    PointRegimes out;
    out.names.assign(n + 1, "NA");
    const auto phases = theory::phase_parameters(setup.spec.model);
    if (!phases) return out;
    const auto regimes = theory::regimes_by_size(setup.head.alpha, phases->p_base, phases->eta);
    for (int N = 1; N <= n; ++N)
        out.names[N] = theory::to_string(regimes[N - 1]);
    for (int N : setup.spec.sizes)
        out.numbers.push_back(static_cast<int>(regimes[N - 1]) + 1);
    const auto m = theory::regime_boundaries(regimes);
    out.boundaries = {{"p_base", phases->p_base}, {"m1", m.m1}, {"m2", m.m2}, {"m3", m.m3}};
    return out;
}

// A sweep grid point kept until every point is evaluated: its rows need the joint κ fit.
struct SweepPoint {
    GridPoint point;
    PointSetup setup;
    std::vector<SizeEstimates> estimates;  // [|sizes|]
    std::string estimate_columns;          // [|sizes|] lines of estimate_columns, '\n'-joined
    std::vector<int> regimes;              // [|sizes|] 1..5, or empty
    std::vector<VariantEnvelope> envs;     // [variants] at the point's own κ
};

// One variant's κ fitted over every grid point at once: docs/design.md §7's scan run on the union
// of the points, so the sweep's panels draw each side at one κ* and show the parameter's effect,
// not a κ refitted per point.
struct JointFit {
    theory::BoundVariant variant = theory::BoundVariant::paper;
    KappaScan scan;  // at_star: [Σ|sizes|] each side's bounds at its joint κ*, points in order
};

std::vector<JointFit> joint_fits(const std::vector<SweepPoint>& points, int threads) {
    ScanInputs inputs;
    bool any_finite_d = false;
    for (const SweepPoint& p : points) {
        const ScanInputs part =
            scan_inputs(p.estimates, p.regimes,
                        point_facts(p.setup.head, p.setup.spec.sizes, p.setup.spec.ranking));
        inputs.facts.insert(inputs.facts.end(), part.facts.begin(), part.facts.end());
        inputs.P.insert(inputs.P.end(), part.P.begin(), part.P.end());
        inputs.R.insert(inputs.R.end(), part.R.begin(), part.R.end());
        inputs.regime.insert(inputs.regime.end(), part.regime.begin(), part.regime.end());
        any_finite_d = any_finite_d || !std::isinf(p.setup.d);
    }
    // As per point: a given κ is kept; with only d = ∞ points κ has no effect and stays 1.
    std::optional<double> fixed = points.front().setup.kappa;
    if (!fixed && !any_finite_d) fixed = 1.0;
    const auto& variants = theory::bound_variants();
    const int count = static_cast<int>(variants.size());
    const int thread_count = threads > 0 ? threads : omp_get_max_threads();
    std::vector<JointFit> out(count);
#pragma omp parallel for num_threads(std::min(count, thread_count)) schedule(dynamic, 1)
    for (int index = 0; index < count; ++index) {
        std::vector<theory::BoundTerms> terms;
        for (const SweepPoint& p : points)
            terms.emplace_back(p.setup.head, p.setup.spec.sizes, variants[index],
                               p.setup.spec.ranking);
        out[index].variant = variants[index];
        out[index].scan = scan_kappa(
            inputs,
            [&](double kappa) {
                ScanBounds b;
                for (std::size_t g = 0; g < points.size(); ++g)
                    append_scan_bounds(b, terms[g].evaluate(points[g].setup.d, kappa));
                return b;
            },
            fixed);
        std::vector<theory::MarginFlags> margins;
        for (const SweepPoint& p : points) {
            const auto part = margins_of(p.envs[index].rows);
            margins.insert(margins.end(), part.begin(), part.end());
        }
        judge_points(out[index].scan, inputs, margins);
    }
    return out;
}

// The manifest's "joint_kappa": per variant, each side's joint κ* and the single
// interval-score κ over the whole grid.
nlohmann::json joint_kappa_json(const std::vector<JointFit>& fits) {
    nlohmann::json out = nlohmann::json::object();
    for (const JointFit& fit : fits) {
        nlohmann::json block = nlohmann::json::object();
        for (const SideVerdict& side : fit.scan.sides) {
            block[std::string(to_string(side.metric)) + "_" + to_string(side.side)] = {
                {"kappa", json_number(side.at_star.kappa)},
                {"coverage", json_number(side.at_star.coverage)},
                {"mean_gap", json_number(side.at_star.mean_gap)},
                {"coverage_met", side.coverage_met},
                {"violations", side.at_star.violations},
                {"violations_allowed", side.violations_allowed},
                {"within_allowance", side.within_allowance},
                {"kappa_star_saturates", to_string(side.saturates)},
                {"informative_points", side.informative_points},
                {"at_grid_edge", side.at_grid_edge},
                {"kappa_free", side.kappa_free}};
        }
        block["interval_score"] = {{"kappa", json_number(fit.scan.interval_score.kappa)},
                                   {"coverage", json_number(fit.scan.interval_score.coverage)},
                                   {"mean_width", json_number(fit.scan.interval_score.mean_width)}};
        out[theory::to_string(fit.variant)] = block;
    }
    return out;
}

// sweep.csv's rows of one point, from its offset into the joint fits' concatenated points: per
// N and variant, the estimates, the envelope at the point's κ, then at the joint κ* of each side.
void append_sweep_rows(std::ostream& out, const SweepPoint& p, const std::vector<JointFit>& fits,
                       std::size_t offset) {
    std::istringstream estimate_lines(p.estimate_columns);
    std::string columns;
    for (std::size_t i = 0; i < p.setup.spec.sizes.size(); ++i) {
        std::getline(estimate_lines, columns);
        std::ostringstream prefix;
        prefix << p.point.index;
        for (const auto& [name, value] : p.point.values)
            prefix << ',' << format_double(value);
        prefix << ',' << p.setup.spec.sizes[i] << ',' << columns;
        for (std::size_t v = 0; v < p.envs.size(); ++v) {
            const VariantEnvelope& env = p.envs[v];
            const auto& b = env.rows[i];
            const ScanBounds& joint = fits[v].scan.at_star;
            const std::size_t j = offset + i;
            const double p_lo = joint.P.lower[j], p_hi = joint.P.upper[j], r_lo = joint.R.lower[j],
                         r_hi = joint.R.upper[j];
            out << prefix.str() << ',' << theory::to_string(env.variant) << ','
                << format_double(env.kappa) << ',' << format_double(b.precision_lower) << ','
                << format_double(b.precision_upper) << ',' << format_double(b.recall_lower) << ','
                << format_double(b.recall_upper) << ',' << int(env.checks[i].precision_inside())
                << ',' << int(env.checks[i].recall_inside()) << ',' << format_double(p_lo) << ','
                << format_double(p_hi) << ',' << format_double(r_lo) << ',' << format_double(r_hi)
                << ',' << int(envelope_violation(p.estimates[i].precision, p_lo, p_hi) == 0) << ','
                << int(envelope_violation(p.estimates[i].recall, r_lo, r_hi) == 0) << '\n';
        }
    }
}

void append_bounds_rows(std::ostream& out, const std::vector<VariantEnvelope>& envs,
                        const std::vector<std::string>& regime_names) {
    for (const auto& v : envs) {
        for (std::size_t i = 0; i < v.rows.size(); ++i) {
            const auto& b = v.rows[i];
            const auto& c = v.checks[i];
            out << b.N << ',' << theory::to_string(v.variant) << ',' << format_double(v.kappa)
                << ',' << regime_names[b.N];
            for (double x :
                 {b.delta, b.delta0, b.scale, b.precision_lower, b.precision_upper, b.recall_lower,
                  b.recall_upper, b.fmax_lower, b.fmax_upper, b.fmin_lower, b.fmin_upper}) {
                out << ',' << format_double(x);
            }
            out << ',' << int(c.precision_inside()) << ',' << int(c.recall_inside()) << ','
                << int(c.fmax_inside()) << ',' << int(c.fmin_inside()) << ','
                << format_double(c.precision_violation) << ',' << format_double(c.recall_violation)
                << ',' << star_flag_fields(v.scan, i, b) << '\n';
        }
    }
}

// The manifest's "envelopes" of one point: per variant the verdict, κ and the coverage.
nlohmann::json envelopes_json(const std::vector<VariantEnvelope>& envs) {
    nlohmann::json out = nlohmann::json::object();
    for (const auto& v : envs) {
        std::vector<theory::MarginFlags> margins;
        for (const auto& row : v.rows)
            margins.push_back(theory::margin_flags(row));
        const char* rule = v.kappa_fitted ? "interval-score" : "given";
        nlohmann::json block = verdict_json(v.scan, margins, rule);
        block.update({{"kappa", json_number(v.kappa)},
                      {"kappa_fitted", v.kappa_fitted},
                      {"mean_width", json_number(v.mean_width)},
                      {"fraction_inside", v.fraction_inside},
                      {"fraction_inside_P", v.fraction_inside_precision},
                      {"fraction_inside_R", v.fraction_inside_recall},
                      {"largest_violation",
                       {{"value", v.largest_violation},
                        {"N", v.largest_violation_N},
                        {"metric", v.largest_violation_metric}}}});
        out[theory::to_string(v.variant)] = block;
    }
    return out;
}

// One grid point: its estimates (exact at d = ∞), envelopes and regimes, appended to the tables;
// returns its entry of the manifest's "points".
// `sweep_points` receives the point's data when the run is a sweep (its rows come later).
nlohmann::json write_point(RunTables& tables, const RunConfig& config, const GridPoint& point,
                           const SimulationSums& s, int threads,
                           std::vector<SweepPoint>& sweep_points) {
    const PointSetup setup = setup_point(config, point);
    const auto& sizes = setup.spec.sizes;
    std::vector<SizeEstimates> est;
    std::int64_t trials = 0;
    if (setup.spec.d_infinite) {
        est = estimates_exact(infinite_d_metrics(setup.spec));
    } else {
        est = estimates_from_sums(sizes, s);
        trials = s.trials;
        write_sums_csv(tables.sums, point.index, sizes, s);
    }
    const PointRegimes regimes = point_regimes(setup);
    const auto envs = envelopes(setup.head, sizes, setup.spec.ranking, setup.d, est,
                                regimes.numbers, setup.kappa, threads);
    std::string grid_prefix = std::to_string(point.index) + ',';
    for (const auto& [name, value] : point.values)
        grid_prefix += format_double(value) + ',';
    for (const auto& v : envs) {
        append_scan_rows(tables.scan, grid_prefix, v.variant, v.scan);
        append_verdict_rows(tables.verdict, grid_prefix, v.variant, v.scan);
    }
    const bool is_sweep = config.kind == "sweep";
    std::string sweep_columns;
    for (std::size_t i = 0; i < sizes.size(); ++i) {
        const std::string columns = estimate_columns(est[i], trials);
        if (is_sweep)
            sweep_columns += columns + '\n';
        else
            tables.main << sizes[i] << ',' << columns << '\n';
    }
    if (is_sweep)
        sweep_points.push_back({point, setup, est, sweep_columns, regimes.numbers, envs});
    else
        append_bounds_rows(tables.bounds, envs, regimes.names);
    const int n = static_cast<int>(setup.head.alpha.size());
    nlohmann::json values_json = nlohmann::json::object();
    for (const auto& [name, value] : point.values)
        values_json[name] = json_number(value);
    nlohmann::json point_json = {{"grid", point.index},
                                 {"values", values_json},
                                 {"n", n},
                                 {"d", json_number(setup.d)},
                                 {"trials", trials},
                                 {"regimes", regimes.boundaries},
                                 {"envelopes", envelopes_json(envs)}};
    if (!setup.spec.d_infinite) {
        point_json["realised"] = realised_json(s, setup);
        point_json["assumptions"] = realised_assumptions_json(s, setup.spec, setup.head);
    }
    if (!setup.spec.model.cosine)
        point_json["max_feasible_abs_rho0"] = max_feasible_rho0(n - 1, setup.spec.model.beta);
    return point_json;
}

// Table 1 of a sweep (docs/design.md §3) at its first grid point: the N the report's panels follow
// (over every point's N), that point's d (1e6 at d = ∞, where d has no finite difference) and the
// paper variant's κ there as the manifest records it (1 when that is not a finite number).
Table1 sweep_table1(const RunConfig& config, const nlohmann::json& points) {
    std::vector<int> every_size;
    for (const auto& point : points) {
        const auto sizes = point_sizes(config, json_integer<int>(point.at("n")));
        every_size.insert(every_size.end(), sizes.begin(), sizes.end());
    }
    const PointSetup first = setup_point(config, grid_points(config).front());
    theory::BoundSettings settings;
    settings.d = std::isinf(first.d) ? 1e6 : first.d;
    const nlohmann::json& kappa = points.front()
                                      .at("envelopes")
                                      .at(theory::to_string(theory::BoundVariant::paper))
                                      .at("kappa");
    settings.kappa = kappa.is_number() ? kappa.get<double>() : 1.0;
    settings.variant = theory::BoundVariant::paper;
    return sensitivity_table(first.spec.model, followed_sizes(every_size), settings);
}

// Every file of the folder, manifest last, written together: a failure leaves --out as it was.
void write_outputs(const std::string& dir, const RunConfig& config, const RunTables& tables,
                   nlohmann::json& manifest) {
    const bool is_sweep = config.kind == "sweep";
    std::vector<std::pair<std::string, std::string>> outputs = {
        {is_sweep ? "sweep.csv" : "simulate.csv", tables.main.str()},
        {"sums.csv", tables.sums.str()},
        {"kappa_scan.csv", tables.scan.str()},
        {"verdict.csv", tables.verdict.str()}};
    if (!is_sweep) outputs.insert(outputs.begin() + 1, {"bounds.csv", tables.bounds.str()});
    if (is_sweep) outputs.emplace_back("table1.csv", tables.table1);
    std::vector<std::string> files;
    for (const auto& [name, content] : outputs)
        files.push_back(name);
    files.push_back("manifest.json");
    manifest["outputs"] = files;
    outputs.emplace_back("manifest.json", manifest.dump(2) + "\n");
    OutputFolder folder(dir, "--out");
    for (const auto& [name, content] : outputs)
        folder.write(name, content);
    folder.commit();
}

}  // namespace

nlohmann::json write_run(const std::string& dir, const RunConfig& config,
                         const std::vector<SimulationSums>& sums, int threads,
                         const nlohmann::json& provenance, RunTimings timings) {
    RunTables tables;
    open_tables(tables, config);
    nlohmann::json points_json = nlohmann::json::array();
    const auto bounds_start = Clock::now();
    std::vector<SweepPoint> sweep_points;
    for (const GridPoint& point : grid_points(config))
        points_json.push_back(write_point(tables, config, point,
                                          sums.at(static_cast<std::size_t>(point.index)), threads,
                                          sweep_points));
    nlohmann::json joint_kappa;
    if (!sweep_points.empty()) {
        const std::vector<JointFit> fits = joint_fits(sweep_points, threads);
        std::size_t offset = 0;
        for (const SweepPoint& p : sweep_points) {
            append_sweep_rows(tables.main, p, fits, offset);
            offset += p.setup.spec.sizes.size();
        }
        joint_kappa = joint_kappa_json(fits);
    }
    timings.bounds_s = seconds_since(bounds_start);

    nlohmann::json manifest = manifest_header(config.kind);
    manifest.update(
        {{"config", to_json(config)},
         {"threads", threads > 0 ? threads : omp_get_max_threads()},
         {"device", "cpu"},
         {"decisions", decisions_json()},
         {"random_stream", kRandomStream},
         {"points", points_json},
         {"timings",
          {{"monte_carlo_s", timings.monte_carlo_s}, {"bounds_and_kappa_s", timings.bounds_s}}}});
    if (config.kind == "sweep") {
        manifest["joint_kappa"] = joint_kappa;
        manifest["decisions"].push_back(
            "joint_kappa: per variant, the kappa scan of docs/design.md section 7 run once over "
            "every grid point's (N, metric) points together; sweep.csv's *_joint columns are "
            "each side's bound at its joint kappa*, the bounds the report's sweep panels draw");
        const Table1 table1 = sweep_table1(config, points_json);
        tables.table1 = table1_csv(table1);
        manifest["table1"] = table1_manifest(table1);
        manifest["decisions"].push_back(table1_decision(
            "the first grid point, d = its d (1e6 for d = inf), kappa = the paper variant's "
            "kappa there (1 when not finite), N over every grid point's sizes"));
    }
    for (const auto& [key, value] : provenance.items())
        manifest[key] = value;
    write_outputs(dir, config, tables, manifest);
    return manifest;
}

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
    std::vector<SimulationSums> total;
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
        if (total.empty())
            total = std::move(sums);
        else
            for (std::size_t g = 0; g < total.size(); ++g)
                total[g].merge(sums[g]);
    }
    check_complete(shards, merged->shard.count);
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
