// Which tokenizer a checkpoint has: the files of its folder decide (tokenizer_for_model), and
// the folder a model's sibling files are looked up in (model_folder). Torch-free.
#pragma once
#include <filesystem>
#include <memory>
#include <string>

#include "empirical/tokenizers/tokenizer.hpp"

namespace attngeo::empirical {

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
