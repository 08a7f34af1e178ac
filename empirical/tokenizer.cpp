// Tokenizers behind attngeo::empirical::Tokenizer: SentencePiece BPE models read directly, GPT-2
// byte-level BPE written out here (regex scanner with ICU character classes, bytes_to_unicode,
// rank-ordered merges), llama2.c's tokenizer.bin, and the folder lookup tokenizer_for_model.
#include "empirical/tokenizer.hpp"

#include <unicode/uchar.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <utility>

#include "common/errors.hpp"
#include "common/json_file.hpp"

namespace attngeo::empirical {

namespace fs = std::filesystem;

namespace {

std::string file_label(const std::string& path) {
    return "'" + path + "'";
}

void require_file(const std::string& path, const std::string& what) {
    std::error_code ec;
    if (!fs::is_regular_file(path, ec)) {
        throw InputError(file_label(path) + ": file not found (expected " + what + ")");
    }
}

nlohmann::json read_json(const std::string& path, const std::string& what) {
    require_file(path, what);
    return read_json_file(path, what);
}

void append_utf8(std::string& out, char32_t cp) {
    if (cp < 0x80) {
        out += static_cast<char>(cp);
    } else if (cp < 0x800) {
        out += static_cast<char>(0xC0 | (cp >> 6));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out += static_cast<char>(0xE0 | (cp >> 12));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
        out += static_cast<char>(0xF0 | (cp >> 18));
        out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    }
}

// One character of the text: its code point and where its bytes are. A byte that does not
// start a well-formed UTF-8 sequence (overlong, surrogate, > U+10FFFF, truncated) becomes a
// one-byte unit with code point U+FFFD, which the classes below treat as "other".
struct Unit {
    char32_t cp;
    std::size_t begin;
    std::size_t length;
};

constexpr char32_t kInvalid = 0xFFFD;

std::vector<Unit> decode_utf8(const std::string& text) {
    std::vector<Unit> units;
    units.reserve(text.size());
    const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[i]); };
    std::size_t i = 0;
    while (i < text.size()) {
        const unsigned char b0 = byte(i);
        std::size_t length = 0;
        char32_t cp = 0;
        char32_t minimum = 0;
        if (b0 < 0x80) {
            length = 1, cp = b0;
        } else if ((b0 & 0xE0) == 0xC0) {
            length = 2, cp = b0 & 0x1F, minimum = 0x80;
        } else if ((b0 & 0xF0) == 0xE0) {
            length = 3, cp = b0 & 0x0F, minimum = 0x800;
        } else if ((b0 & 0xF8) == 0xF0) {
            length = 4, cp = b0 & 0x07, minimum = 0x10000;
        }
        bool ok = length > 0 && i + length <= text.size();
        for (std::size_t k = 1; ok && k < length; ++k) {
            if ((byte(i + k) & 0xC0) != 0x80) ok = false;
            cp = (cp << 6) | (byte(i + k) & 0x3F);
        }
        if (ok && length > 1) {
            ok = cp >= minimum && cp <= 0x10FFFF && !(cp >= 0xD800 && cp <= 0xDFFF);
        }
        if (ok) {
            units.push_back({cp, i, length});
            i += length;
        } else {
            units.push_back({kInvalid, i, 1});
            i += 1;
        }
    }
    return units;
}

// \p{L}, \p{N} (general categories L* and N*) and \s (the White_Space property), from ICU.
bool is_letter(char32_t cp) {
    return (U_GET_GC_MASK(static_cast<UChar32>(cp)) & U_GC_L_MASK) != 0;
}
bool is_number(char32_t cp) {
    return (U_GET_GC_MASK(static_cast<UChar32>(cp)) & U_GC_N_MASK) != 0;
}
bool is_space(char32_t cp) {
    return u_isUWhiteSpace(static_cast<UChar32>(cp)) != 0;
}
bool is_other(char32_t cp) {
    return !is_space(cp) && !is_letter(cp) && !is_number(cp);
}

