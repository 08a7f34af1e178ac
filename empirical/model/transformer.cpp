// The shared blocks (norms, rotary, attention with capture, MLP) and the table-driven loader;
// see transformer.hpp. Every tensor lookup states its expected shape.
#include "empirical/model/transformer.hpp"

#include <ATen/record_function.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <sstream>

#include "common/errors.hpp"
#include "common/safetensors.hpp"
#include "empirical/model/checkpoint.hpp"

namespace F = torch::nn::functional;

namespace attngeo::empirical {
namespace {

torch::Dtype torch_dtype(DType d) {
    switch (d) {
        case DType::F64:
            return torch::kFloat64;
        case DType::F32:
            return torch::kFloat32;
        case DType::F16:
            return torch::kFloat16;
        case DType::BF16:
            return torch::kBFloat16;
        case DType::I64:
            return torch::kInt64;
        case DType::I32:
            return torch::kInt32;
        case DType::I16:
            return torch::kInt16;
        case DType::I8:
            return torch::kInt8;
        case DType::U8:
            return torch::kUInt8;
        case DType::BOOL:
            return torch::kBool;
    }
    throw std::logic_error("torch_dtype: unknown dtype");
}

torch::Dtype torch_dtype(ComputeDtype dtype) {
    switch (dtype) {
        case ComputeDtype::float32:
            return torch::kFloat32;
        case ComputeDtype::bfloat16:
            return torch::kBFloat16;
        case ComputeDtype::float16:
            return torch::kFloat16;
        case ComputeDtype::float64:
            return torch::kFloat64;
    }
    return torch::kFloat32;
}

// The device as libtorch names it, once this libtorch can reach it.
torch::Device torch_device(const DeviceSpec& device) {
    if (device.is_cpu()) return torch::kCPU;
    const std::string name = to_string(device);
    if (!torch::cuda::is_available()) {
        throw InputError("--device " + name +
                         ": CUDA is not available (no GPU, or libtorch built without CUDA)");
    }
    if (device.index >= static_cast<int>(torch::cuda::device_count())) {
        throw InputError("--device " + name + ": only " +
                         std::to_string(torch::cuda::device_count()) + " CUDA device(s)");
    }
    return torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(std::max(device.index, 0)));
}

std::string expand(const std::string& pattern, int layer) {
    const auto at = pattern.find("{i}");
    return at == std::string::npos
               ? pattern
               : pattern.substr(0, at) + std::to_string(layer) + pattern.substr(at + 3);
}

// Looks tensors up through the family's table, checks shapes, converts to device and dtype.
class Fetcher {
  public:
    Fetcher(const TensorStore& store, const Architecture& arch, torch::Device device,
            torch::Dtype dtype)
        : store_(store),
          arch_(arch),
          device_(device),
          dtype_(dtype),
          file_mapped_(dynamic_cast<const SafetensorsCheckpoint*>(&store) != nullptr ||
                       dynamic_cast<const SafetensorsFile*>(&store) != nullptr) {}

    // Where get() records the tensors it returns as views of a read-only file mapping (the
    // only memory release_mapped_pages may drop: other stores' buffers are anonymous).
    void record_mapped_views(std::vector<torch::Tensor>* views) { mapped_views_ = views; }

    // `expected` is in nn.Linear orientation ([out, in]); transposed entries are stored [in, out].
    torch::Tensor get(TensorId id, int layer, std::vector<std::int64_t> expected) const {
        const TensorName* entry = nullptr;
        for (const auto& t : arch_.tensors)
            if (t.id == id) entry = &t;
        if (!entry) return {};
        std::vector<std::int64_t> stored = expected;
        if (entry->transpose && stored.size() == 2) std::swap(stored[0], stored[1]);
        for (const auto& pattern : entry->patterns) {
            const std::string name = expand(pattern, layer);
            if (!store_.contains(name)) continue;
            const HostTensor h = store_.get(name);
            if (h.shape != stored) {
                throw InputError("'" + h.file + "': tensor '" + name + "' has shape " +
                                 shape_text(h.shape) + ", expected " + shape_text(stored) +
                                 " from the config");
            }
            torch::Tensor t = host_view(h);
            if (!(t.device() == device_ && t.scalar_type() == dtype_ && !entry->transpose))
                t = t.to(device_, dtype_, /*non_blocking=*/false, /*copy=*/true);
            else if (file_mapped_ && h.owner && t.data_ptr() == h.data && mapped_views_)
                mapped_views_->push_back(t);
            if (!t.isfinite().all().item<bool>()) {
                throw InputError("'" + h.file + "': tensor '" + name + "' contains NaN or inf");
            }
            return entry->transpose ? t.t().contiguous() : t;
        }
        if (entry->optional) return {};
        throw InputError("'" + store_.describe() + "': missing tensor '" +
                         expand(entry->patterns.front(), layer) + "'");
    }

