// What the empirical report's loaders hand its figures, tables and sections: an extract folder
// aggregated over heads (its files reach 10^6 rows for 7B models, so they are streamed and
// reduced before anything is plotted), a compare folder read whole, and shared formatting.
// Internal to reports/ (extract_loader, empirical_figures, empirical_tables, empirical_sections).
#pragma once
#include <array>
#include <functional>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "compare/extract_folder_reader.hpp"
#include "reports/csv_table.hpp"
#include "reports/palette.hpp"
#include "reports/sections.hpp"
#include "theory/head_regime.hpp"

namespace attngeo::reports::empirical {

inline constexpr int kRegimeCount = static_cast<int>(theory::kHeadRegimes.size());
template <typename T>
using PerRegime = std::array<T, theory::kHeadRegimes.size()>;  // [regimes] kHeadRegimes order

// The position of `regime` in theory::kHeadRegimes (the index of PerRegime arrays).
int regime_index(theory::HeadRegime regime);
// A regime column's text; InputError naming `file` for anything but the three names.
theory::HeadRegime parse_regime(const std::string& name, const std::string& file);
const char* regime_name(int regime_index);

// ---- formatting shared by figures and tables -----------------------------------------------

std::string path_in(const std::string& dir, const std::string& name);
std::string code(const std::string& text);  // <code>escaped</code>
// Quantile q of the finite values (linear interpolation); nan when there are none.
double quantile(std::vector<double> values, double q);
double mean_of(const std::vector<double>& values);  // of the finite values; nan when none
std::string number_or_na(double x);                 // "n/a" for a missing (NaN) value
// A number from a CSV field that may be empty (undefined): NaN when empty.
double optional_number(const CsvTable& table, std::size_t row, const std::string& column);
nlohmann::json read_json(const std::string& path);  // a JSON file of a run folder, checked
inline const std::string kGrid = std::string("  set grid lc rgb '") + palette::kGridLine + "'\n";

// ---- an extract folder, aggregated over heads -------------------------------------------

// Mean and interquartile range over heads, per position.
struct PositionStats {
    std::vector<double> mean, q25, q75;  // [positions]
    std::vector<int> heads;              // [positions]
};

// Running means keyed by an integer (N or position).
struct MeanPR {
    double p = 0, r = 0;
    int heads = 0;
};

// Everything the extract figures need, aggregated over heads.
struct ExtractData {
    std::string dir;
    nlohmann::json manifest;
    compare::EmpiricalRun run;  // the folder as read: run.rows [layers · heads] per head
    PositionStats norm, alpha;
    PerRegime<std::vector<double>> contrib_by_regime;  // [regimes][positions]
    PerRegime<int> regime_heads{};
    std::map<int, MeanPR> pr_global;
    PerRegime<std::map<int, MeanPR>> pr_by_regime;
    int positions = 0;
    int max_n = 1;

    // The index in run.rows of (layer, head); −1 when the model has no such head.
    int find(int layer, int head) const {
        if (layer < 0 || layer >= run.layers || head < 0 || head >= run.heads) return -1;
        return layer * run.heads + head;
    }
};

// Reads `dir` through compare's strict extract reader (the one reader of an extract folder)
// and aggregates heads.csv, by_position.csv and pr.csv over heads.
ExtractData load_extract(const std::string& dir);

// Streams the named numeric columns of a CSV row by row (CsvTable would keep every field of
// a million-row file as a string). Throws InputError naming the file on a missing column, a
// ragged line or a field that is not a number.
void stream_numeric_csv(const std::string& path, const std::vector<std::string>& columns,
                        const std::function<void(const std::vector<double>&)>& row);

// ---- a compare folder -------------------------------------------------------------------

// Envelope lines for Figure 5: variant → N → (P_lower, P_upper, R_lower, R_upper).
using Envelopes = std::map<std::string, std::map<int, std::array<double, 4>>>;

// A fitted Assumption-3 profile to overlay on Figure 4: α at positions 0..L.
struct FittedProfile {
    std::vector<double> alpha;  // [L + 1]
    std::string description;    // HTML
};

struct FitRow {
    int layer, head;
    double beta, mae, beta_offset, c_inf, mae_offset;
};

// The compare folder's own files, read before anything is drawn.
struct CompareFolder {
    CsvTable fits, profile, envelope, agreement, violations, corr;
    // profile_global.csv: one row, the profile fitted to the mean α over heads (from an older
    // folder: profile.csv's layer −1 row, moved here so `profile` holds only heads).
    CsvTable profile_global;
    nlohmann::json kappa;
    bool per_kv = false;  // compare --count-per kv (value-state statistics once per kv head)
    std::string unit;     // what histograms count, for captions (counting_unit)
    std::vector<FitRow> fit_rows;                       // [heads] fits.csv
    std::vector<double> mae, cv_positional, cv_pooled;  // [counted heads]
    Envelopes envelopes;  // at each side's judged κ (bounds.csv's *_edge columns)
    std::string envelope_source;
    std::map<int, MeanPR> envelope_means;  // envelope.csv's measured means by N
};
CompareFolder load_compare(const RunFolder& run);

// The fitted global profile (profile_global.csv's row) at positions 0..L; nullopt when the row
// is missing or not a valid Assumption-3 profile.
std::optional<FittedProfile> global_profile(const CsvTable& profile_global, int L);
// The compare manifest's parameters.max_lag_fit (InputError naming `manifest_path` otherwise).
int fit_lag_count(const nlohmann::json& manifest, const std::string& manifest_path);
// E[P], E[R] by N of the simulate folder `dir`, read through the simulate-folder reader.
std::map<int, MeanPR> read_simulation(const std::string& dir);

// "…" for captions: what one value of a histogram or median stands for.
std::string counting_unit(bool per_kv);

}  // namespace attngeo::reports::empirical
