// safetensors reading (mmap + a validated header) and writing (temp file + rename), and the
// Hugging Face folder layout on top of it; see safetensors.hpp. Untrusted headers are checked
// field by field so that a corrupt file is an InputError and never an out-of-bounds read.
#include "common/safetensors.hpp"

#include "common/json_file.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <stdexcept>
#include <tuple>

#include "common/atomic_file.hpp"
#include "common/errors.hpp"

namespace attngeo {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// The reference implementation's limit (safetensors MAX_HEADER_SIZE); a larger length is a
// corrupt or foreign file, and checking it first avoids allocating for a garbage length.
constexpr std::uint64_t kMaxHeaderBytes = 100'000'000;

constexpr const char* kValidDtypes = "F64 F32 F16 BF16 I64 I32 I16 I8 U8 BOOL";

// Names and header excerpts come from untrusted files; keep messages on one readable line.
std::string printable(const std::string& text, std::size_t limit = 120, bool ascii_only = false) {
    std::string out;
    for (char c : text) {
        if (out.size() >= limit) {
            out += "...";
            break;
        }
        const auto u = static_cast<unsigned char>(c);
        out += (u < 0x20 || u == 0x7f || (ascii_only && u >= 0x80)) ? '?' : c;
    }
    return out;
}

[[noreturn]] void fail(const std::string& file, const std::string& what) {
    throw InputError("'" + file + "': " + what);
}

[[noreturn]] void fail_tensor(const std::string& file, const std::string& name,
                              const std::string& what) {
    fail(file, "tensor '" + printable(name) + "': " + what);
}

std::string json_excerpt(const json& value) {
    return printable(value.dump(-1, ' ', false, json::error_handler_t::replace), 80);
}

const char* json_kind(const json& value) {
    return value.type_name();
}

// A non-negative JSON integer (nlohmann stores those as unsigned); false for negatives, floats
// such as 2.0, booleans and strings, which the format does not allow.
bool as_count(const json& value, std::uint64_t& out) {
    if (!value.is_number_unsigned()) return false;
    out = value.get<std::uint64_t>();
    return true;
}

bool multiply_checked(std::uint64_t a, std::uint64_t b, std::uint64_t& out) {
    return !__builtin_mul_overflow(a, b, &out);
}

std::string join_path(const std::string& folder, const std::string& name) {
    return (fs::path(folder) / name).string();
}

std::string strip_trailing_slashes(std::string path) {
    while (path.size() > 1 && path.back() == '/')
        path.pop_back();
    return path;
}

bool ends_with(const std::string& text, const std::string& suffix) {
    return text.size() >= suffix.size() &&
           text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool starts_with(const std::string& text, const std::string& prefix) {
    return text.compare(0, prefix.size(), prefix) == 0;
}

// The conversion command every pickle refusal prints, with the folder filled in.
std::string conversion_hint(const std::string& folder) {
    return "convert it once with: python3 -c \"from transformers import AutoModelForCausalLM as "
           "M; M.from_pretrained('" +
           folder + "').save_pretrained('OUT', safe_serialization=True)\" and pass OUT instead";
}

// Files that are (or index) PyTorch pickles as transformers and torch.save name them.
bool is_pytorch_pickle_name(const std::string& name) {
    return (starts_with(name, "pytorch_model") &&
            (ends_with(name, ".bin") || ends_with(name, ".bin.index.json"))) ||
           ends_with(name, ".pt") || ends_with(name, ".pth");
}

[[noreturn]] void refuse_pickle(const std::string& where, const std::string& folder,
                                const std::string& found) {
    fail(where, "found PyTorch pickle checkpoint '" + printable(found) +
                    "', which is refused because unpickling executes arbitrary code; " +
                    conversion_hint(folder));
}

}  // namespace

bool parse_safetensors_dtype(const std::string& text, DType& dtype) {
    static const std::map<std::string, DType> table = {
        {"F64", DType::F64}, {"F32", DType::F32},  {"F16", DType::F16}, {"BF16", DType::BF16},
        {"I64", DType::I64}, {"I32", DType::I32},  {"I16", DType::I16}, {"I8", DType::I8},
        {"U8", DType::U8},   {"BOOL", DType::BOOL}};
    const auto found = table.find(text);
    if (found == table.end()) return false;
    dtype = found->second;
    return true;
}

// ---------------------------------------------------------------------------------------------
// SafetensorsFile

namespace {

// The whole file mapped read-only (at least the 8-byte length), unmapped with its last user.
std::shared_ptr<const void> map_safetensors(const std::string& path, std::size_t& file_size) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT) fail(path, "no such file, expected a .safetensors file");
        fail(path, std::string("cannot open: ") + std::strerror(errno));
    }
    struct stat info {};
    if (::fstat(fd, &info) != 0) {
        const int error = errno;
        ::close(fd);
        fail(path, std::string("cannot stat: ") + std::strerror(error));
    }
    if (S_ISDIR(info.st_mode)) {
        ::close(fd);
        fail(path, "is a folder, expected a .safetensors file");
    }
    if (!S_ISREG(info.st_mode)) {
        ::close(fd);
        fail(path, "is not a regular file, expected a .safetensors file");
    }
    file_size = static_cast<std::size_t>(info.st_size);
    if (file_size < 8) {
        ::close(fd);
        fail(path, "file is " + std::to_string(file_size) +
                       " bytes, shorter than 8 bytes (the header length); expected a safetensors "
                       "file");
    }
    void* address = ::mmap(nullptr, file_size, PROT_READ, MAP_PRIVATE, fd, 0);
    const int map_error = errno;
    ::close(fd);  // the mapping keeps the file open
    if (address == MAP_FAILED) fail(path, std::string("cannot mmap: ") + std::strerror(map_error));
    const std::size_t mapped_bytes = file_size;
    return std::shared_ptr<const void>(
        address, [mapped_bytes](const void* p) { ::munmap(const_cast<void*>(p), mapped_bytes); });
}

