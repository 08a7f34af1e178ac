// Fuzzes one .safetensors file through SafetensorsFile (the header: length, JSON, dtypes,
// shapes, offsets, overlaps, __metadata__), then reads every tensor's bytes as a consumer
// would, so an entry the header check let through that points outside the map shows up.
#include <cstring>

#include "common/safetensors.hpp"
#include "fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace attngeo;
    auto& scratch = fuzz::ScratchFolder::instance();
    scratch.clear();
    const std::string path =
        scratch.write("model.safetensors", std::string(reinterpret_cast<const char*>(data), size));
    fuzz::expect_only_input_errors([&] {
        const SafetensorsFile file(path);
        volatile unsigned char checksum = 0;
        for (const auto& name : file.names()) {
            const HostTensor tensor = file.get(name);
            const auto* bytes = static_cast<const unsigned char*>(tensor.data);
            for (std::size_t i = 0; i < tensor.bytes; ++i)
                checksum = checksum ^ bytes[i];
            if (tensor.numel() * static_cast<std::int64_t>(dtype_size(tensor.dtype)) !=
                static_cast<std::int64_t>(tensor.bytes))
                __builtin_trap();  // the header check promised bytes = numel · dtype size
        }
    });
    return 0;
}
