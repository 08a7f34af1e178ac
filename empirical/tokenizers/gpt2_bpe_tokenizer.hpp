// OpenAI's GPT-2 byte-level BPE from vocab.json + merges.txt or a Hugging Face tokenizer.json,
// written out here: the pre-tokenisation regex as a scanner over ICU's character classes,
// bytes_to_unicode and rank-ordered merges. Torch-free.
#pragma once
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "empirical/tokenizers/tokenizer.hpp"

namespace attngeo::empirical {

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

}  // namespace attngeo::empirical
