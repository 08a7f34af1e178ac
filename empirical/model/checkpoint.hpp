// One place that decides what a `--model` path is (a Hugging Face folder, a llama2.c .bin, a
// GGUF file, or a refused pickle) and opens it: its format, its config and its tensors. Every
// command that loads a model (extract, capture, generate, Transformer::load) goes through here.
#pragma once
#include <memory>
#include <string>

#include "common/tensor_store.hpp"
#include "empirical/model/model_config.hpp"

namespace attngeo::empirical {

class Llama2cCheckpoint;

enum class CheckpointFormat {
    hugging_face,  // folder: config.json + safetensors (single or sharded)
    llama2c,       // llama2.c legacy .bin (7 int32 header + float32 tensors)
    gguf,          // llama.cpp GGUF v2/v3
};
const char* to_string(CheckpointFormat format);

// The format of `path`, from what it is (folder, extension, a pickle's first bytes) without
// reading the checkpoint. InputError naming --model for a missing path, a PyTorch pickle (never
// unpickled: it can run code) or an unknown kind of file.
CheckpointFormat checkpoint_format(const std::string& path);

// A loaded checkpoint: its tensors under Hugging Face names and its config.
struct Checkpoint {
    CheckpointFormat format = CheckpointFormat::hugging_face;
    std::string path;
    ModelConfig config;
    std::shared_ptr<const TensorStore> store;
    // The llama2.c reader behind `store` (its header and run.c's weight order), or null when
    // the checkpoint is another format.
    const Llama2cCheckpoint* llama2c() const;
};

// checkpoint_format(path), then that format's reader; every reader's InputError names the file.
Checkpoint open_checkpoint(const std::string& path);
// The reader of `format` (as checkpoint_format decided it earlier) on `path`.
Checkpoint open_checkpoint(const std::string& path, CheckpointFormat format);

}  // namespace attngeo::empirical
