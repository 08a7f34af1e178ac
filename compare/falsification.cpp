// The κ scan by test inversion; see falsification.hpp. Each evaluated κ is reduced to one row per
// (sample, set of units, side) as soon as its tests arrive, so memory is O(points) times a
// bounded batch of κ, whatever the grid.
#include "compare/falsification.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include "common/errors.hpp"

namespace attngeo::compare {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
// Fine steps per coarse step, and per the half-width of the window around an edge.
constexpr int kFinePerCoarse = 20, kWindowHalfWidth = 10;
// Rounds of bisection between neighbouring κ whose consistency differs (2^5 > kFinePerCoarse).
constexpr int kBisectionRounds = 6;
const int kLastIndex = static_cast<int>(std::lround((kScanLogMax - kScanLogMin) / kScanFineStep));
// Bytes of tests kept per evaluator call (three sets, four sides, three vectors per point). The
// more κ per call, the more of them each size's bound terms serve while in cache: 64 MiB (3 κ a
// call at 65,536 points) took compare's bench 65 s, 256 MiB (14 κ) 58 s, 512 MiB 60 s.
constexpr std::size_t kBatchBytes = std::size_t{256} << 20;

double kappa_at(int index) {
    return std::pow(10.0, kScanLogMin + index * kScanFineStep);
}

bool is_upper(int side) {
    return side_kind(side) == ScanSide::upper;
}
// The other side of the same metric (for the envelope's width).
int partner(int side) {
    return side ^ 1;
}

// The deterministic range of a point's metric: N/n ≤ P ≤ 1, 0 ≤ R ≤ 1.
double limit_low(const PointFacts& f, int side) {
    return side_metric(side) == ScanMetric::P ? static_cast<double>(f.N) / f.n : 0.0;
}

// Whether the bound at point p contradicts what every geometry guarantees.
bool contradicts(const PointFacts& f, int side, double bound) {
    if (!is_upper(side)) return bound > 1 + kScanSlack;
    if (f.identity() && bound < 1 - kScanSlack) return true;
    return bound < limit_low(f, side) - kScanSlack;
}

// One side's reduction at one κ, one set of units.
struct Reduced {
    ScanRow row;
    JudgedSide judged;
};

Reduced reduce(const ScanPoints& points, const SetTests& set, int side, double kappa) {
    Reduced out;
    out.judged = judge_side(points, set, side);
    ScanRow& row = out.row;
    row.kappa = kappa;
    row.critical = out.judged.critical;
    row.rule = out.judged.rule;
    const SideTest& test = set.sides[side];
    const SideTest& other = set.sides[partner(side)];
    double gaps = 0, widths = 0;
    int counted = 0;
    for (std::size_t p = 0; p < points.facts.size(); ++p) {
        if (points.facts[p].convention) continue;
        counted += 1;
        row.falsified_points += out.judged.falsified[p];
        row.contradicted_points += out.judged.contradicted[p];
        gaps -= test.excess[p];
        const double upper = is_upper(side) ? test.bound[p] : other.bound[p];
        const double lower = is_upper(side) ? other.bound[p] : test.bound[p];
        widths += upper - lower;
        const double z = out.judged.z[p];
        if (!std::isnan(z) && (std::isnan(row.max_z) || z > row.max_z)) {
            row.max_z = z;
            row.worst_point = static_cast<int>(p);
            row.worst_N = points.facts[p].N;
        }
    }
    row.mean_gap = counted > 0 ? gaps / counted : kNaN;
    row.mean_width = counted > 0 ? widths / counted : kNaN;
    return out;
}

// What the scan keeps of one (set, side) over the κ evaluated.
struct SideTrack {
    std::map<double, ScanRow> rows;      // by κ
    std::vector<char> always_falsified;  // [M] falsified at every κ so far
};

struct SampleTrack {
    std::array<std::array<SideTrack, kSideCount>, kUnitSets> sets;
    std::array<std::vector<double>, kSideCount> lowest, highest;  // [M] all units' bounds
    BandMethod method = BandMethod::none;  // of all units, as the evaluator reports it
    int units = 0;
};

void track(const ScanPoints& points, const KappaTests& tests, SampleTrack& t) {
    const std::size_t M = points.facts.size();
    t.method = tests.sets[all_units].method;
    t.units = tests.sets[all_units].units;
    for (int s = 0; s < kUnitSets; ++s)
        for (int side = 0; side < kSideCount; ++side) {
            const SetTests& set = tests.sets[s];
            if (set.sides[side].bound.size() != M)
                throw_domain_error("attngeo::compare::scan_kappa",
                                   "a test's bounds differ from the points in length");
            Reduced r = reduce(points, set, side, tests.kappa);
            SideTrack& st = t.sets[s][side];
            if (st.rows.empty()) st.always_falsified = r.judged.falsified;
            for (std::size_t p = 0; p < M; ++p)
                st.always_falsified[p] = st.always_falsified[p] && r.judged.falsified[p];
            st.rows[tests.kappa] = r.row;
        }
    for (int side = 0; side < kSideCount; ++side) {
        const std::vector<double>& b = tests.sets[all_units].sides[side].bound;
        if (t.lowest[side].empty()) t.lowest[side] = t.highest[side] = b;
        for (std::size_t p = 0; p < M; ++p) {
            t.lowest[side][p] = std::min(t.lowest[side][p], b[p]);
            t.highest[side][p] = std::max(t.highest[side][p], b[p]);
        }
    }
}

// The scan's bookkeeping: which κ are evaluated (grid indices and the given κ) for which
// samples. Every sample sees the coarse grid, its own refinements and the joint ones; a sample
// is not evaluated at another sample's edges (a sweep of G points would cost G² otherwise).
class Scanner {
  public:
    Scanner(const std::vector<Sample>& samples) : samples_(samples), tracks_(samples.size()) {
        std::size_t M = 1;
        for (const Sample& s : samples)
            M = std::max(M, s.points.facts.size());
        batch_ = std::max<std::size_t>(1, kBatchBytes / (36 * sizeof(double) * M));
    }
    // The grid κ of `indices` on sample `only` (every sample when `only` is −1).
    void evaluate_indices(const std::vector<int>& indices, int only = -1) {
        std::vector<double> kappas;
        for (int index : std::set<int>(indices.begin(), indices.end()))
            if (index >= 0 && index <= kLastIndex) {
                index_of_[kappa_at(index)] = index;
                kappas.push_back(kappa_at(index));
            }
        evaluate(kappas, only);
    }
    void evaluate_kappa(double kappa) { evaluate({kappa}, -1); }
    const SampleTrack& track_of(std::size_t sample) const { return tracks_[sample]; }
    // The grid index of an evaluated κ; −1 for the given κ.
    int index_of(double kappa) const {
        const auto it = index_of_.find(kappa);
        return it == index_of_.end() ? -1 : it->second;
    }

