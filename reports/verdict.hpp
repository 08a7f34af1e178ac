// The verdict of docs/design.md §7 in a report: per bound variant × metric × side, the κ* of the
// scan, its coverage and gaps, the degeneracies, and sentences generated from those numbers; plus
// the κ-scan figure per variant. Shared by simulate, sweep and compare reports.
#pragma once
#include <array>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "reports/csv_table.hpp"
#include "reports/figure.hpp"
#include "reports/report.hpp"

namespace attngeo::reports {

// The bound variants in the order every table and figure lists them (theory::bound_variants),
// and one colour each for the figures.
const std::vector<std::string>& variant_names();
const std::string& variant_color(std::size_t variant_index);

// One row of verdict.csv: one variant × metric × side (and grid point of a sweep).
struct VerdictSide {
    int grid = -1;          // sweep/simulate grid point; -1 for compare
    std::string variant;    // paper | exact-mean | scale-invariant | corrected
    std::string metric;     // P | R
    std::string side;       // lower | upper
    double kappa_star = 0;  // the tightest κ whose violations stay within the allowance
    double coverage = 0;    // fraction of points whose 95% interval does not contradict it
    double mean_gap = 0;    // mean |estimate − bound| on this side at κ*
    double mean_width = 0, median_width = 0;  // of this metric's envelope at κ*
    std::array<double, 5> gap_by_regime{};    // [5] regimes I–V; NaN where a regime is empty
    std::array<int, 5> points_by_regime{};    // [5]
    double fraction_degenerate = 0;           // trivial side or inverted envelope at κ*
    bool informative = false, at_grid_edge = false, kappa_free = false;
    // How far the side depends on κ.
    int points_moving = 0;  // points whose bound moves by more than 1e-12 over the grid
    double largest_move = std::nan("");  // the largest move of any point's bound
    bool nearly_kappa_free = false;      // not κ-free, largest_move ≤ 1e-3
    std::string moving_sizes;            // the moving points' N, "2;3" (simulate/sweep only)
    // Points judged apart from conventions, violations against the chance allowance and the
    // informative points (docs/design.md §7).
    int points = 0, convention_points = 0;  // M and the convention points set apart
    int violations = 0, violations_allowed = 0;
    bool within_allowance = false;
    double largest_excess = std::nan("");
    double kappa_zero = std::nan(""), gap_at_kappa_zero = std::nan("");  // NaN: none
    std::string saturates;  // "" | "above" (κ* means any κ ≥ it) | "below"
    int informative_points = 0, at_limit_points = 0, n_only_points = 0;
    int identity_contradicted = 0;
    double informative_fraction = std::nan("");
    std::string informative_sizes;  // "2-48;927" (distinct N of the informative points)
};

struct VerdictTable {
    std::string path;
    std::vector<std::string> swept;  // [parameters] sweep columns between grid and variant
    std::vector<std::map<std::string, std::string>> swept_values;  // [rows] name → text
    std::vector<VerdictSide> rows;
};
// Reads verdict.csv; throws InputError naming the file on a missing column or bad number.
VerdictTable read_verdict(const std::string& path);

// What the sentences of one variant need besides its verdict rows.
struct VariantFacts {
    nlohmann::json degenerate;      // "degenerate": the fractions delta_le0, …, R_trivial_upper
    nlohmann::json interval_score;  // "interval_score": kappa, coverage, mean_width, violations
    std::string kappa_rule;         // "interval-score" | "given"
    bool kappa_irrelevant = false;  // d = ∞: the bounds are taken at κd = ∞, κ does not enter
    // metric → the N at which the κ* envelope is inverted (simulate only; empty otherwise).
    std::map<std::string, std::vector<int>> inverted_at;
    nlohmann::json hypotheses;  // "hypotheses": points, delta_positive, sink_points, delta0_…
};

// The facts of one variant's verdict block as compare's verdict_json writes it (a simulate
// point's manifest "envelopes" entry, a compare folder's kappa.json "variants" entry), every key
// checked here: a missing key or a value of the wrong type is a JSON error carrying its pointer
// (with_json_context names the file), so the sentences read them without checks.
VariantFacts variant_facts_of(const nlohmann::json& block);
// variant_facts_of for every bound variant of `variants` (keyed by variant name, each required).
std::map<std::string, VariantFacts> variant_facts_of_all(const nlohmann::json& variants);

// The verdict of one run (a simulate grid point or a compare folder): the table of
// variant × metric × side and a paragraph per variant. `points` names what a point is
// ("N" or "(head, N) pairs"); `facts` is keyed by variant name.
// `opening` (HTML, may be empty) comes first: the assumption checks of the run.
std::string verdict_html(const std::vector<VerdictSide>& rows,
                         const std::map<std::string, VariantFacts>& facts,
                         const std::string& points, const std::string& opening = "");

// A sweep's verdict: the table aggregated over grid points (median κ*, min coverage, mean gap,
// fractions κ-free / at the grid edge / coverage met), a paragraph per variant, and a
// per-grid-point table of κ*.
std::string sweep_verdict_html(const VerdictTable& verdict);

// Coverage and mean envelope width against κ (log axis) for the four (metric, side) curves of
// one variant from kappa_scan.csv (rows of `grid` only when grid ≥ 0), κ* of each side marked.
Figure kappa_scan_figure(const std::string& id, const std::string& variant, const CsvTable& scan,
                         const std::vector<VerdictSide>& rows, int grid);

// ---- Compare folders (empirical_sections.cpp).
// The verdict section of a compare folder DIR: verdict.csv, κ-scan figures from kappa_scan.csv
// (ids prefixed by `prefix`), and the sentences' facts from kappa.json's "variants"; a
// missing or malformed file is an InputError naming it.
// `opening` as for verdict_html (compare's assumption fractions).
Section compare_verdict_section(const std::string& dir, const std::string& prefix,
                                const nlohmann::json& kappa, const std::string& opening = "");
// variant → N → mean over heads of (P_lower, P_upper, R_lower, R_upper) at the κ* of each side,
// streamed from compare's bounds.csv (it holds heads × sizes × variants rows). Throws
// InputError naming the file when it, a column or every row is missing.
std::map<std::string, std::map<int, std::array<double, 4>>> mean_star_envelopes(
    const std::string& bounds_path);

// (variant, layer) → mean width upper − lower of the P and R envelopes at the variant's single
// κ (bounds.csv's P_lower … R_upper) over heads, N and both metrics; layer −1: all layers.
// Throws as mean_star_envelopes.
std::map<std::pair<std::string, int>, double> mean_widths_by_layer(const std::string& bounds_path);

// The rows of one grid point (or all rows when grid < 0).
std::vector<VerdictSide> rows_of_grid(const VerdictTable& verdict, int grid);

}  // namespace attngeo::reports
