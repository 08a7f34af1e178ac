// Simultaneous bands over points; see simultaneous_band.hpp. The bootstrap's two large products,
// resample counts [B, U] by the centred values [U, M] and by their squares, run through OpenBLAS's
// DGEMM in fixed column blocks on one BLAS thread each, so the maxima are the same bits for any
// thread count.
#include "compare/simultaneous_band.hpp"

#include <Random123/philox.h>
#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <boost/math/distributions/students_t.hpp>
#include <cmath>
#include <functional>
#include <stdexcept>

#include "common/errors.hpp"
#include "common/exact_sums.hpp"

namespace attngeo::compare {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// "boot" in the counter keeps these words apart from any other Philox use of the same seed.
constexpr std::uint32_t kResampleTag = 0x626F6F74u;
// Points per product: [B, 128] doubles per thread (2 MiB at B = 2000).
constexpr int kColumnBlock = 128;

// The smallest t whose one-sided p-value can be at most `family_error`, less a relative margin
// far above the quantile's rounding; −∞ when every t can.
double holm_candidate_floor(const boost::math::students_t_distribution<double>& student,
                            double family_error) {
    if (!(family_error > 0 && family_error < 1)) return -std::numeric_limits<double>::infinity();
    const double t = boost::math::quantile(boost::math::complement(student, family_error));
    return t - 1e-6 * std::max(1.0, std::abs(t));
}

void pin_blas_to_one_thread() {
    static const bool done = [] {
        openblas_set_num_threads(1);
        return true;
    }();
    (void)done;
}

// Draws 2·pair and 2·pair + 1 of replicate b among `units`: ⌊units·x⌋ of a 64-bit word x each.
void draw_pair(std::uint64_t seed, int replicate, int units, int pair, int& even, int& odd) {
    r123::Philox4x32 philox;
    const r123::Philox4x32::key_type key = {
        {static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32)}};
    const r123::Philox4x32::ctr_type counter = {{static_cast<std::uint32_t>(pair),
                                                 static_cast<std::uint32_t>(replicate),
                                                 kResampleTag, static_cast<std::uint32_t>(units)}};
    const r123::Philox4x32::ctr_type w = philox(counter, key);
    const std::uint64_t first = static_cast<std::uint64_t>(w[0]) << 32 | w[1];
    const std::uint64_t second = static_cast<std::uint64_t>(w[2]) << 32 | w[3];
    even = static_cast<int>((static_cast<UInt128>(first) * static_cast<unsigned>(units)) >> 64);
    odd = static_cast<int>((static_cast<UInt128>(second) * static_cast<unsigned>(units)) >> 64);
}

// ⌈(1 − α)·B⌉ within 1..B: the rank from below of the band's quantile among B maxima.
std::size_t quantile_rank(std::size_t B, double family_error) {
    const std::size_t rank = static_cast<std::size_t>(std::ceil((1 - family_error) * B - 1e-9));
    return std::min(B, std::max<std::size_t>(rank, 1));
}

// The ⌈(1 − α)·B⌉-th smallest of `maxima`.
double upper_quantile(std::vector<double> maxima, double family_error) {
    const std::size_t k = quantile_rank(maxima.size(), family_error) - 1;
    std::nth_element(maxima.begin(), maxima.begin() + static_cast<std::ptrdiff_t>(k), maxima.end());
    return maxima[k];
}

void check_range(const UnitValues& values, const PointMoments& moments,
                 const std::vector<char>& tested, const Resamples& draws, int first, int last) {
    const char* fn = "attngeo::compare::bootstrap_critical_values";
    if (first < 0 || last > values.units || last - first < 2)
        throw_domain_error(fn, "unit range outside the values or under 2 units");
    if (draws.units() != last - first) throw_domain_error(fn, "resamples of another unit count");
    if (moments.mean.size() != static_cast<std::size_t>(values.points) ||
        tested.size() != moments.mean.size())
        throw_domain_error(fn, "moments or tested flags differ from the points");
}

// The tested points with a positive standard error, in order.
std::vector<int> tested_columns(const PointMoments& m, const std::vector<char>& tested) {
    std::vector<int> columns;
    for (std::size_t p = 0; p < tested.size(); ++p)
        if (tested[p] && m.se[p] > 0) columns.push_back(static_cast<int>(p));
    return columns;
}