// GPT-2's byte-to-unicode map (Radford et al. 2019; the table in openai/gpt-2 encoder.py):
// printable Latin-1 bytes stand for themselves, the other 68 bytes for U+0100 onwards in byte
// order, so every byte is a visible character.
const std::vector<std::string>& byte_to_text() {
    static const std::vector<std::string> table = [] {
        std::vector<char32_t> cps(256, 0);
        std::vector<bool> kept(256, false);
        for (int b = '!'; b <= '~'; ++b)
            kept[b] = true;
        for (int b = 0xA1; b <= 0xAC; ++b)
            kept[b] = true;
        for (int b = 0xAE; b <= 0xFF; ++b)
            kept[b] = true;
        char32_t next = 256;
        for (int b = 0; b < 256; ++b)
            cps[b] = kept[b] ? static_cast<char32_t>(b) : next++;
        std::vector<std::string> text(256);
        for (int b = 0; b < 256; ++b)
            append_utf8(text[b], cps[b]);
        return text;
    }();
    return table;
}

const std::unordered_map<char32_t, unsigned char>& text_to_byte() {
    static const std::unordered_map<char32_t, unsigned char> table = [] {
        std::unordered_map<char32_t, unsigned char> map;
        for (int b = 0; b < 256; ++b) {
            map[decode_utf8(byte_to_text()[b]).front().cp] = static_cast<unsigned char>(b);
        }
        return map;
    }();
    return table;
}

std::string merge_key(const std::string& first, const std::string& second) {
    std::string key = first;
    key += '\0';  // never inside a byte-level symbol (byte 0 maps to U+0100)
    key += second;
    return key;
}

void read_vocab(const nlohmann::json& vocab, const std::string& path,
                std::unordered_map<std::string, int>& token_to_id,
                std::vector<std::string>& id_to_token) {
    if (!vocab.is_object()) {
        throw InputError(file_label(path) +
                         ": expected a JSON object mapping tokens to integer ids");
    }
    for (const auto& [token, id] : vocab.items()) {
        if (!id.is_number_integer() || id.get<std::int64_t>() < 0 ||
            id.get<std::int64_t>() >= std::numeric_limits<int>::max()) {
            throw InputError(file_label(path) + ": token '" + token +
                             "' has no non-negative integer id");
        }
        const int value = id.get<int>();
        if (value >= static_cast<int>(id_to_token.size())) id_to_token.resize(value + 1);
        if (!id_to_token[value].empty()) {
            throw InputError(file_label(path) + ": id " + std::to_string(value) +
                             " is given to two tokens");
        }
        id_to_token[value] = token;
        token_to_id[token] = value;
    }
    if (token_to_id.empty())
        throw InputError(file_label(path) + ": expected a non-empty vocabulary");
}

}  // namespace

Tokenizer::~Tokenizer() = default;

// ------------------------------------------------------------------------------------------
// SentencePiece

namespace {

// Minimal protobuf wire-format reader for sentencepiece's ModelProto.
struct ProtoReader {
    const unsigned char* at;
    const unsigned char* end;
    const std::string& file;
    std::uint64_t varint() {
        std::uint64_t value = 0;
        for (int shift = 0; shift < 64; shift += 7) {
            if (at >= end)
                throw InputError(file_label(file) + ": truncated SentencePiece model (varint)");
            const unsigned char byte = *at++;
            value |= static_cast<std::uint64_t>(byte & 0x7f) << shift;
            if (!(byte & 0x80)) return value;
        }
        throw InputError(file_label(file) + ": corrupt SentencePiece model (varint too long)");
    }
    ProtoReader sub() {
        const std::uint64_t length = varint();
        if (length > static_cast<std::uint64_t>(end - at))
            throw InputError(file_label(file) + ": truncated SentencePiece model");
        ProtoReader r{at, at + length, file};
        at += length;
        return r;
    }
    void skip(int wire) {
        if (wire == 0)
            varint();
        else if (wire == 1)
            advance(8);
        else if (wire == 2)
            sub();
        else if (wire == 5)
            advance(4);
        else
            throw InputError(file_label(file) + ": not a SentencePiece model (wire type " +
                             std::to_string(wire) + ")");
    }
    void advance(std::size_t n) {
        if (n > static_cast<std::size_t>(end - at))
            throw InputError(file_label(file) + ": truncated SentencePiece model");
        at += n;
    }
};

std::string replace_meta_space(std::string piece) {  // "▁" (U+2581) back to " "
    const std::string meta = "\xE2\x96\x81";
    for (std::size_t at = piece.find(meta); at != std::string::npos; at = piece.find(meta, at + 1))
        piece.replace(at, 3, " ");
    return piece;
}

}  // namespace

