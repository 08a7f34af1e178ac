// Fuzzes GPT-2's vocab.json and merges.txt (the input is vocab.json, kFileSeparator, then
// merges.txt) through Gpt2BpeTokenizer, then encodes a fixed text and decodes it.
#include "empirical/tokenizers/gpt2_bpe_tokenizer.hpp"
#include "fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace attngeo;
    auto& scratch = fuzz::ScratchFolder::instance();
    scratch.clear();
    const auto parts = fuzz::split_files(data, size);
    const std::string vocab = scratch.write("vocab.json", parts[0]);
    const std::string merges = scratch.write("merges.txt", parts.size() > 1 ? parts[1] : "");
    fuzz::expect_only_input_errors([&] {
        const empirical::Gpt2BpeTokenizer tokenizer(vocab, merges);
        const auto ids = tokenizer.encode("Hello world, it's 2024!  \xce\xb1\xce\xb2 \xff\n");
        (void)tokenizer.decode(ids);
    });
    return 0;
}
