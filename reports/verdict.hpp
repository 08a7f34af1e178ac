// The verdict of docs/design.md §7 (verdict III) in a report: per bound variant × metric × side,
// its state, κ set and κ_edge, the worst and the persistently falsified points, informativeness
// and the split replication, read from verdict.csv and the manifest's blocks, and sentences
// generated from those numbers; plus the κ-scan figure per variant. Shared by simulate, sweep and
// compare reports.
#pragma once
#include <array>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "reports/csv_table.hpp"
#include "reports/figure.hpp"
#include "reports/sections.hpp"

namespace attngeo::reports {

// The bound variants in the order every table and figure lists them (theory::bound_variants),
// and one colour each for the figures.
const std::vector<std::string>& variant_names();
const std::string& variant_color(std::size_t variant_index);

// One row of verdict.csv: one variant × metric × side (and grid point of a sweep). Numbers a
// file leaves empty are NaN; counts and flags it leaves empty are −1.
struct VerdictSide {
    int grid = -1;        // sweep/simulate grid point; -1 for compare
    std::string variant;  // paper | exact-mean | scale-invariant | corrected
    std::string metric;   // P | R
    std::string side;     // lower | upper
    // holds | holds-uninformative | falsified-every-kappa | kappa-free-falsified |
    // contradicted-by-construction | falsified-at-given-kappa | untestable
    std::string state;
    std::string kappa_set;  // the consistent κ as intervals: "any", "none", ">=355", "a..b | …"
    double kappa_edge = std::nan(""), gap_at_edge = std::nan("");  // NaN: none (or κ-free)
    double kappa_judged = std::nan("");  // the κ the side is judged and shown at
    bool kappa_given = false;
    int falsified_at_judged = 0, contradicted_at_judged = 0;
    // The point of largest z at the judged κ; worst_layer/head −1 in simulate.
    int worst_N = -1, worst_layer = -1, worst_head = -1;
    double worst_z = std::nan(""), worst_excess = std::nan("");
    double critical_value = std::nan("");
    std::string band_method;  // compare::to_string(BandMethod): bootstrap-t | holm | exact | none
    int units = 0;            // trials (simulate) or documents (compare)
    // The κ where the bound contradicts an identity or a limit ("" where none does) and the
    // most points contradicted at one κ: a side can hold where κ escapes them.
    std::string contradiction_set;
    int contradicted_most = 0;
    int persistent_points = 0;
    // "3;4", "2-5": the N falsified at every κ (verdict.csv writes "[3;4]")
    std::string persistent_sizes;
    int points = 0, convention_points = 0, identity_points = 0;  // M, set apart, N = 1 of M
    int informative_points = 0, at_limit_points = 0, n_only_points = 0;
    double informative_fraction = std::nan("");
    bool informative = false;
    std::string informative_sizes;            // "2-48;927" (verdict.csv: "[2-48;927]")
    double information_share = std::nan("");  // of this metric's envelope, per variant
    bool kappa_free = false, nearly_kappa_free = false;
    double largest_move = std::nan("");  // the largest move of any point's bound over the grid
    int points_moving = 0;
    // Split replication: the first half's κ_edge judged on the second half.
    double kappa_edge_first_half = std::nan("");
    int first_half_empty = -1, falsified_on_second_half = -1;  // −1: not judged
    double gap_on_second_half = std::nan("");
    int replicates = -1;  // 1 | 0 | −1 (not judged)
    double mean_width = std::nan("");
    std::array<double, 5> gap_by_regime{};  // [5] regimes I–V; NaN where a regime is empty
    std::array<int, 5> points_by_regime{};  // [5]
    double fraction_degenerate = std::nan("");
};

// Whether a side is falsified by the data or the formula (any state but the holds and
// untestable ones).
bool side_falsified(const VerdictSide& row);
// Whether the report calls a side informative: verdict.csv says so and it is not falsified.
bool side_informative(const VerdictSide& row);

struct VerdictTable {
    std::string path;
    std::vector<std::string> swept;  // [parameters] sweep columns between grid and variant
    std::vector<std::map<std::string, std::string>> swept_values;  // [rows] name → text
    std::vector<VerdictSide> rows;
};
// Reads verdict.csv (or verdict_plug_in.csv); throws InputError naming the file on a missing
// column of compare's kVerdictColumns, a bad number or an unknown state or band method.
VerdictTable read_verdict(const std::string& path);

// What the sentences of one variant need besides its verdict rows: the manifest's (or
// kappa.json's) block of the variant as compare's verdict_json writes it.
struct VariantFacts {
    std::string band_method;           // band.method
    int units = 0;                     // band.units
    double rows_kappa = std::nan("");  // the bound rows' κ; NaN: the sides share none
    std::string rows_rule;  // joint | each side at its own kappa | given | kappa-irrelevant
    std::array<double, 3> information_share{};  // P, R, both (NaN: no point)
    nlohmann::json hypotheses;      // "hypotheses": points, delta_positive, sink_points, delta0_…
    bool kappa_irrelevant = false;  // d = ∞: the bounds are taken at κd = ∞, κ does not enter
    // metric → the N at which the judged envelope is inverted (simulate only; empty otherwise).
    std::map<std::string, std::vector<int>> inverted_at;
};

// The facts of one variant's verdict block, every key checked here: a missing key or a value
// of the wrong type is a JSON error carrying its pointer (with_json_context names the file), so
// the sentences read them without checks.
VariantFacts variant_facts_of(const nlohmann::json& block);
// variant_facts_of for every bound variant of `variants` (keyed by variant name, each required).
std::map<std::string, VariantFacts> variant_facts_of_all(const nlohmann::json& variants);

// What a run's points and units are, for the sentences, and (simulate) the z of each N.
struct VerdictWords {
    std::string points = "N";      // "N" or "(head, N) points"
    std::string units = "trials";  // "trials" or "documents"
    // "P upper" → N → z at the side's judged κ (from bounds.csv's z_* columns), per variant;
    // empty in compare, where a point is a (head, N).
    std::map<std::string, std::map<std::string, std::map<int, double>>> z_by_size;
};

// The verdict of one run (a simulate grid point or a compare folder): the bottom line, the
// table of variant × metric × side and a paragraph per variant; `facts` is keyed by variant name.
// `opening` (HTML, may be empty) comes first: the assumption checks of the run; `closing` (HTML,
// may be empty) ends the bottom line (the calibration's sentence).
std::string verdict_html(const std::vector<VerdictSide>& rows,
                         const std::map<std::string, VariantFacts>& facts,
                         const VerdictWords& words, const std::string& opening = "",
                         const std::string& closing = "");

// A sweep's verdict: the table aggregated over grid points (states, median κ_edge, the joint κ
// set of the manifest's "joint_kappa"), a paragraph per variant, and a per-grid-point table of
// states and κ_edge. `joint_kappa` is the manifest's block (per variant, or a string saying why
// there is none).
std::string sweep_verdict_html(const VerdictTable& verdict, const nlohmann::json& joint_kappa);

// Per (metric, side) of one variant from kappa_scan.csv (rows of `grid` only when grid ≥ 0): the
// largest z and the critical value against κ (log axis), the consistent κ shaded, κ_edge marked.
Figure kappa_scan_figure(const std::string& id, const std::string& variant, const CsvTable& scan,
                         const std::vector<VerdictSide>& rows, int grid);
// kappa_scan.csv (or kappa_scan_plug_in.csv) read with every column of compare's
// kKappaScanColumns (InputError naming the file otherwise).
CsvTable read_kappa_scan(const std::string& path);

// ---- Compare folders (compare_verdict.cpp).
// The verdict sections of a compare folder DIR: verdict.csv, κ-scan figures from kappa_scan.csv
// (ids prefixed by `prefix`), and the sentences' facts from kappa.json's "variants"; with the
// manifest's "plug_in" block, a second section: the plug-in verdict (verdict_plug_in.csv,
// kappa_scan_plug_in.csv) beside the parametric one, with the manifest's reason. A missing or
// malformed file is an InputError naming it. `opening` as for verdict_html (compare's
// assumption fractions).
std::vector<Section> compare_verdict_sections(const std::string& dir, const std::string& prefix,
                                              const nlohmann::json& kappa,
                                              const nlohmann::json& manifest,
                                              const std::string& opening = "");
// variant → N → mean over heads of (P_lower, P_upper, R_lower, R_upper) at each side's judged
// κ (the *_edge columns), streamed from compare's bounds.csv (it holds heads × sizes × variants
// rows). Throws InputError naming the file when it, a column or every row is missing.
std::map<std::string, std::map<int, std::array<double, 4>>> mean_edge_envelopes(
    const std::string& bounds_path);

// (variant, layer) → mean width upper − lower of the P and R envelopes at the variant's bound
// rows' κ (bounds.csv's P_lower … R_upper) over heads, N and both metrics; layer −1: all
// layers. Throws as mean_edge_envelopes.
std::map<std::pair<std::string, int>, double> mean_widths_by_layer(const std::string& bounds_path);

// The rows of one grid point (or all rows when grid < 0).
std::vector<VerdictSide> rows_of_grid(const VerdictTable& verdict, int grid);

}  // namespace attngeo::reports
