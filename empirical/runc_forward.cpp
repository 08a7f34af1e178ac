// run.c's forward in scalar float32; see runc_forward.hpp. Every loop, constant and libm call
// follows run.c (matmul row by row with a sequential float sum, rmsnorm with eps 1e-5f, RoPE
// with powf/cosf/sinf per pair, softmax with expf), and the build uses -ffp-contract=off, so
// the results round exactly as run.c's do when compiled without fast-math.
#include "empirical/runc_forward.hpp"

#include <math.h>

#include <cmath>
#include <cstring>
#include <string>

#include "common/errors.hpp"

namespace attngeo::empirical {
namespace {

std::vector<float> floats_of(const TensorStore& store, const std::string& name) {
    const HostTensor t = store.get(name);
    if (t.dtype != DType::F32)
        throw InputError("'" + store.describe() + "': tensor '" + name + "' is not float32");
    std::vector<float> out(t.numel());
    std::memcpy(out.data(), t.data, t.bytes);
    return out;
}

// Undoes rope_interleaved_to_half on one layer's q or k rows: run.c's row h·hd + 2i + j is
// Hugging Face's row h·hd + i + j·hd/2. A pure permutation of rows, so the values are exact.
void append_interleaved(std::vector<float>& out, const std::vector<float>& half, int heads,
                        int head_dim, int in_features) {
    const std::size_t base = out.size();
    out.resize(base + half.size());
    for (int h = 0; h < heads; ++h)
        for (int i = 0; i < head_dim / 2; ++i)
            for (int j = 0; j < 2; ++j) {
                const std::size_t from =
                    static_cast<std::size_t>(h * head_dim + i + j * head_dim / 2);
                const std::size_t to = static_cast<std::size_t>(h * head_dim + 2 * i + j);
                std::memcpy(&out[base + to * in_features], &half[from * in_features],
                            sizeof(float) * in_features);
            }
}

void append(std::vector<float>& out, const std::vector<float>& part) {
    out.insert(out.end(), part.begin(), part.end());
}

void rmsnorm(float* o, const float* x, const float* weight, int size) {
    float ss = 0.0f;
    for (int j = 0; j < size; j++)
        ss += x[j] * x[j];
    ss /= size;
    ss += 1e-5f;
    ss = 1.0f / sqrtf(ss);
    for (int j = 0; j < size; j++)
        o[j] = weight[j] * (ss * x[j]);
}

void softmax(float* x, int size) {
    float max_val = x[0];
    for (int i = 1; i < size; i++)
        if (x[i] > max_val) max_val = x[i];
    float sum = 0.0f;
    for (int i = 0; i < size; i++) {
        x[i] = expf(x[i] - max_val);
        sum += x[i];
    }
    for (int i = 0; i < size; i++)
        x[i] /= sum;
}

// A corrupt or rescaled checkpoint overflows somewhere inside; naming the first layer where it
// shows (SPEC §10) beats a NaN reaching the exact sums. Reads only, so run.c's bits are kept;
// one pass over `size` floats against the layer's matrix products of size² each.
void require_finite(const float* x, int size, const std::string& source, int layer,
                    const char* tensor) {
    for (int i = 0; i < size; i++)
        if (!std::isfinite(x[i]))
            throw InputError(
                "'" + source + "': non-finite activations in " +
                (layer < 0 ? std::string("the logits") : "layer " + std::to_string(layer)) + " (" +
                tensor + ")");
}

// W (d, n) @ x (n) -> xout (d)
void matmul(float* xout, const float* x, const float* w, int n, int d) {
    for (int i = 0; i < d; i++) {
        float val = 0.0f;
        for (int j = 0; j < n; j++)
            val += w[static_cast<std::size_t>(i) * n + j] * x[j];
        xout[i] = val;
    }
}

}  // namespace

RunCForward::RunCForward(const Llama2cCheckpoint& checkpoint)
    : header_(checkpoint.header()), source_(checkpoint.describe()) {
    const Llama2cHeader& p = header_;
    const int hd = p.head_dim();
    embed_ = floats_of(checkpoint, "model.embed_tokens.weight");
    for (int l = 0; l < p.n_layers; ++l) {
        const std::string prefix = "model.layers." + std::to_string(l) + ".";
        append(rms_att_, floats_of(checkpoint, prefix + "input_layernorm.weight"));
        append(rms_ffn_, floats_of(checkpoint, prefix + "post_attention_layernorm.weight"));
        append_interleaved(wq_, floats_of(checkpoint, prefix + "self_attn.q_proj.weight"),
                           p.n_heads, hd, p.dim);
        append_interleaved(wk_, floats_of(checkpoint, prefix + "self_attn.k_proj.weight"),
                           p.n_kv_heads, hd, p.dim);
        append(wv_, floats_of(checkpoint, prefix + "self_attn.v_proj.weight"));
        append(wo_, floats_of(checkpoint, prefix + "self_attn.o_proj.weight"));
        append(w1_, floats_of(checkpoint, prefix + "mlp.gate_proj.weight"));
        append(w2_, floats_of(checkpoint, prefix + "mlp.down_proj.weight"));
        append(w3_, floats_of(checkpoint, prefix + "mlp.up_proj.weight"));
    }
    rms_final_ = floats_of(checkpoint, "model.norm.weight");
    classifier_ =
        checkpoint.contains("lm_head.weight") ? floats_of(checkpoint, "lm_head.weight") : embed_;
}

RunCForward::LastRow RunCForward::run(const std::vector<std::int64_t>& tokens) const {
    const Llama2cHeader& p = header_;
    const int T = static_cast<int>(tokens.size());
    if (T < 1 || T > p.seq_len)
        throw InputError("llama2.c forward: " + std::to_string(T) + " tokens, expected 1.." +
                         std::to_string(p.seq_len));
    const int dim = p.dim, kv_dim = p.kv_dim(), kv_mul = p.n_heads / p.n_kv_heads,
              hidden_dim = p.hidden_dim, head_size = p.head_dim();
    std::vector<float> x(dim), xb(dim), xb2(dim), hb(hidden_dim), hb2(hidden_dim), q(dim),
        att(static_cast<std::size_t>(p.n_heads) * T), logits(p.vocab_size);
    std::vector<float> key_cache(static_cast<std::size_t>(p.n_layers) * T * kv_dim),
        value_cache(key_cache.size());
    LastRow out;
    out.attention.resize(static_cast<std::size_t>(p.n_layers) * p.n_heads * T);
    for (int pos = 0; pos < T; ++pos) {
        const std::int64_t token = tokens[pos];
        if (token < 0 || token >= p.vocab_size)
            throw InputError("llama2.c forward: token id " + std::to_string(token) +
                             " outside 0.." + std::to_string(p.vocab_size - 1));
        std::memcpy(x.data(), &embed_[static_cast<std::size_t>(token) * dim], dim * sizeof(float));
        for (int l = 0; l < p.n_layers; l++) {
            rmsnorm(xb.data(), x.data(), &rms_att_[static_cast<std::size_t>(l) * dim], dim);
            const std::size_t loff = static_cast<std::size_t>(l) * T * kv_dim;
            float* k = &key_cache[loff + static_cast<std::size_t>(pos) * kv_dim];
            float* v = &value_cache[loff + static_cast<std::size_t>(pos) * kv_dim];
            matmul(q.data(), xb.data(), &wq_[static_cast<std::size_t>(l) * dim * dim], dim, dim);
            matmul(k, xb.data(), &wk_[static_cast<std::size_t>(l) * dim * kv_dim], dim, kv_dim);
            matmul(v, xb.data(), &wv_[static_cast<std::size_t>(l) * dim * kv_dim], dim, kv_dim);
            for (int i = 0; i < dim; i += 2) {
                const int head_dim = i % head_size;
                const float freq = 1.0f / powf(10000.0f, head_dim / (float)head_size);
                const float val = pos * freq;
                const float fcr = cosf(val);
                const float fci = sinf(val);
                const int rotn = i < kv_dim ? 2 : 1;
                for (int r = 0; r < rotn; r++) {
                    float* vec = r == 0 ? q.data() : k;
                    const float v0 = vec[i];
                    const float v1 = vec[i + 1];
                    vec[i] = v0 * fcr - v1 * fci;
                    vec[i + 1] = v0 * fci + v1 * fcr;
                }
            }
            for (int h = 0; h < p.n_heads; h++) {
                const float* qh = q.data() + h * head_size;
                float* a = att.data() + static_cast<std::size_t>(h) * T;
                for (int t = 0; t <= pos; t++) {
                    const float* kt = &key_cache[loff + static_cast<std::size_t>(t) * kv_dim +
                                                 (h / kv_mul) * head_size];
                    float score = 0.0f;
                    for (int i = 0; i < head_size; i++)
                        score += qh[i] * kt[i];
                    score /= sqrtf(head_size);
                    a[t] = score;
                }
                softmax(a, pos + 1);
                float* xh = xb.data() + h * head_size;
                std::memset(xh, 0, head_size * sizeof(float));
                for (int t = 0; t <= pos; t++) {
                    const float* vt = &value_cache[loff + static_cast<std::size_t>(t) * kv_dim +
                                                   (h / kv_mul) * head_size];
                    const float w = a[t];
                    for (int i = 0; i < head_size; i++)
                        xh[i] += w * vt[i];
                }
                if (pos == T - 1)
                    std::memcpy(&out.attention[(static_cast<std::size_t>(l) * p.n_heads + h) * T],
                                a, T * sizeof(float));
            }
            matmul(xb2.data(), xb.data(), &wo_[static_cast<std::size_t>(l) * dim * dim], dim, dim);
            require_finite(xb2.data(), dim, source_, l, "attention output");
            for (int i = 0; i < dim; i++)
                x[i] += xb2[i];
            rmsnorm(xb.data(), x.data(), &rms_ffn_[static_cast<std::size_t>(l) * dim], dim);
            matmul(hb.data(), xb.data(), &w1_[static_cast<std::size_t>(l) * dim * hidden_dim], dim,
                   hidden_dim);
            matmul(hb2.data(), xb.data(), &w3_[static_cast<std::size_t>(l) * dim * hidden_dim], dim,
                   hidden_dim);
            for (int i = 0; i < hidden_dim; i++) {
                float val = hb[i];
                val *= (1.0f / (1.0f + expf(-val)));
                val *= hb2[i];
                hb[i] = val;
            }
            matmul(xb.data(), hb.data(), &w2_[static_cast<std::size_t>(l) * dim * hidden_dim],
                   hidden_dim, dim);
            for (int i = 0; i < dim; i++)
                x[i] += xb[i];
            require_finite(x.data(), dim, source_, l, "residual stream after the MLP");
        }
    }
    rmsnorm(x.data(), x.data(), rms_final_.data(), dim);
    matmul(logits.data(), x.data(), classifier_.data(), dim, p.vocab_size);
    require_finite(logits.data(), p.vocab_size, source_, -1, "final norm and classifier");
    out.values = std::move(value_cache);
    out.logits = std::move(logits);
    return out;
}

}  // namespace attngeo::empirical
