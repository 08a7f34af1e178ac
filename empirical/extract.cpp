// The extract pipeline: windows → forward with last-row capture → HeadStatistics per
// (layer, head) → output files, each written atomically; see extract.hpp.
#include "empirical/extract.hpp"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstring>
#include <functional>
#include <map>
#include <optional>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "attngeo/version.hpp"
#include "common/atomic_file.hpp"
#include "common/errors.hpp"
#include "common/format.hpp"
#include "common/json_file.hpp"
#include "common/number_list.hpp"
#include "common/output_folder.hpp"
#include "common/progress.hpp"
#include "common/safetensors.hpp"
#include "common/size_checks.hpp"
#include "empirical/capture.hpp"
#include "empirical/device_metrics.hpp"
#include "empirical/llama2c.hpp"
#include "empirical/runc_forward.hpp"
#include "empirical/statistics.hpp"
#include "empirical/tokenizer.hpp"
#include "empirical/transformer.hpp"
#include "simulate/run.hpp"

namespace fs = std::filesystem;

namespace attngeo::empirical {
namespace {

// Wall time of the pipeline's parts, for the manifest and the benchmark.
struct TimingSplit {
    double forward = 0, capture = 0, metrics_device = 0, statistics = 0;
};

// Deterministic Fisher–Yates with SplitMix64, so the order is the same on every platform.
void seeded_shuffle(std::vector<std::vector<std::int64_t>>& items, std::uint64_t seed) {
    std::uint64_t state = seed;
    auto next = [&] {
        std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        return z ^ (z >> 31);
    };
    for (std::size_t i = items.size(); i > 1; --i)
        std::swap(items[i - 1], items[next() % i]);
}

}  // namespace

std::vector<std::string> read_corpus(const std::string& path) {
    std::ifstream in(path);
    if (!in) throw InputError("--corpus '" + path + "': cannot open");
    std::vector<std::string> documents;
    std::string line, current;
    int number = 0;
    const bool jsonl = fs::path(path).extension() == ".jsonl";
    while (std::getline(in, line)) {
        ++number;
        if (jsonl) {
            if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
            nlohmann::json record;
            try {
                record = nlohmann::json::parse(line);
            } catch (const std::exception&) {
                throw InputError("--corpus '" + path + "' line " + std::to_string(number) +
                                 ": not valid JSON");
            }
            if (!record.is_object() || !record.contains("text") || !record.at("text").is_string()) {
                throw InputError("--corpus '" + path + "' line " + std::to_string(number) +
                                 ": expected an object with a \"text\" string");
            }
            documents.push_back(record.at("text").get<std::string>());
            continue;
        }
        if (line.find_first_not_of(" \t\r") == std::string::npos) {  // a blank line ends a document
            if (!current.empty()) documents.push_back(current);
            current.clear();
        } else {
            current += (current.empty() ? "" : "\n") + line;
        }
    }
    if (!current.empty()) documents.push_back(current);
    return documents;
}

std::vector<std::vector<std::int64_t>> make_windows(
    const std::vector<std::vector<std::int64_t>>& documents, int context, int bos_id,
    const std::string& bos, int stride, std::int64_t max_docs, std::int64_t& skipped) {
    if (bos != "auto" && bos != "yes" && bos != "no")
        throw InputError("--bos: '" + bos + "', expected auto, yes or no");
    if (context < 2) throw InputError("--context: " + std::to_string(context) + ", expected >= 2");
    if (stride < 0) throw InputError("--stride: " + std::to_string(stride) + ", expected >= 0");
    std::vector<std::vector<std::int64_t>> windows;
    skipped = 0;
    std::int64_t used = 0;
    for (const auto& doc : documents) {
        if (max_docs > 0 && used >= max_docs) break;
        const bool starts_with_bos = !doc.empty() && doc.front() == bos_id;
        const bool add_bos = bos == "yes" || (bos == "auto" && !starts_with_bos);
        if (add_bos && bos_id < 0)
            throw InputError("--bos: the model has no BOS token id; use --bos no");
        const std::int64_t take = add_bos ? context - 1 : context;
        if (static_cast<std::int64_t>(doc.size()) < take) {
            ++skipped;
            continue;
        }
        ++used;
        const std::int64_t step = stride > 0 ? stride : static_cast<std::int64_t>(doc.size()) + 1;
        for (std::int64_t offset = 0; offset + take <= static_cast<std::int64_t>(doc.size());
             offset += step) {
            std::vector<std::int64_t> w;
            if (add_bos) w.push_back(bos_id);
            w.insert(w.end(), doc.begin() + offset, doc.begin() + offset + take);
            windows.push_back(std::move(w));
        }
    }
    return windows;
}

namespace {

// SIGINT/SIGTERM set a flag; the loop finishes the current window, checkpoints and stops.
volatile std::sig_atomic_t g_interrupted = 0;
extern "C" void on_interrupt(int) {
    g_interrupted = 1;
}
class InterruptGuard {
  public:
    InterruptGuard() {
        g_interrupted = 0;
        struct sigaction action {};
        action.sa_handler = on_interrupt;
        sigemptyset(&action.sa_mask);
        ::sigaction(SIGINT, &action, &old_int_);
        ::sigaction(SIGTERM, &action, &old_term_);
    }
    ~InterruptGuard() {
        ::sigaction(SIGINT, &old_int_, nullptr);
        ::sigaction(SIGTERM, &old_term_, nullptr);
    }