  private:
    // The host bytes as a torch tensor without a copy when they are a memory map (or a buffer)
    // aligned for their dtype: a 7B bf16 checkpoint then computes straight from the page cache
    // (13.5 GB, evictable) instead of a private copy. The map is read-only, which is safe
    // because weights are only read; `owner` keeps it alive as long as the tensor. A view is
    // only kept when no conversion is needed (same dtype, CPU, no transpose); otherwise the
    // caller copies from it, as before. Misaligned data (legal in safetensors) is copied.
    // bfloat16 weights stay bfloat16 in the forward (no per-layer float32 conversion): on the
    // Xeon with AMX/AVX-512 BF16 where this was measured, libtorch 1.13's oneDNN bf16 linear
    // ran at 4.4x its float32 rate (256x4096 by 4096x4096: 17 ms against 76 ms, 2 threads).
    torch::Tensor host_view(const HostTensor& h) const {
        const auto options = torch::TensorOptions().dtype(torch_dtype(h.dtype));
        void* data = const_cast<void*>(h.data);
        if (!h.owner || reinterpret_cast<std::uintptr_t>(data) % dtype_size(h.dtype) != 0)
            return torch::from_blob(data, h.shape, options).clone();
        std::shared_ptr<const void> owner = h.owner;
        return torch::from_blob(
            data, h.shape, [owner](void*) mutable { owner.reset(); }, options);
    }

    const TensorStore& store_;
    const Architecture& arch_;
    torch::Device device_;
    torch::Dtype dtype_;
    bool file_mapped_;
    std::vector<torch::Tensor>* mapped_views_ = nullptr;
};

// Drops the pages of weights read from a read-only file mapping out of this process's resident
// set once they have been used: the page cache keeps them (the next document re-reads them
// without I/O when memory allows), but the resident set stays near one layer instead of the
// whole model (12.6 GiB for a 7B bf16 checkpoint). Only pages wholly inside a view are dropped;
// unmodified pages of a private file mapping are re-read from the file on the next access.
void release_mapped_pages(const std::vector<torch::Tensor>& views) {
    static const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
    for (const auto& view : views) {
        const auto begin = reinterpret_cast<std::uintptr_t>(view.data_ptr());
        const auto end = begin + static_cast<std::uintptr_t>(view.numel() * view.element_size());
        const auto first = (begin + page - 1) / page * page, last = end / page * page;
        if (last > first) ::madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);
    }
}

// Whether every element is finite, from one pass: min and max propagate NaN, and an infinity is
// one of them (torch::isfinite(t).all() takes three passes and a bool tensor).
bool all_finite(const torch::Tensor& t) {
    const bool wide = t.scalar_type() == torch::kFloat32 || t.scalar_type() == torch::kFloat64;
    const auto [lowest, highest] = torch::aminmax(wide ? t : t.to(torch::kFloat32));
    return std::isfinite(lowest.item<double>()) && std::isfinite(highest.item<double>());
}

// x·cos + rotate_half(x)·sin with rotate_half(x) = (−x₂, x₁): written as the halves swapped
// times signed_sin = (−sin₁, sin₂), the same products (x₂·(−s) = −(x₂·s) exactly), in three
// passes over x instead of five.
torch::Tensor rotate(const torch::Tensor& x, const torch::Tensor& cos,
                     const torch::Tensor& signed_sin) {
    return (x * cos).addcmul_(x.roll(x.size(-1) / 2, -1), signed_sin);
}

}  // namespace

