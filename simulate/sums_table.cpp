// sums.csv, the exact Monte Carlo sums of a run folder and of a saved state: written by the
// folder writer and the checkpoint, read by --resume and merge; see run_internal.hpp.
#include "simulate/run.hpp"

#include <algorithm>
#include <array>
#include <filesystem>
#include <sstream>
#include <string>

#include "common/csv.hpp"
#include "common/errors.hpp"
#include "common/run_columns.hpp"
#include "common/run_schema.hpp"
#include "simulate/run_internal.hpp"

namespace fs = std::filesystem;

namespace attngeo::simulate {
void write_sums_csv(std::ostringstream& out, int grid, const std::vector<int>& sizes,
                    const SimulationSums& sums) {
    auto row = [&](int N, const std::string& quantity, const MomentSums& m) {
        out << grid << ',' << N << ',' << quantity << ',' << m.count << ','
            << to_string_int128(m.sum) << ',' << to_string_int128(m.sum_squares) << '\n';
    };
    for (std::size_t s = 0; s < sizes.size(); ++s) {
        const SizeSums& z = sums.by_size[s];
        row(sizes[s], "P", z.precision);
        row(sizes[s], "R", z.recall);
        row(sizes[s], "Fmax", z.fmax);
        row(sizes[s], "Fmin", z.fmin);
    }
    for (int k = 0; k < kRealisedLags; ++k)
        row(0, "cos_lag" + std::to_string(k + 1), sums.realised.cos_by_lag[k]);
    row(0, "cos_sink", sums.realised.cos_to_sink);
    row(0, "norm_ratio_mean", sums.realised.norm_ratio_mean);
    row(0, "norm_ratio_cv", sums.realised.norm_ratio_cv);
}

namespace {

MomentSums* sums_slot(SimulationSums& sums, const std::vector<int>& sizes, int N,
                      const std::string& quantity) {
    if (N == 0) {
        for (int k = 0; k < kRealisedLags; ++k)
            if (quantity == "cos_lag" + std::to_string(k + 1)) return &sums.realised.cos_by_lag[k];
        if (quantity == "cos_sink") return &sums.realised.cos_to_sink;
        if (quantity == "norm_ratio_mean") return &sums.realised.norm_ratio_mean;
        if (quantity == "norm_ratio_cv") return &sums.realised.norm_ratio_cv;
        return nullptr;
    }
    const auto it = std::lower_bound(sizes.begin(), sizes.end(), N);
    if (it == sizes.end() || *it != N) return nullptr;
    SizeSums& z = sums.by_size[static_cast<std::size_t>(it - sizes.begin())];
    if (quantity == "P") return &z.precision;
    if (quantity == "R") return &z.recall;
    if (quantity == "Fmax") return &z.fmax;
    if (quantity == "Fmin") return &z.fmin;
    return nullptr;
}

// Moments that `count` per-trial values can have in 2⁻⁴⁰ fixed point (P, R and F lie in
// [0, 1]; the realised statistics at N = 0 may be any sign), with T·Σq² and (Σq)² representable
// so that estimate() computes the spread exactly: a sums.csv row outside them was edited or
// corrupted, and would overflow instead of giving a number.
void check_moments(const MomentSums& m, std::int64_t trials, bool unit_interval,
                   const std::string& where) {
    constexpr Int128 one = static_cast<Int128>(1) << 40,
                     largest = static_cast<Int128>(~static_cast<UInt128>(0) >> 1);
    const Int128 sum_magnitude = m.sum < 0 ? -m.sum : m.sum;  // |Σq| < 2¹²⁷ after parsing
    bool possible = m.count >= 0 && m.count <= trials && m.sum_squares >= 0 && m.sum > -largest &&
                    (m.sum_squares == 0 || m.count <= largest / m.sum_squares) &&
                    (m.sum == 0 || sum_magnitude <= largest / sum_magnitude) &&
                    m.sum * m.sum <= m.count * m.sum_squares;  // Cauchy–Schwarz
    if (possible && unit_interval)
        possible = m.count <= (static_cast<std::int64_t>(1) << 46) && m.sum >= 0 &&
                   m.sum <= m.count * one && m.sum_squares <= m.count * one * one;
    if (!possible)
        throw InputError(where + ": count " + std::to_string(m.count) +
                         ", sum and sum_squares are not the sums of that many values" +
                         (unit_interval ? " in [0, 1]" : "") + " (at most " +
                         std::to_string(trials) + " trials)");
}

Int128 int128_field(const CsvRow& row, std::size_t column) {
    try {
        return parse_int128(row.text(column));
    } catch (const std::invalid_argument& e) {
        throw InputError(row.where(column) + ": " + e.what());
    }
}

// One sums.csv row into its slot of `sums` (the sizes of each grid point given), checked to be
// sums that that many trials can produce.
void read_sums_row(const CsvRow& row, const std::array<std::size_t, 6>& column,
                   const std::vector<std::vector<int>>& sizes, std::int64_t trials,
                   std::vector<SimulationSums>& sums) {
    const std::int64_t grid = row.integer(column[0]), N = row.integer(column[1]);
    if (grid < 0 || grid >= static_cast<std::int64_t>(sums.size()))
        throw InputError(row.where(column[0]) + ": grid index " + std::to_string(grid) +
                         " out of range, expected 0.." + std::to_string(sums.size() - 1));
    const std::string& quantity = row.text(column[2]);
    MomentSums* slot = N >= 0 && N <= std::numeric_limits<int>::max()
                           ? sums_slot(sums[grid], sizes[grid], static_cast<int>(N), quantity)
                           : nullptr;
    if (!slot)
        throw InputError(row.where(column[2]) + ": unknown quantity '" + quantity +
                         "' at N = " + std::to_string(N));
    slot->count = row.integer(column[3]);
    slot->sum = int128_field(row, column[4]);
    slot->sum_squares = int128_field(row, column[5]);
    check_moments(*slot, trials, N != 0, row.where());
}

}  // namespace

// DIR/sums.csv of a run folder (or of a saved state), laid out by `config`'s grid. `who` opens
// every message ("merge", "--resume").
std::vector<SimulationSums> read_sums(const std::string& dir, const RunConfig& config,
                                      const std::string& who) {
    const auto points = grid_points(config);
    std::vector<SimulationSums> sums(points.size());
    std::vector<std::vector<int>> sizes(points.size());
    for (const auto& p : points) {
        sizes[p.index] = setup_point(config, p).spec.sizes;
        sums[p.index].by_size.resize(sizes[p.index].size());
    }
    try {
        CsvReader reader((fs::path(dir) / schema::file::monte_carlo_sums).string(),
                         "the exact sums of a simulate or sweep run folder");
        std::array<std::size_t, 6> column{};
        std::size_t k = 0;
        for (const std::string& name :
             schema::csv_column_names(schema::page::simulate, schema::file::monte_carlo_sums))
            column[k++] = reader.column(name);
        while (reader.next())
            read_sums_row(reader.row(), column, sizes, config.trials, sums);
    } catch (const InputError& e) {
        throw InputError(who + ": " + e.what());
    }
    for (auto& s : sums)
        s.trials = s.by_size.empty() ? 0 : s.by_size.front().precision.count;
    return sums;
}

}  // namespace attngeo::simulate
