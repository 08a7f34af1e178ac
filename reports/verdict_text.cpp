// The judged verdict's words; see verdict_text.hpp. A bottom line first (what holds, what is
// informative and why not, where the theorems' hypotheses hold), the table, then per variant
// only the sentences that are not the same for every variant.
#include "reports/verdict_text.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <set>
#include <sstream>

#include "common/manifest_values.hpp"
#include "reports/report.hpp"

namespace attngeo::reports {

namespace verdict_words {

std::string join(const std::vector<std::string>& words) {
    std::string out;
    for (std::size_t i = 0; i < words.size(); ++i) {
        if (i > 0) out += i + 1 == words.size() ? " and " : ", ";
        out += words[i];
    }
    return out;
}

std::string digits(double x, int significant) {
    if (std::isnan(x)) return "nan";
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%.*g", significant, x);
    return buffer;
}

std::string side_label(const VerdictSide& row) {
    return row.metric + " " + row.side;
}

}  // namespace verdict_words

using verdict_words::digits;
using verdict_words::join;
using verdict_words::side_label;

std::string size_ranges_text(const std::string& sizes, std::size_t shown) {
    std::vector<std::string> items;
    std::stringstream list(sizes);
    for (std::string item; std::getline(list, item, ';');) {
        if (item.empty()) continue;
        const std::size_t dash = item.find('-');
        items.push_back(
            dash == std::string::npos ? item : item.substr(0, dash) + "–" + item.substr(dash + 1));
    }
    if (items.size() > shown) {
        items.resize(shown);
        items.back() = "…";
    }
    return join(items);
}

namespace {

std::string number3(double x) {
    return digits(x, 3);
}

// "K of M" with M the non-convention points.
std::string of_points(int count, const VerdictSide& r) {
    return std::to_string(count) + " of " + std::to_string(r.points);
}

// The rows of one side (metric, side), in variant order.
using SideGroups = std::vector<std::pair<std::string, std::vector<const VerdictSide*>>>;
SideGroups group_by_side(const std::vector<VerdictSide>& rows) {
    SideGroups groups;
    for (const VerdictSide& r : rows) {
        const std::string key = side_label(r);
        auto it = std::find_if(groups.begin(), groups.end(),
                               [&](const auto& g) { return g.first == key; });
        if (it == groups.end()) it = groups.insert(groups.end(), {key, {}});
        it->second.push_back(&r);
    }
    return groups;
}

// "P lower of every variant" or "P lower of paper and corrected": the sides for which `pick`
// holds, grouped so each side is named once.
using SideDetail = std::function<std::string(const VerdictSide&)>;
// `merged` (may be empty) says the details of several variants at once when they differ.
std::vector<std::string> sides_where(
    const SideGroups& groups, std::size_t variants,
    const std::function<bool(const VerdictSide&)>& pick, const SideDetail& detail,
    const std::function<std::string(const std::vector<const VerdictSide*>&)>& merged = nullptr) {
    std::vector<std::string> out;
    for (const auto& [key, members] : groups) {
        std::vector<std::string> names, details;
        std::vector<const VerdictSide*> picked;
        for (const VerdictSide* r : members) {
            if (!pick(*r)) continue;
            picked.push_back(r);
            names.push_back("<code>" + html_escape(r->variant) + "</code>");
            const std::string d = detail ? detail(*r) : "";
            if (std::find(details.begin(), details.end(), d) == details.end()) details.push_back(d);
        }
        if (names.empty()) continue;
        if (details.size() > 1 && merged) details = {merged(picked)};
        std::string item = key + (names.size() == variants && variants > 1 ? " of every variant"
                                                                           : " of " + join(names));
        std::string said;
        for (const std::string& d : details)
            if (!d.empty()) said += (said.empty() ? "" : "; ") + d;
        if (!said.empty()) item += " (" + said + ")";
        out.push_back(item);
    }
    return out;
}

std::size_t variant_count(const std::vector<VerdictSide>& rows) {
    std::set<std::string> names;
    for (const VerdictSide& r : rows)
        names.insert(r.variant);
    return names.size();
}

// Why a side's points fail to say anything: every reason that applies, the commonest first.
std::string why_uninformative(const VerdictSide& r) {
    if (r.points == 0) return "only convention points";
    std::vector<std::pair<int, std::string>> reasons = {
        {r.at_limit_points, r.metric == "P" && r.side == "lower"
                                ? "at or below the floor P ≥ N/n"
                                : (r.side == "lower" ? "at or below 0" : "at or above 1")},
        {r.n_only_points, r.side == "lower"
                              ? "a function of N alone (Δ ≤ 0: every tail factor is 1)"
                              : (r.metric == "P" ? "1 − 1/(2(N+1)), a function of N alone (ξ ≤ 0)"
                                                 : "1/2, a function of N alone (ξ ≤ 0)")},
        {r.violations, "violated"}};
    std::stable_sort(reasons.begin(), reasons.end(),
                     [](const auto& a, const auto& b) { return a.first > b.first; });
    std::vector<std::string> said;
    for (const auto& [count, text] : reasons)
        if (count > 0) said.push_back(text + " at " + of_points(count, r));
    if (said.empty()) return std::to_string(r.informative_points) + " informative";
    return join(said);
}

// "2 violations", "1 violation".
std::string counted(int count, const std::string& noun) {
    return std::to_string(count) + " " + noun + (count == 1 ? "" : "s");
}

std::string hold_sentence(const std::vector<VerdictSide>& rows, const SideGroups& groups,
                          std::size_t variants) {
    int within = 0;
    for (const VerdictSide& r : rows)
        within += r.within_allowance;
    const VerdictSide& any = rows.front();
    std::ostringstream s;
    s << "<b>Hold.</b> " << within << " of " << rows.size()
      << " sides stay within the violations chance allows (a point violates when its whole 95 % "
         "interval lies beyond the bound; the allowance, the 95 % quantile of Binomial(M, "
         "0.025), is "
      << any.violations_allowed << " of M = " << any.points << " points). ";
    const auto over = sides_where(
        groups, variants, [](const VerdictSide& r) { return !r.within_allowance; },
        [](const VerdictSide& r) {
            return counted(r.violations, "violation") + " at best, largest excess " +
                   number3(r.largest_excess);
        });
    if (!over.empty()) s << "No κ keeps " << join(over) << " within it. ";
    const auto contradicted = sides_where(
        groups, variants, [](const VerdictSide& r) { return r.identity_contradicted > 0; },
        nullptr);
    if (!contradicted.empty())
        s << "<span class=\"bad\">Contradicted by construction:</span> at N = 1 "
          << join(contradicted)
          << " lies below the identity P(r<sub>max</sub>, 1) = R(r<sub>min</sub>, 1) = 1, a "
             "defect of the formula, not noise. ";
    return s.str();
}

std::string informative_sentence(const SideGroups& groups, std::size_t variants,
                                 const std::string& points) {
    std::ostringstream s;
    s << "<b>Informative</b> (at κ*, ≥ 5 % of the " << points
      << " strictly beyond what every geometry guarantees — N/n ≤ P ≤ 1, 0 ≤ R ≤ 1 — not "
         "violated and not a function of N alone): ";
    const auto yes = sides_where(
        groups, variants, [](const VerdictSide& r) { return r.informative; },
        [](const VerdictSide& r) {
            std::string d = of_points(r.informative_points, r);
            const std::string at = size_ranges_text(r.informative_sizes);
            if (!at.empty()) d += " at N = " + at;
            return d;
        },
        [](const std::vector<const VerdictSide*>& sides) {
            int lo = sides.front()->informative_points, hi = lo;
            for (const VerdictSide* r : sides)
                lo = std::min(lo, r->informative_points), hi = std::max(hi, r->informative_points);
            return std::to_string(lo) + "–" + std::to_string(hi) + " of " +
                   std::to_string(sides.front()->points) + " by variant";
        });
    s << (yes.empty() ? "no side" : join(yes)) << ". ";
    const auto no = sides_where(
        groups, variants, [](const VerdictSide& r) { return !r.informative; }, why_uninformative);
    if (!no.empty()) s << "Not informative: " << join(no) << ". ";
    return s.str();
}

// Theorem 1's hypotheses from the manifest's per-variant counts, said once when every variant
// has the same (Δ does not depend on the variant).
std::string hypotheses_sentence(const std::map<std::string, VariantFacts>& facts) {
    std::set<std::string> texts;
    for (const auto& [variant, f] : facts) {
        const nlohmann::json& h = f.hypotheses;  // checked by variant_facts_of
        const int M = h.at("points").get<int>(), delta = h.at("delta_positive").get<int>();
        const int sink = h.at("sink_points").get<int>(),
                  delta0 = h.at("delta0_positive").get<int>();
        std::ostringstream s;
        s << "Theorem 1's hypothesis Δ &gt; 0 holds at " << delta << " of " << M << " points";
        if (delta == 0) s << ": <span class=\"bad\">the theorem applies nowhere</span>";
        if (sink > 0)
            s << "; Δ<sub>0</sub> &gt; 0 (the sink term) at " << delta0 << " of the " << sink
              << " with the sink selected";
        texts.insert(s.str() + ". ");
    }
    if (texts.size() != 1) return "";
    return "<b>Hypotheses.</b> " + *texts.begin();
}

std::string conventions_sentence(const std::vector<VerdictSide>& rows) {
    const VerdictSide& r = rows.front();
    if (r.convention_points == 0) return "";
    return "Set apart from every count: " + std::to_string(r.convention_points) +
           " convention point" + (r.convention_points == 1 ? "" : "s") +
           " (N = n, or N = 1 with the sink ranked first), where every bound is 1 by definition. ";
}

// ---- The per-variant sentences (without the variant's name, so equal ones can be merged).

std::string kappa_cell(const VerdictSide& r) {
    if (r.kappa_free) return "—";
    if (r.saturates == "above") return "≥ " + digits(r.kappa_star, 4);
    if (r.saturates == "below") return "≤ " + digits(r.kappa_star, 4);
    return digits(r.kappa_star, 4);
}

// The per-variant paragraphs: sentences every variant shares once ("every variant"), then per
// variant only its own.
std::string per_variant_html(const std::vector<VerdictSide>& rows,
                             const std::map<std::string, VariantFacts>& facts,
                             const std::string& points, const VariantSentences& sentences_of) {
    const std::string mark = "\x01";  // the variant's name until it is known
    std::vector<std::pair<std::string, std::vector<std::string>>> said;
    for (const auto& variant : variant_names()) {
        std::vector<VerdictSide> mine;
        for (const VerdictSide& r : rows)
            if (r.variant == variant) mine.push_back(r);
        if (mine.empty()) continue;
        const auto it = facts.find(variant);
        said.push_back(
            {variant,
             sentences_of(mark, mine, it != facts.end() ? it->second : VariantFacts{}, points)});
    }
    std::vector<std::string> common;
    if (said.size() > 1)
        for (const std::string& sentence : said.front().second)
            if (std::all_of(said.begin(), said.end(), [&](const auto& v) {
                    return std::find(v.second.begin(), v.second.end(), sentence) != v.second.end();
                }))
                common.push_back(sentence);
    auto named = [&](std::string text, const std::string& name) {
        for (std::size_t at; (at = text.find("<code>" + mark + "</code>")) != std::string::npos;)
            text.replace(at, mark.size() + 13, name);
        for (std::size_t at; (at = text.find(mark)) != std::string::npos;)
            text.replace(at, mark.size(), name);
        return text;
    };
    std::ostringstream out;
    if (!common.empty()) {
        out << "<p><b>Every variant</b>: ";
        for (const std::string& sentence : common)
            out << named(sentence, "every variant");
        out << "</p>\n";
    }
    for (const auto& [variant, sentences] : said) {
        std::string body;
        for (const std::string& sentence : sentences)
            if (std::find(common.begin(), common.end(), sentence) == common.end())
                body += named(sentence, "<code>" + html_escape(variant) + "</code>");
        if (!body.empty())
            out << "<p><b><code>" << html_escape(variant) << "</code></b>: " << body << "</p>\n";
    }
    return out.str();
}

std::vector<std::vector<std::string>> table_cells(const std::vector<VerdictSide>& rows) {
    std::vector<std::vector<std::string>> cells;
    for (const VerdictSide& r : rows) {
        const std::string violations =
            std::to_string(r.violations) + " / " + std::to_string(r.violations_allowed);
        cells.push_back(
            {html_escape(r.variant), r.metric, r.side, kappa_cell(r),
             r.within_allowance ? violations : "<span class=\"bad\">" + violations + "</span>",
             std::isnan(r.kappa_zero) ? "none" : digits(r.kappa_zero, 4), digits(r.mean_gap, 4),
             digits(r.mean_width, 4),
             (r.informative ? "" : "<span class=\"bad\">") + of_points(r.informative_points, r) +
                 (r.informative ? "" : "</span>"),
             std::to_string(r.at_limit_points), std::to_string(r.n_only_points),
             r.identity_contradicted > 0
                 ? "<span class=\"bad\">" + std::to_string(r.identity_contradicted) + "</span>"
                 : "0"});
    }
    return cells;
}

// " (strongest: layer 0 head 2, 61 % of the last query's attention on position 0; …)" from the
// block's strongest_sinks ("" when it lists none).
std::string where_sinks_are(const nlohmann::json& assumptions) {
    std::string text;
    for (const nlohmann::json& h : assumptions.at("strongest_sinks")) {
        const bool first = text.empty();
        text += first ? " (strongest: " : "; ";
        text += "layer " + std::to_string(h.at("layer").get<int>()) + " head " +
                std::to_string(h.at("head").get<int>()) + ", " +
                number3(100 * h.at("sink_mass").get<double>()) + " %";
        if (first) text += " of the last query's attention on position 0";
    }
    return text.empty() ? "" : text + ")";
}

}  // namespace

std::string assumptions_opening(const nlohmann::json& manifest) {
    const nlohmann::json& a = manifest.at("assumptions");
    auto count = [&](const char* key) { return a.at(key).get<int>(); };
    const int heads = count("heads");
    auto of = [&](const char* key) {
        return std::to_string(count(key)) + " of " + std::to_string(heads);
    };
    std::ostringstream s;
    s << "<p><b>Assumptions, checked where they are applied.</b> A1 (a compressed sink, λ &lt; 1, "
         "and stable norms, CV ≤ 0.05) holds in "
      << of("A1_holds") << " heads (λ &lt; 1 in " << count("compressed_sink") << ", CV ≤ 0.05 in "
      << count("stable_norms")
      << "); A2 (e<sup>−βk</sup> beats a constant and β = ∞ by ≥ 20 % "
         "in MAE) in "
      << of("A2_holds") << " (β uninformative in " << count("beta_uninformative")
      << "); A3 (a "
         "sink, profile R² ≥ 0.9 on log α, nothing clamped or unidentified) in "
      << of("A3_holds") << " (";
    if (count("sink_exists") == 0)
        s << "<span class=\"bad\">no head has a sink</span>";
    else
        s << "a sink in " << count("sink_exists") << where_sinks_are(a);
    if (!a.at("median_sink_mass").is_null())
        s << ", median sink mass " << number3(a.at("median_sink_mass").get<double>());
    s << "). ";
    if (count("A1_holds") < heads || count("A2_holds") < heads || count("A3_holds") < heads)
        s << "The bounds below are drawn from every head's fits, those that failed their check "
             "included (assumptions.csv names them). ";
    s << "</p>\n";
    return s.str();
}

std::vector<std::string> kappa_star_sentences(const VerdictSide& r) {
    std::vector<std::string> out;
    if (r.kappa_free) return out;
    if (!r.saturates.empty())
        out.push_back("κ* of " + side_label(r) + " reads any κ " +
                      (r.saturates == "above" ? "≥ " : "≤ ") + number3(r.kappa_star) +
                      ": the bound stops changing there. ");
    if (r.at_grid_edge)
        out.push_back("κ* of " + side_label(r) + " sits at the edge of the grid (κ = " +
                      number3(r.kappa_star) + "): it keeps tightening beyond it. ");
    if (r.violations > 0 && !std::isnan(r.kappa_zero))
        out.push_back(side_label(r) + ": κ* = " + number3(r.kappa_star) + " leaves " +
                      counted(r.violations, "violation") + " (mean gap " + number3(r.mean_gap) +
                      "); the tightest violation-free κ₀ = " + number3(r.kappa_zero) +
                      " costs a mean gap of " + number3(r.gap_at_kappa_zero) + ". ");
    if (r.violations > 0 && std::isnan(r.kappa_zero))
        out.push_back(side_label(r) + ": every scanned κ leaves a violation; κ* = " +
                      number3(r.kappa_star) + " leaves " + counted(r.violations, "violation") +
                      " of the " + std::to_string(r.violations_allowed) + " allowed. ");
    return out;
}

std::string interval_score_sentence(const VariantFacts& facts) {
    const nlohmann::json& is = facts.interval_score;  // checked by variant_facts_of
    // No κ scores finitely when no point has an envelope to score (nothing to say then).
    if (!std::isfinite(json_number_value(is.at("kappa")))) return "";
    auto number = [&](const char* key) { return number3(json_number_value(is.at(key))); };
    return "One κ for all four sides (smallest mean interval score, Gneiting &amp; "
           "Raftery 2007): κ = " +
           number("kappa") + ", coverage " + number("coverage") + ", mean width " +
           number("mean_width") + ", " + number("violations") + " violations. ";
}

std::string realised_assumptions_opening(const nlohmann::json& point) {
    if (!point.contains("assumptions")) return "";  // d = ∞: nothing is realised
    const nlohmann::json& a = point.at("assumptions");
    const nlohmann::json& values = a.at("values");
    auto holds = [&](const char* key) {
        return a.at(key).get<int>() > 0 ? std::string("holds")
                                        : std::string("<span class=\"bad\">fails</span>");
    };
    // A number, or a non-finite one as json_number writes it ("nan", "inf"): shown as "?".
    auto value = [&](const char* key) {
        const nlohmann::json& v = values.at(key);
        if (v.is_number()) return number3(v.get<double>());
        (void)v.get<std::string>();  // anything else is a type error naming the key
        return std::string("?");
    };
    std::ostringstream s;
    s << "<p><b>Assumptions, checked on what the generator realised.</b> A1 " << holds("A1_holds")
      << " (λ = " << value("lambda") << ", CV = " << value("cv") << "); A2 " << holds("A2_holds")
      << " (MAE of the expected cosines " << value("mae_model") << " against "
      << value("mae_constant") << " for the best constant and " << value("mae_zero")
      << " for 0); A3 " << holds("A3_holds") << " (p<sub>sink</sub> = " << value("p_sink")
      << " against p<sub>base</sub> = " << value("p_base") << ").</p>\n";
    return s.str();
}

std::string judged_verdict_html(const std::vector<VerdictSide>& rows,
                                const std::map<std::string, VariantFacts>& facts,
                                const std::string& points, const std::string& opening,
                                const VariantSentences& sentences_of) {
    const SideGroups groups = group_by_side(rows);
    const std::size_t variants = variant_count(rows);
    std::ostringstream out;
    out << "<div class=\"bottom-line\">" << opening << "<p>"
        << hold_sentence(rows, groups, variants) << "</p>\n<p>"
        << informative_sentence(groups, variants, points) << "</p>\n<p>"
        << hypotheses_sentence(facts) << conventions_sentence(rows) << "</p></div>\n";
    out << "<p>Per side: κ* is the tightest κ (smallest mean gap to the estimate) whose "
           "violations stay within the chance allowance (docs/design.md §7); κ₀ the tightest "
           "with none. Every count is out of the M = "
        << rows.front().points << " non-convention " << points
        << "; at limit: bound at or beyond N/n ≤ P ≤ 1, 0 ≤ R ≤ 1; N alone: a degeneracy "
           "makes the bound a function of N.</p>\n"
        << "<div style=\"overflow-x: auto; font-size: .85em\">"
        << html_table({"variant", "metric", "side", "κ*", "violations / allowed", "κ₀", "mean gap",
                       "mean width", "informative", "at limit", "N alone", "below identity"},
                      table_cells(rows))
        << "</div>\n"
        << per_variant_html(rows, facts, points, sentences_of);
    return out.str();
}

}  // namespace attngeo::reports