// The u64 header length, checked against the format's limit and the file.
std::uint64_t header_length(const unsigned char* bytes, std::size_t file_size,
                            const std::string& path) {
    // Byte-wise little-endian so the result does not depend on the host's byte order.
    std::uint64_t header_bytes = 0;
    for (int i = 7; i >= 0; --i)
        header_bytes = (header_bytes << 8) | bytes[i];
    if (header_bytes > kMaxHeaderBytes) {
        fail(path, "header length " + std::to_string(header_bytes) +
                       " bytes is absurdly large (limit " + std::to_string(kMaxHeaderBytes) +
                       "); corrupt or not a safetensors file");
    }
    if (header_bytes > file_size - 8) {
        fail(path, "header length " + std::to_string(header_bytes) +
                       " bytes goes beyond the end of the file (" + std::to_string(file_size) +
                       " bytes); truncated or not a safetensors file");
    }
    return header_bytes;
}

// The header as a JSON object, refusing deep nesting and duplicate tensor names.
json parse_header(const char* begin, std::uint64_t header_bytes, const std::string& path) {
    // nlohmann keeps the last of duplicate keys silently; a duplicate tensor name would hide
    // a tensor, so the parser callback records it instead.
    std::set<std::string> seen_names;
    std::string duplicate_name;
    const json::parser_callback_t on_event = [&](int depth, json::parse_event_t event,
                                                 json& parsed) {
        // Depth as in parse_json_text: error messages dump values, and dump recurses per level.
        if (depth > kMaxJsonDepth && (event == json::parse_event_t::object_start ||
                                      event == json::parse_event_t::array_start))
            fail(path, "header nests deeper than " + std::to_string(kMaxJsonDepth) +
                           " levels; expected {\"<name>\": {\"dtype\", \"shape\", "
                           "\"data_offsets\"}, ...}");
        if (event == json::parse_event_t::key && depth == 1 && duplicate_name.empty()) {
            const auto& key = parsed.get_ref<const std::string&>();
            if (!seen_names.insert(key).second) duplicate_name = key;
        }
        return true;
    };
    json header;
    try {
        header = json::parse(begin, begin + header_bytes, on_event);
    } catch (const json::exception& error) {
        fail(path, "header (" + std::to_string(header_bytes) +
                       " bytes) is not valid JSON: " + printable(error.what(), 160, true));
    }
    if (!header.is_object()) {
        fail(path, std::string("header is a JSON ") + json_kind(header) +
                       ", not a JSON object; expected {\"<name>\": {\"dtype\", \"shape\", "
                       "\"data_offsets\"}, ...}");
    }
    if (!duplicate_name.empty()) fail_tensor(path, duplicate_name, "appears twice in the header");
    return header;
}