namespace {

// The fields of sentencepiece_model.proto's ModelProto this reader needs: pieces (field 1, each
// a message { piece = 1; score = 2; type = 3 }), TrainerSpec (field 2: model_type = 3,
// byte_fallback = 35) and NormalizerSpec (field 3: name = 1, add_dummy_prefix = 3,
// remove_extra_whitespaces = 4). Defaults are the .proto's.
struct SentencePieceModel {
    std::vector<std::string> pieces;  // [vocab], "▁" already " " for normal and user pieces
    std::vector<float> scores;        // [vocab]
    int bos = -1, eos = -1;           // the control pieces <s> and </s>
    int model_type = 1;               // 1 UNIGRAM, 2 BPE
    bool byte_fallback = false, add_dummy_prefix = true, remove_extra_whitespaces = true;
    std::string normalizer = "nmt_nfkc";
};

// A length-delimited string field, consumed from `message`.
std::string read_text(ProtoReader& message) {
    const ProtoReader text = message.sub();
    return std::string(reinterpret_cast<const char*>(text.at), text.end - text.at);
}

void read_piece(ProtoReader piece_message, SentencePieceModel& model) {
    std::string piece;
    float score = 0;
    int type = 1;  // NORMAL
    while (piece_message.at < piece_message.end) {
        const std::uint64_t key = piece_message.varint();
        const int field = static_cast<int>(key >> 3), wire = static_cast<int>(key & 7);
        if (field == 1 && wire == 2) {
            piece = read_text(piece_message);
        } else if (field == 2 && wire == 5) {
            const unsigned char* bytes = piece_message.at;
            piece_message.advance(4);  // bounds first: a piece cut inside its score is truncated
            std::memcpy(&score, bytes, 4);
        } else if (field == 3 && wire == 0) {
            type = static_cast<int>(piece_message.varint());
        } else {
            piece_message.skip(wire);
        }
    }
    const int id = static_cast<int>(model.pieces.size());
    if (type == 3 && piece == "<s>") model.bos = id;  // CONTROL
    if (type == 3 && piece == "</s>") model.eos = id;
    // NORMAL (1) and USER_DEFINED (4) pieces spell a space as U+2581.
    model.pieces.push_back(type == 1 || type == 4 ? replace_meta_space(piece) : piece);
    model.scores.push_back(score);
}

void read_trainer_spec(ProtoReader spec, SentencePieceModel& model) {
    while (spec.at < spec.end) {
        const std::uint64_t key = spec.varint();
        const int field = static_cast<int>(key >> 3), wire = static_cast<int>(key & 7);
        if (field == 3 && wire == 0)
            model.model_type = static_cast<int>(spec.varint());
        else if (field == 35 && wire == 0)
            model.byte_fallback = spec.varint() != 0;
        else
            spec.skip(wire);
    }
}

void read_normalizer_spec(ProtoReader spec, SentencePieceModel& model) {
    while (spec.at < spec.end) {
        const std::uint64_t key = spec.varint();
        const int field = static_cast<int>(key >> 3), wire = static_cast<int>(key & 7);
        if (field == 1 && wire == 2) {
            model.normalizer = read_text(spec);
        } else if (field == 3 && wire == 0) {
            model.add_dummy_prefix = spec.varint() != 0;
        } else if (field == 4 && wire == 0) {
            model.remove_extra_whitespaces = spec.varint() != 0;
        } else {
            spec.skip(wire);
        }
    }
}

SentencePieceModel read_sentencepiece_model(const std::string& bytes, const std::string& path) {
    ProtoReader proto{reinterpret_cast<const unsigned char*>(bytes.data()),
                      reinterpret_cast<const unsigned char*>(bytes.data()) + bytes.size(), path};
    SentencePieceModel model;
    while (proto.at < proto.end) {
        const std::uint64_t key = proto.varint();
        const int field = static_cast<int>(key >> 3), wire = static_cast<int>(key & 7);
        if (field == 1 && wire == 2)
            read_piece(proto.sub(), model);
        else if (field == 2 && wire == 2)
            read_trainer_spec(proto.sub(), model);
        else if (field == 3 && wire == 2)
            read_normalizer_spec(proto.sub(), model);
        else
            proto.skip(wire);
    }
    return model;
}

}  // namespace