// The block's deviations x_up − m̂_p and their squares, [U_sel, width] row-major each.
void centred_block(const UnitValues& values, const PointMoments& m, const std::vector<int>& columns,
                   std::size_t begin, int width, int first, int last,
                   std::vector<double>& deviations, std::vector<double>& squares) {
    const int units = last - first;
    deviations.resize(static_cast<std::size_t>(units) * width);
    squares.resize(deviations.size());
    // Unit by unit, so each unit's row of values is read in order.
    for (int u = 0; u < units; ++u) {
        const double* row =
            values.values.data() + static_cast<std::size_t>(first + u) * values.points;
        double* out = deviations.data() + static_cast<std::size_t>(u) * width;
        double* out2 = squares.data() + static_cast<std::size_t>(u) * width;
        for (int j = 0; j < width; ++j) {
            const int p = columns[begin + j];
            out[j] = row[p] - m.mean[p];
            out2[j] = out[j] * out[j];
        }
    }
}

// t*·|t*| of one replicate at one point from Σ c·dev and Σ c·dev² (U draws): the resampled
// mean's deviation over its re-studentized standard error, with the sample's pseudo-units
// (distance d), kept squared with its sign — the same order as t*, without a square root per
// point (one per replicate is taken at the end).
double signed_square_t(double sum, double sum_squares, int units, double d) {
    const double shift = sum / units;                                           // m* − m̂
    const double squares = std::max(0.0, sum_squares - units * shift * shift);  // Σ c (x − m*)²
    const double variance = (squares + 2 * d * d) / ((units - 1.0) * units);
    return shift * std::abs(shift) / variance;
}

double from_signed_square(double q) {
    return q < 0 ? -std::sqrt(-q) : std::sqrt(q);
}

}  // namespace

const char* to_string(BandMethod method) {
    switch (method) {
        case BandMethod::bootstrap:
            return "bootstrap-t";
        case BandMethod::holm:
            return "holm";
        case BandMethod::exact:
            return "exact";
        default:
            return "none";
    }
}

BandMethod band_method_for(int units) {
    if (units < 2) return BandMethod::none;
    return units < kBootstrapMinimumUnits ? BandMethod::holm : BandMethod::bootstrap;
}

PointMoments point_moments(const UnitValues& values, int first, int last) {
    if (last < 0) last = values.units;
    if (first < 0 || last > values.units || first > last)
        throw_domain_error("attngeo::compare::point_moments", "unit range outside the values");
    const int units = last - first;
    PointMoments m;
    m.units = units;
    m.mean.assign(values.points, kNaN);
    m.se.assign(values.points, kNaN);
    m.pseudo.assign(values.points, kNaN);
    if (units == 0) return m;
    for (int p = 0; p < values.points; ++p) {
        double sum = 0;
        bool constant = true;  // compared exactly: a sum's rounding must not pass for a spread
        for (int u = first; u < last; ++u) {
            sum += values.at(u, p);
            constant = constant && values.at(u, p) == values.at(first, p);
        }
        const double mean = constant ? values.at(first, p) : sum / units;
        m.mean[p] = mean;
        if (units < 2) continue;
        double squares = 0;
        if (!constant)
            for (int u = first; u < last; ++u) {
                const double deviation = values.at(u, p) - mean;
                squares += deviation * deviation;
            }
        const double d = values.width_at(p);
        m.pseudo[p] = d;
        m.se[p] = std::sqrt((squares + 2 * d * d) / (units - 1.0) / units);
    }
    return m;
}

Resamples::Resamples(std::uint64_t seed, int replicates, int units)
    : replicates_(replicates), units_(units) {
    if (replicates < 1 || units < 0)
        throw_domain_error("attngeo::compare::Resamples", "replicates < 1 or units < 0");
    counts_.assign(static_cast<std::size_t>(replicates) * units, 0.0);
    // Replicates are independent draws: any thread count gives the same counts.
#pragma omp parallel for schedule(static)
    for (int b = 0; b < replicates; ++b) {
        double* row = counts_.data() + static_cast<std::size_t>(b) * units;
        for (int pair = 0; 2 * pair < units; ++pair) {
            int even = 0, odd = 0;
            draw_pair(seed, b, units, pair, even, odd);
            row[even] += 1;
            if (2 * pair + 1 < units) row[odd] += 1;
        }
    }
}

int resampled_unit(std::uint64_t seed, int replicate, int units, int draw) {
    int even = 0, odd = 0;
    draw_pair(seed, replicate, units, draw / 2, even, odd);
    return draw % 2 == 0 ? even : odd;
}

