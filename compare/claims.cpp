// The rules that answer the paper's claims; see claims.hpp.
#include "compare/claims.hpp"

#include <algorithm>
#include <boost/math/special_functions/beta.hpp>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "common/errors.hpp"
#include "common/format.hpp"
#include "common/run_columns.hpp"
#include "common/run_schema.hpp"
#include "compare/verdict_tables.hpp"

namespace attngeo::compare {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Three significant digits, for the sentences of `detail` (the CSV fields keep 17).
std::string g3(double x) {
    if (std::isnan(x)) return "undefined";
    char text[32];
    std::snprintf(text, sizeof text, "%.3g", x);
    return text;
}

std::string interval_text(double lo, double hi) {
    return "[" + g3(lo) + "; " + g3(hi) + "]";
}

// ---- C1 --------------------------------------------------------------------------------------

bool side_falsified(SideState state) {
    return state == SideState::falsified_every_kappa || state == SideState::kappa_free_falsified ||
           state == SideState::falsified_at_given_kappa ||
           state == SideState::contradicted_by_construction;
}

bool side_holds(SideState state) {
    return state == SideState::holds || state == SideState::holds_uninformative;
}

std::string side_name(const SideVerdict& side) {
    return std::string(to_string(side.metric)) + " " + to_string(side.side);
}

// "P upper falsified-every-kappa at N = 3;4 (worst z = 47.6)".
std::string failing_side_text(const SideVerdict& side) {
    std::string text = side_name(side) + " " + to_string(side.state);
    if (!side.persistent_sizes.empty())
        text += " at N = " + size_list(side.persistent_sizes);
    else if (side.worst.point >= 0)
        text += " at N = " + std::to_string(side.worst.N);
    if (!std::isnan(side.worst.z)) text += " (worst z = " + g3(side.worst.z) + ")";
    return text;
}

std::string joined(const std::vector<std::string>& parts, const std::string& glue) {
    std::string out;
    for (std::size_t i = 0; i < parts.size(); ++i)
        out += (i ? glue : "") + parts[i];
    return out;
}

// ---- C3 --------------------------------------------------------------------------------------

// Heads of each regime (Retriever, Mixer, Reset) whose label is kept in ≥ kStableLabel of the
// resamples, by one rule.
template <class Label>
std::array<int, 3> stable_counts(const RegimeLabels& labels, Label label_of, bool wording) {
    std::array<int, 3> counts{};
    for (const HeadLabels& h : labels.heads) {
        const double stability = wording ? h.stability_wording : h.stability;
        const int regime = label_of(h);
        if (regime >= 0 && stability >= kStableLabel) ++counts[regime];
    }
    return counts;
}

ClaimRow regimes_row(const RegimeLabels& labels, const std::array<int, 3>& stable,
                     const std::string& rule_name, const std::string& units) {
    ClaimRow row;
    row.claim = "C3";
    row.variant = rule_name;
    row.units = units;
    row.quantity =
        "stable heads (label kept in >= 80 % of document resamples) in the rarest "
        "regime";
    row.rule =
        "yes: every regime has >= 5 stable heads; no: a regime has none with >= 30 "
        "heads; else can't tell (the labels are exhaustive so their presence alone is "
        "no evidence)";
    const int rarest = *std::min_element(stable.begin(), stable.end());
    const int heads = static_cast<int>(labels.heads.size());
    row.value = labels.replicates > 0 ? rarest : kNaN;
    if (labels.replicates == 0)
        row.answer = Answer::cant_tell;
    else if (rarest >= kStableHeadsPerRegime)
        row.answer = Answer::yes;
    else if (rarest == 0 && heads >= kHeadsToCallARegimeAbsent)
        row.answer = Answer::no;
    else
        row.answer = Answer::cant_tell;
    row.detail = labels.replicates == 0
                     ? "no document bootstrap (fewer than 2 documents or --replicates 0)"
                     : "stable heads: Retriever " + std::to_string(stable[0]) + "; Mixer " +
                           std::to_string(stable[1]) + "; Reset " + std::to_string(stable[2]) +
                           " of " + std::to_string(heads);
    return row;
}

void check_text(const std::string& text) {
    if (text.find_first_of(",\n\r") != std::string::npos)
        throw_domain_error("attngeo::compare::claims_csv",
                           "a text field holds a comma or a line break: '" + text + "'");
}

}  // namespace