Transformer Transformer::load(const std::string& path, const LoadOptions& options) {
    const Checkpoint checkpoint = open_checkpoint(path);
    return Transformer(checkpoint.config, *checkpoint.store, options);
}

// Whether libtorch has the kernels the forward needs for this dtype on this device: a tiny
// probe of each (addmm, layer norm, softmax), since the answer depends on libtorch's build and
// version (1.13's CPU has no float16 addmm) and an unsupported one otherwise fails mid-forward
// with a multi-line backtrace.
void check_dtype_supported(torch::Device device, torch::Dtype dtype, const LoadOptions& options) {
    const auto probe = torch::TensorOptions().device(device).dtype(dtype);
    try {
        const torch::Tensor x = torch::ones({2, 4}, probe), w = torch::ones({3, 4}, probe);
        const torch::Tensor b = torch::zeros({3}, probe);
        (void)torch::addmm(b, x, w.t());
        (void)torch::layer_norm(x, {4});
        (void)torch::softmax(x, -1);
    } catch (const c10::Error& e) {
        std::string what = e.what_without_backtrace();
        what = what.substr(0, what.find('\n'));
        throw InputError(std::string("--dtype ") + to_string(options.dtype) + " on --device " +
                         to_string(options.device) + ": this libtorch (" + TORCH_VERSION +
                         ") cannot compute in it (" + what +
                         "); use float32 or bfloat16 here, or a CUDA device");
    }
}

Transformer::Transformer(const ModelConfig& config, const TensorStore& store,
                         const LoadOptions& options)
    : config_(config),
      source_(store.describe()),
      arch_(&architecture_for(config.family)),
      device_(torch_device(options.device)),
      dtype_(torch_dtype(options.dtype)) {
    check_dtype_supported(device_, dtype_, options);
    Fetcher f(store, *arch_, device_, dtype_);
    f.record_mapped_views(&mapped_views_);
    const std::int64_t V = config.vocab_size, h = config.hidden_size, H = config.num_heads,
                       Hkv = config.num_kv_heads, d = config.head_dim, I = config.intermediate_size;
    embed_ = f.get(TensorId::embed, 0, {V, h});
    if (arch_->learned_positions)
        position_embed_ = f.get(TensorId::position_embed, 0, {config.max_positions, h});
    final_norm_ = f.get(TensorId::final_norm, 0, {h});
    final_norm_bias_ = f.get(TensorId::final_norm_bias, 0, {h});
    lm_head_ = f.get(TensorId::lm_head, 0, {V, h});
    if (!lm_head_.defined()) {
        if (!config.tie_word_embeddings && !arch_->always_tied) {
            throw InputError("'" + store.describe() +
                             "': no output head tensor and tie_word_embeddings is false");
        }
        lm_head_ = embed_;  // tied
    }
    release_mapped_pages(mapped_views_);  // the finite checks read every page
    for (int i = 0; i < config.num_layers; ++i) {
        Layer l;
        f.record_mapped_views(&l.mapped_views);
        l.attn_norm = f.get(TensorId::attn_norm, i, {h});
        l.attn_norm_bias = f.get(TensorId::attn_norm_bias, i, {h});
        switch (arch_->qkv) {
            case QkvLayout::separate:
                l.q = f.get(TensorId::q, i, {H * d, h});
                l.k = f.get(TensorId::k, i, {Hkv * d, h});
                l.v = f.get(TensorId::v, i, {Hkv * d, h});
                if (arch_->qkv_bias) {  // Qwen2
                    l.q_bias = f.get(TensorId::q_bias, i, {H * d});
                    l.k_bias = f.get(TensorId::k_bias, i, {Hkv * d});
                    l.v_bias = f.get(TensorId::v_bias, i, {Hkv * d});
                }
                break;
            case QkvLayout::blocks: {  // [q | k | v] along the output dimension
                const auto w = f.get(TensorId::qkv, i, {3 * H * d, h});
                l.q = w.slice(0, 0, H * d).contiguous();
                l.k = w.slice(0, H * d, 2 * H * d).contiguous();
                l.v = w.slice(0, 2 * H * d).contiguous();
                if (!arch_->qkv_bias) break;
                const auto b = f.get(TensorId::qkv_bias, i, {3 * H * d});
                l.q_bias = b.slice(0, 0, H * d).contiguous();
                l.k_bias = b.slice(0, H * d, 2 * H * d).contiguous();
                l.v_bias = b.slice(0, 2 * H * d).contiguous();
                break;
            }
            case QkvLayout::per_head: {  // viewed [H, 3, d, …]: q, k, v interleaved per head
                const auto w = f.get(TensorId::qkv, i, {3 * H * d, h}).view({H, 3, d, h});
                l.q = w.select(1, 0).reshape({H * d, h});
                l.k = w.select(1, 1).reshape({H * d, h});
                l.v = w.select(1, 2).reshape({H * d, h});
                if (!arch_->qkv_bias) break;
                const auto b = f.get(TensorId::qkv_bias, i, {3 * H * d}).view({H, 3, d});
                l.q_bias = b.select(1, 0).reshape({H * d});
                l.k_bias = b.select(1, 1).reshape({H * d});
                l.v_bias = b.select(1, 2).reshape({H * d});
                break;
            }
        }
        l.o = f.get(TensorId::o, i, {h, H * d});
        l.o_bias = f.get(TensorId::o_bias, i, {h});
        l.mlp_norm = f.get(TensorId::mlp_norm, i, {h});
        l.mlp_norm_bias = f.get(TensorId::mlp_norm_bias, i, {h});
        if (arch_->gated_mlp) l.gate = f.get(TensorId::gate, i, {I, h});
        l.up = f.get(TensorId::up, i, {I, h});
        l.up_bias = f.get(TensorId::up_bias, i, {I});
        l.down = f.get(TensorId::down, i, {h, I});
        l.down_bias = f.get(TensorId::down_bias, i, {h});
        release_mapped_pages(l.mapped_views);
        layers_.push_back(std::move(l));
    }
    rotary_dims_ = !arch_->rotary ? 0 : static_cast<int>(config.head_dim * config.rotary_pct);
    if (rotary_dims_ % 2 != 0)
        throw InputError("config: rotary dimensions " + std::to_string(rotary_dims_) +
                         " must be even");
}

