// GGUF reader (see gguf.hpp): a bounds-checked cursor over a read-only mapping of the file,
// the metadata and tensor-info sections as the GGUF spec (ggml docs/gguf.md) lays them out,
// and float32 conversion of the supported ggml types.
#include "empirical/model/gguf.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <limits>
#include <set>
#include <stdexcept>

#include "common/binary_file.hpp"
#include "common/errors.hpp"
#include "empirical/model/architecture.hpp"
#include "empirical/model/llama2c.hpp"

namespace attngeo::empirical {

namespace {

constexpr int kMaxArrayDepth = 8;      // arrays of arrays; real files use depth 1
constexpr std::uint32_t kMaxDims = 4;  // GGML_MAX_DIMS

// The ggml type names by the numbers GGUF files store (ggml's type enumeration; gaps are
// retired types), so that a quantised file we cannot convert is refused by its type's name
// rather than as "unknown".
const char* ggml_type_name(std::uint32_t type) {
    static const char* const names[] = {
        "F32",     "F16",    "Q4_0",    "Q4_1",  nullptr,  nullptr, "Q5_0",  "Q5_1",
        "Q8_0",    "Q8_1",   "Q2_K",    "Q3_K",  "Q4_K",   "Q5_K",  "Q6_K",  "Q8_K",
        "IQ2_XXS", "IQ2_XS", "IQ3_XXS", "IQ1_S", "IQ4_NL", "IQ3_S", "IQ2_S", "IQ4_XS",
        "I8",      "I16",    "I32",     "I64",   "F64",    "IQ1_M", "BF16",  nullptr,
        nullptr,   nullptr,  "TQ1_0",   "TQ2_0", nullptr,  nullptr, nullptr, "MXFP4"};
    if (type < sizeof(names) / sizeof(names[0]) && names[type] != nullptr) return names[type];
    return nullptr;
}

constexpr std::uint32_t kF32 = 0, kF16 = 1, kQ8_0 = 8, kBF16 = 30;
constexpr std::uint64_t kQ8Block = 32, kQ8BlockBytes = 2 + 32;  // f16 scale, 32 int8

// The whole file, mapped read-only; unmapped when the last tensor pointing into it goes.
std::shared_ptr<const void> map_file(const std::string& path, std::size_t& size) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        throw InputError("'" + path + "': cannot open GGUF file (" + std::strerror(errno) + ")");
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        ::close(fd);
        throw InputError("'" + path + "': cannot open GGUF file (not a regular file)");
    }
    size = static_cast<std::size_t>(st.st_size);
    if (size == 0) {
        ::close(fd);
        throw InputError("'" + path + "': GGUF file is empty; expected the magic \"GGUF\"");
    }
    void* address = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    ::close(fd);
    if (address == MAP_FAILED)
        throw InputError("'" + path + "': cannot map GGUF file (" + std::strerror(errno) + ")");
    return std::shared_ptr<const void>(
        address, [size](const void* p) { ::munmap(const_cast<void*>(p), size); });
}

}  // namespace

// Bounds-checked little-endian reads; every failure names the file, the offset and the item.
class GgufCursor {
  public:
    GgufCursor(const unsigned char* data, std::size_t size, const std::string& path)
        : data_(data), size_(size), path_(path) {}

    std::size_t position() const { return pos_; }
    std::size_t size() const { return size_; }
    std::size_t remaining() const { return size_ - pos_; }
    const unsigned char* here() const { return data_ + pos_; }

    void need(std::uint64_t bytes, const std::string& what) const {
        if (bytes > remaining())
            throw InputError("'" + path_ + "': GGUF file truncated at byte " +
                             std::to_string(pos_) + " while reading " + what + " (needs " +
                             std::to_string(bytes) + " bytes, " + std::to_string(remaining()) +
                             " left)");
    }
    template <typename T>
    T read(const std::string& what) {
        need(sizeof(T), what);
        T value;
        std::memcpy(&value, data_ + pos_, sizeof(T));
        pos_ += sizeof(T);
        return value;
    }
    std::string string(const std::string& what) {
        const auto length = read<std::uint64_t>(what + " length");
        need(length, what);
        std::string text(reinterpret_cast<const char*>(data_ + pos_),
                         static_cast<std::size_t>(length));
        pos_ += static_cast<std::size_t>(length);
        return text;
    }

