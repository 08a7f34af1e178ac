// A sample whose bounds are the same for every unit (docs/design.md §7): a simulate grid point,
// where α and the norms are fixed and only the trials' directions vary. The band of each
// metric is computed once per set of units (all, each half); every κ then only moves the bound.
#pragma once
#include <array>
#include <functional>
#include <vector>

#include "compare/falsification.hpp"
#include "compare/simultaneous_band.hpp"

namespace attngeo::compare {

// The four bounds of every point at one κ.                                          [M] each
struct PointBounds {
    std::vector<double> P_lower, P_upper, R_lower, R_upper;
    const std::vector<double>& side(int side) const;
};
// Bounds at a batch of κ, in their order (κ ascending).
using BoundEvaluator = std::function<std::vector<PointBounds>(const std::vector<double>& kappas)>;

struct BandSettings {
    int replicates = kBandReplicates;  // B
    std::uint64_t seed = 1;            // the resamples' Philox key
    int threads = 1;                   // OpenMP threads of the bootstrap's products
};

// The band of one metric over one set of units.
struct MetricBand {
    PointMoments moments;
    CriticalValues critical;
};
struct SetBands {
    BandMethod method = BandMethod::none;
    int units = 0;
    MetricBand P, R;
};

// The bands of per-unit values P and R ([U, M] each: P(r_max,N) and R(r_min,N) of every trial at
// every point) over all units and each half; only points with tested[p] enter a bootstrap.
std::array<SetBands, kUnitSets> unit_bands(const UnitValues& P, const UnitValues& R,
                                           const std::vector<char>& tested,
                                           const BandSettings& settings);
// Values known without sampling error (d = ∞): every set is the exact method on these means.
std::array<SetBands, kUnitSets> exact_bands(const std::vector<double>& P,
                                            const std::vector<double>& R);

// The tests of `bands` against bounds at one κ (excess and standard error per point).
KappaTests fixed_bound_tests(const std::array<SetBands, kUnitSets>& bands, double kappa,
                             const PointBounds& bounds);

// A scan sample: these bands, these points, bounds from `evaluate`. The halves are judged when
// each has at least 2 units.
Sample fixed_bound_sample(ScanPoints points, std::array<SetBands, kUnitSets> bands,
                          BoundEvaluator evaluate);

// The width of P(r_max,N)'s range [N/n, 1] at each N of `sizes`: the UnitValues::width of P.
std::vector<double> metric_widths(const std::vector<int>& sizes, int tokens);

// The tested points of a scan: neither convention nor identity points.
std::vector<char> tested_points(const std::vector<PointFacts>& facts);

}  // namespace attngeo::compare