// The forward's stages carry named profiler scopes ("norm", "projections", "rotary",
// "attention core", "mlp", "capture copies", "finite checks") so bench/forward_profile can say
// where its time goes; without a profiler attached a scope costs one flag test.
torch::Tensor Transformer::norm(const torch::Tensor& x, const torch::Tensor& weight,
                                const torch::Tensor& bias) const {
    RECORD_USER_SCOPE("norm");
    if (arch_->norm == NormKind::layer_norm) {
        return F::layer_norm(x, F::LayerNormFuncOptions({config_.hidden_size})
                                    .weight(weight)
                                    .bias(bias)
                                    .eps(config_.norm_eps));
    }
    // RMSNorm in float32 whatever the model dtype, as the reference does.
    const auto xf = x.to(torch::kFloat32);
    const auto normed = xf * torch::rsqrt(xf.pow(2).mean(-1, /*keepdim=*/true) + config_.norm_eps);
    if (arch_->norm == NormKind::rms_one_plus_weight)
        return (normed * (1.0 + weight.to(torch::kFloat32))).to(dtype_);
    return weight * normed.to(dtype_);
}

torch::Tensor Transformer::activation(const torch::Tensor& x) const {
    const std::string& a = config_.hidden_act;
    if (a == "silu") return F::silu(x);
    if (a == "gelu") return torch::gelu(x);
    if (a == "gelu_pytorch_tanh") return torch::gelu(x, "tanh");
    // gelu_new, written out as transformers' NewGELUActivation.
    return 0.5 * x *
           (1.0 + torch::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * torch::pow(x, 3.0))));
}

torch::Tensor Transformer::mlp(const torch::Tensor& x, const Layer& l) const {
    RECORD_USER_SCOPE("mlp");
    if (arch_->gated_mlp) {
        // In place on the projections' fresh outputs: the same values, two [T, intermediate]
        // tensors fewer to allocate and fault in per layer.
        auto gate = F::linear(x, l.gate);
        if (config_.hidden_act == "silu")
            torch::silu_(gate);
        else
            gate = activation(gate);
        return F::linear(gate.mul_(F::linear(x, l.up)), l.down);
    }
    return F::linear(activation(F::linear(x, l.up, l.up_bias)), l.down, l.down_bias);
}

