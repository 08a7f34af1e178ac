// Samples with one bound for every unit; see fixed_bound_sample.hpp.
#include "compare/fixed_bound_sample.hpp"

#include <cmath>
#include <limits>
#include <memory>

#include "common/errors.hpp"

namespace attngeo::compare {
namespace {

MetricBand metric_band(const UnitValues& values, const std::vector<char>& tested,
                       const Resamples* draws, int first, int last, BandMethod method,
                       int threads) {
    MetricBand band;
    band.moments = point_moments(values, first, last);
    if (method == BandMethod::bootstrap)
        band.critical = bootstrap_critical_values(values, band.moments, tested, *draws, first, last,
                                                  kFamilyError, threads);
    return band;
}

SideTest side_test(const MetricBand& band, BandMethod method, bool upper,
                   const std::vector<double>& bound) {
    SideTest t;
    t.bound = bound;
    const std::size_t M = bound.size();
    t.excess.resize(M);
    t.se.resize(M);
    for (std::size_t p = 0; p < M; ++p) {
        const double mean = band.moments.mean[p];
        t.excess[p] = upper ? mean - bound[p] : bound[p] - mean;
        t.se[p] = method == BandMethod::exact ? 0.0 : band.moments.se[p];
    }
    if (method == BandMethod::bootstrap) {
        t.critical = upper ? band.critical.upper_side : band.critical.lower_side;
        t.rule = CriticalRule::computed;
    }
    return t;
}

}  // namespace

const std::vector<double>& PointBounds::side(int side) const {
    switch (side) {
        case 0:
            return P_lower;
        case 1:
            return P_upper;
        case 2:
            return R_lower;
        default:
            return R_upper;
    }
}

std::vector<double> metric_widths(const std::vector<int>& sizes, int tokens) {
    std::vector<double> widths;
    for (int N : sizes)
        widths.push_back(1 - static_cast<double>(N) / tokens);
    return widths;
}

std::vector<char> tested_points(const std::vector<PointFacts>& facts) {
    std::vector<char> tested;
    for (const PointFacts& f : facts)
        tested.push_back(!f.convention && !f.identity());
    return tested;
}

std::array<SetBands, kUnitSets> unit_bands(const UnitValues& P, const UnitValues& R,
                                           const std::vector<char>& tested,
                                           const BandSettings& settings) {
    if (P.units != R.units || P.points != R.points ||
        tested.size() != static_cast<std::size_t>(P.points))
        throw_domain_error("attngeo::compare::unit_bands", "P, R and tested differ in shape");
    const auto ranges = unit_set_ranges(P.units);
    std::array<SetBands, kUnitSets> bands;
    for (int s = 0; s < kUnitSets; ++s) {
        const auto [first, last] = ranges[s];
        SetBands& b = bands[s];
        b.units = last - first;
        b.method = band_method_for(b.units);
        // Each set resamples its own units (the same draws for P and R: one bootstrap world).
        std::unique_ptr<Resamples> draws;
        if (b.method == BandMethod::bootstrap)
            draws = std::make_unique<Resamples>(settings.seed, settings.replicates, b.units);
        b.P = metric_band(P, tested, draws.get(), first, last, b.method, settings.threads);
        b.R = metric_band(R, tested, draws.get(), first, last, b.method, settings.threads);
    }
    return bands;
}

std::array<SetBands, kUnitSets> exact_bands(const std::vector<double>& P,
                                            const std::vector<double>& R) {
    std::array<SetBands, kUnitSets> bands;
    for (SetBands& b : bands) {
        b.method = BandMethod::exact;
        b.units = 0;
        b.P.moments.mean = P;
        b.R.moments.mean = R;
        b.P.moments.se.assign(P.size(), 0.0);
        b.R.moments.se.assign(R.size(), 0.0);
    }
    return bands;
}

KappaTests fixed_bound_tests(const std::array<SetBands, kUnitSets>& bands, double kappa,
                             const PointBounds& bounds) {
    KappaTests tests;
    tests.kappa = kappa;
    for (int s = 0; s < kUnitSets; ++s) {
        const SetBands& b = bands[s];
        SetTests& out = tests.sets[s];
        out.method = b.method;
        out.units = b.units;
        for (int side = 0; side < kSideCount; ++side) {
            const MetricBand& band = side_metric(side) == ScanMetric::P ? b.P : b.R;
            out.sides[side] =
                side_test(band, b.method, side_kind(side) == ScanSide::upper, bounds.side(side));
        }
    }
    return tests;
}

Sample fixed_bound_sample(ScanPoints points, std::array<SetBands, kUnitSets> bands,
                          BoundEvaluator evaluate) {
    Sample sample;
    sample.points = std::move(points);
    sample.split = bands[first_half].units >= 2 && bands[second_half].units >= 2 &&
                   bands[all_units].method != BandMethod::exact;
    auto shared = std::make_shared<std::array<SetBands, kUnitSets>>(std::move(bands));
    sample.evaluate = [shared, evaluate](const std::vector<double>& kappas, unsigned) {
        const std::vector<PointBounds> bounds = evaluate(kappas);
        if (bounds.size() != kappas.size())
            throw_domain_error("attngeo::compare::fixed_bound_sample",
                               "the bound evaluator returned the wrong number of κ");
        std::vector<KappaTests> out;
        out.reserve(kappas.size());
        for (std::size_t k = 0; k < kappas.size(); ++k)
            out.push_back(fixed_bound_tests(*shared, kappas[k], bounds[k]));
        return out;
    };
    return sample;
}

}  // namespace attngeo::compare
