// Fuzzes a `--tokens` file through read_token_file as capture (one batch of equal lines) and
// extract (documents of any length, ids below a vocabulary) read it.
#include "empirical/tokenizers/token_file.hpp"
#include "fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace attngeo;
    auto& scratch = fuzz::ScratchFolder::instance();
    scratch.clear();
    const std::string path =
        scratch.write("ids.txt", std::string(reinterpret_cast<const char*>(data), size));
    fuzz::expect_only_input_errors([&] { (void)empirical::read_token_file(path, true); });
    fuzz::expect_only_input_errors([&] { (void)empirical::read_token_file(path, false, 512); });
    return 0;
}
