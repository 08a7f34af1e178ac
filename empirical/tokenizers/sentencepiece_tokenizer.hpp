// SentencePiece's tokenizer.model (LLaMA-2, Mistral, ...) read directly: its protobuf's pieces
// and scores, encoded by the BPE of llama2c_tokenizer.hpp. Torch-free.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "empirical/tokenizers/tokenizer.hpp"

namespace attngeo::empirical {

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

}  // namespace attngeo::empirical
