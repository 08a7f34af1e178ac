// Means, intervals, N*_τ and the geometry link of a truncate folder; see truncation_summary.hpp.
// Resampling is compare/bootstrap.hpp's, so every interval is the same bits on every platform.
#include "compare/truncation_summary.hpp"

#include <algorithm>
#include <array>
#include <boost/math/distributions/students_t.hpp>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <numeric>
#include <optional>
#include <sstream>
#include <tuple>

#include "common/atomic_file.hpp"
#include "common/errors.hpp"
#include "common/format.hpp"
#include "common/json_file.hpp"
#include "common/run_columns.hpp"
#include "common/run_schema.hpp"
#include "common/safetensors.hpp"
#include "compare/bootstrap.hpp"
#include "compare/claims.hpp"
#include "compare/correlation.hpp"
#include "compare/extract_folder_reader.hpp"
#include "compare/fits.hpp"
#include "compare/link_tests.hpp"

namespace attngeo::compare {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr int kMeasures = 5;
constexpr const char* kMeasureNames[kMeasures] = {"delta_nll", "kl", "top1", "dropped_mass",
                                                  "output_error"};
enum Measure { delta_nll, kl, top1, dropped_mass, output_error };

// A truncate folder's per-document measures.                       C configurations, D windows
struct TruncationRun {
    nlohmann::json manifest;
    std::string scope;
    std::vector<std::string> policies;  // manifest parameters.policies
    std::vector<double> taus;
    int replicates = 0;  // bootstrap resamples of the windows (0: no intervals)
    int context = 0;     // T, the window length (manifest parameters.context)
    std::int64_t configs = 0, docs = 0;
    std::vector<std::int64_t> policy, renorm, layer, head, N;  // [C]
    std::vector<double> measures[kMeasures];                   // [C, D] row-major

