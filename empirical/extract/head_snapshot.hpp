// One head of one document seen whole, for the paper's Figure 1 (the contributions y_i = α_i v_i
// projected on their two principal axes with s(N), r_min and r_max) and Figure 10 (‖α_i v_i‖ by
// position, coloured by cos(v_i, s(N)), for every head of that document). Torch-free: extract
// feeds it the captured rows of the chosen window (`extract --snapshot L:H:N:DOC`).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "common/run_schema.hpp"
#include "theory/metrics.hpp"

namespace attngeo::empirical {

// What `--snapshot` asked for. layer = head = −1: the head with the largest sink mass α_0 in the
// window (ties to the lower layer, then head).
struct SnapshotRequest {
    int layer = -1, head = -1;
    int N = 8;                  // |I_N|, clamped to the context
    std::int64_t document = 0;  // the window's index in run order (0 = the first)
    bool enabled = true;        // --snapshot off
};

// Parses `--snapshot`: "auto" (the default: largest sink mass, N = 8, window 0), "off",
// "L:H:N:DOC" or "auto:N:DOC". Throws InputError naming --snapshot for anything else.
SnapshotRequest parse_snapshot_request(const std::string& text);

// Checks the request against the model and the run (InputError naming --snapshot).
void validate_snapshot_request(const SnapshotRequest& request, int layers, int heads, int context,
                               std::int64_t windows);

// The chosen head's picture of Figure 1 and the numbers that define it.
struct HeadSnapshot {
    int layer = -1, head = -1, N = 0, n = 0, d = 0;
    std::int64_t document = 0;
    double r_min = 0, r_max = 0;  // theory::selection_metrics_reference at N (r_min = inf at N = n)
    double precision = 1, recall = 1;   // P(r_max, N), R(r_min, N)
    double s_pc1 = 0, s_pc2 = 0;        // s(N) in the projection
    double explained[2] = {0, 0};       // fraction of the variance of the y_i on each axis
    std::vector<double> alpha;          // [n]
    std::vector<int> selected;          // [n] 1 for i ∈ I_N
    std::vector<double> pc1, pc2;       // [n] (y_i − ȳ) on the two leading principal axes
    std::vector<double> contrib_norm;   // [n] ‖α_i v_i‖
    std::vector<double> distance_to_s;  // [n] ‖α_i v_i − s(N)‖ in the full space
    std::vector<double> cos_to_s;       // [n] cos(v_i, s(N)); 0 where v_i or s is 0
};

// The snapshot of one head: alpha [n], values [n, d] row-major; I_N by `ranking` with
// theory's order. Throws std::domain_error for bad sizes or inputs (theory's validation).
HeadSnapshot snapshot_head(const float* alpha, const float* values, int n, int d, int N,
                           theory::Ranking ranking);

// ‖α_i v_i‖ and cos(v_i, s(N)) of every position of one head (Figure 10's scatter).
struct HeadContributions {
    int layer = 0, head = 0;
    std::vector<double> alpha, contrib_norm, cos_to_s;  // [n] each
};
HeadContributions head_contributions(const float* alpha, const float* values, int n, int d, int N,
                                     theory::Ranking ranking);

// Collects the snapshot window's heads as extract runs them (called for every head of every
// layer of every window; it keeps only what the request names).
class SnapshotCollector {
  public:
    SnapshotCollector(const SnapshotRequest& request, int context, theory::Ranking ranking);
    // Marks the window the engine runs next (its index in run order).
    void start_window(std::int64_t window) {
        active_ = request_.enabled && window == request_.document;
    }
    bool active() const { return active_; }
    void observe(int layer, int head, const float* alpha, const float* values, int d);
    bool complete() const { return !contributions_.empty(); }
    // snapshot.csv, snapshot.json and contributions.csv (docs/commands/extract.md).
    std::string snapshot_csv() const;
    std::string snapshot_json() const;
    std::string contributions_csv() const;

  private:
    SnapshotRequest request_;
    int context_ = 0, N_ = 0;
    theory::Ranking ranking_;
    bool active_ = false;
    double best_sink_ = -1;  // the largest α_0 seen in the window (default head choice)
    HeadSnapshot snapshot_;
    std::vector<HeadContributions> contributions_;
};

// Writes the collector's three files into OUT/.partial/ as soon as its window is done, so that
// a run resumed after that window still publishes them.
void stage_snapshot(const SnapshotCollector& collector, const std::string& out);
// After the extract folder is written: moves the staged files into OUT (atomically each), or,
// when this run staged none (the window belongs to another shard), removes older ones from OUT
// so a folder never shows a snapshot of a different run.
void publish_snapshot(const std::string& out);

// The files, in the order extract writes them.
inline constexpr const char* kSnapshotFiles[] = {
    schema::file::snapshot_table, schema::file::snapshot_scalars, schema::file::contributions};

}  // namespace attngeo::empirical