SentencePieceTokenizer::SentencePieceTokenizer(const std::string& model_path) : path_(model_path) {
    require_file(model_path, "a SentencePiece tokenizer.model");
    std::ifstream in(model_path, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const SentencePieceModel model = read_sentencepiece_model(bytes, model_path);
    if (model.pieces.size() < 259)
        throw InputError(file_label(model_path) + ": expected a SentencePiece model with pieces");
    if (model.model_type != 2 || !model.byte_fallback || !model.add_dummy_prefix ||
        model.remove_extra_whitespaces || model.normalizer != "identity" ||
        model.pieces[3] != "<0x00>") {
        throw InputError(
            file_label(model_path) +
            ": only SentencePiece BPE models with byte fallback, a dummy prefix and the identity "
            "normaliser (LLaMA-2, Mistral) are supported; tokenise the corpus yourself and use "
            "--tokens");
    }
    bos_ = model.bos;
    eos_ = model.eos;
    bpe_ = std::make_unique<Llama2cBinTokenizer>(
        Llama2cTokenizer(model.pieces, model.scores, model_path));
}

SentencePieceTokenizer::~SentencePieceTokenizer() = default;

std::vector<int> SentencePieceTokenizer::encode(const std::string& text) const {
    return bpe_->encode(text);
}

std::string SentencePieceTokenizer::decode(const std::vector<int>& ids) const {
    return bpe_->decode(ids);
}

int SentencePieceTokenizer::vocab_size() const {
    return bpe_->vocab_size();
}

// ------------------------------------------------------------------------------------------
// GPT-2 byte-level BPE

Gpt2BpeTokenizer::Gpt2BpeTokenizer(const std::string& vocab_json, const std::string& merges_txt) {
    source_ = vocab_json;
    read_vocab(read_json(vocab_json, "a GPT-2 vocab.json"), vocab_json, token_to_id_, id_to_token_);

    require_file(merges_txt, "a GPT-2 merges.txt");
    std::ifstream in(merges_txt, std::ios::binary);
    if (!in)
        throw InputError(file_label(merges_txt) + ": cannot open (expected a GPT-2 merges.txt)");
    std::string line;
    int line_number = 0;
    int rank = 0;
    while (std::getline(in, line)) {
        ++line_number;
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (line.empty() || (line_number == 1 && line.rfind("#version", 0) == 0)) continue;
        const std::size_t space = line.find(' ');
        if (space == std::string::npos || space == 0 || space + 1 == line.size() ||
            line.find(' ', space + 1) != std::string::npos) {
            throw InputError(file_label(merges_txt) + ": line " + std::to_string(line_number) +
                             ": expected two symbols separated by one space");
        }
        const std::string first = line.substr(0, space);
        const std::string second = line.substr(space + 1);
        if (!token_to_id_.count(first) || !token_to_id_.count(second) ||
            !token_to_id_.count(first + second)) {
            throw InputError(file_label(merges_txt) + ": line " + std::to_string(line_number) +
                             ": merge '" + line + "' uses or makes a token missing from " +
                             vocab_json);
        }
        // Later duplicates win, as in the dict() of OpenAI's encoder.py.
        merge_rank_[merge_key(first, second)] = rank++;
    }
    finish();
}

namespace {

// One tokenizer.json merge, "a b" or ["a", "b"], as its two symbols.
std::pair<std::string, std::string> split_merge(const nlohmann::json& merge, int rank,
                                                const std::string& path) {
    if (merge.is_array() && merge.size() == 2 && merge[0].is_string() && merge[1].is_string())
        return {merge[0].get<std::string>(), merge[1].get<std::string>()};
    if (!merge.is_string())
        throw InputError(file_label(path) + ": merge " + std::to_string(rank) +
                         ": expected \"a b\" or [\"a\", \"b\"], found " + merge.dump());
    const std::string text = merge.get<std::string>();
    const std::size_t space = text.find(' ');
    if (space == std::string::npos || space == 0 || space + 1 == text.size() ||
        text.find(' ', space + 1) != std::string::npos) {
        throw InputError(file_label(path) + ": merge " + std::to_string(rank) +
                         ": expected \"a b\", found " + merge.dump());
    }
    return {text.substr(0, space), text.substr(space + 1)};
}

// tokenizer.json's added_tokens: id → literal content.
std::map<int, std::string> read_added_tokens(const nlohmann::json& j, const std::string& path) {
    std::map<int, std::string> added_tokens;
    if (!j.contains("added_tokens") || !j["added_tokens"].is_array()) return added_tokens;
    for (const auto& added : j["added_tokens"]) {
        if (!added.is_object() || !added.contains("id") || !added["id"].is_number_integer() ||
            !added.contains("content") || !added["content"].is_string()) {
            throw InputError(file_label(path) +
                             ": expected added_tokens entries with an integer "
                             "\"id\" and a string \"content\", found " +
                             added.dump());
        }
        const int id = with_json_context(path, [&] { return json_integer<int>(added["id"]); });
        if (id < 0) throw InputError(file_label(path) + ": added token with a negative id");
        added_tokens[id] = added["content"].get<std::string>();
    }
    return added_tokens;
}

}  // namespace

std::unique_ptr<Gpt2BpeTokenizer> Gpt2BpeTokenizer::from_tokenizer_json(const std::string& path) {
    // A value of the wrong type anywhere below is bad input naming the file.
    return with_json_context(path, [&]() -> std::unique_ptr<Gpt2BpeTokenizer> {
        const nlohmann::json j = read_json(path, "a Hugging Face tokenizer.json");
        if (!j.is_object() || !j.contains("model") || !j["model"].is_object()) {
            throw InputError(file_label(path) + ": expected a \"model\" object");
        }
        const nlohmann::json& model = j["model"];
        if (model.contains("type") && model["type"] != "BPE") {
            throw InputError(file_label(path) + ": expected a BPE model, found type " +
                             model["type"].dump());
        }
        if (!model.contains("vocab") || !model.contains("merges") || !model["merges"].is_array()) {
            throw InputError(file_label(path) + ": expected model.vocab and a model.merges array");
        }
        for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
            if (model.contains(key) && !model[key].is_null() && model[key] != "") {
                throw InputError(file_label(path) + ": model." + key +
                                 " is not supported (expected GPT-2 byte-level BPE)");
            }
        }
        std::unique_ptr<Gpt2BpeTokenizer> tokenizer(new Gpt2BpeTokenizer());
        tokenizer->source_ = path;
        // The pre-tokenizer must be GPT-2's: ByteLevel with its built-in regex. Others (a Split
        // with another regex as in LLaMA-3 / Qwen, Metaspace) would silently tokenise differently.
        const nlohmann::json pre = j.value("pre_tokenizer", nlohmann::json());
        if (!pre.is_object() || pre.value("type", "") != "ByteLevel" ||
            !pre.value("use_regex", true)) {
            throw InputError(file_label(path) +
                             ": expected a ByteLevel pre_tokenizer with GPT-2's regex, "
                             "found " +
                             pre.dump());
        }
        tokenizer->add_prefix_space_ = pre.value("add_prefix_space", false);
        read_vocab(model["vocab"], path, tokenizer->token_to_id_, tokenizer->id_to_token_);

        int rank = 0;
        for (const auto& merge : model["merges"]) {
            const auto [first, second] = split_merge(merge, rank, path);
            if (!tokenizer->token_to_id_.count(first) || !tokenizer->token_to_id_.count(second) ||
                !tokenizer->token_to_id_.count(first + second)) {
                throw InputError(file_label(path) + ": merge " + std::to_string(rank) + " " +
                                 merge.dump() + " uses or makes a token missing from model.vocab");
            }
            tokenizer->merge_rank_[merge_key(first, second)] = rank++;
        }
        tokenizer->added_tokens_ = read_added_tokens(j, path);
        tokenizer->finish();
        return tokenizer;
    });
}