  private:
    void evaluate(const std::vector<double>& kappas, int only) {
        for (std::size_t s = 0; s < samples_.size(); ++s) {
            if (only >= 0 && s != static_cast<std::size_t>(only)) continue;
            std::vector<double> missing;
            for (double kappa : kappas)
                if (!tracks_[s].sets[0][0].rows.count(kappa)) missing.push_back(kappa);
            evaluate_sample(s, missing);
        }
    }
    void evaluate_sample(std::size_t s, const std::vector<double>& kappas) {
        for (std::size_t begin = 0; begin < kappas.size(); begin += batch_) {
            const std::vector<double> part(
                kappas.begin() + begin, kappas.begin() + std::min(kappas.size(), begin + batch_));
            const std::vector<KappaTests> tests = samples_[s].evaluate(part, 0u);
            if (tests.size() != part.size())
                throw_domain_error("attngeo::compare::scan_kappa",
                                   "an evaluator returned the wrong number of κ");
            for (const KappaTests& t : tests)
                track(samples_[s].points, t, tracks_[s]);
        }
    }
    const std::vector<Sample>& samples_;
    std::vector<SampleTrack> tracks_;
    std::map<double, int> index_of_;
    std::size_t batch_ = 1;
};

// Grid rows only (the given κ, off the grid, is judged apart), ascending.
std::vector<ScanRow> grid_rows(const SideTrack& t, const Scanner& scanner) {
    std::vector<ScanRow> rows;
    for (const auto& [kappa, row] : t.rows)
        if (scanner.index_of(kappa) >= 0) rows.push_back(row);
    return rows;
}

// The row of smallest mean gap among those `pick` accepts (ties to the smaller κ); null if none.
template <class Pick>
const ScanRow* tightest(const std::vector<ScanRow>& rows, const Pick& pick) {
    const ScanRow* best = nullptr;
    for (const ScanRow& r : rows)
        if (pick(r) && (!best || r.mean_gap < best->mean_gap)) best = &r;
    return best;
}

// The row with the fewest falsified and contradicted points, then the smallest max z.
const ScanRow* closest(const std::vector<ScanRow>& rows) {
    const ScanRow* best = nullptr;
    auto key = [](const ScanRow& r) {
        return std::make_pair(r.falsified_points + r.contradicted_points,
                              std::isnan(r.max_z) ? -HUGE_VAL : r.max_z);
    };
    for (const ScanRow& r : rows)
        if (!best || key(r) < key(*best)) best = &r;
    return best;
}

std::vector<KappaInterval> consistent_runs(const std::vector<ScanRow>& rows,
                                           const std::vector<char>& consistent) {
    std::vector<KappaInterval> out;
    for (std::size_t i = 0; i < rows.size();) {
        if (!consistent[i]) {
            ++i;
            continue;
        }
        std::size_t j = i;
        while (j + 1 < rows.size() && consistent[j + 1])
            ++j;
        out.push_back({rows[i].kappa, rows[j].kappa, i == 0, j + 1 == rows.size()});
        i = j + 1;
    }
    return out;
}

std::vector<char> consistency(const std::vector<ScanRow>& rows) {
    std::vector<char> out;
    for (const ScanRow& r : rows)
        out.push_back(r.consistent());
    return out;
}

// ---- Refinement: fine steps around every answer that depends on κ.

void add_window(std::vector<int>& out, int centre) {
    if (centre < 0) return;
    for (int i = std::max(0, centre - kWindowHalfWidth);
         i <= std::min(kLastIndex, centre + kWindowHalfWidth); ++i)
        out.push_back(i);
}

// Where a side's consistency changes between neighbouring evaluated κ more than one fine step
// apart, the fine κ halfway between them.
void bisect_side(const SideTrack& t, const Scanner& scanner, std::vector<int>& out) {
    const std::vector<ScanRow> rows = grid_rows(t, scanner);
    for (std::size_t i = 0; i + 1 < rows.size(); ++i) {
        if (rows[i].consistent() == rows[i + 1].consistent()) continue;
        const int low = scanner.index_of(rows[i].kappa), high = scanner.index_of(rows[i + 1].kappa);
        if (high - low > 1) out.push_back((low + high) / 2);
    }
}

// Around a side's κ_edge (or, with no consistent κ, the closest κ) when it is not next to a
// boundary of its set: the fine window there.
void refine_edge(const SideTrack& t, const Scanner& scanner, std::vector<int>& out) {
    const std::vector<ScanRow> rows = grid_rows(t, scanner);
    const ScanRow* edge = tightest(rows, [](const ScanRow& r) { return r.consistent(); });
    if (!edge) edge = closest(rows);
    if (!edge) return;
    const std::size_t at = static_cast<std::size_t>(edge - rows.data());
    const bool boundary = (at > 0 && rows[at - 1].consistent() != edge->consistent()) ||
                          (at + 1 < rows.size() && rows[at + 1].consistent() != edge->consistent());
    if (!boundary) add_window(out, scanner.index_of(edge->kappa));
}

// The grid κ every track of `tracks` has evaluated, ascending.
std::vector<double> shared_grid(const std::vector<const SampleTrack*>& tracks,
                                const Scanner& scanner) {
    std::vector<double> kappas;
    for (const auto& [kappa, row] : tracks.front()->sets[all_units][0].rows) {
        bool everywhere = scanner.index_of(kappa) >= 0;
        for (const SampleTrack* t : tracks)
            everywhere = everywhere && t->sets[all_units][0].rows.count(kappa);
        if (everywhere) kappas.push_back(kappa);
    }
    return kappas;
}

// Whether κ is consistent on every side of `sides` in every track.
bool consistent_everywhere(const std::vector<const SampleTrack*>& tracks,
                           const std::vector<int>& sides, double kappa) {
    for (const SampleTrack* t : tracks)
        for (int side : sides)
            if (!t->sets[all_units][side].rows.at(kappa).consistent()) return false;
    return true;
}

// The shared grid κ consistent on every side (and every sample given) with the smallest mean gap.
double common_edge(const std::vector<const SampleTrack*>& tracks, const Scanner& scanner,
                   const std::vector<int>& sides) {
    double best_kappa = kNaN, best_gap = HUGE_VAL;
    for (double kappa : shared_grid(tracks, scanner)) {
        if (!consistent_everywhere(tracks, sides, kappa)) continue;
        double gaps = 0;
        for (const SampleTrack* t : tracks)
            for (int side : sides)
                gaps += t->sets[all_units][side].rows.at(kappa).mean_gap;
        if (gaps < best_gap) best_gap = gaps, best_kappa = kappa;
    }
    return best_kappa;
}

// Where the joint consistency of one side changes between neighbouring shared κ more than one
// fine step apart, the fine κ halfway between them.
void bisect_joint(const std::vector<const SampleTrack*>& tracks, const Scanner& scanner, int side,
                  std::vector<int>& out) {
    const std::vector<double> kappas = shared_grid(tracks, scanner);
    for (std::size_t i = 0; i + 1 < kappas.size(); ++i) {
        if (consistent_everywhere(tracks, {side}, kappas[i]) ==
            consistent_everywhere(tracks, {side}, kappas[i + 1]))
            continue;
        const int low = scanner.index_of(kappas[i]), high = scanner.index_of(kappas[i + 1]);
        if (high - low > 1) out.push_back((low + high) / 2);
    }
}

// Refines each sample's coarse scan on that sample alone: bisection of every boundary of every
// side's set (all units) down to one fine step, then the fine window around each interior
// κ_edge and around the bound rows' κ. The halves are judged on the κ the whole sample needs
// (their κ_edge is a diagnostic; replication asks whether their sets meet).
void refine_sample(std::size_t s, Scanner& scanner) {
    for (int round = 0; round < kBisectionRounds; ++round) {
        std::vector<int> midpoints;
        for (int side = 0; side < kSideCount; ++side)
            bisect_side(scanner.track_of(s).sets[all_units][side], scanner, midpoints);
        if (midpoints.empty()) break;
        scanner.evaluate_indices(midpoints, static_cast<int>(s));
    }
    std::vector<int> indices;
    const SampleTrack& t = scanner.track_of(s);
    for (int side = 0; side < kSideCount; ++side)
        refine_edge(t.sets[all_units][side], scanner, indices);
    const double rows = common_edge({&t}, scanner, {0, 1, 2, 3});
    if (!std::isnan(rows)) add_window(indices, scanner.index_of(rows));
    scanner.evaluate_indices(indices, static_cast<int>(s));
}

// The joint set of several samples, on the κ they all share: bisection of its boundaries on
// every sample, then the window around each side's joint κ_edge.
void refine_joint(std::size_t sample_count, Scanner& scanner) {
    std::vector<const SampleTrack*> all;
    for (std::size_t s = 0; s < sample_count; ++s)
        all.push_back(&scanner.track_of(s));
    for (int round = 0; round < kBisectionRounds; ++round) {
        std::vector<int> midpoints;
        for (int side = 0; side < kSideCount; ++side)
            bisect_joint(all, scanner, side, midpoints);
        if (midpoints.empty()) break;
        scanner.evaluate_indices(midpoints);
    }
    std::vector<int> indices;
    for (int side = 0; side < kSideCount; ++side) {
        const double edge = common_edge(all, scanner, {side});
        if (!std::isnan(edge)) add_window(indices, scanner.index_of(edge));
    }
    scanner.evaluate_indices(indices);
}

void refine(const std::vector<Sample>& samples, Scanner& scanner) {
    for (std::size_t s = 0; s < samples.size(); ++s)
        refine_sample(s, scanner);
    if (samples.size() > 1) refine_joint(samples.size(), scanner);
}

// ---- The verdict of one side from its rows.

struct SideFacts {
    int points = 0, convention = 0, identity = 0;
};
SideFacts count_points(const ScanPoints& points) {
    SideFacts f;
    for (const PointFacts& p : points.facts) {
        f.convention += p.convention;
        f.points += !p.convention;
        f.identity += p.identity();
    }
    return f;
}

void describe_kappa_dependence(const ScanPoints& points, const SampleTrack& t, int side,
                               SideVerdict& v) {
    for (std::size_t p = 0; p < points.facts.size(); ++p) {
        if (points.facts[p].convention) continue;
        const double move = t.highest[side][p] - t.lowest[side][p];
        v.largest_move = std::max(v.largest_move, move);
        v.points_moving += move > kKappaFreeTolerance;
    }
    v.kappa_free = v.points_moving == 0;
    v.nearly_kappa_free = !v.kappa_free && v.largest_move <= kNearlyKappaFreeMove;
}

// State, κ set, κ_edge and the judged κ of one side over all units.
void decide(const SideTrack& t, const Scanner& scanner, std::optional<double> given,
            double rows_kappa, SideVerdict& v) {
    const std::vector<ScanRow> rows = grid_rows(t, scanner);
    v.scan = rows;
    v.kappa_set = consistent_runs(rows, consistency(rows));
    std::vector<char> contradicted;
    for (const ScanRow& r : rows) {
        contradicted.push_back(r.contradicted_points > 0);
        v.contradicted_most = std::max(v.contradicted_most, r.contradicted_points);
    }
    v.contradiction_set = consistent_runs(rows, contradicted);
    const ScanRow* edge = tightest(rows, [](const ScanRow& r) { return r.consistent(); });
    if (edge && !v.kappa_free) v.kappa_edge = edge->kappa, v.gap_at_edge = edge->mean_gap;
    if (edge && v.kappa_free) v.gap_at_edge = edge->mean_gap;
    const bool contradicted_everywhere = std::all_of(
        rows.begin(), rows.end(), [](const ScanRow& r) { return r.contradicted_points > 0; });
    const bool data_empty = std::none_of(rows.begin(), rows.end(),
                                         [](const ScanRow& r) { return r.falsified_points == 0; });
    if (given) {
        v.kappa_given = true;
        v.kappa_judged = *given;
        v.at_judged = t.rows.at(*given);
        if (v.at_judged.contradicted_points > 0)
            v.state = SideState::contradicted_by_construction;
        else if (v.at_judged.falsified_points > 0)
            v.state = SideState::falsified_at_given_kappa;
        else
            v.state = v.band_method == BandMethod::none ? SideState::untestable : SideState::holds;
        return;
    }
    if (edge)
        v.kappa_judged = v.kappa_free && !std::isnan(rows_kappa) ? rows_kappa : edge->kappa;
    else
        v.kappa_judged = closest(rows)->kappa;
    v.at_judged = t.rows.at(v.kappa_judged);
    if (contradicted_everywhere || (!edge && !data_empty))
        v.state = SideState::contradicted_by_construction;
    else if (data_empty)
        v.state = v.kappa_free ? SideState::kappa_free_falsified : SideState::falsified_every_kappa;
    else if (v.band_method == BandMethod::none)
        v.state = SideState::untestable;
    else
        v.state = SideState::holds;  // holds_uninformative once the points are judged
}

// The split: each half scanned alone. The verdict replicates when both halves reach the same
// class (a consistent κ exists, or none) and, when both have one, their κ sets meet. The first
// half's κ_edge judged on the second half is reported beside it: a tight side's edge is where
// the first half's band touches the bound, so the second half falsifies it about half the time
// even when the bound holds; only a large negative gap there says the first half overfits.
void replicate(const SampleTrack& t, const Scanner& scanner, int side, SideVerdict& v) {
    const std::vector<ScanRow> first = grid_rows(t.sets[first_half][side], scanner);
    const std::vector<ScanRow> second = grid_rows(t.sets[second_half][side], scanner);
    v.split = true;
    bool overlap = false, second_consistent = false;
    for (std::size_t i = 0; i < second.size(); ++i) {
        second_consistent = second_consistent || second[i].consistent();
        overlap = overlap || (second[i].consistent() && first.at(i).consistent());
    }
    const ScanRow* edge = tightest(first, [](const ScanRow& r) { return r.consistent(); });
    v.first_half_empty = !edge;
    if (edge) {
        v.kappa_edge_first_half = edge->kappa;
        const ScanRow& there = t.sets[second_half][side].rows.at(edge->kappa);
        v.falsified_on_second_half = !there.consistent();
        v.gap_on_second_half = there.mean_gap;
    }
    v.replicates = edge ? int(overlap) : int(!second_consistent);
}

bool n_only(int side, const theory::MarginFlags& m, double bound) {
    if (!is_upper(side)) return m.lower_n_only();
    if (side_metric(side) == ScanMetric::P) return m.xi_le0;
    return m.xi_le0 && bound == 0.5;
}

bool beyond_limit(const PointFacts& f, int side, double bound) {
    if (is_upper(side)) return bound <= 1 - kInformativeMargin;
    return bound >= limit_low(f, side) + kInformativeMargin;
}

// Per point at the side's judged κ: bound, z, falsified, contradicted and informative; the
// side's informative counts, worst point and gaps by regime.
void judge_points(const ScanPoints& points, const SetTests& set, int side, SideVerdict& v,
                  PointJudgement& j) {
    const JudgedSide judged = judge_side(points, set, side);
    const SideTest& test = set.sides[side];
    const std::size_t M = points.facts.size();
    // The scan's row may have been judged with a screened or capped critical value; at the
    // judged κ the evaluator computed it, so the counts there are exact.
    v.at_judged.critical = judged.critical;
    v.at_judged.rule = judged.rule;
    v.at_judged.falsified_points = v.at_judged.contradicted_points = 0;
    for (std::size_t p = 0; p < M; ++p) {
        v.at_judged.falsified_points += judged.falsified[p];
        v.at_judged.contradicted_points += judged.contradicted[p];
    }
    j.bound[side] = test.bound;
    j.z[side] = judged.z;
    j.falsified[side] = judged.falsified;
    j.contradicted[side] = judged.contradicted;
    j.informative[side].assign(M, 0);
    std::array<double, kRegimeCount> gaps{};
    for (std::size_t p = 0; p < M; ++p) {
        const PointFacts& f = points.facts[p];
        if (f.convention) continue;
        const int regime = points.regime.empty() ? 0 : points.regime[p];
        if (regime > 0) {
            gaps[regime - 1] -= test.excess[p];
            v.points_by_regime[regime - 1] += 1;
        }
        if (f.identity()) continue;
        const bool beyond = beyond_limit(f, side, test.bound[p]);
        const bool formula_of_N =
            !points.margins.empty() && n_only(side, points.margins[p], test.bound[p]);
        v.at_limit_points += !beyond;
        v.n_only_points += formula_of_N;
        j.informative[side][p] =
            beyond && !formula_of_N && !judged.falsified[p] && !judged.contradicted[p];
        v.informative_points += j.informative[side][p];
        if (j.informative[side][p]) v.informative_sizes.push_back(f.N);
        if (!std::isnan(judged.z[p]) && (v.worst.point < 0 || judged.z[p] > v.worst.z)) {
            v.worst.point = static_cast<int>(p);
            v.worst.z = judged.z[p];
            v.worst.excess = test.excess[p];
        }
    }
    if (v.worst.point >= 0) {
        v.worst.N = points.facts[v.worst.point].N;
        if (!points.layer.empty()) {
            v.worst.layer = points.layer[v.worst.point];
            v.worst.head = points.head[v.worst.point];
        }
    }
    for (int r = 0; r < kRegimeCount; ++r)
        v.gap_by_regime[r] = v.points_by_regime[r] > 0 ? gaps[r] / v.points_by_regime[r] : kNaN;
    v.informative_fraction =
        v.points > 0 ? static_cast<double>(v.informative_points) / v.points : 0;
    v.informative = v.points > 0 && v.informative_fraction >= kInformativeShare;
    if (v.state == SideState::holds && !v.informative) v.state = SideState::holds_uninformative;
}

// Share of [limit_lo, 1] each metric's envelope rules out, at the sides' shown bounds.
void information_share(const ScanPoints& points, const PointJudgement& j, KappaScan& scan) {
    double sums[2] = {0, 0};
    int counts[2] = {0, 0};
    for (std::size_t p = 0; p < points.facts.size(); ++p) {
        const PointFacts& f = points.facts[p];
        if (f.convention || f.identity()) continue;
        for (int metric = 0; metric < 2; ++metric) {
            const int lower_side = 2 * metric, upper_side = lower_side + 1;
            const double low_limit = limit_low(f, lower_side), range = 1 - low_limit;
            if (!(range > 0)) continue;
            const double low = std::max(j.bound[lower_side][p], low_limit);
            const double high = std::min(j.bound[upper_side][p], 1.0);
            sums[metric] += 1 - std::max(0.0, high - low) / range;
            counts[metric] += 1;
        }
    }
    scan.information_share_P = counts[0] > 0 ? sums[0] / counts[0] : kNaN;
    scan.information_share_R = counts[1] > 0 ? sums[1] / counts[1] : kNaN;
    const int both = counts[0] + counts[1];
    scan.information_share = both > 0 ? (sums[0] + sums[1]) / both : kNaN;
}

// Of the non-convention points, the share where the side is trivial or its metric's envelope
// inverted, at the shown bounds.
double degenerate_fraction(const ScanPoints& points, const PointJudgement& j, int side) {
    int counted = 0, degenerate = 0;
    for (std::size_t p = 0; p < points.facts.size(); ++p) {
        if (points.facts[p].convention) continue;
        counted += 1;
        const theory::EnvelopeFlags f =
            theory::envelope_flags(j.bound[0][p], j.bound[1][p], j.bound[2][p], j.bound[3][p]);
        const bool P = side_metric(side) == ScanMetric::P;
        const bool inverted = P ? f.P_inverted : f.R_inverted;
        const bool trivial = side_kind(side) == ScanSide::lower
                                 ? (P ? f.P_trivial_lower : f.R_trivial_lower)
                                 : (P ? f.P_trivial_upper : f.R_trivial_upper);
        degenerate += inverted || trivial;
    }
    return counted > 0 ? static_cast<double>(degenerate) / counted : kNaN;
}

HypothesisCounts count_hypotheses(const ScanPoints& points) {
    HypothesisCounts h;
    for (std::size_t p = 0; p < points.margins.size(); ++p) {
        if (points.facts[p].convention) continue;
        const theory::MarginFlags& m = points.margins[p];
        h.points += 1;
        h.delta_positive += !m.delta_le0;
        h.sink_points += m.sink_selected;
        h.delta0_positive += m.sink_selected && !m.delta0_le0;
    }
    return h;
}

void validate(const std::vector<Sample>& samples, std::optional<double> given) {
    const char* fn = "attngeo::compare::scan_kappa";
    if (samples.empty()) throw_domain_error(fn, "no samples to scan");
    if (given && !(*given > 0 && std::isfinite(*given)))
        throw_domain_error(fn, "kappa must be finite and > 0");
    for (const Sample& s : samples) {
        const std::size_t M = s.points.facts.size();
        if (M == 0) throw_domain_error(fn, "a sample without points");
        if (!s.points.regime.empty() && s.points.regime.size() != M)
            throw_domain_error(fn, "regime is neither empty nor one per point");
        if (!s.points.margins.empty() && s.points.margins.size() != M)
            throw_domain_error(fn, "margins are neither empty nor one per point");
        if (s.points.layer.size() != s.points.head.size() ||
            (!s.points.layer.empty() && s.points.layer.size() != M))
            throw_domain_error(fn, "layer and head are neither empty nor one per point");
        for (const PointFacts& f : s.points.facts)
            if (!(f.N >= 1 && f.N <= f.n)) throw_domain_error(fn, "a point's N is outside 1..n");
        if (!s.evaluate) throw_domain_error(fn, "a sample without an evaluator");
    }
}

// Everything of one sample once every κ is evaluated.
KappaScan conclude(const Sample& sample, const SampleTrack& t, const Scanner& scanner,
                   std::optional<double> given) {
    KappaScan scan;
    const SideFacts counts = count_points(sample.points);
    scan.rows_kappa = given ? *given : common_edge({&t}, scanner, {0, 1, 2, 3});
    for (int side = 0; side < kSideCount; ++side) {
        SideVerdict& v = scan.sides[side];
        v.metric = side_metric(side);
        v.side = side_kind(side);
        v.band_method = t.method;
        v.units = t.units;
        v.points = counts.points;
        v.convention_points = counts.convention;
        v.identity_points = counts.identity;
        describe_kappa_dependence(sample.points, t, side, v);
        decide(t.sets[all_units][side], scanner, given, scan.rows_kappa, v);
        const std::vector<char>& always = t.sets[all_units][side].always_falsified;
        for (std::size_t p = 0; p < always.size(); ++p)
            if (always[p]) {
                v.persistent.push_back(static_cast<int>(p));
                v.persistent_sizes.push_back(sample.points.facts[p].N);
            }
        if (sample.split && v.state != SideState::untestable) replicate(t, scanner, side, v);
    }
    return scan;
}

// The per-point judgement of every side at its judged κ: one evaluation per distinct κ, exact
// on the sides judged there.
void judge_every_point(const Sample& sample, KappaScan& scan) {
    std::vector<double> distinct;
    for (const SideVerdict& v : scan.sides)
        distinct.push_back(v.kappa_judged);
    std::sort(distinct.begin(), distinct.end());
    distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
    for (double kappa : distinct) {
        unsigned sides = 0;
        for (int side = 0; side < kSideCount; ++side)
            if (scan.sides[side].kappa_judged == kappa) sides |= 1u << side;
        const KappaTests tests = sample.evaluate({kappa}, sides).at(0);
        for (int side = 0; side < kSideCount; ++side)
            if (sides & (1u << side))
                judge_points(sample.points, tests.sets[all_units], side, scan.sides[side],
                             scan.points);
    }
    for (const PointFacts& f : sample.points.facts) {
        scan.points.convention.push_back(f.convention);
        scan.points.identity.push_back(f.identity());
    }
    for (int side = 0; side < kSideCount; ++side)
        scan.sides[side].fraction_degenerate =
            degenerate_fraction(sample.points, scan.points, side);
    information_share(sample.points, scan.points, scan);
    scan.hypotheses = count_hypotheses(sample.points);
}

JointScan intersect(const std::vector<Sample>& samples, const Scanner& scanner,
                    const std::vector<KappaScan>& scans) {
    JointScan joint;
    std::vector<const SampleTrack*> tracks;
    for (std::size_t s = 0; s < samples.size(); ++s)
        tracks.push_back(&scanner.track_of(s));
    const std::vector<double> kappas = shared_grid(tracks, scanner);
    for (int side = 0; side < kSideCount; ++side) {
        JointSide& j = joint.sides[side];
        std::vector<ScanRow> rows;
        std::vector<char> every;
        for (double kappa : kappas) {
            rows.push_back(tracks.front()->sets[all_units][side].rows.at(kappa));
            every.push_back(consistent_everywhere(tracks, {side}, kappa));
        }
        j.kappa_set = consistent_runs(rows, every);
        j.kappa_edge = common_edge(tracks, scanner, {side});
        if (!std::isnan(j.kappa_edge)) {
            double gap = 0;
            for (const SampleTrack* t : tracks)
                gap += t->sets[all_units][side].rows.at(j.kappa_edge).mean_gap;
            j.gap_at_edge = gap / tracks.size();
        }
        for (std::size_t s = 0; s < scans.size(); ++s)
            if (!scans[s].sides[side].kappa_set.empty()) j.consistent_samples.push_back(int(s));
    }
    return joint;
}

}  // namespace

