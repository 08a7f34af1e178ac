// A run folder from its exact sums: the estimates, compare's envelopes, κ scan and verdict at
// every grid point (a sweep's joint κ and Table 1), the tables and the manifest; see run.hpp.
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
#include "common/run_schema.hpp"
#include "compare/estimate_envelopes.hpp"
#include "compare/table1.hpp"
#include "compare/verdict_output.hpp"
#include "simulate/generator.hpp"
#include "simulate/realised_assumptions.hpp"
#include "simulate/run_internal.hpp"

namespace attngeo::simulate {
namespace {

using namespace attngeo::compare;  // the judge of the estimates
using Clock = std::chrono::steady_clock;

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
    tables.bounds << "N,variant,kappa,regime," << schema::kBoundValueColumns
                  << ",P_inside,R_inside,Fmax_inside,Fmin_inside,P_violation,R_violation,"
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
        {is_sweep ? schema::file::sweep_estimates : schema::file::simulate_estimates,
         tables.main.str()},
        {schema::file::monte_carlo_sums, tables.sums.str()},
        {schema::file::kappa_scan, tables.scan.str()},
        {schema::file::verdict, tables.verdict.str()}};
    if (!is_sweep) outputs.insert(outputs.begin() + 1, {schema::file::bounds, tables.bounds.str()});
    if (is_sweep) outputs.emplace_back(schema::file::table1, tables.table1);
    std::vector<std::string> files;
    for (const auto& [name, content] : outputs)
        files.push_back(name);
    files.push_back(schema::file::manifest);
    manifest["outputs"] = files;
    outputs.emplace_back(schema::file::manifest, manifest.dump(2) + "\n");
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

}  // namespace attngeo::simulate
