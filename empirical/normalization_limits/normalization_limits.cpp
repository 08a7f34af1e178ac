// The normalization-limits pipeline (`attngeo normalization`): flags → windows → per window one
// forward with the chosen query rows recorded (scores and weights) → per head the measurements
// of head_measures → the folder's tables and manifest.
#include "empirical/normalization_limits/normalization_limits.hpp"

#include <chrono>
#include <cstring>

#include "common/atomic_file.hpp"
#include "common/errors.hpp"
#include "common/manifest_values.hpp"
#include "common/number_list.hpp"
#include "common/progress.hpp"
#include "empirical/extract/extract_plan.hpp"
#include "empirical/extract/interrupt_guard.hpp"
#include "empirical/extract/run_documents.hpp"
#include "empirical/extract/statistics.hpp"
#include "empirical/model/query_row_recorder.hpp"
#include "empirical/model/transformer.hpp"
#include "empirical/normalization_limits/head_measures.hpp"

namespace attngeo::empirical {
namespace {

using Clock = std::chrono::steady_clock;

struct NormalizationLimitsPlan {
    ExtractPlan base;
    NormalizationLimitsSettings settings;
    std::string queries;
    double ks_level = 0.01;
    int threads = 1;
};

NormalizationLimitsPlan plan_normalization_limits(const NormalizationLimitsRequest& request) {
    ExtractRequest windows = request.windows;
    windows.engine = "torch";
    windows.sizes = request.sizes;
    windows.max_lag = std::max(1, std::min(windows.max_lag, windows.context - 2));
    NormalizationLimitsPlan plan;
    plan.base = plan_extract(windows);
    const int context = plan.base.settings.context;
    NormalizationLimitsSettings& s = plan.settings;
    s.positions = parse_query_positions(request.queries, context);
    s.bins = make_length_bins(request.length_bins, context, s.positions);
    s.sizes = plan.base.settings.sizes;
    if (request.subsets < 2)
        throw InputError("--subsets: " + std::to_string(request.subsets) + ", expected >= 2");
    s.subsets = request.subsets;
    s.random_seed = request.random_seed;
    s.temperatures = parse_positive_grid(request.temperatures, "--temperatures");
    s.epsilons = parse_positive_grid(request.epsilons, "--epsilons");
    if (!(request.ks_level > 0 && request.ks_level < 1))
        throw InputError("--ks-level: " + format_double(request.ks_level) +
                         ", expected 0 < level < 1");
    plan.ks_level = request.ks_level;
    plan.queries = request.queries;
    if (request.threads < 0)
        throw InputError("--threads: " + std::to_string(request.threads) + ", expected >= 1");
    plan.threads = statistics_threads(request.threads);
    return plan;
}

// One window's recorded rows and values into every head's sums.
void add_window(const CaptureResult& result, const QueryRowRecorder& recorder,
                const NormalizationLimitsPlan& plan, const ModelConfig& config, std::int64_t window,
                LimitMeasuresGrid& grid) {
    const int H = config.num_heads, group = H / config.num_kv_heads, d = config.head_dim,
              T = plan.base.settings.context;
    for (int l = 0; l < config.num_layers; ++l) {
        const auto values = result.layers[l].values.to(torch::kCPU).contiguous();  // [1,Hkv,T,d]
        const float* v = values.data_ptr<float>();
        for_each_head(H, plan.threads, [&](int h) {
            for (std::size_t p = 0; p < plan.settings.positions.size(); ++p) {
                QueryRow row;
                row.alpha = recorder.alpha(l, h, p);
                row.scores = recorder.scores(l, h, p);
                row.values = v + static_cast<std::size_t>(h / group) * T * d;
                row.t = plan.settings.positions[p];
                row.d = d;
                row.window = window;
                row.layer = l;
                row.head = h;
                grid[l][h].add(row, plan.settings);
            }
        });
    }
}

// The bins as extract lists them, with the queries each head averages in a bin.
nlohmann::json length_bins_with_queries(const NormalizationLimitsSettings& s,
                                        std::int64_t windows) {
    nlohmann::json bins = length_bins_json(s.bins, s.positions);
    for (auto& bin : bins)
        bin["queries_per_head"] = bin["positions"].get<std::int64_t>() * windows;
    return bins;
}

nlohmann::json normalization_limits_manifest(const NormalizationLimitsPlan& plan,
                                             const ModelConfig& config, const Documents& documents,
                                             const RunWindows& windows) {
    const ExtractPlan& base = plan.base;
    const NormalizationLimitsSettings& s = plan.settings;
    nlohmann::json manifest = manifest_header(schema::kind::normalization, base.command_line);
    manifest["model"] = {{"path", base.model},
                         {"family", config.family},
                         {"layers", config.num_layers},
                         {"heads", config.num_heads},
                         {"kv_heads", config.num_kv_heads},
                         {"head_dim", config.head_dim},
                         {"dtype", to_string(base.dtype)},
                         {"device", to_string(base.device)}};
    manifest["parameters"] = {
        {"context", base.settings.context},
        {"queries", plan.queries},
        {"positions", s.positions},
        {"length_bins", length_bins_with_queries(s, windows.count)},
        {"sizes", s.sizes},
        {"sizes_spec", base.sizes_spec},
        {"subsets", s.subsets},
        {"random_seed", s.random_seed},
        {"temperatures", s.temperatures},
        {"epsilons", s.epsilons},
        {"ks_level", plan.ks_level},
        {"scores",
         "q.k/sqrt(d_head): the model's softmax input (the division by sqrt(d) "
         "applied), masked keys -inf"},
        {"docs", base.docs},
        {"bos", to_string(base.bos)},
        {"stride", base.stride},
        {"seed", base.seed},
        {"tokens_file", base.tokens_file},
        {"corpus", base.corpus}};
    manifest["documents"] = {{"windows", windows.count},
                             {"skipped", windows.skipped},
                             {"documents", static_cast<std::int64_t>(documents.ids.size())}};
    manifest["tokenizer"] = documents.tokenizer;
    manifest["decisions"] = {
        "x_i are the value states of the head's kv head (the later paper's space; the "
        "predecessor's is ambiguous); y_i = alpha_i x_i and I_N the N largest alpha, ties to the "
        "lower index",
        "a query at position t reads keys 0..t, so L = t + 1; every:K positions are anchored "
        "at the last position",
        "E (the distance under a uniformly random N-subset) is estimated by Monte Carlo with " +
            std::to_string(s.subsets) +
            " seeded subsets per query, beside the exact E|.|^2; the predecessor bounds it by "
            "Jensen",
        "critical N: the first N of the grid at which the exact two-sample KS test of the "
        "heads' token-mean distance against their token-mean E has p >= ks_level (0.01 by "
        "default: the predecessor's text and figure; its pseudocode says 0.05)",
        "separability N_s/N is R(r_min, N) with exact counts (design section 2)",
        "g(T, eps) uses one seeded uniform unit direction per (window, layer, head, position), "
        "the same for every T and eps; the report shows the maximum over heads of the "
        "token mean"};
    return manifest;
}

}  // namespace

void run_normalization_limits(const NormalizationLimitsRequest& request,
                              const std::string& staging) {
    const auto start = Clock::now();
    const NormalizationLimitsPlan plan = plan_normalization_limits(request);
    const Transformer model =
        Transformer::load(plan.base.model, {plan.base.device, plan.base.dtype});
    const double load_seconds = seconds_since(start);
    const ModelConfig& config = model.config();
    const Documents documents = load_documents(plan.base, config.vocab_size);
    const RunWindows windows =
        cut_windows(plan.base, documents.ids, config.bos_token_id, missing_bos_reason(config));
    nlohmann::json manifest = normalization_limits_manifest(plan, config, documents, windows);
    LimitMeasuresGrid grid(
        config.num_layers,
        std::vector<HeadLimitMeasures>(config.num_heads, HeadLimitMeasures(plan.settings)));
    const int T = plan.base.settings.context;
    QueryRowRecorder recorder(config.num_layers, config.num_heads, plan.settings.positions);
    CaptureOptions options;
    options.queries = QueryRows::last;
    options.all_logits = false;
    options.edit = &recorder;
    Progress progress("normalization", windows.count, "windows", plan.base.quiet);
    InterruptGuard guard;
    double forward_seconds = 0, measure_seconds = 0;
    for (std::int64_t w = 0; w < windows.count; ++w) {
        if (InterruptGuard::interrupted())
            throw Interrupted("stopped after " + std::to_string(w) + " of " +
                              std::to_string(windows.count) +
                              " windows; nothing was written (normalization has no --resume)");
        auto mark = Clock::now();
        const auto& window = windows.all[windows.first + w];
        const auto ids = torch::tensor(window, torch::kInt64).view({1, T});
        const CaptureResult result = model.forward(ids, options);
        forward_seconds += seconds_since(mark);
        mark = Clock::now();
        add_window(result, recorder, plan, config, windows.first + w, grid);
        measure_seconds += seconds_since(mark);
        progress.update(
            w + 1, std::to_string(plan.settings.positions.size()) + " query positions a window");
    }
    write_normalization_limits_tables(staging, plan.settings, grid);
    manifest["timings"] = {{"total_s", seconds_since(start)},
                           {"load_s", load_seconds},
                           {"forward_s", forward_seconds},
                           {"measurements_s", measure_seconds},
                           {"threads", plan.threads}};
    write_file_atomic(staging + "/" + schema::file::manifest, manifest.dump(2) + "\n");
    progress.finish("measured " + std::to_string(plan.settings.positions.size()) +
                    " query positions in " + std::to_string(windows.count) + " windows");
}

}  // namespace attngeo::empirical
