// The llama2.c checkpoint reader (see llama2c.hpp). The layout follows run.c's
// memory_map_weights() (karpathy/llama2.c), re-derived from the format, not copied; its
// tokenizer.bin is read in empirical/tokenizers/llama2c_tokenizer.cpp.
#include "empirical/model/llama2c.hpp"

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <stdexcept>

#include "common/binary_file.hpp"
#include "common/errors.hpp"
#include "empirical/model/architecture.hpp"

namespace attngeo::empirical {

namespace {

// Saturating arithmetic: header values are untrusted, and a saturated size simply fails the
// comparison with the file length instead of wrapping around to something plausible.
std::uint64_t saturating_mul(std::uint64_t a, std::uint64_t b) {
    if (a != 0 && b > std::numeric_limits<std::uint64_t>::max() / a)
        return std::numeric_limits<std::uint64_t>::max();
    return a * b;
}
std::uint64_t saturating_add(std::uint64_t a, std::uint64_t b) {
    if (b > std::numeric_limits<std::uint64_t>::max() - a)
        return std::numeric_limits<std::uint64_t>::max();
    return a + b;
}

std::string header_text(const Llama2cHeader& h) {
    return "dim " + std::to_string(h.dim) + ", hidden_dim " + std::to_string(h.hidden_dim) +
           ", n_layers " + std::to_string(h.n_layers) + ", n_heads " + std::to_string(h.n_heads) +
           ", n_kv_heads " + std::to_string(h.n_kv_heads) + ", vocab_size " +
           std::to_string(h.shared_classifier ? h.vocab_size : -h.vocab_size) + ", seq_len " +
           std::to_string(h.seq_len);
}

// Bytes of every float32 array run.c walks through, in order, for a validated header.
std::uint64_t expected_checkpoint_bytes(const Llama2cHeader& h) {
    const std::uint64_t dim = h.dim, hidden = h.hidden_dim, layers = h.n_layers,
                        vocab = h.vocab_size, kv_dim = static_cast<std::uint64_t>(h.kv_dim()),
                        seq = h.seq_len, head = static_cast<std::uint64_t>(h.head_dim());
    std::uint64_t floats = saturating_mul(vocab, dim);  // token embedding
    const std::uint64_t per_layer = saturating_add(
        saturating_add(saturating_mul(2, dim),                            // rms_att, rms_ffn
                       saturating_mul(dim, saturating_mul(2, dim))),      // wq, wo
        saturating_add(saturating_mul(2, saturating_mul(kv_dim, dim)),    // wk, wv
                       saturating_mul(3, saturating_mul(hidden, dim))));  // w1, w2, w3
    floats = saturating_add(floats, saturating_mul(layers, per_layer));
    floats = saturating_add(floats, dim);                        // rms_final
    floats = saturating_add(floats, saturating_mul(seq, head));  // freq_cis real + imag
    if (!h.shared_classifier) floats = saturating_add(floats, saturating_mul(vocab, dim));
    return saturating_add(7 * sizeof(std::int32_t), saturating_mul(floats, sizeof(float)));
}

class FloatReader {
  public:
    FloatReader(std::ifstream& in, const std::string& path) : in_(in), path_(path) {}
    std::vector<float> read(std::uint64_t count) {
        std::vector<float> values(count);
        in_.read(reinterpret_cast<char*>(values.data()),
                 static_cast<std::streamsize>(count * sizeof(float)));
        // The size was checked up front, so a short read means the file changed under us.
        if (!in_)
            throw InputError(path_ + ": llama2.c checkpoint ended early while reading weights");
        return values;
    }
    void skip(std::uint64_t count) {
        in_.seekg(static_cast<std::streamoff>(count * sizeof(float)), std::ios::cur);
        if (!in_) throw InputError(path_ + ": llama2.c checkpoint ended early");
    }