  private:
    const unsigned char* data_;
    std::size_t size_;
    std::size_t pos_ = 0;
    const std::string& path_;
};

namespace {

// Bytes of one value by GGUF type number (U8, I8, U16, I16, U32, I32, F32, BOOL, STRING,
// ARRAY, U64, I64, F64); a STRING or ARRAY takes at least its length fields.
std::size_t scalar_size(GgufType type) {
    static constexpr std::size_t kBytes[] = {1, 1, 2, 2, 4, 4, 4, 1, 8, 12, 8, 8, 8};
    const auto number = static_cast<std::size_t>(type);
    return number < sizeof(kBytes) / sizeof(kBytes[0]) ? kBytes[number] : 1;
}

bool known_value_type(std::uint32_t type) {
    return type <= 12;
}

GgufValue read_value(GgufCursor& in, GgufType type, const std::string& key, const std::string& path,
                     int depth) {
    GgufValue v;
    v.type = type;
    const std::string what = "the value of '" + key + "'";
    switch (type) {
        case GgufType::U8:
            v.integer = in.read<std::uint8_t>(what);
            break;
        case GgufType::I8:
            v.integer = in.read<std::int8_t>(what);
            break;
        case GgufType::U16:
            v.integer = in.read<std::uint16_t>(what);
            break;
        case GgufType::I16:
            v.integer = in.read<std::int16_t>(what);
            break;
        case GgufType::U32:
            v.integer = in.read<std::uint32_t>(what);
            break;
        case GgufType::I32:
            v.integer = in.read<std::int32_t>(what);
            break;
        case GgufType::U64:
            v.integer = static_cast<std::int64_t>(in.read<std::uint64_t>(what));
            break;
        case GgufType::I64:
            v.integer = in.read<std::int64_t>(what);
            break;
        case GgufType::F32:
            v.real = in.read<float>(what);
            break;
        case GgufType::F64:
            v.real = in.read<double>(what);
            break;
        case GgufType::BOOL: {
            const auto b = in.read<std::uint8_t>(what);
            if (b > 1)
                throw InputError("'" + path + "': GGUF key '" + key + "' is a bool holding " +
                                 std::to_string(b) + "; expected 0 or 1");
            v.integer = b;
            break;
        }
        case GgufType::STRING:
            v.string = in.string(what);
            break;
        case GgufType::ARRAY: {
            if (depth >= kMaxArrayDepth)
                throw InputError("'" + path + "': GGUF key '" + key +
                                 "' nests arrays deeper than " + std::to_string(kMaxArrayDepth));
            const auto element = in.read<std::uint32_t>(what + " element type");
            if (!known_value_type(element))
                throw InputError("'" + path + "': GGUF key '" + key +
                                 "' is an array of unknown type " + std::to_string(element) +
                                 "; expected a GGUF value type 0..12");
            v.element_type = static_cast<GgufType>(element);
            const auto count = in.read<std::uint64_t>(what + " element count");
            // Reject impossible counts before allocating anything for them.
            if (count > in.remaining() / scalar_size(v.element_type))
                throw InputError("'" + path + "': GGUF file truncated at byte " +
                                 std::to_string(in.position()) + ": " + what + " claims " +
                                 std::to_string(count) + " " + to_string(v.element_type) +
                                 " elements but only " + std::to_string(in.remaining()) +
                                 " bytes are left");
            v.elements.reserve(static_cast<std::size_t>(count));
            for (std::uint64_t i = 0; i < count; ++i)
                v.elements.push_back(read_value(in, v.element_type, key, path, depth + 1));
            break;
        }
    }
    return v;
}

std::string dims_text(const std::vector<std::int64_t>& shape) {
    std::string text = "[";
    for (std::size_t i = 0; i < shape.size(); ++i)
        text += (i ? ", " : "") + std::to_string(shape[i]);
    return text + "]";
}

// The LLaMA tensor a GGUF name stands for ("blk.{i}.<suffix>" or a model-level name), with its
// layer (-1 for model-level); nullptr when the name is not one of the table's.
const LlamaTensor* llama_tensor_of_gguf(const std::string& gguf, int& layer) {
    layer = -1;
    for (const LlamaTensor& t : llama_tensors())
        if (!t.per_layer && gguf == t.gguf_suffix) return &t;
    if (gguf.compare(0, 4, "blk.") != 0) return nullptr;
    std::size_t end = 4;
    while (end < gguf.size() && end < 4 + 9 && std::isdigit(static_cast<unsigned char>(gguf[end])))
        ++end;
    if (end == 4 || end >= gguf.size() || gguf[end] != '.') return nullptr;
    const std::string index = gguf.substr(4, end - 4);
    if (index.size() > 1 && index[0] == '0') return nullptr;  // one spelling per layer
    const std::string suffix = gguf.substr(end + 1);
    for (const LlamaTensor& t : llama_tensors()) {
        if (t.per_layer && suffix == t.gguf_suffix) {
            layer = std::stoi(index);
            return &t;
        }
    }
    return nullptr;
}

// Decodes one tensor's data to float32 values (F32, F16, BF16, or Q8_0 blocks of an f16 scale
// and 32 int8: value = scale · q).
std::vector<float> decode_floats(const unsigned char* src, std::uint32_t type, std::size_t count) {
    std::vector<float> values(count);
    switch (type) {
        case kF32:
            std::memcpy(values.data(), src, count * sizeof(float));
            break;
        case kF16:
        case kBF16:
            for (std::size_t i = 0; i < count; ++i) {
                std::uint16_t half;
                std::memcpy(&half, src + 2 * i, 2);
                values[i] = type == kF16 ? half_to_float(half) : bfloat16_to_float(half);
            }
            break;
        case kQ8_0:
            for (std::size_t block = 0; block < count / kQ8Block; ++block) {
                const unsigned char* bytes = src + block * kQ8BlockBytes;
                std::uint16_t scale_bits;
                std::memcpy(&scale_bits, bytes, 2);
                const float scale = half_to_float(scale_bits);
                for (std::size_t j = 0; j < kQ8Block; ++j)
                    values[block * kQ8Block + j] =
                        scale * static_cast<float>(static_cast<std::int8_t>(bytes[2 + j]));
            }
            break;
    }
    return values;
}

}  // namespace

