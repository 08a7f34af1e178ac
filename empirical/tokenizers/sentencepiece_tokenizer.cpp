// SentencePiece tokenizer.model files; see sentencepiece_tokenizer.hpp. A minimal protobuf
// wire-format reader for the fields the tokenizer needs, then llama2.c's BPE over the pieces.
#include "empirical/tokenizers/sentencepiece_tokenizer.hpp"

#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>

#include "common/errors.hpp"
#include "empirical/tokenizers/llama2c_tokenizer.hpp"
#include "empirical/tokenizers/tokenizer_files.hpp"

namespace attngeo::empirical {

using tokenizer_files::file_label;
using tokenizer_files::require_file;

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

}  // namespace attngeo::empirical