namespace {

// Replicates per pass of the products: the screen looks at the maxima after each pass. Fixed,
// so the bits do not depend on threads or on whether a screen is given.
constexpr int kReplicateChunk = 250;

// The signed squares of max_p t*_bp and max_p −t*_bp (as min) of the replicates
// [begin, begin + rows), over the tested columns in fixed blocks on `thread_count` threads.
void chunk_extremes(const UnitValues& values, const PointMoments& moments,
                    const std::vector<int>& columns, const Resamples& draws, int first, int last,
                    int begin, int rows, int thread_count, double* highest, double* lowest) {
    const int units = last - first;
    const int blocks = static_cast<int>((columns.size() + kColumnBlock - 1) / kColumnBlock);
    const double* counts = draws.counts().data() + static_cast<std::size_t>(begin) * units;
    std::fill(highest, highest + rows, -HUGE_VAL);
    std::fill(lowest, lowest + rows, HUGE_VAL);
#pragma omp parallel num_threads(thread_count)
    {
        std::vector<double> deviations, squares, sums, sum_squares, pseudo, q_row(kColumnBlock);
        std::vector<double> local_high(rows, -HUGE_VAL), local_low(rows, HUGE_VAL);
#pragma omp for schedule(dynamic, 1)
        for (int block = 0; block < blocks; ++block) {
            const std::size_t start = static_cast<std::size_t>(block) * kColumnBlock;
            const int width =
                static_cast<int>(std::min<std::size_t>(kColumnBlock, columns.size() - start));
            centred_block(values, moments, columns, start, width, first, last, deviations, squares);
            pseudo.resize(width);
            for (int j = 0; j < width; ++j)
                pseudo[j] = moments.pseudo[columns[start + j]];
            sums.resize(static_cast<std::size_t>(rows) * width);
            sum_squares.resize(sums.size());
            for (auto [in, out] :
                 {std::pair{&deviations, &sums}, std::pair{&squares, &sum_squares}})
                cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, width, units, 1.0,
                            counts, units, in->data(), width, 0.0, out->data(), width);
            for (int b = 0; b < rows; ++b) {
                const std::size_t row = static_cast<std::size_t>(b) * width;
                // Into a row first, then reduced: the divisions vectorise once no maximum is
                // carried through their loop.
                for (int j = 0; j < width; ++j)
                    q_row[j] =
                        signed_square_t(sums[row + j], sum_squares[row + j], units, pseudo[j]);
                double high = local_high[b], low = local_low[b];
                for (int j = 0; j < width; ++j) {
                    high = std::max(high, q_row[j]);
                    low = std::min(low, q_row[j]);
                }
                local_high[b] = high;
                local_low[b] = low;
            }
        }
        // Maxima are exact whatever the order they are combined in.
#pragma omp critical
        for (int b = 0; b < rows; ++b) {
            highest[b] = std::max(highest[b], local_high[b]);
            lowest[b] = std::min(lowest[b], local_low[b]);
        }
    }
}

// The rank-th largest (1-based) of the first `count` signed squares, as a t value.
double largest_of_first(const std::vector<double>& squares, std::size_t count, std::size_t rank) {
    std::vector<double> head(squares.begin(), squares.begin() + static_cast<std::ptrdiff_t>(count));
    std::nth_element(head.begin(), head.begin() + static_cast<std::ptrdiff_t>(rank - 1), head.end(),
                     std::greater<>());
    return from_signed_square(head[rank - 1]);
}

}  // namespace

UpperCritical bootstrap_upper_critical(const UnitValues& values, const PointMoments& moments,
                                       const std::vector<char>& tested, const Resamples& draws,
                                       int first, int last, double family_error, int threads,
                                       const std::function<bool(double)>& clears) {
    check_range(values, moments, tested, draws, first, last);
    const std::vector<int> columns = tested_columns(moments, tested);
    if (columns.empty()) return {};
    pin_blas_to_one_thread();
    const int B = draws.replicates();
    const int blocks = static_cast<int>((columns.size() + kColumnBlock - 1) / kColumnBlock);
    const int thread_count =
        std::max(1, std::min(threads > 0 ? threads : omp_get_max_threads(), blocks));
    // c is the ⌈(1 − α)B⌉-th smallest maximum, i.e. the (B − that + 1)-th largest: once that
    // many replicates are done, the same rank among them is a lower bound of c.
    const std::size_t rank_from_top = B - quantile_rank(B, family_error) + 1;
    std::vector<double> highest(B), lowest(B);
    for (int begin = 0; begin < B; begin += kReplicateChunk) {
        const int rows = std::min(kReplicateChunk, B - begin);
        chunk_extremes(values, moments, columns, draws, first, last, begin, rows, thread_count,
                       highest.data() + begin, lowest.data() + begin);
        const std::size_t done = static_cast<std::size_t>(begin + rows);
        if (clears && done < static_cast<std::size_t>(B) && done >= rank_from_top) {
            const double floor = largest_of_first(highest, done, rank_from_top);
            if (clears(floor)) return {floor, false};
        }
    }
    UpperCritical out;
    out.exact = true;
    for (int b = 0; b < B; ++b) {
        highest[b] = from_signed_square(highest[b]);
        lowest[b] = -from_signed_square(lowest[b]);
    }
    out.value = upper_quantile(highest, family_error);
    out.lower_side = upper_quantile(lowest, family_error);
    return out;
}

