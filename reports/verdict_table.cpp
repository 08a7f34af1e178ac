// The judged verdict of one run below its bottom line: the table of every variant × side
// (state, κ set, κ_edge, the worst and the persistent points, informativeness, the split) and
// per variant only the sentences that are not the same for every variant.
#include <algorithm>
#include <cmath>
#include <functional>
#include <sstream>

#include "reports/html.hpp"
#include "reports/verdict_text.hpp"

namespace attngeo::reports {
namespace {

using verdict_words::digits;
using verdict_words::join;
using verdict_words::side_label;

std::string number3(double x) {
    return digits(x, 3);
}
std::string number4(double x) {
    return std::isnan(x) ? std::string("–") : digits(x, 4);
}

std::string bad(const std::string& text) {
    return "<span class=\"bad\">" + text + "</span>";
}

// ---- The per-variant sentences (the variant's name as a mark, so equal ones can be merged).

// The κ-free sides of one kind (lower or upper): they say nothing about κ.
std::string kappa_free_sentence(const std::string& variant, const std::vector<VerdictSide>& rows,
                                const std::string& side, const std::string& points) {
    std::vector<std::string> metrics;
    bool n_only = true;
    for (const auto& r : rows)
        if (r.side == side && r.kappa_free) {
            metrics.push_back(r.metric);
            n_only = n_only && r.points > 0 && r.n_only_points == r.points;
        }
    if (metrics.empty()) return "";
    const bool plural = metrics.size() > 1;
    std::ostringstream s;
    s << "The " << join(metrics) << " " << side << " bound" << (plural ? "s" : "") << " of <code>"
      << html_escape(variant) << "</code> " << (plural ? "are" : "is")
      << " κ-free (unchanged over the whole scanned grid)";
    if (n_only) s << ", a function of N alone at all " << rows.front().points << " " << points;
    s << "; " << (plural ? "they say" : "it says") << " nothing about κ. ";
    return s.str();
}

// The sides that move with κ, but by at most 1e-3 anywhere: where and by how much.
std::string nearly_kappa_free_sentence(const std::string& variant,
                                       const std::vector<VerdictSide>& rows,
                                       const std::string& points) {
    std::ostringstream s;
    for (const auto& r : rows) {
        if (!r.nearly_kappa_free) continue;
        s << "The " << side_label(r) << " bound of <code>" << html_escape(variant)
          << "</code> is nearly κ-free, not κ-free: over κ ∈ [10<sup>−8</sup>, 10<sup>8</sup>] "
             "it moves at "
          << r.points_moving << " of " << r.points << " " << points << ", by at most "
          << number3(r.largest_move) << ". ";
    }
    return s.str();
}

// Each side in words: its state, κ set and κ_edge.
std::string side_sentence(const VerdictSide& r) {
    std::ostringstream s;
    s << side_label(r) << " " << state_words(r.state);
    if (r.state == "holds" || r.state == "holds-uninformative") {
        s << " for " << kappa_set_words(r.kappa_set);
        if (!std::isnan(r.kappa_edge))
            s << " (κ_edge = " << number3(r.kappa_edge) << ", mean gap " << number3(r.gap_at_edge)
              << ")";
        else if (r.kappa_free)
            s << " (κ-free: no κ_edge)";
    } else if (r.state == "falsified-at-given-kappa") {
        s << " " << number3(r.kappa_judged) << "; consistent for " << kappa_set_words(r.kappa_set);
    }
    s << ". ";
    return s.str();
}

// What the split says beyond replication: the first half's κ_edge judged on the second.
std::string split_detail(const VerdictSide& r) {
    if (r.falsified_on_second_half != 1 || std::isnan(r.kappa_edge_first_half)) return "";
    return side_label(r) + ": the first half's κ_edge = " + number3(r.kappa_edge_first_half) +
           " is falsified on the second half (mean gap " + number3(r.gap_on_second_half) +
           "; κ_edge is where the first half's band touches the bound, so this happens about "
           "half the time for a tight bound that holds). ";
}

std::string inverted_sentence(const VariantFacts& facts) {
    std::vector<std::string> parts;
    for (const char* metric : {"P", "R"}) {
        const auto it = facts.inverted_at.find(metric);
        if (it == facts.inverted_at.end() || it->second.empty()) continue;
        std::string sizes;
        const std::size_t shown = std::min<std::size_t>(it->second.size(), 8);
        for (std::size_t i = 0; i < shown; ++i)
            sizes += (i ? ", " : "") + std::to_string(it->second[i]);
        if (shown < it->second.size())
            sizes += ", … (" + std::to_string(it->second.size()) + " N in all)";
        parts.push_back(std::string(metric) + " at N = " + sizes);
    }
    if (parts.empty()) return "";
    return bad("The envelope at the judged κ is inverted (lower > upper)") + " for " + join(parts) +
           ". ";
}

std::string rows_kappa_sentence(const VariantFacts& facts) {
    if (facts.rows_rule == "joint")
        return "The bound rows (bounds.csv's <code>kappa</code>) use one κ for all four sides: "
               "κ = " +
               number3(facts.rows_kappa) + ", consistent on all four with the smallest mean gaps. ";
    if (facts.rows_rule == "given")
        return "κ was given (<code>--kappa</code>): every side is judged at it; the scan shows "
               "what other κ would give. ";
    if (facts.rows_rule == "kappa-irrelevant") return "";
    return "No κ is consistent on all four sides: the bound rows leave <code>kappa</code> empty "
           "and each side is shown at its own judged κ. ";
}

std::vector<std::string> judged_sentences(const std::string& variant,
                                          const std::vector<VerdictSide>& rows,
                                          const VariantFacts& facts, const std::string& points) {
    std::vector<std::string> out;
    auto add = [&](const std::string& text) {
        if (!text.empty()) out.push_back(text);
    };
    for (const VerdictSide& r : rows)
        add(side_sentence(r));
    if (facts.kappa_irrelevant) {
        add("At d = ∞ the bounds are taken at κd = ∞, so no side depends on κ: κ_edge is "
            "arbitrary and κ-free says nothing about the margins. ");
    } else {
        add(kappa_free_sentence(variant, rows, "lower", points));
        add(kappa_free_sentence(variant, rows, "upper", points));
        add(nearly_kappa_free_sentence(variant, rows, points));
    }
    for (const VerdictSide& r : rows)
        add(split_detail(r));
    add(inverted_sentence(facts));
    add(rows_kappa_sentence(facts));
    return out;
}

// The per-variant paragraphs: sentences every variant shares once ("every variant"), then per
// variant only its own.
std::string per_variant_html(const std::vector<VerdictSide>& rows,
                             const std::map<std::string, VariantFacts>& facts,
                             const std::string& points) {
    const std::string mark = "\x01";  // the variant's name until it is known
    std::vector<std::pair<std::string, std::vector<std::string>>> said;
    for (const auto& variant : variant_names()) {
        std::vector<VerdictSide> mine;
        for (const VerdictSide& r : rows)
            if (r.variant == variant) mine.push_back(r);
        if (mine.empty()) continue;
        const auto it = facts.find(variant);
        said.push_back(
            {variant, judged_sentences(mark, mine, it != facts.end() ? it->second : VariantFacts{},
                                       points)});
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

// ---- The table.

std::string worst_cell(const VerdictSide& r) {
    if (r.worst_N < 0) return "–";
    std::string where = "N = " + std::to_string(r.worst_N);
    if (r.worst_layer >= 0)
        where =
            "L" + std::to_string(r.worst_layer) + " H" + std::to_string(r.worst_head) + " " + where;
    return where;
}

std::string split_cell(const VerdictSide& r) {
    if (r.replicates < 0) return "–";
    return r.replicates == 1 ? "replicates" : bad("does not");
}

std::vector<std::string> table_row(const VerdictSide& r) {
    const std::string state = side_falsified(r) ? bad(r.state) : r.state;
    const std::string informative =
        std::to_string(r.informative_points) + " of " + std::to_string(r.points);
    return {
        html_escape(r.variant),
        r.metric,
        r.side,
        state,
        html_escape(r.kappa_set),
        number4(r.kappa_edge),
        number4(r.gap_at_edge),
        number4(r.kappa_judged),
        std::to_string(r.falsified_at_judged) + " / " + std::to_string(r.contradicted_at_judged),
        worst_cell(r),
        number4(r.worst_z),
        number4(r.worst_excess),
        r.persistent_points > 0 ? bad(size_ranges_text(r.persistent_sizes)) : "–",
        number4(r.critical_value),
        side_informative(r) ? informative : "<span class=\"dim\">" + informative + "</span>",
        std::to_string(r.at_limit_points),
        std::to_string(r.n_only_points),
        split_cell(r)};
}

std::string table_html(const std::vector<VerdictSide>& rows, const VerdictWords& words) {
    std::vector<std::vector<std::string>> cells;
    for (const VerdictSide& r : rows)
        cells.push_back(table_row(r));
    std::ostringstream out;
    out << "<p>Per side (docs/design.md §7): a point is <i>falsified</i> at κ when the "
           "simultaneous band lies wholly beyond its bound; the κ set is the κ with no "
           "falsified or contradicted point (a 95 % confidence set), κ_edge its tightest "
           "envelope. The worst point and z (excess over its standard error) are those at the "
           "judged κ (κ_edge, the given κ, or for an empty set the κ with the fewest falsified "
           "points); \"falsified at every κ\" lists the N that no κ saves. Every count is out of "
           "the M = "
        << rows.front().points << " non-convention " << words.points
        << "; informative: at least 0.01 inside the trivial range N/n ≤ P ≤ 1, 0 ≤ R ≤ 1, not "
           "falsified, not an identity and not a function of N alone (a side is informative "
           "when ≥ 5 % of its points are); at limit: the bound within 0.01 of that range; N "
           "alone: a degeneracy makes the bound a function of N. Split: each half of the units "
           "scanned alone; a side replicates when both halves reach the same class and, both "
           "consistent, their κ sets meet. The information share is the mean over points of "
           "the share of the trivial range the envelope rules out.</p>\n"
        << "<div style=\"overflow-x: auto; font-size: .85em\">"
        << html_table({"variant", "metric", "side", "state", "κ set", "κ_edge", "gap at κ_edge",
                       "judged κ", "falsified / contradicted there", "worst point", "z", "excess",
                       "falsified at every κ", "critical value", "informative", "at limit",
                       "N alone", "split"},
                      cells)
        << "</div>\n";
    return out.str();
}

}  // namespace

std::string judged_verdict_html(const std::vector<VerdictSide>& rows,
                                const std::map<std::string, VariantFacts>& facts,
                                const VerdictWords& words, const std::string& opening,
                                const std::string& closing) {
    return bottom_line_block(rows, facts, words, opening, closing) + table_html(rows, words) +
           per_variant_html(rows, facts, words.points);
}

}  // namespace attngeo::reports
