// llama2.c checkpoint and tokenizer readers (see llama2c.hpp). The layout follows run.c's
// memory_map_weights() and build_tokenizer()/encode()/decode() (karpathy/llama2.c), re-derived
// from the format, not copied.
#include "empirical/llama2c.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <stdexcept>

#include "common/errors.hpp"
#include "empirical/architecture.hpp"

namespace attngeo::empirical {

namespace {

// The formats are little-endian and we reinterpret bytes as floats/ints directly.
bool host_is_little_endian() {
    const std::uint32_t one = 1;
    unsigned char first;
    std::memcpy(&first, &one, 1);
    return first == 1;
}

void require_little_endian_host() {
    if (!host_is_little_endian())
        throw std::runtime_error("llama2.c reader: big-endian hosts are not supported");
}

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

std::uint64_t regular_file_size(const std::string& path, const char* what) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec))
        throw InputError(path + ": cannot open " + what + " (not a readable regular file)");
    const auto size = std::filesystem::file_size(path, ec);
    if (ec) throw InputError(path + ": cannot open " + what + " (" + ec.message() + ")");
    return size;
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
    require_little_endian_host();
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

// ---- tokenizer ----

Llama2cTokenizer::Llama2cTokenizer(const std::string& path, int vocab_size) : path_(path) {
    require_little_endian_host();
    if (vocab_size <= 0)
        throw InputError(path + ": tokenizer needs a positive vocab_size, got " +
                         std::to_string(vocab_size));
    const std::uint64_t file_bytes = regular_file_size(path, "llama2.c tokenizer");
    std::ifstream in(path, std::ios::binary);
    std::string bytes(static_cast<std::size_t>(file_bytes), '\0');
    if (!in || !in.read(&bytes[0], static_cast<std::streamsize>(file_bytes)))
        throw InputError(path + ": cannot read llama2.c tokenizer");

    std::size_t pos = 0;
    auto truncated = [&](int token) {
        return InputError(path + ": llama2.c tokenizer truncated at token " +
                          std::to_string(token) + " of the expected vocab_size " +
                          std::to_string(vocab_size) + " (" + std::to_string(file_bytes) +
                          " bytes)");
    };
    std::uint32_t max_length = 0;
    if (bytes.size() < 4) throw truncated(0);
    std::memcpy(&max_length, bytes.data(), 4);
    pos = 4;
    if (max_length > static_cast<std::uint32_t>(std::numeric_limits<int>::max()))
        throw InputError(path + ": llama2.c tokenizer max_token_length " +
                         std::to_string(max_length) + " is not a plausible length");
    max_token_length_ = static_cast<int>(max_length);

    pieces_.reserve(static_cast<std::size_t>(vocab_size));
    scores_.reserve(static_cast<std::size_t>(vocab_size));
    for (int token = 0; token < vocab_size; ++token) {
        if (bytes.size() - pos < 8) throw truncated(token);
        float score;
        std::int32_t length;
        std::memcpy(&score, bytes.data() + pos, 4);
        std::memcpy(&length, bytes.data() + pos + 4, 4);
        pos += 8;
        // run.c sizes its merge buffer from max_token_length, so a longer piece is corrupt.
        if (length < 0 || static_cast<std::uint32_t>(length) > max_length)
            throw InputError(path + ": llama2.c tokenizer token " + std::to_string(token) +
                             " has length " + std::to_string(length) + ", expected 0.." +
                             std::to_string(max_length) + " (max_token_length)");
        if (bytes.size() - pos < static_cast<std::size_t>(length)) throw truncated(token);
        std::string piece = bytes.substr(pos, static_cast<std::size_t>(length));
        pos += static_cast<std::size_t>(length);
        piece.resize(std::strlen(piece.c_str()));  // C-string view, as run.c
        pieces_.push_back(std::move(piece));
        scores_.push_back(score);
    }
    if (pos != bytes.size())
        throw InputError(path + ": llama2.c tokenizer has " + std::to_string(bytes.size() - pos) +
                         " bytes after token " + std::to_string(vocab_size - 1) +
                         "; expected exactly vocab_size " + std::to_string(vocab_size) +
                         " tokens (does the tokenizer match the model?)");
    index();
}

Llama2cTokenizer::Llama2cTokenizer(std::vector<std::string> pieces, std::vector<float> scores,
                                   const std::string& source)
    : path_(source), pieces_(std::move(pieces)), scores_(std::move(scores)) {
    if (pieces_.empty() || pieces_.size() != scores_.size() ||
        pieces_.size() > static_cast<std::size_t>(std::numeric_limits<int>::max()))
        throw InputError(source + ": tokenizer needs one score per piece and at least one piece (" +
                         std::to_string(pieces_.size()) + " pieces, " +
                         std::to_string(scores_.size()) + " scores)");
    for (auto& piece : pieces_) {
        piece.resize(std::strlen(piece.c_str()));  // C-string view, as run.c
        max_token_length_ = std::max(max_token_length_, static_cast<int>(piece.size()));
    }
    index();
}

void Llama2cTokenizer::index() {
    ids_.clear();
    ids_.reserve(pieces_.size());
    for (std::size_t i = 0; i < pieces_.size(); ++i)
        ids_.emplace(pieces_[i], static_cast<int>(i));  // keeps the lowest id of duplicates
}