void read_metadata(const json& value, const std::string& path,
                   std::map<std::string, std::string>& metadata) {
    if (!value.is_object()) {
        fail(path, std::string("\"__metadata__\" is a JSON ") + json_kind(value) +
                       ", expected an object of strings");
    }
    for (const auto& [key, text] : value.items()) {
        if (!text.is_string()) {
            fail(path, "\"__metadata__\" entry '" + printable(key) + "' is a JSON " +
                           json_kind(text) + ", expected an object of strings");
        }
        metadata[key] = text.get<std::string>();
    }
}

// Where the data region lies in the file, for the entries' checks and messages.
struct DataRegion {
    std::uint64_t start = 0, bytes = 0;       // 8 + header length; file size − start
    std::uint64_t file_size = 0, header = 0;  // for messages
};

// One header entry {"dtype", "shape", "data_offsets"}, validated against the data region.
struct HeaderEntry {
    DType dtype = DType::F32;
    std::vector<std::int64_t> shape;
    std::uint64_t begin = 0, end = 0;  // data_offsets, relative to the data region
};

std::vector<std::int64_t> parse_shape(const json& shape, const std::string& path,
                                      const std::string& name, bool& numel_overflows,
                                      std::uint64_t& numel) {
    std::vector<std::int64_t> extents;
    bool shape_ok = shape.is_array();
    numel = 1;
    numel_overflows = false;
    if (shape_ok) {
        for (const json& dim : shape) {
            std::uint64_t extent = 0;
            if (!as_count(dim, extent) ||
                extent > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
                shape_ok = false;
                break;
            }
            extents.push_back(static_cast<std::int64_t>(extent));
            if (!multiply_checked(numel, extent, numel)) numel_overflows = true;
        }
    }
    if (!shape_ok)
        fail_tensor(path, name,
                    "shape " + json_excerpt(shape) + " is not a list of non-negative integers");
    return extents;
}

HeaderEntry parse_entry(const std::string& name, const json& value, const DataRegion& region,
                        const std::string& path) {
    if (!value.is_object()) {
        fail_tensor(path, name,
                    std::string("entry is a JSON ") + json_kind(value) +
                        ", expected an object with dtype, shape and data_offsets");
    }
    for (const char* field : {"dtype", "shape", "data_offsets"}) {
        if (!value.contains(field)) {
            fail_tensor(path, name,
                        std::string("entry lacks \"") + field +
                            "\", expected an object with dtype, shape and data_offsets");
        }
    }
    HeaderEntry entry;
    const json& dtype = value["dtype"];
    if (!dtype.is_string() || !parse_safetensors_dtype(dtype.get<std::string>(), entry.dtype)) {
        fail_tensor(path, name,
                    "unknown dtype " + json_excerpt(dtype) + ", expected one of " + kValidDtypes);
    }
    bool numel_overflows = false;
    std::uint64_t numel = 1;
    entry.shape = parse_shape(value["shape"], path, name, numel_overflows, numel);
    const json& offsets = value["data_offsets"];
    if (!offsets.is_array() || offsets.size() != 2 || !as_count(offsets[0], entry.begin) ||
        !as_count(offsets[1], entry.end) || entry.begin > entry.end) {
        fail_tensor(path, name,
                    "data_offsets " + json_excerpt(offsets) +
                        " must be two non-negative integers [begin, end] with begin <= end");
    }
    if (entry.end > region.bytes) {
        fail_tensor(path, name,
                    "data_offsets end " + std::to_string(entry.end) +
                        " is beyond the data region (" + std::to_string(region.bytes) +
                        " bytes = file size " + std::to_string(region.file_size) +
                        " - 8 - header length " + std::to_string(region.header) +
                        "); truncated file?");
    }
    std::uint64_t needed = 0;
    if (numel_overflows || !multiply_checked(numel, dtype_size(entry.dtype), needed)) {
        fail_tensor(path, name, "shape " + shape_text(entry.shape) + " is too large for any file");
    }
    if (needed != entry.end - entry.begin) {
        fail_tensor(path, name,
                    "data_offsets [" + std::to_string(entry.begin) + ", " +
                        std::to_string(entry.end) + "] span " +
                        std::to_string(entry.end - entry.begin) + " bytes but shape " +
                        shape_text(entry.shape) + " of " + to_string(entry.dtype) + " needs " +
                        std::to_string(needed) + " bytes");
    }
    return entry;
}

