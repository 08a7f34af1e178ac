// GPT-2 byte-level BPE; see gpt2_bpe_tokenizer.hpp.
#include "empirical/tokenizers/gpt2_bpe_tokenizer.hpp"

#include <unicode/uchar.h>

#include <cstdint>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <utility>

#include "common/errors.hpp"
#include "common/json_file.hpp"
#include "empirical/tokenizers/tokenizer_files.hpp"

namespace attngeo::empirical {

using tokenizer_files::file_label;
using tokenizer_files::read_json;
using tokenizer_files::require_file;

namespace {

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

}  // namespace attngeo::empirical