const char* to_string(Answer answer) {
    switch (answer) {
        case Answer::yes:
            return "yes";
        case Answer::no:
            return "no";
        case Answer::cant_tell:
            return "can't tell";
    }
    return "can't tell";
}

const char* claim_statement(const std::string& claim) {
    if (claim == "C1") return "measurements closely track the theoretical envelopes";
    if (claim == "C2") return "sink similarity correlates with Recall";
    if (claim == "C3") return "heads specialise into three regimes (Retriever; Mixer; Reset)";
    if (claim == "C4") return "a small-N regime of strongest non-trivial separability";
    if (claim == "C5") return "the assumptions hold on real heads";
    if (claim == "C6") return "geometry predicts what attention can drop";
    throw_domain_error("attngeo::compare::claim_statement", "no claim '" + claim + "'");
}

ClaimRow envelopes_claim(theory::BoundVariant variant, const KappaScan& scan,
                         const std::string& units) {
    ClaimRow row;
    row.claim = "C1";
    row.variant = theory::to_string(variant);
    row.units = units;
    row.quantity = "information share of the envelope (share of the trivial range ruled out)";
    row.value = scan.information_share;
    row.rule =
        "no: a side falsified (for every kappa or kappa-free) or contradicted by "
        "construction; yes: every side holds with information share >= 0.5 and an "
        "informative side per metric; else can't tell";
    std::vector<std::string> failing, informative;
    bool all_hold = true;
    bool informative_P = false, informative_R = false;
    for (const SideVerdict& side : scan.sides) {
        if (side_falsified(side.state)) failing.push_back(failing_side_text(side));
        all_hold = all_hold && side_holds(side.state);
        if (side.state == SideState::holds) {
            informative.push_back(side_name(side));
            (side.metric == ScanMetric::P ? informative_P : informative_R) = true;
        }
    }
    if (!failing.empty()) {
        row.answer = Answer::no;
        row.detail = joined(failing, "; ");
        return row;
    }
    const bool tight = scan.information_share >= kInformationShareForYes;
    row.answer =
        all_hold && tight && informative_P && informative_R ? Answer::yes : Answer::cant_tell;
    row.detail =
        all_hold ? "every side holds; informative: " +
                       (informative.empty() ? std::string("none") : joined(informative, " and ")) +
                       "; information share " + g3(scan.information_share)
                 : "some side cannot be tested (too few units)";
    return row;
}

ClaimRow sink_recall_claim(const std::vector<CorrelationRow>& rows, const std::string& units) {
    ClaimRow row;
    row.claim = "C2";
    row.units = units;
    row.rule =
        "the sign of corr(R(r_min;N); rho0) where its head-level interval (heads as the "
        "sample; simultaneous over N by a max-|r| permutation test) excludes 0: yes if "
        "positive; no if negative or 0 inside at every N; can't tell with mixed signs or "
        "fewer than 10 heads";
    const CorrelationRow* strongest = nullptr;
    std::vector<int> positive, negative;
    int defined = 0;
    for (const CorrelationRow& r : rows) {
        if (std::isnan(r.corr)) continue;
        ++defined;
        if (!strongest || std::abs(r.corr) > std::abs(strongest->corr)) strongest = &r;
        if (r.head_lo > 0) positive.push_back(r.N);
        if (r.head_hi < 0) negative.push_back(r.N);
    }
    if (!strongest) {
        row.quantity = "corr(R(r_min;N); rho0) across heads";
        row.detail = "the correlation is undefined at every N";
        return row;
    }
    row.quantity = "corr(R(r_min;N); rho0) across heads at N = " + std::to_string(strongest->N) +
                   " (largest |r|)";
    const int heads = strongest->heads;
    row.value = strongest->corr;
    row.ci_lo = strongest->head_lo;
    row.ci_hi = strongest->head_hi;
    if (heads < kMinUnitsForCorrelation)
        row.answer = Answer::cant_tell;
    else if (!positive.empty() && !negative.empty())
        row.answer = Answer::cant_tell;
    else if (!positive.empty())
        row.answer = Answer::yes;
    else
        row.answer = Answer::no;
    row.detail = "excludes 0 at " + std::to_string(positive.size() + negative.size()) + " of " +
                 std::to_string(defined) + " N";
    if (!positive.empty()) row.detail += "; positive at N = " + size_list(positive);
    if (!negative.empty()) row.detail += "; negative at N = " + size_list(negative);
    row.detail += "; partial given the layer " + g3(strongest->partial) + " " +
                  interval_text(strongest->partial_lo, strongest->partial_hi) +
                  "; document bootstrap (heads fixed) " +
                  interval_text(strongest->ci_lo, strongest->ci_hi);
    if (heads < kMinUnitsForCorrelation) row.detail += "; only " + std::to_string(heads) + " heads";
    return row;
}