struct ByteRange {
    std::uint64_t begin, end;
    std::string name;
};

// Empty tensors occupy no bytes and cannot overlap; the rest, sorted by start, must each begin
// at or after the furthest end so far. Gaps are tolerated (other writers leave them).
void require_disjoint(std::vector<ByteRange> ranges, const std::string& path) {
    std::sort(ranges.begin(), ranges.end(), [](const ByteRange& a, const ByteRange& b) {
        return std::tie(a.begin, a.end) < std::tie(b.begin, b.end);
    });
    for (std::size_t i = 1, furthest = 0; i < ranges.size(); ++i) {
        if (ranges[i].begin < ranges[furthest].end) {
            const ByteRange& a = ranges[furthest];
            const ByteRange& b = ranges[i];
            fail(path, "tensors '" + printable(a.name) + "' [" + std::to_string(a.begin) + ", " +
                           std::to_string(a.end) + ") and '" + printable(b.name) + "' [" +
                           std::to_string(b.begin) + ", " + std::to_string(b.end) +
                           ") overlap in the data region");
        }
        if (ranges[i].end > ranges[furthest].end) furthest = i;
    }
}

}  // namespace

SafetensorsFile::SafetensorsFile(const std::string& path) : path_(path) {
    mapping_ = map_safetensors(path, file_size_);
    const auto* bytes = static_cast<const unsigned char*>(mapping_.get());
    DataRegion region;
    region.file_size = file_size_;
    region.header = header_length(bytes, file_size_, path);
    region.start = 8 + region.header;
    region.bytes = file_size_ - region.start;
    const json header = parse_header(reinterpret_cast<const char*>(bytes + 8), region.header, path);
    std::vector<ByteRange> ranges;
    for (const auto& [name, value] : header.items()) {
        if (name == "__metadata__") {
            read_metadata(value, path, metadata_);
            continue;
        }
        const HeaderEntry parsed = parse_entry(name, value, region, path);
        Entry entry;
        entry.dtype = parsed.dtype;
        entry.shape = parsed.shape;
        entry.offset = static_cast<std::size_t>(region.start + parsed.begin);
        entry.bytes = static_cast<std::size_t>(parsed.end - parsed.begin);
        if (entry.bytes > 0) ranges.push_back({parsed.begin, parsed.end, name});
        entries_.emplace(name, std::move(entry));
    }
    require_disjoint(std::move(ranges), path);
}

bool SafetensorsFile::contains(const std::string& name) const {
    return entries_.count(name) > 0;
}

HostTensor SafetensorsFile::get(const std::string& name) const {
    const auto found = entries_.find(name);
    if (found == entries_.end()) fail(path_, "no tensor '" + printable(name) + "'");
    const Entry& entry = found->second;
    HostTensor tensor;
    tensor.name = name;
    tensor.file = path_;
    tensor.dtype = entry.dtype;
    tensor.shape = entry.shape;
    tensor.data = static_cast<const unsigned char*>(mapping_.get()) + entry.offset;
    tensor.bytes = entry.bytes;
    tensor.owner = mapping_;
    return tensor;
}

std::vector<std::string> SafetensorsFile::names() const {
    std::vector<std::string> out;
    out.reserve(entries_.size());
    for (const auto& item : entries_)
        out.push_back(item.first);
    return out;
}

// ---------------------------------------------------------------------------------------------
// SafetensorsCheckpoint

bool is_safetensors_folder(const std::string& folder) {
    std::error_code error;
    return fs::is_regular_file(join_path(folder, "model.safetensors"), error) ||
           fs::is_regular_file(join_path(folder, "model.safetensors.index.json"), error);
}