    double at(int measure, std::int64_t config, std::int64_t doc) const {
        return measures[measure][config * docs + doc];
    }
};

std::vector<std::int64_t> int64s(const HostTensor& t) {
    std::vector<std::int64_t> out(static_cast<std::size_t>(t.numel()));
    if (!out.empty()) std::memcpy(out.data(), t.data, out.size() * sizeof(std::int64_t));
    return out;
}

std::vector<double> doubles(const HostTensor& t) {
    std::vector<double> out(static_cast<std::size_t>(t.numel()));
    if (!out.empty()) std::memcpy(out.data(), t.data, out.size() * sizeof(double));
    return out;
}

TruncationRun read_truncation_run(const std::string& dir) {
    TruncationRun run;
    run.manifest = read_run_manifest(dir, {schema::kind::truncate});
    const std::string manifest = run_manifest_path(dir);
    with_json_context(manifest, [&] {
        const auto& p = run.manifest.at("parameters");
        run.scope = p.at("scope").get<std::string>();
        run.policies = p.at("policies").get<std::vector<std::string>>();
        run.taus = p.at("tau").get<std::vector<double>>();
        run.replicates = p.at("replicates").get<int>();
        run.context = json_integer<int>(p.at("context"));
    });
    if (run.context < 1)
        throw InputError(manifest + ": parameters.context is " + std::to_string(run.context) +
                         ", expected >= 1");
    if (run.replicates < 0)
        throw InputError(manifest + ": parameters.replicates is " + std::to_string(run.replicates) +
                         ", expected >= 0");
    const SafetensorsFile file((std::filesystem::path(dir) / schema::file::per_document).string());
    const HostTensor N = fetch_tensor(file, "N", DType::I64, {-1});
    run.configs = N.shape[0];
    run.N = int64s(N);
    run.policy = int64s(fetch_tensor(file, "policy", DType::I64, {run.configs}));
    run.renorm = int64s(fetch_tensor(file, "renorm", DType::I64, {run.configs}));
    run.layer = int64s(fetch_tensor(file, "layer", DType::I64, {run.configs}));
    run.head = int64s(fetch_tensor(file, "head", DType::I64, {run.configs}));
    const HostTensor first = fetch_tensor(file, kMeasureNames[0], DType::F64, {run.configs, -1});
    run.docs = first.shape[1];
    for (int m = 0; m < kMeasures; ++m)
        run.measures[m] =
            doubles(fetch_tensor(file, kMeasureNames[m], DType::F64, {run.configs, run.docs}));
    for (std::int64_t c = 0; c < run.configs; ++c)
        if (run.policy[c] < 0 || run.policy[c] >= static_cast<std::int64_t>(run.policies.size()))
            throw InputError(file.path() + ": tensor \"policy\" holds " +
                             std::to_string(run.policy[c]) + ", expected an index below " +
                             std::to_string(run.policies.size()) + " (manifest policies)");
    return run;
}

std::string field(double x) {
    return std::isfinite(x) ? format_double(x) : std::string();
}

// Mean, standard error and 95 % t-interval over documents of one configuration's measure.
struct MeanInterval {
    double mean = kNaN, se = kNaN, lo = kNaN, hi = kNaN;
};
MeanInterval mean_interval(const TruncationRun& run, int measure, std::int64_t config) {
    MeanInterval m;
    const std::int64_t D = run.docs;
    if (D < 1) return m;
    double sum = 0;
    for (std::int64_t d = 0; d < D; ++d)
        sum += run.at(measure, config, d);
    m.mean = sum / D;
    if (D < 2) return m;
    double squares = 0;
    for (std::int64_t d = 0; d < D; ++d)
        squares += (run.at(measure, config, d) - m.mean) * (run.at(measure, config, d) - m.mean);
    m.se = std::sqrt(squares / (D - 1) / D);
    const boost::math::students_t_distribution<double> t(static_cast<double>(D - 1));
    const double half = boost::math::quantile(t, 0.975) * m.se;
    m.lo = m.mean - half;
    m.hi = m.mean + half;
    return m;
}

std::string renorm_name(std::int64_t renorm) {
    return renorm ? "yes" : "no";
}

void write_truncation_table(const TruncationRun& run, const std::string& path) {
    std::ostringstream out;
    out << schema::csv_header(schema::page::truncate, schema::file::truncation) << '\n';
    for (std::int64_t c = 0; c < run.configs; ++c) {
        const MeanInterval loss = mean_interval(run, delta_nll, c);
        const MeanInterval divergence = mean_interval(run, kl, c);
        out << run.policies[run.policy[c]] << ',' << renorm_name(run.renorm[c]) << ',' << run.scope
            << ',' << run.layer[c] << ',' << run.head[c] << ',' << run.N[c] << ',' << run.docs
            << ',' << field(loss.mean) << ',' << field(loss.se) << ',' << field(loss.lo) << ','
            << field(loss.hi) << ',' << field(divergence.mean) << ',' << field(divergence.se) << ','
            << field(mean_interval(run, top1, c).mean) << ','
            << field(mean_interval(run, dropped_mass, c).mean) << ','
            << field(mean_interval(run, output_error, c).mean) << '\n';
    }
    write_file_atomic(path, out.str());
}

// The configurations of one curve (policy, renorm, unit) in N order.
using Curve = std::vector<std::int64_t>;
std::vector<Curve> curves_of(const TruncationRun& run) {
    std::map<std::tuple<std::int64_t, std::int64_t, std::int64_t, std::int64_t>, std::size_t> at;
    std::vector<Curve> curves;
    for (std::int64_t c = 0; c < run.configs; ++c) {
        const auto key = std::make_tuple(run.policy[c], run.renorm[c], run.layer[c], run.head[c]);
        const auto found = at.find(key);
        if (found == at.end()) {
            at[key] = curves.size();
            curves.push_back({c});
        } else {
            curves[found->second].push_back(c);
        }
    }
    for (Curve& curve : curves)
        std::sort(curve.begin(), curve.end(),
                  [&](std::int64_t a, std::int64_t b) { return run.N[a] < run.N[b]; });
    return curves;
}

// The smallest N of `curve` whose document-weighted mean ΔNLL is ≤ τ; +inf when none is.
double effective_size(const TruncationRun& run, const Curve& curve,
                      const std::vector<double>& weight, double tau) {
    double total = 0;
    for (double w : weight)
        total += w;
    for (std::int64_t c : curve) {
        double sum = 0;
        for (std::int64_t d = 0; d < run.docs; ++d)
            sum += weight[d] * run.at(delta_nll, c, d);
        if (sum / total <= tau) return static_cast<double>(run.N[c]);
    }
    return std::numeric_limits<double>::infinity();
}

// The KV-cache compression ratio 1 − N/T of keeping N of the T keys, as the KV-cache compression
// literature states budgets; empty where N is (no N reaches τ).
std::string compression_field(double N, int context) {
    return field(1.0 - N / context);
}

void write_effective_sizes(const TruncationRun& run, int replicates, const std::string& path) {
    const std::vector<Curve> curves = curves_of(run);
    const std::vector<double> everyone(static_cast<std::size_t>(run.docs), 1.0);
    const bool resample = replicates > 0 && run.docs >= kBootstrapMinimumDocuments;
    std::vector<std::vector<double>> weights;
    for (int r = 0; resample && r < replicates; ++r)
        weights.push_back(resample_counts(kTruncationBootstrapSeed, r, static_cast<int>(run.docs)));
    std::ostringstream out;
    out << schema::csv_header(schema::page::truncate, schema::file::effective_size) << '\n';
    for (const Curve& curve : curves)
        for (double tau : run.taus) {
            const double point = effective_size(run, curve, everyone, tau);
            double lo = kNaN, hi = kNaN;
            if (resample) {
                std::vector<double> sample;
                for (const auto& weight : weights)
                    sample.push_back(effective_size(run, curve, weight, tau));
                lo = percentile_type7(sample, 0.025);
                hi = percentile_type7(sample, 0.975);
            }
            const std::int64_t c = curve.front();
            out << run.policies[run.policy[c]] << ',' << renorm_name(run.renorm[c]) << ','
                << run.scope << ',' << run.layer[c] << ',' << run.head[c] << ','
                << format_double(tau) << ',' << field(point) << ',' << field(lo) << ',' << field(hi)
                << ',' << (resample ? replicates : 0) << ','
                << compression_field(point, run.context) << ','
                << compression_field(hi, run.context) << ',' << compression_field(lo, run.context)
                << '\n';
        }
    write_file_atomic(path, out.str());
}

// ---- The geometry link (scope head) ----------------------------------------------------------

// Ranks 1..n with ties at their average rank.
std::vector<double> average_ranks(const std::vector<double>& x) {
    std::vector<std::size_t> order(x.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](auto a, auto b) { return x[a] < x[b]; });
    std::vector<double> rank(x.size());
    for (std::size_t i = 0; i < order.size();) {
        std::size_t j = i;
        while (j + 1 < order.size() && x[order[j + 1]] == x[order[i]])
            ++j;
        for (std::size_t k = i; k <= j; ++k)
            rank[order[k]] = (static_cast<double>(i + j) / 2) + 1;
        i = j + 1;
    }
    return rank;
}

