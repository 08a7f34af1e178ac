// The joint uncertainty of a metric measured at many points from the same units (docs/design.md
// §7, verdict III): per point the mean and its standard error, and the critical value of the
// maximum studentized deviation over the points — by the empirical bootstrap of the maximum of
// re-studentized means (Efron's bootstrap-t over points; Chernozhukov, Chetverikov & Kato 2013)
// with enough units, Holm's step-down otherwise.
#pragma once
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

namespace attngeo::compare {

// B, the bootstrap replicates, by default.
inline constexpr int kBandReplicates = 2000;
// Below this many units the bootstrap's Gaussian approximation is not trusted: Holm instead.
inline constexpr int kBootstrapMinimumUnits = 30;
// The family-wise error of "falsified somewhere" when every bound holds.
inline constexpr double kFamilyError = 0.05;

enum class BandMethod {
    bootstrap,  // at least kBootstrapMinimumUnits units: the bootstrap-t (Resamples)
    holm,       // 2 .. kBootstrapMinimumUnits − 1 units: Student-t p-values, Holm
    exact,      // no sampling error (d = ∞): a point is falsified when beyond at all
    none,       // fewer than 2 units: no interval, nothing can be falsified by data
};
const char* to_string(BandMethod method);  // "bootstrap-t" | "holm" | "exact" | "none"
// The method for `units` sampled units.
BandMethod band_method_for(int units);

// Values of one quantity per unit and point.                                        [U, M]
struct UnitValues {
    int units = 0, points = 0;
    std::vector<double> values;  // [U, M] row-major: unit u's values at points 0..M−1
    // [M] the width of the range every unit's value at the point lies in (P(r_max,N) in
    // [N/n, 1]: 1 − N/n; R in [0, 1]: 1); empty: 1 everywhere. The pseudo-units' distance
    // where every unit agrees (PointMoments).
    std::vector<double> width;
    double width_at(int point) const { return width.empty() ? 1.0 : width[point]; }
    double at(int unit, int point) const {
        return values[static_cast<std::size_t>(unit) * points + point];
    }
};

// Mean and standard error of the mean per point over a set of units.
struct PointMoments {
    int units = 0;
    std::vector<double> mean;  // [M] (exactly the common value where every unit agrees)
    // [M] the distance d of the two pseudo-units: the width of the point's range
    // (UnitValues::width).
    std::vector<double> pseudo;
    // [M] √((Σ_u (x_u − m̂)² + 2d²) / ((U − 1)U)): the standard error of the mean with two
    // pseudo-units at the ends of the point's range added to the squares, as Agresti and Coull
    // add pseudo-counts to a proportion. Without them a point whose values deviate rarely (a P
    // at its floor N/n in all but a few trials) gets a standard error far below the spread of
    // its mean across runs and is falsified by chance. Pseudo-units at the sample's own farthest
    // deviation instead were not enough (11 % false alarms on the calibration's true P lower
    // bounds): rare deviations are small against the range, and the range is what a run cannot
    // rule out. Where the spread is small against the range the band widens there, a loss of
    // power, never of validity. NaN for U < 2.
    std::vector<double> se;
};
// Over the units [first, last) of `values` (all by default).
PointMoments point_moments(const UnitValues& values, int first = 0, int last = -1);

// The bootstrap's resamples of U units: replicate b draws U units with replacement, and
// counts[b, u] is how often unit u is drawn. Draw j of replicate b is
// ⌊U·x⌋ / 2⁶⁴ of a 64-bit Philox4x32-10 word keyed by `seed` with counter (j / 2, b, "boot", U),
// so the counts do not depend on threads, shards or order.                         [B, U]
class Resamples {
  public:
    Resamples(std::uint64_t seed, int replicates, int units);
    int replicates() const { return replicates_; }
    int units() const { return units_; }
    double at(int replicate, int unit) const {
        return counts_[static_cast<std::size_t>(replicate) * units_ + unit];
    }
    const std::vector<double>& counts() const { return counts_; }  // [B, U]

  private:
    int replicates_ = 0, units_ = 0;
    std::vector<double> counts_;
};
// Draw j of replicate b among `units` units, computed alone (the plain reference).
int resampled_unit(std::uint64_t seed, int replicate, int units, int draw);

// The critical values of a one-sided simultaneous band over the points flagged in `tested`
// (points with se > 0) of the units [first, last): per replicate b the resampled mean m*_bp and
// standard error se*_bp (the same pseudo-units as point_moments) and
//   t*_bp = (m*_bp − m̂_p) / se*_bp;
//   upper_side = the (1 − α) quantile over b of max_p t*_bp  (an upper bound is falsified at p
//                when m̂_p − upper_side·se_p lies above it),
//   lower_side = the (1 − α) quantile over b of max_p −t*_bp (a lower bound, mirrored).
// Re-studentizing each replicate is what carries the skew of a bounded metric into the band:
// with fixed standard errors (Gaussian multipliers) a one-sided band over a skewed P falsifies
// true lower bounds about twice as often as 5 %. The quantile is the ⌈(1 − α)B⌉-th smallest
// value. NaN when no point is tested.
struct CriticalValues {
    double upper_side = std::numeric_limits<double>::quiet_NaN();
    double lower_side = std::numeric_limits<double>::quiet_NaN();
};
// `moments` must be point_moments(values, first, last) and `draws` resample last − first units.
// The two products (counts by deviations and by their squares) run on `threads` OpenMP threads
// in column blocks; the result does not depend on their number.
CriticalValues bootstrap_critical_values(const UnitValues& values, const PointMoments& moments,
                                         const std::vector<char>& tested, const Resamples& draws,
                                         int first, int last, double family_error, int threads);
// The upper side's critical value, or a lower bound of it that already settles the question
// `clears` asks. clears(c) says whether no point lies beyond a band of critical value c; it must
// be monotone (true at c, then true above c). The replicates are done in fixed passes, and after
// each c's rank from the top among the maxima done so far bounds c from below (among fewer
// replicates that rank is never higher than among all): where that bound clears, the rest is
// not computed. Without `clears`, or where no bound clears, the exact value as
// bootstrap_critical_values gives it (the same bits), with the lower side's too.
struct UpperCritical {
    double value = std::numeric_limits<double>::quiet_NaN();
    bool exact = false;  // false: `value` is a lower bound that clears
    double lower_side = std::numeric_limits<double>::quiet_NaN();  // exact only
};
UpperCritical bootstrap_upper_critical(const UnitValues& values, const PointMoments& moments,
                                       const std::vector<char>& tested, const Resamples& draws,
                                       int first, int last, double family_error, int threads,
                                       const std::function<bool(double)>& clears);
// The same by the plain definition (a loop per replicate and point; the test reference).
CriticalValues bootstrap_critical_values_plain(const UnitValues& values,
                                               const PointMoments& moments,
                                               const std::vector<char>& tested,
                                               const Resamples& draws, int first, int last,
                                               double family_error);

// Holm's step-down over one-sided tests: point p has statistic t[p] (large = evidence against
// the bound) with Student-t p-value P(T_df ≥ t[p]); only points with tested[p] enter, and NaN
// statistics never reject. Returns [M] 0/1, the rejected points at family-wise error α.
std::vector<char> holm_rejections(const std::vector<double>& t, const std::vector<char>& tested,
                                  int degrees_of_freedom, double family_error);
// The t quantile of Holm's first step, 1 − α/m for m tested points: a point beyond it is
// rejected, and none is when no point is (NaN when m = 0).
double holm_first_critical(int tested_points, int degrees_of_freedom, double family_error);

}  // namespace attngeo::compare