namespace {

// A folder without model.safetensors or its index: say what is there instead (pickles get the
// refusal, a stray .safetensors a pointer to pass it directly).
[[noreturn]] void explain_missing_model(const std::string& folder) {
    std::error_code error;
    std::vector<std::string> files;
    for (const auto& item : fs::directory_iterator(folder, error)) {
        if (item.is_regular_file(error)) files.push_back(item.path().filename().string());
    }
    std::sort(files.begin(), files.end());
    for (const auto& name : files) {
        if (is_pytorch_pickle_name(name)) refuse_pickle(folder, folder, name);
    }
    std::string other_safetensors, other_bin;
    for (const auto& name : files) {
        if (ends_with(name, ".safetensors") && other_safetensors.empty()) other_safetensors = name;
        if (ends_with(name, ".bin") && other_bin.empty()) other_bin = name;
    }
    if (!other_safetensors.empty()) {
        fail(folder, "no model.safetensors or model.safetensors.index.json (found '" +
                         printable(other_safetensors) + "': pass that file itself)");
    }
    if (!other_bin.empty()) {
        fail(folder,
             "no model.safetensors or model.safetensors.index.json; found '" +
                 printable(other_bin) +
                 "': a PyTorch pickle is refused because unpickling executes arbitrary code (" +
                 conversion_hint(folder) +
                 "); a llama2.c checkpoint is read by passing the .bin file itself");
    }
    fail(folder,
         "no model.safetensors or model.safetensors.index.json, expected a Hugging Face "
         "model folder");
}

// The index's weight_map grouped by shard file name: shard → its tensors.
std::map<std::string, std::vector<std::string>> read_weight_map(const std::string& index_path) {
    std::ifstream in(index_path, std::ios::binary);
    if (!in) fail(index_path, "cannot open");
    std::ostringstream text;
    text << in.rdbuf();
    const json index = parse_json_text(text.str(), index_path, "a safetensors index");
    if (!index.is_object() || !index.contains("weight_map") || !index["weight_map"].is_object()) {
        fail(index_path,
             "expected a JSON object with a \"weight_map\" object (tensor name -> "
             "shard file name)");
    }
    const json& weight_map = index["weight_map"];
    if (weight_map.empty()) fail(index_path, "\"weight_map\" is empty, expected tensors");
    std::map<std::string, std::vector<std::string>> tensors_of_shard;
    for (const auto& [name, shard] : weight_map.items()) {
        if (!shard.is_string()) {
            fail(index_path, "\"weight_map\" entry for tensor '" + printable(name) +
                                 "' is a JSON " + json_kind(shard) +
                                 ", expected a shard file name");
        }
        const std::string shard_name = shard.get<std::string>();
        // Shards live beside the index; a path would let a downloaded index read any file.
        if (shard_name.empty() || shard_name == "." || shard_name == ".." ||
            shard_name.find('/') != std::string::npos ||
            shard_name.find('\\') != std::string::npos) {
            fail(index_path, "tensor '" + printable(name) + "' is mapped to '" +
                                 printable(shard_name) +
                                 "', expected a file name in the same folder");
        }
        tensors_of_shard[shard_name].push_back(name);
    }
    return tensors_of_shard;
}

}  // namespace

SafetensorsCheckpoint::SafetensorsCheckpoint(const std::string& folder_or_file) {
    const std::string given = strip_trailing_slashes(folder_or_file);
    std::error_code error;
    const fs::file_status status = fs::status(given, error);
    if (error || !fs::exists(status)) {
        fail(given, "no such file or folder, expected a Hugging Face model folder");
    }
    if (fs::is_regular_file(status)) {
        const std::string file_name = fs::path(given).filename().string();
        if (is_pytorch_pickle_name(file_name)) {
            const std::string parent = fs::path(given).parent_path().string();
            refuse_pickle(given, parent.empty() ? "." : parent, file_name);
        }
        open_single(given);
        return;
    }
    if (!fs::is_directory(status)) {
        fail(given, "is neither a folder nor a file, expected a Hugging Face model folder");
    }
    const std::string single = join_path(given, "model.safetensors");
    const std::string index_path = join_path(given, "model.safetensors.index.json");
    if (fs::is_regular_file(single, error)) {  // transformers prefers it over an index, too
        open_single(single);
        return;
    }
    if (!fs::is_regular_file(index_path, error)) explain_missing_model(given);
    open_sharded(given, index_path);
}

