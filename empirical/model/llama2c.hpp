// Torch-free reader for Andrej Karpathy's llama2.c checkpoints (.bin: 7 int32 header + float32
// tensors in run.c's order), exposing the weights under Hugging Face LLaMA names with q/k rows
// already converted from llama2.c's interleaved RoPE to rotate_half. Its tokenizer.bin is
// empirical/tokenizers/llama2c_tokenizer.hpp.
#pragma once
#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "common/tensor_store.hpp"
#include "empirical/model/model_config.hpp"

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

}  // namespace attngeo::empirical
