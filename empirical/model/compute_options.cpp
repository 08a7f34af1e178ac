// Parsing of --device and --dtype; see compute_options.hpp.
#include "empirical/model/compute_options.hpp"

#include "common/errors.hpp"
#include "common/flag_choice.hpp"

namespace attngeo::empirical {

namespace {
const FlagChoice<ComputeDtype> kDtypes[] = {{"float32", ComputeDtype::float32},
                                            {"bfloat16", ComputeDtype::bfloat16},
                                            {"float16", ComputeDtype::float16},
                                            {"float64", ComputeDtype::float64}};
}  // namespace

const char* to_string(ComputeDtype dtype) {
    return choice_name(dtype, kDtypes);
}

ComputeDtype parse_compute_dtype(const std::string& text) {
    return parse_choice(text, "--dtype", kDtypes);
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