// The quantities linked to each head's loss, in geometry_link.csv's order.
constexpr int kQuantities = 8;
constexpr const char* kQuantityNames[kQuantities] = {
    "precision", "recall", "f_score", "dropped_mass", "output_error", "lambda", "rho0", "beta"};
constexpr int kFScore = 2;  // kQuantityNames index of f_score
// The geometric quantities form the Holm family; dropped_mass and output_error are what the
// truncation itself removes, reported beside them as reference predictors outside the family.
constexpr bool kGeometric[kQuantities] = {true, true, true, false, false, true, true, true};
// P(r_max, N) = R(r_min, N) = 1 for every head at N = 1 and at N ≥ n (every token kept), hence
// F = 1: identities there, never tested, and never the N of the largest F.
constexpr bool kIdentityAtEnds[kQuantities] = {true, true, true, false, false, false, false, false};
bool identity_size(std::int64_t N, int context) {
    return N == 1 || N >= context;
}

// Everything the link reads: the truncate run and the extract of the same windows.
struct LinkInputs {
    const TruncationRun* run = nullptr;
    EmpiricalRun geometry;
    PerDocArrays per_doc;
    std::vector<double> beta;  // [layers · heads] fitted on the extract's mean cos by lag
    // [configs] each configuration's head means over every document (head_means with weight 1),
    // for head_link.csv and link_summary.json; empty where the extract lacks the configuration's N
    std::vector<std::optional<std::array<double, kQuantities + 1>>> plain_means;
};

LinkInputs read_link_inputs(const TruncationRun& run, const std::string& dir) {
    LinkInputs in;
    in.run = &run;
    const std::string extract =
        (std::filesystem::path(dir) / schema::file::geometry_extract).string();
    in.geometry = read_empirical_run(extract);
    in.per_doc =
        read_per_doc((std::filesystem::path(extract) / schema::file::per_document).string());
    if (in.per_doc.docs != run.docs)
        throw InputError(extract + ": " + std::to_string(in.per_doc.docs) +
                         " documents, expected the truncate run's " + std::to_string(run.docs));
    const int lags = std::min({64, in.geometry.context - 1, in.geometry.max_lag});
    for (const EmpiricalHead& head : in.geometry.rows)
        in.beta.push_back(
            fit_exponential_decay({head.cos_by_lag.begin(), head.cos_by_lag.begin() + lags}).beta);
    return in;
}

