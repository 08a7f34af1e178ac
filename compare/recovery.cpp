// Planted-parameter recovery: planted.csv read strictly, matched to fits.csv and profile.csv by
// (layer, head), and summarised per parameter; see recovery.hpp.
#include "compare/recovery.hpp"

#include <algorithm>
#include <cmath>
#include <set>
#include <sstream>

#include "common/errors.hpp"
#include "common/format.hpp"
#include "common/order_statistics.hpp"
#include "common/run_columns.hpp"
#include "common/run_schema.hpp"
#include "compare/fits.hpp"
#include "theory/cosine_geometry.hpp"

namespace attngeo::compare {
namespace {

bool from_fits_csv(const std::string& parameter) {
    static const std::set<std::string> in_fits = {"beta",   "beta_offset", "c_inf",
                                                  "lambda", "C",           "rho0"};
    return in_fits.count(parameter) > 0;
}

// The truth of `parameter` for one head, when planted.csv gives it (or implies it).
std::optional<double> truth_of(const PlantedTruth& t, const std::string& parameter) {
    if (auto it = t.values.find(parameter); it != t.values.end()) return it->second;
    const bool planted_decay = t.values.count("beta") > 0;
    if (parameter == "beta_offset" && planted_decay) return t.values.at("beta");
    if (parameter == "c_inf" && planted_decay) return 0.0;
    return std::nullopt;
}

// Row index of every (layer, head) of a compare table.
std::map<std::pair<int, int>, std::size_t> rows_by_head(const CsvTable& table) {
    std::map<std::pair<int, int>, std::size_t> index;
    for (std::size_t r = 0; r < table.rows.size(); ++r)
        index[{static_cast<int>(table.integer(r, "layer")),
               static_cast<int>(table.integer(r, "head"))}] = r;
    return index;
}

std::optional<double> optional_number(const CsvTable& table, std::size_t row,
                                      const std::string& column) {
    if (!table.has_column(column) || table.text(row, column).empty()) return std::nullopt;
    return table.number(row, column);
}

bool flag_set(const CsvTable& table, std::size_t row, const std::string& column) {
    return table.has_column(column) && table.text(row, column) == "1";
}

// Whether `parameter` is in the row's `unidentified` list (fits.csv, profile.csv: names joined
// by ';').
bool listed_unidentified(const CsvTable& table, std::size_t row, const std::string& parameter) {
    if (!table.has_column("unidentified")) return false;
    std::stringstream list(table.text(row, "unidentified"));
    for (std::string name; std::getline(list, name, ';');)
        if (name == parameter) return true;
    return false;
}

bool fit_flagged(const CsvTable& table, std::size_t row, const std::string& parameter) {
    if (flag_set(table, row, parameter + "_unidentified") ||
        listed_unidentified(table, row, parameter))
        return true;
    if (parameter == "beta")
        return flag_set(table, row, "beta_at_bound") || flag_set(table, row, "beta_uninformative");
    if (parameter == "beta_offset" || parameter == "c_inf")
        return flag_set(table, row, "beta_offset_at_bound");
    if (from_fits_csv(parameter)) return false;
    // p_sink is α_0 itself, whatever the shape's fit: only a failed fit or an empty sink.
    if (parameter == "p_sink")
        return flag_set(table, row, "fit_failed") || flag_set(table, row, "p_sink_at_bound");
    const std::optional<double> r2 = optional_number(table, row, "r2_log");
    return flag_set(table, row, "fit_failed") || flag_set(table, row, "at_bound") || !r2 ||
           !(*r2 >= kProfileR2Threshold);
}

bool finite_interval(std::optional<double> lo, std::optional<double> hi) {
    return lo && hi && std::isfinite(*lo) && std::isfinite(*hi);
}

// The statistics are formed from float32 captures (α, values), so a fit can sit a float
// rounding away from the double truth, and a noise-free replicate a rounding away from another.
constexpr double kFloatSlack = 1e-6;  // relative

std::optional<bool> zero_width(std::optional<double> lo, std::optional<double> hi) {
    if (!finite_interval(lo, hi)) return std::nullopt;
    return *hi - *lo <= kFloatSlack * std::max(std::abs(*lo), std::abs(*hi));
}

// Whether the interval's zero width means "no noise": for the shape's η, ω, T1, T2 only when
// p_base's interval (the normalisation, which any noise in α moves) has zero width too — T1 and
// T2 are integers, and every replicate can land on the same one under noise (as can ω = 0 when
// no replicate has an oscillatory phase); their interval then counts as any other.
std::optional<bool> exact_interval(const CsvTable& table, std::size_t row,
                                   const std::string& parameter, std::optional<double> lo,
                                   std::optional<double> hi) {
    const std::optional<bool> own = zero_width(lo, hi);
    const bool shape =
        parameter == "eta" || parameter == "omega" || parameter == "T1" || parameter == "T2";
    if (!own || !*own || !shape) return own;
    const std::optional<bool> base = zero_width(optional_number(table, row, "p_base_lo"),
                                                optional_number(table, row, "p_base_hi"));
    return base.value_or(true);
}

std::optional<bool> covers(double planted, std::optional<double> lo, std::optional<double> hi) {
    if (!finite_interval(lo, hi)) return std::nullopt;
    const double slack = kFloatSlack * std::max({std::abs(planted), std::abs(*lo), std::abs(*hi)});
    return *lo - slack <= planted && planted <= *hi + slack;
}

std::string optional_text(const std::optional<double>& x) {
    return x ? format_double(*x) : std::string();
}

}  // namespace

const std::vector<std::string>& recovered_parameters() {
    return schema::fitted_parameters();
}

std::vector<PlantedTruth> read_planted_truth(const std::string& path, int layers, int heads) {
    const CsvTable table = read_csv_table(path);
    (void)table.column("layer"), (void)table.column("head");
    const auto& names = recovered_parameters();
    if (std::none_of(names.begin(), names.end(),
                     [&](const std::string& n) { return table.has_column(n); }))
        throw InputError("'" + path +
                         "': no planted parameter column (expected some of beta, lambda, C, "
                         "rho0, p_sink, p_base, eta, omega, T1, T2)");
    if (table.rows.empty()) throw InputError("'" + path + "': no planted heads (no rows)");
    std::vector<PlantedTruth> truth;
    std::set<std::pair<int, int>> seen;
    for (std::size_t r = 0; r < table.rows.size(); ++r) {
        PlantedTruth t;
        const std::int64_t layer = table.integer(r, "layer"), head = table.integer(r, "head");
        if (layer < 0 || layer >= layers || head < 0 || head >= heads)
            throw InputError(table.where(r, "layer") + ": head (" + std::to_string(layer) + ", " +
                             std::to_string(head) + ") is not in the extract folder (" +
                             std::to_string(layers) + " layers x " + std::to_string(heads) +
                             " heads)");
        t.layer = static_cast<int>(layer), t.head = static_cast<int>(head);
        if (!seen.insert({t.layer, t.head}).second)
            throw InputError(table.where(r, "head") + ": layer " + std::to_string(layer) +
                             " head " + std::to_string(head) + " planted twice");
        for (const std::string& column : table.header)
            if (column != "layer" && column != "head")
                t.values[column] = table.finite_number(r, column);
        truth.push_back(std::move(t));
    }
    return truth;
}

double realised_truth(const std::string& parameter, double planted, const PlantedTruth& head,
                      int lags) {
    const auto d = head.values.find("d");
    // Beyond 1e7 dimensions c_d(ρ) is ρ to within 1e-7 (and d must fit an int).
    if (d == head.values.end() || !(d->second >= 1 && d->second <= 1e7) || lags < 1) return planted;
    const int dimension = static_cast<int>(d->second);
    // Only values the generator accepts are realised (ρ0 a cosine, β > 0).
    if (parameter == "rho0")
        return std::abs(planted) <= 1 ? theory::expected_normalized_cosine(planted, dimension)
                                      : planted;
    const auto beta = head.values.find("beta");
    const bool decay = parameter == "beta" || parameter == "beta_offset" || parameter == "c_inf";
    if (!decay || beta == head.values.end() || !(beta->second > 0)) return planted;
    std::vector<double> cosines(lags);
    for (int k = 1; k <= lags; ++k)
        cosines[k - 1] = theory::expected_normalized_cosine(std::exp(-beta->second * k), dimension);
    if (parameter == "beta") return fit_exponential_decay(cosines).beta;
    if (lags < 2) return planted;  // the offset model has two parameters
    const OffsetDecayFit offset = fit_offset_exponential_decay(cosines);
    return parameter == "beta_offset" ? offset.beta : offset.c_inf;
}

std::vector<RecoveryRow> recovery_rows(const std::vector<PlantedTruth>& truth, const CsvTable& fits,
                                       const CsvTable& profile, int lags) {
    const auto fit_rows = rows_by_head(fits), profile_rows = rows_by_head(profile);
    std::vector<RecoveryRow> rows;
    for (const PlantedTruth& t : truth) {
        for (const std::string& parameter : recovered_parameters()) {
            const std::optional<double> planted = truth_of(t, parameter);
            if (!planted) continue;
            const CsvTable& table = from_fits_csv(parameter) ? fits : profile;
            const auto& index = from_fits_csv(parameter) ? fit_rows : profile_rows;
            const auto found = index.find({t.layer, t.head});
            if (found == index.end())
                throw InputError("'" + table.path + "': no row for layer " +
                                 std::to_string(t.layer) + " head " + std::to_string(t.head));
            const std::size_t r = found->second;
            RecoveryRow row;
            row.layer = t.layer, row.head = t.head, row.parameter = parameter;
            row.planted = *planted;
            row.truth = realised_truth(parameter, *planted, t, lags);
            row.fitted = optional_number(table, r, parameter);
            row.lo = optional_number(table, r, parameter + "_lo");
            row.hi = optional_number(table, r, parameter + "_hi");
            row.exact = exact_interval(table, r, parameter, row.lo, row.hi);
            if (!row.exact.value_or(true)) row.covered = covers(row.truth, row.lo, row.hi);
            row.flagged = fit_flagged(table, r, parameter);
            rows.push_back(row);
        }
    }
    return rows;
}

std::vector<RecoveryCoverage> recovery_coverage(const std::vector<RecoveryRow>& rows) {
    std::vector<RecoveryCoverage> summary;
    for (const std::string& parameter : recovered_parameters()) {
        RecoveryCoverage c;
        c.parameter = parameter;
        std::vector<double> errors;
        for (const RecoveryRow& row : rows) {
            if (row.parameter != parameter) continue;
            ++c.heads;
            c.flagged += row.flagged;
            if (row.fitted) ++c.fitted, errors.push_back(std::abs(*row.fitted - row.truth));
            c.exact += row.exact.value_or(false);
            if (!row.covered) continue;
            ++c.with_interval, c.covered += *row.covered;
            if (!row.flagged) ++c.unflagged, c.unflagged_covered += *row.covered;
        }
        if (c.heads == 0) continue;
        if (c.with_interval > 0) c.coverage = static_cast<double>(c.covered) / c.with_interval;
        if (c.unflagged > 0)
            c.unflagged_coverage = static_cast<double>(c.unflagged_covered) / c.unflagged;
        if (!errors.empty()) {
            c.median_abs_error = median(errors);
            c.max_abs_error = *std::max_element(errors.begin(), errors.end());
        }
        summary.push_back(c);
    }
    return summary;
}

std::string recovery_csv(const std::vector<RecoveryRow>& rows) {
    std::ostringstream csv;
    auto flag = [](const std::optional<bool>& x) { return x ? std::to_string(int(*x)) : ""; };
    csv << schema::csv_header(schema::page::compare, schema::file::recovery) << '\n';
    for (const RecoveryRow& r : rows)
        csv << r.layer << ',' << r.head << ',' << r.parameter << ',' << format_double(r.planted)
            << ',' << format_double(r.truth) << ',' << optional_text(r.fitted) << ','
            << optional_text(r.lo) << ',' << optional_text(r.hi) << ',' << flag(r.exact) << ','
            << flag(r.covered) << ',' << int(r.flagged) << '\n';
    return csv.str();
}

std::string recovery_coverage_csv(const std::vector<RecoveryCoverage>& coverage) {
    std::ostringstream csv;
    csv << schema::csv_header(schema::page::compare, schema::file::recovery_coverage) << '\n';
    for (const RecoveryCoverage& c : coverage)
        csv << c.parameter << ',' << c.heads << ',' << c.fitted << ',' << c.with_interval << ','
            << c.exact << ',' << c.covered << ',' << optional_text(c.coverage) << ',' << c.flagged
            << ',' << c.unflagged << ',' << c.unflagged_covered << ','
            << optional_text(c.unflagged_coverage) << ',' << optional_text(c.median_abs_error)
            << ',' << optional_text(c.max_abs_error) << '\n';
    return csv.str();
}

nlohmann::json recovery_manifest(const std::string& truth_path,
                                 const std::vector<RecoveryCoverage>& coverage) {
    nlohmann::json per_parameter = nlohmann::json::object();
    for (const RecoveryCoverage& c : coverage)
        per_parameter[c.parameter] = {
            {"heads", c.heads},
            {"with_interval", c.with_interval},
            {"exact", c.exact},
            {"covered", c.covered},
            {"coverage", c.coverage ? nlohmann::json(*c.coverage) : nlohmann::json(nullptr)},
            {"flagged", c.flagged},
            {"unflagged", c.unflagged},
            {"unflagged_covered", c.unflagged_covered},
            {"unflagged_coverage", c.unflagged_coverage ? nlohmann::json(*c.unflagged_coverage)
                                                        : nlohmann::json(nullptr)},
            {"max_abs_error",
             c.max_abs_error ? nlohmann::json(*c.max_abs_error) : nlohmann::json(nullptr)}};
    return {{"truth", truth_path},
            {"covered",
             "lo <= truth <= hi with both ends widened by 1e-6 relative (float32 captures); "
             "truth = the planted value, except beta and beta_offset (the least-squares decay "
             "of the generator's expected normalised cosines c_d(exp(-beta k)), k = 1..K) and "
             "rho0 (c_d(rho0)) at the planted d; "
             "empty where fits.csv/profile.csv have no <name>_lo, <name>_hi for the parameter, "
             "and where the interval is exact"},
            {"exact",
             "the interval has zero width (hi - lo <= 1e-6 relative): every replicate gave the "
             "same value, as without noise; reported as exact, not counted in coverage"},
            {"unflagged_coverage",
             "covered / intervals over the heads whose fit is not flagged (the calibration "
             "rule: >= 0.85 at alpha noise 0.3 and norm CV 0.05)"},
            {"flagged",
             "beta: beta_at_bound or beta_uninformative; beta_offset, c_inf: "
             "beta_offset_at_bound; p_sink: fit_failed or p_sink_at_bound; the other profile "
             "parameters: fit_failed, at_bound or r2_log < 0.9; any parameter: named in the "
             "table's unidentified list"},
            {"truth_implied",
             "beta_offset's truth is beta and c_inf's is 0 unless planted.csv "
             "gives them"},
            {"parameters", per_parameter}};
}

}  // namespace attngeo::compare
