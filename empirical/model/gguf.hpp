// Torch-free reader for llama.cpp's GGUF (v2/v3) LLaMA checkpoints: typed metadata, the
// tokenizer vocabulary, and F32/F16/BF16/Q8_0 tensors converted to float32 under Hugging Face
// LLaMA names, with q/k rows moved from GGUF's interleaved RoPE layout to rotate_half.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "common/tensor_store.hpp"
#include "empirical/model/model_config.hpp"

namespace attngeo::empirical {

// GGUF metadata value types, with the file's numbering.
enum class GgufType : std::uint32_t {
    U8 = 0,
    I8 = 1,
    U16 = 2,
    I16 = 3,
    U32 = 4,
    I32 = 5,
    F32 = 6,
    BOOL = 7,
    STRING = 8,
    ARRAY = 9,
    U64 = 10,
    I64 = 11,
    F64 = 12,
};
const char* to_string(GgufType type);

// One metadata value. Which member holds it depends on `type`.
struct GgufValue {
    GgufType type = GgufType::U32;
    GgufType element_type = GgufType::U32;  // ARRAY: the type of every element
    std::int64_t integer = 0;  // U8..I64 and BOOL (0/1); U64 keeps its bits (cast to uint64_t)
    double real = 0;           // F32 (exactly widened), F64
    std::string string;        // STRING
    std::vector<GgufValue> elements;  // ARRAY [n]
    bool is_integer() const;          // U8..I64 (not BOOL)
    bool is_real() const { return type == GgufType::F32 || type == GgufType::F64; }
};

// A GGUF file of general.architecture "llama". The constructor parses and validates the whole
// file: magic, version 2 or 3 (little-endian), every metadata value (strings and arrays within
// the file, known value types, no duplicate keys), general.alignment (a power of two, default
// 32), every tensor info (≤ 4 dims, known and supported ggml type, Q8_0 rows a multiple of 32,
// aligned offset, data inside the file, no duplicate names), then the LLaMA hyper-parameters
// and every expected tensor's shape. Any failure is an InputError naming the file (and the key
// or tensor). Tensors are then held as float32: F32 data stays in the read-only mapping (when
// 4-byte aligned), F16/BF16/Q8_0 are converted into owned buffers, and attn_q/attn_k rows are
// permuted to rotate_half like Llama2cCheckpoint (rope_interleaved_to_half). Shapes are
// PyTorch order (ne reversed). Names map llama.cpp → transformers (token_embd.weight →
// model.embed_tokens.weight, blk.{i}.attn_q.weight → model.layers.{i}.self_attn.q_proj.weight,
// …, output.weight → lm_head.weight); a tensor with no mapping keeps its GGUF name.
class GgufCursor;  // gguf.cpp's bounds-checked reader of the mapped file

class GgufCheckpoint : public MapTensorStore {
  public:
    explicit GgufCheckpoint(const std::string& path);

    std::uint32_t version() const { return version_; }
    std::uint64_t alignment() const { return alignment_; }
    const std::map<std::string, GgufValue>& metadata() const { return metadata_; }
    const GgufValue* find(const std::string& key) const;  // nullptr when absent
    // Typed look-ups; InputError naming the file and key when absent (no default) or of the
    // wrong type. Integers accept any integer type; reals accept reals and integers.
    std::int64_t metadata_integer(const std::string& key) const;
    std::int64_t metadata_integer(const std::string& key, std::int64_t fallback) const;
    double metadata_real(const std::string& key, double fallback) const;
    std::string metadata_string(const std::string& key, const std::string& fallback) const;

    // family llama; sizes from llama.* keys; head_dim = llama.attention.key_length or
    // embedding_length / head_count; norm_eps the stored f32 epsilon widened exactly;
    // rope_theta = llama.rope.freq_base (default 10000); linear rope scaling factor when
    // present; max_positions = llama.context_length; vocab_size = number of tokens (else
    // embedding rows); tied when output.weight is absent; bos/eos from tokenizer.ggml.* (1, 2).
    ModelConfig config() const { return config_; }
    // The GGUF tensor name a returned name came from (e.g. "blk.0.attn_q.weight").
    std::string gguf_name(const std::string& name) const;

    // tokenizer.ggml.tokens / scores / token_type; empty when absent. Pieces are as stored
    // (SentencePiece vocabularies write a space as U+2581 "▁").
    const std::vector<std::string>& vocabulary() const { return vocabulary_; }
    const std::vector<float>& scores() const { return scores_; }
    const std::vector<int>& token_types() const { return token_types_; }

  protected:
    std::string absence_note(const std::string& name) const override;

  private:
    struct TensorInfo;  // one parsed tensor info, before conversion
    // The constructor's steps, in file order, then the checks and the conversion.
    void read_header(GgufCursor& in, std::uint64_t& n_tensors, std::uint64_t& n_kv);
    void read_metadata(GgufCursor& in, std::uint64_t n_kv);
    TensorInfo read_tensor_info(GgufCursor& in, std::uint64_t index,
                                std::set<std::string>& seen) const;
    std::uint64_t data_bytes(const TensorInfo& t, std::uint64_t row_length,
                             const std::string& label) const;
    void check_layout(const std::vector<TensorInfo>& infos, std::uint64_t data_start,
                      std::uint64_t file_size) const;
    void read_vocabulary();
    void build_config(const std::vector<TensorInfo>& infos);
    void read_rope_settings();
    void read_head_size();
    int vocabulary_size(const std::vector<TensorInfo>& infos) const;
    int positive_int(const std::string& key, std::int64_t value) const;
    void check_shapes(const std::vector<TensorInfo>& infos) const;
    void add_tensors(const std::vector<TensorInfo>& infos,
                     const std::shared_ptr<const void>& mapping, std::uint64_t data_start);

    std::uint32_t version_ = 0;
    std::uint64_t alignment_ = 32;
    std::map<std::string, GgufValue> metadata_;
    std::map<std::string, std::string> gguf_names_;  // HF name -> GGUF name
    ModelConfig config_;
    std::vector<std::string> vocabulary_;
    std::vector<float> scores_;
    std::vector<int> token_types_;
};

}  // namespace attngeo::empirical