// The extract grid's index of N; −1 when absent.
int size_index(const PerDocArrays& a, std::int64_t N) {
    const auto at = std::find(a.sizes.begin(), a.sizes.end(), static_cast<int>(N));
    return at == a.sizes.end() ? -1 : static_cast<int>(at - a.sizes.begin());
}

// Document-weighted means for one head (`config` its configuration at N, s the extract's index
// of N): ΔNLL first, then the quantities in kQuantityNames order.
std::array<double, kQuantities + 1> head_means(const LinkInputs& in, std::int64_t config, int s,
                                               const std::vector<double>& weight) {
    const TruncationRun& run = *in.run;
    const PerDocArrays& a = in.per_doc;
    const int S = static_cast<int>(a.sizes.size());
    const std::size_t unit =
        static_cast<std::size_t>(run.layer[config]) * a.heads + run.head[config];
    std::array<double, kQuantities + 1> sums{};
    double total = 0;
    for (std::int64_t d = 0; d < run.docs; ++d) {
        const double w = weight[d];
        if (w == 0) continue;
        total += w;
        const std::size_t base = static_cast<std::size_t>(d) * a.layers * a.heads + unit;
        const double P = a.P[base * S + s], R = a.R[base * S + s];
        sums[0] += w * run.at(delta_nll, config, d);
        sums[1] += w * P;
        sums[2] += w * R;
        sums[3] += w * (P + R > 0 ? 2 * P * R / (P + R) : 0.0);
        sums[4] += w * run.at(dropped_mass, config, d);
        sums[5] += w * run.at(output_error, config, d);
        sums[6] += w * a.lambda[base];
        sums[7] += w * a.rho0[base];
    }
    for (double& s_ : sums)
        s_ /= total;
    sums[8] = in.beta[unit];
    return sums;
}

// Every configuration's head means with every document weighted 1 (none where the extract has
// no statistics at the configuration's N).
std::vector<std::optional<std::array<double, kQuantities + 1>>> plain_head_means(
    const LinkInputs& in) {
    const TruncationRun& run = *in.run;
    const std::vector<double> everyone(static_cast<std::size_t>(run.docs), 1.0);
    std::vector<std::optional<std::array<double, kQuantities + 1>>> means(
        static_cast<std::size_t>(run.configs));
    for (std::int64_t c = 0; c < run.configs; ++c) {
        const int s = size_index(in.per_doc, run.N[c]);
        if (s >= 0) means[c] = head_means(in, c, s, everyone);
    }
    return means;
}

// One N of the link under one weighting of the documents: per quantity, Spearman across the
// heads of `configs` of ΔNLL with the quantity, and the mean over those heads of F.
struct LinkAt {
    std::array<double, kQuantities> rho{};
    double mean_f = kNaN;
};
LinkAt link_at(const LinkInputs& in, const std::vector<std::int64_t>& configs, int s,
               const std::vector<double>& weight) {
    std::vector<double> loss;
    std::array<std::vector<double>, kQuantities> quantity;
    for (std::int64_t c : configs) {
        const auto means = head_means(in, c, s, weight);
        loss.push_back(means[0]);
        for (int q = 0; q < kQuantities; ++q)
            quantity[q].push_back(means[q + 1]);
    }
    LinkAt at;
    for (int q = 0; q < kQuantities; ++q)
        at.rho[q] = spearman(loss, quantity[q]);
    at.mean_f = std::accumulate(quantity[kFScore].begin(), quantity[kFScore].end(), 0.0) /
                static_cast<double>(configs.size());
    return at;
}

// One (policy, renorm, N) of geometry_link.csv.
struct LinkRow {
    std::int64_t policy = 0, renorm = 0, N = 0;
    int heads = 0, replicates = 0;
    std::array<double, kQuantities> rho{}, lo{}, hi{};  // ρ and its document-bootstrap interval
    std::array<LinkTest, kQuantities> tests;            // head level, Holm family
    int family_size = 0;                                // m of the row's (policy, renorm)
    double mean_f = kNaN;                               // head-mean F, every document once
    std::vector<double> mean_f_resampled;               // [replicates] the same per resample
};

