// Fuzzes a Hugging Face config.json through read_hf_config, the reader every safetensors
// checkpoint goes through (model_type, sizes, rope_scaling, activation, ...).
#include "empirical/model/model_config.hpp"
#include "fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace attngeo;
    auto& scratch = fuzz::ScratchFolder::instance();
    scratch.clear();
    const std::string path =
        scratch.write("config.json", std::string(reinterpret_cast<const char*>(data), size));
    fuzz::expect_only_input_errors([&] { (void)empirical::read_hf_config(path); });
    return 0;
}
