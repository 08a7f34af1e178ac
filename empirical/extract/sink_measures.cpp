// The literature's sink measurements per window; see sink_measures.hpp.
#include "empirical/extract/sink_measures.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>

#include "common/order_statistics.hpp"

namespace attngeo::empirical {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

void require(bool condition, const char* function, const std::string& what) {
    if (!condition) throw std::invalid_argument(std::string(function) + ": " + what);
}

double norm_of(const float* x, int d) {
    double sum = 0;
    for (int i = 0; i < d; ++i)
        sum += static_cast<double>(x[i]) * x[i];
    return std::sqrt(sum);
}

// cos(x, y) in double; 0 when either is the zero vector.
double cosine(const float* x, double x_norm, const float* y, double y_norm, int d) {
    if (x_norm == 0 || y_norm == 0) return 0;
    double dot = 0;
    for (int i = 0; i < d; ++i)
        dot += static_cast<double>(x[i]) * y[i];
    return dot / (x_norm * y_norm);
}

void check_positions(const int* positions, int rows, int keys, const char* function) {
    for (int r = 0; r < rows; ++r) {
        require(positions[r] >= 0 && positions[r] < keys, function, "a position outside 0..keys-1");
        require(r == 0 || positions[r] > positions[r - 1], function, "positions not ascending");
    }
}

// Patterns of non-negative floats, which order as unsigned integers exactly as the floats do,
// with a histogram of their top 16 bits: rank k is found in one bucket, and only that bucket is
// selected. O(n) per rank, the histogram built once.
class BitsSelection {
  public:
    explicit BitsSelection(const std::vector<std::uint32_t>& bits)
        : bits_(bits), histogram_(std::size_t{1} << 16, 0) {
        for (std::uint32_t b : bits)
            ++histogram_[b >> 16];
    }
    // The k-th smallest (0-based) pattern.
    std::uint32_t kth_smallest(std::size_t k) const {
        std::size_t below = 0, bucket = 0;
        while (below + histogram_[bucket] <= k)
            below += histogram_[bucket++];
        std::vector<std::uint32_t> members;
        members.reserve(histogram_[bucket]);
        for (std::uint32_t b : bits_)
            if ((b >> 16) == bucket) members.push_back(b);
        std::nth_element(members.begin(), members.begin() + (k - below), members.end());
        return members[k - below];
    }

  private:
    const std::vector<std::uint32_t>& bits_;
    std::vector<std::size_t> histogram_;
};

double float_of_bits(std::uint32_t bits) {
    float x;
    std::memcpy(&x, &bits, sizeof x);
    return x;
}

// median() of the floats whose magnitudes' patterns are `bits` (non-empty), to the bit: the
// middle value, or half the sum of the two middle values in double.
double median_of_magnitude_bits(const std::vector<std::uint32_t>& bits) {
    const BitsSelection selection(bits);
    const std::size_t mid = bits.size() / 2;
    const double upper = float_of_bits(selection.kth_smallest(mid));
    if (bits.size() % 2 == 1) return upper;
    return 0.5 * (upper + float_of_bits(selection.kth_smallest(mid - 1)));
}

}  // namespace

std::vector<int> rows_seeing_each_key(const int* positions, int rows, int keys) {
    require(rows >= 0 && keys >= 1, "rows_seeing_each_key", "rows >= 0 and keys >= 1");
    check_positions(positions, rows, keys, "rows_seeing_each_key");
    std::vector<int> seeing(static_cast<std::size_t>(keys), 0);
    for (int r = 0; r < rows; ++r)
        for (int k = 0; k <= positions[r]; ++k)
            ++seeing[static_cast<std::size_t>(k)];
    return seeing;
}

std::vector<double> mean_attention_by_key(const AttentionRows& head) {
    require(head.rows >= 0 && head.keys >= 1, "mean_attention_by_key", "rows >= 0, keys >= 1");
    check_positions(head.positions, head.rows, head.keys, "mean_attention_by_key");
    std::vector<double> sums(static_cast<std::size_t>(head.keys), 0.0);
    for (int r = 0; r < head.rows; ++r) {
        const float* row = head.alpha + static_cast<std::size_t>(r) * head.keys;
        for (int k = 0; k <= head.positions[r]; ++k)
            sums[static_cast<std::size_t>(k)] += row[k];
    }
    const std::vector<int> seeing = rows_seeing_each_key(head.positions, head.rows, head.keys);
    for (std::size_t k = 0; k < sums.size(); ++k)
        sums[k] = seeing[k] > 0 ? sums[k] / seeing[k] : kNaN;
    return sums;
}