const char* to_string(GgufType type) {
    switch (type) {
        case GgufType::U8:
            return "UINT8";
        case GgufType::I8:
            return "INT8";
        case GgufType::U16:
            return "UINT16";
        case GgufType::I16:
            return "INT16";
        case GgufType::U32:
            return "UINT32";
        case GgufType::I32:
            return "INT32";
        case GgufType::F32:
            return "FLOAT32";
        case GgufType::BOOL:
            return "BOOL";
        case GgufType::STRING:
            return "STRING";
        case GgufType::ARRAY:
            return "ARRAY";
        case GgufType::U64:
            return "UINT64";
        case GgufType::I64:
            return "INT64";
        case GgufType::F64:
            return "FLOAT64";
    }
    return "?";
}

bool GgufValue::is_integer() const {
    switch (type) {
        case GgufType::U8:
        case GgufType::I8:
        case GgufType::U16:
        case GgufType::I16:
        case GgufType::U32:
        case GgufType::I32:
        case GgufType::U64:
        case GgufType::I64:
            return true;
        default:
            return false;
    }
}

struct GgufCheckpoint::TensorInfo {
    std::string gguf_name, name;         // name: the HF name (or the GGUF name when unmapped)
    const LlamaTensor* llama = nullptr;  // the table's entry, when mapped
    int layer = -1;
    std::vector<std::int64_t> shape;  // PyTorch order (ne reversed)
    std::uint32_t type = 0;
    std::uint64_t offset = 0;  // from the data section's start
    std::uint64_t numel = 0, bytes = 0;
};

