// Fuzzes a llama2.c .bin checkpoint through Llama2cCheckpoint (the 7-int header, the sizes it
// implies against the file size, the tensors and their RoPE permutation) and its config().
#include "empirical/model/llama2c.hpp"
#include "fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace attngeo;
    auto& scratch = fuzz::ScratchFolder::instance();
    scratch.clear();
    const std::string path =
        scratch.write("model.bin", std::string(reinterpret_cast<const char*>(data), size));
    fuzz::expect_only_input_errors([&] {
        const empirical::Llama2cCheckpoint checkpoint(path);
        (void)checkpoint.config();
        for (const auto& name : checkpoint.names())
            (void)checkpoint.get(name);
    });
    return 0;
}