const char* to_string(ScanMetric metric) {
    return metric == ScanMetric::P ? "P" : "R";
}
const char* to_string(ScanSide side) {
    return side == ScanSide::lower ? "lower" : "upper";
}
ScanMetric side_metric(int side) {
    return side < 2 ? ScanMetric::P : ScanMetric::R;
}
ScanSide side_kind(int side) {
    return side % 2 == 0 ? ScanSide::lower : ScanSide::upper;
}

const char* to_string(CriticalRule rule) {
    switch (rule) {
        case CriticalRule::computed:
            return "computed";
        case CriticalRule::below_screen:
            return "below-screen";
        default:
            return "";
    }
}

const char* to_string(SideState state) {
    switch (state) {
        case SideState::holds:
            return "holds";
        case SideState::holds_uninformative:
            return "holds-uninformative";
        case SideState::falsified_every_kappa:
            return "falsified-every-kappa";
        case SideState::kappa_free_falsified:
            return "kappa-free-falsified";
        case SideState::contradicted_by_construction:
            return "contradicted-by-construction";
        case SideState::falsified_at_given_kappa:
            return "falsified-at-given-kappa";
        default:
            return "untestable";
    }
}

std::string kappa_set_text(const std::vector<KappaInterval>& set) {
    if (set.empty()) return "none";
    auto number = [](double x) {
        char buffer[32];
        std::snprintf(buffer, sizeof buffer, "%.3g", x);
        return std::string(buffer);
    };
    std::string out;
    for (const KappaInterval& i : set) {
        std::string item;
        if (i.open_below && i.open_above)
            item = "any";
        else if (i.open_below)
            item = "<=" + number(i.high);
        else if (i.open_above)
            item = ">=" + number(i.low);
        else
            item = number(i.low) + ".." + number(i.high);
        out += (out.empty() ? "" : " | ") + item;
    }
    return out;
}

