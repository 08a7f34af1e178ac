// plan_extract: the request's flags to an ExtractPlan; see extract_plan.hpp.
#include "empirical/extract/extract_plan.hpp"

#include <algorithm>

#include "common/errors.hpp"
#include "common/number_list.hpp"
#include "common/output_folder.hpp"

namespace attngeo::empirical {
namespace {

// auto: the run.c port where it applies (a llama2.c checkpoint on the CPU in float32, where it
// reproduces run.c bit for bit), libtorch otherwise.
ForwardEngineKind choose_engine(const std::string& engine, const ExtractPlan& plan) {
    if (engine != "auto" && engine != "torch" && engine != "runc")
        throw InputError("--engine: '" + engine + "', expected auto, torch or runc");
    const bool runc_applies = plan.format == CheckpointFormat::llama2c && plan.device.is_cpu() &&
                              plan.dtype == ComputeDtype::float32;
    if (engine == "runc" && !plan.settings.positions.empty())
        throw InputError("--engine runc: keeps the final query row only; --queries '" +
                         plan.queries_spec + "' needs --engine torch (or auto)");
    if (engine == "runc" && !runc_applies)
        throw InputError(
            "--engine runc: only for a llama2.c .bin checkpoint with --device cpu "
            "and --dtype float32");
    const bool runc =
        engine == "runc" || (engine == "auto" && runc_applies && plan.settings.positions.empty());
    return runc ? ForwardEngineKind::runc : ForwardEngineKind::torch;
}

StatisticsSettings plan_statistics(const ExtractRequest& r) {
    if (r.context < 2)
        throw InputError("--context: " + std::to_string(r.context) + ", expected >= 2");
    StatisticsSettings settings;
    settings.context = r.context;
    settings.max_lag = std::min(r.max_lag, r.context - 2);
    settings.sizes = parse_selection_sizes(r.sizes, r.context, "--N");
    settings.ranking = theory::parse_ranking(r.rank);
    settings.distance = theory::parse_distance(r.distance);
    if (r.queries != "last") {
        // Position 0 reads no key but the sink itself: nothing to select from, no λ or ρ0.
        for (int t : parse_query_positions(r.queries, r.context))
            if (t > 0) settings.positions.push_back(t);
        if (settings.positions.empty())
            throw InputError("--queries '" + r.queries +
                             "': only position 0, which reads no key but itself; expected a "
                             "position t >= 1");
        settings.length_bins = make_length_bins(r.length_bins, r.context, settings.positions);
    }
    return settings;
}

}  // namespace

std::string ExtractPlan::documents_flag() const {
    return tokens_file.empty() ? "--corpus '" + corpus : "--tokens '" + tokens_file;
}

ExtractPlan plan_extract(const ExtractRequest& r) {
    if (r.out.empty()) throw InputError("--out: an output folder is required");
    check_output_folder(r.out, "--out");
    if (r.tokens_file.empty() == r.corpus.empty())
        throw InputError("--tokens / --corpus: give exactly one of them");
    if (r.max_lag < 1)
        throw InputError("--max-lag: " + std::to_string(r.max_lag) + ", expected >= 1");
    if (r.checkpoint_seconds < 0)
        throw InputError("--checkpoint-every: " + std::to_string(r.checkpoint_seconds) +
                         ", expected >= 0 seconds");
    if (r.stride < 0) throw InputError("--stride: " + std::to_string(r.stride) + ", expected >= 0");
    if (r.docs < 0)
        throw InputError("--docs: " + std::to_string(r.docs) + ", expected >= 0 (0 = all)");
    if (r.threads < 0)
        throw InputError("--threads: " + std::to_string(r.threads) + ", expected >= 1");
    ExtractPlan plan;
    plan.shard = parse_shard(r.shard);
    plan.bos = parse_bos_policy(r.bos);
    plan.dtype = parse_compute_dtype(r.dtype);
    plan.device = parse_device(r.device);
    plan.model = r.model;
    plan.format = checkpoint_format(r.model);
    plan.settings = plan_statistics(r);
    plan.queries_spec = r.queries;
    plan.engine = choose_engine(r.engine, plan);
    plan.sizes_spec = r.sizes;
    plan.device_gram = plan.engine == ForwardEngineKind::torch && r.metrics_on_device &&
                       uses_gram_path(plan.settings);
    plan.threads = statistics_threads(r.threads);
    plan.tokens_file = r.tokens_file;
    plan.corpus = r.corpus;
    plan.docs = r.docs;
    plan.stride = r.stride;
    plan.seed = r.seed;
    plan.out = r.out;
    plan.resume = r.resume;
    plan.quiet = r.quiet;
    plan.checkpoint_seconds = r.checkpoint_seconds;
    plan.stop_after = r.stop_after;
    plan.command_line = r.command_line;
    return plan;
}

}  // namespace attngeo::empirical
