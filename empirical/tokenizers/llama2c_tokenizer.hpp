// llama2.c's tokenizer.bin and run.c's encode()/decode() over it (Llama2cTokenizer, also the
// BPE of SentencePiece models), and the same behind the Tokenizer interface
// (Llama2cBinTokenizer). Torch-free.
#pragma once
#include <string>
#include <unordered_map>
#include <vector>

#include "empirical/tokenizers/tokenizer.hpp"

namespace attngeo::empirical {

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

}  // namespace attngeo::empirical
