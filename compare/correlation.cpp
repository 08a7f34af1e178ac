// Recall–ρ0 correlation across heads with a document bootstrap; see correlation.hpp.
// Resampling is compare/bootstrap.hpp's, so the intervals are the same bits on every platform.
#include "compare/correlation.hpp"

#include <omp.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <sstream>
#include <tuple>

#include "common/atomic_file.hpp"
#include "common/errors.hpp"
#include "common/format.hpp"
#include "common/run_columns.hpp"
#include "common/run_schema.hpp"
#include "common/safetensors.hpp"
#include "compare/bootstrap.hpp"
#include "compare/max_correlation_test.hpp"

namespace attngeo::compare {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::vector<float> floats(const HostTensor& t) {
    std::vector<float> out(static_cast<std::size_t>(t.numel()));
    if (!out.empty()) std::memcpy(out.data(), t.data, out.size() * sizeof(float));
    return out;
}

// The document-weighted means per unit: y [units] and x [S][units]; weight[d] = how often
// document d is drawn. Head h enters unit h / group (its GQA group with group > 1, itself with
// group = 1).
struct UnitMeans {
    std::vector<double> y;
    std::vector<std::vector<double>> x;
};

UnitMeans unit_means(const PerDocArrays& a, const std::vector<double>& weight, int group) {
    const int H = a.layers * a.heads, units = H / group;
    const int S = static_cast<int>(a.sizes.size());
    double total = 0;
    for (double w : weight)
        total += w;
    std::vector<double> y(units, 0.0);
    std::vector<std::vector<double>> x(S, std::vector<double>(units, 0.0));
    for (int d = 0; d < a.docs; ++d) {
        if (weight[d] == 0) continue;
        for (int h = 0; h < H; ++h) {
            const std::size_t base = static_cast<std::size_t>(d) * H + h;
            y[h / group] += weight[d] * a.rho0[base];
            for (int s = 0; s < S; ++s)
                x[s][h / group] += weight[d] * a.R[base * S + s];
        }
    }
    const double scale = total * group;
    for (int u = 0; u < units; ++u) {
        y[u] /= scale;
        for (int s = 0; s < S; ++s)
            x[s][u] /= scale;
    }
    return {std::move(y), std::move(x)};
}

// Correlation per N of the document-weighted means.
std::vector<double> correlations_for(const PerDocArrays& a, const std::vector<double>& weight,
                                     int group) {
    const UnitMeans m = unit_means(a, weight, group);
    std::vector<double> out(m.x.size());
    for (std::size_t s = 0; s < m.x.size(); ++s)
        out[s] = pearson(m.x[s], m.y);
    return out;
}

// The layer of each unit (units are layer-major: heads / group of them per layer).
std::vector<int> unit_layers(const PerDocArrays& a, int group) {
    const int per_layer = a.heads / group;
    std::vector<int> layers(static_cast<std::size_t>(a.layers) * per_layer);
    for (std::size_t u = 0; u < layers.size(); ++u)
        layers[u] = static_cast<int>(u) / per_layer;
    return layers;
}

// The head-level columns of every row: intervals simultaneous over the N with a defined
// correlation (the max-|r| permutation test's critical value), and the partial correlation
// given the layer with its interval (y permuted within layers).
void add_head_level(const PerDocArrays& a, int group, std::uint64_t seed,
                    std::vector<CorrelationRow>& rows) {
    const UnitMeans m = unit_means(a, std::vector<double>(a.docs, 1.0), group);
    const std::vector<int> layer_of = unit_layers(a, group);
    std::vector<std::vector<double>> family;  // the x of the N with a defined correlation
    for (std::size_t s = 0; s < rows.size(); ++s) {
        rows[s].partial = partial_correlation(m.x[s], m.y, layer_of);
        if (!std::isnan(rows[s].corr)) family.push_back(m.x[s]);
    }
    const double critical = max_abs_correlation_critical(
        family, m.y, std::vector<int>(layer_of.size(), 0), kMaxCorrelationPermutations, seed);
    const double partial_critical =
        max_abs_correlation_critical(family, m.y, layer_of, kMaxCorrelationPermutations, seed);
    for (CorrelationRow& row : rows) {
        row.head_critical = critical;
        row.partial_critical = partial_critical;
        std::tie(row.head_lo, row.head_hi) = critical_interval(row.corr, critical);
        std::tie(row.partial_lo, row.partial_hi) = critical_interval(row.partial, partial_critical);
    }
}

}  // namespace