const SideVerdict& KappaScan::side(ScanMetric metric, ScanSide which) const {
    return sides[(metric == ScanMetric::P ? 0 : 2) + (which == ScanSide::lower ? 0 : 1)];
}

JudgedSide judge_side(const ScanPoints& points, const SetTests& set, int side) {
    const std::size_t M = points.facts.size();
    const SideTest& test = set.sides[side];
    JudgedSide out;
    out.falsified.assign(M, 0);
    out.contradicted.assign(M, 0);
    out.z.assign(M, kNaN);
    std::vector<char> tested(M, 0);
    int tested_count = 0;
    for (std::size_t p = 0; p < M; ++p) {
        const PointFacts& f = points.facts[p];
        if (f.convention) continue;
        out.contradicted[p] = contradicts(f, side, test.bound[p]);
        if (f.identity()) continue;
        tested[p] = 1;
        tested_count += 1;
        const double e = test.excess[p];
        switch (set.method) {
            case BandMethod::exact:
                out.z[p] = e > kScanSlack ? HUGE_VAL : (e < -kScanSlack ? -HUGE_VAL : 0.0);
                out.falsified[p] = e > kScanSlack;
                break;
            case BandMethod::none:
                break;
            default:
                out.z[p] = e / test.se[p];
                break;
        }
    }
    if (set.method == BandMethod::bootstrap) {
        out.critical = test.critical;
        out.rule = test.rule;
        for (std::size_t p = 0; p < M; ++p)
            out.falsified[p] = tested[p] && !std::isnan(test.critical) &&
                               test.excess[p] - test.critical * test.se[p] > kScanSlack;
    } else if (set.method == BandMethod::holm) {
        const std::vector<char> rejected =
            holm_rejections(out.z, tested, set.units - 1, kFamilyError);
        for (std::size_t p = 0; p < M; ++p)
            out.falsified[p] = rejected[p] && test.excess[p] > kScanSlack;
        out.critical = holm_first_critical(tested_count, set.units - 1, kFamilyError);
    } else if (set.method == BandMethod::exact) {
        out.critical = 0;
    }
    return out;
}

ScanResult scan_kappa(const std::vector<Sample>& samples, std::optional<double> given_kappa) {
    validate(samples, given_kappa);
    Scanner scanner(samples);
    std::vector<int> coarse;
    for (int index = 0; index <= kLastIndex; index += kFinePerCoarse)
        coarse.push_back(index);
    scanner.evaluate_indices(coarse);
    refine(samples, scanner);
    if (given_kappa) scanner.evaluate_kappa(*given_kappa);

    ScanResult result;
    for (std::size_t s = 0; s < samples.size(); ++s) {
        const SampleTrack& t = scanner.track_of(s);
        KappaScan scan = conclude(samples[s], t, scanner, given_kappa);
        judge_every_point(samples[s], scan);
        result.samples.push_back(std::move(scan));
    }
    if (samples.size() > 1) result.joint = intersect(samples, scanner, result.samples);
    return result;
}

}  // namespace attngeo::compare