void Gpt2BpeTokenizer::finish() {
    for (int b = 0; b < 256; ++b) {
        if (!token_to_id_.count(byte_to_text()[b])) {
            throw InputError(file_label(source_) +
                             ": byte-level vocabulary lacks the token for byte " +
                             std::to_string(b));
        }
    }
    const std::string endoftext = "<|endoftext|>";
    if (const auto it = token_to_id_.find(endoftext); it != token_to_id_.end()) {
        endoftext_id_ = it->second;
    }
    for (const auto& [id, content] : added_tokens_) {
        if (content == endoftext) endoftext_id_ = id;
        if (id >= static_cast<int>(id_to_token_.size())) id_to_token_.resize(id + 1);
    }
}

std::vector<std::string> Gpt2BpeTokenizer::pre_tokenize(const std::string& text) {
    const std::vector<Unit> units = decode_utf8(text);
    const std::size_t n = units.size();
    const auto cp = [&](std::size_t i) { return i < n ? units[i].cp : char32_t(0); };
    std::vector<std::string> pieces;
    std::size_t i = 0;
    while (i < n) {
        std::size_t end = i;  // one past the last unit of this match
        // 's|'t|'re|'ve|'m|'ll|'d
        if (cp(i) == U'\'' && i + 1 < n) {
            const char32_t a = cp(i + 1);
            const char32_t b = i + 2 < n ? cp(i + 2) : 0;
            if (a == U's' || a == U't' || a == U'm' || a == U'd') {
                end = i + 2;
            } else if ((a == U'r' && b == U'e') || (a == U'v' && b == U'e') ||
                       (a == U'l' && b == U'l')) {
                end = i + 3;
            }
        }
        // ' ?\p{L}+', ' ?\p{N}+', ' ?[^\s\p{L}\p{N}]+' in that order
        for (const auto in_class : {is_letter, is_number, is_other}) {
            if (end != i) break;
            std::size_t j = i;
            if (cp(j) == U' ' && j + 1 < n && in_class(cp(j + 1))) ++j;
            if (!in_class(cp(j))) continue;
            while (j < n && in_class(cp(j)))
                ++j;
            end = j;
        }
        // '\s+(?!\S)' backs off one character before a non-space; else '\s+'
        if (end == i && is_space(cp(i))) {
            std::size_t j = i;
            while (j < n && is_space(cp(j)))
                ++j;
            end = (j < n && j - i >= 2) ? j - 1 : j;
        }
        if (end == i) end = i + 1;  // unreachable: every character is in one of the classes
        const std::size_t begin_byte = units[i].begin;
        const std::size_t end_byte = units[end - 1].begin + units[end - 1].length;
        pieces.push_back(text.substr(begin_byte, end_byte - begin_byte));
        i = end;
    }
    return pieces;
}

