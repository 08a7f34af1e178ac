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
#include "common/run_schema.hpp"
#include "common/safetensors.hpp"
#include "compare/bootstrap.hpp"
#include "compare/correlation.hpp"
#include "compare/emp_run.hpp"
#include "compare/fits.hpp"

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
    });
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
    out << "policy,renorm,scope,layer,head,N,docs,delta_nll,delta_nll_se,delta_nll_lo,"
           "delta_nll_hi,kl,kl_se,top1,dropped_mass,output_error\n";
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

void write_effective_sizes(const TruncationRun& run, int replicates, const std::string& path) {
    const std::vector<Curve> curves = curves_of(run);
    const std::vector<double> everyone(static_cast<std::size_t>(run.docs), 1.0);
    const bool resample = replicates > 0 && run.docs >= kBootstrapMinimumDocuments;
    std::vector<std::vector<double>> weights;
    for (int r = 0; resample && r < replicates; ++r)
        weights.push_back(resample_counts(kTruncationBootstrapSeed, r, static_cast<int>(run.docs)));
    std::ostringstream out;
    out << "policy,renorm,scope,layer,head,tau,N_star,N_star_lo,N_star_hi,replicates\n";
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
                << ',' << (resample ? replicates : 0) << '\n';
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

// The geometric quantities linked to each head's loss, in geometry_link.csv's order.
constexpr int kQuantities = 8;
constexpr const char* kQuantityNames[kQuantities] = {
    "precision", "recall", "f_score", "dropped_mass", "output_error", "lambda", "rho0", "beta"};

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

// Per quantity, Spearman across the heads of `configs` (one N) of ΔNLL with the quantity.
std::array<double, kQuantities> link_at(const LinkInputs& in,
                                        const std::vector<std::int64_t>& configs, int s,
                                        const std::vector<double>& weight) {
    std::vector<double> loss;
    std::array<std::vector<double>, kQuantities> quantity;
    for (std::int64_t c : configs) {
        const auto means = head_means(in, c, s, weight);
        loss.push_back(means[0]);
        for (int q = 0; q < kQuantities; ++q)
            quantity[q].push_back(means[q + 1]);
    }
    std::array<double, kQuantities> rho{};
    for (int q = 0; q < kQuantities; ++q)
        rho[q] = spearman(loss, quantity[q]);
    return rho;
}

struct LinkRow {
    std::int64_t policy = 0, renorm = 0, N = 0;
    int heads = 0, replicates = 0;
    std::array<double, kQuantities> rho{}, lo{}, hi{};
};

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
        row.rho = link_at(in, configs, s, everyone);
        row.lo.fill(kNaN);
        row.hi.fill(kNaN);
        if (resample) {
            std::array<std::vector<double>, kQuantities> samples;
            bool defined[kQuantities];
            std::fill(std::begin(defined), std::end(defined), true);
            for (int r = 0; r < replicates; ++r) {
                const auto weight =
                    resample_counts(kTruncationBootstrapSeed, r, static_cast<int>(run.docs));
                const auto rho = link_at(in, configs, s, weight);
                for (int q = 0; q < kQuantities; ++q) {
                    defined[q] = defined[q] && std::isfinite(rho[q]);
                    samples[q].push_back(rho[q]);
                }
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
    return rows;
}

void write_geometry_link(const TruncationRun& run, const std::vector<LinkRow>& rows,
                         const std::string& path) {
    std::ostringstream out;
    out << "policy,renorm,N,quantity,heads,spearman,ci_lo,ci_hi,replicates\n";
    for (const LinkRow& row : rows)
        for (int q = 0; q < kQuantities; ++q)
            out << run.policies[row.policy] << ',' << renorm_name(row.renorm) << ',' << row.N << ','
                << kQuantityNames[q] << ',' << row.heads << ',' << field(row.rho[q]) << ','
                << field(row.lo[q]) << ',' << field(row.hi[q]) << ',' << row.replicates << '\n';
    write_file_atomic(path, out.str());
}

void write_head_link(const LinkInputs& in, const std::string& path) {
    const TruncationRun& run = *in.run;
    std::ostringstream out;
    out << "policy,renorm,layer,head,N,delta_nll";
    for (const char* name : kQuantityNames)
        out << ',' << name;
    out << ",regime\n";
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

// Per (policy, renorm): the quantity with the largest mean |ρ| over the N where it is defined,
// the N of largest head-mean F, the knee of the head-mean ΔNLL and whether the first is before
// the second.
nlohmann::json link_summary(const LinkInputs& in, const std::vector<LinkRow>& rows) {
    const TruncationRun& run = *in.run;
    nlohmann::json summary = nlohmann::json::array();
    std::map<std::pair<std::int64_t, std::int64_t>, std::vector<const LinkRow*>> by_curve;
    for (const LinkRow& row : rows)
        by_curve[{row.policy, row.renorm}].push_back(&row);
    for (const auto& [key, curve] : by_curve) {
        std::array<double, kQuantities> strength{};
        std::array<int, kQuantities> counted{};
        std::vector<int> sizes;
        std::vector<double> loss, f_score;
        for (const LinkRow* row : curve) {
            for (int q = 0; q < kQuantities; ++q)
                if (std::isfinite(row->rho[q])) {
                    strength[q] += std::abs(row->rho[q]);
                    ++counted[q];
                }
            double loss_sum = 0, f_sum = 0;
            int heads = 0;
            for (std::int64_t c = 0; c < run.configs; ++c)
                if (run.policy[c] == key.first && run.renorm[c] == key.second &&
                    run.N[c] == row->N && in.plain_means[c]) {
                    loss_sum += (*in.plain_means[c])[0];
                    f_sum += (*in.plain_means[c])[3];
                    ++heads;
                }
            sizes.push_back(static_cast<int>(row->N));
            loss.push_back(loss_sum / heads);
            f_score.push_back(f_sum / heads);
        }
        int best = -1;
        nlohmann::json mean_abs = nlohmann::json::object();
        for (int q = 0; q < kQuantities; ++q) {
            const double value = counted[q] ? strength[q] / counted[q] : kNaN;
            mean_abs[kQuantityNames[q]] = std::isfinite(value) ? nlohmann::json(value) : nullptr;
            if (counted[q] && (best < 0 || value > strength[best] / counted[best])) best = q;
        }
        const int peak_f =
            sizes[std::max_element(f_score.begin(), f_score.end()) - f_score.begin()];
        const int knee = loss_knee(sizes, loss);
        summary.push_back(
            {{"policy", run.policies[key.first]},
             {"renorm", renorm_name(key.second)},
             {"best_predictor", best >= 0 ? kQuantityNames[best] : ""},
             {"mean_abs_spearman", mean_abs},
             {"N_largest_F", peak_f},
             {"N_knee", knee >= 0 ? nlohmann::json(knee) : nullptr},
             {"largest_F_before_knee", knee >= 0 ? nlohmann::json(peak_f < knee) : nullptr}});
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
    write_file_atomic((folder / schema::file::link_summary).string(),
                      link_summary(inputs, rows).dump(2) + "\n");
}

}  // namespace attngeo::compare
