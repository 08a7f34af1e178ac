// The one interface of the text tokenizers (text ↔ token ids), one file each beside it:
// SentencePiece (sentencepiece_tokenizer.hpp), GPT-2 byte-level BPE (gpt2_bpe_tokenizer.hpp) and
// llama2.c's tokenizer.bin (llama2c_tokenizer.hpp); tokenizer_lookup.hpp picks one from a
// checkpoint's folder. Torch-free.
#pragma once
#include <string>
#include <vector>

namespace attngeo::empirical {

// Text ↔ token ids. encode() never adds BOS/EOS (callers prepend bos_id() themselves, as
// Hugging Face's LlamaTokenizer does); decode() of encode(text) gives `text` back for the
// tokenizers here. An id outside the vocabulary is an InputError naming the tokenizer file.
class Tokenizer {
  public:
    virtual ~Tokenizer() = default;
    virtual std::vector<int> encode(const std::string& text) const = 0;
    virtual std::string decode(const std::vector<int>& ids) const = 0;
    virtual int vocab_size() const = 0;
    virtual int bos_id() const { return -1; }  // -1: the tokenizer has none
    virtual int eos_id() const { return -1; }
    virtual std::string name() const = 0;  // kind and file, e.g. "sentencepiece:/m/tokenizer.model"
};

}  // namespace attngeo::empirical
