// The attention-sink files of an extract folder from the per-window arrays; see sink_tables.hpp.
#include "empirical/extract/sink_tables.hpp"

#include <cmath>
#include <sstream>
#include <stdexcept>

#include "common/format.hpp"
#include "common/run_columns.hpp"
#include "common/run_schema.hpp"
#include "empirical/extract/extract_state.hpp"
#include "empirical/extract/sink_measures.hpp"

namespace attngeo::empirical {
namespace {

constexpr int kMassive = PerDocLayout::kMassiveFields, kKept = PerDocLayout::kSecondarySinks,
              kSecondary = PerDocLayout::kSecondaryFields;

// An unmeasured value (NaN) is an empty field, as compare reads "missing".
std::string field(double value) {
    return std::isfinite(value) ? format_double(value) : std::string();
}

// Mean over the windows of [D, L, H] entry (l, h), finite values only, and how many.
struct WindowMean {
    double mean = std::nan("");
    std::int64_t count = 0;
};
WindowMean window_mean(const std::vector<float>& values, const SinkArrays& a, std::int64_t at) {
    double sum = 0;
    WindowMean m;
    for (std::int64_t w = 0; w < a.windows; ++w) {
        const float x = values[static_cast<std::size_t>(w * a.layers * a.heads + at)];
        if (!std::isfinite(x)) continue;
        sum += x;
        ++m.count;
    }
    if (m.count > 0) m.mean = sum / static_cast<double>(m.count);
    return m;
}

// The share of measured windows whose α(0) exceeds ε (Gu et al.'s indicator, per window).
double sink_share(const SinkArrays& a, std::int64_t at) {
    std::int64_t measured = 0, above = 0;
    for (std::int64_t w = 0; w < a.windows; ++w) {
        const float x = a.sink_attention[static_cast<std::size_t>(w * a.layers * a.heads + at)];
        if (std::isnan(x)) continue;
        ++measured;
        above += x > kSinkThreshold ? 1 : 0;
    }
    return measured > 0 ? static_cast<double>(above) / static_cast<double>(measured) : std::nan("");
}

std::string head_table(const SinkArrays& a, int group, std::vector<double>& shares) {
    std::ostringstream out;
    out << schema::csv_header(schema::page::extract, schema::file::sink_heads) << '\n';
    for (std::int64_t l = 0; l < a.layers; ++l)
        for (std::int64_t h = 0; h < a.heads; ++h) {
            const std::int64_t at = l * a.heads + h;
            const WindowMean alpha0 = window_mean(a.sink_attention, a, at);
            shares.push_back(sink_share(a, at));
            out << l << ',' << h << ',' << h / group << ',' << alpha0.count << ','
                << field(alpha0.mean) << ',' << field(shares.back()) << ','
                << field(window_mean(a.key_norm_ratio, a, at).mean) << ','
                << field(window_mean(a.cos_query_sink, a, at).mean) << ','
                << field(window_mean(a.cos_query_rest, a, at).mean) << '\n';
        }
    return out.str();
}

// One layer's row: the sink rate (the mean of its heads' shares = the mean over windows of the
// per-window rate) and the window with the largest activation, first on ties.
std::string layer_table(const SinkArrays& a, const std::vector<double>& shares) {
    std::ostringstream out;
    out << schema::csv_header(schema::page::extract, schema::file::sink_layers) << '\n';
    for (std::int64_t l = 0; l < a.layers; ++l) {
        double rate = 0;
        for (std::int64_t h = 0; h < a.heads; ++h)
            rate += shares[static_cast<std::size_t>(l * a.heads + h)];
        rate /= static_cast<double>(a.heads);
        std::int64_t best = -1, massive_windows = 0, measured = 0;
        for (std::int64_t w = 0; w < a.windows; ++w) {
            const float* m = &a.massive[static_cast<std::size_t>((w * a.layers + l) * kMassive)];
            if (std::isnan(m[0])) continue;
            ++measured;
            massive_windows += m[0] > 100 && m[0] >= 1000.0 * m[1] ? 1 : 0;  // Sun et al.'s rule
            if (best < 0 ||
                m[0] > a.massive[static_cast<std::size_t>((best * a.layers + l) * kMassive)])
                best = w;
        }
        out << l << ',' << measured << ',' << field(rate) << ',';
        if (best < 0) {
            out << ",,,,,,,\n";
            continue;
        }
        const float* m = &a.massive[static_cast<std::size_t>((best * a.layers + l) * kMassive)];
        const double ratio = m[1] > 0 ? m[0] / static_cast<double>(m[1]) : std::nan("");
        out << format_double(m[0]) << ',' << format_double(m[1]) << ',' << field(ratio) << ','
            << best << ',' << static_cast<std::int64_t>(m[2]) << ','
            << static_cast<std::int64_t>(m[3]) << ',' << static_cast<std::int64_t>(m[4]) << ','
            << format_double(static_cast<double>(massive_windows) / static_cast<double>(measured))
            << '\n';
    }
    return out.str();
}

std::string secondary_table(const SinkArrays& a) {
    std::ostringstream out;
    out << schema::csv_header(schema::page::extract, schema::file::secondary_sinks) << '\n';
    for (std::int64_t w = 0; w < a.windows; ++w)
        for (int i = 0; i < kKept; ++i) {
            const float* s = &a.secondary[static_cast<std::size_t>((w * kKept + i) * kSecondary)];
            if (std::isnan(s[0])) break;
            out << w << ',' << static_cast<std::int64_t>(s[0]) << ','
                << static_cast<std::int64_t>(s[1]) << ',' << static_cast<std::int64_t>(s[2]) << ','
                << format_double(s[3]) << '\n';
        }
    return out.str();
}

}  // namespace

SinkTables sink_tables(const SinkArrays& a, int group) {
    const std::size_t per_head = static_cast<std::size_t>(a.windows * a.layers * a.heads);
    if (a.layers < 1 || a.heads < 1 || group < 1 || a.sink_attention.size() != per_head ||
        a.key_norm_ratio.size() != per_head || a.cos_query_sink.size() != per_head ||
        a.cos_query_rest.size() != per_head ||
        a.massive.size() != static_cast<std::size_t>(a.windows * a.layers * kMassive) ||
        a.secondary.size() != static_cast<std::size_t>(a.windows * kKept * kSecondary))
        throw std::invalid_argument("sink_tables: arrays of another shape than [D, L, H]");
    std::vector<double> shares;
    SinkTables tables;
    tables.heads = head_table(a, group, shares);
    tables.layers = layer_table(a, shares);
    tables.secondary = secondary_table(a);
    return tables;
}

}  // namespace attngeo::empirical
