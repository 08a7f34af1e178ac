// The paper's claims, each answered yes / no / can't tell from a run's own numbers
// (docs/design.md §7 "The paper's claims, each answered"; claims.csv): one rule per claim,
// applied to what compare, simulate or truncate measured, with the number it rests on, its
// 95 % interval, the units and the rule in words.
#pragma once
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "compare/correlation.hpp"
#include "compare/falsification.hpp"
#include "compare/regime_rules.hpp"
#include "compare/separability_peak.hpp"
#include "theory/assumption_checks.hpp"
#include "theory/bounds.hpp"

namespace attngeo::compare {

enum class Answer { yes, no, cant_tell };
const char* to_string(Answer answer);  // "yes" | "no" | "can't tell"

// The rules' thresholds (documented decisions, docs/design.md §7).
inline constexpr double kInformationShareForYes = 0.5;  // C1: the envelope rules out half
inline constexpr int kMinUnitsForCorrelation = 10;      // C2: fewer units: can't tell
inline constexpr double kStableLabel = 0.8;             // C3: a label kept in 80 % of resamples
inline constexpr int kStableHeadsPerRegime = 5;         // C3: each regime needs this many
inline constexpr int kHeadsToCallARegimeAbsent = 30;    // C3: "no" needs at least this many heads
inline constexpr double kSmallNShare = 0.1;             // C4: "small N" = at most 10 % of n
inline constexpr double kMostHeads = 0.5;               // C5: holds in most heads
inline constexpr double kNegligibleLink = 0.3;          // C6: |ρ| below it is no link

// One row of claims.csv. Text fields hold no comma (the CSV is unquoted).
struct ClaimRow {
    std::string claim;    // "C1" … "C6"
    std::string variant;  // the row within the claim: a bound variant (C1), a rule (C3), the
                          // F-score (C4), the assumption (C5), policy/renorm (C6); "" for C2
    Answer answer = Answer::cant_tell;
    std::string quantity;  // what `value` is
    double value = std::numeric_limits<double>::quiet_NaN();
    double ci_lo = std::numeric_limits<double>::quiet_NaN();  // its 95 % interval; NaN: none
    double ci_hi = std::numeric_limits<double>::quiet_NaN();
    std::string units;   // what the evidence is counted in ("16 heads; 120 documents")
    std::string rule;    // the answer's rule in words
    std::string detail;  // what decided it, from the numbers
};

// The paper's words for a claim ("C1" … "C6"); std::domain_error for another name.
const char* claim_statement(const std::string& claim);

// C1 "measurements closely track the theoretical envelopes", one variant: no if any side is
// falsified (for every κ, κ-free, or at the given κ) or contradicted by construction; yes if
// every side holds, the information share is ≥ kInformationShareForYes and each metric has an
// informative side; can't tell otherwise. The number is the information share.
ClaimRow envelopes_claim(theory::BoundVariant variant, const KappaScan& scan,
                         const std::string& units);

// C2 "sink similarity correlates with Recall", from corr_rho0's rows: the sign at the N where
// the head-level simultaneous interval excludes 0 — yes (all positive), no (all negative, or
// none excludes 0), can't tell (mixed signs, or fewer than kMinUnitsForCorrelation units). The
// number is the correlation at the N of largest |r| with its head-level interval.
ClaimRow sink_recall_claim(const std::vector<CorrelationRow>& rows, const std::string& units);

// C3 "heads specialise into three regimes", one row per rule (ours: "magnitudes"; the paper's:
// "wording"): yes if each regime has ≥ kStableHeadsPerRegime heads of stability ≥ kStableLabel;
// no if one has none with ≥ kHeadsToCallARegimeAbsent heads; can't tell otherwise (and without
// a bootstrap). The number is the stable heads of the rarest regime.
std::vector<ClaimRow> regimes_claims(const RegimeLabels& labels, const std::string& units);

// C4 "a small-N regime of strongest non-trivial separability", one row per F-score: yes if the
// argmax's interval ends at ≤ kSmallNShare · n, no if it starts above, can't tell otherwise.
ClaimRow separability_claim(const SeparabilityPeak& peak, int context, const std::string& units);

// C5, Assumptions 1–3, a row each: the share of heads where the assumption holds (A1 and A2
// over the `counted` heads: value-state properties; A3 over every head) with its
// Clopper–Pearson interval: yes if the interval lies above kMostHeads, no if below, can't tell
// otherwise.
std::vector<ClaimRow> assumption_claims(const std::vector<theory::AssumptionCheck>& checks,
                                        const std::vector<char>& counted);

// C6 "geometry predicts what attention can drop", one row per (policy, renorm) of a truncate
// folder's link_summary.json: yes if a best predictor survives Holm's adjustment, no if the
// strongest adjusted interval lies within ±kNegligibleLink, can't tell otherwise.
std::vector<ClaimRow> truncation_claims(const nlohmann::json& link_summary);

// The exact Clopper–Pearson 95 % interval of k successes in n trials; NaN for n ≤ 0.
std::pair<double, double> clopper_pearson(int k, int n);

// claims.csv: claim,statement,variant,answer,quantity,value,ci_lo,ci_hi,units,rule,detail.
// std::domain_error when a text field holds a comma or a line break.
std::string claims_csv(const std::vector<ClaimRow>& rows);

}  // namespace attngeo::compare
