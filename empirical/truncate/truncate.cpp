// The truncate pipeline: plan → model → documents and windows → configurations → per window, the
// full forward and one truncated forward per configuration → per_doc.safetensors, windows.txt
// and manifest.json; see truncate.hpp.
#include "empirical/truncate/truncate.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/atomic_file.hpp"
#include "common/errors.hpp"
#include "common/manifest_values.hpp"
#include "common/number_list.hpp"
#include "common/progress.hpp"
#include "common/run_schema.hpp"
#include "common/safetensors.hpp"
#include "empirical/extract/extract_plan.hpp"
#include "empirical/extract/extract_state.hpp"
#include "empirical/extract/interrupt_guard.hpp"
#include "empirical/extract/run_documents.hpp"
#include "empirical/truncate/truncating_edit.hpp"

namespace attngeo::empirical {
namespace {

using Clock = std::chrono::steady_clock;

// Every window of the run, for the geometry extract (a scratch file of the staging folder).
constexpr const char* kGeometryWindows = ".geometry_windows.txt";

// A truncate request checked and parsed once; the model-dependent parts (the units) come later.
struct TruncatePlan {
    ExtractPlan base;  // model, documents, windows, dtype, device, out, the N grid
    std::vector<TruncationPolicy> policies;
    std::vector<bool> renorms;
    TruncationScope scope = TruncationScope::all;
    std::string heads_spec;
    EvalPositions eval;
    std::vector<double> taus;
    std::uint64_t random_seed = 1;
    int threads = 0, replicates = 2000;
};

TruncatePlan plan_truncate(const TruncateRequest& request) {
    ExtractRequest windows = request.windows;
    windows.engine = "torch";
    windows.sizes = request.sizes;
    windows.max_lag = std::max(1, std::min(windows.max_lag, windows.context - 2));
    TruncatePlan plan;
    plan.base = plan_extract(windows);
    plan.policies = parse_truncation_policies(request.policies);
    plan.renorms = parse_renorm(request.renorm);
    plan.scope = parse_truncation_scope(request.scope);
    plan.heads_spec = request.heads;
    if (plan.scope == TruncationScope::all && !request.heads.empty())
        throw InputError("--heads: only with --scope layer or head");
    plan.eval = parse_eval_positions(request.eval_positions, windows.context);
    plan.taus = parse_positive_list(request.tau, "--tau");
    plan.random_seed = request.random_seed;
    if (request.threads < 0)
        throw InputError("--threads: " + std::to_string(request.threads) + ", expected >= 1");
    plan.threads = request.threads;
    if (request.replicates < 0)
        throw InputError("--replicates: " + std::to_string(request.replicates) + ", expected >= 0");
    plan.replicates = request.replicates;
    return plan;
}

// A whole number within [0, bound) from `text`, or −1.
int index_below(const std::string& text, int bound) {
    if (text.empty() || text.size() > 6 ||
        text.find_first_not_of("0123456789") != std::string::npos)
        return -1;
    const int value = std::stoi(text);
    return value < bound ? value : -1;
}

// The units the scope cuts one at a time: {−1, −1} for all; each layer (or --heads' L list);
// each (layer, head) (or --heads' L:H list), in the order given.
std::vector<std::pair<int, int>> scope_units(const TruncatePlan& plan, int layers, int heads) {
    if (plan.scope == TruncationScope::all) return {{-1, -1}};
    std::vector<std::pair<int, int>> units;
    if (plan.heads_spec.empty()) {
        for (int l = 0; l < layers; ++l)
            if (plan.scope == TruncationScope::layer)
                units.push_back({l, -1});
            else
                for (int h = 0; h < heads; ++h)
                    units.push_back({l, h});
        return units;
    }
    const bool by_layer = plan.scope == TruncationScope::layer;
    const std::string expected = by_layer ? "L,L,... with 0 <= L < " + std::to_string(layers)
                                          : "L:H,L:H,... with 0 <= L < " + std::to_string(layers) +
                                                " and 0 <= H < " + std::to_string(heads);
    std::stringstream items(plan.heads_spec);
    std::string item;
    while (std::getline(items, item, ',')) {
        const auto colon = item.find(':');
        const int layer = index_below(item.substr(0, colon), layers);
        const int head =
            by_layer ? -1
                     : index_below(colon == std::string::npos ? "" : item.substr(colon + 1), heads);
        const bool shape_ok = by_layer ? colon == std::string::npos : head >= 0;
        if (layer < 0 || !shape_ok)
            throw InputError("--heads '" + plan.heads_spec + "': '" + item + "', expected " +
                             expected);
        if (std::find(units.begin(), units.end(), std::make_pair(layer, head)) != units.end())
            throw InputError("--heads '" + plan.heads_spec + "': '" + item + "' given twice");
        units.push_back({layer, head});
    }
    if (units.empty()) throw InputError("--heads: expected " + expected);
    return units;
}

std::vector<TruncationCut> make_cuts(const TruncatePlan& plan, int layers, int heads) {
    std::vector<TruncationCut> cuts;
    for (TruncationPolicy policy : plan.policies)
        for (bool renorm : plan.renorms)
            for (const auto& [layer, head] : scope_units(plan, layers, heads))
                for (int N : plan.base.settings.sizes) {
                    TruncationCut cut;
                    cut.policy = policy;
                    cut.N = N;
                    cut.renorm = renorm;
                    cut.scope = plan.scope;
                    cut.layer = layer;
                    cut.head = head;
                    cut.random.seed = plan.random_seed;
                    cut.eval_first = plan.eval.first(plan.base.settings.context);
                    cuts.push_back(cut);
                }
    return cuts;
}

// The float64 log-probabilities of the next token at each evaluation position of one forward.
// [positions] of [V]
std::vector<std::vector<double>> next_token_log_probs(const torch::Tensor& logits, int first,
                                                      int context) {
    const auto host = logits.to(torch::kCPU, torch::kFloat32).contiguous();
    const std::int64_t V = host.size(2);
    std::vector<std::vector<double>> rows(static_cast<std::size_t>(context - 1 - first));
    for (int t = first; t < context - 1; ++t)
        log_softmax_row(host.data_ptr<float>() + static_cast<std::int64_t>(t) * V,
                        static_cast<int>(V), rows[t - first]);
    return rows;
}

// The per-document measures of every configuration, [measure][config · windows + window].
struct PerDocMeasures {
    static constexpr int kCount = 5;
    static constexpr const char* kNames[kCount] = {"delta_nll", "kl", "top1", "dropped_mass",
                                                   "output_error"};
    std::vector<double> values[kCount];
    std::vector<double> nll_full;  // [windows] mean NLL of the full forward
};

struct Timings {
    double load = 0, full_forward = 0, truncated_forward = 0;
};

// One window: the full forward, then each configuration's truncated forward, into `measures`.
void run_window(const Transformer& model, const std::vector<std::int64_t>& window,
                std::int64_t window_index, std::int64_t slot, std::int64_t windows,
                const std::vector<TruncationCut>& cuts, int first, PerDocMeasures& measures,
                Timings& timings) {
    const int T = static_cast<int>(window.size());
    const auto ids = torch::tensor(window, torch::kInt64).view({1, T});
    CaptureOptions options;
    options.capture = false;
    auto mark = Clock::now();
    const auto full = next_token_log_probs(model.forward(ids, options).logits, first, T);
    double nll = 0;
    for (int t = first; t < T - 1; ++t)
        nll -= full[t - first][window[t + 1]];
    measures.nll_full[slot] = nll / (T - 1 - first);
    timings.full_forward += seconds_since(mark);
    mark = Clock::now();
    for (std::size_t c = 0; c < cuts.size(); ++c) {
        TruncationCut cut = cuts[c];
        cut.random.window = window_index;
        TruncatingEdit edit(cut);
        options.edit = &edit;
        const auto truncated = next_token_log_probs(model.forward(ids, options).logits, first, T);
        double delta = 0, kl = 0, agree = 0;
        for (int t = first; t < T - 1; ++t) {
            const auto compared =
                compare_next_token(full[t - first], truncated[t - first], window[t + 1]);
            delta += compared.delta_nll;
            kl += compared.kl;
            agree += compared.top1_agrees ? 1 : 0;
        }
        const double positions = T - 1 - first;
        const double row[PerDocMeasures::kCount] = {delta / positions, kl / positions,
                                                    agree / positions, edit.dropped_mass(),
                                                    edit.output_error()};
        for (int m = 0; m < PerDocMeasures::kCount; ++m)
            measures.values[m][c * windows + slot] = row[m];
    }
    timings.truncated_forward += seconds_since(mark);
}

// Windows [first, first + count) of the run, one per line.
void write_windows_file(const std::string& path, const RunWindows& windows, std::int64_t first,
                        std::int64_t count) {
    std::ostringstream text;
    for (std::int64_t w = first; w < first + count; ++w) {
        for (std::size_t i = 0; i < windows.all[w].size(); ++i)
            text << (i ? " " : "") << windows.all[w][i];
        text << '\n';
    }
    write_file_atomic(path, text.str());
}

void write_per_doc(const std::string& path, const PerDocMeasures& measures,
                   const std::vector<TruncationCut>& cuts, const TruncatePlan& plan,
                   std::int64_t windows) {
    const auto C = static_cast<std::int64_t>(cuts.size());
    std::vector<std::int64_t> policy(C), renorm(C), layer(C), head(C), N(C);
    for (std::int64_t c = 0; c < C; ++c) {
        policy[c] = std::find(plan.policies.begin(), plan.policies.end(), cuts[c].policy) -
                    plan.policies.begin();
        renorm[c] = cuts[c].renorm;
        layer[c] = cuts[c].layer;
        head[c] = cuts[c].head;
        N[c] = cuts[c].N;
    }
    std::vector<HostTensor> tensors;
    for (int m = 0; m < PerDocMeasures::kCount; ++m)
        tensors.push_back(tensor_view(PerDocMeasures::kNames[m], DType::F64, {C, windows},
                                      measures.values[m].data(), C * windows * sizeof(double)));
    tensors.push_back(tensor_view("nll_full", DType::F64, {windows}, measures.nll_full.data(),
                                  windows * sizeof(double)));
    const std::pair<const char*, const std::vector<std::int64_t>*> columns[] = {
        {"policy", &policy}, {"renorm", &renorm}, {"layer", &layer}, {"head", &head}, {"N", &N}};
    for (const auto& [name, column] : columns)
        tensors.push_back(
            tensor_view(name, DType::I64, {C}, column->data(), C * sizeof(std::int64_t)));
    write_safetensors(path, tensors);
}

// What makes shards (and a resumed run) one run: every parameter but the shard and the paths,
// the model's shape and every window of the run (extract's fingerprint).
std::string truncate_fingerprint(const nlohmann::json& manifest, const TruncatePlan& plan,
                                 const RunWindows& windows) {
    nlohmann::json identity = {{"parameters", manifest.at("parameters")},
                               {"model", manifest.at("model")}};
    for (const char* key : {"shard", "tokens_file", "corpus"})
        identity["parameters"].erase(key);
    identity["model"].erase("device");
    identity["model"]["path"] = std::filesystem::path(plan.base.model).filename().string();
    return run_fingerprint(identity.dump(), windows.all);
}

// manifest.json without its timings (added once the run is done).
nlohmann::json truncate_manifest(const TruncatePlan& plan, const ModelConfig& config,
                                 const Documents& documents, const RunWindows& windows,
                                 const std::vector<TruncationCut>& cuts) {
    nlohmann::json manifest = manifest_header(schema::kind::truncate, plan.base.command_line);
    manifest["model"] = {{"path", plan.base.model},
                         {"family", config.family},
                         {"layers", config.num_layers},
                         {"heads", config.num_heads},
                         {"kv_heads", config.num_kv_heads},
                         {"head_dim", config.head_dim},
                         {"vocab", config.vocab_size},
                         {"dtype", to_string(plan.base.dtype)},
                         {"device", to_string(plan.base.device)}};
    nlohmann::json policies = nlohmann::json::array();
    for (TruncationPolicy p : plan.policies)
        policies.push_back(to_string(p));
    nlohmann::json renorms = nlohmann::json::array();
    for (bool r : plan.renorms)
        renorms.push_back(r ? "yes" : "no");
    manifest["parameters"] = {{"context", plan.base.settings.context},
                              {"N", plan.base.settings.sizes},
                              {"sizes_spec", plan.base.sizes_spec},
                              {"policies", policies},
                              {"renorm", renorms},
                              {"scope", to_string(plan.scope)},
                              {"heads", plan.heads_spec},
                              {"eval_positions", plan.eval.text()},
                              {"eval_first", plan.eval.first(plan.base.settings.context)},
                              {"tau", plan.taus},
                              {"random_seed", plan.random_seed},
                              {"replicates", plan.replicates},
                              {"docs", plan.base.docs},
                              {"bos", to_string(plan.base.bos)},
                              {"stride", plan.base.stride},
                              {"seed", plan.base.seed},
                              {"tokens_file", plan.base.tokens_file},
                              {"corpus", plan.base.corpus},
                              {"shard", std::to_string(plan.base.shard.index) + "/" +
                                            std::to_string(plan.base.shard.count)}};
    manifest["run_fingerprint"] = truncate_fingerprint(manifest, plan, windows);
    manifest["documents"] = {{"windows", windows.count},
                             {"windows_total", static_cast<std::int64_t>(windows.all.size())},
                             {"skipped", windows.skipped},
                             {"documents", static_cast<std::int64_t>(documents.ids.size())}};
    manifest["tokenizer"] = documents.tokenizer;
    manifest["configurations"] = static_cast<std::int64_t>(cuts.size());
    return manifest;
}

// OUT/.partial/truncate.bin, for --resume: a header line naming the run's fingerprint and the
// record size, then one record per finished window in run order — nll_full, then every measure
// of every configuration (measure-major) — as raw doubles. A record cut short by a kill is
// ignored on resume.
class TruncatePartial {
  public:
    TruncatePartial(const std::string& out, const std::string& fingerprint, std::size_t doubles)
        : folder_(std::filesystem::path(out) / schema::file::resume_state_folder),
          header_("attngeo truncate partial " + fingerprint + " " + std::to_string(doubles) + "\n"),
          doubles_(doubles) {}

