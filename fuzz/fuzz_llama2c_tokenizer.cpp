// Fuzzes llama2.c's tokenizer.bin through Llama2cBinTokenizer. The file does not store its
// vocabulary size, so the input's first two bytes (little-endian) give it, as a model header
// would; then a fixed text is encoded and every id decoded.
#include "empirical/tokenizers/llama2c_tokenizer.hpp"
#include "fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace attngeo;
    if (size < 2) return 0;
    const int vocab_size = data[0] | (data[1] << 8);
    auto& scratch = fuzz::ScratchFolder::instance();
    scratch.clear();
    const std::string path = scratch.write(
        "tokenizer.bin", std::string(reinterpret_cast<const char*>(data) + 2, size - 2));
    fuzz::expect_only_input_errors([&] {
        const empirical::Llama2cBinTokenizer tokenizer(path, vocab_size);
        const auto ids =
            tokenizer.encode("Once upon a time, Lily saw \xe2\x96\x81 caf\xc3\xa9 \xff!");
        (void)tokenizer.decode(ids);
        std::vector<int> every_id;
        for (int id = 0; id < tokenizer.vocab_size(); ++id)
            every_id.push_back(id);
        (void)tokenizer.decode(every_id);
    });
    return 0;
}
