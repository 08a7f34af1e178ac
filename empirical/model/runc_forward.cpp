// The LLaMA decoder (RMSNorm, rotary attention, SwiGLU) in scalar float32 with one fixed
// rounding order per operation: every sum runs in index order in a float accumulator, the
// library calls are the single-precision ones (powf, cosf, sinf, expf, sqrtf), and the build's
// -ffp-contract=off keeps a·b + c two roundings. That order is llama2.c run.c's, which is what
// makes the results equal its dumps bit for bit; see runc_forward.hpp.
#include "empirical/model/runc_forward.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "common/errors.hpp"
#include "empirical/model/architecture.hpp"

namespace attngeo::empirical {
namespace {

// RMSNorm (Zhang & Sennrich 2019): out_j = gain_j · (x_j / √(mean(x²) + ε)), ε = 1e-5 as in
// llama2.c. The mean is a float sum divided by n, and the reciprocal root multiplies x_j before
// the gain. `out` may be `x`: the scale is complete before anything is written.
void rms_normalise(float* out, const float* x, const float* gain, int n) {
    float mean_square = 0.0f;
    for (int j = 0; j < n; ++j)
        mean_square += x[j] * x[j];
    mean_square /= static_cast<float>(n);
    const float inverse_rms = 1.0f / std::sqrt(mean_square + 1e-5f);
    for (int j = 0; j < n; ++j)
        out[j] = gain[j] * (inverse_rms * x[j]);
}

// out[r] = Σ_c matrix[r, c] · x[c] for r < rows: matrix [rows, cols] row-major, one float
// accumulator per row, columns in order.
void project(float* out, const float* matrix, const float* x, int rows, int cols) {
    for (int r = 0; r < rows; ++r) {
        const float* row = matrix + static_cast<std::size_t>(r) * cols;
        float dot = 0.0f;
        for (int c = 0; c < cols; ++c)
            dot += row[c] * x[c];
        out[r] = dot;
    }
}

// The rotary angles of one position (Su et al. 2021, RoFormer): pair i of every head turns by
// position · θ_i with θ_i = 1 / 10000^(2i / head_size), each factor rounded to float.
void rotary_angles(int position, int head_size, std::vector<float>& cosines,
                   std::vector<float>& sines) {
    for (int i = 0; i < head_size / 2; ++i) {
        const float exponent = static_cast<float>(2 * i) / static_cast<float>(head_size);
        const float theta = 1.0f / std::pow(10000.0f, exponent);
        const float angle = static_cast<float>(position) * theta;
        cosines[i] = std::cos(angle);
        sines[i] = std::sin(angle);
    }
}

// Rotates every head of `heads` [count, head_size] in place. The rows are in rotate_half order,
// so pair i of a head is (i, i + head_size/2) — the file's interleaved pair (2i, 2i + 1).
void rotate_pairs(float* heads, int count, int head_size, const std::vector<float>& cosines,
                  const std::vector<float>& sines) {
    const int half = head_size / 2;
    for (int h = 0; h < count; ++h) {
        float* head = heads + static_cast<std::size_t>(h) * head_size;
        for (int i = 0; i < half; ++i) {
            const float a = head[i], b = head[i + half];
            head[i] = a * cosines[i] - b * sines[i];
            head[i + half] = a * sines[i] + b * cosines[i];
        }
    }
}

// q·k over one head, summed pair by pair (component i, then i + head_size/2): the order of the
// interleaved layout the checkpoint was trained and dumped in.
float dot_by_pairs(const float* q, const float* k, int head_size) {
    const int half = head_size / 2;
    float dot = 0.0f;
    for (int i = 0; i < half; ++i) {
        dot += q[i] * k[i];
        dot += q[i + half] * k[i + half];
    }
    return dot;
}

// weights ← softmax(weights) with the largest subtracted before exp; the sum runs in order and
// each weight is divided by it.
void softmax_in_place(float* weights, int n) {
    const float largest = *std::max_element(weights, weights + n);
    float total = 0.0f;
    for (int t = 0; t < n; ++t) {
        weights[t] = std::exp(weights[t] - largest);
        total += weights[t];
    }
    for (int t = 0; t < n; ++t)
        weights[t] /= total;
}

// One query head against keys 0..count-1 of its key/value head: weights [count] get α_t =
// softmax_t(q·k_t / √head_size), out [head_size] gets Σ_t α_t v_t, accumulated key by key.
// keys, values: the head's first row in [T, kv_dim] caches whose rows are `stride` apart.
void causal_attention_row(const float* query, const float* keys, const float* values,
                          std::size_t stride, int count, int head_size, float* weights,
                          float* out) {
    const float scale = std::sqrt(static_cast<float>(head_size));
    for (int t = 0; t < count; ++t)
        weights[t] = dot_by_pairs(query, keys + t * stride, head_size) / scale;
    softmax_in_place(weights, count);
    std::fill(out, out + head_size, 0.0f);
    for (int t = 0; t < count; ++t) {
        const float alpha = weights[t];  // a local: `out` could alias `weights` for the compiler
        const float* value = values + t * stride;
        for (int i = 0; i < head_size; ++i)
            out[i] += alpha * value[i];
    }
}

// SwiGLU (Shazeer 2020): gate ← silu(gate) · up, silu(g) = g · (1 / (1 + e^(−g))).
void swiglu(float* gate, const float* up, int n) {
    for (int i = 0; i < n; ++i) {
        const float g = gate[i];
        const float silu = g * (1.0f / (1.0f + std::exp(-g)));
        gate[i] = silu * up[i];
    }
}

void add_into(float* x, const float* delta, int n) {
    for (int i = 0; i < n; ++i)
        x[i] += delta[i];
}

// A corrupt or rescaled checkpoint overflows somewhere inside; naming the first layer where it
// shows (docs/design.md §10) beats a NaN reaching the exact sums. Reads only, one pass per block.
void require_finite(const float* x, int n, const std::string& source, int layer,
                    const char* tensor) {
    for (int i = 0; i < n; ++i)
        if (!std::isfinite(x[i]))
            throw InputError(
                "'" + source + "': non-finite activations in " +
                (layer < 0 ? std::string("the logits") : "layer " + std::to_string(layer)) + " (" +
                tensor + ")");
}

std::size_t product(std::size_t a, std::size_t b, std::size_t c = 1) {
    return a * b * c;
}

}  // namespace

// The activations of one run, and its key/value caches.
struct RunCForward::Workspace {
    int positions = 0;             // T
    int position = 0;              // the position being run
    bool last = false;             // the current position is T − 1
    std::vector<float> residual;   // [dim] the residual stream
    std::vector<float> normed;     // [dim] RMSNorm of the residual: a block's input
    std::vector<float> query;      // [n_heads, head_size]
    std::vector<float> mixed;      // [n_heads, head_size] attention output per head
    std::vector<float> delta;      // [dim] a block's output, added to the residual
    std::vector<float> gate, up;   // [hidden]
    std::vector<float> cosines;    // [head_size / 2] at the current position
    std::vector<float> sines;      // [head_size / 2]
    std::vector<float> keys;       // [layers, T, kv_dim], rotated, rotate_half order
    std::vector<float> values;     // [layers, T, kv_dim]
    std::vector<float> weights;    // [T] one head's attention row
    std::vector<float> attention;  // [layers, n_heads, T] the last position's rows
    std::vector<float> queries;    // [layers, T, n_heads · head_size] every position's, rotated
    std::vector<double> key_attention;  // [layers, n_heads, T] Σ_t α_t[k]
    std::vector<float> hidden;          // [layers, T, dim] the residual after each layer
};

const float* RunCForward::weights_of(const Llama2cCheckpoint& checkpoint, const std::string& name) {
    HostTensor tensor = checkpoint.get(name);
    if (tensor.dtype != DType::F32)
        throw InputError("'" + checkpoint.describe() + "': tensor '" + name + "' is not float32");
    held_.push_back(std::move(tensor));
    return static_cast<const float*>(held_.back().data);
}

RunCForward::RunCForward(const Llama2cCheckpoint& checkpoint)
    : header_(checkpoint.header()), source_(checkpoint.describe()) {
    auto tensor = [&](TensorId id, int layer) {
        return weights_of(checkpoint, llama_hf_name(id, layer));
    };
    embedding_ = tensor(TensorId::embed, 0);
    for (int l = 0; l < header_.n_layers; ++l) {
        layers_.push_back({tensor(TensorId::attn_norm, l), tensor(TensorId::q, l),
                           tensor(TensorId::k, l), tensor(TensorId::v, l), tensor(TensorId::o, l),
                           tensor(TensorId::mlp_norm, l), tensor(TensorId::gate, l),
                           tensor(TensorId::up, l), tensor(TensorId::down, l)});
    }
    final_norm_ = tensor(TensorId::final_norm, 0);
    classifier_ = checkpoint.contains(llama_hf_name(TensorId::lm_head, 0))
                      ? tensor(TensorId::lm_head, 0)
                      : embedding_;
}

void RunCForward::attention_block(int layer, int position, Workspace& w) const {
    const LayerWeights& weights = layers_[static_cast<std::size_t>(layer)];
    const int dim = header_.dim, kv_dim = header_.kv_dim(), head_size = header_.head_dim(),
              heads = header_.n_heads, group = header_.n_heads / header_.n_kv_heads;
    const std::size_t layer_rows = product(layer, w.positions, kv_dim);
    float* key = &w.keys[layer_rows + product(position, kv_dim)];
    float* value = &w.values[layer_rows + product(position, kv_dim)];
    rms_normalise(w.normed.data(), w.residual.data(), weights.attention_norm, dim);
    project(w.query.data(), weights.query, w.normed.data(), heads * head_size, dim);
    project(key, weights.key, w.normed.data(), kv_dim, dim);
    project(value, weights.value, w.normed.data(), kv_dim, dim);
    rotate_pairs(w.query.data(), heads, head_size, w.cosines, w.sines);
    rotate_pairs(key, header_.n_kv_heads, head_size, w.cosines, w.sines);
    std::copy(w.query.begin(), w.query.end(),
              w.queries.begin() + product(layer, w.positions, w.query.size()) +
                  product(position, w.query.size()));
    for (int h = 0; h < heads; ++h) {
        const std::size_t kv_offset = product(h / group, head_size);
        causal_attention_row(&w.query[product(h, head_size)], &w.keys[layer_rows + kv_offset],
                             &w.values[layer_rows + kv_offset], kv_dim, position + 1, head_size,
                             w.weights.data(), &w.mixed[product(h, head_size)]);
        double* sums = &w.key_attention[product(layer * heads + h, w.positions)];
        for (int k = 0; k <= position; ++k)
            sums[k] += w.weights[k];
        if (w.last)
            std::copy(w.weights.begin(), w.weights.begin() + w.positions,
                      w.attention.begin() + product(layer * heads + h, w.positions));
    }
    project(w.delta.data(), weights.output, w.mixed.data(), dim, heads * head_size);
    require_finite(w.delta.data(), dim, source_, layer, "attention output");
    add_into(w.residual.data(), w.delta.data(), dim);
}

void RunCForward::mlp_block(int layer, Workspace& w) const {
    const LayerWeights& weights = layers_[static_cast<std::size_t>(layer)];
    const int dim = header_.dim, hidden = header_.hidden_dim;
    rms_normalise(w.normed.data(), w.residual.data(), weights.mlp_norm, dim);
    project(w.gate.data(), weights.gate, w.normed.data(), hidden, dim);
    project(w.up.data(), weights.up, w.normed.data(), hidden, dim);
    swiglu(w.gate.data(), w.up.data(), hidden);
    project(w.delta.data(), weights.down, w.gate.data(), dim, hidden);
    add_into(w.residual.data(), w.delta.data(), dim);
    require_finite(w.residual.data(), dim, source_, layer, "residual stream after the MLP");
    std::copy(w.residual.begin(), w.residual.end(),
              w.hidden.begin() + product(layer, w.positions, dim) + product(w.position, dim));
}

RunCForward::LastRow RunCForward::run(const std::vector<std::int64_t>& tokens) const {
    const Llama2cHeader& h = header_;
    const int T = static_cast<int>(tokens.size());
    if (T < 1 || T > h.seq_len)
        throw InputError("llama2.c forward: " + std::to_string(T) + " tokens, expected 1.." +
                         std::to_string(h.seq_len));
    Workspace w;
    w.positions = T;
    w.residual.resize(h.dim);
    w.normed.resize(h.dim);
    w.delta.resize(h.dim);
    w.query.resize(product(h.n_heads, h.head_dim()));
    w.mixed.resize(w.query.size());
    w.gate.resize(h.hidden_dim);
    w.up.resize(h.hidden_dim);
    w.cosines.resize(h.head_dim() / 2);
    w.sines.resize(h.head_dim() / 2);
    w.keys.resize(product(h.n_layers, T, h.kv_dim()));
    w.values.resize(w.keys.size());
    w.weights.resize(T);
    w.attention.resize(product(h.n_layers, h.n_heads, T));
    w.queries.resize(product(h.n_layers, T, w.query.size()));
    w.key_attention.assign(product(h.n_layers, h.n_heads, T), 0.0);
    w.hidden.resize(product(h.n_layers, T, h.dim));
    for (int position = 0; position < T; ++position) {
        w.position = position;
        const std::int64_t token = tokens[position];
        if (token < 0 || token >= h.vocab_size)
            throw InputError("llama2.c forward: token id " + std::to_string(token) +
                             " outside 0.." + std::to_string(h.vocab_size - 1));
        const float* row = embedding_ + product(static_cast<std::size_t>(token), h.dim);
        std::copy(row, row + h.dim, w.residual.begin());
        w.last = position == T - 1;
        rotary_angles(position, h.head_dim(), w.cosines, w.sines);
        for (int layer = 0; layer < h.n_layers; ++layer) {
            attention_block(layer, position, w);
            mlp_block(layer, w);
        }
    }
    LastRow out;
    rms_normalise(w.normed.data(), w.residual.data(), final_norm_, h.dim);
    out.logits.resize(h.vocab_size);
    project(out.logits.data(), classifier_, w.normed.data(), h.vocab_size, h.dim);
    require_finite(out.logits.data(), h.vocab_size, source_, -1, "final norm and classifier");
    out.attention = std::move(w.attention);
    out.values = std::move(w.values);
    out.queries = std::move(w.queries);
    out.keys = std::move(w.keys);
    out.key_attention = std::move(w.key_attention);
    out.hidden = std::move(w.hidden);
    return out;
}

}  // namespace attngeo::empirical