    // The records of the finished windows when resuming (InputError when the partial state is
    // another run's), none otherwise; then opens the file for appending.
    std::vector<std::vector<double>> open(bool resume) {
        std::vector<std::vector<double>> records;
        const auto path = folder_ / "truncate.bin";
        if (resume && std::filesystem::exists(path)) records = read(path.string());
        std::filesystem::create_directories(folder_);
        std::ofstream rewrite(path, std::ios::binary | std::ios::trunc);
        rewrite << header_;
        for (const auto& record : records)
            rewrite.write(reinterpret_cast<const char*>(record.data()),
                          static_cast<std::streamsize>(doubles_ * sizeof(double)));
        if (!rewrite) throw InputError("--out: cannot write '" + path.string() + "'");
        return records;
    }
    void append(const std::vector<double>& record) {
        std::ofstream file(folder_ / "truncate.bin", std::ios::binary | std::ios::app);
        file.write(reinterpret_cast<const char*>(record.data()),
                   static_cast<std::streamsize>(doubles_ * sizeof(double)));
        if (!file) throw InputError("--out: cannot write '" + folder_.string() + "/truncate.bin'");
    }

  private:
    std::vector<std::vector<double>> read(const std::string& path) const {
        std::ifstream in(path, std::ios::binary);
        std::string header;
        std::getline(in, header);
        if (header + "\n" != header_)
            throw InputError("--resume: '" + path +
                             "' holds another run's state (model, windows or settings differ); "
                             "remove it or choose another --out");
        std::vector<std::vector<double>> records;
        std::vector<double> record(doubles_);
        while (in.read(reinterpret_cast<char*>(record.data()),
                       static_cast<std::streamsize>(doubles_ * sizeof(double))))
            records.push_back(record);
        return records;
    }