double sink_rate(const std::vector<double>& head_means, double epsilon) {
    if (head_means.empty()) return kNaN;
    std::size_t above = 0;
    for (double mean : head_means)
        above += mean > epsilon ? 1 : 0;  // NaN compares false
    return static_cast<double>(above) / static_cast<double>(head_means.size());
}

std::vector<SecondarySink> secondary_sinks(const std::vector<std::vector<double>>& by_head,
                                           const std::vector<int>& rows_seeing, int min_rows,
                                           int min_heads, double epsilon) {
    require(min_heads >= 1, "secondary_sinks", "min_heads >= 1");
    for (const auto& head : by_head)
        require(head.size() == rows_seeing.size(), "secondary_sinks",
                "every head's means as long as rows_seeing");
    std::vector<SecondarySink> sinks;
    for (std::size_t k = 1; k < rows_seeing.size(); ++k) {
        if (rows_seeing[k] < min_rows) continue;
        SecondarySink sink{static_cast<int>(k), 0, 0.0};
        for (const auto& head : by_head) {
            if (!(head[k] > epsilon)) continue;
            ++sink.heads;
            sink.largest_mean = std::max(sink.largest_mean, head[k]);
        }
        if (sink.heads >= min_heads) sinks.push_back(sink);
    }
    return sinks;
}

KeyGeometry key_geometry(const float* queries, const int* positions, int rows, const float* keys,
                         int tokens, int d_head) {
    require(rows >= 0 && tokens >= 1 && d_head >= 1, "key_geometry",
            "rows >= 0, tokens >= 1, d_head >= 1");
    check_positions(positions, rows, tokens, "key_geometry");
    std::vector<double> key_norms(static_cast<std::size_t>(tokens));
    for (int j = 0; j < tokens; ++j)
        key_norms[static_cast<std::size_t>(j)] =
            norm_of(keys + static_cast<std::size_t>(j) * d_head, d_head);
    KeyGeometry g;
    const double rest_median = median(std::vector<double>(key_norms.begin() + 1, key_norms.end()));
    g.key_norm_ratio = rest_median > 0 ? key_norms[0] / rest_median : kNaN;
    double sink_sum = 0, rest_sum = 0;
    for (int r = 0; r < rows; ++r) {
        const int t = positions[r];
        if (t < 1) continue;
        const float* q = queries + static_cast<std::size_t>(r) * d_head;
        const double q_norm = norm_of(q, d_head);
        sink_sum += cosine(q, q_norm, keys, key_norms[0], d_head);
        double row_rest = 0;
        for (int j = 1; j <= t; ++j)
            row_rest += cosine(q, q_norm, keys + static_cast<std::size_t>(j) * d_head,
                               key_norms[static_cast<std::size_t>(j)], d_head);
        rest_sum += row_rest / t;
        ++g.rows;
    }
    g.cos_query_sink = g.rows > 0 ? sink_sum / g.rows : kNaN;
    g.cos_query_rest = g.rows > 0 ? rest_sum / g.rows : kNaN;
    return g;
}

MassiveActivation massive_activation(const float* hidden, int tokens, int dims) {
    require(tokens >= 1 && dims >= 1, "massive_activation", "tokens >= 1 and dims >= 1");
    const std::size_t count = static_cast<std::size_t>(tokens) * dims;
    std::vector<std::uint32_t> magnitude_bits(count);
    MassiveActivation m;
    for (std::size_t e = 0; e < count; ++e) {
        const double magnitude = std::fabs(static_cast<double>(hidden[e]));
        std::memcpy(&magnitude_bits[e], &hidden[e], sizeof(float));
        magnitude_bits[e] &= 0x7FFFFFFFu;  // |x| of the float, exactly
        if (magnitude > m.largest) {
            m.largest = magnitude;
            m.token = static_cast<int>(e / dims);
            m.dim = static_cast<int>(e % dims);
        }
    }
    m.median = median_of_magnitude_bits(magnitude_bits);
    m.ratio = m.median > 0 ? m.largest / m.median
                           : (m.largest > 0 ? std::numeric_limits<double>::infinity() : kNaN);
    // Sun et al.'s rule (their §2): above 100 in magnitude and about 1000 times the median.
    m.massive = m.largest > 100 && m.largest >= 1000 * m.median;
    return m;
}

