// Torch-free text tokenizers behind one interface: SentencePiece (tokenizer.model), GPT-2
// byte-level BPE (vocab.json + merges.txt or a Hugging Face tokenizer.json) and llama2.c's
// tokenizer.bin, plus tokenizer_for_model() which picks one from a checkpoint's folder.
#pragma once
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "empirical/llama2c.hpp"

namespace attngeo::empirical {

// Text ↔ token ids. encode() never adds BOS/EOS (callers prepend bos_id() themselves, as
// Hugging Face's LlamaTokenizer does); decode() of encode(text) gives `text` back for the
// tokenizers here. An id outside the vocabulary is an InputError naming the tokenizer file.
class Tokenizer {
  public:
    virtual ~Tokenizer();
    virtual std::vector<int> encode(const std::string& text) const = 0;
    virtual std::string decode(const std::vector<int>& ids) const = 0;
    virtual int vocab_size() const = 0;
    virtual int bos_id() const { return -1; }  // -1: the tokenizer has none
    virtual int eos_id() const { return -1; }
    virtual std::string name() const = 0;  // kind and file, e.g. "sentencepiece:/m/tokenizer.model"
};

class Llama2cBinTokenizer;

// A SentencePiece BPE tokenizer.model (LLaMA-2, Mistral, ...), read directly: the protobuf's
// pieces and scores, then SentencePiece's BPE (dummy-prefix space, characters, merge the
// best-scoring adjacent pair first, byte fallback) — the algorithm llama2.c's run.c implements.
// Not through libsentencepiece: Debian's libsentencepiece.so.0 exports its own protobuf
// internals, which crash any process that also loads libtorch's libprotobuf at start-up.
// Models that are not BPE with byte fallback and an identity normaliser are refused.
class SentencePieceTokenizer : public Tokenizer {
  public:
    explicit SentencePieceTokenizer(const std::string& model_path);
    ~SentencePieceTokenizer() override;
    std::vector<int> encode(const std::string& text) const override;
    std::string decode(const std::vector<int>& ids) const override;
    int vocab_size() const override;
    int bos_id() const override { return bos_; }
    int eos_id() const override { return eos_; }
    std::string name() const override { return "sentencepiece:" + path_; }

  private:
    std::string path_;
    std::unique_ptr<Llama2cBinTokenizer> bpe_;
    int bos_ = -1, eos_ = -1;
};

// OpenAI's GPT-2 byte-level BPE, token for token as encoder.py / transformers' slow
// GPT2Tokenizer: the pre-tokenisation regex
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// (hand-written scanner; \p{L}, \p{N} and \s from ICU's general categories and White_Space),
// bytes_to_unicode, then merges by rank. Invalid UTF-8 bytes are kept as single "other"
// characters, so their bytes survive the round trip. Special tokens in the text are
// not recognised: "<|endoftext|>" encodes as plain text.
class Gpt2BpeTokenizer : public Tokenizer {
  public:
    // OpenAI / Hugging Face files: vocab.json {"token": id} and merges.txt ("a b" per line,
    // an optional "#version" first line).
    Gpt2BpeTokenizer(const std::string& vocab_json, const std::string& merges_txt);
    // A Hugging Face tokenizer.json whose model is BPE (merges "a b" or ["a", "b"]) and whose
    // pre-tokenizer is ByteLevel; added_tokens are decoded literally.
    static std::unique_ptr<Gpt2BpeTokenizer> from_tokenizer_json(const std::string& path);

    std::vector<int> encode(const std::string& text) const override;
    std::string decode(const std::vector<int>& ids) const override;
    int vocab_size() const override { return static_cast<int>(id_to_token_.size()); }
    int bos_id() const override { return endoftext_id_; }
    int eos_id() const override { return endoftext_id_; }
    std::string name() const override { return "gpt2-bpe:" + source_; }

    // The regex's matches, as byte strings (exposed for tests).
    static std::vector<std::string> pre_tokenize(const std::string& text);

  private:
    Gpt2BpeTokenizer() = default;
    void finish();                                        // endoftext id, reverse vocabulary
    std::vector<int> bpe(const std::string& word) const;  // one pre-token → ids (cached)

    std::string source_;
    bool add_prefix_space_ = false;
    std::unordered_map<std::string, int> token_to_id_;  // byte-level string → id
    std::vector<std::string> id_to_token_;              // id → byte-level string
    std::map<int, std::string> added_tokens_;           // id → literal text (tokenizer.json)
    std::unordered_map<std::string, int> merge_rank_;   // first + '\0' + second → rank
    int endoftext_id_ = -1;
    mutable std::mutex cache_mutex_;
    mutable std::unordered_map<std::string, std::vector<int>> cache_;
};

// llama2.c's tokenizer.bin through Llama2cTokenizer: encode(text, no BOS, no EOS) (with
// run.c's dummy-prefix space), decode = run.c's decode() pieces concatenated, the first one
// decoded as if after BOS so the dummy prefix space is dropped. bos 1, eos 2.
class Llama2cBinTokenizer : public Tokenizer {
  public:
    Llama2cBinTokenizer(const std::string& path, int vocab_size);
    explicit Llama2cBinTokenizer(Llama2cTokenizer tokenizer);
    std::vector<int> encode(const std::string& text) const override;
    std::string decode(const std::vector<int>& ids) const override;
    int vocab_size() const override { return tokenizer_.vocab_size(); }
    int bos_id() const override { return 1; }
    int eos_id() const override { return 2; }
    std::string name() const override { return "llama2c:" + tokenizer_.path(); }

  private:
    Llama2cTokenizer tokenizer_;
};

// The tokenizer of a checkpoint: `model_path` is its folder or a file in it (.bin, .gguf,
// .safetensors). In that folder, first found wins: tokenizer.model (SentencePiece),
// tokenizer.json with a BPE model (Gpt2Bpe), vocab.json + merges.txt (Gpt2Bpe),
// tokenizer.bin or tok*.bin (llama2.c). For llama2.c the vocabulary size is `vocab_size` when
// positive, else config.json's "vocab_size", else the header of `model_path` when it is a
// llama2.c .bin, else the number of records in the file. InputError naming the folder when
// none is there. A GGUF file's embedded vocabulary is not read here.
std::unique_ptr<Tokenizer> tokenizer_for_model(const std::string& model_path, int vocab_size = 0);

// The folder a model's sibling files (tokenizer, config) are looked up in: the model itself
// when it is a folder, else its parent, which is "." for a bare file name (`--model m.bin`).
std::filesystem::path model_folder(const std::string& model_path);

}  // namespace attngeo::empirical