    std::filesystem::path folder_;
    std::string header_;
    std::size_t doubles_;
};

// The extract of the same windows whose statistics the geometry link reads (scope head).
ExtractRequest geometry_extract_request(const TruncatePlan& plan, const std::string& staging) {
    ExtractRequest r;
    r.model = plan.base.model;
    r.tokens_file = staging + "/" + kGeometryWindows;
    r.shard = std::to_string(plan.base.shard.index) + "/" + std::to_string(plan.base.shard.count);
    r.out = staging + "/" + schema::file::geometry_extract;
    r.context = plan.base.settings.context;
    r.bos = "no";  // the windows are complete as written
    r.max_lag = plan.base.settings.max_lag;
    std::string sizes;
    for (int N : plan.base.settings.sizes)
        sizes += (sizes.empty() ? "" : ",") + std::to_string(N);
    r.sizes = sizes;
    r.dtype = to_string(plan.base.dtype);
    r.device = to_string(plan.base.device);
    r.engine = "torch";
    r.quiet = plan.base.quiet;
    r.snapshot = "off";
    r.threads = plan.threads;
    r.command_line = "(the geometry of " + plan.base.out + "'s windows)";
    return r;
}

// Records of the finished windows back into `measures` (resume), or one window's out.
std::vector<double> window_record(const PerDocMeasures& measures, std::int64_t slot,
                                  std::int64_t windows) {
    std::vector<double> record{measures.nll_full[slot]};
    for (const auto& values : measures.values)
        for (std::size_t c = 0; c < values.size() / windows; ++c)
            record.push_back(values[c * windows + slot]);
    return record;
}
void restore_record(const std::vector<double>& record, std::int64_t slot, std::int64_t windows,
                    PerDocMeasures& measures) {
    measures.nll_full[slot] = record[0];
    std::size_t next = 1;
    for (auto& values : measures.values)
        for (std::size_t c = 0; c < values.size() / windows; ++c)
            values[c * windows + slot] = record[next++];
}

nlohmann::json timings_json(const Timings& timings, int threads, Clock::time_point start) {
    return {{"total_s", seconds_since(start)},
            {"note", "this invocation only (a resumed run counts from its resume)"},
            {"load_s", timings.load},
            {"full_forward_s", timings.full_forward},
            {"truncated_forward_s", timings.truncated_forward},
            {"threads", threads}};
}

}  // namespace

ExtractRequest run_truncate(const TruncateRequest& request, const std::string& staging) {
    const auto start = Clock::now();
    const TruncatePlan plan = plan_truncate(request);
    if (plan.threads > 0) torch::set_num_threads(plan.threads);
    Timings timings;
    const Transformer model =
        Transformer::load(plan.base.model, {plan.base.device, plan.base.dtype});
    timings.load = seconds_since(start);
    const ModelConfig& config = model.config();
    const std::vector<TruncationCut> cuts = make_cuts(plan, config.num_layers, config.num_heads);
    const Documents documents = load_documents(plan.base, config.vocab_size);
    const RunWindows windows =
        cut_windows(plan.base, documents.ids, config.bos_token_id, missing_bos_reason(config));
    nlohmann::json manifest = truncate_manifest(plan, config, documents, windows, cuts);
    const std::int64_t W = windows.count;
    PerDocMeasures measures;
    for (auto& values : measures.values)
        values.assign(static_cast<std::size_t>(cuts.size() * W), 0.0);
    measures.nll_full.assign(static_cast<std::size_t>(W), 0.0);
    TruncatePartial partial(plan.base.out, manifest.at("run_fingerprint").get<std::string>(),
                            1 + PerDocMeasures::kCount * cuts.size());
    const auto finished = partial.open(plan.base.resume);
    const auto done = static_cast<std::int64_t>(std::min<std::size_t>(finished.size(), W));
    for (std::int64_t w = 0; w < done; ++w)
        restore_record(finished[w], w, W, measures);
    if (!plan.base.quiet && done > 0)
        std::fprintf(stderr, "truncate: resuming after %lld of %lld windows\n",
                     static_cast<long long>(done), static_cast<long long>(W));
    Progress progress("truncate", W - done, "windows", plan.base.quiet);
    const int first = plan.eval.first(plan.base.settings.context);
    InterruptGuard guard;
    for (std::int64_t w = done; w < W; ++w) {
        if (InterruptGuard::interrupted() ||
            (plan.base.stop_after > 0 && w - done >= plan.base.stop_after))
            throw Interrupted("stopped after " + std::to_string(w) + " of " + std::to_string(W) +
                              " windows; the measures are saved: run the same command with "
                              "--resume to continue");
        run_window(model, windows.all[windows.first + w], windows.first + w, w, W, cuts, first,
                   measures, timings);
        partial.append(window_record(measures, w, W));
        progress.update(w + 1 - done, std::to_string(cuts.size()) + " configurations a window");
    }
    write_per_doc(staging + "/" + schema::file::per_document, measures, cuts, plan, W);
    write_windows_file(staging + "/" + schema::file::windows, windows, windows.first,
                       windows.count);
    // The geometry extract takes every window of the run with this shard, so that its shards
    // merge like any extract's; the CLI removes the file once extract has read it.
    write_windows_file(staging + "/" + kGeometryWindows, windows, 0,
                       static_cast<std::int64_t>(windows.all.size()));
    manifest["timings"] = timings_json(timings, plan.threads, start);
    write_file_atomic(staging + "/" + schema::file::manifest, manifest.dump(2) + "\n");
    progress.finish("measured " + std::to_string(cuts.size()) + " configurations");
    return geometry_extract_request(plan, staging);
}

void remove_truncate_partial(const std::string& out) {
    std::error_code ignored;
    std::filesystem::remove_all(std::filesystem::path(out) / schema::file::resume_state_folder,
                                ignored);
}

}  // namespace attngeo::empirical
