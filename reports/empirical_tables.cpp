// The empirical report's tables; see empirical_tables.hpp.
#include "reports/empirical_tables.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <sstream>

#include "common/json_file.hpp"
#include "common/run_schema.hpp"
#include "reports/verdict.hpp"
#include "reports/html.hpp"

namespace fs = std::filesystem;

namespace attngeo::reports::empirical {
namespace {

// A head whose regime_margin (the ratio of the two magnitudes deciding its label) is below
// this would change regime if one of them moved by 10%.
constexpr double kNearBoundaryMargin = 1.1;

}  // namespace

std::string near_boundary_text(const std::vector<std::pair<int, double>>& regime_margins) {
    PerRegime<int> near{}, total{};
    int recorded = 0;
    for (const auto& [regime, margin] : regime_margins) {
        if (std::isnan(margin)) continue;
        ++recorded;
        ++total[regime];
        near[regime] += margin < kNearBoundaryMargin;
    }
    if (recorded == 0) return "";
    std::ostringstream out;
    out << " Near the boundary (regime_margin &lt; " << short_number(kNearBoundaryMargin)
        << ": the two magnitudes deciding the label within 10%): ";
    int near_all = 0;
    for (int r = 0; r < kRegimeCount; ++r) {
        out << near[r] << " of " << total[r] << ' ' << regime_name(r) << ", ";
        near_all += near[r];
    }
    out << near_all << " of " << recorded << " overall.";
    return out.str();
}

std::string model_table(const ExtractData& e) {
    const auto& m = e.manifest;
    std::vector<std::vector<std::string>> rows;
    if (m.contains("model") && m.at("model").is_object())
        for (const auto& [key, value] : m.at("model").items())
            rows.push_back({"model." + key, html_escape(json_text(value))});
    if (m.contains("tokenizer"))
        rows.push_back({"tokenizer", html_escape(json_text(m.at("tokenizer")))});
    if (m.contains("parameters") && m.at("parameters").is_object()) {
        for (const char* key :
             {"context", "corpus", "dtype", "device", "bos", "rank", "distance", "N"})
            if (m.at("parameters").contains(key))
                rows.push_back({key, html_escape(json_text(m.at("parameters").at(key)))});
    }
    if (m.contains("documents") && m.at("documents").is_object())
        for (const auto& [key, value] : m.at("documents").items())
            rows.push_back({"documents." + key, html_escape(json_text(value))});
    rows.push_back({"heads in heads.csv", std::to_string(e.run.rows.size())});
    rows.push_back({"positions in by_position.csv", std::to_string(e.positions)});
    if (m.contains("timings") && m.at("timings").contains("total_s"))
        rows.push_back({"extract time (s)", json_text(m.at("timings").at("total_s"))});
    if (m.contains("version"))
        rows.push_back({"version / commit", html_escape(json_text(m.at("version")) + " / " +
                                                        json_text(m.value("git_commit", "")))});
    if (m.contains("command")) rows.push_back({"command", code(json_text(m.at("command")))});
    return html_table({"fact", "value"}, rows);
}

std::string layer_table(const ExtractData& e) {
    struct Acc {
        std::vector<double> lambda, rho0, cv_positional, cv_pooled;
        PerRegime<int> counts{};
    };
    std::map<int, Acc> layers;
    for (const auto& h : e.run.rows) {
        Acc& a = layers[h.layer];
        a.lambda.push_back(h.lambda);
        a.rho0.push_back(h.rho0);
        a.cv_positional.push_back(h.cv_positional);
        a.cv_pooled.push_back(h.cv_pooled);
        a.counts[regime_index(h.regime)]++;
    }
    std::vector<std::vector<std::string>> rows;
    for (const auto& [layer, a] : layers) {
        std::vector<std::string> row = {std::to_string(layer),
                                        std::to_string(a.lambda.size()),
                                        short_number(mean_of(a.lambda)),
                                        short_number(mean_of(a.rho0)),
                                        short_number(mean_of(a.cv_positional)),
                                        short_number(mean_of(a.cv_pooled))};
        for (int count : a.counts)
            row.push_back(std::to_string(count));
        rows.push_back(row);
    }
    std::vector<std::string> header = {
        "layer", "heads", "mean λ", "mean ρ0", "mean cv_positional", "mean cv_pooled"};
    for (int r = 0; r < kRegimeCount; ++r)
        header.push_back(regime_name(r));
    return "<p>Per layer, means over its heads of " + code(schema::file::heads) +
           " columns, and the regime counts.</p>\n" + html_table(header, rows);
}

std::map<int, PerRegime<int>> regime_counts(const ExtractData& e) {
    std::map<int, PerRegime<int>> counts;
    for (const auto& h : e.run.rows)
        counts[h.layer][regime_index(h.regime)]++;
    return counts;
}

std::vector<double> head_column(const ExtractData& e, double compare::EmpiricalHead::*field,
                                bool per_kv) {
    std::vector<double> out;
    std::set<std::pair<int, int>> seen;
    for (const auto& h : e.run.rows)
        if (!per_kv || seen.insert({h.layer, h.kv_head}).second) out.push_back(h.*field);
    return out;
}

std::string near_boundary_of(const ExtractData& e) {
    std::vector<std::pair<int, double>> pairs;
    for (const auto& h : e.run.rows)
        pairs.push_back({regime_index(h.regime), h.regime_margin});
    return near_boundary_text(pairs);
}

std::string fits_table(const CsvTable& fits, const std::string& unit) {
    std::vector<std::vector<std::string>> rows;
    for (const char* column : {"beta", "mae", "beta_offset", "c_inf", "mae_offset", "lambda", "C",
                               "rho0", "cv_positional", "cv_pooled"}) {
        std::vector<double> v;
        for (std::size_t r = 0; r < fits.rows.size(); ++r)
            if (fits.integer(r, "counted") != 0) v.push_back(fits.number(r, column));
        int finite = 0;
        for (double x : v)
            finite += std::isfinite(x);
        rows.push_back({column, number_or_na(quantile(v, 0.5)), number_or_na(quantile(v, 0.25)),
                        number_or_na(quantile(v, 0.75)), number_or_na(quantile(v, 0)),
                        number_or_na(quantile(v, 1)), std::to_string(finite)});
    }
    std::ostringstream out;
    out << "<p>Distribution over " << unit << " of the fitted and measured parameters ("
        << code(fits.path) << ").</p>\n"
        << html_table({"parameter", "median", "25%", "75%", "min", "max", "finite heads"}, rows);
    std::vector<std::vector<std::string>> first;
    for (std::size_t r = 0; r < fits.rows.size() && r < 8; ++r) {
        std::vector<std::string> row;
        for (std::size_t c = 0; c < fits.header.size(); ++c) {
            const std::string& t = fits.rows[r][c];
            char* end = nullptr;
            const double x = std::strtod(t.c_str(), &end);
            row.push_back(!t.empty() && end == t.c_str() + t.size() ? short_number(x)
                                                                    : html_escape(t));
        }
        first.push_back(row);
    }
    out << "<p>The first " << first.size() << " of " << fits.rows.size() << " rows:</p>\n"
        << html_table(fits.header, first);
    return out.str();
}

std::string profile_table(const CsvTable& profile, const CsvTable& profile_global) {
    std::vector<std::vector<std::string>> rows;
    for (std::size_t r = 0; r < profile_global.rows.size(); ++r) {
        std::vector<std::string> row = {"global (mean over heads)"};
        for (const char* c : {"p_sink", "p_base", "eta", "omega", "T1", "T2", "r2_log", "rmse_log"})
            row.push_back(short_number(profile_global.number(r, c)));
        rows.push_back(row);
    }
    std::vector<double> r2;
    int clamped = 0;                  // heads with a fitted value at a clamp
    std::vector<std::string> failed;  // "layer L head H" of heads whose fit failed (n/a)
    for (std::size_t r = 0; r < profile.rows.size(); ++r) {
        if (profile.text(r, "fit_failed") == "1") {
            failed.push_back("layer " + profile.text(r, "layer") + " head " +
                             profile.text(r, "head"));
            continue;
        }
        r2.push_back(profile.number(r, "r2_log"));
        if (profile.text(r, "at_bound") == "1") ++clamped;
    }
    std::ostringstream out;
    out << "<p>Assumption-3 profile fitted to the mean α by position (" << code(profile_global.path)
        << ").";
    if (!r2.empty())
        out << " Per-head fits (" << code(profile.path) << "): median R² of log α "
            << short_number(quantile(r2, 0.5)) << " (interquartile "
            << short_number(quantile(r2, 0.25)) << "–" << short_number(quantile(r2, 0.75)) << ", "
            << r2.size() << " heads).";
    out << " " << clamped << " of " << r2.size()
        << " per-head fits have a value at a clamp of the search (η at its limit, ω at 0 or "
           "π, p<sub>sink</sub> below 10<sup>−9</sup>; column <code>at_bound</code>).";
    if (!failed.empty())
        out << " <span class=\"warn\">" << failed.size() << " of " << failed.size() + r2.size()
            << " per-head fits failed and are n/a (column <code>fit_failed</code>; why in "
               "manifest.json's <code>profile_fits_failed</code>), so their N have no Table-2 "
               "regime: ";
    for (std::size_t i = 0; i < failed.size(); ++i)
        out << (i > 0 ? ", " : "") << html_escape(failed[i]);
    if (!failed.empty()) out << ".</span>";
    out << "</p>\n"
        << html_table(
               {"fit", "p_sink", "p_base", "η", "ω", "T1", "T2", "R² (log α)", "RMSE (log α)"},
               rows);
    return out.str();
}

std::string kappa_table(const nlohmann::json& kappa, const std::string& source) {
    std::vector<std::vector<std::string>> rows;
    for (const std::string& name : variant_names()) {
        const auto& v = kappa.at("variants").at(name);
        auto field = [&](const char* key) { return html_escape(json_text(v.at(key))); };
        const nlohmann::json& rows_kappa = v.at("rows_kappa");
        const std::string how = " (" + html_escape(v.at("rows_rule").get<std::string>()) + ")";
        const nlohmann::json& share = v.at("information_share").at("both");
        // The fraction inside only next to the width: a [0, 1] envelope contains everything.
        rows.push_back({code(name), (rows_kappa.is_null() ? "—" : field("rows_kappa")) + how,
                        field("fraction_inside") + " / " + field("mean_width"),
                        share.is_null() ? "–" : html_escape(json_text(share))});
    }
    return "<p>The κ of each bound variant's rows (" + code(source) +
           "; cosines: " + html_escape(kappa.at("cosines").get<std::string>()) +
           "): one κ consistent on all four sides, or — when none is — each side at its own "
           "judged κ (bounds.csv's <code>kappa</code> is then empty). The fraction of points "
           "inside is descriptive (the verdict judges each side by its κ set); the information "
           "share is the share of the trivial range the envelope rules out.</p>\n" +
           html_table({"variant", "bound rows' κ (rule)",
                       "fraction of points inside / mean envelope width", "information share"},
                      rows);
}

// `widths`: (variant, layer) → mean envelope width (mean_widths_by_layer; layer −1: global).
std::string agreement_tables(const CsvTable& agreement,
                             const std::map<std::pair<std::string, int>, double>& widths) {
    const auto width = [&](const std::string& variant, int layer) {
        const auto it = widths.find({variant, layer});
        return it == widths.end() ? std::string("?") : short_number(it->second);
    };
    std::vector<std::vector<std::string>> global;
    std::map<int, std::map<std::string, std::string>> by_layer;
    for (std::size_t r = 0; r < agreement.rows.size(); ++r) {
        const double worst = agreement.number(r, "worst_excess");
        const std::string worst_text =
            worst > 0 ? "<span class=\"bad\">" + short_number(worst) + "</span>"
                      : short_number(worst);
        if (agreement.text(r, "scope") == "global") {
            global.push_back({html_escape(agreement.text(r, "variant")),
                              agreement.text(r, "points"), agreement.text(r, "inside"),
                              short_number(agreement.number(r, "fraction")),
                              width(agreement.text(r, "variant"), -1), worst_text});
        } else {
            const int layer = static_cast<int>(agreement.number(r, "layer"));
            by_layer[layer][agreement.text(r, "variant")] =
                short_number(agreement.number(r, "fraction")) + " / " +
                width(agreement.text(r, "variant"), layer) + " (" + worst_text + ")";
        }
    }
    std::ostringstream out;
    out << "<p>Envelope agreement (" << code(agreement.path)
        << "): a point is one (head, N, metric P or R); inside means lower ≤ value ≤ upper, at "
           "the variant's single κ. The fraction inside always stands next to the envelope's "
           "mean width (bounds.csv): a [0, 1] envelope contains everything.</p>\n"
        << html_table({"variant", "points", "inside", "fraction inside", "mean envelope width",
                       "worst excess"},
                      global);
    if (!by_layer.empty()) {
        std::vector<std::string> layer_header = {"layer"};
        layer_header.insert(layer_header.end(), variant_names().begin(), variant_names().end());
        std::vector<std::vector<std::string>> rows;
        for (const auto& [layer, cells] : by_layer) {
            std::vector<std::string> row = {std::to_string(layer)};
            for (const std::string& v : variant_names())
                row.push_back(cells.count(v) ? cells.at(v) : "");
            rows.push_back(row);
        }
        out << "<p>Per layer: fraction inside / mean envelope width (worst excess).</p>\n"
            << html_table(layer_header, rows);
    }
    return out.str();
}

std::string violations_table(const CsvTable& violations) {
    if (violations.rows.empty()) return "<p>No point lies outside any envelope.</p>\n";
    std::map<std::string, int> shown;
    std::vector<std::vector<std::string>> rows;
    for (std::size_t r = 0; r < violations.rows.size(); ++r) {
        const std::string variant = violations.text(r, "variant");
        if (shown[variant]++ >= 8) continue;
        rows.push_back({html_escape(variant), violations.text(r, "layer"),
                        violations.text(r, "head"), violations.text(r, "N"),
                        html_escape(violations.text(r, "metric")),
                        short_number(violations.number(r, "value")),
                        short_number(violations.number(r, "lower")),
                        short_number(violations.number(r, "upper")),
                        short_number(violations.number(r, "excess"))});
    }
    return "<p>The largest violations, at most 8 per variant (" + code(violations.path) +
           " keeps 20 per variant, excess descending).</p>\n" +
           html_table(
               {"variant", "layer", "head", "N", "metric", "value", "lower", "upper", "excess"},
               rows);
}

namespace {

// fitted_params.json's values as a table, then the simulate command that reproduces them.
std::string fitted_params_rows(const std::string& path, const nlohmann::json& j) {
    std::vector<std::vector<std::string>> rows;
    std::string command;
    for (const auto& [key, value] : j.items()) {
        if (key == "simulate_command") {
            command = json_text(value);
            continue;
        }
        if (value.is_object()) {
            for (const auto& [inner, v] : value.items())
                rows.push_back({html_escape(key + "." + inner), html_escape(json_text(v))});
        } else {
            rows.push_back({html_escape(key), html_escape(json_text(value))});
        }
    }
    std::string out = "<p>Global fitted parameters (" + code(path) + ").</p>\n" +
                      html_table({"parameter", "value"}, rows);
    if (!command.empty()) out += "<p>To simulate them: " + code(command) + "</p>\n";
    return out;
}

}  // namespace

std::string fitted_params_html(const std::string& path) {
    const nlohmann::json j = read_json(path);
    return with_json_context(path, [&] { return fitted_params_rows(path, j); });
}

std::string parameters_table(const nlohmann::json& manifest) {
    std::vector<std::vector<std::string>> rows;
    for (const char* key : {"emp", "sim"}) {
        const bool given = manifest.contains(key) && !manifest.at(key).is_null();
        rows.push_back({key, given ? code(json_text(manifest.at(key))) : "none"});
    }
    if (manifest.contains("parameters") && manifest.at("parameters").is_object())
        for (const auto& [key, value] : manifest.at("parameters").items())
            rows.push_back({html_escape(key), html_escape(json_text(value))});
    if (manifest.contains("version"))
        rows.push_back(
            {"version / commit", html_escape(json_text(manifest.at("version")) + " / " +
                                             json_text(manifest.value("git_commit", "")))});
    if (manifest.contains("command"))
        rows.push_back({"command", code(json_text(manifest.at("command")))});
    return html_table({"parameter", "value"}, rows);
}

std::string table1_html(const std::string& dir, const nlohmann::json& manifest) {
    return reports::table1_html(
        dir, manifest, "at the fitted parameters (the simulate command of fitted_params.json; ");
}

std::string recovery_table(const CsvTable& coverage) {
    auto cell = [&](std::size_t r, const char* column) {
        if (!coverage.has_column(column)) return std::string("—");
        const std::string& text = coverage.text(r, column);
        return text.empty() ? std::string("—") : short_number(coverage.number(r, column));
    };
    auto count = [&](std::size_t r, const char* column) {
        return coverage.has_column(column) ? coverage.integer(r, column) : std::int64_t{0};
    };
    // A share below `threshold` marked bad: below 0.9 a nominal 95 % interval is clearly
    // miscalibrated; below 0.85 the unflagged intervals break the calibration rule
    // (docs/design.md §7, "Fit intervals calibrated under noise").
    auto share = [&](std::size_t r, const char* column, double threshold) {
        const bool low = coverage.has_column(column) && !coverage.text(r, column).empty() &&
                         coverage.number(r, column) < threshold;
        return low ? "<span class=\"bad\">" + cell(r, column) + "</span>" : cell(r, column);
    };
    std::vector<std::vector<std::string>> rows;
    int with_interval = 0;
    for (std::size_t r = 0; r < coverage.rows.size(); ++r) {
        const std::int64_t intervals = count(r, "with_interval"), exact = count(r, "exact");
        with_interval += intervals + exact > 0;
        // A zero-width interval (no noise in what the fit rests on) is no coverage to count.
        std::string covered =
            intervals > 0 ? coverage.text(r, "covered") + " of " + coverage.text(r, "with_interval")
                          : std::string();
        if (exact > 0)
            covered += (covered.empty() ? "" : "; ") +
                       (intervals > 0 ? std::to_string(exact) + " exact (no noise)"
                                      : std::string("exact (no noise)"));
        rows.push_back({code(coverage.text(r, "parameter")), coverage.text(r, "heads"),
                        coverage.text(r, "fitted"), covered.empty() ? "—" : covered,
                        share(r, "coverage", 0.9), coverage.text(r, "flagged"),
                        share(r, "unflagged_coverage", 0.85), cell(r, "median_abs_error"),
                        cell(r, "max_abs_error")});
    }
    std::ostringstream out;
    out << "<p>The extract folder's heads were planted with known parameters (attngeo simulate "
           "--as-extract); each fit is set against the truth head by head in "
        << code(schema::file::recovery)
        << ". Covered: the fit's 95 % interval contains the truth — the "
           "planted value, or for β, β_offset, c∞ and ρ0 what the generator realises at the "
           "planted d (its normalised Gaussian directions have E cos slightly below r^k) — "
        << "(nominal coverage 0.95). Exact (no noise): the interval has zero width because "
           "nothing the fit rests on varies between documents (no α noise, no norm noise), so "
           "there is no coverage to count. Flagged: the fit is marked doubtful in compare's own "
           "tables (unidentified, a clamp, a failed fit, profile R² of log α below 0.9); "
           "unflagged coverage is over the rest, the intervals a reader is asked to trust, and "
           "must be at least 0.85.";
    if (with_interval == 0)
        out << " <span class=\"warn\">No fit in this folder has an interval (no "
               "<code>&lt;name&gt;_lo</code>, <code>&lt;name&gt;_hi</code> columns): coverage "
               "cannot be assessed, only the errors.</span>";
    out << "</p>\n";
    return out.str() +
           html_table({"parameter", "heads", "fitted", "covered", "coverage", "flagged",
                       "unflagged coverage", "median |fitted − truth|", "max |fitted − truth|"},
                      rows);
}

}  // namespace attngeo::reports::empirical