GgufCheckpoint::GgufCheckpoint(const std::string& path) : MapTensorStore(path, "GGUF file") {
    if (!host_is_little_endian())
        throw std::runtime_error("GgufCheckpoint: big-endian hosts are not supported");
    std::size_t file_size = 0;
    const std::shared_ptr<const void> mapping = map_file(path, file_size);
    GgufCursor in(static_cast<const unsigned char*>(mapping.get()), file_size, path);
    std::uint64_t n_tensors = 0, n_kv = 0;
    read_header(in, n_tensors, n_kv);
    read_metadata(in, n_kv);
    std::vector<TensorInfo> infos;
    std::set<std::string> seen;  // GGUF names, each allowed once
    for (std::uint64_t i = 0; i < n_tensors; ++i)
        infos.push_back(read_tensor_info(in, i, seen));
    // Padding to the alignment separates the infos from the data section.
    const std::uint64_t data_start = (in.position() + alignment_ - 1) / alignment_ * alignment_;
    check_layout(infos, data_start, file_size);
    read_vocabulary();
    build_config(infos);
    check_shapes(infos);
    add_tensors(infos, mapping, data_start);
}

void GgufCheckpoint::read_header(GgufCursor& in, std::uint64_t& n_tensors, std::uint64_t& n_kv) {
    const std::string& path = describe();
    in.need(4, "the magic");
    if (std::memcmp(in.here(), "GGUF", 4) != 0)
        throw InputError("'" + path + "': not a GGUF file (expected the magic \"GGUF\" at byte 0)");
    in.read<std::uint32_t>("the magic");
    version_ = in.read<std::uint32_t>("the version");
    if ((version_ & 0xffffu) == 0 && version_ != 0)
        throw InputError("'" + path +
                         "': big-endian GGUF file; expected a little-endian GGUF v2/v3");
    if (version_ != 2 && version_ != 3)
        throw InputError("'" + path + "': GGUF version " + std::to_string(version_) +
                         "; expected version 2 or 3");
    n_tensors = in.read<std::uint64_t>("the tensor count");
    n_kv = in.read<std::uint64_t>("the metadata count");
    // Each key/value takes ≥ 13 bytes and each tensor info ≥ 28: reject absurd counts early.
    if (n_kv > in.remaining() / 13 || n_tensors > in.remaining() / 28)
        throw InputError("'" + path + "': GGUF header claims " + std::to_string(n_kv) +
                         " metadata entries and " + std::to_string(n_tensors) +
                         " tensors, more than the file's " + std::to_string(in.size()) +
                         " bytes can hold (truncated?)");
}

void GgufCheckpoint::read_metadata(GgufCursor& in, std::uint64_t n_kv) {
    const std::string& path = describe();
    for (std::uint64_t i = 0; i < n_kv; ++i) {
        std::string key = in.string("metadata key " + std::to_string(i));
        const auto type = in.read<std::uint32_t>("the type of '" + key + "'");
        if (!known_value_type(type))
            throw InputError("'" + path + "': GGUF key '" + key + "' has unknown value type " +
                             std::to_string(type) + "; expected 0..12");
        GgufValue value = read_value(in, static_cast<GgufType>(type), key, path, 0);
        if (!metadata_.emplace(key, std::move(value)).second)
            throw InputError("'" + path + "': GGUF key '" + key + "' appears twice");
    }
    if (const GgufValue* a = find("general.alignment")) {
        if (!a->is_integer() || a->integer <= 0 || (a->integer & (a->integer - 1)) != 0)
            throw InputError("'" + path +
                             "': GGUF general.alignment must be a positive power of two");
        alignment_ = static_cast<std::uint64_t>(a->integer);
    }
    const std::string architecture = metadata_string("general.architecture", "");
    if (architecture != "llama")
        throw InputError("'" + path + "': GGUF general.architecture is '" + architecture +
                         "'; expected 'llama'");
}

// Bytes of a tensor's data for its ggml type; InputError for a type we cannot convert.
std::uint64_t GgufCheckpoint::data_bytes(const TensorInfo& t, std::uint64_t row_length,
                                         const std::string& label) const {
    const std::string& path = describe();
    switch (t.type) {
        case kF32:
            return 4 * t.numel;
        case kF16:
        case kBF16:
            return 2 * t.numel;
        case kQ8_0:
            if (row_length % kQ8Block != 0)
                throw InputError("'" + path + "': GGUF " + label + " is Q8_0 with rows of " +
                                 std::to_string(row_length) + " values; expected a multiple of 32");
            return t.numel / kQ8Block * kQ8BlockBytes;
        default: {
            const char* name = ggml_type_name(t.type);
            throw InputError("'" + path + "': GGUF " + label + " has " +
                             (name ? std::string("ggml type ") + name + " (" +
                                         std::to_string(t.type) + "), which is not supported"
                                   : "unknown ggml type " + std::to_string(t.type)) +
                             "; expected F32, F16, BF16 or Q8_0");
        }
    }
}