// The head-level tests of every row, each (policy, renorm) one Holm family: its geometric
// quantities at every N, less the identities at N = 1 and N ≥ n (`context`) and the undefined
// tests.
void test_link_families(std::vector<LinkRow>& rows, int context) {
    std::map<std::pair<std::int64_t, std::int64_t>, std::vector<LinkRow*>> curves;
    for (LinkRow& row : rows)
        curves[{row.policy, row.renorm}].push_back(&row);
    for (auto& [key, curve] : curves) {
        std::vector<LinkTest> tests;
        for (const LinkRow* row : curve)
            for (int q = 0; q < kQuantities; ++q) {
                LinkTest t;
                t.quantity = kQuantityNames[q];
                t.N = static_cast<int>(row->N);
                t.spearman = row->rho[q];
                t.heads = row->heads;
                t.candidate =
                    kGeometric[q] && !(kIdentityAtEnds[q] && identity_size(row->N, context));
                tests.push_back(t);
            }
        const int m = test_link_family(tests);
        for (std::size_t r = 0; r < curve.size(); ++r) {
            curve[r]->family_size = m;
            for (int q = 0; q < kQuantities; ++q)
                curve[r]->tests[q] = tests[r * kQuantities + q];
        }
    }
}

std::vector<LinkRow> geometry_link(const LinkInputs& in, int replicates) {
    const TruncationRun& run = *in.run;
    std::map<std::tuple<std::int64_t, std::int64_t, std::int64_t>, std::vector<std::int64_t>>
        groups;
    for (std::int64_t c = 0; c < run.configs; ++c)
        groups[{run.policy[c], run.renorm[c], run.N[c]}].push_back(c);
    const std::vector<double> everyone(static_cast<std::size_t>(run.docs), 1.0);
    const bool resample = replicates > 0 && run.docs >= kBootstrapMinimumDocuments;
    std::vector<LinkRow> rows;
    for (const auto& [key, configs] : groups) {
        const int s = size_index(in.per_doc, std::get<2>(key));
        if (s < 0) continue;
        LinkRow row;
        std::tie(row.policy, row.renorm, row.N) = key;
        row.heads = static_cast<int>(configs.size());
        const LinkAt plain = link_at(in, configs, s, everyone);
        row.rho = plain.rho;
        row.mean_f = plain.mean_f;
        row.lo.fill(kNaN);
        row.hi.fill(kNaN);
        if (resample) {
            std::array<std::vector<double>, kQuantities> samples;
            bool defined[kQuantities];
            std::fill(std::begin(defined), std::end(defined), true);
            for (int r = 0; r < replicates; ++r) {
                const auto weight =
                    resample_counts(kTruncationBootstrapSeed, r, static_cast<int>(run.docs));
                const LinkAt at = link_at(in, configs, s, weight);
                for (int q = 0; q < kQuantities; ++q) {
                    defined[q] = defined[q] && std::isfinite(at.rho[q]);
                    samples[q].push_back(at.rho[q]);
                }
                row.mean_f_resampled.push_back(at.mean_f);
            }
            for (int q = 0; q < kQuantities; ++q)
                if (defined[q]) {
                    row.lo[q] = percentile_type7(samples[q], 0.025);
                    row.hi[q] = percentile_type7(samples[q], 0.975);
                }
            row.replicates = replicates;
        }
        rows.push_back(row);
    }
    test_link_families(rows, in.geometry.context);
    return rows;
}

void write_geometry_link(const TruncationRun& run, const std::vector<LinkRow>& rows,
                         const std::string& path) {
    std::ostringstream out;
    out << schema::csv_header(schema::page::truncate, schema::file::geometry_link) << '\n';
    for (const LinkRow& row : rows)
        for (int q = 0; q < kQuantities; ++q) {
            const LinkTest& t = row.tests[q];
            out << run.policies[row.policy] << ',' << renorm_name(row.renorm) << ',' << row.N << ','
                << kQuantityNames[q] << ',' << row.heads << ',' << field(row.rho[q]) << ','
                << field(row.lo[q]) << ',' << field(row.hi[q]) << ',' << row.replicates << ','
                << field(t.head.p) << ',' << field(t.head.lo) << ',' << field(t.head.hi) << ','
                << (t.family ? 1 : 0) << ',' << row.family_size << ',' << field(t.p_holm) << ','
                << field(t.adj_lo) << ',' << field(t.adj_hi) << ','
                << (t.family ? (t.excludes_zero ? "1" : "0") : "") << '\n';
        }
    write_file_atomic(path, out.str());
}