  private:
    std::ifstream& in_;
    const std::string& path_;
};

std::uint64_t element_count(const std::vector<std::int64_t>& shape) {
    std::uint64_t count = 1;
    for (const std::int64_t extent : shape)
        count *= static_cast<std::uint64_t>(extent);
    return count;
}

// The seven int32 of run.c's Config, validated; InputError naming the file otherwise.
Llama2cHeader read_header(std::ifstream& in, const std::string& path, std::uint64_t file_bytes) {
    std::int32_t raw[7] = {};
    if (file_bytes < sizeof(raw) || !in.read(reinterpret_cast<char*>(raw), sizeof(raw)))
        throw InputError(path + ": llama2.c checkpoint truncated: " + std::to_string(file_bytes) +
                         " bytes, expected at least the 28-byte header");
    // export.py's versioned formats start with the magic "ak42"; run.c reads only the legacy
    // headerless-magic layout, and so do we.
    if (static_cast<std::uint32_t>(raw[0]) == 0x616b3432u)
        throw InputError(path + ": llama2.c export version " + std::to_string(raw[1]) +
                         " file (magic ak42); expected the legacy format run.c reads "
                         "(export.py --version 0)");
    Llama2cHeader h;
    h.dim = raw[0];
    h.hidden_dim = raw[1];
    h.n_layers = raw[2];
    h.n_heads = raw[3];
    h.n_kv_heads = raw[4];
    h.shared_classifier = raw[5] > 0;
    h.vocab_size = raw[5] == std::numeric_limits<std::int32_t>::min() ? 0 : std::abs(raw[5]);
    h.seq_len = raw[6];
    const std::string context = " in the llama2.c header (" + header_text(h) + ")";
    if (h.dim <= 0 || h.hidden_dim <= 0 || h.n_layers <= 0 || h.n_heads <= 0 || h.n_kv_heads <= 0 ||
        h.vocab_size <= 0 || h.seq_len <= 0)
        throw InputError(path + ": expected positive sizes and a non-zero vocab_size" + context);
    if (h.dim % h.n_heads != 0)
        throw InputError(path + ": expected dim divisible by n_heads" + context);
    if (h.n_heads % h.n_kv_heads != 0)
        throw InputError(path + ": expected n_heads divisible by n_kv_heads" + context);
    if (h.head_dim() % 2 != 0)
        throw InputError(path + ": expected an even head size dim/n_heads for RoPE" + context);
    return h;
}

void require_exact_size(const Llama2cHeader& h, const std::string& path, std::uint64_t file_bytes) {
    const std::uint64_t expected = expected_checkpoint_bytes(h);
    if (file_bytes == expected) return;
    throw InputError(
        path + ": llama2.c checkpoint has " + std::to_string(file_bytes) +
        " bytes but its header (" + header_text(h) + ") implies " +
        (expected == std::numeric_limits<std::uint64_t>::max()
             ? std::string("over 2^64 bytes (not a llama2.c file?)")
             : std::to_string(expected) + (file_bytes < expected ? " (truncated?)"
                                                                 : " (trailing bytes: not a legacy "
                                                                   "llama2.c file?)")));
}

}  // namespace

std::vector<float> rope_interleaved_to_half(const std::vector<float>& weight, int n_heads,
                                            int head_dim, std::int64_t in_features) {
    if (n_heads <= 0 || head_dim <= 0 || head_dim % 2 != 0 || in_features < 0 ||
        weight.size() != static_cast<std::size_t>(n_heads) * static_cast<std::size_t>(head_dim) *
                             static_cast<std::size_t>(in_features))
        throw std::invalid_argument(
            "rope_interleaved_to_half: weight of " + std::to_string(weight.size()) +
            " floats is not [n_heads " + std::to_string(n_heads) + " · head_dim " +
            std::to_string(head_dim) + ", " + std::to_string(in_features) + "] with even head_dim");
    std::vector<float> out(weight.size());
    const std::size_t cols = static_cast<std::size_t>(in_features);
    const int half = head_dim / 2;
    for (int h = 0; h < n_heads; ++h) {
        for (int i = 0; i < half; ++i) {
            for (int j = 0; j < 2; ++j) {
                const std::size_t from = static_cast<std::size_t>(h * head_dim + 2 * i + j);
                const std::size_t to = static_cast<std::size_t>(h * head_dim + j * half + i);
                std::memcpy(out.data() + to * cols, weight.data() + from * cols,
                            cols * sizeof(float));
            }
        }
    }
    return out;
}

bool is_llama2c_checkpoint(const std::string& path) {
    try {
        const std::uint64_t file_bytes = regular_file_size(path, "llama2.c checkpoint");
        std::ifstream in(path, std::ios::binary);
        if (!in) return false;
        require_exact_size(read_header(in, path, file_bytes), path, file_bytes);
        return true;
    } catch (const InputError&) {
        return false;
    }
}

Llama2cCheckpoint::Llama2cCheckpoint(const std::string& path)
    : MapTensorStore(path, "llama2.c checkpoint") {
    require_little_endian_host("llama2.c reader");
    const std::uint64_t file_bytes = regular_file_size(path, "llama2.c checkpoint");
    std::ifstream in(path, std::ios::binary);
    if (!in) throw InputError(path + ": cannot open llama2.c checkpoint");
    header_ = read_header(in, path, file_bytes);
    require_exact_size(header_, path, file_bytes);
    read_tensors(in);
}

// Each llama2.c array holds one tensor kind for all layers ([n_layers, rows, cols]); the LLaMA
// table lists the per-layer kinds in the file's order.
void Llama2cCheckpoint::read_tensors(std::ifstream& in) {
    const std::string& path = describe();
    const ModelConfig shapes = config();
    FloatReader reader(in, path);
    auto read = [&](TensorId id, int layer) {
        const std::vector<std::int64_t> shape = llama_tensor_shape(id, shapes);
        std::vector<float> values = reader.read(element_count(shape));
        if (llama_tensor(id).rotary_rows)
            values = rope_interleaved_to_half(
                values, id == TensorId::q ? header_.n_heads : header_.n_kv_heads,
                header_.head_dim(), header_.dim);
        add(owned_float_tensor(llama_hf_name(id, layer), path, shape, std::move(values)));
    };
    read(TensorId::embed, 0);
    for (const LlamaTensor& t : llama_tensors())
        if (t.per_layer)
            for (int layer = 0; layer < header_.n_layers; ++layer)
                read(t.id, layer);
    read(TensorId::final_norm, 0);
    // Legacy freq_cis_real / freq_cis_imag [seq_len, head/2]: run.c recomputes RoPE, so do we.
    reader.skip(static_cast<std::uint64_t>(header_.seq_len) *
                static_cast<std::uint64_t>(header_.head_dim()));
    if (!header_.shared_classifier) read(TensorId::lm_head, 0);
}

std::string Llama2cCheckpoint::absence_note(const std::string& name) const {
    return name == llama_hf_name(TensorId::lm_head, 0)
               ? " (its classifier is shared with the embedding)"
               : "";
}

ModelConfig Llama2cCheckpoint::config() const {
    LlamaSizes sizes;
    sizes.vocab_size = header_.vocab_size;
    sizes.hidden_size = header_.dim;
    sizes.num_layers = header_.n_layers;
    sizes.num_heads = header_.n_heads;
    sizes.num_kv_heads = header_.n_kv_heads;
    sizes.head_dim = header_.head_dim();
    sizes.intermediate_size = header_.hidden_dim;
    sizes.max_positions = header_.seq_len;
    ModelConfig c = llama_config(sizes);
    c.norm_eps = 1e-5;  // run.c's rmsnorm constant
    c.tie_word_embeddings = header_.shared_classifier;
    c.bos_token_id = 1;
    c.eos_token_id = 2;
    return c;
}

}  // namespace attngeo::empirical