GgufCheckpoint::TensorInfo GgufCheckpoint::read_tensor_info(GgufCursor& in, std::uint64_t index,
                                                            std::set<std::string>& seen) const {
    const std::string& path = describe();
    TensorInfo t;
    t.gguf_name = in.string("the name of tensor " + std::to_string(index));
    const std::string label = "tensor '" + t.gguf_name + "'";
    if (!seen.insert(t.gguf_name).second)
        throw InputError("'" + path + "': GGUF " + label + " appears twice");
    const auto n_dims = in.read<std::uint32_t>("the rank of " + label);
    if (n_dims == 0 || n_dims > kMaxDims)
        throw InputError("'" + path + "': GGUF " + label + " has " + std::to_string(n_dims) +
                         " dimensions; expected 1.." + std::to_string(kMaxDims));
    std::vector<std::uint64_t> ne(n_dims);
    t.numel = 1;
    bool overflow = false;
    for (auto& n : ne) {
        n = in.read<std::uint64_t>("the shape of " + label);
        if (n > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()) ||
            (n != 0 && t.numel > std::numeric_limits<std::uint64_t>::max() / 8 / n))
            overflow = true;
        else
            t.numel *= n;
    }
    if (overflow)
        throw InputError("'" + path + "': GGUF " + label + " has an impossibly large shape");
    t.shape.assign(ne.rbegin(), ne.rend());  // ne[0] varies fastest: PyTorch's last dim
    t.type = in.read<std::uint32_t>("the type of " + label);
    t.offset = in.read<std::uint64_t>("the offset of " + label);
    t.bytes = data_bytes(t, ne[0], label);
    if (t.offset % alignment_ != 0)
        throw InputError("'" + path + "': GGUF " + label + " has offset " +
                         std::to_string(t.offset) + ", not a multiple of the alignment " +
                         std::to_string(alignment_));
    t.llama = llama_tensor_of_gguf(t.gguf_name, t.layer);
    t.name = t.llama ? llama_hf_name(t.llama->id, t.layer) : t.gguf_name;
    return t;
}

// Every tensor's bytes lie inside the data section, no two overlap, and no unmapped GGUF name
// collides with a mapped one.
void GgufCheckpoint::check_layout(const std::vector<TensorInfo>& infos, std::uint64_t data_start,
                                  std::uint64_t file_size) const {
    const std::string& path = describe();
    for (const auto& t : infos) {
        if (t.offset > file_size || data_start > file_size - t.offset ||
            t.bytes > file_size - t.offset - data_start)
            throw InputError("'" + path + "': GGUF tensor '" + t.gguf_name + "' (" +
                             std::to_string(t.bytes) + " bytes at data offset " +
                             std::to_string(t.offset) + ") lies beyond the end of the file (" +
                             std::to_string(file_size) + " bytes; data section at " +
                             std::to_string(data_start) + ", truncated?)");
    }
    std::vector<const TensorInfo*> by_offset;
    for (const auto& t : infos)
        by_offset.push_back(&t);
    std::sort(by_offset.begin(), by_offset.end(),
              [](const TensorInfo* a, const TensorInfo* b) { return a->offset < b->offset; });
    for (std::size_t i = 1; i < by_offset.size(); ++i)
        if (by_offset[i - 1]->offset + by_offset[i - 1]->bytes > by_offset[i]->offset)
            throw InputError("'" + path + "': GGUF tensors '" + by_offset[i - 1]->gguf_name +
                             "' and '" + by_offset[i]->gguf_name + "' overlap");
    std::set<std::string> names;
    for (const auto& t : infos)
        if (!names.insert(t.name).second)
            throw InputError("'" + path + "': GGUF tensor '" + t.gguf_name +
                             "' maps to the name '" + t.name + "' of another tensor");
}

