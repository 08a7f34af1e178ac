// The theorems' envelopes judged against Monte Carlo estimates (docs/design.md §5, §7): per grid
// point the per-trial P and R (or the exact values at d = ∞), their simultaneous bands, and per
// variant the κ scan of verdict III over every grid point in lockstep (their joint κ set), with
// the bound rows at each point's rows κ.
#pragma once
#include <optional>
#include <vector>

#include "compare/falsification.hpp"
#include "compare/fixed_bound_sample.hpp"
#include "theory/bounds.hpp"

namespace attngeo::compare {

// What is measured at one grid point: per trial P(r_max,N) and R(r_min,N) at every N ([T, S]),
// or, at d = ∞, the exact values ([S]).
struct MeasuredPoint {
    bool exact = false;
    UnitValues P, R;                       // [T, S] when not exact
    std::vector<double> P_exact, R_exact;  // [S] when exact
};

// One grid point to judge.
struct PointInputs {
    theory::HeadModel head;
    std::vector<int> sizes;  // [S] ascending
    theory::Ranking ranking = theory::Ranking::attention;
    double d = 128;            // may be +inf
    std::vector<int> regimes;  // [S] Table-2 regime 1..5, or empty
    MeasuredPoint measured;
};

// One variant over every grid point.
struct VariantEnvelope {
    theory::BoundVariant variant = theory::BoundVariant::paper;
    std::vector<KappaScan> scans;  // [points] each point's verdict
    JointScan joint;               // the intersection over the points (more than one point)
    // [points][S] the bound rows: at the point's rows κ, or (no κ consistent on all four
    // sides) each side's bound at its own judged κ with Δ, Δ0, B and the flags of any κ.
    std::vector<std::vector<theory::BoundRow>> rows;
    // [points][S] each side's bound at the joint κ_edge of that side (sweeps; NaN where the
    // joint set is empty).
    std::vector<std::array<std::vector<double>, kSideCount>> joint_bounds;
    std::vector<std::string> rows_rule;  // [points] docs: verdict_tables' rows_rule
};

// What each N of `sizes` is for one head: n = |α|, and a convention point at N = n or at N = 1
// when the sink ranks first (ties go to the lower index, so to the sink).
std::vector<PointFacts> point_facts(const theory::HeadModel& head, const std::vector<int>& sizes,
                                    theory::Ranking ranking);

// Judges every variant at every point: the bands once per point, then per variant one lockstep
// scan (given κ or not). `threads` parallelises the bands' products and the variants.
std::vector<VariantEnvelope> judge_envelopes(const std::vector<PointInputs>& points,
                                             std::optional<double> kappa, const BandSettings& band);

}  // namespace attngeo::compare