void write_head_link(const LinkInputs& in, const std::string& path) {
    const TruncationRun& run = *in.run;
    std::ostringstream out;
    out << schema::csv_header(schema::page::truncate, schema::file::head_link) << '\n';
    for (std::int64_t c = 0; c < run.configs; ++c) {
        if (!in.plain_means[c]) continue;
        const auto& means = *in.plain_means[c];
        out << run.policies[run.policy[c]] << ',' << renorm_name(run.renorm[c]) << ','
            << run.layer[c] << ',' << run.head[c] << ',' << run.N[c];
        for (double m : means)
            out << ',' << field(m);
        out << ','
            << theory::to_string(
                   in.geometry.at(static_cast<int>(run.layer[c]), static_cast<int>(run.head[c]))
                       .regime)
            << '\n';
    }
    write_file_atomic(path, out.str());
}

nlohmann::json number_or_null(double x) {
    return std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(nullptr);
}

// Hyndman–Fan type 1 (the inverse of the empirical distribution): the ⌈q·B⌉-th smallest of
// the sample, so a quantile of grid sizes is a grid size.
double order_quantile(std::vector<double> sample, double q) {
    std::sort(sample.begin(), sample.end());
    const auto k = static_cast<std::size_t>(std::ceil(q * static_cast<double>(sample.size())));
    return sample[std::min(sample.size(), std::max<std::size_t>(k, 1)) - 1];
}

// The N of the largest head-mean F in `curve` over 2 ≤ N < n (`context`; ties: the smallest N;
// N = 1 and N ≥ n are identities, F = 1 for every head), with F from `f(row)`; −1 when the grid
// has no such N.
template <typename F>
int largest_f(const std::vector<const LinkRow*>& curve, int context, F f) {
    int at = -1;
    double best = -std::numeric_limits<double>::infinity();
    for (const LinkRow* row : curve)
        if (!identity_size(row->N, context) && f(*row) > best) {
            best = f(*row);
            at = static_cast<int>(row->N);
        }
    return at;
}

// The family's decision for link_summary.json: m, how many adjusted intervals exclude 0, the
// strongest test and, only when its adjusted interval excludes 0, the best predictor.
void summarise_family(const std::vector<const LinkRow*>& curve, nlohmann::json& entry) {
    std::vector<LinkTest> tests;
    for (const LinkRow* row : curve)
        tests.insert(tests.end(), row->tests.begin(), row->tests.end());
    int excluding = 0, heads = 0;
    for (const LinkTest& t : tests)
        excluding += t.family && t.excludes_zero;
    for (const LinkRow* row : curve)
        heads = std::max(heads, row->heads);
    const int strongest = strongest_link(tests);
    entry["heads"] = heads;
    entry["tests"] = curve.front()->family_size;
    entry["tests_excluding_zero"] = excluding;
    entry["best_predictor"] = nullptr;
    entry["strongest"] = nullptr;
    if (strongest < 0) return;
    const LinkTest& t = tests[strongest];
    // Built key by key: nlohmann's initializer lists draw more of GCC 12's false
    // -Warray-bounds.
    nlohmann::json& top = entry["strongest"];
    top = nlohmann::json::object();
    top["quantity"] = t.quantity;
    top["N"] = t.N;
    top["spearman"] = t.spearman;
    top["p_holm"] = t.p_holm;
    top["adj_lo"] = number_or_null(t.adj_lo);
    top["adj_hi"] = number_or_null(t.adj_hi);
    if (t.excludes_zero) entry["best_predictor"] = t.quantity;
}

