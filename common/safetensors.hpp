// Torch-free reading and writing of safetensors files (one file, or a Hugging Face folder with
// model.safetensors or a sharded model.safetensors.index.json). Every malformed header is an
// InputError naming the file, so a bad checkpoint never reaches a device as wrong numbers.
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "common/tensor_store.hpp"

namespace attngeo {

// DType from a safetensors dtype string ("F32", "BF16", ...); false when unknown.
bool parse_safetensors_dtype(const std::string& text, DType& dtype);

// One .safetensors file, memory-mapped read-only. The header is validated in the constructor
// (docs/design.md §10): header length within the file, valid JSON object, known dtypes, shapes of
// non-negative integers, offsets inside the data region, byte count = numel · dtype size, no two
// tensors overlapping, "__metadata__" an object of strings. Tensors returned by get() share the
// mapping through HostTensor::owner, so they stay valid after this object is destroyed.
// HostTensor::data points straight into the map and may be unaligned for its dtype (the format
// only pads the header to 8 bytes by convention); read elements with memcpy, never by a cast.
class SafetensorsFile : public TensorStore {
  public:
    explicit SafetensorsFile(const std::string& path);

    bool contains(const std::string& name) const override;
    HostTensor get(const std::string& name) const override;
    std::vector<std::string> names() const override;  // sorted by name
    std::string describe() const override { return path_; }

    const std::string& path() const { return path_; }
    // The optional "__metadata__" object (e.g. {"format": "pt"}); empty when absent.
    const std::map<std::string, std::string>& metadata() const { return metadata_; }
    std::size_t file_size() const { return file_size_; }

  private:
    struct Entry {
        DType dtype = DType::F32;
        std::vector<std::int64_t> shape;
        std::size_t offset = 0;  // from the start of the file, i.e. 8 + header length + begin
        std::size_t bytes = 0;
    };
    std::string path_;
    std::size_t file_size_ = 0;
    std::shared_ptr<const void> mapping_;  // whole file; munmap when the last user goes away
    std::map<std::string, Entry> entries_;
    std::map<std::string, std::string> metadata_;
};

// A Hugging Face model folder: model.safetensors if present (as transformers prefers it),
// otherwise model.safetensors.index.json whose "weight_map" assigns each tensor to a shard file
// in the same folder. Every referenced shard must exist and hold the tensors assigned to it, and
// no tensor may appear in two shards. A path to a single .safetensors file is accepted too.
// Folders holding only PyTorch pickles (pytorch_model.bin, *.bin, *.pt, *.pth) are refused with
// a message on how to convert them: unpickling executes arbitrary code, so they are never read.
class SafetensorsCheckpoint : public TensorStore {
  public:
    explicit SafetensorsCheckpoint(const std::string& folder_or_file);

    bool contains(const std::string& name) const override;
    HostTensor get(const std::string& name) const override;
    std::vector<std::string> names() const override;  // sorted by name
    std::string describe() const override { return description_; }

    // The files opened, in name order (one for an unsharded checkpoint).
    std::vector<std::string> files() const;

  private:
    void open_single(const std::string& file);
    void open_sharded(const std::string& folder, const std::string& index_path);

    std::string description_;
    std::map<std::string, std::shared_ptr<const SafetensorsFile>> shards_;  // by file name
    std::map<std::string, const SafetensorsFile*> owner_of_;                // tensor -> shard
};

// True when `folder` holds model.safetensors or model.safetensors.index.json.
bool is_safetensors_folder(const std::string& folder);

// Writes `tensors` (in the given order, data_offsets contiguous from 0) and `metadata` as a
// safetensors file whose header is padded with spaces to a multiple of 8 bytes like the
// reference implementation, through a temporary file and a rename so the file appears complete
// or not at all. Throws InputError naming `path` when it cannot be written, and
// std::invalid_argument for tensors that are inconsistent (a programming error): duplicate or
// reserved names, bytes != numel · dtype size, negative dimensions, null data.
void write_safetensors(const std::string& path, const std::vector<HostTensor>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

// The same file, with each tensor's bytes produced by `write_tensor(index, out)` instead of held
// in memory (a per-document array larger than RAM is copied through in pieces). The callback
// must write exactly numel · dtype size bytes; anything else is a std::logic_error.
struct TensorSpec {
    std::string name;
    DType dtype = DType::F32;
    std::vector<std::int64_t> shape;
};
void write_safetensors_streamed(const std::string& path, const std::vector<TensorSpec>& tensors,
                                const std::function<void(std::size_t, std::ostream&)>& write_tensor,
                                const std::map<std::string, std::string>& metadata = {});

// A Hugging Face sharded checkpoint in `folder`: the tensors, in the given order, cut into
// shards "model-0000i-of-0000k.safetensors" of at most `max_shard_bytes` of tensor data each (a
// larger tensor gets a shard alone), then "model.safetensors.index.json" with
// metadata.total_size and the weight_map, as transformers' save_pretrained writes them. Bytes
// are streamed by `write_tensor(index, out)` in the global order 0, 1, ... (one tensor in memory
// at a time), so a sequential random generator yields the same weights whatever the shard size.
// Returns the shard file names. Errors as write_safetensors_streamed.
std::vector<std::string> write_safetensors_sharded(
    const std::string& folder, const std::vector<TensorSpec>& tensors,
    std::uint64_t max_shard_bytes,
    const std::function<void(std::size_t, std::ostream&)>& write_tensor,
    const std::map<std::string, std::string>& metadata = {});

// A tensor shape as messages print it: "[2, 3, 4]"; a negative extent, one a reader leaves
// open, prints as "T".
std::string shape_text(const std::vector<std::int64_t>& shape);

}  // namespace attngeo