torch::Tensor Transformer::checked_ids(const torch::Tensor& ids_in) const {
    if (ids_in.dim() != 2) throw InputError("token ids must be [B, T]");
    const auto ids = ids_in.to(device_, torch::kInt64);
    const std::int64_t B = ids.size(0), T = ids.size(1);
    if (T < 1 || B < 1) throw InputError("token ids must be non-empty");
    const auto lo = ids.min().item<std::int64_t>(), hi = ids.max().item<std::int64_t>();
    if (lo < 0 || hi >= config_.vocab_size) {
        throw InputError("token id " + std::to_string(lo < 0 ? lo : hi) +
                         " outside the vocabulary 0.." + std::to_string(config_.vocab_size - 1));
    }
    if (arch_->learned_positions && T > config_.max_positions) {
        throw InputError("sequence length " + std::to_string(T) + " exceeds the model's " +
                         std::to_string(config_.max_positions) + " positions");
    }
    return ids;
}

std::pair<torch::Tensor, torch::Tensor> Transformer::rotary_tables(std::int64_t T) const {
    if (rotary_dims_ == 0) return {};
    // inv_freq = 1/θ^(2i/rot) and angles in float32, as the reference implementations do.
    const auto exponents =
        torch::arange(0, rotary_dims_, 2,
                      torch::TensorOptions().dtype(torch::kInt64).device(device_))
            .to(torch::kFloat32) /
        static_cast<double>(rotary_dims_);
    const auto inv_freq = 1.0 / torch::pow(config_.rope_theta, exponents);
    auto positions =
        torch::arange(T, torch::TensorOptions().dtype(torch::kFloat32).device(device_));
    if (config_.rope_scaling_factor != 1) positions = positions / config_.rope_scaling_factor;
    const auto freqs = torch::outer(positions, inv_freq);
    const auto angles = torch::cat({freqs, freqs}, -1);  // [T, rot]
    const auto sin = angles.sin();
    const auto signed_sin =
        torch::cat({-sin.slice(-1, 0, rotary_dims_ / 2), sin.slice(-1, rotary_dims_ / 2)}, -1);
    return {angles.cos().to(dtype_), signed_sin.to(dtype_)};
}

void Transformer::require_finite(const torch::Tensor& t, std::size_t layer,
                                 const char* tensor) const {
    RECORD_USER_SCOPE("finite checks");
    if (!all_finite(t))
        throw InputError("'" + source_ + "': non-finite activations in layer " +
                         std::to_string(layer) + " (" + tensor + ")");
}

void Transformer::mask_future_keys(torch::Tensor& scores, std::int64_t first_row) const {
    const std::int64_t rows = scores.size(2), K = scores.size(3);
    const auto options = torch::TensorOptions().dtype(torch::kInt64).device(scores.device());
    const auto query_index = torch::arange(first_row, first_row + rows, options).unsqueeze(1);
    constexpr float kMasked = -std::numeric_limits<float>::infinity();
    if (config_.sliding_window <= 0) {
        // Only the block's own keys first_row..K−1 can lie in a row's future.
        auto block = scores.slice(3, first_row, K);
        const auto key_index = torch::arange(first_row, K, options).unsqueeze(0);
        block.masked_fill_(key_index > query_index, kMasked);
        return;
    }
    const auto key_index = torch::arange(K, options).unsqueeze(0);
    const auto allowed =
        (key_index <= query_index) & (key_index > query_index - config_.sliding_window);
    scores.masked_fill_(allowed.logical_not(), kMasked);
}