std::vector<int> Gpt2BpeTokenizer::bpe(const std::string& word) const {
    {
        std::lock_guard<std::mutex> lock(cache_mutex_);
        if (const auto it = cache_.find(word); it != cache_.end()) return it->second;
    }
    std::vector<std::string> symbols;
    symbols.reserve(word.size());
    for (const char c : word)
        symbols.push_back(byte_to_text()[static_cast<unsigned char>(c)]);

    // Byte-pair encoding by merge rank (Sennrich et al. 2016, as GPT-2 applies it): join every
    // occurrence of the lowest-ranked adjacent pair, scanning left to right without overlap,
    // until no adjacent pair has a rank.
    while (symbols.size() > 1) {
        int best_rank = std::numeric_limits<int>::max();
        std::size_t best = 0;
        for (std::size_t k = 0; k + 1 < symbols.size(); ++k) {
            const auto it = merge_rank_.find(merge_key(symbols[k], symbols[k + 1]));
            if (it != merge_rank_.end() && it->second < best_rank) {
                best_rank = it->second;
                best = k;
            }
        }
        if (best_rank == std::numeric_limits<int>::max()) break;
        const std::string left = symbols[best];
        const std::string right = symbols[best + 1];
        std::vector<std::string> merged;
        merged.reserve(symbols.size());
        for (std::size_t k = 0; k < symbols.size();) {
            const bool pair_here =
                k + 1 < symbols.size() && symbols[k] == left && symbols[k + 1] == right;
            merged.push_back(pair_here ? left + right : symbols[k]);
            k += pair_here ? 2 : 1;
        }
        symbols.swap(merged);
    }

    std::vector<int> ids;
    ids.reserve(symbols.size());
    for (const auto& symbol : symbols)
        ids.push_back(token_to_id_.at(symbol));  // checked at load
    {
        std::lock_guard<std::mutex> lock(cache_mutex_);
        if (cache_.size() > 100000) cache_.clear();
        cache_.emplace(word, ids);
    }
    return ids;
}