// The N in [2, n) of largest head-mean F with the 95 % document-bootstrap interval of that argmax,
// the knee of the head-mean ΔNLL, and whether the whole interval lies before the knee.
void summarise_separability(const LinkInputs& in, const std::pair<std::int64_t, std::int64_t>& key,
                            const std::vector<const LinkRow*>& curve, nlohmann::json& entry) {
    const TruncationRun& run = *in.run;
    std::vector<int> sizes;
    std::vector<double> loss;
    for (const LinkRow* row : curve) {
        double loss_sum = 0;
        int heads = 0;
        for (std::int64_t c = 0; c < run.configs; ++c)
            if (run.policy[c] == key.first && run.renorm[c] == key.second && run.N[c] == row->N &&
                in.plain_means[c]) {
                loss_sum += (*in.plain_means[c])[0];
                ++heads;
            }
        sizes.push_back(static_cast<int>(row->N));
        loss.push_back(loss_sum / heads);
    }
    const int context = in.geometry.context;
    const int peak = largest_f(curve, context, [](const LinkRow& row) { return row.mean_f; });
    double lo = kNaN, hi = kNaN;
    const int replicates = curve.front()->replicates;
    if (peak >= 0 && replicates > 0) {
        std::vector<double> sample;
        for (int r = 0; r < replicates; ++r)
            sample.push_back(largest_f(
                curve, context, [r](const LinkRow& row) { return row.mean_f_resampled[r]; }));
        lo = order_quantile(sample, 0.025);
        hi = order_quantile(sample, 0.975);
    }
    const int knee = loss_knee(sizes, loss);
    nlohmann::json before = nullptr;
    if (knee >= 0 && std::isfinite(lo)) {
        if (hi < knee) before = true;
        if (lo >= knee) before = false;
    }
    entry["N_largest_F"] = peak >= 0 ? nlohmann::json(peak) : nlohmann::json(nullptr);
    entry["N_largest_F_lo"] = std::isfinite(lo) ? nlohmann::json(static_cast<int>(lo)) : nullptr;
    entry["N_largest_F_hi"] = std::isfinite(hi) ? nlohmann::json(static_cast<int>(hi)) : nullptr;
    entry["N_knee"] = knee >= 0 ? nlohmann::json(knee) : nlohmann::json(nullptr);
    entry["largest_F_before_knee"] = before;
}

// link_summary.json: one entry per (policy, renorm).
nlohmann::json link_summary(const LinkInputs& in, const std::vector<LinkRow>& rows) {
    const TruncationRun& run = *in.run;
    nlohmann::json summary = nlohmann::json::array();
    std::map<std::pair<std::int64_t, std::int64_t>, std::vector<const LinkRow*>> by_curve;
    for (const LinkRow& row : rows)
        by_curve[{row.policy, row.renorm}].push_back(&row);
    for (const auto& [key, curve] : by_curve) {
        nlohmann::json entry = nlohmann::json::object();
        entry["policy"] = run.policies[key.first];
        entry["renorm"] = renorm_name(key.second);
        summarise_family(curve, entry);
        summarise_separability(in, key, curve, entry);
        summary.push_back(entry);
    }
    return summary;
}

}  // namespace

double spearman(const std::vector<double>& x, const std::vector<double>& y) {
    if (x.size() != y.size() || x.size() < 2) return kNaN;
    return pearson(average_ranks(x), average_ranks(y));
}

int loss_knee(const std::vector<int>& sizes, const std::vector<double>& loss, double fraction) {
    if (loss.empty() || !(loss.front() > 0)) return -1;
    for (std::size_t i = 0; i < loss.size(); ++i)
        if (loss[i] <= fraction * loss.front()) return sizes[i];
    return -1;
}

void summarise_truncation(const std::string& dir) {
    const TruncationRun run = read_truncation_run(dir);
    const std::filesystem::path folder(dir);
    write_truncation_table(run, (folder / schema::file::truncation).string());
    write_effective_sizes(run, run.replicates, (folder / schema::file::effective_size).string());
    if (run.scope != "head") return;
    LinkInputs inputs = read_link_inputs(run, dir);
    inputs.plain_means = plain_head_means(inputs);
    const std::vector<LinkRow> rows = geometry_link(inputs, run.replicates);
    write_geometry_link(run, rows, (folder / schema::file::geometry_link).string());
    write_head_link(inputs, (folder / schema::file::head_link).string());
    const nlohmann::json summary = link_summary(inputs, rows);
    write_file_atomic((folder / schema::file::link_summary).string(), summary.dump(2) + "\n");
    // Claim C6, "geometry predicts what attention can drop", per (policy, renorm).
    write_file_atomic((folder / schema::file::claims).string(),
                      claims_csv(truncation_claims(summary)));
}

}  // namespace attngeo::compare