void SafetensorsCheckpoint::open_single(const std::string& file) {
    auto shard = std::make_shared<const SafetensorsFile>(file);
    for (const auto& name : shard->names())
        owner_of_[name] = shard.get();
    shards_[fs::path(file).filename().string()] = std::move(shard);
    description_ = file;
}

// Sharded: the index is the authority on which tensors exist and where.
void SafetensorsCheckpoint::open_sharded(const std::string& folder, const std::string& index_path) {
    description_ = index_path;
    const auto tensors_of_shard = read_weight_map(index_path);
    std::error_code error;
    for (const auto& [shard_name, tensors] : tensors_of_shard) {
        const std::string shard_path = join_path(folder, shard_name);
        if (!fs::is_regular_file(shard_path, error)) {
            fail(index_path, "shard '" + printable(shard_name) + "' (holding " +
                                 std::to_string(tensors.size()) +
                                 (tensors.size() == 1 ? " tensor" : " tensors") + ", e.g. '" +
                                 printable(tensors.front()) + "') not found in '" + folder + "'");
        }
        shards_[shard_name] = std::make_shared<const SafetensorsFile>(shard_path);
    }
    std::map<std::string, std::string> shard_holding;  // every tensor of every opened shard
    for (const auto& [shard_name, shard] : shards_) {
        for (const auto& name : shard->names()) {
            const auto [where, inserted] = shard_holding.emplace(name, shard_name);
            if (!inserted) {
                fail(index_path, "tensor '" + printable(name) + "' is present in two shards, '" +
                                     printable(where->second) + "' and '" + printable(shard_name) +
                                     "'");
            }
        }
    }
    for (const auto& [shard_name, tensors] : tensors_of_shard) {
        const SafetensorsFile& shard = *shards_.at(shard_name);
        for (const auto& name : tensors) {
            if (!shard.contains(name)) {
                const auto elsewhere = shard_holding.find(name);
                fail(index_path,
                     "tensor '" + printable(name) + "' is mapped to shard '" +
                         printable(shard_name) + "' but that file has no such tensor" +
                         (elsewhere == shard_holding.end()
                              ? std::string(" (nor does any other shard the index names)")
                              : "; it is in '" + printable(elsewhere->second) + "'"));
            }
            owner_of_[name] = &shard;
        }
    }
}

bool SafetensorsCheckpoint::contains(const std::string& name) const {
    return owner_of_.count(name) > 0;
}

HostTensor SafetensorsCheckpoint::get(const std::string& name) const {
    const auto found = owner_of_.find(name);
    if (found == owner_of_.end()) fail(description_, "no tensor '" + printable(name) + "'");
    return found->second->get(name);
}

std::vector<std::string> SafetensorsCheckpoint::names() const {
    std::vector<std::string> out;
    out.reserve(owner_of_.size());
    for (const auto& item : owner_of_)
        out.push_back(item.first);
    return out;
}

std::vector<std::string> SafetensorsCheckpoint::files() const {
    std::vector<std::string> out;
    for (const auto& item : shards_)
        out.push_back(item.second->path());
    return out;
}

// ---------------------------------------------------------------------------------------------
// Writing

