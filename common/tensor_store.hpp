// Host-side tensors from any checkpoint format (safetensors, llama2.c .bin, GGUF), named with
// the Hugging Face convention of the model's family, before they are copied to a device.
// Torch-free: the readers only map or decode bytes; empirical/model.cpp makes torch tensors.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace attngeo {

enum class DType { F64, F32, F16, BF16, I64, I32, I16, I8, U8, BOOL };
std::size_t dtype_size(DType dtype);
const char* to_string(DType dtype);

// A tensor's bytes on the host (memory-mapped, or owned by `owner` after decoding).
struct HostTensor {
    std::string name;  // e.g. "model.layers.0.self_attn.q_proj.weight"
    std::string file;  // where it came from, for messages
    DType dtype = DType::F32;
    std::vector<std::int64_t> shape;  // row-major, PyTorch order ([out, in] for a Linear weight)
    const void* data = nullptr;       // product(shape)·dtype_size(dtype) bytes, little-endian
    std::size_t bytes = 0;
    std::shared_ptr<const void> owner;  // keeps `data` alive (mapping or buffer)
    std::int64_t numel() const;
};

// A tensor viewing `bytes` bytes at `data`: kept alive by `owner` when given, by the caller
// otherwise (a buffer written out before it goes).
HostTensor tensor_view(std::string name, DType dtype, std::vector<std::int64_t> shape,
                       const void* data, std::size_t bytes, std::shared_ptr<const void> owner = {});

// A checkpoint's tensors by name.
class TensorStore {
  public:
    virtual ~TensorStore() = default;
    virtual bool contains(const std::string& name) const = 0;
    // Throws attngeo::InputError naming the file(s) and the tensor when absent.
    virtual HostTensor get(const std::string& name) const = 0;
    virtual std::vector<std::string> names() const = 0;
    virtual std::string describe() const = 0;  // path(s) for messages
};

// A store whose tensors are all held in memory, by name: the llama2.c and GGUF readers and
// the synthetic models fill one. `kind` names the source in messages ("GGUF file").
class MapTensorStore : public TensorStore {
  public:
    MapTensorStore(std::string source, std::string kind)
        : source_(std::move(source)), kind_(std::move(kind)) {}

    // std::logic_error when the name is taken (a reader's bug, not the file's).
    void add(HostTensor tensor);

    bool contains(const std::string& name) const override;
    HostTensor get(const std::string& name) const override;
    std::vector<std::string> names() const override;  // sorted by name
    std::string describe() const override { return source_; }

  protected:
    // Appended to the message for an absent tensor, e.g. why lm_head may be missing.
    virtual std::string absence_note(const std::string& name) const;

  private:
    std::string source_, kind_;
    std::map<std::string, HostTensor> tensors_;
};

// A float32 tensor owning its values.
HostTensor owned_float_tensor(std::string name, std::string file, std::vector<std::int64_t> shape,
                              std::vector<float> values);

// Little-endian half and bfloat16 to float (exact).
float half_to_float(std::uint16_t h);
float bfloat16_to_float(std::uint16_t b);

}  // namespace attngeo
