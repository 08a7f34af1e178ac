// dtype helpers for host tensors; see tensor_store.hpp.
#include "common/tensor_store.hpp"

#include <cstring>
#include <stdexcept>

#include "common/errors.hpp"

namespace attngeo {

std::size_t dtype_size(DType dtype) {
    switch (dtype) {
        case DType::F64:
        case DType::I64:
            return 8;
        case DType::F32:
        case DType::I32:
            return 4;
        case DType::F16:
        case DType::BF16:
        case DType::I16:
            return 2;
        case DType::I8:
        case DType::U8:
        case DType::BOOL:
            return 1;
    }
    throw std::logic_error("dtype_size: unknown dtype");
}

const char* to_string(DType dtype) {
    switch (dtype) {
        case DType::F64:
            return "F64";
        case DType::F32:
            return "F32";
        case DType::F16:
            return "F16";
        case DType::BF16:
            return "BF16";
        case DType::I64:
            return "I64";
        case DType::I32:
            return "I32";
        case DType::I16:
            return "I16";
        case DType::I8:
            return "I8";
        case DType::U8:
            return "U8";
        case DType::BOOL:
            return "BOOL";
    }
    return "?";
}

std::int64_t HostTensor::numel() const {
    std::int64_t n = 1;
    for (auto s : shape)
        n *= s;
    return n;
}

void MapTensorStore::add(HostTensor tensor) {
    const std::string name = tensor.name;
    if (!tensors_.emplace(name, std::move(tensor)).second)
        throw std::logic_error("MapTensorStore::add: '" + source_ + "' already holds a tensor '" +
                               name + "'");
}

bool MapTensorStore::contains(const std::string& name) const {
    return tensors_.count(name) != 0;
}

HostTensor MapTensorStore::get(const std::string& name) const {
    const auto it = tensors_.find(name);
    if (it == tensors_.end())
        throw InputError(source_ + ": " + kind_ + " has no tensor '" + name + "'" +
                         absence_note(name));
    return it->second;
}

std::vector<std::string> MapTensorStore::names() const {
    std::vector<std::string> out;
    out.reserve(tensors_.size());
    for (const auto& entry : tensors_)
        out.push_back(entry.first);
    return out;
}

std::string MapTensorStore::absence_note(const std::string&) const {
    return "";
}

HostTensor tensor_view(std::string name, DType dtype, std::vector<std::int64_t> shape,
                       const void* data, std::size_t bytes, std::shared_ptr<const void> owner) {
    HostTensor t;
    t.name = std::move(name);
    t.dtype = dtype;
    t.shape = std::move(shape);
    t.data = data;
    t.bytes = bytes;
    t.owner = std::move(owner);
    return t;
}

HostTensor owned_float_tensor(std::string name, std::string file, std::vector<std::int64_t> shape,
                              std::vector<float> values) {
    auto buffer = std::make_shared<std::vector<float>>(std::move(values));
    HostTensor t;
    t.name = std::move(name);
    t.file = std::move(file);
    t.dtype = DType::F32;
    t.shape = std::move(shape);
    t.data = buffer->data();
    t.bytes = buffer->size() * sizeof(float);
    t.owner = std::shared_ptr<const void>(buffer, buffer->data());
    return t;
}

float half_to_float(std::uint16_t h) {
    const std::uint32_t sign = (h & 0x8000u) << 16;
    std::uint32_t exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ffu, bits;
    if (exponent == 0) {
        if (mantissa == 0) {
            bits = sign;
        } else {  // subnormal: normalise
            exponent = 127 - 15 + 1;
            while ((mantissa & 0x400u) == 0) {
                mantissa <<= 1;
                --exponent;
            }
            bits = sign | (exponent << 23) | ((mantissa & 0x3ffu) << 13);
        }
    } else if (exponent == 0x1f) {
        bits = sign | 0x7f800000u | (mantissa << 13);
    } else {
        bits = sign | ((exponent + 127 - 15) << 23) | (mantissa << 13);
    }
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
}

float bfloat16_to_float(std::uint16_t b) {
    const std::uint32_t bits = static_cast<std::uint32_t>(b) << 16;
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
}

}  // namespace attngeo
