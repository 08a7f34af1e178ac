// The resumable state of an extract run (docs/design.md §6, §10): the exact per-head sums, the
// per-document spill beside them and the checkpoint that ties the two, plus the run fingerprint
// that says whether a state belongs to a run. Torch-free (attngeo::empirical_core).
#pragma once
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "empirical/extract/sink_measures.hpp"
#include "empirical/extract/statistics.hpp"

namespace attngeo::empirical {

// Per (layer, head) statistics of one run: [layers][heads].
using StatisticsGrid = std::vector<std::vector<HeadStatistics>>;
StatisticsGrid make_grid(int layers, int heads, const StatisticsSettings& settings);

// The per-document arrays of per_doc.safetensors and of one window's spill record (float32):
// P [L, H, S], R [L, H, S], rho0 [L, H], lambda [L, H], cos_by_lag [L, H, K], alpha [L, H, n],
// C [L, H], m_sink, m_last, m_rest [L, H], Fmax, Fmin, cos_s_v0, cos_s_vL [L, H, S], with
// S = |sizes|, K = max_lag, n = context. cos_by_lag, alpha and C are what compare's fit
// intervals refit, the last seven what the claims' document bootstraps resample (docs/design.md
// §7); DocumentRecord holds one head's values of each. Then the attention-sink measures
// (docs/design.md §15; NaN where a window was not measured): sink_attention, key_norm_ratio,
// cos_query_sink, cos_query_rest [L, H], massive [L, 5] (largest |h|, median |h|, position, dim,
// token id) and secondary_sinks [4, 4] (position, token id, heads, largest α(k); NaN rows past
// the window's sinks).
struct PerDocLayout {
    static constexpr int kStatisticTensors = 14;  // DocumentRecord's, per head
    static constexpr int kTensors = 20;
    static constexpr int kSecondarySinks = 4;  // the secondary sinks kept per window
    // "P", "R", "rho0", "lambda", "cos_by_lag", "alpha", "C", "m_sink", "m_last", "m_rest",
    // "Fmax", "Fmin", "cos_s_v0", "cos_s_vL", "sink_attention", "key_norm_ratio",
    // "cos_query_sink", "cos_query_rest", "massive", "secondary_sinks"
    static const char* const kNames[kTensors];
    // Where the named tensors start in kNames order.
    enum Tensor : int {
        sink_attention = 14,
        key_norm_ratio,
        cos_query_sink,
        cos_query_rest,
        massive,
        secondary_sinks
    };
    static constexpr int kMassiveFields = 5, kSecondaryFields = 4;
    std::int64_t layers = 0, heads = 0, sizes = 0, max_lag = 0, context = 0;
    std::int64_t block(int tensor) const;   // floats of `tensor` for one window
    std::int64_t offset(int tensor) const;  // where `tensor` starts in one window's record
    std::int64_t record_floats() const { return offset(kTensors); }
    // The trailing dimension of `tensor` after [L, H] (1 for the per-head scalars), after [L]
    // for massive, the whole window's for secondary_sinks.
    std::int64_t inner(int tensor) const;
    // The shape of `tensor` in per_doc.safetensors for `documents` windows: [D, L, H] for the
    // per-head scalars, [D, L, H, inner] for the others (even where inner is 1), [D, L, 5] for
    // massive and [D, 4, 4] for secondary_sinks.
    std::vector<std::int64_t> shape(int tensor, std::int64_t documents) const;
};

// The layout of a run of `layers` × `heads` with these statistics settings.
PerDocLayout per_doc_layout(int layers, int heads, const StatisticsSettings& settings);

// One window's record in PerDocLayout order: [record_floats].
class WindowRecord {
  public:
    explicit WindowRecord(const PerDocLayout& layout);
    // Throws std::invalid_argument when the document's arrays do not have the layout's sizes.
    void set(int layer, int head, const DocumentRecord& document);
    // One layer's sink measures (per head and the layer's massive activation); `tokens` [T] the
    // window's token ids.
    void set_sinks(int layer, const LayerSinks& sinks, const std::vector<std::int64_t>& tokens);
    // The window's secondary sinks, at most kSecondarySinks of them (the rest NaN).
    void set_secondary_sinks(const std::vector<SecondarySink>& sinks,
                             const std::vector<std::int64_t>& tokens);
    const std::vector<float>& floats() const { return floats_; }

  private:
    PerDocLayout layout_;
    std::vector<float> floats_;
};

// The settings, model shape and every window's token ids hashed (FNV-1a 64, as 16 hex digits):
// what makes two runs, or two shards, the same run. `settings_text` is the settings metadata.
std::string run_fingerprint(const std::string& settings_text,
                            const std::vector<std::vector<std::int64_t>>& windows);

// The exact state of every head as one I64 tensor "state" with `metadata` (plus its format).
void save_state(const std::string& path, const StatisticsGrid& grid,
                const std::map<std::string, std::string>& metadata);
// Loads what save_state wrote into `grid` (already made with the run's settings); returns the
// metadata. InputError naming the file for another format or a state of another shape.
std::map<std::string, std::string> load_state(const std::string& path, StatisticsGrid& grid);

// Resume, spill and checkpoint of one run in `out`: OUT/.partial/state.safetensors (the exact
// sums after `done()` windows) and OUT/.partial/per_doc.bin (one WindowRecord per window).
// A failure removes the partial state this run owns (docs/design.md §10: nothing half-written); an
// interruption (release()) keeps it for --resume.
class ExtractState {
  public:
    // metadata: run_fingerprint, shard, windows, settings (sums.safetensors' metadata);
    // windows: the shard's window count D.
    ExtractState(const std::string& out, StatisticsGrid grid, const PerDocLayout& layout,
                 std::map<std::string, std::string> metadata, std::int64_t windows);
    ExtractState(const ExtractState&) = delete;
    ExtractState& operator=(const ExtractState&) = delete;
    ~ExtractState();

    // Whether `out` already holds this run, finished (so --resume has nothing to do).
    bool finished_in_out() const;
    // Continues from the checkpoint (resume = true; a checkpoint without --resume is refused)
    // or starts empty, then checks the memory and disk the rest of the run needs.
    void open(bool resume);

    std::int64_t done() const { return done_; }
    std::int64_t windows() const { return windows_; }
    StatisticsGrid& grid() { return grid_; }
    const std::map<std::string, std::string>& metadata() const { return metadata_; }
    const PerDocLayout& layout() const { return layout_; }

    // Appends one window's record to the spill (after its statistics were added to grid()).
    void append(const WindowRecord& record);
    // Makes the spill durable, then saves the state: a state never counts a window whose
    // record is not on disk.
    void checkpoint();
    // Leaves the partial state in place (an interruption: --resume continues it).
    void release();
    // Streams tensor `tensor` of PerDocLayout for every spilled window, in window order.
    void copy_per_doc(int tensor, std::ostream& stream) const;
    // After the outputs are written: removes the partial state (the state before the spill,
    // so a kill in between leaves a complete run, never a state without its spill).
    void remove_partial();

  private:
    void resume_from_checkpoint();
    void start_empty();
    void check_resources() const;

    std::filesystem::path out_, partial_, state_path_, spill_path_;
    StatisticsGrid grid_;
    PerDocLayout layout_;
    std::map<std::string, std::string> metadata_;
    std::int64_t windows_ = 0, done_ = 0;
    std::FILE* spill_ = nullptr;
    bool out_existed_ = false, owned_ = false;
};

}  // namespace attngeo::empirical