void GgufCheckpoint::read_vocabulary() {
    const std::string& path = describe();
    if (const GgufValue* tokens = find("tokenizer.ggml.tokens")) {
        if (tokens->type != GgufType::ARRAY || tokens->element_type != GgufType::STRING)
            throw InputError("'" + path +
                             "': GGUF tokenizer.ggml.tokens must be an array of strings");
        for (const auto& e : tokens->elements)
            vocabulary_.push_back(e.string);
    }
    if (const GgufValue* scores = find("tokenizer.ggml.scores")) {
        if (scores->type != GgufType::ARRAY || scores->element_type != GgufType::F32 ||
            scores->elements.size() != vocabulary_.size())
            throw InputError("'" + path +
                             "': GGUF tokenizer.ggml.scores must be a FLOAT32 array with "
                             "one score per token (" +
                             std::to_string(vocabulary_.size()) + ")");
        for (const auto& e : scores->elements)
            scores_.push_back(static_cast<float>(e.real));
    }
    if (const GgufValue* types = find("tokenizer.ggml.token_type")) {
        if (types->type != GgufType::ARRAY || types->element_type != GgufType::I32 ||
            types->elements.size() != vocabulary_.size())
            throw InputError("'" + path +
                             "': GGUF tokenizer.ggml.token_type must be an INT32 array "
                             "with one type per token (" +
                             std::to_string(vocabulary_.size()) + ")");
        for (const auto& e : types->elements)
            token_types_.push_back(static_cast<int>(e.integer));
    }
}

// Float32 tensors: 4-byte-aligned F32 data other than q/k stays in the mapping (zero copy);
// everything else is decoded into an owned buffer, q/k rows moved from GGUF's interleaved
// RoPE layout to rotate_half.
void GgufCheckpoint::add_tensors(const std::vector<TensorInfo>& infos,
                                 const std::shared_ptr<const void>& mapping,
                                 std::uint64_t data_start) {
    const auto* file = static_cast<const unsigned char*>(mapping.get());
    for (const auto& t : infos) {
        const unsigned char* src = file + data_start + t.offset;
        const bool rotary = t.llama != nullptr && t.llama->rotary_rows;
        const bool aligned = reinterpret_cast<std::uintptr_t>(src) % alignof(float) == 0;
        HostTensor out;
        if (t.type == kF32 && aligned && !rotary) {
            out.name = t.name;
            out.file = describe();
            out.dtype = DType::F32;
            out.shape = t.shape;
            out.bytes = static_cast<std::size_t>(t.numel * sizeof(float));
            out.data = src;
            out.owner = mapping;
        } else {
            std::vector<float> values = decode_floats(src, t.type, t.numel);
            if (rotary) {
                const int heads =
                    t.llama->id == TensorId::q ? config_.num_heads : config_.num_kv_heads;
                values = rope_interleaved_to_half(values, heads, config_.head_dim, t.shape[1]);
            }
            out = owned_float_tensor(t.name, describe(), t.shape, std::move(values));
        }
        gguf_names_[t.name] = t.gguf_name;
        add(std::move(out));
    }
}

const GgufValue* GgufCheckpoint::find(const std::string& key) const {
    const auto it = metadata_.find(key);
    return it == metadata_.end() ? nullptr : &it->second;
}

std::int64_t GgufCheckpoint::metadata_integer(const std::string& key) const {
    const GgufValue* v = find(key);
    if (v == nullptr) throw InputError("'" + describe() + "': GGUF key '" + key + "' is missing");
    if (!v->is_integer())
        throw InputError("'" + describe() + "': GGUF key '" + key + "' is " + to_string(v->type) +
                         "; expected an integer");
    return v->integer;
}

std::int64_t GgufCheckpoint::metadata_integer(const std::string& key, std::int64_t fallback) const {
    return find(key) ? metadata_integer(key) : fallback;
}

double GgufCheckpoint::metadata_real(const std::string& key, double fallback) const {
    const GgufValue* v = find(key);
    if (v == nullptr) return fallback;
    if (v->is_real()) return v->real;
    if (v->is_integer()) return static_cast<double>(v->integer);
    throw InputError("'" + describe() + "': GGUF key '" + key + "' is " + to_string(v->type) +
                     "; expected a number");
}
std::string GgufCheckpoint::metadata_string(const std::string& key,
                                            const std::string& fallback) const {
    const GgufValue* v = find(key);
    if (v == nullptr) return fallback;
    if (v->type != GgufType::STRING)
        throw InputError("'" + describe() + "': GGUF key '" + key + "' is " + to_string(v->type) +
                         "; expected a string");
    return v->string;
}