std::vector<int> Gpt2BpeTokenizer::encode(const std::string& text) const {
    std::vector<int> ids;
    const bool prefix = add_prefix_space_ && !text.empty() && text.front() != ' ';
    for (const auto& piece : pre_tokenize(prefix ? " " + text : text)) {
        const std::vector<int> piece_ids = bpe(piece);
        ids.insert(ids.end(), piece_ids.begin(), piece_ids.end());
    }
    return ids;
}

std::string Gpt2BpeTokenizer::decode(const std::vector<int>& ids) const {
    std::string text;
    for (const int id : ids) {
        if (const auto added = added_tokens_.find(id); added != added_tokens_.end()) {
            text += added->second;
            continue;
        }
        if (id < 0 || id >= static_cast<int>(id_to_token_.size()) || id_to_token_[id].empty()) {
            throw InputError(file_label(source_) + ": token id " + std::to_string(id) +
                             " is not in the vocabulary");
        }
        const std::string& token = id_to_token_[id];
        for (const Unit& unit : decode_utf8(token)) {
            const auto it = text_to_byte().find(unit.cp);
            if (it != text_to_byte().end() && unit.cp != kInvalid) {
                text += static_cast<char>(it->second);
            } else {
                text.append(token, unit.begin, unit.length);  // not a byte-level character
            }
        }
    }
    return text;
}

// ------------------------------------------------------------------------------------------
// llama2.c tokenizer.bin

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

// ------------------------------------------------------------------------------------------
// Choosing a tokenizer for a checkpoint

namespace {

// Records in a tokenizer.bin: u32 max_token_length, then (f32 score, i32 length, bytes)*.
int count_llama2c_tokens(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in)
        throw InputError(file_label(path) + ": cannot open (expected a llama2.c tokenizer.bin)");
    in.seekg(4);
    int count = 0;
    while (true) {
        char record[8];
        if (!in.read(record, 8)) break;
        std::int32_t length = 0;
        std::memcpy(&length, record + 4, 4);
        if (length < 0) break;
        in.seekg(length, std::ios::cur);
        if (!in) break;
        ++count;
    }
    return count;
}