std::vector<ClaimRow> regimes_claims(const RegimeLabels& labels, const std::string& units) {
    auto ours = [](const HeadLabels& h) { return static_cast<int>(h.magnitudes); };
    auto worded = [](const HeadLabels& h) {
        return h.wording == theory::WordedRegime::none ? -1 : static_cast<int>(h.wording);
    };
    ClaimRow magnitudes =
        regimes_row(labels, stable_counts(labels, ours, false), "magnitudes", units);
    ClaimRow wording = regimes_row(labels, stable_counts(labels, worded, true), "wording", units);
    int disagree = 0, unmatched = 0;
    for (const HeadLabels& h : labels.heads) {
        disagree += !theory::same_label(h.magnitudes, h.wording);
        unmatched += h.wording == theory::WordedRegime::none;
    }
    const std::string both = "; the two rules disagree on " + std::to_string(disagree) + " heads";
    magnitudes.detail += both;
    wording.detail += both + "; " + std::to_string(unmatched) + " heads match no worded regime";
    return {magnitudes, wording};
}

ClaimRow separability_claim(const SeparabilityPeak& peak, int context, const std::string& units) {
    ClaimRow row;
    row.claim = "C4";
    row.variant = peak.metric;
    row.units = units;
    row.quantity = std::string("N where the mean ") + peak.metric +
                   " rises furthest above its floor (2 <= N < n)";
    row.rule =
        "yes if the argmax's document-bootstrap interval ends at <= 10 % of n; no if "
        "it starts above; else can't tell (N = 1 is an identity: F = 1; F(r_max) >= "
        "2(N/n)/(1 + N/n) by construction so its share above that floor is used)";
    const double small = kSmallNShare * context;
    if (peak.N == 0) {
        row.detail = "no N with 2 <= N < n on the grid";
        return row;
    }
    row.value = peak.N;
    row.ci_lo = peak.lo;
    row.ci_hi = peak.hi;
    if (std::isnan(peak.lo))
        row.answer = Answer::cant_tell;
    else if (peak.hi <= small)
        row.answer = Answer::yes;
    else if (peak.lo > small)
        row.answer = Answer::no;
    else
        row.answer = Answer::cant_tell;
    row.detail = "mean " + std::string(peak.metric) + " " + g3(peak.value) +
                 " at N = " + std::to_string(peak.N) + " (" + g3(peak.share) +
                 " of the range above the floor); 10 % of n = " + g3(small) +
                 (std::isnan(peak.lo) ? "; no document bootstrap" : "");
    return row;
}

std::pair<double, double> clopper_pearson(int k, int n) {
    if (n <= 0) return {kNaN, kNaN};
    const double lo = k == 0 ? 0.0 : boost::math::ibeta_inv(k, n - k + 1, 0.025);
    const double hi = k == n ? 1.0 : boost::math::ibeta_inv(k + 1, n - k, 0.975);
    return {lo, hi};
}