namespace {

// The header text, padded with spaces to a multiple of 8 bytes, and each tensor's byte count.
std::string safetensors_header(const std::vector<TensorSpec>& tensors,
                               const std::map<std::string, std::string>& metadata,
                               std::vector<std::uint64_t>& sizes) {
    // ordered_json keeps "__metadata__" first and the tensors in the caller's order, as the
    // reference writer lays them out.
    using ordered_json = nlohmann::ordered_json;
    ordered_json header = ordered_json::object();
    if (!metadata.empty()) {
        ordered_json meta = ordered_json::object();
        for (const auto& [key, value] : metadata)
            meta[key] = value;
        header["__metadata__"] = std::move(meta);
    }
    std::set<std::string> names;
    std::uint64_t offset = 0;
    for (const TensorSpec& tensor : tensors) {
        const std::string where = "write_safetensors: tensor '" + tensor.name + "'";
        if (tensor.name == "__metadata__") throw std::invalid_argument(where + ": reserved name");
        if (!names.insert(tensor.name).second) {
            throw std::invalid_argument(where + ": name given twice");
        }
        std::uint64_t numel = 1;
        for (auto extent : tensor.shape) {
            if (extent < 0) {
                throw std::invalid_argument(where + ": negative extent in shape " +
                                            shape_text(tensor.shape));
            }
            if (!multiply_checked(numel, static_cast<std::uint64_t>(extent), numel)) {
                throw std::invalid_argument(where + ": shape too large");
            }
        }
        std::uint64_t bytes = 0;
        if (!multiply_checked(numel, dtype_size(tensor.dtype), bytes))
            throw std::invalid_argument(where + ": shape too large");
        ordered_json entry = ordered_json::object();
        entry["dtype"] = to_string(tensor.dtype);
        entry["shape"] = tensor.shape;
        entry["data_offsets"] = {offset, offset + bytes};
        header[tensor.name] = std::move(entry);
        offset += bytes;
        sizes.push_back(bytes);
    }
    std::string header_text;
    try {
        header_text = header.dump();
    } catch (const nlohmann::json::exception& error) {  // e.g. a name that is not UTF-8
        throw std::invalid_argument(std::string("write_safetensors: ") + error.what());
    }
    header_text.append((8 - header_text.size() % 8) % 8, ' ');
    return header_text;
}

}  // namespace

void write_safetensors_streamed(const std::string& path, const std::vector<TensorSpec>& tensors,
                                const std::function<void(std::size_t, std::ostream&)>& write_tensor,
                                const std::map<std::string, std::string>& metadata) {
    std::vector<std::uint64_t> sizes;
    const std::string header_text = safetensors_header(tensors, metadata, sizes);
    char length[8];
    for (int i = 0; i < 8; ++i) {
        length[i] =
            static_cast<char>((static_cast<std::uint64_t>(header_text.size()) >> (8 * i)) & 0xffu);
    }

    // Streamed rather than through write_file_atomic's string, so a large file is not held
    // in memory; same temporary name and rename protocol.
    const std::string temp = path + ".tmp." + std::to_string(::getpid());
    try {
        std::ofstream out(temp, std::ios::binary | std::ios::trunc);
        if (!out)
            throw InputError("cannot write '" + path + "': " + std::strerror(errno) +
                             " (does its folder exist and is it writable?)");
        errno = 0;
        out.write(length, 8);
        out.write(header_text.data(), static_cast<std::streamsize>(header_text.size()));
        for (std::size_t i = 0; i < tensors.size(); ++i) {
            const auto before = out.tellp();
            write_tensor(i, out);
            if (out && static_cast<std::uint64_t>(out.tellp() - before) != sizes[i]) {
                throw std::logic_error("write_safetensors: tensor '" + tensors[i].name +
                                       "': " + std::to_string(out.tellp() - before) +
                                       " bytes written, expected " + std::to_string(sizes[i]));
            }
        }
        out.flush();
        if (!out) {
            const int error = errno;  // EFBIG, ENOSPC, EIO, …, as write_file_atomic reports it
            throw InputError("cannot write '" + path +
                             "': " + (error ? std::string(std::strerror(error)) : "write failed") +
                             " (disk full or over a file-size limit?)");
        }
    } catch (...) {
        std::remove(temp.c_str());
        throw;
    }
    if (std::rename(temp.c_str(), path.c_str()) != 0) {
        std::remove(temp.c_str());
        throw InputError("cannot write '" + path + "': rename from temporary file failed");
    }
}

