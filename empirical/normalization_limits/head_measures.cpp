// The predecessor paper's measurements per head; see head_measures.hpp.
#include "empirical/normalization_limits/head_measures.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "common/atomic_file.hpp"
#include "common/errors.hpp"
#include "common/format.hpp"
#include "common/run_columns.hpp"
#include "common/run_schema.hpp"
#include "common/splitmix64.hpp"
#include "theory/metrics.hpp"
#include "theory/normalization_limits.hpp"

namespace attngeo::empirical {

int NormalizationLimitsSettings::bin_of(int length) const {
    for (std::size_t b = 0; b < bins.size(); ++b)
        if (length >= bins[b].lo && length <= bins[b].hi) return static_cast<int>(b);
    return -1;
}

std::uint64_t stream_seed(std::uint64_t seed, std::initializer_list<std::uint64_t> parts) {
    std::uint64_t state = SplitMix64(seed).next();
    for (std::uint64_t part : parts)
        state = SplitMix64(state ^ part).next();
    return state;
}

HeadLimitMeasures::HeadLimitMeasures(const NormalizationLimitsSettings& settings)
    : distance_(settings.bins.size(), std::vector<DistanceSums>(settings.sizes.size())),
      separability_(settings.bins.size(), std::vector<MeanSums>(settings.sizes.size())),
      sensitivity_(settings.temperatures.size(), std::vector<MeanSums>(settings.epsilons.size())) {}

namespace {

// The row as the theory functions take it: keys 0..t in double.
theory::TokenGeometry row_geometry(const QueryRow& row) {
    const int L = row.t + 1;
    theory::TokenGeometry tokens;
    tokens.alpha.resize(L);
    tokens.values.resize(L, row.d);
    for (int i = 0; i < L; ++i) {
        tokens.alpha[i] = row.alpha[i];
        for (int k = 0; k < row.d; ++k)
            tokens.values(i, k) = row.values[static_cast<std::size_t>(i) * row.d + k];
    }
    return tokens;
}

}  // namespace

void HeadLimitMeasures::add(const QueryRow& row, const NormalizationLimitsSettings& settings) {
    const int L = row.t + 1, bin = settings.bin_of(L);
    if (bin < 0) return;
    const theory::TokenGeometry tokens = row_geometry(row);
    theory::validate_token_geometry(tokens, "normalization");
    const theory::RowMatrix y = theory::selection_contributions(tokens);
    const std::vector<int> order =
        theory::selection_order(theory::selection_scores(tokens, theory::Ranking::attention));
    const int lo = settings.bins[bin].shortest;
    std::vector<int> within, separable;  // N ≤ shortest (distance) and N < it (separability)
    for (int N : settings.sizes) {
        if (N <= lo) within.push_back(N);
        if (N < lo) separable.push_back(N);
    }
    const std::vector<double> distances = theory::selection_distance(y, order, within);
    for (std::size_t k = 0; k < within.size(); ++k) {
        const int N = within[k];
        const auto estimate = theory::random_selection_distance(
            y, N, settings.subsets,
            stream_seed(
                settings.random_seed,
                {1, static_cast<std::uint64_t>(row.window), static_cast<std::uint64_t>(row.layer),
                 static_cast<std::uint64_t>(row.head), static_cast<std::uint64_t>(row.t),
                 static_cast<std::uint64_t>(N)}));
        DistanceSums& sums = distance_[bin][k];
        sums.queries += 1;
        sums.distance += distances[k];
        sums.random_mean += estimate.mean;
        sums.random_se_squared += estimate.standard_error * estimate.standard_error;
        sums.exact_mean_square += theory::random_selection_mean_square(y, N);
    }
    if (!separable.empty()) {
        // Identical counts either way; the per-N reference is cheaper for a sparse grid.
        const auto metrics =
            static_cast<int>(separable.size()) < L
                ? theory::selection_metrics_reference(tokens, separable, theory::Ranking::attention,
                                                      theory::Distance::euclidean)
                : theory::selection_metrics_gram(tokens, separable, theory::Ranking::attention,
                                                 theory::Distance::euclidean);
        for (std::size_t k = 0; k < separable.size(); ++k) {
            separability_[bin][k].queries += 1;
            separability_[bin][k].total += metrics[k].recall_at_rmin;
        }
    }
    std::vector<double> scores(row.scores, row.scores + L);
    const std::vector<double> direction = theory::random_unit_direction(
        L, stream_seed(
               settings.random_seed,
               {2, static_cast<std::uint64_t>(row.window), static_cast<std::uint64_t>(row.layer),
                static_cast<std::uint64_t>(row.head), static_cast<std::uint64_t>(row.t)}));
    for (std::size_t a = 0; a < settings.temperatures.size(); ++a)
        for (std::size_t b = 0; b < settings.epsilons.size(); ++b) {
            sensitivity_[a][b].queries += 1;
            sensitivity_[a][b].total += theory::softmax_sensitivity(
                scores, direction, settings.temperatures[a], settings.epsilons[b]);
        }
}

namespace {

std::string distance_table(const NormalizationLimitsSettings& settings,
                           const LimitMeasuresGrid& grid) {
    std::ostringstream out;
    out << schema::csv_header(schema::page::normalization, schema::file::selection_distance)
        << '\n';
    for (std::size_t l = 0; l < grid.size(); ++l)
        for (std::size_t h = 0; h < grid[l].size(); ++h)
            for (std::size_t b = 0; b < settings.bins.size(); ++b)
                for (std::size_t k = 0; k < settings.sizes.size(); ++k) {
                    const auto& sums = grid[l][h].distance()[b][k];
                    if (sums.queries == 0) continue;
                    const double q = static_cast<double>(sums.queries);
                    out << l << ',' << h << ',' << settings.bins[b].lo << ',' << settings.bins[b].hi
                        << ',' << settings.sizes[k] << ',' << sums.queries << ','
                        << format_double(sums.distance / q) << ','
                        << format_double(sums.random_mean / q) << ','
                        << format_double(std::sqrt(sums.random_se_squared) / q) << ','
                        << format_double(std::sqrt(sums.exact_mean_square / q)) << '\n';
                }
    return out.str();
}

std::string separability_table(const NormalizationLimitsSettings& settings,
                               const LimitMeasuresGrid& grid) {
    std::ostringstream out;
    out << schema::csv_header(schema::page::normalization, schema::file::separability) << '\n';
    for (std::size_t l = 0; l < grid.size(); ++l)
        for (std::size_t h = 0; h < grid[l].size(); ++h)
            for (std::size_t b = 0; b < settings.bins.size(); ++b)
                for (std::size_t k = 0; k < settings.sizes.size(); ++k) {
                    const auto& sums = grid[l][h].separability()[b][k];
                    if (sums.queries == 0) continue;
                    out << l << ',' << h << ',' << settings.bins[b].lo << ',' << settings.bins[b].hi
                        << ',' << settings.sizes[k] << ',' << sums.queries << ','
                        << format_double(sums.total / static_cast<double>(sums.queries)) << '\n';
                }
    return out.str();
}

std::string sensitivity_table(const NormalizationLimitsSettings& settings,
                              const LimitMeasuresGrid& grid) {
    std::ostringstream out;
    out << schema::csv_header(schema::page::normalization, schema::file::sensitivity) << '\n';
    for (std::size_t l = 0; l < grid.size(); ++l)
        for (std::size_t h = 0; h < grid[l].size(); ++h)
            for (std::size_t a = 0; a < settings.temperatures.size(); ++a)
                for (std::size_t b = 0; b < settings.epsilons.size(); ++b) {
                    const auto& sums = grid[l][h].sensitivity()[a][b];
                    if (sums.queries == 0) continue;
                    out << l << ',' << h << ',' << format_double(settings.temperatures[a]) << ','
                        << format_double(settings.epsilons[b]) << ',' << sums.queries << ','
                        << format_double(sums.total / static_cast<double>(sums.queries)) << '\n';
                }
    return out.str();
}

}  // namespace

void write_normalization_limits_tables(const std::string& dir,
                                       const NormalizationLimitsSettings& settings,
                                       const LimitMeasuresGrid& grid) {
    write_file_atomic(dir + "/" + schema::file::selection_distance, distance_table(settings, grid));
    write_file_atomic(dir + "/" + schema::file::separability, separability_table(settings, grid));
    write_file_atomic(dir + "/" + schema::file::sensitivity, sensitivity_table(settings, grid));
}

}  // namespace attngeo::empirical
