// Fuzzes a SentencePiece tokenizer.model (protobuf read by hand) through
// SentencePieceTokenizer, then encodes a fixed text (byte fallback included) and decodes it.
#include "empirical/tokenizers/sentencepiece_tokenizer.hpp"
#include "fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace attngeo;
    auto& scratch = fuzz::ScratchFolder::instance();
    scratch.clear();
    const std::string path =
        scratch.write("tokenizer.model", std::string(reinterpret_cast<const char*>(data), size));
    fuzz::expect_only_input_errors([&] {
        const empirical::SentencePieceTokenizer tokenizer(path);
        const auto ids = tokenizer.encode("Hello, world \xf0\x9f\x98\x80 caf\xc3\xa9\n\t\xfe");
        (void)tokenizer.decode(ids);
        std::vector<int> first_ids;
        for (int id = 0; id < tokenizer.vocab_size() && id < 300; ++id)
            first_ids.push_back(id);
        (void)tokenizer.decode(first_ids);
    });
    return 0;
}
