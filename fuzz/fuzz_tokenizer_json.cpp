// Fuzzes a Hugging Face tokenizer.json (BPE model, ByteLevel pre-tokenizer, added_tokens)
// through Gpt2BpeTokenizer::from_tokenizer_json, then encodes a fixed text and decodes it.
#include "empirical/tokenizers/gpt2_bpe_tokenizer.hpp"
#include "fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace attngeo;
    auto& scratch = fuzz::ScratchFolder::instance();
    scratch.clear();
    const std::string path =
        scratch.write("tokenizer.json", std::string(reinterpret_cast<const char*>(data), size));
    fuzz::expect_only_input_errors([&] {
        const auto tokenizer = empirical::Gpt2BpeTokenizer::from_tokenizer_json(path);
        const auto ids = tokenizer->encode("Hello world, it's 2024!  \xce\xb1\xce\xb2 \xff\n");
        (void)tokenizer->decode(ids);
    });
    return 0;
}