void write_safetensors(const std::string& path, const std::vector<HostTensor>& tensors,
                       const std::map<std::string, std::string>& metadata) {
    std::vector<TensorSpec> specs;
    for (const HostTensor& tensor : tensors) {
        specs.push_back({tensor.name, tensor.dtype, tensor.shape});
        std::uint64_t numel = 1, needed = 0;
        for (auto extent : tensor.shape)
            if (extent < 0 || !multiply_checked(numel, static_cast<std::uint64_t>(extent), numel))
                numel = 0;  // reported by the streamed writer
        const bool sized =
            multiply_checked(numel, dtype_size(tensor.dtype), needed) && needed == tensor.bytes;
        const bool shape_ok = std::all_of(tensor.shape.begin(), tensor.shape.end(),
                                          [](std::int64_t e) { return e >= 0; });
        if (shape_ok && !sized) {
            throw std::invalid_argument(
                "write_safetensors: tensor '" + tensor.name + "': " + std::to_string(tensor.bytes) +
                " bytes for shape " + shape_text(tensor.shape) + " of " + to_string(tensor.dtype));
        }
        if (tensor.bytes > 0 && tensor.data == nullptr) {
            throw std::invalid_argument("write_safetensors: tensor '" + tensor.name +
                                        "': null data");
        }
    }
    write_safetensors_streamed(
        path, specs,
        [&](std::size_t i, std::ostream& out) {
            out.write(static_cast<const char*>(tensors[i].data),
                      static_cast<std::streamsize>(tensors[i].bytes));
        },
        metadata);
}

namespace {

// Which tensors go into which shard: greedy in order, a new shard when the next tensor would
// push the current one past `max_shard_bytes` (transformers' shard_checkpoint does the same).
std::vector<std::vector<std::size_t>> assign_shards(const std::vector<TensorSpec>& tensors,
                                                    std::uint64_t max_shard_bytes,
                                                    std::uint64_t& total_bytes) {
    std::vector<std::vector<std::size_t>> shards;
    std::uint64_t in_current = 0;
    total_bytes = 0;
    for (std::size_t i = 0; i < tensors.size(); ++i) {
        std::uint64_t bytes = dtype_size(tensors[i].dtype);
        for (auto extent : tensors[i].shape)
            bytes *= static_cast<std::uint64_t>(std::max<std::int64_t>(extent, 0));
        if (shards.empty() || (in_current > 0 && in_current + bytes > max_shard_bytes)) {
            shards.emplace_back();
            in_current = 0;
        }
        shards.back().push_back(i);
        in_current += bytes;
        total_bytes += bytes;
    }
    return shards;
}

std::string shard_file_name(std::size_t index, std::size_t count) {
    char name[64];
    std::snprintf(name, sizeof name, "model-%05zu-of-%05zu.safetensors", index + 1, count);
    return name;
}

}  // namespace

std::vector<std::string> write_safetensors_sharded(
    const std::string& folder, const std::vector<TensorSpec>& tensors,
    std::uint64_t max_shard_bytes,
    const std::function<void(std::size_t, std::ostream&)>& write_tensor,
    const std::map<std::string, std::string>& metadata) {
    if (max_shard_bytes == 0)
        throw std::invalid_argument("write_safetensors_sharded: max_shard_bytes must be > 0");
    std::uint64_t total_bytes = 0;
    const auto shards = assign_shards(tensors, max_shard_bytes, total_bytes);
    std::vector<std::string> names;
    nlohmann::json weight_map = nlohmann::json::object();
    for (std::size_t s = 0; s < shards.size(); ++s) {
        names.push_back(shard_file_name(s, shards.size()));
        std::vector<TensorSpec> specs;
        for (std::size_t i : shards[s]) {
            specs.push_back(tensors[i]);
            weight_map[tensors[i].name] = names.back();
        }
        write_safetensors_streamed(
            join_path(folder, names.back()), specs,
            [&](std::size_t local, std::ostream& out) { write_tensor(shards[s][local], out); },
            metadata);
    }
    // Written last: a folder whose index exists has every shard it names.
    const nlohmann::json index = {{"metadata", {{"total_size", total_bytes}}},
                                  {"weight_map", weight_map}};
    write_file_atomic(join_path(folder, "model.safetensors.index.json"), index.dump(2) + "\n");
    return names;
}

std::string shape_text(const std::vector<std::int64_t>& shape) {
    std::string text = "[";
    for (std::size_t i = 0; i < shape.size(); ++i)
        text += (i ? ", " : "") + (shape[i] < 0 ? std::string("T") : std::to_string(shape[i]));
    return text + "]";
}

}  // namespace attngeo
