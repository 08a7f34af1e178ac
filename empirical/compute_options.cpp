// Parsing of --device and --dtype; see compute_options.hpp.
#include "empirical/compute_options.hpp"

#include "common/errors.hpp"

namespace attngeo::empirical {

ComputeDtype parse_compute_dtype(const std::string& text) {
    for (ComputeDtype dtype : {ComputeDtype::float32, ComputeDtype::bfloat16, ComputeDtype::float16,
                               ComputeDtype::float64})
        if (text == to_string(dtype)) return dtype;
    throw InputError("--dtype: '" + text + "', expected float32, bfloat16, float16 or float64");
}

const char* to_string(ComputeDtype dtype) {
    switch (dtype) {
        case ComputeDtype::float32:
            return "float32";
        case ComputeDtype::bfloat16:
            return "bfloat16";
        case ComputeDtype::float16:
            return "float16";
        case ComputeDtype::float64:
            return "float64";
    }
    return "float32";
}

DeviceSpec parse_device(const std::string& text) {
    if (text == "cpu") return {};
    if (text == "cuda") return {true, -1};
    if (text.rfind("cuda", 0) != 0 || text.size() < 5 || text[4] != ':')
        throw InputError("--device: '" + text + "', expected cpu, cuda or cuda:k");
    const std::string digits = text.substr(5);
    // Up to 9 digits: any device index fits an int, and the flag's spelling comes back unchanged.
    const bool integer = !digits.empty() && digits.size() <= 9 &&
                         (digits == "0" || digits.front() != '0') &&
                         digits.find_first_not_of("0123456789") == std::string::npos;
    if (!integer) throw InputError("--device: '" + text + "', expected cuda:k with an integer k");
    return {true, std::stoi(digits)};
}

std::string to_string(const DeviceSpec& device) {
    if (!device.cuda) return "cpu";
    return device.index < 0 ? "cuda" : "cuda:" + std::to_string(device.index);
}

}  // namespace attngeo::empirical
