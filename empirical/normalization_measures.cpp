// The predecessor paper's measurements per head; see normalization_measures.hpp.
#include "empirical/normalization_measures.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "common/atomic_file.hpp"
#include "common/errors.hpp"
#include "common/format.hpp"
#include "common/run_schema.hpp"
#include "common/splitmix64.hpp"
#include "theory/metrics.hpp"
#include "theory/normalization.hpp"

namespace attngeo::empirical {
namespace {

double positive_number(const std::string& item, const std::string& text, const std::string& flag) {
    std::size_t used = 0;
    double x = 0;
    try {
        x = std::stod(item, &used);
    } catch (const std::exception&) {
        used = 0;
    }
    if (item.empty() || used != item.size() || !(x > 0) || !std::isfinite(x))
        throw InputError(flag + " '" + text + "': '" + item + "', expected a positive number");
    return x;
}

}  // namespace

std::vector<double> parse_positive_grid(const std::string& text, const std::string& flag) {
    std::vector<std::string> parts;
    const char separator = text.find(':') != std::string::npos ? ':' : ',';
    std::stringstream items(text);
    std::string item;
    while (std::getline(items, item, separator))
        parts.push_back(item);
    std::vector<double> grid;
    if (separator == ':') {
        const long long count = parts.size() == 3 ? whole_number_or_minus_one(parts[2]) : -1;
        if (count < 2)
            throw InputError(flag + " '" + text +
                             "': expected lo:hi:count (a log grid, count >= 2) or a comma list");
        const double lo = positive_number(parts[0], text, flag),
                     hi = positive_number(parts[1], text, flag);
        if (!(hi > lo)) throw InputError(flag + " '" + text + "': expected lo < hi");
        // Powers of ten of evenly spaced exponents, so a decade's ends come out as written.
        const double first = std::log10(lo), last = std::log10(hi);
        for (long long i = 0; i < count; ++i)
            grid.push_back(std::pow(10.0, first + (last - first) * static_cast<double>(i) /
                                                      static_cast<double>(count - 1)));
        return grid;
    }
    for (const std::string& part : parts)
        grid.push_back(positive_number(part, text, flag));
    if (grid.empty()) throw InputError(flag + ": expected at least one positive number");
    std::sort(grid.begin(), grid.end());
    grid.erase(std::unique(grid.begin(), grid.end()), grid.end());
    return grid;
}

int NormalizationSettings::bin_of(int length) const {
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

HeadNormalization::HeadNormalization(const NormalizationSettings& settings)
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

void HeadNormalization::add(const QueryRow& row, const NormalizationSettings& settings) {
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

std::string distance_table(const NormalizationSettings& settings, const NormalizationGrid& grid) {
    std::ostringstream out;
    out << "layer,head,length_lo,length_hi,N,queries,distance,random_mean,random_se,"
           "random_rms_exact\n";
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

std::string separability_table(const NormalizationSettings& settings,
                               const NormalizationGrid& grid) {
    std::ostringstream out;
    out << "layer,head,length_lo,length_hi,N,queries,separability\n";
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

std::string sensitivity_table(const NormalizationSettings& settings,
                              const NormalizationGrid& grid) {
    std::ostringstream out;
    out << "layer,head,temperature,epsilon,queries,g\n";
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

void write_normalization_tables(const std::string& dir, const NormalizationSettings& settings,
                                const NormalizationGrid& grid) {
    write_file_atomic(dir + "/" + schema::file::selection_distance, distance_table(settings, grid));
    write_file_atomic(dir + "/" + schema::file::separability, separability_table(settings, grid));
    write_file_atomic(dir + "/" + schema::file::sensitivity, sensitivity_table(settings, grid));
}

}  // namespace attngeo::empirical
