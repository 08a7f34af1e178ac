// Host-side tensors from any checkpoint format (safetensors, llama2.c .bin, GGUF), named with
// the Hugging Face convention of the model's family, before they are copied to a device.
// Torch-free: the readers only map or decode bytes; empirical/model.cpp makes torch tensors.
#pragma once
#include <cstdint>
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

// Little-endian half and bfloat16 to float (exact).
float half_to_float(std::uint16_t h);
float bfloat16_to_float(std::uint16_t b);

}  // namespace attngeo
