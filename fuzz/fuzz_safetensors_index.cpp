// Fuzzes a sharded Hugging Face folder through SafetensorsCheckpoint: the input is
// model.safetensors.index.json, then (after kFileSeparator) the shard files shard-1.safetensors
// and shard-2.safetensors, so both the weight_map and the shards it points at are mutated.
#include "common/safetensors.hpp"
#include "fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace attngeo;
    auto& scratch = fuzz::ScratchFolder::instance();
    scratch.clear();
    const auto parts = fuzz::split_files(data, size);
    scratch.write("model.safetensors.index.json", parts[0]);
    for (std::size_t i = 1; i < parts.size() && i <= 2; ++i)
        scratch.write("shard-" + std::to_string(i) + ".safetensors", parts[i]);
    fuzz::expect_only_input_errors([&] {
        const SafetensorsCheckpoint checkpoint(scratch.path().string());
        for (const auto& name : checkpoint.names())
            (void)checkpoint.get(name);
        (void)checkpoint.files();
    });
    return 0;
}
