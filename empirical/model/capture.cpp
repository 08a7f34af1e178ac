// `attngeo capture` and `attngeo generate` on top of Transformer; see capture.hpp.
#include "empirical/model/capture.hpp"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

#include "common/errors.hpp"
#include "common/format.hpp"
#include "common/output_folder.hpp"
#include "common/safetensors.hpp"
#include "common/size_checks.hpp"
#include "common/tensor_store.hpp"
#include "empirical/model/architecture.hpp"
#include "empirical/model/model_config.hpp"
#include "empirical/tokenizers/llama2c_tokenizer.hpp"
#include "empirical/tokenizers/tokenizer_lookup.hpp"
#include "empirical/model/transformer.hpp"

namespace fs = std::filesystem;

namespace attngeo::empirical {
namespace {

HostTensor host_view(const std::string& name, const torch::Tensor& t) {
    const auto cpu = std::make_shared<torch::Tensor>(t.to(torch::kCPU).contiguous());
    HostTensor h;
    h.name = name;
    h.dtype = cpu->scalar_type() == torch::kInt64 ? DType::I64 : DType::F32;
    h.shape.assign(cpu->sizes().begin(), cpu->sizes().end());
    h.data = cpu->data_ptr();
    h.bytes = static_cast<std::size_t>(cpu->numel()) * cpu->element_size();
    h.owner = std::shared_ptr<const void>(cpu, cpu->data_ptr());
    return h;
}

torch::Tensor ids_tensor(const std::vector<std::vector<std::int64_t>>& rows) {
    const auto B = static_cast<std::int64_t>(rows.size()),
               T = static_cast<std::int64_t>(rows.front().size());
    auto ids = torch::empty({B, T}, torch::kInt64);
    for (std::int64_t b = 0; b < B; ++b)
        for (std::int64_t t = 0; t < T; ++t)
            ids[b][t] = rows[b][t];
    return ids;
}

// capture writes one file; checked before the model loads, as the folders of other commands are.
void check_output_file(const std::string& path, const std::string& flag) {
    std::error_code ec;
    if (fs::is_directory(path, ec))
        throw InputError(flag + " '" + path + "': is a folder, expected a .safetensors file");
    if (fs::exists(path, ec)) return;  // replaced atomically
    check_output_folder(path, flag);   // name length and a writable parent apply to a file too
}

// Bytes `capture` writes, and holds in memory until the write: input_ids [B,T] (I64), logits
// [B,T,V], per layer attentions [B,H,Tq,T] and values [B,H_kv,T,d_head], and with
// hidden_states [B,T,D] L + 1 times plus layer_outputs L times (float32). Saturates at 2^64.
std::uint64_t capture_output_bytes(const ModelConfig& c, std::uint64_t B, std::uint64_t T,
                                   QueryRows queries, bool hidden_states) {
    const std::uint64_t Tq = queries == QueryRows::all ? T : 1;
    const std::uint64_t L = c.num_layers;
    const auto product = [](std::initializer_list<std::uint64_t> factors) {
        std::uint64_t p = 1;
        for (std::uint64_t f : factors)
            p = checked_bytes(p, f);
        return p;
    };
    const std::uint64_t parts[] = {
        product({B, T, 8}),
        product({B, T, std::uint64_t(c.vocab_size), 4}),
        product({L, B, std::uint64_t(c.num_heads), Tq, T, 4}),
        product({L, B, std::uint64_t(c.num_kv_heads), T, std::uint64_t(c.head_dim), 4}),
        hidden_states ? product({2 * L + 1, B, T, std::uint64_t(c.hidden_size), 4}) : 0,
    };
    std::uint64_t total = 0;
    for (std::uint64_t part : parts)
        total = part > UINT64_MAX - total ? UINT64_MAX : total + part;
    return total;
}

// A long --tokens line with --queries all asks for T² floats per head and layer (100,000 ids:
// tens of GB): refused before the forward, within the memory budget and --max-output-gb.
void check_capture_size(const CaptureRequest& r, const ModelConfig& config,
                        const std::vector<std::vector<std::int64_t>>& rows, QueryRows queries) {
    const std::uint64_t B = rows.size(), T = rows.front().size();
    const std::uint64_t bytes = capture_output_bytes(config, B, T, queries, r.hidden_states);
    std::ostringstream what;
    what << "--tokens '" << r.tokens_file << "': " << B << (B == 1 ? " sequence" : " sequences")
         << " of " << T << " tokens with --queries " << r.queries << " make a "
         << format_double(double(bytes) / 1e9) << " GB output (attentions [B,H,Tq,T] of "
         << config.num_layers << " layers x " << config.num_heads << " heads, logits, values)";
    check_allocation(bytes, 1, what.str());
    if (double(bytes) > r.max_output_gb * 1e9)
        throw InputError(what.str() + ", more than --max-output-gb " +
                         format_double(r.max_output_gb) +
                         "; pass shorter sequences, --queries last, or raise --max-output-gb");
}

std::string find_tokenizer(const std::string& model, const std::string& given) {
    if (!given.empty()) return given;
    const fs::path folder = model_folder(model);
    if (fs::exists(folder / "tokenizer.bin")) return (folder / "tokenizer.bin").string();
    if (fs::exists(folder)) {
        for (const auto& entry : fs::directory_iterator(folder)) {
            const std::string name = entry.path().filename().string();
            if (name.rfind("tok", 0) == 0 && entry.path().extension() == ".bin")
                return entry.path().string();
        }
    }
    return "";
}

}  // namespace

void run_capture(const CaptureRequest& r) {
    if (r.queries != "last" && r.queries != "all")
        throw InputError("--queries: '" + r.queries + "', expected all or last");
    if (r.out.empty()) throw InputError("--out: an output .safetensors file is required");
    check_output_file(r.out, "--out");
    Transformer model = Transformer::load(r.model, LoadOptions{r.device, r.dtype});
    const auto rows = read_token_file(r.tokens_file, true, model.config().vocab_size);
    if (r.sliding_window >= 0) model.set_sliding_window(r.sliding_window);
    CaptureOptions options;
    options.queries = r.queries == "all" ? QueryRows::all : QueryRows::last;
    check_capture_size(r, model.config(), rows, options.queries);
    options.hidden_states = r.hidden_states;
    const torch::Tensor ids = ids_tensor(rows);
    const CaptureResult result = [&] {
        try {
            return model.forward(ids, options);
        } catch (const InputError& e) {  // e.g. a sequence longer than the model's positions
            throw InputError("--tokens '" + r.tokens_file + "': " + e.what());
        }
    }();
    std::vector<HostTensor> tensors;
    tensors.push_back(host_view("input_ids", ids));
    tensors.push_back(host_view("logits", result.logits));
    for (std::size_t l = 0; l < result.layers.size(); ++l) {
        tensors.push_back(host_view("attentions." + std::to_string(l), result.layers[l].attention));
        tensors.push_back(host_view("values." + std::to_string(l), result.layers[l].values));
    }
    for (std::size_t l = 0; l < result.hidden_states.size(); ++l) {
        tensors.push_back(host_view("hidden_states." + std::to_string(l), result.hidden_states[l]));
    }
    for (std::size_t l = 0; l < result.layer_outputs.size(); ++l) {
        tensors.push_back(host_view("layer_outputs." + std::to_string(l), result.layer_outputs[l]));
    }
    write_safetensors(
        r.out, tensors,
        {{"producer", "attngeo capture"}, {"model", r.model}, {"queries", r.queries}});
}

std::string run_generate(const GenerateRequest& r) {
    if (r.temperature != 0) throw InputError("--temperature: only 0 (greedy) is supported");
    if (r.steps < 1) throw InputError("-n: " + std::to_string(r.steps) + ", expected >= 1");
    const Transformer model = Transformer::load(r.model, LoadOptions{r.device, r.dtype});
    const ModelConfig& config = model.config();
    const std::string tokenizer_path = find_tokenizer(r.model, r.tokenizer);
    std::unique_ptr<Llama2cTokenizer> tokenizer;
    if (!tokenizer_path.empty())
        tokenizer = std::make_unique<Llama2cTokenizer>(tokenizer_path, config.vocab_size);
    std::vector<std::int64_t> prompt;
    if (!r.tokens_file.empty()) {
        prompt = read_token_file(r.tokens_file, false, config.vocab_size).front();
    } else {
        if (!tokenizer)
            throw InputError(
                "--prompt needs a tokenizer: pass --tokenizer tokenizer.bin or use --tokens FILE");
        // run.c's encode prepends BOS; a model without one cannot take such a prompt.
        if (config.bos_token_id < 0)
            throw InputError(
                "--prompt: the model has no BOS token id (" + missing_bos_reason(config) +
                "), and a llama2.c prompt starts with BOS; pass the prompt's ids with --tokens");
        for (int id : tokenizer->encode(r.prompt, /*bos=*/true, /*eos=*/false))
            prompt.push_back(id);
    }
    // run.c stops at BOS, which delimits sequences; a model without one runs for all the steps.
    const int bos = config.bos_token_id;
    std::vector<std::int64_t> sequence = {prompt.front()};
    std::string text;
    CaptureOptions options;
    options.all_logits = false;
    for (int pos = 0; pos < r.steps; ++pos) {
        std::int64_t next;
        if (pos + 1 < static_cast<int>(prompt.size())) {
            next = prompt[pos + 1];
        } else {
            const auto ids = torch::tensor(sequence, torch::kInt64).unsqueeze(0);
            next = model.forward(ids, options).logits.argmax(-1).item<std::int64_t>();
        }
        if (next == bos) break;  // run.c: BOS delimits sequences
        const std::string piece =
            tokenizer ? tokenizer->decode(static_cast<int>(sequence.back()), static_cast<int>(next))
                      : " " + std::to_string(next);
        const std::string shown = Llama2cTokenizer::printable(piece);  // run.c's safe_printf
        text += shown;
        std::cout << shown << std::flush;
        sequence.push_back(next);
    }
    std::cout << "\n";
    return text + "\n";
}

namespace {

// The scale of a synthetic weight: norms and the embedding 1, projections 1/√fan-in so that
// activations keep unit size through the layers.
double synthetic_scale(TensorId id, const ModelConfig& c) {
    switch (id) {
        case TensorId::embed:
        case TensorId::final_norm:
        case TensorId::attn_norm:
        case TensorId::mlp_norm:
            return 1.0;
        case TensorId::down:
            return 1.0 / std::sqrt(static_cast<double>(c.intermediate_size));
        default:
            return 1.0 / std::sqrt(static_cast<double>(c.hidden_size));
    }
}

// Random float32 weights under LLaMA's Hugging Face names (the one table in families/llama.cpp),
// drawn from torch's generator in the table's order.
MapTensorStore synthetic_llama_store(const ModelConfig& c) {
    MapTensorStore store("synthetic", "synthetic model");
    auto add = [&](const LlamaTensor& t, int layer) {
        const std::vector<std::int64_t> shape = llama_tensor_shape(t.id, c);
        auto values =
            std::make_shared<torch::Tensor>(torch::randn(shape) * synthetic_scale(t.id, c));
        HostTensor h;
        h.name = llama_hf_name(t.id, layer);
        h.file = "synthetic";
        h.shape = shape;
        h.data = values->data_ptr();
        h.bytes = static_cast<std::size_t>(values->numel()) * 4;
        h.owner = std::shared_ptr<const void>(values, values->data_ptr());
        store.add(std::move(h));
    };
    for (const LlamaTensor& t : llama_tensors()) {
        if (t.optional && c.tie_word_embeddings) continue;
        if (!t.per_layer) {
            add(t, 0);
            continue;
        }
        for (int layer = 0; layer < c.num_layers; ++layer)
            add(t, layer);
    }
    return store;
}

}  // namespace

struct SyntheticForward::Impl {
    std::unique_ptr<Transformer> model;
    torch::Tensor ids;
};

SyntheticForward::SyntheticForward(const SyntheticLlama& s, const std::string& device)
    : impl_(std::make_unique<Impl>()) {
    torch::manual_seed(0);
    LlamaSizes sizes;
    sizes.vocab_size = s.vocab;
    sizes.hidden_size = s.hidden;
    sizes.num_layers = s.layers;
    sizes.num_heads = s.heads;
    sizes.num_kv_heads = s.kv_heads;
    sizes.intermediate_size = s.intermediate;
    sizes.max_positions = s.tokens;
    const ModelConfig c = llama_config(sizes);
    const MapTensorStore store = synthetic_llama_store(c);
    impl_->model = std::make_unique<Transformer>(c, store, LoadOptions{device, "float32"});
    impl_->ids = torch::randint(s.vocab, {1, s.tokens}, torch::kInt64);
}

SyntheticForward::~SyntheticForward() = default;

void SyntheticForward::run(bool capture) {
    CaptureOptions options;
    options.queries = QueryRows::last;
    options.capture = capture;
    options.all_logits = false;
    const auto result = impl_->model->forward(impl_->ids, options);
    (void)result;
}

}  // namespace attngeo::empirical
