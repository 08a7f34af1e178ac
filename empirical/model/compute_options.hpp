// Where and in which floating-point type a forward runs (`--device`, `--dtype`), parsed once
// from the flags into values the engines use. Torch-free: libtorch's device and dtype are made
// from these inside empirical/model/transformer.cpp.
#pragma once
#include <string>

namespace attngeo::empirical {

// The type of the weights and activations (α is float32 whatever this is).
enum class ComputeDtype { float32, bfloat16, float16, float64 };

// "float32" | "bfloat16" | "float16" | "float64"; InputError naming --dtype otherwise.
ComputeDtype parse_compute_dtype(const std::string& text);
const char* to_string(ComputeDtype dtype);

// cpu, or cuda with an optional device index (cuda:k). Whether that device exists is known only
// to libtorch, which checks it when the model is placed there.
struct DeviceSpec {
    bool cuda = false;
    int index = -1;  // cuda:k; −1 for plain "cuda" (libtorch's current device)
    bool is_cpu() const { return !cuda; }
};

// "cpu" | "cuda" | "cuda:k" (k a non-negative integer); InputError naming --device otherwise.
DeviceSpec parse_device(const std::string& text);
// The flag's spelling back: "cpu", "cuda", "cuda:k".
std::string to_string(const DeviceSpec& device);

}  // namespace attngeo::empirical
