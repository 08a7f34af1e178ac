// The exact state of an extract run on disk: save/load, the fingerprint, and ExtractState's
// resume / spill / checkpoint; see extract_state.hpp.
#include "empirical/extract/extract_state.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <limits>
#include <memory>
#include <stdexcept>
#include <utility>

#include "common/errors.hpp"
#include "common/run_schema.hpp"
#include "common/safetensors.hpp"
#include "common/size_checks.hpp"

namespace fs = std::filesystem;

namespace attngeo::empirical {
namespace {

// 2: the state gained the per-N exact_decisions counts (HeadStatistics::visit_state).
// 3: the spill's window records gained the claims' seven arrays (PerDocLayout), so a
// checkpoint of an older run, whose spill holds shorter records, is refused on --resume.
// 4: the window records gained the attention-sink measures (PerDocLayout, docs/design.md §15).
constexpr const char* kStateFormat = "attngeo-extract-state-4";

// FNV-1a, 64 bits (Fowler, Noll, Vo): fast, stable across platforms, enough to tell runs apart.
// The seed is one digit short of FNV's published offset basis; it is what every existing state
// and folder was fingerprinted with, so it stays.
constexpr std::uint64_t kFnvSeed = 1469598103934665603ULL;
std::uint64_t fnv1a(const void* data, std::size_t bytes, std::uint64_t hash) {
    const auto* p = static_cast<const unsigned char*>(data);
    for (std::size_t i = 0; i < bytes; ++i)
        hash = (hash ^ p[i]) * 1099511628211ULL;
    return hash;
}

std::string hex64(std::uint64_t x) {
    char buffer[17];
    std::snprintf(buffer, sizeof buffer, "%016llx", static_cast<unsigned long long>(x));
    return buffer;
}

// Whether a saved state's metadata names this run and shard.
bool same_run(const std::map<std::string, std::string>& saved,
              const std::map<std::string, std::string>& ours) {
    return saved.count("run_fingerprint") && saved.count("shard") &&
           saved.at("run_fingerprint") == ours.at("run_fingerprint") &&
           saved.at("shard") == ours.at("shard");
}

}  // namespace

StatisticsGrid make_grid(int layers, int heads, const StatisticsSettings& settings) {
    return StatisticsGrid(layers, std::vector<HeadStatistics>(heads, HeadStatistics(settings)));
}

const char* const PerDocLayout::kNames[PerDocLayout::kTensors] = {"P",
                                                                  "R",
                                                                  "rho0",
                                                                  "lambda",
                                                                  "cos_by_lag",
                                                                  "alpha",
                                                                  "C",
                                                                  "m_sink",
                                                                  "m_last",
                                                                  "m_rest",
                                                                  "Fmax",
                                                                  "Fmin",
                                                                  "cos_s_v0",
                                                                  "cos_s_vL",
                                                                  "sink_attention",
                                                                  "key_norm_ratio",
                                                                  "cos_query_sink",
                                                                  "cos_query_rest",
                                                                  "massive",
                                                                  "secondary_sinks"};

namespace {
// What follows [L, H] in each tensor of PerDocLayout, in kNames order; per_layer follows [L]
// only, per_window stands alone.
enum class Inner { scalar, sizes, lags, positions, per_layer, per_window };
constexpr Inner kInner[PerDocLayout::kTensors] = {
    Inner::sizes,     Inner::sizes,  Inner::scalar, Inner::scalar,    Inner::lags,
    Inner::positions, Inner::scalar, Inner::scalar, Inner::scalar,    Inner::scalar,
    Inner::sizes,     Inner::sizes,  Inner::sizes,  Inner::sizes,     Inner::scalar,
    Inner::scalar,    Inner::scalar, Inner::scalar, Inner::per_layer, Inner::per_window};
}  // namespace

std::int64_t PerDocLayout::inner(int tensor) const {
    switch (kInner[tensor]) {
        case Inner::sizes:
            return sizes;
        case Inner::lags:
            return max_lag;
        case Inner::positions:
            return context;
        case Inner::per_layer:
            return kMassiveFields;
        case Inner::per_window:
            return kSecondarySinks * kSecondaryFields;
        default:
            return 1;
    }
}

std::vector<std::int64_t> PerDocLayout::shape(int tensor, std::int64_t documents) const {
    if (kInner[tensor] == Inner::per_layer) return {documents, layers, kMassiveFields};
    if (kInner[tensor] == Inner::per_window) return {documents, kSecondarySinks, kSecondaryFields};
    std::vector<std::int64_t> dims = {documents, layers, heads};
    if (kInner[tensor] != Inner::scalar) dims.push_back(inner(tensor));
    return dims;
}

std::int64_t PerDocLayout::block(int tensor) const {
    if (kInner[tensor] == Inner::per_layer) return layers * inner(tensor);
    if (kInner[tensor] == Inner::per_window) return inner(tensor);
    return layers * heads * inner(tensor);
}

std::int64_t PerDocLayout::offset(int tensor) const {
    std::int64_t o = 0;
    for (int t = 0; t < tensor; ++t)
        o += block(t);
    return o;
}

PerDocLayout per_doc_layout(int layers, int heads, const StatisticsSettings& settings) {
    PerDocLayout layout;
    layout.layers = layers;
    layout.heads = heads;
    layout.sizes = static_cast<std::int64_t>(settings.sizes.size());
    layout.max_lag = settings.max_lag;
    layout.context = settings.context;
    return layout;
}

// The sink measures start as NaN: a window whose forward did not measure them (a planted or
// Python-made folder) says so instead of reading as zero.
WindowRecord::WindowRecord(const PerDocLayout& layout)
    : layout_(layout), floats_(layout.record_floats()) {
    std::fill(floats_.begin() + layout.offset(PerDocLayout::sink_attention), floats_.end(),
              std::numeric_limits<float>::quiet_NaN());
}

void WindowRecord::set(int layer, int head, const DocumentRecord& document) {
    const std::int64_t at = static_cast<std::int64_t>(layer) * layout_.heads + head;
    // The per-head arrays in tensor order; scalars as one-element ranges.
    const std::pair<const float*, std::size_t> parts[PerDocLayout::kTensors] = {
        {document.precision.data(), document.precision.size()},
        {document.recall.data(), document.recall.size()},
        {&document.rho0, 1},
        {&document.lambda, 1},
        {document.cos_by_lag.data(), document.cos_by_lag.size()},
        {document.alpha.data(), document.alpha.size()},
        {&document.C, 1},
        {&document.m_sink, 1},
        {&document.m_last, 1},
        {&document.m_rest, 1},
        {document.f_rmax.data(), document.f_rmax.size()},
        {document.f_rmin.data(), document.f_rmin.size()},
        {document.cos_s_v0.data(), document.cos_s_v0.size()},
        {document.cos_s_vL.data(), document.cos_s_vL.size()}};
    for (int t = 0; t < PerDocLayout::kStatisticTensors; ++t) {
        const std::int64_t width = layout_.inner(t);
        if (static_cast<std::int64_t>(parts[t].second) != width)
            throw std::invalid_argument(
                "WindowRecord::set: tensor '" + std::string(PerDocLayout::kNames[t]) + "' has " +
                std::to_string(parts[t].second) + " values for one head, the layout " +
                std::to_string(width));
        std::copy(parts[t].first, parts[t].first + width,
                  floats_.begin() + layout_.offset(t) + at * width);
    }
}

namespace {
// The token id at `position` of the window, as a float (exact below 2^24).
float token_at(const std::vector<std::int64_t>& tokens, int position) {
    if (position < 0 || static_cast<std::size_t>(position) >= tokens.size())
        throw std::invalid_argument("WindowRecord: a sink position outside the window");
    return static_cast<float>(tokens[static_cast<std::size_t>(position)]);
}
}  // namespace

void WindowRecord::set_sinks(int layer, const LayerSinks& sinks,
                             const std::vector<std::int64_t>& tokens) {
    if (static_cast<std::int64_t>(sinks.geometry.size()) != layout_.heads)
        throw std::invalid_argument("WindowRecord::set_sinks: one geometry per head expected");
    for (std::int64_t h = 0; h < layout_.heads; ++h) {
        const std::int64_t at = static_cast<std::int64_t>(layer) * layout_.heads + h;
        const KeyGeometry& g = sinks.geometry[static_cast<std::size_t>(h)];
        floats_[layout_.offset(PerDocLayout::sink_attention) + at] =
            static_cast<float>(sinks.sink_attention(static_cast<int>(h)));
        floats_[layout_.offset(PerDocLayout::key_norm_ratio) + at] =
            static_cast<float>(g.key_norm_ratio);
        floats_[layout_.offset(PerDocLayout::cos_query_sink) + at] =
            static_cast<float>(g.cos_query_sink);
        floats_[layout_.offset(PerDocLayout::cos_query_rest) + at] =
            static_cast<float>(g.cos_query_rest);
    }
    const MassiveActivation& m = sinks.massive;
    const float fields[PerDocLayout::kMassiveFields] = {
        static_cast<float>(m.largest), static_cast<float>(m.median), static_cast<float>(m.token),
        static_cast<float>(m.dim), token_at(tokens, m.token)};
    std::copy(fields, fields + PerDocLayout::kMassiveFields,
              floats_.begin() + layout_.offset(PerDocLayout::massive) +
                  static_cast<std::int64_t>(layer) * PerDocLayout::kMassiveFields);
}

void WindowRecord::set_secondary_sinks(const std::vector<SecondarySink>& sinks,
                                       const std::vector<std::int64_t>& tokens) {
    auto first = floats_.begin() + layout_.offset(PerDocLayout::secondary_sinks);
    std::fill(first, first + layout_.block(PerDocLayout::secondary_sinks),
              std::numeric_limits<float>::quiet_NaN());
    const std::size_t kept =
        std::min(sinks.size(), static_cast<std::size_t>(PerDocLayout::kSecondarySinks));
    for (std::size_t i = 0; i < kept; ++i) {
        const SecondarySink& s = sinks[i];
        const float fields[PerDocLayout::kSecondaryFields] = {
            static_cast<float>(s.position), token_at(tokens, s.position),
            static_cast<float>(s.heads), static_cast<float>(s.largest_mean)};
        std::copy(fields, fields + PerDocLayout::kSecondaryFields,
                  first + static_cast<std::int64_t>(i) * PerDocLayout::kSecondaryFields);
    }
}

std::string run_fingerprint(const std::string& settings_text,
                            const std::vector<std::vector<std::int64_t>>& windows) {
    std::uint64_t hash = fnv1a(settings_text.data(), settings_text.size(), kFnvSeed);
    for (const auto& window : windows)
        hash = fnv1a(window.data(), window.size() * sizeof(std::int64_t), hash);
    return hex64(hash);
}

void save_state(const std::string& path, const StatisticsGrid& grid,
                const std::map<std::string, std::string>& metadata) {
    auto words = std::make_shared<std::vector<std::int64_t>>();
    for (const auto& layer : grid)
        for (const HeadStatistics& head : layer)
            head.save(*words);
    HostTensor state;
    state.name = "state";
    state.dtype = DType::I64;
    state.shape = {static_cast<std::int64_t>(words->size())};
    state.data = words->data();
    state.bytes = words->size() * sizeof(std::int64_t);
    state.owner = std::shared_ptr<const void>(words, words->data());
    auto meta = metadata;
    meta["format"] = kStateFormat;
    write_safetensors(path, {state}, meta);
}

std::map<std::string, std::string> load_state(const std::string& path, StatisticsGrid& grid) {
    const SafetensorsFile file(path);
    const auto& meta = file.metadata();
    if (!meta.count("format") || meta.at("format") != kStateFormat)
        throw InputError("'" + path + "': not an attngeo extract state (format '" +
                         (meta.count("format") ? meta.at("format") : "") + "', expected '" +
                         kStateFormat + "')");
    const HostTensor state = file.get("state");
    std::size_t expected = 0;
    for (const auto& layer : grid)
        for (const HeadStatistics& head : layer)
            expected += head.saved_words();
    if (state.dtype != DType::I64 || state.shape.size() != 1 ||
        static_cast<std::size_t>(state.shape[0]) != expected)
        throw InputError("'" + path + "': tensor 'state' has shape " +
                         std::to_string(state.shape.empty() ? 0 : state.shape[0]) + " of " +
                         to_string(state.dtype) + ", expected [" + std::to_string(expected) +
                         "] of I64 (a run with other settings?)");
    check_allocation(expected, sizeof(std::int64_t), "'" + path + "': tensor 'state'");
    std::vector<std::int64_t> words(expected);
    std::memcpy(words.data(), state.data, expected * sizeof(std::int64_t));
    const std::int64_t* cursor = words.data();
    for (auto& layer : grid)
        for (HeadStatistics& head : layer)
            head.load(cursor, words.data() + words.size());
    return meta;
}

ExtractState::ExtractState(const std::string& out, StatisticsGrid grid, const PerDocLayout& layout,
                           std::map<std::string, std::string> metadata, std::int64_t windows)
    : out_(out),
      partial_(out_ / schema::file::resume_state_folder),
      state_path_(partial_ / "state.safetensors"),
      spill_path_(partial_ / "per_doc.bin"),
      grid_(std::move(grid)),
      layout_(layout),
      metadata_(std::move(metadata)),
      windows_(windows) {}

ExtractState::~ExtractState() {
    if (spill_) std::fclose(spill_);
    if (!owned_) return;
    std::error_code ec;
    fs::remove_all(partial_, ec);
    if (!out_existed_ && fs::is_empty(out_, ec)) fs::remove(out_, ec);
}

bool ExtractState::finished_in_out() const {
    if (fs::exists(state_path_) || !fs::exists(out_ / schema::file::manifest) ||
        !fs::exists(out_ / schema::file::exact_state))
        return false;
    return same_run(SafetensorsFile((out_ / schema::file::exact_state).string()).metadata(),
                    metadata_);
}

void ExtractState::open(bool resume) {
    out_existed_ = fs::exists(out_);
    if (fs::exists(state_path_)) {
        if (!resume)
            throw InputError("--out '" + out_.string() +
                             "': holds an interrupted extract (.partial/); pass --resume to "
                             "continue it, or remove the folder");
        resume_from_checkpoint();
    } else {
        start_empty();
    }
    check_resources();
    spill_ = std::fopen(spill_path_.c_str(), "ab");
    if (!spill_)
        throw InputError("--out '" + out_.string() + "': cannot open " + spill_path_.string());
}

void ExtractState::resume_from_checkpoint() {
    if (!same_run(SafetensorsFile(state_path_.string()).metadata(), metadata_))
        throw InputError("--resume: '" + state_path_.string() +
                         "' belongs to a different run (model, corpus, windows, settings or "
                         "shard differ); use another --out");
    load_state(state_path_.string(), grid_);
    done_ = grid_[0][0].documents();
    // A state overwritten in place still parses; its counts must still describe this shard.
    for (const auto& layer : grid_)
        for (const HeadStatistics& head : layer)
            if (head.documents() != done_ || done_ < 0 || done_ > windows_)
                throw InputError("--resume: '" + state_path_.string() + "': corrupt (" +
                                 std::to_string(head.documents()) +
                                 " documents in a head, expected the same count in 0.." +
                                 std::to_string(windows_) + " for every head); remove '" +
                                 partial_.string() + "' and run again without --resume");
    owned_ = true;
    const std::int64_t record_bytes = layout_.record_floats() * sizeof(float);
    std::error_code ec;
    const auto spilled = fs::file_size(spill_path_, ec);
    if (ec || static_cast<std::int64_t>(spilled) < done_ * record_bytes)
        throw InputError("--resume: '" + spill_path_.string() + "' is missing or shorter than " +
                         std::to_string(done_) + " documents; the checkpoint cannot be used");
    fs::resize_file(spill_path_, done_ * record_bytes);  // drop a record written after it
}

void ExtractState::start_empty() {
    std::error_code ec;
    fs::create_directories(partial_, ec);
    if (ec)
        throw InputError("--out '" + out_.string() + "': cannot create folder: " + ec.message());
    owned_ = true;
    std::ofstream(spill_path_, std::ios::binary | std::ios::trunc);
}

void ExtractState::check_resources() const {
    check_allocation(static_cast<std::uint64_t>(layout_.record_floats()), sizeof(float),
                     "--out '" + out_.string() + "': one window's per-document record");
    std::error_code ec;
    const fs::space_info space = fs::space(partial_, ec);
    const std::uint64_t spill_bytes =
        checked_bytes(windows_ - done_, layout_.record_floats() * sizeof(float));
    if (!ec && space.available < spill_bytes)
        throw InputError("--out '" + out_.string() + "': the per-document spill needs " +
                         std::to_string(spill_bytes) + " bytes, the disk has " +
                         std::to_string(space.available) + " free");
}

void ExtractState::append(const WindowRecord& record) {
    const std::vector<float>& floats = record.floats();
    if (std::fwrite(floats.data(), sizeof(float), floats.size(), spill_) != floats.size())
        throw InputError("--out '" + out_.string() + "': cannot write " + spill_path_.string() +
                         " (disk full?)");
    ++done_;
}

void ExtractState::checkpoint() {
    if (std::fflush(spill_) != 0 || ::fsync(::fileno(spill_)) != 0)
        throw InputError("--out '" + out_.string() + "': cannot write " + spill_path_.string() +
                         " (disk full?)");
    save_state(state_path_.string(), grid_, metadata_);
}

void ExtractState::release() {
    owned_ = false;
}

void ExtractState::copy_per_doc(int tensor, std::ostream& stream) const {
    std::ifstream spilled(spill_path_, std::ios::binary);
    const std::int64_t record_bytes = layout_.record_floats() * sizeof(float);
    std::vector<char> block(layout_.block(tensor) * sizeof(float));
    for (std::int64_t doc = 0; doc < done_; ++doc) {
        spilled.seekg(doc * record_bytes + layout_.offset(tensor) * sizeof(float));
        spilled.read(block.data(), static_cast<std::streamsize>(block.size()));
        if (!spilled) throw InputError("'" + spill_path_.string() + "': truncated while copying");
        stream.write(block.data(), static_cast<std::streamsize>(block.size()));
    }
}

void ExtractState::remove_partial() {
    if (spill_) std::fclose(spill_);
    spill_ = nullptr;
    owned_ = false;
    std::error_code ec;
    fs::remove(state_path_, ec);
    fs::remove_all(partial_, ec);
}

}  // namespace attngeo::empirical