std::vector<ClaimRow> assumption_claims(const std::vector<theory::AssumptionCheck>& checks,
                                        const std::vector<char>& counted) {
    struct Assumption {
        const char* name;
        const char* what;
        bool value_states;  // counted once per key/value head
        bool (*holds)(const theory::AssumptionCheck&);
    };
    const Assumption assumptions[] = {
        {"A1", "stable value norms with a compressed sink", true,
         [](const theory::AssumptionCheck& c) { return c.a1; }},
        {"A2", "exponential cosine decay", true,
         [](const theory::AssumptionCheck& c) { return c.a2; }},
        {"A3", "a four-phase attention profile with a sink", false,
         [](const theory::AssumptionCheck& c) { return c.a3; }},
    };
    std::vector<ClaimRow> rows;
    for (const Assumption& a : assumptions) {
        int heads = 0, holding = 0;
        for (std::size_t i = 0; i < checks.size(); ++i) {
            if (a.value_states && !counted[i]) continue;
            ++heads;
            holding += a.holds(checks[i]);
        }
        ClaimRow row;
        row.claim = "C5";
        row.variant = a.name;
        row.quantity = std::string("share of heads where ") + a.name + " (" + a.what + ") holds";
        row.units = std::to_string(heads) + (a.value_states ? " value-state heads" : " heads");
        row.rule =
            "yes if the Clopper-Pearson interval of the share lies above 1/2; no if "
            "below; else can't tell (assumptions.csv)";
        row.value = heads > 0 ? static_cast<double>(holding) / heads : kNaN;
        std::tie(row.ci_lo, row.ci_hi) = clopper_pearson(holding, heads);
        row.answer = heads == 0               ? Answer::cant_tell
                     : row.ci_lo > kMostHeads ? Answer::yes
                     : row.ci_hi < kMostHeads ? Answer::no
                                              : Answer::cant_tell;
        row.detail = std::to_string(holding) + " of " + std::to_string(heads) + " heads";
        rows.push_back(row);
    }
    return rows;
}

std::vector<ClaimRow> truncation_claims(const nlohmann::json& link_summary) {
    std::vector<ClaimRow> rows;
    for (const nlohmann::json& entry : link_summary) {
        ClaimRow row;
        row.claim = "C6";
        row.variant = entry.at("policy").get<std::string>() + " renorm " +
                      entry.at("renorm").get<std::string>();
        const int heads = entry.at("heads").get<int>();
        const int tests = entry.at("tests").get<int>();
        row.units = std::to_string(heads) + " heads; " + std::to_string(tests) + " tests";
        row.rule =
            "Spearman of dNLL with each geometric quantity across heads; Holm over "
            "quantities x N: yes if one survives (its adjusted interval excludes 0); "
            "no if every adjusted interval lies within +-0.3; else can't tell";
        const nlohmann::json& strongest = entry.at("strongest");
        if (strongest.is_null()) {
            row.quantity = "Spearman of dNLL with a geometric quantity";
            row.detail = "no test is defined";
            rows.push_back(row);
            continue;
        }
        const std::string quantity = strongest.at("quantity").get<std::string>();
        const int N = strongest.at("N").get<int>();
        row.quantity = "Spearman of dNLL with " + quantity + " at N = " + std::to_string(N) +
                       " (smallest Holm p)";
        auto number = [](const nlohmann::json& v) {
            return v.is_number() ? v.get<double>() : kNaN;
        };
        row.value = number(strongest.at("spearman"));
        row.ci_lo = number(strongest.at("adj_lo"));
        row.ci_hi = number(strongest.at("adj_hi"));
        const bool survives = !entry.at("best_predictor").is_null();
        const bool negligible = row.ci_lo > -kNegligibleLink && row.ci_hi < kNegligibleLink;
        row.answer = survives ? Answer::yes : negligible ? Answer::no : Answer::cant_tell;
        row.detail = std::to_string(entry.at("tests_excluding_zero").get<int>()) + " of " +
                     std::to_string(tests) + " adjusted intervals exclude 0; Holm p " +
                     g3(number(strongest.at("p_holm")));
        rows.push_back(row);
    }
    return rows;
}

std::string claims_csv(const std::vector<ClaimRow>& rows) {
    auto field = [](double x) { return std::isnan(x) ? std::string() : format_double(x); };
    std::ostringstream out;
    out << schema::csv_header(schema::page::compare, schema::file::claims) << '\n';
    for (const ClaimRow& r : rows) {
        for (const std::string* text : {&r.variant, &r.quantity, &r.units, &r.rule, &r.detail})
            check_text(*text);
        out << r.claim << ',' << claim_statement(r.claim) << ',' << r.variant << ','
            << to_string(r.answer) << ',' << r.quantity << ',' << field(r.value) << ','
            << field(r.ci_lo) << ',' << field(r.ci_hi) << ',' << r.units << ',' << r.rule << ','
            << r.detail << '\n';
    }
    return out.str();
}

}  // namespace attngeo::compare