CriticalValues bootstrap_critical_values(const UnitValues& values, const PointMoments& moments,
                                         const std::vector<char>& tested, const Resamples& draws,
                                         int first, int last, double family_error, int threads) {
    const UpperCritical c = bootstrap_upper_critical(values, moments, tested, draws, first, last,
                                                     family_error, threads, nullptr);
    return {c.value, c.lower_side};
}

CriticalValues bootstrap_critical_values_plain(const UnitValues& values,
                                               const PointMoments& moments,
                                               const std::vector<char>& tested,
                                               const Resamples& draws, int first, int last,
                                               double family_error) {
    check_range(values, moments, tested, draws, first, last);
    const std::vector<int> columns = tested_columns(moments, tested);
    if (columns.empty()) return {};
    const int B = draws.replicates(), units = last - first;
    std::vector<double> highest(B), lowest(B);
    for (int b = 0; b < B; ++b) {
        double high = -HUGE_VAL, low = HUGE_VAL;
        for (int p : columns) {
            double sum = 0, sum_squares = 0;
            for (int u = 0; u < units; ++u) {
                const double deviation = values.at(first + u, p) - moments.mean[p];
                sum += draws.at(b, u) * deviation;
                sum_squares += draws.at(b, u) * deviation * deviation;
            }
            // Written out: the resample's mean and sum of squares about it, its standard error.
            const double shift = sum / units;
            const double about = sum_squares - units * shift * shift;
            const double d = moments.pseudo[p];
            const double t =
                shift / std::sqrt((std::max(0.0, about) + 2 * d * d) / (units - 1.0) / units);
            high = std::max(high, t);
            low = std::min(low, t);
        }
        highest[b] = high;
        lowest[b] = -low;
    }
    return {upper_quantile(highest, family_error), upper_quantile(lowest, family_error)};
}

std::vector<char> holm_rejections(const std::vector<double>& t, const std::vector<char>& tested,
                                  int degrees_of_freedom, double family_error) {
    if (tested.size() != t.size())
        throw_domain_error("attngeo::compare::holm_rejections", "one flag per statistic expected");
    if (degrees_of_freedom < 1)
        throw_domain_error("attngeo::compare::holm_rejections", "degrees of freedom < 1");
    const boost::math::students_t_distribution<double> student(degrees_of_freedom);
    // Ordered by t, largest first: the p-values' order, without a p-value per point (each costs
    // an incomplete beta); only the steps the procedure reaches compute theirs. No step rejects a
    // p-value above family_error, so only the points with t at or above t(family_error) (less a
    // margin for the quantile's rounding) are ordered: they are a prefix of the full order, and
    // the first point after them would stop the procedure anyway.
    const double smallest_rejectable = holm_candidate_floor(student, family_error);
    std::vector<std::pair<double, std::size_t>> order;  // (t, point)
    std::size_t m = 0;
    for (std::size_t p = 0; p < t.size(); ++p) {
        if (!tested[p]) continue;
        m += 1;
        if (!std::isnan(t[p]) && t[p] >= smallest_rejectable) order.emplace_back(t[p], p);
    }
    std::stable_sort(order.begin(), order.end(),
                     [](const auto& a, const auto& b) { return a.first > b.first; });
    std::vector<char> rejected(t.size(), 0);
    for (std::size_t i = 0; i < order.size(); ++i) {
        const double statistic = order[i].first;
        const double p_value = std::isinf(statistic)
                                   ? (statistic > 0 ? 0.0 : 1.0)
                                   : boost::math::cdf(boost::math::complement(student, statistic));
        if (p_value > family_error / static_cast<double>(m - i)) break;
        rejected[order[i].second] = 1;
    }
    return rejected;
}

double holm_first_critical(int tested_points, int degrees_of_freedom, double family_error) {
    if (tested_points < 1) return kNaN;
    const boost::math::students_t_distribution<double> student(degrees_of_freedom);
    return boost::math::quantile(boost::math::complement(student, family_error / tested_points));
}

}  // namespace attngeo::compare