  private:
    struct sigaction old_int_ {
    }, old_term_{};
};

// 2: the state gained the per-N exact_decisions counts (HeadStatistics::visit_state).
constexpr const char* kStateFormat = "attngeo-extract-state-2";

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

// Per (layer, head) statistics of one run: [layers][heads].
using StatisticsGrid = std::vector<std::vector<HeadStatistics>>;

// The layout of one window's record in the per-document spill file and of per_doc.safetensors:
// P [L, H, S], R [L, H, S], rho0 [L, H], lambda [L, H], float32.
struct PerDocLayout {
    std::int64_t layers = 0, heads = 0, sizes = 0;
    std::int64_t block(int tensor) const {
        return tensor < 2 ? layers * heads * sizes : layers * heads;
    }
    std::int64_t offset(int tensor) const {
        std::int64_t o = 0;
        for (int t = 0; t < tensor; ++t)
            o += block(t);
        return o;
    }
    std::int64_t record_floats() const { return offset(4); }
};
const char* const kPerDocNames[4] = {"P", "R", "rho0", "lambda"};

// The exact state of every head as one I64 tensor, with what identifies the run.
void save_state(const std::string& path, const StatisticsGrid& stats,
                const std::map<std::string, std::string>& metadata) {
    auto words = std::make_shared<std::vector<std::int64_t>>();
    for (const auto& layer : stats)
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

// Loads what save_state wrote into `stats` (already constructed with the run's settings).
std::map<std::string, std::string> load_state(const std::string& path, StatisticsGrid& stats) {
    const SafetensorsFile file(path);
    const auto& meta = file.metadata();
    if (!meta.count("format") || meta.at("format") != kStateFormat)
        throw InputError("'" + path + "': not an attngeo extract state (format '" +
                         (meta.count("format") ? meta.at("format") : "") + "', expected '" +
                         kStateFormat + "')");
    const HostTensor state = file.get("state");
    std::size_t expected = 0;
    for (const auto& layer : stats)
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
    for (auto& layer : stats)
        for (HeadStatistics& head : layer)
            head.load(cursor, words.data() + words.size());
    return meta;
}

// Everything a finished run writes, from its exact state and per-document arrays; used by
// extract and by merge so both give the same bytes.
void write_outputs(const fs::path& out, const StatisticsSettings& settings,
                   const StatisticsGrid& stats, int group, std::int64_t documents,
                   const std::function<void(int tensor, std::ostream&)>& per_doc_tensor,
                   const std::map<std::string, std::string>& state_metadata,
                   const nlohmann::json& manifest) {
    const int L = static_cast<int>(stats.size()), H = static_cast<int>(stats[0].size());
    const int context = settings.context;
    std::ostringstream heads, pr, by_position, lags, diag;
    heads << "layer,head,kv_head,docs,norm_mean,norm_median,cv_positional,cv_pooled,lambda,rho0,"
             "sink_mass,last_mass,m_sink,m_last,m_rest,regime,regime_margin\n";
    pr << "layer,head,N,docs,P_mean,P_se,R_mean,R_se,Fmax_mean,Fmin_mean,exact_decisions\n";
    by_position << "layer,head,pos,norm_mean,alpha_mean,contrib_mean\n";
    lags << "layer,head,lag,cos_mean,pairs\n";
    diag << "layer,head,N,s_norm,s_norm_no_sink,s_norm_no_last,cos_s_v0,cos_s_vL\n";
    const std::size_t S = settings.sizes.size();
    auto f = [](double x) { return format_double(x); };
    // A standard error needs two documents; with one it is undefined and written as an empty
    // field (compare reads that as "missing"), never as nan.
    auto se = [](double x) { return std::isfinite(x) ? format_double(x) : std::string(); };
    for (int l = 0; l < L; ++l) {
        for (int h = 0; h < H; ++h) {
            const HeadStatistics& s = stats[l][h];
            heads << l << ',' << h << ',' << h / group << ',' << s.documents() << ','
                  << f(s.norm_mean()) << ',' << f(s.norm_median()) << ',' << f(s.cv_positional())
                  << ',' << f(s.cv_pooled()) << ',' << f(s.lambda()) << ',' << f(s.rho0()) << ','
                  << f(s.sink_mass()) << ',' << f(s.last_mass()) << ',' << f(s.m_sink()) << ','
                  << f(s.m_last()) << ',' << f(s.m_rest()) << ',' << s.regime() << ','
                  << f(s.regime_margin()) << '\n';
            for (std::size_t i = 0; i < S; ++i) {
                const auto p = simulate::estimate(s.precision(i)),
                           rr = simulate::estimate(s.recall(i));
                pr << l << ',' << h << ',' << settings.sizes[i] << ',' << s.documents() << ','
                   << f(p.mean) << ',' << se(p.se) << ',' << f(rr.mean) << ',' << se(rr.se) << ','
                   << f(simulate::estimate(s.fmax(i)).mean) << ','
                   << f(simulate::estimate(s.fmin(i)).mean) << ',' << s.exact_decisions(i) << '\n';
                diag << l << ',' << h << ',' << settings.sizes[i] << ',' << f(s.s_norm(i)) << ','
                     << f(s.s_norm_no_sink(i)) << ',' << f(s.s_norm_no_last(i)) << ','
                     << f(s.cos_s_v0(i)) << ',' << f(s.cos_s_vL(i)) << '\n';
            }
            const auto norms = s.norm_by_position(), alphas = s.alpha_by_position(),
                       contribs = s.contrib_by_position();
            for (int pos = 0; pos < context; ++pos) {
                by_position << l << ',' << h << ',' << pos << ',' << f(norms[pos]) << ','
                            << f(alphas[pos]) << ',' << f(contribs[pos]) << '\n';
            }
            for (int lag = 1; lag <= settings.max_lag; ++lag) {
                lags << l << ',' << h << ',' << lag << ',' << f(s.cos_at_lag(lag)) << ','
                     << s.pairs_at_lag(lag) << '\n';
            }
        }
    }
    const std::int64_t S64 = static_cast<std::int64_t>(S);
    const std::vector<TensorSpec> specs = {{"P", DType::F32, {documents, L, H, S64}},
                                           {"R", DType::F32, {documents, L, H, S64}},
                                           {"rho0", DType::F32, {documents, L, H}},
                                           {"lambda", DType::F32, {documents, L, H}},
                                           {"N", DType::I64, {S64}}};
    // Staged beside `out` and moved in whole (SPEC §10): a failure leaves no output file behind.
    OutputFolder folder(out.string(), "--out");
    const fs::path staged(folder.staging());
    write_safetensors_streamed(
        (staged / "per_doc.safetensors").string(), specs, [&](std::size_t t, std::ostream& stream) {
            if (t < 4) {
                per_doc_tensor(static_cast<int>(t), stream);
            } else {
                const std::vector<std::int64_t> sizes(settings.sizes.begin(), settings.sizes.end());
                stream.write(reinterpret_cast<const char*>(sizes.data()),
                             sizes.size() * sizeof(std::int64_t));
            }
        });
    save_state((staged / "sums.safetensors").string(), stats, state_metadata);
    folder.write("heads.csv", heads.str());
    folder.write("pr.csv", pr.str());
    folder.write("by_position.csv", by_position.str());
    folder.write("cos_by_lag.csv", lags.str());
    folder.write("diag.csv", diag.str());
    folder.write("manifest.json", manifest.dump(2) + "\n");
    folder.commit();
}

nlohmann::json decisions() {
    return nlohmann::json::array({
        "Final causal query row only; value head for query head h is h / (H/H_kv); alpha = "
        "softmax(q k^T/sqrt(d) + mask) in float32.",
        "Geometry in double from the float32 captures; documents averaged per head.",
        "Sums over documents are exact (2^-64 fixed point in 128-bit integers), so a resumed or "
        "merged run equals the uninterrupted one bit for bit.",
        "lambda = mean |v_0| / median_{i>=1} of the document-mean norm profile; cv_positional "
        "over that profile (i>=1); cv_pooled over all tokens i>=1 of all documents.",
        "rho0 = mean over documents of mean_{j>=1} cos(v_0, v_j); cos by lag over pairs i>=1.",
        "Regime: Retriever if m_last is the largest of (m_sink, m_last, m_rest), Mixer if the "
        "middle one, Reset if the smallest (SPEC 6).",
        "Shard i/n takes windows [i W/n, (i+1) W/n) of the W windows in run order.",
    });
}

StatisticsGrid make_grid(int layers, int heads, const StatisticsSettings& settings) {
    return StatisticsGrid(layers, std::vector<HeadStatistics>(heads, HeadStatistics(settings)));
}

// Removes the partial state of a run that failed for good (SPEC §10: nothing half-written), and
// the output folder when this run created it; an interruption keeps both for --resume.
class PartialStateCleanup {
  public:
    PartialStateCleanup(fs::path out, fs::path partial)
        : out_(std::move(out)), partial_(std::move(partial)), out_existed_(fs::exists(out_)) {}
    PartialStateCleanup(const PartialStateCleanup&) = delete;
    PartialStateCleanup& operator=(const PartialStateCleanup&) = delete;
    // From here on the partial state is this run's: a failure removes it.
    void own() { owned_ = true; }
    // The run finished or was interrupted resumably: leave everything as it is.
    void release() { owned_ = false; }
    ~PartialStateCleanup() {
        if (!owned_) return;
        std::error_code ec;
        fs::remove_all(partial_, ec);
        if (!out_existed_ && fs::is_empty(out_, ec)) fs::remove(out_, ec);
    }

  private:
    fs::path out_, partial_;
    bool out_existed_ = false, owned_ = false;
};

StatisticsSettings settings_from_json(const nlohmann::json& j) {
    StatisticsSettings s;
    s.context = json_integer<int>(j.at("context"));
    s.max_lag = json_integer<int>(j.at("max_lag"));
    for (const nlohmann::json& size : j.at("sizes").get_ref<const nlohmann::json::array_t&>())
        s.sizes.push_back(json_integer<int>(size));
    s.ranking = theory::parse_ranking(j.at("rank").get<std::string>());
    s.distance = theory::parse_distance(j.at("distance").get<std::string>());
    return s;
}

}  // namespace

void run_extract(const ExtractRequest& r) {
    const auto start = std::chrono::steady_clock::now();
    if (r.out.empty()) throw InputError("--out: an output folder is required");
    check_output_folder(r.out, "--out");
    if (r.tokens_file.empty() == r.corpus.empty())
        throw InputError("--tokens / --corpus: give exactly one of them");
    if (r.max_lag < 1)
        throw InputError("--max-lag: " + std::to_string(r.max_lag) + ", expected >= 1");
    if (r.checkpoint_seconds < 0)
        throw InputError("--checkpoint-every: " + std::to_string(r.checkpoint_seconds) +
                         ", expected >= 0 seconds");
    const simulate::Shard shard = simulate::parse_shard(r.shard);
    if (r.engine != "auto" && r.engine != "torch" && r.engine != "runc")
        throw InputError("--engine: '" + r.engine + "', expected auto, torch or runc");
    const bool llama2c_file = !fs::is_directory(r.model) && fs::path(r.model).extension() == ".bin";
    const bool use_runc = r.engine == "runc" || (r.engine == "auto" && llama2c_file &&
                                                 r.device == "cpu" && r.dtype == "float32");
    if (use_runc && (!llama2c_file || r.device != "cpu" || r.dtype != "float32"))
        throw InputError(
            "--engine runc: only for a llama2.c .bin checkpoint with --device cpu "
            "and --dtype float32");
    // Either the libtorch forward (any family, any device) or, for llama2.c checkpoints, the
    // scalar port of run.c whose α and values equal run.c's bit for bit.
    std::optional<Transformer> model;
    std::optional<RunCForward> runc;
    ModelConfig config;
    if (use_runc) {
        const Llama2cCheckpoint checkpoint(r.model);
        config = checkpoint.config();
        runc.emplace(checkpoint);
    } else {
        model.emplace(Transformer::load(r.model, LoadOptions{r.device, r.dtype}));
        config = model->config();
    }
    std::string tokenizer_name = "none (--tokens)";
    std::vector<std::vector<std::int64_t>> documents;
    if (!r.tokens_file.empty()) {
        documents = read_token_file(r.tokens_file, false, config.vocab_size);
    } else {
        const auto tokenizer = tokenizer_for_model(r.model, config.vocab_size);
        tokenizer_name = tokenizer->name();
        for (const std::string& text : read_corpus(r.corpus)) {
            std::vector<std::int64_t> ids;
            for (int id : tokenizer->encode(text))
                ids.push_back(id);
            if (!ids.empty()) documents.push_back(std::move(ids));
        }
        if (documents.empty()) throw InputError("--corpus '" + r.corpus + "': no documents");
    }
    for (const auto& doc : documents)
        for (std::int64_t id : doc)
            if (id < 0 || id >= config.vocab_size)
                throw InputError((r.tokens_file.empty() ? "--corpus '" + r.corpus
                                                        : "--tokens '" + r.tokens_file) +
                                 "': token id " + std::to_string(id) +
                                 " outside the model's vocabulary 0.." +
                                 std::to_string(config.vocab_size - 1));
    if (r.seed != 0) seeded_shuffle(documents, r.seed);
    std::int64_t skipped = 0;
    const auto all_windows =
        make_windows(documents, r.context, config.bos_token_id >= 0 ? config.bos_token_id : 1,
                     r.bos, r.stride, r.docs, skipped);
    if (all_windows.empty()) {
        throw InputError(
            (r.tokens_file.empty() ? "--corpus '" + r.corpus : "--tokens '" + r.tokens_file) +
            "': no document has " + std::to_string(r.context) + " tokens (all " +
            std::to_string(skipped) + " skipped); lower --context");
    }
    StatisticsSettings settings;
    settings.context = r.context;
    settings.max_lag = std::min(r.max_lag, r.context - 2);
    settings.sizes = parse_selection_sizes(r.sizes, r.context, "--N");
    settings.ranking = theory::parse_ranking(r.rank);
    settings.distance = theory::parse_distance(r.distance);
    const int L = config.num_layers, H = config.num_heads,
              group = config.num_heads / config.num_kv_heads, d = config.head_dim;
    const nlohmann::json settings_json = {{"context", settings.context},
                                          {"max_lag", settings.max_lag},
                                          {"sizes", settings.sizes},
                                          {"rank", r.rank},
                                          {"distance", r.distance},
                                          {"layers", L},
                                          {"heads", H},
                                          {"kv_heads", config.num_kv_heads},
                                          {"head_dim", d},
                                          {"family", config.family},
                                          {"dtype", r.dtype}};
    // What makes two runs (or shards) the same: the settings, the model's shape and every
    // window's token ids. The device is left out: a run may move between machines.
    std::uint64_t fingerprint = 1469598103934665603ULL;
    const std::string settings_text = settings_json.dump();
    fingerprint = fnv1a(settings_text.data(), settings_text.size(), fingerprint);
    for (const auto& w : all_windows)
        fingerprint = fnv1a(w.data(), w.size() * sizeof(std::int64_t), fingerprint);
    const std::int64_t W = static_cast<std::int64_t>(all_windows.size());
    const std::int64_t first = W * shard.index / shard.count,
                       end = W * (shard.index + 1) / shard.count;
    const std::int64_t D = end - first;
    std::map<std::string, std::string> state_metadata = {
        {"run_fingerprint", hex64(fingerprint)},
        {"shard", std::to_string(shard.index) + "/" + std::to_string(shard.count)},
        {"windows", std::to_string(D)},
        {"settings", settings_text}};

    const fs::path out(r.out), partial = fs::path(r.out) / ".partial";
    const fs::path state_path = partial / "state.safetensors", spill_path = partial / "per_doc.bin";
    StatisticsGrid stats = make_grid(L, H, settings);
    std::int64_t done = 0;
    const PerDocLayout layout{L, H, static_cast<std::int64_t>(settings.sizes.size())};
    const std::int64_t record_bytes = layout.record_floats() * sizeof(float);
    if (r.resume && !fs::exists(state_path) && fs::exists(out / "manifest.json") &&
        fs::exists(out / "sums.safetensors")) {
        const auto meta = SafetensorsFile((out / "sums.safetensors").string()).metadata();
        if (meta.count("run_fingerprint") && meta.count("shard") &&
            meta.at("run_fingerprint") == state_metadata.at("run_fingerprint") &&
            meta.at("shard") == state_metadata.at("shard")) {
            std::fprintf(stderr,
                         "extract: '%s' already holds this run, complete; nothing to "
                         "resume\n",
                         r.out.c_str());
            return;
        }
    }
    PartialStateCleanup cleanup(out, partial);
    if (fs::exists(state_path)) {
        if (!r.resume)
            throw InputError("--out '" + r.out +
                             "': holds an interrupted extract (.partial/); pass --resume to "
                             "continue it, or remove the folder");
        const auto meta = SafetensorsFile(state_path.string()).metadata();
        if (!meta.count("run_fingerprint") || !meta.count("shard") ||
            meta.at("run_fingerprint") != state_metadata.at("run_fingerprint") ||
            meta.at("shard") != state_metadata.at("shard"))
            throw InputError("--resume: '" + state_path.string() +
                             "' belongs to a different run (model, corpus, windows, settings or "
                             "shard differ); use another --out");
        load_state(state_path.string(), stats);
        done = stats[0][0].documents();
        // A state overwritten in place still parses; its counts must still describe this shard.
        for (const auto& layer : stats)
            for (const HeadStatistics& head : layer)
                if (head.documents() != done || done < 0 || done > D)
                    throw InputError("--resume: '" + state_path.string() + "': corrupt (" +
                                     std::to_string(head.documents()) +
                                     " documents in a head, expected the same count in 0.." +
                                     std::to_string(D) + " for every head); remove '" +
                                     partial.string() + "' and run again without --resume");
        cleanup.own();
        std::error_code ec;
        const auto spilled = fs::file_size(spill_path, ec);
        if (ec || static_cast<std::int64_t>(spilled) < done * record_bytes)
            throw InputError("--resume: '" + spill_path.string() + "' is missing or shorter than " +
                             std::to_string(done) + " documents; the checkpoint cannot be used");
        fs::resize_file(spill_path, done * record_bytes);  // drop a record written after it
    } else {
        std::error_code ec;
        fs::create_directories(partial, ec);
        if (ec) throw InputError("--out '" + r.out + "': cannot create folder: " + ec.message());
        cleanup.own();
        std::ofstream(spill_path, std::ios::binary | std::ios::trunc);
    }
    check_allocation(static_cast<std::uint64_t>(layout.record_floats()), sizeof(float),
                     "--out '" + r.out + "': one window's per-document record");
    {
        std::error_code ec;
        const fs::space_info space = fs::space(partial, ec);
        const std::uint64_t spill_bytes = checked_bytes(D - done, record_bytes);
        if (!ec && space.available < spill_bytes)
            throw InputError("--out '" + r.out + "': the per-document spill needs " +
                             std::to_string(spill_bytes) + " bytes, the disk has " +
                             std::to_string(space.available) + " free");
    }
    if (!r.quiet && done > 0)
        std::fprintf(stderr, "extract: resuming after %lld of %lld windows\n",
                     static_cast<long long>(done), static_cast<long long>(D));

    std::FILE* spill = std::fopen(spill_path.c_str(), "ab");
    if (!spill) throw InputError("--out '" + r.out + "': cannot open " + spill_path.string());
    auto checkpoint = [&] {
        if (std::fflush(spill) != 0 || ::fsync(::fileno(spill)) != 0)
            throw InputError("--out '" + r.out + "': cannot write " + spill_path.string() +
                             " (disk full?)");
        save_state(state_path.string(), stats, state_metadata);
    };
    CaptureOptions options;
    options.queries = QueryRows::last;
    options.all_logits = false;
    TimingSplit timing;
    InterruptGuard guard;
    auto last_checkpoint = std::chrono::steady_clock::now();
    const std::int64_t started_at = done;
    Progress progress("extract", D - done, "windows", r.quiet);
    std::vector<float> record(layout.record_floats());
    bool stopped = false;
    try {
        for (std::int64_t w = done; w < D; ++w) {
            if (g_interrupted || (r.stop_after > 0 && w - started_at >= r.stop_after)) {
                stopped = true;
                break;
            }
            auto t0 = std::chrono::steady_clock::now();
            CaptureResult result;
            RunCForward::LastRow runc_row;
            if (runc) {
                runc_row = runc->run(all_windows[first + w]);
            } else {
                const auto ids = torch::tensor(all_windows[first + w], torch::kInt64).unsqueeze(0);
                result = model->forward(ids, options);
            }
            auto t1 = std::chrono::steady_clock::now();
            timing.forward += std::chrono::duration<double>(t1 - t0).count();
            const bool device_gram = !runc && r.metrics_on_device && uses_gram_path(settings);
            std::vector<float> runc_values;  // [Hkv, T, d] of one layer
            for (int l = 0; l < L; ++l) {
                torch::Tensor attention, values;
                const float *a = nullptr, *v = nullptr;
                if (runc) {
                    // run.c's cache is [T, kv_dim] per layer; the statistics read [Hkv, T, d].
                    const int Hkv = config.num_kv_heads, kv_dim = Hkv * d;
                    runc_values.resize(static_cast<std::size_t>(Hkv) * r.context * d);
                    const float* cache =
                        runc_row.values.data() + static_cast<std::size_t>(l) * r.context * kv_dim;
                    for (int kv = 0; kv < Hkv; ++kv)
                        for (int t = 0; t < r.context; ++t)
                            std::copy_n(cache + static_cast<std::size_t>(t) * kv_dim + kv * d, d,
                                        runc_values.begin() +
                                            (static_cast<std::size_t>(kv) * r.context + t) * d);
                    a = runc_row.attention.data() + static_cast<std::size_t>(l) * H * r.context;
                    v = runc_values.data();
                } else {
                    attention =
                        result.layers[l].attention.to(torch::kCPU).contiguous();    // [1,H,1,T]
                    values = result.layers[l].values.to(torch::kCPU).contiguous();  // [1,Hkv,T,d]
                    a = attention.data_ptr<float>();
                    v = values.data_ptr<float>();
                }
                auto t2 = std::chrono::steady_clock::now();
                timing.capture += std::chrono::duration<double>(t2 - t1).count();
                std::vector<Eigen::MatrixXd> grams;
                std::vector<std::vector<int>> orders(device_gram ? H : 0);
                if (device_gram) {
                    for (int h = 0; h < H; ++h)
                        orders[h] =
                            head_order(a + static_cast<std::size_t>(h) * r.context,
                                       v + static_cast<std::size_t>(h / group) * r.context * d,
                                       r.context, d, settings.ranking);
                    grams = ranked_gram_batched(result.layers[l].attention[0].select(1, 0),
                                                result.layers[l].values[0], orders);
                }
                auto t3 = std::chrono::steady_clock::now();
                timing.metrics_device += std::chrono::duration<double>(t3 - t2).count();
                for (int h = 0; h < H; ++h) {
                    const RankedGram ranked{device_gram ? &orders[h] : nullptr,
                                            device_gram ? &grams[h] : nullptr};
                    const DocumentRecord doc = stats[l][h].add_document(
                        a + static_cast<std::size_t>(h) * r.context,
                        v + static_cast<std::size_t>(h / group) * r.context * d, d,
                        device_gram ? &ranked : nullptr);
                    const std::int64_t head = static_cast<std::int64_t>(l) * H + h,
                                       S = layout.sizes;
                    std::copy(doc.precision.begin(), doc.precision.end(),
                              record.begin() + layout.offset(0) + head * S);
                    std::copy(doc.recall.begin(), doc.recall.end(),
                              record.begin() + layout.offset(1) + head * S);
                    record[layout.offset(2) + head] = doc.rho0;
                    record[layout.offset(3) + head] = doc.lambda;
                }
                t1 = std::chrono::steady_clock::now();
                timing.statistics += std::chrono::duration<double>(t1 - t3).count();
            }
            if (std::fwrite(record.data(), sizeof(float), record.size(), spill) != record.size())
                throw InputError("--out '" + r.out + "': cannot write " + spill_path.string() +
                                 " (disk full?)");
            const auto now = std::chrono::steady_clock::now();
            if (std::chrono::duration<double>(now - last_checkpoint).count() >=
                r.checkpoint_seconds) {
                checkpoint();
                last_checkpoint = now;
            }
            progress.update(w + 1 - started_at, done > 0 ? std::to_string(w + 1) + " of " +
                                                               std::to_string(D) +
                                                               " windows of the shard done"
                                                         : "");
        }
        checkpoint();
    } catch (...) {
        std::fclose(spill);
        throw;
    }
    std::fclose(spill);
    if (stopped) {
        cleanup.release();
        throw Interrupted("stopped after " + std::to_string(stats[0][0].documents()) + " of " +
                          std::to_string(D) +
                          " windows; the state is saved: run the same command with --resume "
                          "to continue");
    }

    const double total_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const nlohmann::json manifest = {
        {"tool", "attngeo"},
        {"version", kVersion},
        {"git_commit", kGitCommit},
        {"kind", "extract"},
        {"command", r.command_line},
        {"model",
         {{"path", r.model},
          {"family", config.family},
          {"layers", L},
          {"heads", H},
          {"kv_heads", config.num_kv_heads},
          {"head_dim", d},
          {"vocab", config.vocab_size},
          {"engine",
           runc ? "runc (scalar port of llama2.c's run.c, bit-identical to it)" : "libtorch"},
          {"dtype", r.dtype},
          {"device", r.device}}},
        {"parameters",
         {{"context", r.context},
          {"docs", r.docs},
          {"bos", r.bos},
          {"stride", r.stride},
          {"seed", r.seed},
          {"max_lag", settings.max_lag},
          {"N", r.sizes},
          {"sizes", settings.sizes.size()},
          {"rank", r.rank},
          {"distance", r.distance},
          {"dtype", r.dtype},
          {"device", r.device},
          {"engine", runc ? "runc" : "torch"},
          {"metrics",
           !uses_gram_path(settings) ? "per-N reference (sparse N grid)"
           : (!runc && r.metrics_on_device)
               ? "Gram matrices batched on the device (libtorch), certified counting (theory/)"
               : "theory/ certified Gram path per head"},
          {"shard", state_metadata.at("shard")},
          {"tokens", r.tokens_file},
          {"corpus", r.corpus}}},
        {"run_fingerprint", state_metadata.at("run_fingerprint")},
        {"documents",
         {{"windows_used", D},
          {"windows_in_run", W},
          {"skipped_too_short", skipped},
          {"in_file", documents.size()}}},
        {"tokenizer", tokenizer_name},
        {"decisions", decisions()},
        {"timings",
         {{"total_s", total_s},
          {"note", "this invocation only (a resumed run counts from its resume)"},
          {"forward_s", timing.forward},
          {"capture_copy_s", timing.capture},
          {"metrics_device_s", timing.metrics_device},
          {"statistics_s", timing.statistics}}},
    };
    std::ifstream spilled(spill_path, std::ios::binary);
    std::vector<char> block;
    write_outputs(
        out, settings, stats, group, D,
        [&](int tensor, std::ostream& stream) {
            block.resize(layout.block(tensor) * sizeof(float));
            for (std::int64_t doc = 0; doc < D; ++doc) {
                spilled.seekg(doc * record_bytes + layout.offset(tensor) * sizeof(float));
                spilled.read(block.data(), static_cast<std::streamsize>(block.size()));
                if (!spilled)
                    throw InputError("'" + spill_path.string() + "': truncated while copying");
                stream.write(block.data(), static_cast<std::streamsize>(block.size()));
            }
        },
        state_metadata, manifest);
    spilled.close();
    cleanup.release();
    // The state first: a kill between the two removals then leaves a complete run, never a
    // state without its spill.
    std::error_code ec;
    fs::remove(state_path, ec);
    fs::remove_all(partial, ec);
    progress.finish("wrote '" + r.out + "'");
}

namespace {

// What must agree between shards of one run: every parameter and the model's description, up to
// --shard, --device and the folders (a run may move between machines; the run fingerprint
// already covers the token windows, and the model file's name stands in for its weights).
nlohmann::json command_identity(const std::string& dir, const nlohmann::json& manifest) {
    return with_json_context((fs::path(dir) / "manifest.json").string(), [&] {
        nlohmann::json parameters = manifest.at("parameters"), model = manifest.at("model");
        for (const char* key : {"shard", "device", "tokens", "corpus"})
            parameters.erase(key);
        model.erase("device");
        model["path"] = fs::path(model.at("path").get<std::string>()).filename().string();
        return nlohmann::json{{"parameters", parameters}, {"model", model}};
    });
}

// Refuses shards whose commands differ, naming the shard and the first value that differs.
void check_same_command(const std::vector<std::pair<std::string, nlohmann::json>>& shards) {
    const nlohmann::json first = command_identity(shards[0].first, shards[0].second);
    for (std::size_t i = 1; i < shards.size(); ++i) {
        const nlohmann::json other = command_identity(shards[i].first, shards[i].second);
        if (other == first) continue;
        const nlohmann::json patch = nlohmann::json::diff(first, other);
        throw InputError("merge: '" + shards[i].first + "' is from a different command than '" +
                         shards[0].first + "' (" + patch.at(0).value("path", std::string("?")) +
                         " differs)");
    }
}

}  // namespace

nlohmann::json merge_extract(const std::vector<std::string>& dirs, const std::string& out_dir,
                             const std::string& command_line) {
    if (dirs.empty()) throw InputError("merge: no run folders given");
    struct Shard {
        std::string dir;
        nlohmann::json manifest;
        std::map<std::string, std::string> meta;
        int index = 0, count = 0;
    };
    std::vector<Shard> shards;
    for (const std::string& dir : dirs) {
        Shard s;
        s.dir = dir;
        const std::string manifest_path = (fs::path(dir) / "manifest.json").string();
        if (!fs::exists(manifest_path))
            throw InputError("merge: '" + dir + "': no manifest.json (an unfinished shard?)");
        s.manifest = read_json_file(manifest_path, "an extract manifest");
        if (!s.manifest.is_object() || !s.manifest.contains("kind") ||
            s.manifest.at("kind") != "extract")
            throw InputError("merge: '" + dir + "': not an extract run");
        s.meta = SafetensorsFile((fs::path(dir) / "sums.safetensors").string()).metadata();
        if (!s.meta.count("shard") || !s.meta.count("run_fingerprint") || !s.meta.count("settings"))
            throw InputError("merge: '" + dir + "/sums.safetensors': no shard metadata");
        if (std::sscanf(s.meta.at("shard").c_str(), "%d/%d", &s.index, &s.count) != 2)
            throw InputError("merge: '" + dir + "/sums.safetensors': bad shard '" +
                             s.meta.at("shard") + "'");
        shards.push_back(std::move(s));
    }
    std::sort(shards.begin(), shards.end(),
              [](const Shard& a, const Shard& b) { return a.index < b.index; });
    const int count = shards[0].count;
    for (std::size_t i = 0; i < shards.size(); ++i) {
        if (shards[i].meta.at("run_fingerprint") != shards[0].meta.at("run_fingerprint"))
            throw InputError("merge: '" + shards[i].dir + "' is from a different run than '" +
                             shards[0].dir + "' (model, windows or settings differ)");
        if (shards[i].count != count || shards[i].index != static_cast<int>(i))
            throw InputError("merge: shards must be 0/" + std::to_string(count) + " .. " +
                             std::to_string(count - 1) + "/" + std::to_string(count) +
                             ", each once; got '" + shards[i].dir + "' as " +
                             shards[i].meta.at("shard"));
    }
    if (static_cast<int>(shards.size()) != count)
        throw InputError("merge: " + std::to_string(shards.size()) +
                         " shard folders given, the run has " + std::to_string(count) + "; shard " +
                         std::to_string(shards.size()) + "/" + std::to_string(count) +
                         " is missing");
    std::vector<std::pair<std::string, nlohmann::json>> commands;
    for (const Shard& s : shards)
        commands.emplace_back(s.dir, s.manifest);
    check_same_command(commands);
    const std::string sums0 = (fs::path(shards[0].dir) / "sums.safetensors").string();
    const nlohmann::json settings_json =
        parse_json_text(shards[0].meta.at("settings"), sums0, "extract settings");
    StatisticsSettings settings;
    int L = 0, H = 0, group = 1;
    with_json_context(sums0 + "' metadata 'settings", [&] {
        settings = settings_from_json(settings_json);
        L = json_integer<int>(settings_json.at("layers"));
        H = json_integer<int>(settings_json.at("heads"));
        const int kv_heads = json_integer<int>(settings_json.at("kv_heads"));
        if (L < 1 || H < 1 || kv_heads < 1 || H % kv_heads != 0 || settings.context < 2)
            throw InputError("'" + sums0 + "': metadata 'settings' has layers " +
                             std::to_string(L) + ", heads " + std::to_string(H) + ", kv_heads " +
                             std::to_string(kv_heads) +
                             ", expected positive counts with kv_heads dividing heads");
        group = H / kv_heads;
    });
    StatisticsGrid total = make_grid(L, H, settings);
    std::vector<SafetensorsFile> per_doc;
    std::int64_t D = 0;
    for (const Shard& s : shards) {
        StatisticsGrid part = make_grid(L, H, settings);
        load_state((fs::path(s.dir) / "sums.safetensors").string(), part);
        for (int l = 0; l < L; ++l)
            for (int h = 0; h < H; ++h)
                total[l][h].merge(part[l][h]);
        per_doc.emplace_back((fs::path(s.dir) / "per_doc.safetensors").string());
        const std::int64_t docs = part[0][0].documents();
        const std::int64_t windows_in_run =
            with_json_context((fs::path(s.dir) / "manifest.json").string(), [&] {
                return json_integer<std::int64_t>(s.manifest.at("documents").at("windows_in_run"));
            });
        const std::int64_t expected_docs =
            windows_in_run * (s.index + 1) / count - windows_in_run * s.index / count;
        if (docs != expected_docs)
            throw InputError("merge: '" + s.dir + "' holds " + std::to_string(docs) +
                             " windows, shard " + s.meta.at("shard") + " of a run of " +
                             std::to_string(windows_in_run) + " has " +
                             std::to_string(expected_docs) + " (an incomplete or altered shard)");
        const std::vector<std::int64_t> expect[4] = {
            {docs, L, H, static_cast<std::int64_t>(settings.sizes.size())},
            {docs, L, H, static_cast<std::int64_t>(settings.sizes.size())},
            {docs, L, H},
            {docs, L, H}};
        for (int t = 0; t < 4; ++t) {
            const HostTensor tensor = per_doc.back().get(kPerDocNames[t]);
            if (tensor.dtype != DType::F32 || tensor.shape != expect[t])
                throw InputError("merge: '" + per_doc.back().path() + "': tensor '" +
                                 kPerDocNames[t] + "' does not match the shard's sums");
        }
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
    write_outputs(
        fs::path(out_dir), settings, total, group, D,
        [&](int tensor, std::ostream& stream) {
            for (const SafetensorsFile& file : per_doc) {
                const HostTensor t = file.get(kPerDocNames[tensor]);
                stream.write(static_cast<const char*>(t.data),
                             static_cast<std::streamsize>(t.bytes));
            }
        },
        meta, manifest);
    return manifest;
}

}  // namespace attngeo::empirical
