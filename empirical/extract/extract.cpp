// The extract pipeline: plan → forward engine → documents and windows → resumable state →
// per window, the engine's per-layer view into HeadStatistics → the folder; see extract.hpp.
#include "empirical/extract/extract.hpp"
#include "empirical/extract/head_snapshot.hpp"

#include <chrono>
#include <cstdio>

#include "common/errors.hpp"
#include "common/manifest_values.hpp"
#include "common/progress.hpp"
#include "empirical/extract/extract_plan.hpp"
#include "empirical/extract/interrupt_guard.hpp"
#include "empirical/extract/run_documents.hpp"

namespace attngeo::empirical {
namespace {

using Clock = std::chrono::steady_clock;

// Wall time of the pipeline's parts, for the manifest and the benchmark.
struct TimingSplit {
    double load = 0;  // opening the checkpoint and building the engine (weights mapped or read)
    double forward = 0, capture = 0, metrics_device = 0, statistics = 0;
    double sinks = 0;  // the attention-sink measures of the layers (docs/design.md §15)
    static double since(Clock::time_point& mark) {
        const auto now = Clock::now();
        const double seconds = std::chrono::duration<double>(now - mark).count();
        mark = now;
        return seconds;
    }
};

std::string metrics_description(const ExtractPlan& plan) {
    if (!uses_gram_path(plan.settings)) return "per-N reference (sparse N grid)";
    return plan.device_gram
               ? "Gram matrices batched on the device (libtorch), certified counting (theory/)"
               : "theory/ certified Gram path per head";
}

ExtractRunInfo describe_run(const ExtractPlan& plan, const ForwardEngine& engine,
                            const Documents& documents, const RunWindows& windows) {
    const ModelConfig& config = engine.config();
    ExtractRunInfo run;
    run.command = plan.command_line;
    run.model = {plan.model,
                 config.family,
                 config.num_layers,
                 config.num_heads,
                 config.num_kv_heads,
                 config.head_dim,
                 config.vocab_size,
                 engine.description(),
                 to_string(plan.dtype),
                 to_string(plan.device)};
    ExtractParameters& p = run.parameters;
    p.docs = plan.docs;
    p.bos = to_string(plan.bos);
    p.stride = plan.stride;
    p.seed = plan.seed;
    p.sizes_spec = plan.sizes_spec;
    p.queries = plan.queries_spec;
    p.engine = to_string(engine.kind());
    p.metrics = metrics_description(plan);
    p.shard = std::to_string(plan.shard.index) + "/" + std::to_string(plan.shard.count);
    p.tokens_file = plan.tokens_file;
    p.corpus = plan.corpus;
    run.documents = {windows.count, static_cast<std::int64_t>(windows.all.size()), windows.skipped,
                     static_cast<std::int64_t>(documents.ids.size())};
    run.tokenizer = documents.tokenizer;
    run.run_fingerprint =
        run_fingerprint(extract_settings_text(plan.settings, run.model), windows.all);
    return run;
}

// The attention-sink measures of one layer of the window (docs/design.md §15).
LayerSinks measure_sinks(const LayerView& view, const ModelConfig& config, int T) {
    SinkInputs in;
    in.key_attention = view.key_attention;
    in.queries = view.queries;
    in.keys = view.keys;
    in.hidden = view.hidden;
    in.heads = config.num_heads;
    in.kv_heads = config.num_kv_heads;
    in.tokens = T;
    in.d_head = config.head_dim;
    in.hidden_size = config.hidden_size;
    return layer_sinks(in);
}

// One layer of the window the engine last ran into the grid and the window's record; its sink
// measures into `sinks`.
void add_layer(ForwardEngine& engine, int layer, const ExtractPlan& plan, StatisticsGrid& grid,
               WindowRecord& record, LayerSinks& sinks, TimingSplit& timing,
               Clock::time_point& mark, SnapshotCollector& snapshot) {
    const ModelConfig& config = engine.config();
    const int H = config.num_heads, group = H / config.num_kv_heads, d = config.head_dim,
              T = plan.settings.context;
    const LayerView view = engine.layer(layer);
    timing.capture += TimingSplit::since(mark);
    auto alpha = [&](int h) { return view.attention + static_cast<std::size_t>(h) * T; };
    auto values = [&](int h) { return view.values + static_cast<std::size_t>(h / group) * T * d; };
    std::vector<std::vector<int>> orders;
    std::vector<Eigen::MatrixXd> grams;
    if (plan.device_gram) {
        for (int h = 0; h < H; ++h)
            orders.push_back(head_order(alpha(h), values(h), T, d, plan.settings.ranking));
        grams = engine.ranked_grams(layer, orders);
    }
    timing.metrics_device += TimingSplit::since(mark);
    std::vector<DocumentRecord> records(H);
    for_each_head(H, plan.threads, [&](int h) {
        const RankedGram ranked{plan.device_gram ? &orders[h] : nullptr,
                                plan.device_gram ? &grams[h] : nullptr};
        records[h] = grid[layer][h].add_document(alpha(h), values(h), d,
                                                 plan.device_gram ? &ranked : nullptr);
    });
    const std::vector<int>& positions = plan.settings.positions;
    if (!positions.empty())
        for_each_head(H, plan.threads, [&](int h) {
            for (std::size_t p = 0; p < positions.size(); ++p)
                grid[layer][h].add_query(
                    view.query_rows + (static_cast<std::size_t>(h) * positions.size() + p) * T,
                    values(h), positions[p], d);
        });
    for (int h = 0; h < H; ++h)
        record.set(layer, h, records[h]);
    if (snapshot.active())
        for (int h = 0; h < H; ++h)
            snapshot.observe(layer, h, alpha(h), values(h), d);
    timing.statistics += TimingSplit::since(mark);
    sinks = measure_sinks(view, config, T);
    timing.sinks += TimingSplit::since(mark);
}

// Runs the shard's remaining windows into `state`, checkpointing every checkpoint_seconds and
// once at the end; returns false when stopped early (Ctrl-C, SIGTERM, --stop-after).
bool run_windows(const ExtractPlan& plan, ForwardEngine& engine, const RunWindows& windows,
                 ExtractState& state, TimingSplit& timing, Progress& progress,
                 SnapshotCollector& snapshot) {
    InterruptGuard guard;
    auto last_checkpoint = Clock::now();
    const std::int64_t started_at = state.done(), D = state.windows();
    WindowRecord record(state.layout());
    std::vector<LayerSinks> sinks(engine.config().num_layers);
    bool finished = true;
    for (std::int64_t w = started_at; w < D; ++w) {
        if (InterruptGuard::interrupted() ||
            (plan.stop_after > 0 && w - started_at >= plan.stop_after)) {
            finished = false;
            break;
        }
        auto mark = Clock::now();
        snapshot.start_window(windows.first + w);
        const std::vector<std::int64_t>& window = windows.all[windows.first + w];
        engine.run(window);
        timing.forward += TimingSplit::since(mark);
        for (int l = 0; l < engine.config().num_layers; ++l) {
            add_layer(engine, l, plan, state.grid(), record, sinks[l], timing, mark, snapshot);
            record.set_sinks(l, sinks[l], window);
        }
        record.set_secondary_sinks(
            window_secondary_sinks(sinks, plan.settings.context, PerDocLayout::kSecondarySinks),
            window);
        if (snapshot.active()) stage_snapshot(snapshot, plan.out);
        state.append(record);
        const auto now = Clock::now();
        if (std::chrono::duration<double>(now - last_checkpoint).count() >=
            plan.checkpoint_seconds) {
            state.checkpoint();
            last_checkpoint = now;
        }
        progress.update(w + 1 - started_at, started_at > 0 ? std::to_string(w + 1) + " of " +
                                                                 std::to_string(D) +
                                                                 " windows of the shard done"
                                                           : "");
    }
    state.checkpoint();
    return finished;
}

nlohmann::json timings_json(const TimingSplit& timing, Clock::time_point start, int threads) {
    return {{"total_s", seconds_since(start)},
            {"statistics_threads", threads},
            {"note", "this invocation only (a resumed run counts from its resume)"},
            {"load_s", timing.load},
            {"forward_s", timing.forward},
            {"capture_copy_s", timing.capture},
            {"metrics_device_s", timing.metrics_device},
            {"statistics_s", timing.statistics},
            {"sinks_s", timing.sinks}};
}

}  // namespace

void run_extract(const ExtractRequest& request) {
    const auto start = Clock::now();
    const ExtractPlan plan = plan_extract(request);
    const SnapshotRequest snapshot_request = parse_snapshot_request(request.snapshot);
    const std::unique_ptr<ForwardEngine> engine =
        make_forward_engine(open_checkpoint(plan.model, plan.format), plan.engine, plan.device,
                            plan.dtype, plan.settings.positions);
    TimingSplit timing;
    timing.load = seconds_since(start);
    const ModelConfig& config = engine->config();
    const Documents documents = load_documents(plan, config.vocab_size);
    const RunWindows windows =
        cut_windows(plan, documents.ids, config.bos_token_id, missing_bos_reason(config));
    validate_snapshot_request(snapshot_request, config.num_layers, config.num_heads,
                              plan.settings.context, static_cast<std::int64_t>(windows.all.size()));
    SnapshotCollector snapshot(snapshot_request, plan.settings.context, plan.settings.ranking);
    ExtractRunInfo run = describe_run(plan, *engine, documents, windows);
    const StatisticsSettings& settings = plan.settings;
    const PerDocLayout layout = per_doc_layout(config.num_layers, config.num_heads, settings);
    ExtractState state(plan.out, make_grid(config.num_layers, config.num_heads, settings), layout,
                       extract_state_metadata(settings, run), windows.count);
    if (plan.resume && state.finished_in_out()) {
        std::fprintf(stderr, "extract: '%s' already holds this run, complete; nothing to resume\n",
                     plan.out.c_str());
        return;
    }
    state.open(plan.resume);
    if (!plan.quiet && state.done() > 0)
        std::fprintf(stderr, "extract: resuming after %lld of %lld windows\n",
                     static_cast<long long>(state.done()), static_cast<long long>(windows.count));
    Progress progress("extract", windows.count - state.done(), "windows", plan.quiet);
    if (!run_windows(plan, *engine, windows, state, timing, progress, snapshot)) {
        state.release();
        throw Interrupted("stopped after " + std::to_string(state.done()) + " of " +
                          std::to_string(windows.count) +
                          " windows; the state is saved: run the same command with --resume "
                          "to continue");
    }
    run.timings = timings_json(timing, start, plan.threads);
    write_extract_outputs(
        plan.out, settings, state.grid(), config.num_heads / config.num_kv_heads, windows.count,
        [&](int tensor, std::ostream& stream) { state.copy_per_doc(tensor, stream); },
        state.metadata(), extract_manifest(settings, run));
    publish_snapshot(plan.out);
    state.remove_partial();
    progress.finish("wrote '" + plan.out + "'");
}

}  // namespace attngeo::empirical
