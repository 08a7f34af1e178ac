// The sink measures against R(r_min, N), λ and ρ0 across heads; see sink_relations.hpp.
#include "compare/sink_relations.hpp"

#include <cmath>
#include <limits>
#include <sstream>
#include <tuple>

#include "common/atomic_file.hpp"
#include "common/format.hpp"
#include "common/run_columns.hpp"
#include "common/run_schema.hpp"
#include "compare/max_correlation_test.hpp"
#include "theory/head_regime.hpp"

namespace attngeo::compare {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Per unit (head / group): the mean over units' heads of `per_head` [H] (NaN entries skipped;
// NaN when none is defined).
std::vector<double> unit_values(const std::vector<double>& per_head, int group) {
    std::vector<double> units(per_head.size() / group, kNaN);
    for (std::size_t u = 0; u < units.size(); ++u) {
        double sum = 0;
        int count = 0;
        for (int g = 0; g < group; ++g) {
            const double x = per_head[u * group + g];
            if (std::isnan(x)) continue;
            sum += x;
            ++count;
        }
        if (count > 0) units[u] = sum / count;
    }
    return units;
}

// Each head's mean over documents of f(value) for the documents where `values` is measured.
template <class F>
std::vector<double> head_means(const std::vector<float>& values, const PerDocArrays& a, F f) {
    const std::size_t H = static_cast<std::size_t>(a.layers) * a.heads;
    std::vector<double> out(H, kNaN);
    for (std::size_t h = 0; h < H; ++h) {
        double sum = 0;
        int count = 0;
        for (int d = 0; d < a.docs; ++d) {
            const float x = values[d * H + h];
            if (std::isnan(x)) continue;
            sum += f(x);
            ++count;
        }
        if (count > 0) out[h] = sum / count;
    }
    return out;
}

// The units where x and every y are defined.
struct Sample {
    std::vector<double> x;
    std::vector<std::vector<double>> ys;  // [series][units]
    std::vector<int> layer;
};
Sample defined_units(const std::vector<double>& x, const std::vector<std::vector<double>>& ys,
                     int units_per_layer) {
    Sample s;
    s.ys.resize(ys.size());
    for (std::size_t u = 0; u < x.size(); ++u) {
        bool defined = !std::isnan(x[u]);
        for (const auto& y : ys)
            defined = defined && !std::isnan(y[u]);
        if (!defined) continue;
        s.x.push_back(x[u]);
        for (std::size_t k = 0; k < ys.size(); ++k)
            s.ys[k].push_back(ys[k][u]);
        s.layer.push_back(static_cast<int>(u) / units_per_layer);
    }
    return s;
}

// One family of rows sharing x (the sink measure) whose series `ys` are tested together.
void add_family(const std::string& measure, const std::string& quantity,
                const std::vector<int>& sizes, const std::vector<double>& x,
                const std::vector<std::vector<double>>& ys, int units_per_layer, std::uint64_t seed,
                std::vector<SinkRelationRow>& rows) {
    const Sample s = defined_units(x, ys, units_per_layer);
    // max_abs_correlation_critical takes the series as x and the shared variable as y: here the
    // sink measure is shared, the paper's quantities vary over N.
    const double critical = max_abs_correlation_critical(s.ys, s.x, std::vector<int>(s.x.size(), 0),
                                                         kMaxCorrelationPermutations, seed);
    const double partial_critical =
        max_abs_correlation_critical(s.ys, s.x, s.layer, kMaxCorrelationPermutations, seed);
    for (std::size_t k = 0; k < s.ys.size(); ++k) {
        SinkRelationRow row;
        row.measure = measure;
        row.quantity = quantity;
        row.N = sizes.empty() ? 0 : sizes[k];
        row.heads = static_cast<int>(s.x.size());
        row.corr = pearson(s.ys[k], s.x);
        row.partial = partial_correlation(s.ys[k], s.x, s.layer);
        std::tie(row.head_lo, row.head_hi) = critical_interval(row.corr, critical);
        std::tie(row.partial_lo, row.partial_hi) = critical_interval(row.partial, partial_critical);
        rows.push_back(row);
    }
}

}  // namespace

std::vector<SinkRelationRow> sink_relations(const PerDocArrays& a, int group, std::uint64_t seed) {
    const std::size_t H = static_cast<std::size_t>(a.layers) * a.heads, S = a.sizes.size();
    if (a.sink_attention.size() != a.docs * H || a.key_norm_ratio.size() != a.docs * H ||
        group < 1 || a.heads % group != 0)
        return {};
    const std::vector<double> share = head_means(
        a.sink_attention, a, [](double x) { return x > theory::kSinkThreshold ? 1.0 : 0.0; });
    const std::vector<double> ratio = head_means(a.key_norm_ratio, a, [](double x) { return x; });
    const auto lambda = head_means(a.lambda, a, [](double x) { return x; });
    const auto rho0 = head_means(a.rho0, a, [](double x) { return x; });
    std::vector<std::vector<double>> recall(S);
    for (std::size_t s = 0; s < S; ++s) {
        std::vector<double> per_head(H, 0.0);
        for (std::size_t h = 0; h < H; ++h) {
            for (int d = 0; d < a.docs; ++d)
                per_head[h] += a.R[(d * H + h) * S + s];
            per_head[h] /= a.docs;
        }
        recall[s] = unit_values(per_head, group);
    }
    const int per_layer = a.heads / group;
    std::vector<SinkRelationRow> rows;
    for (const auto& [measure, x] : {std::pair{"sink_rate", unit_values(share, group)},
                                     std::pair{"key_norm_ratio", unit_values(ratio, group)}}) {
        bool measured = false;
        for (double v : x)
            measured = measured || !std::isnan(v);
        if (!measured) return {};
        add_family(measure, "recall", a.sizes, x, recall, per_layer, seed, rows);
        add_family(measure, "lambda", {}, x, {unit_values(lambda, group)}, per_layer, seed, rows);
        add_family(measure, "rho0", {}, x, {unit_values(rho0, group)}, per_layer, seed, rows);
    }
    return rows;
}

void write_sink_relations_csv(const std::vector<SinkRelationRow>& rows, const std::string& path) {
    auto field = [](double x) { return std::isfinite(x) ? format_double(x) : std::string(); };
    std::ostringstream out;
    out << schema::csv_header(schema::page::compare, schema::file::sink_relations) << '\n';
    for (const auto& r : rows)
        out << r.measure << ',' << r.quantity << ',' << (r.N > 0 ? std::to_string(r.N) : "") << ','
            << r.heads << ',' << field(r.corr) << ',' << field(r.head_lo) << ',' << field(r.head_hi)
            << ',' << field(r.partial) << ',' << field(r.partial_lo) << ',' << field(r.partial_hi)
            << '\n';
    write_file_atomic(path, out.str());
}

}  // namespace attngeo::compare