HostTensor fetch_tensor(const SafetensorsFile& file, const std::string& name, DType dtype,
                        const std::vector<std::int64_t>& expected_shape) {
    if (!file.contains(name))
        throw InputError(file.path() + ": tensor \"" + name + "\" is missing (expected " +
                         to_string(dtype) + " " + shape_text(expected_shape) + ")");
    HostTensor t = file.get(name);
    if (t.dtype != dtype)
        throw InputError(file.path() + ": tensor \"" + name + "\" has dtype " + to_string(t.dtype) +
                         ", expected " + to_string(dtype));
    bool match = t.shape.size() == expected_shape.size();
    for (std::size_t i = 0; match && i < t.shape.size(); ++i)
        match = expected_shape[i] < 0 || t.shape[i] == expected_shape[i];
    if (!match) {
        std::vector<std::int64_t> shown = expected_shape;
        for (std::size_t i = 0; i < shown.size() && i < t.shape.size(); ++i)
            if (shown[i] < 0) shown[i] = t.shape[i];
        throw InputError(file.path() + ": tensor \"" + name + "\" has shape " +
                         shape_text(t.shape) + ", expected " + shape_text(shown));
    }
    return t;
}

PerDocArrays read_per_doc(const std::string& path) {
    const SafetensorsFile file(path);
    const HostTensor sizes = fetch_tensor(file, "N", DType::I64, {-1});
    const HostTensor rho0 = fetch_tensor(file, "rho0", DType::F32, {-1, -1, -1});
    const std::int64_t S = sizes.shape[0];
    const auto& dlh = rho0.shape;
    const HostTensor lambda = fetch_tensor(file, "lambda", DType::F32, dlh);
    const HostTensor P = fetch_tensor(file, "P", DType::F32, {dlh[0], dlh[1], dlh[2], S});
    const HostTensor R = fetch_tensor(file, "R", DType::F32, {dlh[0], dlh[1], dlh[2], S});
    PerDocArrays a;
    a.docs = static_cast<int>(dlh[0]);
    a.layers = static_cast<int>(dlh[1]);
    a.heads = static_cast<int>(dlh[2]);
    a.sizes.resize(static_cast<std::size_t>(S));
    for (std::int64_t s = 0; s < S; ++s) {
        std::int64_t value = 0;
        std::memcpy(&value, static_cast<const char*>(sizes.data) + s * 8, 8);
        if (value < 1 || value > std::numeric_limits<int>::max())
            throw InputError(path + ": tensor \"N\" holds " + std::to_string(value) +
                             ", expected positive sizes");
        a.sizes[s] = static_cast<int>(value);
    }
    a.P = floats(P);
    a.R = floats(R);
    a.rho0 = floats(rho0);
    a.lambda = floats(lambda);
    const HostTensor cos =
        fetch_tensor(file, "cos_by_lag", DType::F32, {dlh[0], dlh[1], dlh[2], -1});
    const HostTensor alpha = fetch_tensor(file, "alpha", DType::F32, {dlh[0], dlh[1], dlh[2], -1});
    a.max_lag = static_cast<int>(cos.shape[3]);
    a.context = static_cast<int>(alpha.shape[3]);
    a.cos_by_lag = floats(cos);
    a.alpha = floats(alpha);
    a.C = floats(fetch_tensor(file, "C", DType::F32, dlh));
    a.m_sink = floats(fetch_tensor(file, "m_sink", DType::F32, dlh));
    a.m_last = floats(fetch_tensor(file, "m_last", DType::F32, dlh));
    a.m_rest = floats(fetch_tensor(file, "m_rest", DType::F32, dlh));
    const std::vector<std::int64_t> dlhs = {dlh[0], dlh[1], dlh[2], S};
    a.Fmax = floats(fetch_tensor(file, "Fmax", DType::F32, dlhs));
    a.Fmin = floats(fetch_tensor(file, "Fmin", DType::F32, dlhs));
    a.cos_s_v0 = floats(fetch_tensor(file, "cos_s_v0", DType::F32, dlhs));
    a.cos_s_vL = floats(fetch_tensor(file, "cos_s_vL", DType::F32, dlhs));
    for (auto [name, target] : {std::pair{"sink_attention", &a.sink_attention},
                                std::pair{"key_norm_ratio", &a.key_norm_ratio}})
        if (file.contains(name)) *target = floats(fetch_tensor(file, name, DType::F32, dlh));
    return a;
}