KeyGeometry key_geometry_all_rows(const float* queries, const float* keys, int tokens, int d_head) {
    require(tokens >= 1 && d_head >= 1, "key_geometry_all_rows", "tokens >= 1, d_head >= 1");
    const std::size_t d = static_cast<std::size_t>(d_head);
    std::vector<double> key_norms(static_cast<std::size_t>(tokens));
    for (int j = 0; j < tokens; ++j)
        key_norms[static_cast<std::size_t>(j)] = norm_of(keys + j * d, d_head);
    KeyGeometry g;
    const double rest_median = median(std::vector<double>(key_norms.begin() + 1, key_norms.end()));
    g.key_norm_ratio = rest_median > 0 ? key_norms[0] / rest_median : kNaN;
    // A zero vector's unit vector is taken as zero, so its cosines are 0 as in `cosine`.
    auto unit = [&](const float* x, double norm, std::vector<double>& out) {
        for (std::size_t i = 0; i < d; ++i)
            out[i] = norm > 0 ? x[i] / norm : 0.0;
    };
    std::vector<double> sink_unit(d), key_unit(d), prefix(d, 0.0), query_unit(d);
    unit(keys, key_norms[0], sink_unit);
    double sink_sum = 0, rest_sum = 0;
    for (int t = 1; t < tokens; ++t) {
        unit(keys + t * d, key_norms[static_cast<std::size_t>(t)], key_unit);
        for (std::size_t i = 0; i < d; ++i)
            prefix[i] += key_unit[i];
        const float* q = queries + t * d;
        unit(q, norm_of(q, d_head), query_unit);
        double with_sink = 0, with_rest = 0;
        for (std::size_t i = 0; i < d; ++i) {
            with_sink += query_unit[i] * sink_unit[i];
            with_rest += query_unit[i] * prefix[i];
        }
        sink_sum += with_sink;
        rest_sum += with_rest / t;
        ++g.rows;
    }
    g.cos_query_sink = g.rows > 0 ? sink_sum / g.rows : kNaN;
    g.cos_query_rest = g.rows > 0 ? rest_sum / g.rows : kNaN;
    return g;
}

LayerSinks layer_sinks(const SinkInputs& in) {
    require(in.key_attention && in.queries && in.keys && in.hidden, "layer_sinks",
            "every input present");
    require(in.heads >= 1 && in.kv_heads >= 1 && in.heads % in.kv_heads == 0 && in.tokens >= 1 &&
                in.d_head >= 1 && in.hidden_size >= 1,
            "layer_sinks", "a consistent shape");
    const std::size_t T = static_cast<std::size_t>(in.tokens),
                      d = static_cast<std::size_t>(in.d_head);
    const int group = in.heads / in.kv_heads;
    LayerSinks layer;
    layer.mean_by_key.resize(static_cast<std::size_t>(in.heads) * T);
    for (int h = 0; h < in.heads; ++h)
        for (std::size_t k = 0; k < T; ++k)  // every row t ≥ k measured: T − k of them
            layer.mean_by_key[h * T + k] = in.key_attention[h * T + k] / static_cast<double>(T - k);
    for (int h = 0; h < in.heads; ++h)
        layer.geometry.push_back(key_geometry_all_rows(
            in.queries + h * T * d, in.keys + (h / group) * T * d, in.tokens, in.d_head));
    layer.massive = massive_activation(in.hidden, in.tokens, in.hidden_size);
    return layer;
}

int secondary_min_heads(int model_heads) {
    return std::max(2, (model_heads + 19) / 20);
}

std::vector<SecondarySink> window_secondary_sinks(const std::vector<LayerSinks>& layers, int tokens,
                                                  std::size_t keep) {
    require(tokens >= 1, "window_secondary_sinks", "tokens >= 1");
    const std::size_t T = static_cast<std::size_t>(tokens);
    std::vector<std::vector<double>> by_head;
    for (const LayerSinks& layer : layers)
        for (std::size_t h = 0; h < layer.geometry.size(); ++h)
            by_head.emplace_back(layer.mean_by_key.begin() + h * T,
                                 layer.mean_by_key.begin() + (h + 1) * T);
    std::vector<int> rows_seeing(T);
    for (std::size_t k = 0; k < T; ++k)
        rows_seeing[k] = static_cast<int>(T - k);
    std::vector<SecondarySink> sinks =
        secondary_sinks(by_head, rows_seeing, (tokens + 1) / 2,
                        secondary_min_heads(static_cast<int>(by_head.size())));
    std::stable_sort(
        sinks.begin(), sinks.end(),
        [](const SecondarySink& a, const SecondarySink& b) { return a.heads > b.heads; });
    if (sinks.size() > keep) sinks.resize(keep);
    return sinks;
}

}  // namespace attngeo::empirical
