// Writers of the κ scan and the verdict; see verdict_tables.hpp.
#include "compare/verdict_tables.hpp"

#include <algorithm>
#include <cmath>
#include <set>
#include <sstream>

#include "common/format.hpp"
#include "common/manifest_values.hpp"
#include "common/run_columns.hpp"
#include "common/run_schema.hpp"

namespace attngeo::compare {
namespace {

const char* const kRegimeNames[kRegimeCount] = {"I", "II", "III", "IV", "V"};

// A list of N in a CSV field: "[3;4]", "[2-5;53-225]", so that a single N still reads as text
// (pandas would take "2" for a number); empty when there is none.
std::string size_field(const std::vector<int>& sizes) {
    const std::string list = size_list(sizes);
    return list.empty() ? list : "[" + list + "]";
}

// An empty field for an undefined number, as pandas reads NaN.
std::string field(double x) {
    return std::isnan(x) ? std::string() : format_double(x);
}
nlohmann::json optional_number(double x) {
    return std::isnan(x) ? nlohmann::json(nullptr) : json_number(x);
}

std::string side_prefix(const std::string& prefix, theory::BoundVariant variant,
                        const SideVerdict& v) {
    return prefix + theory::to_string(variant) + ',' + to_string(v.metric) + ',' +
           to_string(v.side) + ',';
}

int falsified_at_edge(const SideVerdict& v) {
    if (std::isnan(v.kappa_edge)) return -1;
    for (const ScanRow& r : v.scan)
        if (r.kappa == v.kappa_edge) return r.falsified_points;
    return -1;
}

}  // namespace

std::string size_list(std::vector<int> n) {
    std::sort(n.begin(), n.end());
    n.erase(std::unique(n.begin(), n.end()), n.end());
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

const char* const kVerdictDecision =
    "Verdict (docs/design.md section 7, verdict III), per variant, metric (P, R) and side: units "
    "= trials (simulate) or documents (compare; the unit value is the per-document difference of "
    "measurement and that document's bound); per point the mean excess of the bound beyond the "
    "measurement and its standard error sqrt((sum of squared deviations + 2 w^2) / ((U-1) U)), "
    "w the width of the metric's range (two pseudo-units, as Agresti-Coull add pseudo-counts: a "
    "point whose values deviate rarely would otherwise get a standard error far below its "
    "mean's spread); a one-sided simultaneous band from the empirical bootstrap of the maximum "
    "re-studentized deviation over the points (B = 2000 replicates of U units drawn with "
    "replacement, Philox-keyed; bootstrap-t; Chernozhukov, Chetverikov & Kato 2013) with 30 or "
    "more units, Holm's step-down on Student-t p-values with 2 to 29, none with 1, exact at d = "
    "inf; in compare a kappa whose excess stays below the bootstrap over its 1, 16 or 128 "
    "points of largest z alone (a lower bound of the full one) is consistent without the full "
    "bootstrap (the scan row's critical_rule says so); a point is falsified at kappa when mean "
    "excess - c * se > 1e-12 (family-wise "
    "error 5 % when every bound holds); contradicted by construction when the bound leaves the "
    "deterministic range (N/n <= P <= 1, 0 <= R <= 1) or an upper bound is below the identity "
    "P(r_max,1) = R(r_min,1) = 1 at N = 1 (identity points are never tested); convention points "
    "(N = n, or N = 1 with the sink ranked first) enter nothing; the kappa set = the grid kappa "
    "(log10 kappa -8..8 in 0.5-decade steps, every boundary bisected to 0.025 decade, the "
    "0.025-decade grid within 0.25 decade of an edge not at a boundary) with no falsified or "
    "contradicted point, a 95 % confidence set; kappa_edge = the kappa "
    "of the set with the smallest mean gap; state: contradicted-by-construction when every kappa "
    "(or every kappa the data allow) contradicts an identity, falsified-every-kappa (or "
    "kappa-free-falsified when the bound does not move with kappa) when every kappa falsifies a "
    "point, else holds or holds-uninformative at kappa_edge; untestable with one unit; --kappa K "
    "judges K alone (falsified-at-given-kappa), the set still scanned; informative point at the "
    "judged kappa: not convention or identity, the bound at least 0.01 inside the deterministic "
    "range, not falsified or contradicted, not a function of N alone; a side is informative when "
    ">= 5 % of its points are; information share = mean over points of 1 - (width of the "
    "envelope within the range) / (width of the range); split replication: each half of the "
    "units (the first floor(U/2), the rest) scanned alone, replicates when both halves reach the "
    "same class and, both consistent, their sets meet; the first half's kappa_edge judged on the "
    "second half is reported beside it; bound rows: the kappa consistent on all four sides with "
    "the smallest mean gap, else each side at its own judged kappa.";
const std::string kKappaScanColumns =
    schema::csv_header(schema::page::compare, schema::file::kappa_scan);
const std::string kVerdictColumns =
    schema::csv_header(schema::page::compare, schema::file::verdict);

void append_scan_rows(std::ostream& out, const std::string& prefix, theory::BoundVariant variant,
                      const KappaScan& scan) {
    for (const SideVerdict& v : scan.sides) {
        const std::string head = side_prefix(prefix, variant, v);
        for (const ScanRow& r : v.scan) {
            out << head << format_double(r.kappa) << ',' << int(r.consistent()) << ','
                << r.falsified_points << ',' << r.contradicted_points << ',' << field(r.max_z)
                << ',' << (r.worst_point >= 0 ? std::to_string(r.worst_N) : "") << ','
                << field(r.critical) << ',' << to_string(r.rule) << ',' << field(r.mean_gap) << ','
                << field(r.mean_width) << '\n';
        }
    }
}

void append_verdict_rows(std::ostream& out, const std::string& prefix, theory::BoundVariant variant,
                         const KappaScan& scan) {
    for (int side = 0; side < kSideCount; ++side) {
        const SideVerdict& v = scan.sides[side];
        const double share =
            v.metric == ScanMetric::P ? scan.information_share_P : scan.information_share_R;
        const int at_edge = falsified_at_edge(v);
        out << side_prefix(prefix, variant, v) << to_string(v.state) << ','
            << kappa_set_text(v.kappa_set) << ',' << field(v.kappa_edge) << ','
            << field(v.gap_at_edge) << ',' << (at_edge >= 0 ? std::to_string(at_edge) : "") << ','
            << format_double(v.kappa_judged) << ',' << int(v.kappa_given) << ','
            << v.at_judged.falsified_points << ',' << v.at_judged.contradicted_points << ','
            << (v.worst.point >= 0 ? std::to_string(v.worst.N) : "") << ','
            << (v.worst.layer >= 0 ? std::to_string(v.worst.layer) : "") << ','
            << (v.worst.head >= 0 ? std::to_string(v.worst.head) : "") << ',' << field(v.worst.z)
            << ',' << field(v.worst.excess) << ',' << field(v.at_judged.critical) << ','
            << to_string(v.band_method) << ',' << v.units << ','
            << (v.contradiction_set.empty() ? std::string() : kappa_set_text(v.contradiction_set))
            << ',' << v.contradicted_most << ',' << v.persistent.size() << ','
            << size_field(v.persistent_sizes) << ',' << v.points << ',' << v.convention_points
            << ',' << v.identity_points << ',' << v.informative_points << ','
            << format_double(v.informative_fraction) << ',' << int(v.informative) << ','
            << size_field(v.informative_sizes) << ',' << v.at_limit_points << ',' << v.n_only_points
            << ',' << field(share) << ',' << int(v.kappa_free) << ',' << int(v.nearly_kappa_free)
            << ',' << format_double(v.largest_move) << ',' << v.points_moving << ','
            << field(v.kappa_edge_first_half) << ','
            << (v.split ? std::to_string(int(v.first_half_empty)) : "") << ','
            << (v.split ? std::to_string(int(v.falsified_on_second_half)) : "") << ','
            << field(v.gap_on_second_half) << ','
            << (v.replicates >= 0 ? std::to_string(v.replicates) : "") << ','
            << field(v.at_judged.mean_width);
        for (double gap : v.gap_by_regime)
            out << ',' << field(gap);
        for (int count : v.points_by_regime)
            out << ',' << count;
        out << ',' << field(v.fraction_degenerate) << '\n';
    }
}

std::string judgement_fields(const KappaScan& scan, std::size_t point,
                             const theory::BoundRow& row) {
    const PointJudgement& j = scan.points;
    std::ostringstream out;
    for (int side = 0; side < kSideCount; ++side)
        out << (side ? "," : "") << format_double(scan.sides[side].kappa_judged);
    for (int side = 0; side < kSideCount; ++side)
        out << ',' << format_double(j.bound[side][point]);
    const theory::MarginFlags m = theory::margin_flags(row);
    const theory::EnvelopeFlags e = theory::envelope_flags(j.bound[0][point], j.bound[1][point],
                                                           j.bound[2][point], j.bound[3][point]);
    for (bool flag : {m.delta_le0, m.delta0_le0, m.xi_le0, e.P_inverted, e.R_inverted,
                      e.P_trivial_lower, e.R_trivial_lower, e.P_trivial_upper, e.R_trivial_upper})
        out << ',' << int(flag);
    out << ',' << int(m.sink_selected) << ',' << int(j.convention[point]) << ','
        << int(j.identity[point]);
    for (int side = 0; side < kSideCount; ++side)
        out << ',' << field(j.z[side][point]);
    for (const auto* flags : {&j.falsified, &j.contradicted, &j.informative})
        for (int side = 0; side < kSideCount; ++side)
            out << ',' << int((*flags)[side][point]);
    return out.str();
}

std::string rows_rule(const KappaScan& scan, bool given, bool kappa_irrelevant) {
    if (kappa_irrelevant) return "kappa-irrelevant";
    if (given) return "given";
    return std::isnan(scan.rows_kappa) ? "each side at its own kappa" : "joint";
}

nlohmann::json verdict_json(const KappaScan& scan, const std::string& rows_rule_text,
                            int band_replicates) {
    nlohmann::json sides = nlohmann::json::object();
    for (int side = 0; side < kSideCount; ++side) {
        const SideVerdict& v = scan.sides[side];
        nlohmann::json gaps = nlohmann::json::object(), counts = nlohmann::json::object();
        for (int r = 0; r < kRegimeCount; ++r) {
            gaps[kRegimeNames[r]] = optional_number(v.gap_by_regime[r]);
            counts[kRegimeNames[r]] = v.points_by_regime[r];
        }
        sides[to_string(v.metric)][to_string(v.side)] = {
            {"state", to_string(v.state)},
            {"kappa_set", kappa_set_text(v.kappa_set)},
            {"kappa_edge", optional_number(v.kappa_edge)},
            {"gap_at_edge", optional_number(v.gap_at_edge)},
            {"kappa_judged", json_number(v.kappa_judged)},
            {"kappa_given", v.kappa_given},
            {"falsified_at_judged", v.at_judged.falsified_points},
            {"contradicted_at_judged", v.at_judged.contradicted_points},
            {"worst",
             {{"N", v.worst.point >= 0 ? nlohmann::json(v.worst.N) : nlohmann::json(nullptr)},
              {"layer",
               v.worst.layer >= 0 ? nlohmann::json(v.worst.layer) : nlohmann::json(nullptr)},
              {"head", v.worst.head >= 0 ? nlohmann::json(v.worst.head) : nlohmann::json(nullptr)},
              {"z", optional_number(v.worst.z)},
              {"excess", optional_number(v.worst.excess)}}},
            {"critical_value", optional_number(v.at_judged.critical)},
            {"contradiction_set", v.contradiction_set.empty()
                                      ? nlohmann::json(nullptr)
                                      : nlohmann::json(kappa_set_text(v.contradiction_set))},
            {"contradicted_most", v.contradicted_most},
            {"persistent_points", v.persistent.size()},
            {"persistent_N", size_list(v.persistent_sizes)},
            {"points", v.points},
            {"convention_points", v.convention_points},
            {"identity_points", v.identity_points},
            {"informative_points", v.informative_points},
            {"informative_fraction", json_number(v.informative_fraction)},
            {"informative", v.informative},
            {"informative_N", size_list(v.informative_sizes)},
            {"at_limit_points", v.at_limit_points},
            {"n_only_points", v.n_only_points},
            {"kappa_free", v.kappa_free},
            {"nearly_kappa_free", v.nearly_kappa_free},
            {"largest_move", json_number(v.largest_move)},
            {"split",
             {{"judged", v.split},
              {"kappa_edge_first_half", optional_number(v.kappa_edge_first_half)},
              {"first_half_empty", v.first_half_empty},
              {"falsified_on_second_half", v.falsified_on_second_half},
              {"gap_on_second_half", optional_number(v.gap_on_second_half)},
              {"replicates",
               v.replicates >= 0 ? nlohmann::json(v.replicates == 1) : nlohmann::json(nullptr)}}},
            {"mean_width", optional_number(v.at_judged.mean_width)},
            {"mean_gap_by_regime", gaps},
            {"points_by_regime", counts},
            {"fraction_degenerate", optional_number(v.fraction_degenerate)}};
    }
    const SideVerdict& any = scan.sides[0];
    const HypothesisCounts& h = scan.hypotheses;
    return {{"band",
             {{"method", to_string(any.band_method)},
              {"units", any.units},
              {"replicates", band_replicates},
              {"family_error", kFamilyError}}},
            {"rows_kappa", optional_number(scan.rows_kappa)},
            {"rows_rule", rows_rule_text},
            {"information_share",
             {{"P", optional_number(scan.information_share_P)},
              {"R", optional_number(scan.information_share_R)},
              {"both", optional_number(scan.information_share)}}},
            {"sides", sides},
            {"hypotheses",
             {{"points", h.points},
              {"delta_positive", h.delta_positive},
              {"sink_points", h.sink_points},
              {"delta0_positive", h.delta0_positive}}}};
}

nlohmann::json joint_json(const JointScan& joint) {
    nlohmann::json out = nlohmann::json::object();
    for (int side = 0; side < kSideCount; ++side) {
        const JointSide& j = joint.sides[side];
        out[to_string(side_metric(side))][to_string(side_kind(side))] = {
            {"kappa_set", kappa_set_text(j.kappa_set)},
            {"kappa_edge", optional_number(j.kappa_edge)},
            {"gap_at_edge", optional_number(j.gap_at_edge)},
            {"consistent_samples", j.consistent_samples}};
    }
    return out;
}

}  // namespace attngeo::compare
