// A run folder from its exact sums and per-trial counts: the estimates, compare's verdict III at
// every grid point (a sweep's grid points judged together, with their joint κ, and Table 1), the
// tables and the manifest; see run.hpp.
#include "simulate/run.hpp"

#include <omp.h>

#include <chrono>
#include <cmath>
#include <optional>
#include <sstream>
#include <string>

#include "common/errors.hpp"
#include "common/format.hpp"
#include "common/json_file.hpp"
#include "common/manifest_values.hpp"
#include "common/output_folder.hpp"
#include "common/run_columns.hpp"
#include "common/run_schema.hpp"
#include "compare/claims.hpp"
#include "compare/estimate_envelopes.hpp"
#include "compare/table1.hpp"
#include "compare/verdict_tables.hpp"
#include "simulate/calibration.hpp"
#include "simulate/generator.hpp"
#include "simulate/realised_assumptions.hpp"
#include "simulate/run_internal.hpp"
#include "simulate/trial_counts_file.hpp"

namespace attngeo::simulate {
namespace {

using namespace attngeo::compare;  // the judge of the estimates
using Clock = std::chrono::steady_clock;

// Estimates of the four metrics at one N (simulate.csv's description of each point: the mean,
// its standard error and 95 % interval; the verdict uses the simultaneous band instead).
struct SizeEstimates {
    int N = 0;
    Estimate precision, recall, fmax, fmin;
};

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

nlohmann::json decisions_json() {
    return nlohmann::json::array({
        "Metrics (docs/design.md section 2): I_N = top-N by the ranking score, ties to the lower "
        "index; s(N) summed in rank order; closed balls; N = n gives P = R = F = 1 with "
        "r_min = inf.",
        "Bounds (docs/design.md section 3): union factors n - N; Delta0 uses rho_out (eq. 29); "
        "t(x) = exp(-kappa d (max(x,0)/B)^2) (1 for a margin <= 0); the Delta0 term is dropped "
        "when the sink is not selected; all bounds are 1 when I_N minus the sink is empty or "
        "N = n; p-(xi) = 1/2 for xi <= 0.",
        "paper variant keeps eq. (10) literally: the sink's M_0 has no self term, so mu_0j is ~2 "
        "a_0^2 too small and the upper bound on P can fail at small N (reported, not "
        "corrected); its upper bounds at N = 1 are below the identity P(r_max,1) = R(r_min,1) = "
        "1 (reported as contradicted by construction).",
        "exact-mean variant: mu_ij from the expected Gram matrix including the sink (d -> inf "
        "geometry).",
        "scale-invariant variant: B = (a_max_in + a_max_out) * sum_{k in I_N} a_k, quadratic in "
        "scale like Delta.",
        "corrected variant: the exact-mean mu with the scale-invariant B (neither fix alone "
        "removes both defects), and both upper bounds 1 at N = 1 (the identity "
        "P(r_max,1) = R(r_min,1) = 1; docs/design.md section 3).",
        "Expectation over direction randomness with alpha and the nominal norms fixed "
        "(docs/design.md section 5); norm noise (--norm-cv) is multiplicative log-normal per "
        "trial and the bounds use the nominal norms.",
        "Directions: Gaussian with covariance K_ij I/d exactly (AR(1); sink from K^-1 1); after "
        "normalisation E cos is rho * c(d, rho) (reported as expected_after_normalisation), "
        "which tends to rho as d -> inf.",
        "Estimates (simulate.csv): per-trial values rounded once to 2^-40 fixed point and summed "
        "exactly in 128-bit integers (bit-identical for any thread count or sharding); 95% "
        "Student-t intervals per point, descriptive only. Per trial the exact counts K_in, K_out "
        "of every N are kept (per_trial.safetensors): the units of the verdict's band.",
        kVerdictDecision,
        theory::kBallConventionDecision,
        "claims.csv (simulate only): claim C1 per variant by the rule of docs/design.md section "
        "7 (no: a side falsified or contradicted by construction; yes: every side holds with "
        "information share >= 0.5 and an informative side per metric; else can't tell); the "
        "claims about real heads (C2-C5) are compare's.",
        "d = inf: metrics of the expected Gram matrix a_k a_l K_kl (no sampling, trials = 0, the "
        "exact method); bounds at kappa d = inf (t = 0 for a positive margin, p- = 0 for a "
        "positive gap), the same at every kappa.",
        "Sweeps: every grid point judged at 95 % on a shared kappa grid (each refined at its "
        "own boundaries); joint_kappa is the intersection of their sets per side on the kappa "
        "they share (sweep.csv's *_joint columns: each side's bound "
        "at that intersection's kappa_edge, empty when it is empty); a sweep over kappa judges "
        "each point at its own kappa and has no joint set.",
    });
}

// A run folder's CSV outputs while they are assembled, each opened with its header.
struct RunTables {
    std::ostringstream main;     // simulate.csv or sweep.csv
    std::ostringstream bounds;   // bounds.csv (simulate only)
    std::ostringstream sums;     // sums.csv
    std::ostringstream scan;     // kappa_scan.csv
    std::ostringstream verdict;  // verdict.csv
    std::string table1;          // table1.csv (sweep only)
    std::string claims;          // claims.csv (simulate only)
};

// The names of the swept parameters, in --set order: the columns after `grid`.
std::vector<std::string> swept_names(const RunConfig& config) {
    std::vector<std::string> names;
    for (const auto& [name, values] : config.sweep)
        names.push_back(name);
    return names;
}

void open_tables(RunTables& tables, const RunConfig& config) {
    const std::vector<std::string> swept = swept_names(config);
    const auto header = [&](const char* file) {
        return schema::csv_header(schema::page::simulate, file, swept) + '\n';
    };
    tables.scan << header(schema::file::kappa_scan);
    tables.verdict << header(schema::file::verdict);
    // A sweep's main file is long: one row per (grid point, N, variant), so no column name
    // carries a variant.
    tables.main << header(config.kind == "sweep" ? schema::file::sweep_estimates
                                                 : schema::file::simulate_estimates);
    tables.bounds << header(schema::file::bounds);
    tables.sums << header(schema::file::monte_carlo_sums);
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

// Everything one grid point contributes, kept until every point is judged (a sweep's points
// are judged together).
struct EvaluatedPoint {
    GridPoint point;
    PointSetup setup;
    std::vector<SizeEstimates> estimates;  // [|sizes|]
    std::int64_t trials = 0;
    PointRegimes regimes;
    PointInputs inputs;  // what the judge reads
};

// The per-trial P and R of a point's counts, [T, S].
MeasuredPoint measured_from_counts(const PointSetup& setup, const SimulationSums& sums) {
    const std::vector<int>& sizes = setup.spec.sizes;
    const TrialCounts& c = sums.counts;
    if (c.trials != sums.trials || c.size_count != static_cast<int>(sizes.size()))
        throw std::logic_error("simulate: per-trial counts do not match the sums");
    MeasuredPoint m;
    const int S = static_cast<int>(sizes.size());
    for (UnitValues* v : {&m.P, &m.R}) {
        v->units = static_cast<int>(c.trials);
        v->points = S;
        v->values.resize(static_cast<std::size_t>(c.trials) * S);
    }
    for (std::int64_t t = 0; t < c.trials; ++t)
        for (int s = 0; s < S; ++s) {
            const std::size_t i = static_cast<std::size_t>(t) * S + s;
            m.P.values[i] = trial_precision(c, t, s, sizes[s]);
            m.R.values[i] = trial_recall(c, t, s, sizes[s]);
        }
    m.P.width = metric_widths(sizes, static_cast<int>(setup.head.alpha.size()));
    m.R.width.assign(S, 1.0);
    return m;
}

EvaluatedPoint evaluate_point(const RunConfig& config, const GridPoint& point,
                              const SimulationSums& s) {
    EvaluatedPoint e;
    e.point = point;
    e.setup = setup_point(config, point);
    const auto& sizes = e.setup.spec.sizes;
    e.regimes = point_regimes(e.setup);
    PointInputs& in = e.inputs;
    in.head = e.setup.head;
    in.sizes = sizes;
    in.ranking = e.setup.spec.ranking;
    in.d = e.setup.d;
    in.regimes = e.regimes.numbers;
    if (e.setup.spec.d_infinite) {
        const auto rows = infinite_d_metrics(e.setup.spec);
        e.estimates = estimates_exact(rows);
        in.measured.exact = true;
        for (const auto& r : rows) {
            in.measured.P_exact.push_back(r.precision_at_rmax);
            in.measured.R_exact.push_back(r.recall_at_rmin);
        }
    } else {
        e.estimates = estimates_from_sums(sizes, s);
        e.trials = s.trials;
        in.measured = measured_from_counts(e.setup, s);
    }
    return e;
}

// One variant judged at every point: per point its scan, rows and (sweeps) joint bounds.
using Judged = std::vector<VariantEnvelope>;  // [variants]

// Judges every point: together when they share their κ (given or not); a sweep over κ
// judges each point alone (no joint set).
Judged judge_all(const std::vector<EvaluatedPoint>& points, const RunConfig& config, int threads) {
    BandSettings band;
    band.replicates = config.band_replicates;
    band.seed = config.seed;
    band.threads = threads > 0 ? threads : omp_get_max_threads();
    bool same_kappa = true;
    for (const EvaluatedPoint& p : points)
        same_kappa = same_kappa && p.setup.kappa == points.front().setup.kappa;
    std::vector<PointInputs> inputs;
    for (const EvaluatedPoint& p : points)
        inputs.push_back(p.inputs);
    if (same_kappa) return judge_envelopes(inputs, points.front().setup.kappa, band);
    Judged out;
    for (std::size_t g = 0; g < points.size(); ++g) {
        const Judged one = judge_envelopes({inputs[g]}, points[g].setup.kappa, band);
        if (out.empty()) out.resize(one.size());
        for (std::size_t v = 0; v < one.size(); ++v) {
            out[v].variant = one[v].variant;
            out[v].scans.push_back(one[v].scans.front());
            out[v].rows.push_back(one[v].rows.front());
            out[v].rows_rule.push_back(one[v].rows_rule.front());
            std::array<std::vector<double>, kSideCount> none;
            for (auto& side : none)
                side.assign(inputs[g].sizes.size(), std::nan(""));
            out[v].joint_bounds.push_back(none);
        }
    }
    return out;
}

std::string grid_prefix(const GridPoint& point) {
    std::string prefix = std::to_string(point.index) + ',';
    for (const auto& [name, value] : point.values)
        prefix += format_double(value) + ',';
    return prefix;
}

// An empty field for an undefined number, as pandas reads NaN.
std::string field(double x) {
    return std::isnan(x) ? std::string() : format_double(x);
}

// sweep.csv's rows of grid point g: per N and variant, the estimates, the bound rows, then each
// side at the joint κ_edge.
void append_sweep_rows(std::ostream& out, const EvaluatedPoint& p, const Judged& judged,
                       std::size_t g) {
    const auto& sizes = p.setup.spec.sizes;
    for (std::size_t i = 0; i < sizes.size(); ++i) {
        const std::string prefix = grid_prefix(p.point) + std::to_string(sizes[i]) + ',' +
                                   estimate_columns(p.estimates[i], p.trials);
        for (const VariantEnvelope& v : judged) {
            const theory::BoundRow& b = v.rows[g][i];
            out << prefix << ',' << theory::to_string(v.variant) << ','
                << field(v.scans[g].rows_kappa);
            for (double x : {b.precision_lower, b.precision_upper, b.recall_lower, b.recall_upper})
                out << ',' << format_double(x);
            for (int side = 0; side < kSideCount; ++side)
                out << ','
                    << field(v.joint_bounds.empty() ? std::nan("") : v.joint_bounds[g][side][i]);
            out << '\n';
        }
    }
}

void append_bounds_rows(std::ostream& out, const Judged& judged,
                        const std::vector<std::string>& regime_names) {
    for (const VariantEnvelope& v : judged) {
        const KappaScan& scan = v.scans.front();
        for (std::size_t i = 0; i < v.rows.front().size(); ++i) {
            const theory::BoundRow& b = v.rows.front()[i];
            out << b.N << ',' << theory::to_string(v.variant) << ',' << field(scan.rows_kappa)
                << ',' << regime_names[b.N];
            for (double x :
                 {b.delta, b.delta0, b.scale, b.precision_lower, b.precision_upper, b.recall_lower,
                  b.recall_upper, b.fmax_lower, b.fmax_upper, b.fmin_lower, b.fmin_upper})
                out << ',' << format_double(x);
            out << ',' << judgement_fields(scan, i, b) << '\n';
        }
    }
}

// The manifest's "envelopes" of grid point g: per variant its verdict block.
nlohmann::json envelopes_json(const Judged& judged, std::size_t g, int band_replicates) {
    nlohmann::json out = nlohmann::json::object();
    for (const VariantEnvelope& v : judged)
        out[theory::to_string(v.variant)] =
            verdict_json(v.scans[g], v.rows_rule[g], band_replicates);
    return out;
}

// claims.csv of a simulation: C1 per variant, the units being the trials of the one simulated
// head (the other claims are about heads of real models: compare answers them).
std::vector<ClaimRow> simulated_claims(const Judged& judged, std::int64_t trials) {
    std::vector<ClaimRow> rows;
    const std::string units = std::to_string(trials) + " trials of one simulated head";
    for (const VariantEnvelope& v : judged)
        rows.push_back(envelopes_claim(v.variant, v.scans.front(), units));
    return rows;
}

// One grid point's rows of every table and its entry of the manifest's "points".
nlohmann::json write_point(RunTables& tables, const RunConfig& config, const EvaluatedPoint& p,
                           const SimulationSums& s, const Judged& judged, std::size_t g) {
    const auto& sizes = p.setup.spec.sizes;
    if (!p.setup.spec.d_infinite) write_sums_csv(tables.sums, p.point.index, sizes, s);
    const std::string prefix = grid_prefix(p.point);
    for (const VariantEnvelope& v : judged) {
        append_scan_rows(tables.scan, prefix, v.variant, v.scans[g]);
        append_verdict_rows(tables.verdict, prefix, v.variant, v.scans[g]);
    }
    if (config.kind == "sweep") {
        append_sweep_rows(tables.main, p, judged, g);
    } else {
        for (std::size_t i = 0; i < sizes.size(); ++i)
            tables.main << sizes[i] << ',' << estimate_columns(p.estimates[i], p.trials) << '\n';
        append_bounds_rows(tables.bounds, judged, p.regimes.names);
        tables.claims = claims_csv(simulated_claims(judged, p.trials));
    }
    const int n = static_cast<int>(p.setup.head.alpha.size());
    nlohmann::json values_json = nlohmann::json::object();
    for (const auto& [name, value] : p.point.values)
        values_json[name] = json_number(value);
    nlohmann::json point_json = {{"grid", p.point.index},
                                 {"values", values_json},
                                 {"n", n},
                                 {"d", json_number(p.setup.d)},
                                 {"trials", p.trials},
                                 {"regimes", p.regimes.boundaries},
                                 {"envelopes", envelopes_json(judged, g, config.band_replicates)}};
    if (!p.setup.spec.d_infinite) {
        point_json["realised"] = realised_json(s, p.setup);
        point_json["assumptions"] = realised_assumptions_json(s, p.setup.spec, p.setup.head);
    }
    if (!p.setup.spec.model.cosine)
        point_json["max_feasible_abs_rho0"] = max_feasible_rho0(n - 1, p.setup.spec.model.beta);
    return point_json;
}

// The manifest's "joint_kappa" of a sweep: per variant the intersection of the points' sets.
nlohmann::json joint_kappa_json(const Judged& judged, bool lockstep) {
    nlohmann::json out = nlohmann::json::object();
    for (const VariantEnvelope& v : judged)
        out[theory::to_string(v.variant)] =
            lockstep ? joint_json(v.joint) : nlohmann::json("not computed: kappa is swept");
    return out;
}

// Table 1 of a sweep (docs/design.md §3) at its first grid point: the N the report's panels follow
// (over every point's N), that point's d (1e6 at d = ∞, where d has no finite difference) and the
// paper variant's bound rows' κ there (1 when its sides share none).
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
                                      .at("rows_kappa");
    settings.kappa = kappa.is_number() ? kappa.get<double>() : 1.0;
    settings.variant = theory::BoundVariant::paper;
    return sensitivity_table(first.spec.model, followed_sizes(every_size), settings);
}

// Every file of the folder, manifest last, written together: a failure leaves --out as it was.
void write_outputs(const std::string& dir, const RunConfig& config, const RunTables& tables,
                   const std::vector<SimulationSums>& sums, const CalibrationResult* calibration,
                   nlohmann::json& manifest) {
    const bool is_sweep = config.kind == "sweep";
    std::vector<std::pair<std::string, std::string>> outputs = {
        {is_sweep ? schema::file::sweep_estimates : schema::file::simulate_estimates,
         tables.main.str()},
        {schema::file::monte_carlo_sums, tables.sums.str()},
        {schema::file::kappa_scan, tables.scan.str()},
        {schema::file::verdict, tables.verdict.str()}};
    if (!is_sweep) outputs.insert(outputs.begin() + 1, {schema::file::bounds, tables.bounds.str()});
    if (!is_sweep) outputs.emplace_back(schema::file::claims, tables.claims);
    if (is_sweep) outputs.emplace_back(schema::file::table1, tables.table1);
    if (calibration) outputs.emplace_back(schema::file::calibration, calibration_csv(*calibration));
    std::vector<std::string> files;
    for (const auto& [name, content] : outputs) {
        files.push_back(name);
        if (name == schema::file::monte_carlo_sums) files.push_back(schema::file::trial_counts);
    }
    files.push_back(schema::file::manifest);
    manifest["outputs"] = files;
    outputs.emplace_back(schema::file::manifest, manifest.dump(2) + "\n");
    OutputFolder folder(dir, "--out");
    write_trial_counts(folder, config, sums);  // binary, so not one of the texts
    for (const auto& [name, content] : outputs)
        folder.write(name, content);
    folder.commit();
}

}  // namespace

nlohmann::json write_run(const std::string& dir, const RunConfig& config,
                         const std::vector<SimulationSums>& sums, int threads,
                         const nlohmann::json& provenance, RunTimings timings,
                         const CalibrationResult* calibration) {
    RunTables tables;
    open_tables(tables, config);
    const auto bounds_start = Clock::now();
    std::vector<EvaluatedPoint> points;
    for (const GridPoint& point : grid_points(config))
        points.push_back(
            evaluate_point(config, point, sums.at(static_cast<std::size_t>(point.index))));
    const Judged judged = judge_all(points, config, threads);
    nlohmann::json points_json = nlohmann::json::array();
    for (std::size_t g = 0; g < points.size(); ++g)
        points_json.push_back(write_point(tables, config, points[g],
                                          sums.at(static_cast<std::size_t>(points[g].point.index)),
                                          judged, g));
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
        bool lockstep = true;
        for (const EvaluatedPoint& p : points)
            lockstep = lockstep && p.setup.kappa == points.front().setup.kappa;
        manifest["joint_kappa"] = joint_kappa_json(judged, lockstep);
        const Table1 table1 = sweep_table1(config, points_json);
        tables.table1 = table1_csv(table1);
        manifest["table1"] = table1_manifest(table1);
        manifest["decisions"].push_back(table1_decision(
            "the first grid point, d = its d (1e6 for d = inf), kappa = the paper variant's "
            "bound rows' kappa there (1 when its sides share none), N over every grid point's "
            "sizes"));
    }
    if (calibration) manifest["calibration"] = calibration_json(*calibration);
    for (const auto& [key, value] : provenance.items())
        manifest[key] = value;
    write_outputs(dir, config, tables, sums, calibration, manifest);
    return manifest;
}

}  // namespace attngeo::simulate