torch::Tensor Transformer::attention(const torch::Tensor& x, int layer_index, const Layer& l,
                                     const torch::Tensor& cos, const torch::Tensor& signed_sin,
                                     const CaptureOptions& options, LayerCapture& capture) const {
    const std::int64_t B = x.size(0), T = x.size(1), H = config_.num_heads,
                       Hkv = config_.num_kv_heads, d = config_.head_dim;
    auto rope = [&](const torch::Tensor& t) {
        RECORD_USER_SCOPE("rotary");
        if (rotary_dims_ == 0) return t;
        if (rotary_dims_ == d) return rotate(t, cos, signed_sin);
        return torch::cat(
            {rotate(t.slice(-1, 0, rotary_dims_), cos, signed_sin), t.slice(-1, rotary_dims_)}, -1);
    };
    auto project = [](const torch::Tensor& in, const torch::Tensor& w, const torch::Tensor& b) {
        RECORD_USER_SCOPE("projections");
        return F::linear(in, w, b);
    };
    const auto h = norm(x, l.attn_norm, l.attn_norm_bias);
    const auto q = rope(project(h, l.q, l.q_bias).view({B, T, H, d}).transpose(1, 2));
    const auto k = rope(project(h, l.k, l.k_bias).view({B, T, Hkv, d}).transpose(1, 2));
    const auto v = project(h, l.v, l.v_bias).view({B, T, Hkv, d}).transpose(1, 2);
    {
        RECORD_USER_SCOPE("capture copies");
        if (options.capture) capture.values = v.to(torch::kFloat32).contiguous();
        if (options.sink_inputs) {
            capture.queries = q.to(torch::kFloat32).contiguous();
            capture.keys = k.to(torch::kFloat32).contiguous();
            capture.key_attention = torch::zeros(
                {B, H, T}, torch::TensorOptions().dtype(torch::kFloat64).device(device_));
        }
    }
    RECORD_USER_SCOPE("attention core");
    const AttentionOperands in = attention_operands(q, k, v, options.edit != nullptr);
    if (options.capture && options.queries == QueryRows::all)
        capture.attention = torch::empty(
            {B, H, T, T}, torch::TensorOptions().dtype(torch::kFloat32).device(device_));
    auto out = torch::empty({B, H, T, d}, v.options());
    const std::int64_t chunk = std::max<std::int64_t>(1, options.query_chunk);
    for (std::int64_t r0 = 0; r0 < T; r0 += chunk) {
        const std::int64_t rows = std::min(T, r0 + chunk) - r0;
        out.slice(2, r0, r0 + rows)
            .copy_(attention_block(in, r0, rows, layer_index, options, capture));
    }
    return project(out.transpose(1, 2).reshape({B, T, H * d}), l.o, l.o_bias);
}

Transformer::AttentionOperands Transformer::attention_operands(const torch::Tensor& q,
                                                               const torch::Tensor& k,
                                                               const torch::Tensor& v,
                                                               bool for_edit) {
    AttentionOperands in;
    in.scale = std::sqrt(static_cast<double>(q.size(3)));
    // With √d a power of two (d = 16, 64, 256) dividing the queries is exact and gives the
    // scores' quotient bit for bit, one pass over T·d instead of one over the T²/2 scores.
    in.divide_scores = std::exp2(std::round(std::log2(in.scale))) != in.scale;
    in.queries = in.divide_scores ? q.to(torch::kFloat32) : q.to(torch::kFloat32) / in.scale;
    in.keys = k.to(torch::kFloat32);
    in.values = v;
    const std::int64_t G = q.size(1) / k.size(1);
    if (for_edit) in.values_per_head = G == 1 ? v : v.repeat_interleave(G, 1);
    return in;
}