int GgufCheckpoint::positive_int(const std::string& key, std::int64_t value) const {
    if (value <= 0 || value > std::numeric_limits<int>::max())
        throw InputError("'" + describe() + "': GGUF key '" + key + "' is " +
                         std::to_string(value) + "; expected a positive int");
    return static_cast<int>(value);
}

void GgufCheckpoint::build_config(const std::vector<TensorInfo>& infos) {
    auto required = [&](const std::string& key) {
        return positive_int(key, metadata_integer(key));
    };
    LlamaSizes sizes;
    sizes.hidden_size = required("llama.embedding_length");
    sizes.num_layers = required("llama.block_count");
    sizes.intermediate_size = required("llama.feed_forward_length");
    sizes.num_heads = required("llama.attention.head_count");
    sizes.num_kv_heads =
        positive_int("llama.attention.head_count_kv",
                     metadata_integer("llama.attention.head_count_kv", sizes.num_heads));
    sizes.max_positions = required("llama.context_length");
    config_ = llama_config(sizes);
    ModelConfig& c = config_;
    const GgufValue* eps = find("llama.attention.layer_norm_rms_epsilon");
    if (eps == nullptr || !eps->is_real() || !(eps->real > 0))
        throw InputError("'" + describe() +
                         "': GGUF key 'llama.attention.layer_norm_rms_epsilon' must be "
                         "a positive float");
    c.norm_eps = eps->real;
    read_rope_settings();
    read_head_size();
    c.vocab_size = vocabulary_size(infos);
    c.tie_word_embeddings = true;
    for (const auto& t : infos)
        if (t.name == llama_hf_name(TensorId::lm_head, 0)) c.tie_word_embeddings = false;
    // Without the keys the model has no BOS or EOS (-1), as for a config.json without the ids:
    // guessing llama2.c's 1 and 2 would silently prepend a token the model may not know.
    c.bos_token_id = static_cast<int>(metadata_integer("tokenizer.ggml.bos_token_id", -1));
    c.eos_token_id = static_cast<int>(metadata_integer("tokenizer.ggml.eos_token_id", -1));
}

void GgufCheckpoint::read_rope_settings() {
    const std::string& path = describe();
    ModelConfig& c = config_;
    c.rope_theta = metadata_real("llama.rope.freq_base", 10000.0);
    if (!(c.rope_theta > 0))
        throw InputError("'" + path + "': GGUF key 'llama.rope.freq_base' must be positive");
    const std::string scaling = metadata_string("llama.rope.scaling.type", "none");
    if (scaling == "linear") {
        c.rope_scaling_factor = metadata_real("llama.rope.scaling.factor", 1.0);
    } else if (scaling != "none") {
        throw InputError("'" + path + "': GGUF llama.rope.scaling.type '" + scaling +
                         "' is not supported; expected none or linear");
    } else {
        c.rope_scaling_factor = metadata_real("llama.rope.scale_linear", 1.0);  // older key
    }
    if (!(c.rope_scaling_factor > 0))
        throw InputError("'" + path + "': GGUF rope scaling factor must be positive");
}

// key_length when stated (it may differ from embedding_length / head_count), else the quotient;
// values, keys and the rotary part must all use that one even size.
void GgufCheckpoint::read_head_size() {
    const std::string& path = describe();
    ModelConfig& c = config_;
    if (c.num_heads % c.num_kv_heads != 0)
        throw InputError("'" + path + "': GGUF attention.head_count " +
                         std::to_string(c.num_heads) + " is not a multiple of head_count_kv " +
                         std::to_string(c.num_kv_heads));
    if (find("llama.attention.key_length")) {
        c.head_dim = positive_int("llama.attention.key_length",
                                  metadata_integer("llama.attention.key_length"));
    } else {
        if (c.hidden_size % c.num_heads != 0)
            throw InputError("'" + path + "': GGUF embedding_length " +
                             std::to_string(c.hidden_size) + " is not a multiple of head_count " +
                             std::to_string(c.num_heads));
        c.head_dim = c.hidden_size / c.num_heads;
    }
    if (metadata_integer("llama.attention.value_length", c.head_dim) != c.head_dim)
        throw InputError("'" + path +
                         "': GGUF attention.value_length differs from key_length; "
                         "expected equal head sizes");
    if (c.head_dim % 2 != 0)
        throw InputError("'" + path + "': GGUF head size " + std::to_string(c.head_dim) +
                         " is odd; expected an even size for RoPE");
    if (metadata_integer("llama.rope.dimension_count", c.head_dim) != c.head_dim)
        throw InputError("'" + path + "': GGUF rope.dimension_count differs from the head size " +
                         std::to_string(c.head_dim) + "; partial rotary is not supported");
}

