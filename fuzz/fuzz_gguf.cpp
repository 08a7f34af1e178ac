// Fuzzes a GGUF file through GgufCheckpoint, the loader `--model x.gguf` uses: header,
// metadata values, tensor infos, the LLaMA hyper-parameters and shapes, and the conversion of
// every tensor (F16/BF16/Q8_0 to float32, RoPE row permutation).
#include "empirical/model/gguf.hpp"
#include "fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace attngeo;
    auto& scratch = fuzz::ScratchFolder::instance();
    scratch.clear();
    const std::string path =
        scratch.write("model.gguf", std::string(reinterpret_cast<const char*>(data), size));
    fuzz::expect_only_input_errors([&] {
        const empirical::GgufCheckpoint checkpoint(path);
        (void)checkpoint.config();
        for (const auto& name : checkpoint.names())
            (void)checkpoint.get(name);
        (void)checkpoint.vocabulary();
    });
    return 0;
}