const std::string& Llama2cTokenizer::piece(int token) const {
    if (token < 0 || token >= vocab_size())
        throw InputError(path_ + ": token id " + std::to_string(token) + " outside [0, " +
                         std::to_string(vocab_size()) + ")");
    return pieces_[static_cast<std::size_t>(token)];
}

float Llama2cTokenizer::score(int token) const {
    piece(token);  // range check
    return scores_[static_cast<std::size_t>(token)];
}

int Llama2cTokenizer::lookup(const std::string& text) const {
    const auto it = ids_.find(text);
    return it == ids_.end() ? -1 : it->second;
}

std::string Llama2cTokenizer::decode(int previous, int token) const {
    std::string text = piece(token);
    // SentencePiece strips the dummy-prefix space of the first piece after BOS.
    if (previous == 1 && !text.empty() && text[0] == ' ') text.erase(0, 1);
    // Byte-fallback pieces "<0xXX>" stand for the raw byte.
    auto hex = [](char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; };
    if (text.size() == 6 && text.compare(0, 3, "<0x") == 0 && hex(text[3]) && hex(text[4]) &&
        text[5] == '>') {
        const auto byte = static_cast<char>(std::stoi(text.substr(3, 2), nullptr, 16));
        return byte == '\0' ? std::string() : std::string(1, byte);
    }
    return text;
}

std::string Llama2cTokenizer::printable(const std::string& piece) {
    if (piece.size() == 1) {
        const auto byte = static_cast<unsigned char>(piece[0]);
        if (!(std::isprint(byte) || std::isspace(byte))) return "";
    }
    return piece;
}

namespace {

// The text cut into characters: a byte and the UTF-8 continuation bytes (10xxxxxx) after it,
// four bytes at most (a longer run goes on as a new character at its fifth byte), so a
// malformed sequence still yields every byte exactly once.
std::vector<std::string> utf8_characters(const std::string& text) {
    const auto continues = [&](std::size_t i) {
        return (static_cast<unsigned char>(text[i]) & 0xC0) == 0x80;
    };
    std::vector<std::string> characters;
    for (std::size_t start = 0; start < text.size();) {
        std::size_t end = start + 1;
        while (end < text.size() && end - start < 4 && continues(end))
            ++end;
        characters.push_back(text.substr(start, end - start));
        start = end;
    }
    return characters;
}

// A merge is considered only above this score: run.c's search starts from it, so keeping it
// keeps the tokenisation identical even for vocabularies with extreme scores.
constexpr float kLowestMergeScore = -1e10f;

}  // namespace

// SentencePiece-style BPE by score (Kudo & Richardson 2018, as llama2.c applies it): a dummy
// prefix space, one token per character (its bytes as byte tokens when absent), then merges.
std::vector<int> Llama2cTokenizer::encode(const std::string& text_in, bool bos, bool eos) const {
    const std::string text(text_in.c_str());  // up to the first NUL, as run.c
    std::vector<int> tokens;
    if (bos) tokens.push_back(1);
    const auto append = [&](const std::string& characters) {
        const int id = lookup(characters);
        if (id >= 0) {
            tokens.push_back(id);
            return;
        }
        for (const unsigned char byte : characters) {
            const int byte_token = byte + 3;  // <0x00> is token 3 in llama2.c vocabularies
            if (byte_token >= vocab_size())
                throw InputError(path_ + ": tokenizer has no byte-fallback token for byte " +
                                 std::to_string(byte) + " (vocab_size " +
                                 std::to_string(vocab_size()) + ")");
            tokens.push_back(byte_token);
        }
    };
    // add_dummy_prefix: SentencePiece encodes "text" as " text" (the byte token for ' ' when
    // the vocabulary has no " ", where run.c would emit an invalid id).
    if (!text.empty()) append(" ");
    for (const std::string& character : utf8_characters(text))
        append(character);
    merge_by_score(tokens);
    if (eos) tokens.push_back(2);
    return tokens;
}

// Repeatedly replaces the adjacent pair whose concatenation is the highest-scoring vocabulary
// entry (the leftmost on ties) by that entry, until no pair is in the vocabulary. A leading BOS
// takes part, as in run.c (no vocabulary entry starts with its piece in practice).
void Llama2cTokenizer::merge_by_score(std::vector<int>& tokens) const {
    for (;;) {
        float top_score = kLowestMergeScore;
        int merged = -1;
        std::size_t at = 0;
        for (std::size_t i = 0; i + 1 < tokens.size(); ++i) {
            const int candidate = lookup(pieces_[static_cast<std::size_t>(tokens[i])] +
                                         pieces_[static_cast<std::size_t>(tokens[i + 1])]);
            if (candidate < 0) continue;
            const float score = scores_[static_cast<std::size_t>(candidate)];
            if (score > top_score) {
                top_score = score;
                merged = candidate;
                at = i;
            }
        }
        if (merged < 0) return;
        tokens[at] = merged;
        tokens.erase(tokens.begin() + static_cast<std::ptrdiff_t>(at) + 1);
    }
}

}  // namespace attngeo::empirical
