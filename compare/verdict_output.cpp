// Writers of the κ scan and the verdict; see verdict_output.hpp.
#include "compare/verdict_output.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "common/format.hpp"
#include "common/manifest_values.hpp"
#include "common/run_schema.hpp"

namespace attngeo::compare {
namespace {

const char* const kRegimeNames[kRegimeCount] = {"I", "II", "III", "IV", "V"};

// An empty field for an undefined number (no points in a regime), as pandas reads NaN.
std::string field(double x) {
    return std::isnan(x) ? std::string() : format_double(x);
}

std::string side_prefix(const std::string& prefix, theory::BoundVariant variant,
                        const SideVerdict& v) {
    return prefix + theory::to_string(variant) + ',' + to_string(v.metric) + ',' +
           to_string(v.side) + ',';
}

// The distinct N of the moving points, ascending and ';'-separated, runs of three or more
// consecutive N as "first-last" ("2;3", "2-5;53-225"); empty when the points are not named by
// N (compare's (head, N) pairs).
std::string size_list(const std::vector<int>& n) {
    std::string out;
    for (std::size_t i = 0; i < n.size();) {
        std::size_t last = i;
        while (last + 1 < n.size() && n[last + 1] == n[last] + 1)
            ++last;
        const std::string item = last >= i + 2
                                     ? std::to_string(n[i]) + "-" + std::to_string(n[last])
                                     : std::to_string(n[i]);
        out += (out.empty() ? "" : ";") + item;
        i = last >= i + 2 ? last + 1 : i + 1;
    }
    return out;
}

std::string moving_sizes(const SideVerdict& v) {
    return size_list(v.moving_sizes);
}

// κ₀ and its gap, or nothing when every κ of the scan violates somewhere.
nlohmann::json optional_number(double x) {
    return std::isnan(x) ? nlohmann::json(nullptr) : json_number(x);
}

nlohmann::json side_json(const SideVerdict& v) {
    nlohmann::json gaps = nlohmann::json::object(), points = nlohmann::json::object();
    for (int r = 0; r < kRegimeCount; ++r) {
        gaps[kRegimeNames[r]] = std::isnan(v.gap_by_regime[r]) ? nlohmann::json(nullptr)
                                                               : nlohmann::json(v.gap_by_regime[r]);
        points[kRegimeNames[r]] = v.points_by_regime[r];
    }
    return {{"kappa_star", json_number(v.at_star.kappa)},
            {"kappa_given", v.kappa_given},
            {"coverage", json_number(v.at_star.coverage)},
            {"coverage_met", v.coverage_met},
            {"mean_gap", json_number(v.at_star.mean_gap)},
            {"mean_width", json_number(v.at_star.mean_width)},
            {"median_width", json_number(v.at_star.median_width)},
            {"mean_gap_by_regime", gaps},
            {"points_by_regime", points},
            {"fraction_degenerate", json_number(v.fraction_degenerate)},
            {"informative", v.informative},
            {"at_grid_edge", v.at_grid_edge},
            {"kappa_free", v.kappa_free},
            {"points_moving", v.moving_points.size()},
            {"largest_move", json_number(v.largest_move)},
            {"nearly_kappa_free", v.nearly_kappa_free},
            {"moving_N", moving_sizes(v)},
            {"points", v.points},
            {"convention_points", v.convention_points},
            {"violations", v.at_star.violations},
            {"violations_allowed", v.violations_allowed},
            {"within_allowance", v.within_allowance},
            {"largest_excess", json_number(v.at_star.largest_excess)},
            {"kappa_zero", optional_number(v.kappa_zero)},
            {"gap_at_kappa_zero", optional_number(v.gap_at_kappa_zero)},
            {"kappa_star_saturates", to_string(v.saturates)},
            {"informative_points", v.informative_points},
            {"at_limit_points", v.at_limit_points},
            {"n_only_points", v.n_only_points},
            {"informative_fraction", json_number(v.informative_fraction)},
            {"informative_N", size_list(v.informative_sizes)},
            {"identity_contradicted", v.identity_contradicted}};
}

}  // namespace

const char* const kScanDecision =
    "kappa scan (docs/design.md section 7), per variant, metric (P, R) and side (lower, upper): "
    "log10 kappa from -8 to 8 in 0.25-decade steps, refined to 0.025 decade within +-0.25 of "
    "each kappa* and of the interval-score kappa; convention points (N = n, or N = 1 with the "
    "sink ranked first: every bound is 1 by definition) enter no count, fraction, gap or width; "
    "a point violates a side "
    "when the estimate's whole 95% interval lies beyond the bound (slack 1e-12), coverage = the "
    "fraction of the M non-convention points that do not; violations_allowed = the 95% quantile "
    "of Binomial(M, 0.025); gap = estimate - lower or upper - estimate; kappa* = smallest mean "
    "gap among kappa whose violations are within the allowance (ties to the smaller kappa), else "
    "the fewest violations (within_allowance = 0); kappa_zero = smallest mean gap among the "
    "scanned kappa without any violation (empty when none); kappa_star_saturates = above (below) "
    "when every scanned kappa >= (<=) kappa* gives the same violations, mean gap and largest "
    "excess (within 1e-12), so kappa* reads 'any kappa >= (<=) kappa*'; informative point (at "
    "kappa*): "
    "not a convention point, strictly beyond the deterministic limit (P lower > N/n, R lower > "
    "0, upper < 1), not violated, and not a function of N alone (lower: Delta <= 0 and, with the "
    "sink selected, Delta0 <= 0; P upper: xi <= 0 on the deciding pair; R upper: that and the "
    "bound exactly 1/2); a side is informative when >= 5% of its M points are; "
    "identity_contradicted = upper sides' points at N = 1 whose bound is below the identity "
    "P(r_max,1) = R(r_min,1) = 1; kappa_free = the side's bound moves by <= 1e-12 at every point "
    "over the "
    "grid; points_moving = points where it moves by more, largest_move = the largest move, "
    "moving_N = their distinct N; nearly_kappa_free = not kappa-free and largest_move <= 1e-3; "
    "at_grid_edge = kappa* is 1e-8 or 1e8 and the side is not kappa-free. Degenerate point "
    "of a side: trivial (lower <= 0.01, upper >= 0.99) or inverted envelope (lower > upper + "
    "1e-12), at each side's kappa*, over the non-convention points.";
const char* const kIntervalScoreDecision =
    "kappa of the bound rows (bounds.csv's kappa column): the one kappa minimising the mean "
    "interval score (upper - lower) + (2/0.05) * (distance of the estimate outside [lower, upper]) "
    "over the P and R points (Gneiting & Raftery 2007), on the same grid; --kappa K replaces it "
    "and every side's kappa* by K; at d = inf kappa is 1 (kappa d = inf for any kappa).";
const char* const kScanColumns =
    "variant,metric,side,kappa,coverage,mean_width,median_width,mean_gap,violations,largest_excess";
const char* const kVerdictColumns =
    "variant,metric,side,kappa_star,coverage,coverage_met,mean_gap,mean_width,median_width,gap_I,"
    "gap_II,gap_III,gap_IV,gap_V,points_I,points_II,points_III,points_IV,points_V,"
    "fraction_degenerate,informative,at_grid_edge,kappa_free,points_moving,largest_move,"
    "nearly_kappa_free,moving_N,points,convention_points,violations,violations_allowed,within_"
    "allowance,largest_excess,kappa_zero,gap_at_kappa_zero,kappa_star_saturates,informative_"
    "points,informative_fraction,informative_N,identity_contradicted,at_limit_points,n_only_points";
const std::string kStarFlagColumns =
    std::string(
        "kappa_P_lower,kappa_P_upper,kappa_R_lower,kappa_R_upper,P_lower_star,"
        "P_upper_star,R_lower_star,R_upper_star,") +
    schema::kBoundFlagColumns +
    ",sink_selected,convention,identity_contradicted,informative_P_lower,informative_P_upper,"
    "informative_R_lower,informative_R_upper";

void append_scan_rows(std::ostream& out, const std::string& prefix, theory::BoundVariant variant,
                      const KappaScan& scan) {
    for (const SideVerdict& v : scan.sides) {
        const std::string head = side_prefix(prefix, variant, v);
        for (const ScanRow& r : v.scan)
            out << head << format_double(r.kappa) << ',' << format_double(r.coverage) << ','
                << format_double(r.mean_width) << ',' << format_double(r.median_width) << ','
                << format_double(r.mean_gap) << ',' << r.violations << ','
                << format_double(r.largest_excess) << '\n';
    }
}

void append_verdict_rows(std::ostream& out, const std::string& prefix, theory::BoundVariant variant,
                         const KappaScan& scan) {
    for (const SideVerdict& v : scan.sides) {
        out << side_prefix(prefix, variant, v) << format_double(v.at_star.kappa) << ','
            << format_double(v.at_star.coverage) << ',' << int(v.coverage_met) << ','
            << format_double(v.at_star.mean_gap) << ',' << format_double(v.at_star.mean_width)
            << ',' << format_double(v.at_star.median_width);
        for (double gap : v.gap_by_regime)
            out << ',' << field(gap);
        for (int count : v.points_by_regime)
            out << ',' << count;
        out << ',' << format_double(v.fraction_degenerate) << ',' << int(v.informative) << ','
            << int(v.at_grid_edge) << ',' << int(v.kappa_free) << ',' << v.moving_points.size()
            << ',' << format_double(v.largest_move) << ',' << int(v.nearly_kappa_free) << ','
            << moving_sizes(v) << ',' << v.points << ',' << v.convention_points << ','
            << v.at_star.violations << ',' << v.violations_allowed << ',' << int(v.within_allowance)
            << ',' << format_double(v.at_star.largest_excess) << ',' << field(v.kappa_zero) << ','
            << field(v.gap_at_kappa_zero) << ',' << to_string(v.saturates) << ','
            << v.informative_points << ',' << format_double(v.informative_fraction) << ','
            << size_list(v.informative_sizes) << ',' << v.identity_contradicted << ','
            << v.at_limit_points << ',' << v.n_only_points << '\n';
    }
}

std::string star_flag_fields(const KappaScan& scan, std::size_t point,
                             const theory::BoundRow& row) {
    const ScanBounds& star = scan.at_star;
    const double values[8] = {scan.sides[0].at_star.kappa, scan.sides[1].at_star.kappa,
                              scan.sides[2].at_star.kappa, scan.sides[3].at_star.kappa,
                              star.P.lower[point],         star.P.upper[point],
                              star.R.lower[point],         star.R.upper[point]};
    std::ostringstream out;
    for (int i = 0; i < 8; ++i)
        out << (i ? "," : "") << format_double(values[i]);
    const theory::MarginFlags m = theory::margin_flags(row);
    const theory::EnvelopeFlags e = theory::envelope_flags(
        star.P.lower[point], star.P.upper[point], star.R.lower[point], star.R.upper[point]);
    for (bool flag : {m.delta_le0, m.delta0_le0, m.xi_le0, e.P_inverted, e.R_inverted,
                      e.P_trivial_lower, e.R_trivial_lower, e.P_trivial_upper, e.R_trivial_upper})
        out << ',' << int(flag);
    const PointJudgement& j = scan.points;
    const auto at = [&](const std::vector<char>& flags) {
        return point < flags.size() ? int(flags[point]) : 0;
    };
    out << ',' << int(m.sink_selected) << ',' << at(j.convention) << ','
        << at(j.identity_contradicted);
    for (const std::vector<char>& side : j.informative)
        out << ',' << at(side);
    return out.str();
}

nlohmann::json verdict_json(const KappaScan& scan, const std::vector<theory::MarginFlags>& margins,
                            const char* kappa_rule) {
    nlohmann::json sides = nlohmann::json::object();
    for (const SideVerdict& v : scan.sides)
        sides[to_string(v.metric)][to_string(v.side)] = side_json(v);
    // Over the non-convention points, as every other fraction of the verdict.
    const std::vector<char>& convention = scan.points.convention;
    double delta = 0, delta0 = 0, xi = 0, count = 0;
    for (std::size_t i = 0; i < margins.size(); ++i) {
        if (i < convention.size() && convention[i]) continue;
        const theory::MarginFlags& m = margins[i];
        delta += m.delta_le0, delta0 += m.delta0_le0, xi += m.xi_le0, count += 1;
    }
    count = std::max(count, 1.0);
    const DegenerateCounts d = degenerate_fractions(scan.at_star, convention);
    const IntervalScoreChoice& is = scan.interval_score;
    return {{"kappa_rule", kappa_rule},
            {"interval_score",
             {{"kappa", json_number(is.kappa)},
              {"coverage", json_number(is.coverage)},
              {"mean_width", json_number(is.mean_width)},
              {"mean_score", json_number(is.mean_score)},
              {"violations", is.violations}}},
            {"sides", sides},
            {"hypotheses",
             {{"points", scan.hypotheses.points},
              {"delta_positive", scan.hypotheses.delta_positive},
              {"sink_points", scan.hypotheses.sink_points},
              {"delta0_positive", scan.hypotheses.delta0_positive}}},
            {"degenerate",
             {{"delta_le0", delta / count},
              {"delta0_le0", delta0 / count},
              {"xi_le0", xi / count},
              {"P_inverted", d.P_inverted},
              {"R_inverted", d.R_inverted},
              {"P_trivial_lower", d.P_trivial_lower},
              {"R_trivial_lower", d.R_trivial_lower},
              {"P_trivial_upper", d.P_trivial_upper},
              {"R_trivial_upper", d.R_trivial_upper}}}};
}

}  // namespace attngeo::compare
