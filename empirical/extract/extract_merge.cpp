// `attngeo merge` for extract shards: checks that the folders are the shards 0..n−1 of one
// run, adds their exact sums and concatenates their per-document arrays; see extract_folder.hpp.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "common/errors.hpp"
#include "common/json_file.hpp"
#include "common/run_schema.hpp"
#include "common/safetensors.hpp"
#include "common/shard.hpp"
#include "empirical/extract/extract_folder.hpp"
#include "empirical/extract/head_snapshot.hpp"

namespace fs = std::filesystem;

namespace attngeo::empirical {
namespace {

// One shard folder: its manifest and the metadata of its sums.safetensors.
struct ExtractShard {
    std::string dir;
    nlohmann::json manifest;
    std::map<std::string, std::string> meta;
    int index = 0, count = 0;
};

ExtractShard read_shard(const std::string& dir) {
    ExtractShard s;
    s.dir = dir;
    const std::string manifest_path = (fs::path(dir) / schema::file::manifest).string();
    if (!fs::exists(manifest_path))
        throw InputError("merge: '" + dir + "': no manifest.json (an unfinished shard?)");
    s.manifest = read_run_manifest(dir, {schema::kind::extract});
    s.meta = SafetensorsFile((fs::path(dir) / schema::file::exact_state).string()).metadata();
    if (!s.meta.count("shard") || !s.meta.count("run_fingerprint") || !s.meta.count("settings"))
        throw InputError("merge: '" + dir + "/sums.safetensors': no shard metadata");
    if (std::sscanf(s.meta.at("shard").c_str(), "%d/%d", &s.index, &s.count) != 2)
        throw InputError("merge: '" + dir + "/sums.safetensors': bad shard '" + s.meta.at("shard") +
                         "'");
    return s;
}

// The shard set's identities for common/shard's check.
std::vector<ShardFolder> shard_folders(const std::vector<ExtractShard>& shards) {
    std::vector<ShardFolder> folders;
    for (const ExtractShard& s : shards)
        folders.push_back({s.dir, s.meta.at("run_fingerprint"), {s.index, s.count}});
    return folders;
}

// What must agree between shards of one run: every parameter and the model's description, up to
// --shard, --device and the folders (a run may move between machines; the run fingerprint
// already covers the token windows, and the model file's name stands in for its weights).
nlohmann::json command_identity(const ExtractShard& shard) {
    return with_json_context((fs::path(shard.dir) / schema::file::manifest).string(), [&] {
        nlohmann::json parameters = shard.manifest.at("parameters"),
                       model = shard.manifest.at("model");
        for (const char* key : {"shard", "device", "tokens", "corpus"})
            parameters.erase(key);
        model.erase("device");
        model["path"] = fs::path(model.at("path").get<std::string>()).filename().string();
        return nlohmann::json{{"parameters", parameters}, {"model", model}};
    });
}

// Refuses shards whose commands differ, naming the shard and the first value that differs.
void check_same_command(const std::vector<ExtractShard>& shards) {
    const nlohmann::json first = command_identity(shards[0]);
    for (std::size_t i = 1; i < shards.size(); ++i) {
        const nlohmann::json other = command_identity(shards[i]);
        if (other == first) continue;
        const nlohmann::json patch = nlohmann::json::diff(first, other);
        throw InputError("merge: '" + shards[i].dir + "' is from a different command than '" +
                         shards[0].dir + "' (" + patch.at(0).value("path", std::string("?")) +
                         " differs)");
    }
}

// `where` names the metadata the settings come from, for a message about a bad name.
StatisticsSettings settings_from_json(const nlohmann::json& j, const std::string& where) {
    StatisticsSettings s;
    s.context = json_integer<int>(j.at("context"));
    s.max_lag = json_integer<int>(j.at("max_lag"));
    for (const nlohmann::json& size : j.at("sizes").get_ref<const nlohmann::json::array_t&>())
        s.sizes.push_back(json_integer<int>(size));
    s.ranking = theory::parse_ranking(j.at("rank").get<std::string>(), where + ".rank");
    s.distance = theory::parse_distance(j.at("distance").get<std::string>(), where + ".distance");
    if (j.contains("positions")) {  // --queries (docs/design.md §14)
        for (const nlohmann::json& t : j.at("positions").get_ref<const nlohmann::json::array_t&>())
            s.positions.push_back(json_integer<int>(t));
        for (const nlohmann::json& bin :
             j.at("length_bins").get_ref<const nlohmann::json::array_t&>())
            s.length_bins.push_back({json_integer<int>(bin.at(0)), json_integer<int>(bin.at(1)),
                                     json_integer<int>(bin.at(2))});
    }
    return s;
}

// The run's shape from the first shard's settings metadata.
struct MergedShape {
    StatisticsSettings settings;
    int layers = 0, heads = 0, group = 1;
};

MergedShape read_merged_shape(const ExtractShard& first) {
    const std::string sums = (fs::path(first.dir) / schema::file::exact_state).string();
    const nlohmann::json json =
        parse_json_text(first.meta.at("settings"), sums, "extract settings");
    MergedShape shape;
    with_json_context(sums + "' metadata 'settings", [&] {
        shape.settings = settings_from_json(json, sums + " metadata settings");
        shape.layers = json_integer<int>(json.at("layers"));
        shape.heads = json_integer<int>(json.at("heads"));
        const int kv_heads = json_integer<int>(json.at("kv_heads"));
        if (shape.layers < 1 || shape.heads < 1 || kv_heads < 1 || shape.heads % kv_heads != 0 ||
            shape.settings.context < 2)
            throw InputError("'" + sums + "': metadata 'settings' has layers " +
                             std::to_string(shape.layers) + ", heads " +
                             std::to_string(shape.heads) + ", kv_heads " +
                             std::to_string(kv_heads) +
                             ", expected positive counts with kv_heads dividing heads");
        shape.group = shape.heads / kv_heads;
    });
    return shape;
}

// Adds one shard's sums into `total` and checks its window count and per_doc shapes; returns
// the shard's per_doc.safetensors and window count.
std::pair<SafetensorsFile, std::int64_t> add_shard(const ExtractShard& s, const MergedShape& shape,
                                                   StatisticsGrid& total) {
    const int L = shape.layers, H = shape.heads;
    StatisticsGrid part = make_grid(L, H, shape.settings);
    load_state((fs::path(s.dir) / schema::file::exact_state).string(), part);
    for (int l = 0; l < L; ++l)
        for (int h = 0; h < H; ++h)
            total[l][h].merge(part[l][h]);
    SafetensorsFile per_doc((fs::path(s.dir) / schema::file::per_document).string());
    const std::int64_t docs = part[0][0].documents();
    const std::int64_t windows_in_run =
        with_json_context((fs::path(s.dir) / schema::file::manifest).string(), [&] {
            return json_integer<std::int64_t>(s.manifest.at("documents").at("windows_in_run"));
        });
    const std::int64_t expected_docs =
        windows_in_run * (s.index + 1) / s.count - windows_in_run * s.index / s.count;
    if (docs != expected_docs)
        throw InputError("merge: '" + s.dir + "' holds " + std::to_string(docs) +
                         " windows, shard " + s.meta.at("shard") + " of a run of " +
                         std::to_string(windows_in_run) + " has " + std::to_string(expected_docs) +
                         " (an incomplete or altered shard)");
    const PerDocLayout layout = per_doc_layout(L, H, shape.settings);
    for (int t = 0; t < PerDocLayout::kTensors; ++t) {
        if (!per_doc.contains(PerDocLayout::kNames[t]))
            throw InputError("merge: '" + per_doc.path() + "': no tensor '" +
                             PerDocLayout::kNames[t] +
                             "' (a shard written by an older attngeo; extract it again)");
        const HostTensor tensor = per_doc.get(PerDocLayout::kNames[t]);
        if (tensor.dtype != DType::F32 || tensor.shape != layout.shape(t, docs))
            throw InputError("merge: '" + per_doc.path() + "': tensor '" + PerDocLayout::kNames[t] +
                             "' does not match the shard's sums");
    }
    return {std::move(per_doc), docs};
}

// The --snapshot files come from the one shard that held the snapshot's window (a shard without
// it writes none), so the merged folder holds what the unsharded run writes.
std::map<std::string, std::string> snapshot_files(const std::vector<ExtractShard>& shards) {
    std::map<std::string, std::string> files;
    std::string holder;
    for (const ExtractShard& s : shards) {
        if (!fs::exists(fs::path(s.dir) / schema::file::snapshot_scalars)) continue;
        if (!holder.empty())
            throw InputError("merge: '" + holder + "' and '" + s.dir +
                             "' both hold snapshot files; expected one shard to");
        holder = s.dir;
        for (const char* name : kSnapshotFiles) {
            const fs::path path = fs::path(s.dir) / name;
            std::ifstream in(path, std::ios::binary);
            if (!in) throw InputError("merge: '" + path.string() + "': missing or unreadable");
            std::ostringstream text;
            text << in.rdbuf();
            files[name] = text.str();
        }
    }
    return files;
}

}  // namespace

nlohmann::json merge_extract(const std::vector<std::string>& dirs, const std::string& out_dir,
                             const std::string& command_line) {
    if (dirs.empty()) throw InputError("merge: no run folders given");
    std::vector<ExtractShard> shards;
    for (const std::string& dir : dirs)
        shards.push_back(read_shard(dir));
    std::sort(shards.begin(), shards.end(),
              [](const ExtractShard& a, const ExtractShard& b) { return a.index < b.index; });
    check_shard_set(shard_folders(shards));
    check_same_command(shards);
    const MergedShape shape = read_merged_shape(shards[0]);
    StatisticsGrid total = make_grid(shape.layers, shape.heads, shape.settings);
    std::vector<SafetensorsFile> per_doc;
    std::int64_t D = 0;
    for (const ExtractShard& s : shards) {
        auto [file, docs] = add_shard(s, shape, total);
        per_doc.push_back(std::move(file));
        D += docs;
    }
    nlohmann::json manifest = shards[0].manifest;
    manifest["command"] = command_line;
    manifest["parameters"]["shard"] = "0/1";
    manifest["documents"]["windows_used"] = D;
    manifest["merged_from"] = dirs;
    manifest["timings"] = {{"note", "merged; see the shards' manifests for their timings"}};
    std::map<std::string, std::string> meta = shards[0].meta;
    meta["shard"] = "0/1";
    meta["windows"] = std::to_string(D);
    meta.erase("format");
    write_extract_outputs(
        out_dir, shape.settings, total, shape.group, D,
        [&](int tensor, std::ostream& stream) {
            for (const SafetensorsFile& file : per_doc) {
                const HostTensor t = file.get(PerDocLayout::kNames[tensor]);
                stream.write(static_cast<const char*>(t.data),
                             static_cast<std::streamsize>(t.bytes));
            }
        },
        meta, manifest, snapshot_files(shards));
    return manifest;
}

}  // namespace attngeo::empirical
