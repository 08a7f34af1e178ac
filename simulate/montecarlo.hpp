// Monte Carlo estimation of E P(r_max,N), E R(r_min,N), E F(r_max,N), E F(r_min,N) under
// Assumptions 1–3 (docs/design.md §5): expectation over direction randomness with α and the nominal
// norms fixed. Trials run in parallel (OpenMP); each trial's stream is keyed by
// (seed, grid point, trial) and sums are exact integers, so results do not depend on threads.
#pragma once
#include <Eigen/Dense>
#include <cstdint>
#include <vector>

#include "common/exact_sums.hpp"
#include "simulate/generator.hpp"
#include "theory/bounds.hpp"
#include "theory/metrics.hpp"
#include "theory/parametric.hpp"

namespace attngeo::simulate {

inline constexpr int kRealisedLags = 8;

// What a simulation run is: the head, the sampling and the metrics.
struct SimulationSpec {
    theory::ModelParameters model;  // α (profile), nominal norms, cosine model
    int d = 128;                    // value dimension (ignored when d_infinite)
    bool d_infinite = false;        // the d → ∞ limit: metrics of the expected Gram matrix
    std::int64_t trials = 1000;
    std::uint64_t seed = 1;
    std::uint32_t grid_point = 0;  // part of every trial's RNG key (sweeps)
    std::vector<int> sizes;        // selection sizes N, ascending
    bool all_sizes = true;         // sizes = 1..n: the Gram path; otherwise the per-N path
    theory::Ranking ranking = theory::Ranking::attention;
    theory::Distance distance = theory::Distance::euclidean;
    SinkMode sink_mode = SinkMode::exact;
    double norm_cv = 0;
};

// Realised statistics of the generated values, averaged per trial (docs/design.md §4).
struct RealisedSums {
    MomentSums cos_by_lag[kRealisedLags];  // mean_i cos(v_i, v_{i+k}), i ≥ 1, k = 1..8
    MomentSums cos_to_sink;                // mean_{j≥1} cos(v_0, v_j)
    MomentSums norm_ratio_mean;            // mean_{i≥1} ‖v_i‖ / nominal
    MomentSums norm_ratio_cv;              // CV over i ≥ 1 of ‖v_i‖ / nominal
    void merge(const RealisedSums& other);
};

// Per selection size: the four metrics' exact sums.
struct SizeSums {
    MomentSums precision, recall, fmax, fmin;
    void merge(const SizeSums& other);
};

// Per trial and selection size, the exact counts behind that trial's P and R
// (theory::SelectionMetrics): the per-unit values a simultaneous band over N is computed from
// (docs/design.md §7). Integers, so a block holds the same bits whatever computed it.
struct TrialCounts {
    std::int64_t first = 0;          // the first trial index held
    std::int64_t trials = 0;         // T: trials first .. first + T − 1
    int size_count = 0;              // S = |sizes|
    std::vector<std::int32_t> K_in;  // [T, S] #{i ∈ I_N : D_i ≤ r_min²}, row t = trial first + t
    std::vector<std::int32_t> K_out;  // [T, S] #{j ∉ I_N : D_j ≤ r_max²}
    // A block of T zero rows from `first`, for the rows to be filled in any order.
    static TrialCounts zeros(std::int64_t first, std::int64_t trials, int size_count);
    // Appends `next`, which must start exactly where this block ends (std::logic_error
    // otherwise): concatenating in trial order is what makes blocks independent of how the
    // trials were split. An empty block on either side takes the other.
    void append(const TrialCounts& next);
};

// P(r_max,N) = N/(N + K_out) of row `row` at size index s (N = sizes[s]): the double
// theory::SelectionMetrics::precision_at_rmax holds, bit for bit.
inline double trial_precision(const TrialCounts& c, std::int64_t row, std::size_t s, int N) {
    return static_cast<double>(N) / (N + c.K_out[static_cast<std::size_t>(row) * c.size_count + s]);
}
// R(r_min,N) = K_in/N of row `row` at size index s, as recall_at_rmin holds it.
inline double trial_recall(const TrialCounts& c, std::int64_t row, std::size_t s, int N) {
    return static_cast<double>(c.K_in[static_cast<std::size_t>(row) * c.size_count + s]) / N;
}

struct SimulationSums {
    std::int64_t trials = 0;
    std::vector<SizeSums> by_size;  // [|sizes|]
    RealisedSums realised;
    TrialCounts counts;  // the trials summed, one row each (none at d = ∞)
    // Adds the sums and appends the counts: `other` must hold the trials right after these.
    void merge(const SimulationSums& other);
};

// The head the spec describes (α, nominal norms, cosine model), validated.
theory::HeadModel simulation_head(const SimulationSpec& spec);
// The generator settings of the spec (throws std::domain_error when ρ0 is infeasible).
GeneratorSettings generator_settings(const SimulationSpec& spec, const theory::HeadModel& head);

// Everything a trial needs that does not change between trials (the head, the generator,
// the ranking), built once per grid point.
class TrialEngine {
  public:
    explicit TrialEngine(const SimulationSpec& spec);
    // Runs trials [first, last) on `threads` threads (0 = OpenMP default); counts.first = first.
    SimulationSums run(std::int64_t first, std::int64_t last, int threads) const;

  private:
    SimulationSpec spec_;
    theory::HeadModel head_;
    ValueGenerator generator_;
    bool fixed_order_ = true;          // α and nominal norms fix the ranking in every trial
    bool realised_from_gram_ = false;  // realised statistics from G (all N, α > 0)
    std::vector<int> order_;           // [n] π, when fixed
    std::vector<int> position_;        // [n] π⁻¹, when fixed
};

// TrialEngine(spec).run(first, last, threads).
SimulationSums run_trials(const SimulationSpec& spec, std::int64_t first, std::int64_t last,
                          int threads);

// The d → ∞ limit: metrics from the expected Gram Ḡ_kl = a_k a_l K_kl (no sampling),
// with K the covariance the generator realises (exact: Assumption 2; project: its variant).
std::vector<theory::SelectionMetrics> infinite_d_metrics(const SimulationSpec& spec);

using theory::expected_normalized_cosine;

// One trial's realised statistics, from the values directly.
void add_realised_statistics(const theory::RowMatrix& values, const Eigen::VectorXd& nominal_norms,
                             RealisedSums& sums);
// The same from the Gram matrix of the ranked contributions (O(n) instead of O(n·d)):
// position[i] is token i's rank, and every α_i must be > 0.
void add_realised_statistics_from_gram(const Eigen::MatrixXd& gram,
                                       const std::vector<int>& position,
                                       const Eigen::VectorXd& alpha,
                                       const Eigen::VectorXd& nominal_norms, RealisedSums& sums);
// The same from the single-precision Gram matrix of fl32(2^scale_exponent·ranked) (the
// Euclidean all-N path; [ld ≥ n, n], only the lower triangle of the top n rows is read):
// scaled_lengths = theory::band_row_norms(ranked, scale_exponent) [n], σ‖y‖ from the double
// rows, so the norm statistics are as exact as before; the cosines carry float32 rounding
// (~1e-7 relative).
void add_realised_statistics_from_single_gram(const Eigen::MatrixXf& gram, int scale_exponent,
                                              const std::vector<double>& scaled_lengths,
                                              const std::vector<int>& position,
                                              const Eigen::VectorXd& alpha,
                                              const Eigen::VectorXd& nominal_norms,
                                              RealisedSums& sums);

}  // namespace attngeo::simulate
