// A sweep's verdict (docs/design.md §7): verdict.csv's sides aggregated over the grid points
// (how many points reach each state, the median κ_edge, informative and replicating points)
// beside the manifest's joint κ set per side (the intersection over the grid), a paragraph per
// variant, and a per-grid-point table of states and κ_edge.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <sstream>

#include "common/manifest_values.hpp"
#include "common/order_statistics.hpp"
#include "reports/html.hpp"
#include "reports/verdict.hpp"
#include "reports/verdict_text.hpp"

namespace attngeo::reports {
namespace {

using verdict_words::join;
using verdict_words::side_label;

// One (variant, "metric side") of a sweep, over its grid points.
struct SideAggregate {
    std::map<std::string, int> states;  // state → grid points
    std::vector<double> kappa_edge;     // [grid points with one]
    int grid_points = 0, informative = 0, replicates = 0, split_judged = 0, kappa_free = 0;
};
// variant → ("P lower", aggregate) in the file's order of sides.
using SweepAggregates = std::map<std::string, std::vector<std::pair<std::string, SideAggregate>>>;

SweepAggregates aggregate_sides(const VerdictTable& verdict) {
    SweepAggregates groups;
    for (const auto& r : verdict.rows) {
        auto& list = groups[r.variant];
        const std::string key = side_label(r);
        auto it =
            std::find_if(list.begin(), list.end(), [&](const auto& p) { return p.first == key; });
        if (it == list.end()) it = list.insert(list.end(), {key, SideAggregate{}});
        SideAggregate& a = it->second;
        ++a.states[r.state];
        if (!std::isnan(r.kappa_edge)) a.kappa_edge.push_back(r.kappa_edge);
        ++a.grid_points;
        a.informative += side_informative(r);
        a.replicates += r.replicates == 1;
        a.split_judged += r.replicates >= 0;
        a.kappa_free += r.kappa_free;
    }
    return groups;
}

// "holds 1/2, falsified-every-kappa 1/2": the states and at how many grid points.
std::string states_cell(const SideAggregate& a) {
    std::vector<std::string> parts;
    for (const auto& [state, count] : a.states) {
        const std::string text =
            state + " " + std::to_string(count) + "/" + std::to_string(a.grid_points);
        const bool falsified =
            state != "holds" && state != "holds-uninformative" && state != "untestable";
        parts.push_back(falsified ? "<span class=\"bad\">" + text + "</span>" : text);
    }
    return join(parts);
}

// The manifest's joint block of one side (null when the sweep has none).
const nlohmann::json* joint_side(const nlohmann::json& joint_kappa, const std::string& variant,
                                 const std::string& metric, const std::string& side) {
    if (!joint_kappa.contains(variant) || !joint_kappa.at(variant).is_object()) return nullptr;
    return &joint_kappa.at(variant).at(metric).at(side);
}

std::string joint_set_cell(const nlohmann::json* joint) {
    if (!joint) return "–";
    const std::string set = joint->at("kappa_set").get<std::string>();
    return set == "none" ? "<span class=\"bad\">none</span>" : html_escape(set);
}

std::string joint_edge_cell(const nlohmann::json* joint) {
    if (!joint || joint->at("kappa_edge").is_null()) return "–";
    return short_number(json_number_value(joint->at("kappa_edge")));
}

// "P lower (1/2)": a side and at how many of the grid points something holds.
std::string side_count(const std::string& key, int count, int of) {
    return key + " (" + std::to_string(count) + "/" + std::to_string(of) + ")";
}

std::string sweep_paragraph(const std::string& variant,
                            const std::vector<std::pair<std::string, SideAggregate>>& sides,
                            const nlohmann::json& joint_kappa) {
    std::vector<std::string> falsified, informative, no_joint, not_replicating;
    for (const auto& [key, a] : sides) {
        int bad = 0;
        for (const auto& [state, count] : a.states)
            if (state != "holds" && state != "holds-uninformative" && state != "untestable")
                bad += count;
        if (bad > 0) falsified.push_back(side_count(key, bad, a.grid_points));
        if (a.informative > 0) informative.push_back(side_count(key, a.informative, a.grid_points));
        if (a.replicates < a.split_judged)
            not_replicating.push_back(
                side_count(key, a.split_judged - a.replicates, a.split_judged));
        const std::string metric = key.substr(0, key.find(' ')),
                          side = key.substr(key.find(' ') + 1);
        const nlohmann::json* joint = joint_side(joint_kappa, variant, metric, side);
        if (joint && joint->at("kappa_set").get<std::string>() == "none") no_joint.push_back(key);
    }
    std::ostringstream s;
    s << "<p><b><code>" << html_escape(variant) << "</code></b>: ";
    if (!falsified.empty())
        s << "<span class=\"bad\">falsified or contradicted</span> (at how many grid points): "
          << join(falsified) << ". ";
    if (!no_joint.empty()) s << "No κ holds at every grid point for " << join(no_joint) << ". ";
    s << "Informative: " << (informative.empty() ? "no side" : join(informative)) << ". ";
    if (!not_replicating.empty())
        s << "Not replicating on the split: " << join(not_replicating) << ". ";
    s << "</p>\n";
    return s.str();
}

// The short form of a state for the per-point table.
std::string short_state(const std::string& state) {
    if (state == "holds-uninformative") return "says little";
    if (state == "falsified-every-kappa") return "<span class=\"bad\">falsified ∀κ</span>";
    if (state == "kappa-free-falsified") return "<span class=\"bad\">falsified ∀κ, κ-free</span>";
    if (state == "contradicted-by-construction") return "<span class=\"bad\">contradicted</span>";
    if (state == "falsified-at-given-kappa") return "<span class=\"bad\">falsified at κ</span>";
    return state;
}

// Rows (grid point, values, variant) with each side's state and κ_edge.
std::vector<std::vector<std::string>> states_per_point(const VerdictTable& verdict) {
    std::map<std::pair<int, std::string>, std::map<std::string, std::string>> per_point;
    std::map<int, std::string> point_values;
    for (std::size_t i = 0; i < verdict.rows.size(); ++i) {
        const auto& r = verdict.rows[i];
        std::string cell = short_state(r.state);
        if (!std::isnan(r.kappa_edge)) cell += " (" + short_number(r.kappa_edge) + ")";
        per_point[{r.grid, r.variant}][side_label(r)] = cell;
        std::string values;
        for (const auto& [name, text] : verdict.swept_values[i])
            values += (values.empty() ? "" : ", ") + name + " = " +
                      short_number(std::strtod(text.c_str(), nullptr));
        point_values[r.grid] = values;
    }
    std::vector<std::vector<std::string>> rows;
    for (const auto& [grid, values] : point_values) {
        for (const auto& variant : variant_names()) {
            const auto it = per_point.find({grid, variant});
            if (it == per_point.end()) continue;
            auto cell = [&](const char* key) {
                return it->second.count(key) ? it->second.at(key) : std::string("");
            };
            rows.push_back({std::to_string(grid), html_escape(values),
                            "<code>" + html_escape(variant) + "</code>", cell("P lower"),
                            cell("P upper"), cell("R lower"), cell("R upper")});
        }
    }
    return rows;
}

std::string joint_note(const nlohmann::json& joint_kappa) {
    for (const auto& [variant, block] : joint_kappa.items())
        if (block.is_string())
            return "<p>No joint κ: " + html_escape(block.get<std::string>()) + ".</p>\n";
    return "";
}

}  // namespace

std::string sweep_verdict_html(const VerdictTable& verdict, const nlohmann::json& joint_kappa) {
    const SweepAggregates groups = aggregate_sides(verdict);
    std::vector<std::vector<std::string>> cells;
    std::string paragraphs;
    for (const auto& variant : variant_names()) {
        if (!groups.count(variant)) continue;
        for (const auto& [key, a] : groups.at(variant)) {
            const std::string metric = key.substr(0, key.find(' ')),
                              side = key.substr(key.find(' ') + 1);
            const nlohmann::json* joint = joint_side(joint_kappa, variant, metric, side);
            const std::string n = "/" + std::to_string(a.grid_points);
            cells.push_back(
                {"<code>" + html_escape(variant) + "</code>", key, states_cell(a),
                 a.kappa_edge.empty() ? "–" : short_number(median(a.kappa_edge)),
                 joint_set_cell(joint), joint_edge_cell(joint),
                 joint ? std::to_string(joint->at("consistent_samples").size()) + n : "–",
                 std::to_string(a.kappa_free) + n, std::to_string(a.informative) + n,
                 a.split_judged > 0
                     ? std::to_string(a.replicates) + "/" + std::to_string(a.split_judged)
                     : "–"});
        }
        paragraphs += sweep_paragraph(variant, groups.at(variant), joint_kappa);
    }
    std::ostringstream out;
    out << "<p>Per variant × metric × side over the sweep's grid points ("
        << html_escape(verdict.path)
        << "): each grid point is judged alone at 95 % (docs/design.md §7); the joint κ set is "
           "the intersection of theirs (manifest <code>joint_kappa</code>), its κ_edge the "
           "smallest mean gap over the points.</p>\n"
        << joint_note(joint_kappa)
        << html_table({"variant", "side", "states (grid points)", "median κ_edge", "joint κ set",
                       "joint κ_edge", "grid points consistent", "κ-free", "informative",
                       "replicates on split"},
                      cells)
        << paragraphs << "<p>State and κ_edge per grid point:</p>\n"
        << html_table({"grid", "values", "variant", "P lower", "P upper", "R lower", "R upper"},
                      states_per_point(verdict));
    return out.str();
}

}  // namespace attngeo::reports
