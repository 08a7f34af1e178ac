// The verdict shared by simulate, sweep and compare reports (docs/design.md §7): verdict.csv and
// the manifest's per-variant blocks read and checked, and the verdict of one run (bottom line,
// table, per-variant sentences, gaps by regime) assembled from verdict_text's sentences.
#include "reports/verdict.hpp"

#include <algorithm>
#include <cmath>
#include <set>
#include <sstream>

#include "common/errors.hpp"
#include "common/json_file.hpp"
#include "common/manifest_values.hpp"
#include "compare/falsification.hpp"
#include "compare/simultaneous_band.hpp"
#include "compare/verdict_tables.hpp"
#include "reports/palette.hpp"
#include "reports/verdict_text.hpp"
#include "theory/bounds.hpp"
#include "reports/html.hpp"

namespace attngeo::reports {
namespace {

const char* kRegimeNames[5] = {"I", "II", "III", "IV", "V"};

// The states and band methods as compare spells them (one spelling for writer and reader).
const std::set<std::string>& known_states() {
    using compare::SideState;
    static const std::set<std::string> states = {
        compare::to_string(SideState::holds),
        compare::to_string(SideState::holds_uninformative),
        compare::to_string(SideState::falsified_every_kappa),
        compare::to_string(SideState::kappa_free_falsified),
        compare::to_string(SideState::contradicted_by_construction),
        compare::to_string(SideState::falsified_at_given_kappa),
        compare::to_string(SideState::untestable)};
    return states;
}

const std::set<std::string>& known_band_methods() {
    using compare::BandMethod;
    static const std::set<std::string> methods = {
        compare::to_string(BandMethod::bootstrap), compare::to_string(BandMethod::holm),
        compare::to_string(BandMethod::exact), compare::to_string(BandMethod::none)};
    return methods;
}

// A 0/1 field; with `optional`, an empty one is −1.
int flag_field(const CsvTable& table, std::size_t row, const std::string& name,
               bool optional = false) {
    const std::string& text = table.text(row, name);
    if (text == "1") return 1;
    if (text == "0") return 0;
    if (optional && text.empty()) return -1;
    throw InputError(table.where(row, name) + ": '" + text + "' is not 0 or 1" +
                     (optional ? " or empty" : ""));
}

double optional_number(const CsvTable& table, std::size_t row, const std::string& name) {
    return table.text(row, name).empty() ? std::nan("") : table.number(row, name);
}

int count_field(const CsvTable& table, std::size_t row, const std::string& name) {
    return static_cast<int>(table.integer(row, name));
}

int optional_count(const CsvTable& table, std::size_t row, const std::string& name) {
    return table.text(row, name).empty() ? -1 : count_field(table, row, name);
}

// `name`'s text, which must be one of `known` (InputError naming the file otherwise).
std::string word_field(const CsvTable& table, std::size_t row, const std::string& name,
                       const std::set<std::string>& known) {
    const std::string& text = table.text(row, name);
    if (!known.count(text)) {
        std::string list;
        for (const std::string& k : known)
            list += (list.empty() ? "" : ", ") + k;
        throw InputError(table.where(row, name) + ": '" + text + "', expected one of " + list);
    }
    return text;
}

// A list of N as verdict.csv writes it, "[3;4]" (bracketed so that one N reads as text), as
// "3;4"; InputError naming the file for an unbracketed or unclosed list.
std::string size_field(const CsvTable& table, std::size_t row, const std::string& name) {
    const std::string& text = table.text(row, name);
    if (text.empty()) return text;
    if (text.size() < 2 || text.front() != '[' || text.back() != ']')
        throw InputError(table.where(row, name) + ": '" + text +
                         "', expected a list of N in brackets (\"[3;4]\", \"[2-5;9]\")");
    return text.substr(1, text.size() - 2);
}

// The state, κ set, κ_edge, the judged κ and the points named there.
void read_state(const CsvTable& t, std::size_t r, VerdictSide& v) {
    v.state = word_field(t, r, "state", known_states());
    v.kappa_set = t.text(r, "kappa_set");
    v.kappa_edge = optional_number(t, r, "kappa_edge");
    v.gap_at_edge = optional_number(t, r, "gap_at_edge");
    v.kappa_judged = t.number(r, "kappa_judged");
    v.kappa_given = flag_field(t, r, "kappa_given") == 1;
    v.falsified_at_judged = count_field(t, r, "falsified_at_judged");
    v.contradicted_at_judged = count_field(t, r, "contradicted_at_judged");
    v.worst_N = optional_count(t, r, "worst_N");
    v.worst_layer = optional_count(t, r, "worst_layer");
    v.worst_head = optional_count(t, r, "worst_head");
    v.worst_z = optional_number(t, r, "worst_z");
    v.worst_excess = optional_number(t, r, "worst_excess");
    v.critical_value = optional_number(t, r, "critical_value");
    v.band_method = word_field(t, r, "band_method", known_band_methods());
    v.units = count_field(t, r, "units");
    v.contradiction_set = t.text(r, "contradiction_set");
    v.contradicted_most = count_field(t, r, "contradicted_most");
    v.persistent_points = count_field(t, r, "persistent_points");
    v.persistent_sizes = size_field(t, r, "persistent_N");
}

// The point counts, informativeness, κ-dependence and the split.
void read_counts(const CsvTable& t, std::size_t r, VerdictSide& v) {
    v.points = count_field(t, r, "points");
    v.convention_points = count_field(t, r, "convention_points");
    v.identity_points = count_field(t, r, "identity_points");
    v.informative_points = count_field(t, r, "informative_points");
    v.informative_fraction = t.number(r, "informative_fraction");
    v.informative = flag_field(t, r, "informative") == 1;
    v.informative_sizes = size_field(t, r, "informative_N");
    v.at_limit_points = count_field(t, r, "at_limit_points");
    v.n_only_points = count_field(t, r, "n_only_points");
    v.information_share = optional_number(t, r, "information_share");
    v.kappa_free = flag_field(t, r, "kappa_free") == 1;
    v.nearly_kappa_free = flag_field(t, r, "nearly_kappa_free") == 1;
    v.largest_move = t.number(r, "largest_move");
    v.points_moving = count_field(t, r, "points_moving");
    v.kappa_edge_first_half = optional_number(t, r, "kappa_edge_first_half");
    v.first_half_empty = flag_field(t, r, "first_half_empty", true);
    v.falsified_on_second_half = flag_field(t, r, "falsified_on_second_half", true);
    v.gap_on_second_half = optional_number(t, r, "gap_on_second_half");
    v.replicates = flag_field(t, r, "replicates_on_split", true);
    v.mean_width = optional_number(t, r, "mean_width");
    for (int k = 0; k < 5; ++k) {
        v.gap_by_regime[k] = optional_number(t, r, std::string("gap_") + kRegimeNames[k]);
        v.points_by_regime[k] = count_field(t, r, std::string("points_") + kRegimeNames[k]);
    }
    v.fraction_degenerate = optional_number(t, r, "fraction_degenerate");
}

std::string regime_cell(const VerdictSide& row, int regime) {
    if (row.points_by_regime[regime] == 0 || std::isnan(row.gap_by_regime[regime])) return "–";
    return verdict_words::digits(row.gap_by_regime[regime], 4) + " (" +
           std::to_string(row.points_by_regime[regime]) + ")";
}

// Mean gap at the judged κ per Table-2 regime (count in brackets), a row per variant × side;
// nothing when no point has a regime.
std::string regime_gap_table(const std::vector<VerdictSide>& rows) {
    std::vector<std::vector<std::string>> cells;
    bool any = false;
    for (const VerdictSide& r : rows) {
        std::vector<std::string> row = {html_escape(r.variant), r.metric, r.side};
        for (int k = 0; k < 5; ++k) {
            row.push_back(regime_cell(r, k));
            any = any || r.points_by_regime[k] > 0;
        }
        cells.push_back(row);
    }
    if (!any) return "";
    return "<p>Mean gap at the judged κ by Table-2 regime (points in brackets):</p>\n"
           "<div style=\"overflow-x: auto; font-size: .85em\">" +
           html_table(
               {"variant", "metric", "side", "gap I", "gap II", "gap III", "gap IV", "gap V"},
               cells) +
           "</div>\n";
}

// An optional number of a verdict block: null is NaN.
double optional_json_number(const nlohmann::json& value) {
    return value.is_null() ? std::nan("") : json_number_value(value);
}

}  // namespace

const std::vector<std::string>& variant_names() {
    return theory::bound_variant_names();
}

const std::string& variant_color(std::size_t variant_index) {
    static const std::vector<std::string> colors(palette::kVariant.begin(),
                                                 palette::kVariant.end());
    return colors.at(variant_index % colors.size());
}

bool side_falsified(const VerdictSide& row) {
    return row.state != "holds" && row.state != "holds-uninformative" && row.state != "untestable";
}

bool side_informative(const VerdictSide& row) {
    return row.informative && !side_falsified(row);
}

VerdictTable read_verdict(const std::string& path) {
    const CsvTable table = read_table_with_columns(path, column_list(compare::kVerdictColumns));
    VerdictTable out;
    out.path = path;
    const bool has_grid = !table.header.empty() && table.header.front() == "grid";
    if (has_grid) {
        for (std::size_t c = 1; c < table.header.size() && table.header[c] != "variant"; ++c)
            out.swept.push_back(table.header[c]);
    }
    for (std::size_t r = 0; r < table.rows.size(); ++r) {
        VerdictSide v;
        v.grid = has_grid ? count_field(table, r, "grid") : -1;
        v.variant = table.text(r, "variant");
        v.metric = table.text(r, "metric");
        v.side = table.text(r, "side");
        read_state(table, r, v);
        read_counts(table, r, v);
        out.rows.push_back(v);
        std::map<std::string, std::string> values;
        for (const auto& name : out.swept)
            values[name] = table.text(r, name);
        out.swept_values.push_back(values);
    }
    return out;
}

std::vector<VerdictSide> rows_of_grid(const VerdictTable& verdict, int grid) {
    std::vector<VerdictSide> out;
    for (const auto& r : verdict.rows)
        if (grid < 0 || r.grid == grid) out.push_back(r);
    return out;
}

std::string verdict_html(const std::vector<VerdictSide>& rows,
                         const std::map<std::string, VariantFacts>& facts,
                         const VerdictWords& words, const std::string& opening,
                         const std::string& closing) {
    if (rows.empty()) return opening;
    return judged_verdict_html(rows, facts, words, opening, closing) + regime_gap_table(rows);
}

VariantFacts variant_facts_of(const nlohmann::json& block) {
    // Checked in place, so an error carries the value's JSON pointer.
    const nlohmann::json& band = block.at("band");
    VariantFacts f;
    f.band_method = band.at("method").get<std::string>();
    f.units = json_integer<int>(band.at("units"));
    f.rows_kappa = optional_json_number(block.at("rows_kappa"));
    f.rows_rule = block.at("rows_rule").get<std::string>();
    const nlohmann::json& share = block.at("information_share");
    const char* metrics[3] = {"P", "R", "both"};
    for (int k = 0; k < 3; ++k)
        f.information_share[k] = optional_json_number(share.at(metrics[k]));
    const nlohmann::json& hypotheses = block.at("hypotheses");
    for (const char* key : {"points", "delta_positive", "sink_points", "delta0_positive"})
        (void)json_integer<int>(hypotheses.at(key));
    f.hypotheses = hypotheses;
    // The per-side blocks repeat verdict.csv's rows; their states must be known ones.
    for (const char* metric : {"P", "R"})
        for (const char* side : {"lower", "upper"}) {
            const nlohmann::json& state = block.at("sides").at(metric).at(side).at("state");
            if (!known_states().count(state.get<std::string>()))
                throw nlohmann::json::type_error::create(
                    302, "expected a verdict state, found " + state.dump(), &state);
        }
    return f;
}

std::map<std::string, VariantFacts> variant_facts_of_all(const nlohmann::json& variants) {
    std::map<std::string, VariantFacts> facts;
    for (const auto& v : variant_names())
        facts[v] = variant_facts_of(variants.at(v));
    return facts;
}

}  // namespace attngeo::reports