int llama2c_vocab_size(const fs::path& folder, const fs::path& model_path, const fs::path& tok) {
    const fs::path config = folder / "config.json";
    std::error_code ec;
    if (fs::is_regular_file(config, ec)) {
        const nlohmann::json j = read_json(config.string(), "a model config.json");
        if (j.is_object() && j.contains("vocab_size") && j["vocab_size"].is_number_integer() &&
            j["vocab_size"].get<std::int64_t>() > 0 &&
            j["vocab_size"].get<std::int64_t>() <= std::numeric_limits<int>::max()) {
            return j["vocab_size"].get<int>();
        }
    }
    if (model_path.extension() == ".bin" && model_path != tok &&
        fs::is_regular_file(model_path, ec)) {
        std::ifstream in(model_path, std::ios::binary);
        std::int32_t header[7] = {};
        if (in.read(reinterpret_cast<char*>(header), sizeof(header)) && header[5] != 0 &&
            header[5] != std::numeric_limits<std::int32_t>::min()) {
            return std::abs(header[5]);
        }
    }
    return count_llama2c_tokens(tok.string());
}

}  // namespace

fs::path model_folder(const std::string& model_path) {
    std::error_code ec;
    const fs::path path(model_path);
    if (fs::is_directory(path, ec)) return path;
    return path.has_parent_path() ? path.parent_path() : fs::path(".");
}

std::unique_ptr<Tokenizer> tokenizer_for_model(const std::string& model_path, int vocab_size) {
    std::error_code ec;
    const fs::path path(model_path);
    if (!fs::exists(path, ec)) {
        throw InputError(file_label(model_path) +
                         ": not found (expected a checkpoint folder or file)");
    }
    const fs::path folder = model_folder(model_path);
    const auto has = [&](const char* name) { return fs::is_regular_file(folder / name, ec); };

    if (has("tokenizer.model")) {
        return std::make_unique<SentencePieceTokenizer>((folder / "tokenizer.model").string());
    }
    if (has("tokenizer.json")) {
        const std::string json_path = (folder / "tokenizer.json").string();
        const nlohmann::json j = read_json(json_path, "a Hugging Face tokenizer.json");
        const bool bpe = with_json_context(json_path, [&] {
            return j.is_object() && j.contains("model") && j["model"].is_object() &&
                   j["model"].value("type", "BPE") == "BPE";
        });
        if (bpe) {
            return Gpt2BpeTokenizer::from_tokenizer_json(json_path);
        }
    }
    if (has("vocab.json") && has("merges.txt")) {
        return std::make_unique<Gpt2BpeTokenizer>((folder / "vocab.json").string(),
                                                  (folder / "merges.txt").string());
    }
    fs::path tok;
    if (has("tokenizer.bin")) {
        tok = folder / "tokenizer.bin";
    } else {
        std::vector<fs::path> candidates;
        for (const auto& entry : fs::directory_iterator(folder, ec)) {
            const std::string name = entry.path().filename().string();
            if (entry.is_regular_file(ec) && name.rfind("tok", 0) == 0 &&
                entry.path().extension() == ".bin" && entry.path() != path) {
                candidates.push_back(entry.path());
            }
        }
        std::sort(candidates.begin(), candidates.end());
        if (!candidates.empty()) tok = candidates.front();
    }
    if (!tok.empty()) {
        const int size = vocab_size > 0 ? vocab_size : llama2c_vocab_size(folder, path, tok);
        return std::make_unique<Llama2cBinTokenizer>(tok.string(), size);
    }
    throw InputError(file_label(folder.string()) +
                     ": no tokenizer found (expected tokenizer.model, tokenizer.json, vocab.json + "
                     "merges.txt, tokenizer.bin or tok*.bin)");
}

}  // namespace attngeo::empirical