double pearson(const std::vector<double>& x, const std::vector<double>& y) {
    if (x.size() != y.size())
        throw_domain_error("attngeo::compare::pearson", "series of different lengths " +
                                                            std::to_string(x.size()) + " and " +
                                                            std::to_string(y.size()));
    const std::size_t n = x.size();
    if (n < 2) return kNaN;
    // Two passes (centre first) so a large common offset does not cancel digits.
    double mx = 0, my = 0;
    for (std::size_t i = 0; i < n; ++i)
        mx += x[i], my += y[i];
    mx /= static_cast<double>(n);
    my /= static_cast<double>(n);
    double sxx = 0, syy = 0, sxy = 0;
    for (std::size_t i = 0; i < n; ++i) {
        const double dx = x[i] - mx, dy = y[i] - my;
        sxx += dx * dx;
        syy += dy * dy;
        sxy += dx * dy;
    }
    if (!(sxx > 0) || !(syy > 0)) return kNaN;
    // Clamp: rounding can push a perfect correlation a few ulps past ±1.
    return std::clamp(sxy / std::sqrt(sxx * syy), -1.0, 1.0);
}

HeadLevelFamily head_level_family(const std::vector<CorrelationRow>& rows) {
    HeadLevelFamily family;
    for (const CorrelationRow& row : rows)
        family.family += !std::isnan(row.corr);
    family.permutations = kMaxCorrelationPermutations;
    if (!rows.empty()) {
        family.critical = rows.front().head_critical;
        family.partial_critical = rows.front().partial_critical;
    }
    return family;
}

double partial_correlation(const std::vector<double>& x, const std::vector<double>& y,
                           const std::vector<int>& group_of) {
    if (x.size() != y.size() || x.size() != group_of.size())
        throw_domain_error("attngeo::compare::partial_correlation",
                           "series of lengths " + std::to_string(x.size()) + ", " +
                               std::to_string(y.size()) + " and " +
                               std::to_string(group_of.size()));
    std::map<int, std::array<double, 3>> sums;  // group → (Σx, Σy, count)
    for (std::size_t i = 0; i < x.size(); ++i) {
        auto& g = sums[group_of[i]];
        g[0] += x[i], g[1] += y[i], g[2] += 1;
    }
    std::vector<double> rx(x.size()), ry(y.size());
    for (std::size_t i = 0; i < x.size(); ++i) {
        const auto& g = sums[group_of[i]];
        rx[i] = x[i] - g[0] / g[2];
        ry[i] = y[i] - g[1] / g[2];
    }
    return pearson(rx, ry);
}

