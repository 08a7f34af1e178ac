// The verdict's words and its bottom line; see verdict_text.hpp. The bottom line says, across
// every variant, the states, the falsified and contradicted sides with their points, the
// informative sides, the information share and the split replication — each from verdict.csv.
#include "reports/verdict_text.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <set>
#include <sstream>

#include "common/manifest_values.hpp"
#include "reports/html.hpp"

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

std::vector<int> expand_sizes(const std::string& sizes) {
    std::vector<int> out;
    std::stringstream list(sizes);
    for (std::string item; std::getline(list, item, ';');) {
        if (item.empty()) continue;
        const std::size_t dash = item.find('-');
        const int first = std::stoi(item.substr(0, dash));
        const int last = dash == std::string::npos ? first : std::stoi(item.substr(dash + 1));
        for (int N = first; N <= last; ++N)
            out.push_back(N);
    }
    return out;
}

std::string band_text(const std::string& method, int units, const std::string& unit_noun) {
    const std::string over = " over " + std::to_string(units) + " " + unit_noun;
    if (method == "bootstrap-t") return "bootstrap-t" + over;
    if (method == "multiplier-bootstrap") return "multiplier bootstrap" + over;
    if (method == "holm") return "Holm" + over;
    if (method == "exact") return "exact values (d = ∞: no sampling error)";
    return "no band (" + std::to_string(units) + " " + unit_noun + ": nothing can be falsified)";
}

std::string state_words(const std::string& state) {
    if (state == "holds") return "holds";
    if (state == "holds-uninformative") return "holds but says little";
    if (state == "falsified-every-kappa") return "falsified for every κ";
    if (state == "kappa-free-falsified") return "falsified for every κ (κ-free)";
    if (state == "contradicted-by-construction") return "contradicted by construction";
    if (state == "falsified-at-given-kappa") return "falsified at the given κ";
    return "untestable";
}

std::string kappa_set_words(const std::string& kappa_set) {
    if (kappa_set == "any") return "any κ";
    if (kappa_set == "none" || kappa_set.empty()) return "no κ";
    std::vector<std::string> runs;
    std::size_t from = 0;
    while (from <= kappa_set.size()) {
        const std::size_t bar = kappa_set.find(" | ", from);
        const std::string run = kappa_set.substr(from, bar == std::string::npos ? bar : bar - from);
        const std::size_t dots = run.find("..");
        if (run.rfind(">=", 0) == 0)
            runs.push_back("κ ≥ " + run.substr(2));
        else if (run.rfind("<=", 0) == 0)
            runs.push_back("κ ≤ " + run.substr(2));
        else if (dots != std::string::npos)
            runs.push_back("κ in [" + run.substr(0, dots) + ", " + run.substr(dots + 2) + "]");
        else
            runs.push_back("κ = " + run);
        if (bar == std::string::npos) break;
        from = bar + 3;
    }
    std::string out;
    for (std::size_t i = 0; i < runs.size(); ++i)
        out += (i ? " or " : "") + runs[i];
    return out;
}

