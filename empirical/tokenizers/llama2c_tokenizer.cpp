// llama2.c's tokenizer.bin (see llama2c_tokenizer.hpp). The layout and the algorithms follow
// run.c's build_tokenizer()/encode()/decode() (karpathy/llama2.c), re-derived from the format,
// not copied.
#include "empirical/tokenizers/llama2c_tokenizer.hpp"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <limits>

#include "common/binary_file.hpp"
#include "common/errors.hpp"

namespace attngeo::empirical {

Llama2cTokenizer::Llama2cTokenizer(const std::string& path, int vocab_size) : path_(path) {
    require_little_endian_host("llama2.c reader");
    if (vocab_size <= 0)
        throw InputError(path + ": tokenizer needs a positive vocab_size, got " +
                         std::to_string(vocab_size));
    const std::uint64_t file_bytes = regular_file_size(path, "llama2.c tokenizer");
    std::ifstream in(path, std::ios::binary);
    std::string bytes(static_cast<std::size_t>(file_bytes), '\0');
    if (!in || !in.read(&bytes[0], static_cast<std::streamsize>(file_bytes)))
        throw InputError(path + ": cannot read llama2.c tokenizer");

    std::size_t pos = 0;
    auto truncated = [&](int token) {
        return InputError(path + ": llama2.c tokenizer truncated at token " +
                          std::to_string(token) + " of the expected vocab_size " +
                          std::to_string(vocab_size) + " (" + std::to_string(file_bytes) +
                          " bytes)");
    };
    std::uint32_t max_length = 0;
    if (bytes.size() < 4) throw truncated(0);
    std::memcpy(&max_length, bytes.data(), 4);
    pos = 4;
    if (max_length > static_cast<std::uint32_t>(std::numeric_limits<int>::max()))
        throw InputError(path + ": llama2.c tokenizer max_token_length " +
                         std::to_string(max_length) + " is not a plausible length");
    max_token_length_ = static_cast<int>(max_length);

    pieces_.reserve(static_cast<std::size_t>(vocab_size));
    scores_.reserve(static_cast<std::size_t>(vocab_size));
    for (int token = 0; token < vocab_size; ++token) {
        if (bytes.size() - pos < 8) throw truncated(token);
        float score;
        std::int32_t length;
        std::memcpy(&score, bytes.data() + pos, 4);
        std::memcpy(&length, bytes.data() + pos + 4, 4);
        pos += 8;
        // run.c sizes its merge buffer from max_token_length, so a longer piece is corrupt.
        if (length < 0 || static_cast<std::uint32_t>(length) > max_length)
            throw InputError(path + ": llama2.c tokenizer token " + std::to_string(token) +
                             " has length " + std::to_string(length) + ", expected 0.." +
                             std::to_string(max_length) + " (max_token_length)");
        if (bytes.size() - pos < static_cast<std::size_t>(length)) throw truncated(token);
        std::string piece = bytes.substr(pos, static_cast<std::size_t>(length));
        pos += static_cast<std::size_t>(length);
        piece.resize(std::strlen(piece.c_str()));  // C-string view, as run.c
        pieces_.push_back(std::move(piece));
        scores_.push_back(score);
    }
    if (pos != bytes.size())
        throw InputError(path + ": llama2.c tokenizer has " + std::to_string(bytes.size() - pos) +
                         " bytes after token " + std::to_string(vocab_size - 1) +
                         "; expected exactly vocab_size " + std::to_string(vocab_size) +
                         " tokens (does the tokenizer match the model?)");
    index();
}

Llama2cTokenizer::Llama2cTokenizer(std::vector<std::string> pieces, std::vector<float> scores,
                                   const std::string& source)
    : path_(source), pieces_(std::move(pieces)), scores_(std::move(scores)) {
    if (pieces_.empty() || pieces_.size() != scores_.size() ||
        pieces_.size() > static_cast<std::size_t>(std::numeric_limits<int>::max()))
        throw InputError(source + ": tokenizer needs one score per piece and at least one piece (" +
                         std::to_string(pieces_.size()) + " pieces, " +
                         std::to_string(scores_.size()) + " scores)");
    for (auto& piece : pieces_) {
        piece.resize(std::strlen(piece.c_str()));  // C-string view, as run.c
        max_token_length_ = std::max(max_token_length_, static_cast<int>(piece.size()));
    }
    index();
}

void Llama2cTokenizer::index() {
    ids_.clear();
    ids_.reserve(pieces_.size());
    for (std::size_t i = 0; i < pieces_.size(); ++i)
        ids_.emplace(pieces_[i], static_cast<int>(i));  // keeps the lowest id of duplicates
}

const std::string& Llama2cTokenizer::piece(int token) const {
    if (token < 0 || token >= vocab_size())
        throw InputError(path_ + ": token id " + std::to_string(token) + " outside [0, " +
                         std::to_string(vocab_size()) + ")");
    return pieces_[static_cast<std::size_t>(token)];
}

float Llama2cTokenizer::score(int token) const {
    piece(token);  // range check
    return scores_[static_cast<std::size_t>(token)];
}

int Llama2cTokenizer::lookup(const std::string& text) const {
    const auto it = ids_.find(text);
    return it == ids_.end() ? -1 : it->second;
}

std::string Llama2cTokenizer::decode(int previous, int token) const {
    std::string text = piece(token);
    // SentencePiece strips the dummy-prefix space of the first piece after BOS.
    if (previous == 1 && !text.empty() && text[0] == ' ') text.erase(0, 1);
    // Byte-fallback pieces "<0xXX>" stand for the raw byte.
    auto hex = [](char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; };
    if (text.size() == 6 && text.compare(0, 3, "<0x") == 0 && hex(text[3]) && hex(text[4]) &&
        text[5] == '>') {
        const auto byte = static_cast<char>(std::stoi(text.substr(3, 2), nullptr, 16));
        return byte == '\0' ? std::string() : std::string(1, byte);
    }
    return text;
}

std::string Llama2cTokenizer::printable(const std::string& piece) {
    if (piece.size() == 1) {
        const auto byte = static_cast<unsigned char>(piece[0]);
        if (!(std::isprint(byte) || std::isspace(byte))) return "";
    }
    return piece;
}

namespace {

// The text cut into characters: a byte and the UTF-8 continuation bytes (10xxxxxx) after it,
// four bytes at most (a longer run goes on as a new character at its fifth byte), so a
// malformed sequence still yields every byte exactly once.
std::vector<std::string> utf8_characters(const std::string& text) {
    const auto continues = [&](std::size_t i) {
        return (static_cast<unsigned char>(text[i]) & 0xC0) == 0x80;
    };
    std::vector<std::string> characters;
    for (std::size_t start = 0; start < text.size();) {
        std::size_t end = start + 1;
        while (end < text.size() && end - start < 4 && continues(end))
            ++end;
        characters.push_back(text.substr(start, end - start));
        start = end;
    }
    return characters;
}

// A merge is considered only above this score: run.c's search starts from it, so keeping it
// keeps the tokenisation identical even for vocabularies with extreme scores.
constexpr float kLowestMergeScore = -1e10f;

}  // namespace

// SentencePiece-style BPE by score (Kudo & Richardson 2018, as llama2.c applies it): a dummy
// prefix space, one token per character (its bytes as byte tokens when absent), then merges.
std::vector<int> Llama2cTokenizer::encode(const std::string& text_in, bool bos, bool eos) const {
    const std::string text(text_in.c_str());  // up to the first NUL, as run.c
    std::vector<int> tokens;
    if (bos) tokens.push_back(1);
    const auto append = [&](const std::string& characters) {
        const int id = lookup(characters);
        if (id >= 0) {
            tokens.push_back(id);
            return;
        }
        for (const unsigned char byte : characters) {
            const int byte_token = byte + 3;  // <0x00> is token 3 in llama2.c vocabularies
            if (byte_token >= vocab_size())
                throw InputError(path_ + ": tokenizer has no byte-fallback token for byte " +
                                 std::to_string(byte) + " (vocab_size " +
                                 std::to_string(vocab_size()) + ")");
            tokens.push_back(byte_token);
        }
    };
    // add_dummy_prefix: SentencePiece encodes "text" as " text" (the byte token for ' ' when
    // the vocabulary has no " ", where run.c would emit an invalid id).
    if (!text.empty()) append(" ");
    for (const std::string& character : utf8_characters(text))
        append(character);
    merge_by_score(tokens);
    if (eos) tokens.push_back(2);
    return tokens;
}

// Repeatedly replaces the adjacent pair whose concatenation is the highest-scoring vocabulary
// entry (the leftmost on ties) by that entry, until no pair is in the vocabulary. A leading BOS
// takes part, as in run.c (no vocabulary entry starts with its piece in practice).
void Llama2cTokenizer::merge_by_score(std::vector<int>& tokens) const {
    for (;;) {
        float top_score = kLowestMergeScore;
        int merged = -1;
        std::size_t at = 0;
        for (std::size_t i = 0; i + 1 < tokens.size(); ++i) {
            const int candidate = lookup(pieces_[static_cast<std::size_t>(tokens[i])] +
                                         pieces_[static_cast<std::size_t>(tokens[i + 1])]);
            if (candidate < 0) continue;
            const float score = scores_[static_cast<std::size_t>(candidate)];
            if (score > top_score) {
                top_score = score;
                merged = candidate;
                at = i;
            }
        }
        if (merged < 0) return;
        tokens[at] = merged;
        tokens.erase(tokens.begin() + static_cast<std::ptrdiff_t>(at) + 1);
    }
}

Llama2cBinTokenizer::Llama2cBinTokenizer(const std::string& path, int vocab_size)
    : tokenizer_(path, vocab_size) {}

Llama2cBinTokenizer::Llama2cBinTokenizer(Llama2cTokenizer tokenizer)
    : tokenizer_(std::move(tokenizer)) {}

std::vector<int> Llama2cBinTokenizer::encode(const std::string& text) const {
    return tokenizer_.encode(text, /*bos=*/false, /*eos=*/false);
}

std::string Llama2cBinTokenizer::decode(const std::vector<int>& ids) const {
    std::string text;
    int previous = 1;  // as after BOS: the first piece loses the dummy-prefix space
    for (const int id : ids) {
        text += tokenizer_.decode(previous, id);
        previous = id;
    }
    return text;
}

}  // namespace attngeo::empirical