std::vector<CorrelationRow> recall_rho0_correlation(const PerDocArrays& arrays, int replicates,
                                                    std::uint64_t seed, int threads, int group) {
    const char* fn = "attngeo::compare::recall_rho0_correlation";
    if (replicates < 0)
        throw_domain_error(fn, "replicates = " + std::to_string(replicates) + " < 0");
    if (group < 1 || arrays.heads % group != 0)
        throw_domain_error(fn, "group = " + std::to_string(group) +
                                   " does not divide heads = " + std::to_string(arrays.heads));
    if (arrays.docs < kBootstrapMinimumDocuments) replicates = 0;
    if (arrays.docs < 1) throw_domain_error(fn, "no documents");
    const std::size_t H = static_cast<std::size_t>(arrays.layers) * arrays.heads;
    const std::size_t S = arrays.sizes.size();
    if (arrays.R.size() != arrays.docs * H * S || arrays.rho0.size() != arrays.docs * H)
        throw_domain_error(fn, "array sizes do not match [docs, layers, heads, S]");

    const std::vector<double> ones(arrays.docs, 1.0);
    const std::vector<double> point = correlations_for(arrays, ones, group);
    // Replicate r draws from its own stream, SplitMix64(mix(key + r)) with key from the seed, so
    // replicates can run in parallel and the result does not depend on the thread count.
    std::vector<std::vector<double>> by_replicate(replicates);  // [replicates][S]
#pragma omp parallel for num_threads(threads > 0 ? threads : omp_get_max_threads()) \
    schedule(dynamic, 8)
    for (int r = 0; r < replicates; ++r)
        by_replicate[r] = correlations_for(arrays, resample_counts(seed, r, arrays.docs), group);
    std::vector<std::vector<double>> draws(S);  // [S][defined replicates]
    std::vector<int> undefined(S, 0);
    for (int r = 0; r < replicates; ++r)
        for (std::size_t s = 0; s < S; ++s) {
            if (std::isnan(by_replicate[r][s]))
                ++undefined[s];
            else
                draws[s].push_back(by_replicate[r][s]);
        }
    std::vector<CorrelationRow> rows(S);
    for (std::size_t s = 0; s < S; ++s) {
        CorrelationRow& row = rows[s];
        row.N = arrays.sizes[s];
        row.heads = static_cast<int>(H) / group;
        row.corr = point[s];
        row.replicates = replicates;
        // A replicate whose correlation is undefined (a resample with zero variance) makes the
        // interval undefined too, rather than silently narrowing it.
        if (replicates == 0 || undefined[s] > 0) {
            row.ci_lo = row.ci_hi = kNaN;
        } else {
            row.ci_lo = percentile_type7(draws[s], 0.025);
            row.ci_hi = percentile_type7(draws[s], 0.975);
        }
    }
    add_head_level(arrays, group, seed, rows);
    return rows;
}

std::string bootstrap_note(int documents) {
    if (documents >= kBootstrapMinimumDocuments) return "";
    return "the bootstrap needs >= " + std::to_string(kBootstrapMinimumDocuments) +
           " documents (this run has " + std::to_string(documents) +
           "): corr_rho0.csv has no interval (ci_lo, ci_hi empty)";
}

void write_correlation_csv(const std::vector<CorrelationRow>& rows, const std::string& path) {
    auto field = [](double x) { return std::isfinite(x) ? format_double(x) : std::string(); };
    std::ostringstream out;
    out << schema::csv_header(schema::page::compare, schema::file::corr_rho0) << '\n';
    for (const auto& r : rows)
        out << r.N << ',' << r.heads << ',' << field(r.corr) << ',' << field(r.ci_lo) << ','
            << field(r.ci_hi) << ',' << r.replicates << ',' << field(r.head_lo) << ','
            << field(r.head_hi) << ',' << field(r.partial) << ',' << field(r.partial_lo) << ','
            << field(r.partial_hi) << '\n';
    write_file_atomic(path, out.str());
}

}  // namespace attngeo::compare