namespace {

std::string number3(double x) {
    return digits(x, 3);
}

// Items that may contain "and" themselves, joined by semicolons.
std::string semicolons(const std::vector<std::string>& items) {
    std::string out;
    for (std::size_t i = 0; i < items.size(); ++i)
        out += (i ? "; " : "") + items[i];
    return out;
}

std::string code_of(const std::string& variant) {
    return "<code>" + html_escape(variant) + "</code>";
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

std::size_t variant_count(const std::vector<VerdictSide>& rows) {
    std::set<std::string> names;
    for (const VerdictSide& r : rows)
        names.insert(r.variant);
    return names.size();
}

// "P upper of paper and scale-invariant (detail)": the sides for which `pick` holds, each side
// named once with the variants whose detail is the same.
std::vector<std::string> sides_where(const SideGroups& groups, std::size_t variants,
                                     const std::function<bool(const VerdictSide&)>& pick,
                                     const std::function<std::string(const VerdictSide&)>& detail) {
    std::vector<std::string> out;
    for (const auto& [key, members] : groups) {
        // detail → the variants that share it, in variant order
        std::vector<std::pair<std::string, std::vector<std::string>>> by_detail;
        for (const VerdictSide* r : members) {
            if (!pick(*r)) continue;
            const std::string d = detail ? detail(*r) : "";
            auto it = std::find_if(by_detail.begin(), by_detail.end(),
                                   [&](const auto& p) { return p.first == d; });
            if (it == by_detail.end()) it = by_detail.insert(by_detail.end(), {d, {}});
            it->second.push_back(code_of(r->variant));
        }
        for (const auto& [d, names] : by_detail) {
            std::string item =
                key + (names.size() == variants && variants > 1 ? " of every variant"
                                                                : " of " + join(names));
            if (!d.empty()) item += " " + d;
            out.push_back(item);
        }
    }
    return out;
}

// "N = 4" or "layer 1 head 2, N = 2": where the worst point is.
std::string worst_where(const VerdictSide& r) {
    std::string where = "N = " + std::to_string(r.worst_N);
    if (r.worst_layer >= 0)
        where = "layer " + std::to_string(r.worst_layer) + " head " + std::to_string(r.worst_head) +
                ", " + where;
    return where;
}

std::string worst_text(const VerdictSide& r) {
    if (r.worst_N < 0) return "";
    return "worst " + worst_where(r) + ": z = " + number3(r.worst_z) + ", excess " +
           number3(r.worst_excess);
}

// Where a side stays falsified at every κ: "at N = 3 (z = 25.9) and N = 4 (z = 69.5)" when the
// run gives each N's z, else "at N = 2–5"; `count` gets "3 points" where points are (head, N).
std::string persistent_text(const VerdictSide& r, const VerdictWords& words, std::string& count) {
    if (r.persistent_points == 0) return "";
    const std::vector<int> sizes = expand_sizes(r.persistent_sizes);
    const auto variant = words.z_by_size.find(r.variant);
    if (variant != words.z_by_size.end() && sizes.size() <= 4) {
        const auto side = variant->second.find(side_label(r));
        std::vector<std::string> items;
        for (int N : sizes) {
            std::string item = "N = " + std::to_string(N);
            if (side != variant->second.end() && side->second.count(N))
                item += " (z = " + number3(side->second.at(N)) + ")";
            items.push_back(item);
        }
        return "at " + join(items);
    }
    if (words.points != "N")
        count =
            std::to_string(r.persistent_points) + (r.persistent_points == 1 ? " point" : " points");
    return "at N = " + size_ranges_text(r.persistent_sizes);
}

// The states of each variant counted: "paper 2 hold but say little, 2 falsified for every κ
// (1 κ-free)"; the κ-free falsified sides are counted with the falsified ones.
std::string state_counts(const std::vector<VerdictSide>& rows, const std::string& variant) {
    static const std::vector<std::pair<std::string, std::pair<const char*, const char*>>> words = {
        {"holds", {"holds", "hold"}},
        {"holds-uninformative", {"holds but says little", "hold but say little"}},
        {"falsified-every-kappa", {"falsified for every κ", "falsified for every κ"}},
        {"contradicted-by-construction",
         {"contradicted by construction", "contradicted by construction"}},
        {"falsified-at-given-kappa", {"falsified at the given κ", "falsified at the given κ"}},
        {"untestable", {"untestable", "untestable"}}};
    std::vector<std::string> parts;
    for (const auto& [state, forms] : words) {
        int count = 0, kappa_free = 0;
        for (const VerdictSide& r : rows) {
            if (r.variant != variant) continue;
            const bool free_falsified = r.state == "kappa-free-falsified";
            count += r.state == state || (free_falsified && state == "falsified-every-kappa");
            kappa_free += free_falsified && state == "falsified-every-kappa";
        }
        if (count == 0) continue;
        std::string part = std::to_string(count) + " " + (count == 1 ? forms.first : forms.second);
        if (kappa_free > 0)
            part += count == 1 ? " (κ-free)" : " (" + std::to_string(kappa_free) + " κ-free)";
        parts.push_back(part);
    }
    std::string out;
    for (std::size_t i = 0; i < parts.size(); ++i)
        out += (i ? ", " : "") + parts[i];
    return out;
}

// The bands of the rows, once each: "multiplier bootstrap over 1000 trials, critical values
// 3.02–3.26".
std::string bands_text(const std::vector<VerdictSide>& rows, const VerdictWords& words) {
    std::vector<std::string> bands;
    double low = HUGE_VAL, high = -HUGE_VAL;
    for (const VerdictSide& r : rows) {
        const std::string b = band_text(r.band_method, r.units, words.units);
        if (std::find(bands.begin(), bands.end(), b) == bands.end()) bands.push_back(b);
        if (std::isfinite(r.critical_value))
            low = std::min(low, r.critical_value), high = std::max(high, r.critical_value);
    }
    std::string text = join(bands);
    if (low <= high)
        text += low == high ? ", critical value " + number3(low)
                            : ", critical values " + number3(low) + "–" + number3(high);
    return text;
}

std::string states_sentence(const std::vector<VerdictSide>& rows, const VerdictWords& words) {
    std::ostringstream s;
    s << "<b>Verdict</b> (each side against a simultaneous 95 % band: " << bands_text(rows, words)
      << "): ";
    // Variants with the same counts share one clause, so four alike read as one.
    std::vector<std::pair<std::string, std::vector<std::string>>> clauses;  // (counts, variants)
    for (const std::string& v : variant_names()) {
        const std::string counts = state_counts(rows, v);
        if (counts.empty()) continue;
        auto it = std::find_if(clauses.begin(), clauses.end(),
                               [&](const auto& c) { return c.first == counts; });
        if (it == clauses.end()) it = clauses.insert(clauses.end(), {counts, {}});
        it->second.push_back(code_of(v));
    }
    std::string joined;
    for (std::size_t i = 0; i < clauses.size(); ++i) {
        const auto& [counts, variants] = clauses[i];
        const bool every = clauses.size() == 1 && variants.size() > 1;
        joined += (i ? "; " : "") + (every ? std::string("every variant") : join(variants)) + ": " +
                  counts;
    }
    s << joined << ". ";
    return s.str();
}

// "at N = 3 (z = 23.8) and N = 4 (z = 47.6), its bound not moving with κ (worst …)": what a
// side falsified for every κ says beyond its name.
std::string every_kappa_detail(const VerdictSide& r, const VerdictWords& words) {
    std::string count;
    std::string d = persistent_text(r, words, count);
    if (r.state == "kappa-free-falsified") d += ", its bound not moving with κ";
    std::vector<std::string> notes;
    if (!count.empty()) notes.push_back(count);
    const std::string worst = worst_text(r);
    if (!worst.empty())
        notes.push_back(worst + (r.kappa_free ? ""
                                              : " at κ = " + number3(r.kappa_judged) +
                                                    ", the κ with the fewest falsified points"));
    if (!notes.empty()) d += " (" + semicolons(notes) + ")";
    return d;
}

// The sides the data falsify: for every κ, or at the given κ. `any` is set when one is named.
std::string falsified_sentence(const SideGroups& groups, std::size_t variants,
                               const VerdictWords& words, bool& any) {
    std::ostringstream s;
    const auto every = sides_where(
        groups, variants,
        [](const VerdictSide& r) {
            return r.state == "falsified-every-kappa" || r.state == "kappa-free-falsified";
        },
        [&](const VerdictSide& r) { return every_kappa_detail(r, words); });
    if (!every.empty())
        s << "<span class=\"bad\">Falsified for every κ:</span> " << semicolons(every) << ". ";
    const auto given = sides_where(
        groups, variants,
        [](const VerdictSide& r) { return r.state == "falsified-at-given-kappa"; },
        [](const VerdictSide& r) {
            return "at κ = " + number3(r.kappa_judged) + " (" +
                   std::to_string(r.falsified_at_judged) + " points; " + worst_text(r) + ")";
        });
    if (!given.empty())
        s << "<span class=\"bad\">Falsified at the given κ:</span> " << semicolons(given) << ". ";
    any = any || !every.empty() || !given.empty();
    return s.str();
}

// The sides whose formula contradicts an identity or a limit — at every κ the data allow, or
// where κ does not escape it — named as a defect, never as chance.
std::string contradicted_sentence(const SideGroups& groups, std::size_t variants,
                                  const VerdictWords& words, bool& any) {
    std::ostringstream s;
    const auto contradicted = sides_where(
        groups, variants,
        [](const VerdictSide& r) { return r.state == "contradicted-by-construction"; },
        [&](const VerdictSide& r) {
            return "(at " + std::to_string(r.contradicted_at_judged) + " of " +
                   std::to_string(r.points) + " " + words.points + " at every κ the data allow)";
        });
    if (!contradicted.empty())
        s << "<span class=\"bad\">Contradicted by construction</span> — a defect of the formula "
             "at its identity points or limits (an upper bound below P(r<sub>max</sub>, 1) = "
             "R(r<sub>min</sub>, 1) = 1, or a bound outside N/n ≤ P ≤ 1, 0 ≤ R ≤ 1), not chance: "
          << semicolons(contradicted) << ". ";
    const auto escaping = sides_where(
        groups, variants,
        [](const VerdictSide& r) {
            return r.state != "contradicted-by-construction" && r.contradicted_most > 0;
        },
        [](const VerdictSide& r) {
            return "for " + kappa_set_words(r.contradiction_set) + " (up to " +
                   std::to_string(r.contradicted_most) + " points)";
        });
    if (!escaping.empty())
        s << "Contradicted by construction where κ does not escape it (an identity or limit "
             "broken by the formula, not chance): "
          << semicolons(escaping) << ". ";
    any = any || !contradicted.empty() || !escaping.empty();
    return s.str();
}

std::string informative_sentence(const SideGroups& groups, std::size_t variants,
                                 const VerdictWords& words) {
    std::ostringstream s;
    s << "<b>Informative</b> (at κ_edge, ≥ 5 % of the " << words.points
      << " at least 0.01 inside the trivial range, not a function of N alone; a falsified side "
         "is never counted): ";
    const auto yes = sides_where(groups, variants, side_informative, [](const VerdictSide& r) {
        std::string d =
            "(" + std::to_string(r.informative_points) + " of " + std::to_string(r.points);
        const std::string at = size_ranges_text(r.informative_sizes);
        if (!at.empty()) d += " at N = " + at;
        return d + ")";
    });
    s << (yes.empty() ? "no side" : semicolons(yes)) << ". ";
    return s.str();
}

std::string share_sentence(const std::map<std::string, VariantFacts>& facts) {
    std::vector<std::string> parts;
    for (const std::string& v : variant_names()) {
        const auto it = facts.find(v);
        if (it == facts.end()) continue;
        const auto& share = it->second.information_share;
        parts.push_back(code_of(v) + " " + number3(share[2]) + " (P " + number3(share[0]) + ", R " +
                        number3(share[1]) + ")");
    }
    if (parts.empty()) return "";
    return "<b>Information share</b> (of the trivial range, ruled out by the envelope): " +
           join(parts) + ". ";
}

std::string split_sentence(const std::vector<VerdictSide>& rows, const SideGroups& groups,
                           std::size_t variants, const VerdictWords& words) {
    int judged = 0, replicate = 0;
    for (const VerdictSide& r : rows) {
        judged += r.replicates >= 0;
        replicate += r.replicates == 1;
    }
    std::ostringstream s;
    s << "<b>Split replication</b> (each half of the " << rows.front().units << " " << words.units
      << " alone): ";
    if (judged == 0) return s.str() + "not judged (too few units, or exact values). ";
    if (replicate == static_cast<int>(rows.size())) return s.str() + "every side replicates. ";
    s << replicate << " of " << judged << " judged sides replicate";
    const auto not_replicating = sides_where(
        groups, variants, [](const VerdictSide& r) { return r.replicates == 0; }, nullptr);
    if (!not_replicating.empty()) s << "; <span class=\"bad\">not</span> " << join(not_replicating);
    s << ". ";
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
    std::string s;
    if (r.convention_points > 0)
        s += "Set apart from every count: " + std::to_string(r.convention_points) +
             " convention point" + (r.convention_points == 1 ? "" : "s") +
             " (N = n, or N = 1 with the sink ranked first), where every bound is 1 by "
             "definition. ";
    if (r.identity_points > 0)
        s += std::to_string(r.identity_points) + " of the M = " + std::to_string(r.points) +
             " points are identities (N = 1: P = R = 1 exactly), judged by their bounds alone. ";
    return s;
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

std::string bottom_line_html(const std::vector<VerdictSide>& rows,
                             const std::map<std::string, VariantFacts>& facts,
                             const VerdictWords& words) {
    if (rows.empty()) return "";
    const SideGroups groups = group_by_side(rows);
    const std::size_t variants = variant_count(rows);
    std::ostringstream out;
    bool any = false;
    const std::string falsified = falsified_sentence(groups, variants, words, any);
    const std::string contradicted = contradicted_sentence(groups, variants, words, any);
    out << "<p>" << states_sentence(rows, words) << falsified << contradicted
        << (any ? "" : "No side is falsified or contradicted. ") << "</p>\n<p>"
        << informative_sentence(groups, variants, words) << share_sentence(facts)
        << split_sentence(rows, groups, variants, words) << "</p>\n";
    return out.str();
}

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

std::string bottom_line_block(const std::vector<VerdictSide>& rows,
                              const std::map<std::string, VariantFacts>& facts,
                              const VerdictWords& words, const std::string& opening,
                              const std::string& closing) {
    std::ostringstream out;
    out << "<div class=\"bottom-line\">" << opening << bottom_line_html(rows, facts, words) << "<p>"
        << hypotheses_sentence(facts) << conventions_sentence(rows) << "</p>" << closing
        << "</div>\n";
    return out.str();
}

}  // namespace attngeo::reports
