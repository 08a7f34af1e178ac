// The calibration section of a simulate report; see calibration_section.hpp. Every number is
// calibration.csv's; the manifest's block says how the runs were made.
#include "reports/calibration_section.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <sstream>
#include <vector>

#include "common/errors.hpp"
#include "common/json_file.hpp"
#include "common/manifest_values.hpp"
#include "common/run_columns.hpp"
#include "common/run_schema.hpp"
#include "reports/csv_table.hpp"
#include "reports/html.hpp"
#include "reports/verdict_text.hpp"

namespace fs = std::filesystem;

namespace attngeo::reports {
namespace {

// One row of calibration.csv.
struct CalibrationRow {
    std::string side;  // "P lower"
    bool planted_true = true;
    double shift = 0;
    int runs = 0, falsified = 0;
    double rate = 0, ci_lo = 0, ci_hi = 0;
};

std::vector<CalibrationRow> read_rows(const std::string& path) {
    const CsvTable t = read_table_with_columns(
        path, schema::csv_column_names(schema::page::simulate, schema::file::calibration));
    std::vector<CalibrationRow> rows;
    for (std::size_t r = 0; r < t.rows.size(); ++r) {
        const std::string& metric = t.text(r, "metric");
        const std::string& side = t.text(r, "side");
        const std::string& planted = t.text(r, "planted");
        if ((metric != "P" && metric != "R") || (side != "lower" && side != "upper"))
            throw InputError(t.where(r, "side") + ": '" + metric + " " + side +
                             "' is not a side (P or R, lower or upper)");
        if (planted != "true" && planted != "false")
            throw InputError(t.where(r, "planted") + ": '" + planted + "', expected true or false");
        rows.push_back({metric + " " + side, planted == "true", t.finite_number(r, "shift"),
                        static_cast<int>(t.integer(r, "runs")),
                        static_cast<int>(t.integer(r, "falsified")), t.finite_number(r, "rate"),
                        t.finite_number(r, "ci_lo"), t.finite_number(r, "ci_hi")});
    }
    return rows;
}

std::string percent(double x) {
    return verdict_words::digits(100 * x, 3) + " %";
}

// "17 of 200 (8.5 %, 5.03–13.3 %)".
std::string rate_cell(const CalibrationRow& c) {
    return std::to_string(c.falsified) + " of " + std::to_string(c.runs) + " (" + percent(c.rate) +
           "; " + percent(c.ci_lo) + "–" + percent(c.ci_hi) + ")";
}

// The planted shifts δ of the false bounds, ascending.
std::vector<double> shifts_of(const std::vector<CalibrationRow>& rows) {
    std::vector<double> shifts;
    for (const CalibrationRow& c : rows)
        if (!c.planted_true && std::find(shifts.begin(), shifts.end(), c.shift) == shifts.end())
            shifts.push_back(c.shift);
    std::sort(shifts.begin(), shifts.end());
    return shifts;
}

const CalibrationRow* find_row(const std::vector<CalibrationRow>& rows, const std::string& side,
                               bool planted_true, double shift) {
    for (const CalibrationRow& c : rows)
        if (c.side == side && c.planted_true == planted_true && (planted_true || c.shift == shift))
            return &c;
    return nullptr;
}

std::string table_html(const std::vector<CalibrationRow>& rows, double level) {
    const std::vector<double> shifts = shifts_of(rows);
    std::vector<std::string> header = {"side", "false alarms on true bounds (rate; 95 % interval)"};
    for (double d : shifts)
        header.push_back("detected, δ = " + verdict_words::digits(d, 3));
    std::vector<std::vector<std::string>> cells;
    for (const char* side : {"P lower", "P upper", "R lower", "R upper"}) {
        std::vector<std::string> row = {side};
        const CalibrationRow* t = find_row(rows, side, true, 0);
        const bool above = t && t->ci_lo > level;
        row.push_back(!t      ? "–"
                      : above ? "<span class=\"bad\">" + rate_cell(*t) + "</span>"
                              : rate_cell(*t));
        for (double d : shifts) {
            const CalibrationRow* f = find_row(rows, side, false, d);
            row.push_back(f ? rate_cell(*f) : "–");
        }
        cells.push_back(row);
    }
    return html_table(header, cells);
}

// "2–8.5 %" or "100 %": the range of the rates of `pick`ed rows.
std::string rate_range(const std::vector<CalibrationRow>& rows, bool planted_true, double shift) {
    double lo = HUGE_VAL, hi = -HUGE_VAL;
    for (const CalibrationRow& c : rows)
        if (c.planted_true == planted_true && (planted_true || c.shift == shift))
            lo = std::min(lo, c.rate), hi = std::max(hi, c.rate);
    if (!(lo <= hi)) return "–";
    return lo == hi ? percent(lo)
                    : verdict_words::digits(100 * lo, 3) + "–" +
                          verdict_words::digits(100 * hi, 3) + " %";
}

std::string sentence_of(const std::vector<CalibrationRow>& rows, double level, int runs) {
    std::ostringstream s;
    s << "<p><b>Calibration</b> (" << runs << " runs with planted bounds, below): false alarms on "
      << "true bounds " << rate_range(rows, true, 0) << " by side";
    std::vector<std::string> above;
    for (const CalibrationRow& c : rows)
        if (c.planted_true && c.ci_lo > level)
            above.push_back(c.side + " " + std::to_string(c.falsified) + " of " +
                            std::to_string(c.runs) + ", interval from " + percent(c.ci_lo));
    if (!above.empty())
        s << " — <span class=\"bad\">above the " << percent(level) << " the band promises:</span> "
          << verdict_words::join(above);
    std::vector<std::string> power;
    for (double d : shifts_of(rows))
        power.push_back("δ = " + verdict_words::digits(d, 3) + " in " + rate_range(rows, false, d));
    if (!power.empty()) s << "; false bounds detected, " << verdict_words::join(power);
    s << ".</p>";
    return s.str();
}

std::string sizes_text(const nlohmann::json& sizes) {
    std::vector<std::string> items;
    for (const auto& N : sizes)
        items.push_back(std::to_string(json_integer<int>(N)));
    if (items.size() > 3) return items.front() + "–" + items.back();
    return verdict_words::join(items);
}

}  // namespace

std::optional<CalibrationView> calibration_of(const RunFolder& run) {
    const std::string path = (fs::path(run.dir) / schema::file::calibration).string();
    if (!fs::exists(path)) return std::nullopt;
    const std::vector<CalibrationRow> rows = read_rows(path);
    CalibrationView view;
    with_json_context(run_manifest_path(run.dir), [&] {
        const nlohmann::json& block = run.manifest.at("calibration");
        const double level = json_number_value(block.at("level"));
        const int runs = json_integer<int>(block.at("runs"));
        for (const CalibrationRow& c : rows)
            if (c.runs != runs)
                throw InputError("'" + path + "': " + std::to_string(c.runs) + " runs of " +
                                 c.side + ", but the manifest's calibration has " +
                                 std::to_string(runs));
        view.sentence = sentence_of(rows, level, runs);
        std::ostringstream html;
        html << "<p>The verdict's band judged against planted bounds (" << html_escape(path)
             << "): " << runs << " independent runs of "
             << json_integer<long long>(block.at("trials_per_run")) << " trials; the truth from "
             << json_integer<long long>(block.at("truth_trials"))
             << " trials; the false bounds moved δ standard errors past the truth at N = "
             << sizes_text(block.at("window_N").at("P")) << " (P) and "
             << sizes_text(block.at("window_N").at("R"))
             << " (R). A true bound is falsified somewhere in at most " << percent(level)
             << " of the runs if the band is right (marked where the interval lies above "
                "it).</p>\n"
             << table_html(rows, level) << "<p class=\"files\">Rule (manifest.json): "
             << html_escape(block.at("rule").get<std::string>()) << "</p>\n";
        view.section.title = "Calibration of the verdict: planted true and false bounds";
        view.section.html_before = html.str();
    });
    return view;
}

}  // namespace attngeo::reports
