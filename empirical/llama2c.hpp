// Torch-free reader for Andrej Karpathy's llama2.c checkpoints (.bin: 7 int32 header + float32
// tensors in run.c's order) and tokenizer.bin, exposing the weights under Hugging Face LLaMA
// names with q/k rows already converted from llama2.c's interleaved RoPE to rotate_half.
#pragma once
#include <cstdint>
#include <fstream>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/tensor_store.hpp"
#include "empirical/model_config.hpp"

namespace attngeo::empirical {

// The header of a legacy (version 0) llama2.c checkpoint, as run.c's Config reads it.
struct Llama2cHeader {
    int dim = 0;         // hidden size d
    int hidden_dim = 0;  // FFN width
    int n_layers = 0;
    int n_heads = 0;                // query heads H
    int n_kv_heads = 0;             // key/value heads H_kv
    int vocab_size = 0;             // always positive here; the file's sign is `shared_classifier`
    int seq_len = 0;                // maximum positions
    bool shared_classifier = true;  // file's vocab_size > 0: the classifier is the embedding
    int head_dim() const { return dim / n_heads; }
    int kv_dim() const { return n_kv_heads * head_dim(); }
};

// Reorders the rows of one RoPE projection weight [n_heads·head_dim, in_features] (row-major)
// from the interleaved-pair layout (Meta / llama2.c / GGUF rotate pairs (2i, 2i+1)) to the
// Hugging Face rotate_half layout (pairs (i, i + head_dim/2)): within each head, row 2i + j
// moves to row i + j·head_dim/2. The same permutation transformers' LLaMA conversion applies,
// so a rotate_half forward on the result equals an interleaved forward on the input.
// Throws std::invalid_argument for an odd head_dim or a size mismatch (a programming error).
std::vector<float> rope_interleaved_to_half(const std::vector<float>& weight, int n_heads,
                                            int head_dim, std::int64_t in_features);

// A llama2.c .bin checkpoint, read whole into float32 buffers owned by the returned tensors.
// Whether `path` proves to be a legacy llama2.c checkpoint: a header that passes the checks below
// and whose tensors add up to the file's exact length. (A header with dim = 128 mod 256 starts
// with the byte 0x80, as a pickle does; only the sizes tell them apart.)
bool is_llama2c_checkpoint(const std::string& path);

// The constructor validates the header (positive sizes, vocab ≠ 0, dim % n_heads == 0,
// n_heads % n_kv_heads == 0, even head_dim) and that the file holds exactly the bytes the
// header implies, including run.c's legacy freq_cis block; anything else is an InputError
// naming the file. Names follow transformers' LlamaForCausalLM; lm_head.weight exists only
// when the file carries an unshared classifier (negative vocab_size in the header).
class Llama2cCheckpoint : public MapTensorStore {
  public:
    explicit Llama2cCheckpoint(const std::string& path);

    const Llama2cHeader& header() const { return header_; }
    // family llama, silu, θ = 10000, eps 1e-5 (run.c's constant), bos 1, eos 2,
    // max_positions = seq_len, tied when the classifier is shared.
    ModelConfig config() const;

  protected:
    std::string absence_note(const std::string& name) const override;

  private:
    void read_tensors(std::ifstream& in);

    Llama2cHeader header_;
};

// llama2.c's tokenizer.bin: u32 max_token_length, then per token f32 score, i32 byte length,
// bytes. The file does not store the vocabulary size, so the caller passes the model's; the
// file must hold exactly that many tokens (a mismatch is an InputError naming the file).
// Pieces are kept as run.c sees them: C strings, i.e. cut at an embedded NUL byte.
class Llama2cTokenizer {
  public:
    Llama2cTokenizer(const std::string& path, int vocab_size);
    // From pieces and scores held elsewhere, e.g. a GGUF vocabulary with SentencePiece's
    // "▁" already replaced by " " (ids 3..258 must be the byte tokens for encode's fallback).
    // `source` names them in messages; InputError when empty or of different lengths.
    Llama2cTokenizer(std::vector<std::string> pieces, std::vector<float> scores,
                     const std::string& source);

    int vocab_size() const { return static_cast<int>(pieces_.size()); }
    int max_token_length() const { return max_token_length_; }
    const std::string& piece(int token) const;
    float score(int token) const;
    const std::string& path() const { return path_; }

    // run.c's decode(): the piece of `token`, without its leading space when `previous` is
    // BOS (1), and the raw byte for a "<0xXX>" piece (an empty string for <0x00>, as run.c's
    // C strings give). InputError naming the file for an id outside [0, vocab_size).
    std::string decode(int previous, int token) const;
    // run.c's encode(): optional BOS, the dummy-prefix " " token when `text` is non-empty,
    // one token per UTF-8 code point found in the vocabulary (else its bytes as byte tokens,
    // id = byte + 3), then repeatedly merge the adjacent pair whose concatenation is the
    // vocabulary entry with the highest score (first pair on ties), then optional EOS (2).
    // `text` is read as a C string, up to its first NUL byte.
    std::vector<int> encode(const std::string& text, bool bos, bool eos) const;
    // run.c's safe_printf() filter for a decoded piece: single non-printable, non-space bytes
    // become "", everything else is returned unchanged. Reproduces run.c's stdout.
    static std::string printable(const std::string& piece);

  private:
    int lookup(const std::string& text) const;  // -1 when absent
    void merge_by_score(std::vector<int>& tokens) const;
    void index();  // fills ids_ from pieces_

    std::string path_;
    int max_token_length_ = 0;
    std::vector<std::string> pieces_;
    std::vector<float> scores_;
    std::unordered_map<std::string, int> ids_;  // piece -> lowest id with that piece
};

}  // namespace attngeo::empirical
