// The predecessor paper's measurements over a run's windows (docs/design.md §14,
// docs/commands/normalization.md): which query positions are read, the length bins, and per head
// the sums of d̃(N), its random-selection expectation, separability and g(T, ε), written as the
// folder's CSV files. Torch-free (attngeo::empirical_core); the forward is
// normalization_limits.cpp's.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "empirical/extract/query_positions.hpp"

namespace attngeo::empirical {

struct NormalizationLimitsSettings {
    std::vector<int> positions;  // t measured in every window, ascending
    std::vector<LengthBin> bins;
    std::vector<int> sizes;  // the N grid, ascending
    int subsets = 64;        // Monte Carlo N-subsets per query for E
    std::uint64_t random_seed = 1;
    std::vector<double> temperatures, epsilons;
    // The bin holding length L, or −1.
    int bin_of(int length) const;
};

// One query row of one head as the forward gives it (float32, row-major).
struct QueryRow {
    const float* alpha = nullptr;  // [≥ t+1] softmax weights over keys 0..t
    const float* scores = nullptr;  // [≥ t+1] q·kᵀ/√d_head, −∞ where the mask forbids a key
    const float* values = nullptr;  // [≥ t+1, d] the value states the head reads
    int t = 0, d = 0;
    std::int64_t window = 0;  // the window's index in run order: keys the random streams
    int layer = 0, head = 0;
};

// Sums over the query rows of one (layer, head), in the order added (one thread per head, so
// the results do not depend on the thread count).
class HeadLimitMeasures {
  public:
    struct DistanceSums {
        std::int64_t queries = 0;
        double distance = 0, random_mean = 0, random_se_squared = 0, exact_mean_square = 0;
    };
    struct MeanSums {
        std::int64_t queries = 0;
        double total = 0;
    };

    explicit HeadLimitMeasures(const NormalizationLimitsSettings& settings);
    // Every measurement of one query row: d̃, E (Monte Carlo and exact E‖·‖²) and separability
    // for the sizes its bin holds, and g for every (T, ε).
    void add(const QueryRow& row, const NormalizationLimitsSettings& settings);

    // [bin][size index]: rows only for sizes ≤ the bin's shortest L (distance) or < it
    // (separability).
    const std::vector<std::vector<DistanceSums>>& distance() const { return distance_; }
    const std::vector<std::vector<MeanSums>>& separability() const { return separability_; }
    // [temperature][epsilon]
    const std::vector<std::vector<MeanSums>>& sensitivity() const { return sensitivity_; }

  private:
    std::vector<std::vector<DistanceSums>> distance_;
    std::vector<std::vector<MeanSums>> separability_;
    std::vector<std::vector<MeanSums>> sensitivity_;
};

// [layers][heads]
using LimitMeasuresGrid = std::vector<std::vector<HeadLimitMeasures>>;

// The seed of one random stream of the run: SplitMix64 chained over the parts.
std::uint64_t stream_seed(std::uint64_t seed, std::initializer_list<std::uint64_t> parts);

// distance.csv, separability.csv and sensitivity.csv of `grid` into `dir` (atomically each).
void write_normalization_limits_tables(const std::string& dir,
                                       const NormalizationLimitsSettings& settings,
                                       const LimitMeasuresGrid& grid);

}  // namespace attngeo::empirical
