// `attngeo merge` for truncate shards: checks that the folders are the shards 0..n−1 of one
// run and concatenates their per-window arrays and windows (and merges their extract/ folders);
// see truncate_merge.hpp.
#include "empirical/truncate/truncate_merge.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "common/atomic_file.hpp"
#include "common/errors.hpp"
#include "common/json_file.hpp"
#include "common/run_schema.hpp"
#include "common/safetensors.hpp"
#include "common/shard.hpp"
#include "empirical/extract/extract_folder.hpp"

namespace fs = std::filesystem;

namespace attngeo::empirical {
namespace {

struct TruncateShard {
    std::string dir;
    nlohmann::json manifest;
    int index = 0, count = 1;
};

TruncateShard read_truncate_shard(const std::string& dir) {
    TruncateShard s;
    s.dir = dir;
    s.manifest = read_run_manifest(dir, {schema::kind::truncate});
    const std::string path = run_manifest_path(dir);
    const std::string shard = with_json_context(
        path, [&] { return s.manifest.at("parameters").at("shard").get<std::string>(); });
    char slash = 0;
    if (std::sscanf(shard.c_str(), "%d%c%d", &s.index, &slash, &s.count) != 3 || slash != '/' ||
        s.count < 1 || s.index < 0 || s.index >= s.count)
        throw InputError("merge: '" + path + "': parameters.shard '" + shard +
                         "', expected i/n from `truncate --shard i/n`");
    with_json_context(path, [&] { (void)s.manifest.at("run_fingerprint").get<std::string>(); });
    return s;
}

// The shard set's identities for common/shard's check.
std::vector<ShardFolder> shard_folders(const std::vector<TruncateShard>& shards) {
    std::vector<ShardFolder> folders;
    for (const TruncateShard& s : shards)
        folders.push_back(
            {s.dir, s.manifest.at("run_fingerprint").get<std::string>(), {s.index, s.count}});
    return folders;
}

// Tensor `name` of every shard, concatenated along its last dimension (the windows) for the
// measures, or checked equal for the configuration columns.
HostTensor merged_tensor(const std::vector<SafetensorsFile>& files, const std::string& name,
                         bool per_window, std::vector<std::vector<char>>& buffers) {
    const HostTensor first = files[0].get(name);
    HostTensor merged = first;
    if (!per_window) {
        for (const auto& file : files) {
            const HostTensor other = file.get(name);
            if (other.shape != first.shape || other.dtype != first.dtype ||
                std::memcmp(other.data, first.data, first.bytes) != 0)
                throw InputError("merge: '" + file.path() + "': tensor \"" + name +
                                 "\" differs from the first shard's (not the same configurations)");
        }
        return merged;
    }
    const std::int64_t rows = first.shape.size() == 2 ? first.shape[0] : 1;
    std::int64_t windows = 0;
    for (const auto& file : files) {
        const HostTensor part = file.get(name);
        if (part.shape.size() != first.shape.size() || part.dtype != first.dtype ||
            (first.shape.size() == 2 && part.shape[0] != rows))
            throw InputError("merge: '" + file.path() + "': tensor \"" + name +
                             "\" has another shape than the first shard's");
        windows += part.shape.back();
    }
    const std::size_t element = dtype_size(first.dtype);
    std::vector<char> bytes(static_cast<std::size_t>(rows * windows) * element);
    std::int64_t offset = 0;
    for (const auto& file : files) {
        const HostTensor part = file.get(name);
        const std::int64_t w = part.shape.back();
        for (std::int64_t r = 0; r < rows; ++r)
            std::memcpy(bytes.data() + (r * windows + offset) * element,
                        static_cast<const char*>(part.data) + r * w * element, w * element);
        offset += w;
    }
    buffers.push_back(std::move(bytes));
    merged.data = buffers.back().data();
    merged.bytes = buffers.back().size();
    merged.shape.back() = windows;
    merged.owner.reset();
    return merged;
}

void merge_per_doc(const std::vector<TruncateShard>& shards, const std::string& staging) {
    std::vector<SafetensorsFile> files;
    for (const auto& s : shards)
        files.emplace_back((fs::path(s.dir) / schema::file::per_document).string());
    std::vector<std::vector<char>> buffers;
    buffers.reserve(16);
    std::vector<HostTensor> tensors;
    for (const char* name : {"delta_nll", "kl", "top1", "dropped_mass", "output_error", "nll_full"})
        tensors.push_back(merged_tensor(files, name, true, buffers));
    for (const char* name : {"policy", "renorm", "layer", "head", "N"})
        tensors.push_back(merged_tensor(files, name, false, buffers));
    write_safetensors((fs::path(staging) / schema::file::per_document).string(), tensors);
}

void merge_windows(const std::vector<TruncateShard>& shards, const std::string& staging) {
    std::string text;
    for (const auto& s : shards) {
        const fs::path path = fs::path(s.dir) / schema::file::windows;
        std::ifstream in(path, std::ios::binary);
        if (!in) throw InputError("merge: '" + path.string() + "': cannot be read");
        text.append(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
    write_file_atomic((fs::path(staging) / schema::file::windows).string(), text);
}

nlohmann::json merged_manifest(const std::vector<TruncateShard>& shards,
                               const std::string& command_line) {
    nlohmann::json manifest = shards[0].manifest;
    std::int64_t windows = 0;
    nlohmann::json sources = nlohmann::json::array();
    for (const auto& s : shards) {
        windows += with_json_context(run_manifest_path(s.dir), [&] {
            return s.manifest.at("documents").at("windows").get<std::int64_t>();
        });
        sources.push_back(s.dir);
    }
    manifest["documents"]["windows"] = windows;
    manifest["parameters"]["shard"] = "0/1";
    manifest["merged_from"] = sources;
    manifest["command"] = command_line;
    manifest.erase("timings");
    return manifest;
}

}  // namespace

bool is_truncate_run(const std::string& dir) {
    try {
        (void)read_run_manifest(dir, {schema::kind::truncate});
        return true;
    } catch (const InputError&) {
        return false;
    }
}

void merge_truncate(const std::vector<std::string>& dirs, const std::string& staging,
                    const std::string& command_line) {
    std::vector<TruncateShard> shards;
    for (const auto& dir : dirs)
        shards.push_back(read_truncate_shard(dir));
    std::sort(shards.begin(), shards.end(),
              [](const auto& a, const auto& b) { return a.index < b.index; });
    check_shard_set(shard_folders(shards));
    merge_per_doc(shards, staging);
    merge_windows(shards, staging);
    if (fs::exists(fs::path(shards[0].dir) / schema::file::geometry_extract)) {
        std::vector<std::string> extracts;
        for (const auto& s : shards)
            extracts.push_back((fs::path(s.dir) / schema::file::geometry_extract).string());
        merge_extract(extracts, (fs::path(staging) / schema::file::geometry_extract).string(),
                      command_line);
    }
    write_file_atomic((fs::path(staging) / schema::file::manifest).string(),
                      merged_manifest(shards, command_line).dump(2) + "\n");
}

}  // namespace attngeo::empirical