torch::Tensor Transformer::attention_block(const AttentionOperands& in, std::int64_t first_row,
                                           std::int64_t rows, int layer_index,
                                           const CaptureOptions& options,
                                           LayerCapture& capture) const {
    const std::int64_t B = in.queries.size(0), H = in.queries.size(1), T = in.queries.size(2),
                       d = in.queries.size(3), Hkv = in.keys.size(1), G = H / Hkv;
    // Causal rows see keys 0..K−1 only: the scores, the softmax and the mixing run over those K
    // columns (about half of T² over the blocks), and the future keys' exact zeros are written
    // where α is kept. Grouped-query attention without repeating keys and values: the G query
    // heads of one kv head are stacked as G·rows rows of one product ([B, Hkv, G·rows, d]
    // against [B, Hkv, K, d]), and the scores viewed back as [B, H, rows, K].
    const std::int64_t K = first_row + rows;
    const auto stacked = in.queries.slice(2, first_row, K).reshape({B, Hkv, G * rows, d});
    auto scores =
        torch::matmul(stacked, in.keys.slice(2, 0, K).transpose(2, 3)).view({B, H, rows, K});
    if (in.divide_scores) scores.div_(in.scale);
    mask_future_keys(scores, first_row);
    const auto probs = torch::softmax(scores, -1);  // α in float32, [B, H, rows, K]
    // The block's column sums in float32 (at most query_chunk rows), accumulated over the
    // blocks in float64: a float64 sum of every row would first copy the block to float64.
    if (options.sink_inputs) capture.key_attention.slice(2, 0, K).add_(probs.sum(2));
    const auto mixing = options.edit != nullptr
                            ? options.edit->edit(layer_index, first_row, T, scores, probs,
                                                 in.values_per_head.slice(2, 0, K))
                            : probs;
    if (options.capture && options.queries == QueryRows::all) {
        auto kept = capture.attention.slice(2, first_row, K);
        kept.slice(3, 0, K).copy_(probs);
        kept.slice(3, K, T).zero_();
    } else if (options.capture && options.queries == QueryRows::last && K == T) {
        capture.attention = probs.slice(2, rows - 1).contiguous();
    }
    return torch::matmul(mixing.to(in.values.scalar_type()).reshape({B, Hkv, G * rows, K}),
                         in.values.slice(2, 0, K))
        .view({B, H, rows, d});
}

CaptureResult Transformer::forward(const torch::Tensor& ids_in,
                                   const CaptureOptions& options) const {
    torch::NoGradGuard no_grad;
    const auto ids = checked_ids(ids_in);
    const std::int64_t T = ids.size(1);
    torch::Tensor x = F::embedding(ids, embed_);
    if (arch_->embed_scale)
        x = x * torch::tensor(std::sqrt(static_cast<double>(config_.hidden_size)), x.options());
    if (arch_->learned_positions) x = x + position_embed_.slice(0, 0, T);
    const auto [cos, signed_sin] = rotary_tables(T);

    CaptureResult result;
    if (options.hidden_states) result.hidden_states.push_back(x.to(torch::kFloat32));
    // A corrupt or rescaled checkpoint overflows somewhere inside; naming the first layer where
    // it shows (docs/design.md §10) beats a NaN surfacing later in the exact sums. One reduction a
    // check.
    for (std::size_t layer = 0; layer < layers_.size(); ++layer) {
        const Layer& l = layers_[layer];
        LayerCapture capture;
        const auto attended =
            attention(x, static_cast<int>(layer), l, cos, signed_sin, options, capture);
        require_finite(attended, layer, "attention output");
        if (config_.parallel_residual) {
            x = x + attended + mlp(norm(x, l.mlp_norm, l.mlp_norm_bias), l);
        } else {
            x = x + attended;
            x = x + mlp(norm(x, l.mlp_norm, l.mlp_norm_bias), l);
        }
        require_finite(x, layer, "residual stream after the MLP");
        release_mapped_pages(l.mapped_views);
        if (options.hidden_states) result.layer_outputs.push_back(x.to(torch::kFloat32));
        if (options.capture) result.layers.push_back(std::move(capture));
    }
    const auto final_hidden = norm(x, final_norm_, final_norm_bias_);
    if (options.hidden_states) {
        for (std::size_t i = 0; i + 1 < result.layer_outputs.size(); ++i)
            result.hidden_states.push_back(result.layer_outputs[i]);
        result.hidden_states.push_back(final_hidden.to(torch::kFloat32));
    }
    if (!options.logits) {
        release_mapped_pages(mapped_views_);
        return result;
    }
    const auto head_input = options.all_logits ? final_hidden : final_hidden.slice(1, T - 1);
    result.logits = F::linear(head_input, lm_head_).to(torch::kFloat32);
    release_mapped_pages(mapped_views_);
    if (!all_finite(result.logits))
        throw InputError("'" + source_ +
                         "': non-finite activations in the logits (final norm and output head; "
                         "dtype too narrow for this model?)");
    return result;
}

}  // namespace attngeo::empirical