// The number of tokens, which must equal the embedding's rows; the rows alone without one.
int GgufCheckpoint::vocabulary_size(const std::vector<TensorInfo>& infos) const {
    const std::string& path = describe();
    std::int64_t embedding_rows = -1;
    for (const auto& t : infos)
        if (t.name == llama_hf_name(TensorId::embed, 0) && t.shape.size() == 2)
            embedding_rows = t.shape[0];
    if (vocabulary_.empty()) {
        if (embedding_rows < 0)
            throw InputError("'" + path +
                             "': GGUF has neither tokenizer.ggml.tokens nor a 2-d "
                             "token_embd.weight to size the vocabulary");
        return positive_int("token_embd.weight rows", embedding_rows);
    }
    const int tokens =
        positive_int("tokenizer.ggml.tokens", static_cast<std::int64_t>(vocabulary_.size()));
    if (embedding_rows >= 0 && embedding_rows != tokens)
        throw InputError("'" + path + "': GGUF token_embd.weight has " +
                         std::to_string(embedding_rows) + " rows but the vocabulary has " +
                         std::to_string(tokens) + " tokens");
    return tokens;
}

void GgufCheckpoint::check_shapes(const std::vector<TensorInfo>& infos) const {
    const std::string& path = describe();
    const ModelConfig& c = config_;
    // A block count beyond what the tensor table can hold is a damaged header (and would
    // otherwise size the expected-name set below).
    const std::size_t per_layer = llama_tensors_per_layer();
    if (c.num_layers < 0 || static_cast<std::uint64_t>(c.num_layers) > infos.size() / per_layer + 1)
        throw InputError("'" + path + "': llama.block_count is " + std::to_string(c.num_layers) +
                         " but the file has " + std::to_string(infos.size()) +
                         " tensors, fewer than " + std::to_string(per_layer) + " per layer");
    std::set<std::string> present;  // GGUF names
    for (const auto& t : infos) {
        if (t.layer >= c.num_layers)
            throw InputError("'" + path + "': GGUF tensor '" + t.gguf_name + "' is for layer " +
                             std::to_string(t.layer) + " but llama.block_count is " +
                             std::to_string(c.num_layers));
        if (t.llama == nullptr) continue;  // unmapped extra tensor: kept under its GGUF name
        const std::vector<std::int64_t> want = llama_tensor_shape(t.llama->id, c);
        if (t.shape != want)
            throw InputError("'" + path + "': GGUF tensor '" + t.gguf_name + "' has shape " +
                             dims_text(t.shape) + " (PyTorch order); expected " + dims_text(want));
        present.insert(t.gguf_name);
    }
    std::map<std::string, std::string> required;  // HF name -> GGUF name, in HF name order
    for (const LlamaTensor& t : llama_tensors())
        if (!t.optional)
            for (int layer = 0; layer < (t.per_layer ? c.num_layers : 1); ++layer)
                required.emplace(llama_hf_name(t.id, layer), llama_gguf_name(t.id, layer));
    for (const auto& [hf, gguf] : required)
        if (!present.count(gguf))
            throw InputError("'" + path + "': GGUF file lacks the LLaMA tensor '" + gguf + "' (" +
                             hf + ")");
}

std::string GgufCheckpoint::absence_note(const std::string& name) const {
    return name == llama_hf_name(TensorId::lm_head, 0)
               ? " (no output.weight: the classifier is tied to the embedding)"
               : "";
}

std::string GgufCheckpoint::gguf_name(const std::string& name) const {
    const auto it = gguf_names_.find(name);
    if (it == gguf_names_.end())
        throw InputError("'" + describe() + "': GGUF file has no tensor '" + name + "'");
    return it->second;
}

}  // namespace attngeo::empirical
