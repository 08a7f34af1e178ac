// The verdict of simulate and sweep folders in their reports; see simulation_verdict.hpp. The
// sentences' inputs come from the manifest's per-point verdict blocks and bounds.csv's
// judgement columns (each side's z and flags at its judged κ), never recomputed.
#include "reports/simulation_verdict.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <map>
#include <optional>
#include <sstream>

#include "common/errors.hpp"
#include "common/json_file.hpp"
#include "common/manifest_values.hpp"
#include "common/run_schema.hpp"
#include "reports/calibration_section.hpp"
#include "reports/verdict.hpp"
#include "reports/verdict_text.hpp"
#include "theory/bounds.hpp"
#include "reports/html.hpp"

namespace fs = std::filesystem;

namespace attngeo::reports {
namespace {

const char* const kSideKeys[4] = {"P_lower", "P_upper", "R_lower", "R_upper"};
const char* const kSideLabels[4] = {"P lower", "P upper", "R lower", "R upper"};

// The sentences' inputs of each variant at one grid point: the manifest's envelopes entry and,
// with bounds.csv, the N at which each metric's judged envelope is inverted.
std::map<std::string, VariantFacts> variant_facts(const nlohmann::json& point,
                                                  const CsvTable* bounds) {
    std::map<std::string, VariantFacts> facts = variant_facts_of_all(point.at("envelopes"));
    for (auto& [v, f] : facts)
        f.kappa_irrelevant = infinite_d(point.at("d"));
    if (!bounds) return facts;
    for (const char* metric : {"P", "R"}) {
        const std::string column = std::string(metric) + "_inverted";
        for (std::size_t r = 0; r < bounds->rows.size(); ++r)
            if (bounds->text(r, column) == "1")
                facts[bounds->text(r, "variant")].inverted_at[metric].push_back(
                    static_cast<int>(bounds->integer(r, "N")));
    }
    return facts;
}

// A simulate point's words: its points are N, its units trials, and each N's z per side is
// bounds.csv's z_* column (at that side's judged κ).
VerdictWords simulate_words(const CsvTable* bounds) {
    VerdictWords words;
    if (!bounds) return words;
    for (std::size_t r = 0; r < bounds->rows.size(); ++r)
        for (int k = 0; k < 4; ++k) {
            const std::string column = std::string("z_") + kSideKeys[k];
            if (bounds->text(r, column).empty()) continue;
            words.z_by_size[bounds->text(r, "variant")][kSideLabels[k]]
                           [static_cast<int>(bounds->integer(r, "N"))] = bounds->number(r, column);
        }
    return words;
}

// Mean width upper − lower of each variant's P and R envelopes at the row's κ, over N.
std::map<std::string, std::pair<double, double>> mean_widths(const CsvTable& bounds) {
    std::map<std::string, std::array<double, 3>> sums;  // variant → (P, R, rows)
    for (std::size_t r = 0; r < bounds.rows.size(); ++r) {
        auto& sum = sums[bounds.text(r, "variant")];
        sum[0] += bounds.number(r, "P_upper") - bounds.number(r, "P_lower");
        sum[1] += bounds.number(r, "R_upper") - bounds.number(r, "R_lower");
        sum[2] += 1;
    }
    std::map<std::string, std::pair<double, double>> out;
    for (const auto& [v, sum] : sums)
        out[v] = {sum[0] / sum[2], sum[1] / sum[2]};
    return out;
}

std::string optional_cell(const nlohmann::json& value) {
    return value.is_null() ? std::string("–") : short_number(json_number_value(value));
}

std::string envelope_table(const nlohmann::json& point, const CsvTable& bounds) {
    const auto widths = mean_widths(bounds);
    std::vector<std::vector<std::string>> rows;
    for (const auto& v : variant_names()) {
        const auto& e = point.at("envelopes").at(v);
        const auto& share = e.at("information_share");
        const auto width =
            widths.count(v) ? widths.at(v) : std::make_pair(std::nan(""), std::nan(""));
        rows.push_back({"<code>" + v + "</code>", rows_kappa_cell(e),
                        optional_cell(share.at("P")) + " / " + optional_cell(share.at("R")) +
                            " / " + optional_cell(share.at("both")),
                        short_number(width.first) + " / " + short_number(width.second)});
    }
    return "<p>The bound rows of bounds.csv (<code>P_lower</code> … <code>R_upper</code>) use one "
           "κ for all four sides of a variant when one is consistent on all four, else each "
           "side's own judged κ. The information share is the share of the trivial range "
           "[N/n, 1] or [0, 1] the envelope rules out (mean over points); the mean width is "
           "always worth reading beside it: a [0, 1] envelope holds everywhere and says "
           "nothing.</p>\n" +
           html_table({"variant", "bound rows' κ (rule)", "information share P / R / both",
                       "mean width P / R"},
                      rows);
}

// One falsified or contradicted (variant, N, side) of bounds.csv.
struct FalsifiedPoint {
    double z;  // +inf for a contradicted point (no data can save it)
    std::vector<std::string> cells;
};

std::vector<FalsifiedPoint> falsified_points(const CsvTable& sim, const CsvTable& bounds) {
    std::map<int, std::size_t> sim_row;
    for (std::size_t r = 0; r < sim.rows.size(); ++r)
        sim_row[static_cast<int>(sim.integer(r, "N"))] = r;
    std::vector<FalsifiedPoint> found;
    for (std::size_t r = 0; r < bounds.rows.size(); ++r)
        for (int k = 0; k < 4; ++k) {
            const std::string key = kSideKeys[k];
            const bool contradicted = bounds.text(r, "contradicted_" + key) == "1";
            if (!contradicted && bounds.text(r, "falsified_" + key) != "1") continue;
            const int N = static_cast<int>(bounds.integer(r, "N"));
            const auto in_sim = sim_row.find(N);
            if (in_sim == sim_row.end())
                throw InputError("'" + bounds.path + "' has N = " + std::to_string(N) + " but '" +
                                 sim.path + "' has no row for it");
            const std::string m = key.substr(0, 1);
            const std::size_t s = in_sim->second;
            const std::string& z = bounds.text(r, "z_" + key);
            found.push_back({contradicted || z.empty() ? HUGE_VAL : bounds.number(r, "z_" + key),
                             {bounds.text(r, "variant"), std::to_string(N),
                              bounds.text(r, "regime"), kSideLabels[k],
                              short_number(sim.number(s, m + "_mean")) + " [" +
                                  short_number(sim.number(s, m + "_ci_lo")) + ", " +
                                  short_number(sim.number(s, m + "_ci_hi")) + "]",
                              short_number(bounds.number(r, key + "_edge")),
                              short_number(bounds.number(r, "kappa_" + key)),
                              contradicted ? "<span class=\"bad\">contradicted</span>"
                                           : short_number(bounds.number(r, "z_" + key))}});
        }
    std::stable_sort(found.begin(), found.end(),
                     [](const FalsifiedPoint& a, const FalsifiedPoint& b) { return a.z > b.z; });
    return found;
}

std::string falsified_table(const CsvTable& sim, const CsvTable& bounds) {
    const std::vector<FalsifiedPoint> found = falsified_points(sim, bounds);
    if (found.empty())
        return "<p>No point of any side is falsified or contradicted at its judged κ.</p>\n";
    std::vector<std::vector<std::string>> rows;
    for (std::size_t i = 0; i < found.size() && i < 20; ++i)
        rows.push_back(found[i].cells);
    std::ostringstream out;
    out << "<p>" << found.size()
        << " (variant, N, side) points are falsified (the simultaneous band lies wholly beyond "
           "the bound) or contradicted by construction at their side's judged κ "
           "(bounds.csv's <code>falsified_*</code>, <code>contradicted_*</code>, "
           "<code>z_*</code>). The largest "
        << rows.size() << " by z:</p>\n"
        << html_table({"variant", "N", "regime", "side", "estimate [95% interval]",
                       "bound at the judged κ", "judged κ", "z"},
                      rows)
        << "<p>The literal <code>paper</code> upper bound on P is expected to fail at small N: in "
           "eq. (10) the sink's M<sub>0</sub> has no self term, so μ<sub>0j</sub> is about "
           "2a<sub>0</sub><sup>2</sup> too small (docs/design.md §3). Note too that the paper's "
           "scale B is linear in the value scale while the margins Δ, Δ<sub>0</sub> are "
           "quadratic, so the <code>paper</code> bounds change when every v is multiplied by c; "
           "the <code>scale-invariant</code> variant does not.</p>\n";
    return out.str();
}

}  // namespace

const char* const kExpectedGeometryNote =
    "<p class=\"warn\">d = ∞: this is the expected-geometry limit, not a Monte Carlo run. No "
    "trials are drawn; the metrics are those of the expected Gram matrix "
    "a<sub>k</sub>a<sub>l</sub>K<sub>kl</sub>, with exact ties (many tail tokens sit at the same "
    "expected distance) counted by the closed-ball convention. It is therefore not the large-d "
    "limit of the estimate at large N, where random directions break those ties; the bounds are "
    "evaluated at κd = ∞.</p>\n";

bool infinite_d(const nlohmann::json& d) {
    if (d.is_string()) return d.get<std::string>() == "inf" || d.get<std::string>() == "infinity";
    return d.is_number() && std::isinf(d.get<double>());
}

std::string rows_kappa_cell(const nlohmann::json& block) {
    const nlohmann::json& kappa = block.at("rows_kappa");
    return (kappa.is_null() ? std::string("—") : json_text(kappa)) + " (" +
           html_escape(block.at("rows_rule").get<std::string>()) + ")";
}

std::vector<Section> simulation_verdict_sections(const RunFolder& run, const CsvTable* bounds) {
    Section verdict;
    verdict.title = "The verdict: does each bound hold, and does it say anything?";
    const VerdictTable table = read_verdict((fs::path(run.dir) / schema::file::verdict).string());
    const auto& point = run.manifest.at("points").at(0);
    const bool sweep = run.manifest.value("kind", "") == "sweep";
    const int first_grid = table.rows.empty() ? 0 : table.rows.front().grid;
    const std::optional<CalibrationView> calibration = sweep ? std::nullopt : calibration_of(run);
    std::ostringstream html;
    if (infinite_d(point.at("d"))) html << kExpectedGeometryNote;
    if (sweep)
        html << sweep_verdict_html(table, run.manifest.at("joint_kappa"));
    else
        html << verdict_html(rows_of_grid(table, first_grid), variant_facts(point, bounds),
                             simulate_words(bounds), realised_assumptions_opening(point),
                             calibration ? calibration->sentence : "");
    verdict.html_before = html.str();
    const CsvTable scan = read_kappa_scan((fs::path(run.dir) / schema::file::kappa_scan).string());
    const auto rows = rows_of_grid(table, first_grid);
    for (const auto& v : variant_names())
        verdict.figures.push_back(
            kappa_scan_figure("run" + std::to_string(run.index) + "_kappa_" + v, v, scan, rows,
                              sweep ? first_grid : -1));
    std::vector<Section> sections = {verdict};
    if (calibration) sections.push_back(calibration->section);
    return sections;
}

std::string simulate_agreement_html(const nlohmann::json& point, const CsvTable& sim,
                                    const CsvTable& bounds) {
    return envelope_table(point, bounds) + falsified_table(sim, bounds);
}

}  // namespace attngeo::reports
