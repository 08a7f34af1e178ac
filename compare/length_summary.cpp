// Reading an extract folder's by-length files and summarising them over heads; see
// length_summary.hpp. The files are streamed row by row like the other extract tables.
#include "compare/length_summary.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <sstream>
#include <stdexcept>

#include "common/csv.hpp"
#include "common/errors.hpp"
#include "common/format.hpp"
#include "common/json_file.hpp"
#include "common/run_columns.hpp"
#include "common/run_schema.hpp"
#include "theory/head_regime.hpp"

namespace fs = std::filesystem;

namespace attngeo::compare {
namespace {

constexpr const char* kNoValue = "";  // an undefined value: an empty field

std::string bin_name(const LengthBin& bin) {
    return "length bin [" + std::to_string(bin.lo) + ", " + std::to_string(bin.hi) + "]";
}

// parameters.length_bins of the extract manifest: lo, hi and length_mean of every bin.
std::vector<LengthBin> manifest_bins(const EmpiricalRun& run) {
    const std::string path = run_manifest_path(run.dir);
    const std::string expected =
        ", expected [{\"lo\", \"hi\", \"length_mean\", ...}, ...] with 1 <= lo <= hi <= context "
        "(extract --queries writes it with by_length.csv)";
    const nlohmann::json* bins = nullptr;
    if (run.manifest.contains("parameters") && run.manifest.at("parameters").is_object() &&
        run.manifest.at("parameters").contains("length_bins"))
        bins = &run.manifest.at("parameters").at("length_bins");
    if (!bins || !bins->is_array() || bins->empty())
        throw InputError("'" + path + "': parameters.length_bins is missing" + expected);
    std::vector<LengthBin> out;
    for (const auto& bin : *bins) {
        LengthBin b;
        try {
            b.lo = json_integer<int>(bin.at("lo"));
            b.hi = json_integer<int>(bin.at("hi"));
            if (!bin.at("length_mean").is_number()) throw std::domain_error("length_mean");
            b.length_mean = bin.at("length_mean").get<double>();
        } catch (const std::exception&) {
            throw InputError("'" + path + "': parameters.length_bins is damaged" + expected);
        }
        if (b.lo < 1 || b.hi < b.lo || b.hi > run.context || !std::isfinite(b.length_mean) ||
            b.length_mean < b.lo || b.length_mean > b.hi)
            throw InputError("'" + path + "': parameters.length_bins has " + bin_name(b) +
                             " with length_mean " + format_double(b.length_mean) + expected +
                             " and lo <= length_mean <= hi");
        for (const LengthBin& other : out)
            if (other.lo == b.lo && other.hi == b.hi)
                throw InputError("'" + path + "': parameters.length_bins lists " + bin_name(b) +
                                 " twice");
        out.push_back(b);
    }
    std::sort(out.begin(), out.end(),
              [](const LengthBin& a, const LengthBin& b) { return a.lo < b.lo; });
    return out;
}

// The manifest bin of a row's (length_lo, length_hi).
int bin_of(const CsvRow& row, std::size_t lo_column, std::size_t hi_column,
           const std::vector<LengthBin>& bins, const std::string& manifest_path) {
    const auto lo = row.integer(lo_column), hi = row.integer(hi_column);
    for (std::size_t b = 0; b < bins.size(); ++b)
        if (bins[b].lo == lo && bins[b].hi == hi) return static_cast<int>(b);
    throw InputError(row.where(lo_column) + ": length bin [" + std::to_string(lo) + ", " +
                     std::to_string(hi) + "], expected a bin of parameters.length_bins in '" +
                     manifest_path + "'");
}

std::int64_t checked_queries(const CsvRow& row, std::size_t column) {
    const auto queries = row.integer(column);
    if (queries < 1)
        throw InputError(row.where(column) + ": " + std::to_string(queries) +
                         ", expected at least 1 query");
    return queries;
}

// A standard error: empty only with fewer than 2 queries (where it is undefined).
void check_standard_error(const CsvRow& row, std::size_t column, bool defined) {
    const auto value = row.optional_finite_number(column);
    if (!value && defined)
        throw InputError(row.where(column) +
                         ": empty, expected a number (a standard error is undefined only with "
                         "fewer than 2 queries)");
}

void read_pr_by_length(const EmpiricalRun& run, ByLengthRun& out) {
    const std::string manifest_path = run_manifest_path(run.dir);
    const std::size_t heads = run.rows.size();
    std::map<std::pair<int, int>, std::vector<char>> seen;
    for_each_csv_row(
        out.by_length_path, "an attngeo extract table",
        schema::csv_column_names(schema::page::extract, schema::file::by_length,
                                 {"layer", "head", "length_lo", "length_hi", "N", "queries",
                                  "P_mean", "P_se", "R_mean", "R_se"}),
        false, [&](const CsvRow& row, const std::vector<std::size_t>& c) {
            const auto index = checked_head_index(row, c[0], c[1], run);
            const int bin = bin_of(row, c[2], c[3], out.bins, manifest_path);
            const auto N = row.integer(c[4]);
            if (std::find(run.sizes.begin(), run.sizes.end(), N) == run.sizes.end() ||
                N > out.bins[bin].hi)
                throw InputError(row.where(c[4]) + ": N = " + std::to_string(N) +
                                 ", expected an N of pr.csv's grid at most the bin's " +
                                 std::to_string(out.bins[bin].hi));
            const bool defined = checked_queries(row, c[5]) >= 2;
            const double P = row.finite_number(c[6]), R = row.finite_number(c[8]);
            check_standard_error(row, c[7], defined);
            check_standard_error(row, c[9], defined);
            const std::pair<int, int> key{bin, static_cast<int>(N)};
            auto& flags = seen[key];
            auto& values = out.pr[key];
            if (flags.empty()) {
                flags.assign(heads, 0);
                values.first.assign(heads, 0);
                values.second.assign(heads, 0);
            }
            if (flags[index])
                throw InputError(row.where() + ": " + head_name(index, run.heads) + " " +
                                 bin_name(out.bins[bin]) + " N = " + std::to_string(N) +
                                 " appears twice");
            flags[index] = 1;
            values.first[index] = P;
            values.second[index] = R;
        });
    for (const auto& [key, flags] : seen)
        for (std::size_t i = 0; i < heads; ++i)
            if (!flags[i])
                throw InputError("'" + out.by_length_path + "': no row for " +
                                 head_name(i, run.heads) + " " + bin_name(out.bins[key.first]) +
                                 " N = " + std::to_string(key.second) +
                                 " (other heads have one; expected every head)");
}

void read_heads_by_length(const EmpiricalRun& run, ByLengthRun& out) {
    const std::string manifest_path = run_manifest_path(run.dir);
    const std::size_t heads = run.rows.size();
    std::map<int, std::vector<char>> seen;
    for_each_csv_row(
        out.heads_by_length_path, "an attngeo extract table",
        schema::csv_column_names(schema::page::extract, schema::file::heads_by_length,
                                 {"layer", "head", "length_lo", "length_hi", "queries", "lambda",
                                  "rho0", "sink_mass", "m_sink", "m_last", "m_rest", "regime"}),
        false, [&](const CsvRow& row, const std::vector<std::size_t>& c) {
            const auto index = checked_head_index(row, c[0], c[1], run);
            const int bin = bin_of(row, c[2], c[3], out.bins, manifest_path);
            checked_queries(row, c[4]);
            for (int k = 5; k <= 10; ++k)
                (void)row.finite_number(c[k]);
            const theory::HeadRegime parsed = checked_regime(row, c[11]);
            int regime = -1;
            for (std::size_t r = 0; r < theory::kHeadRegimes.size(); ++r)
                if (theory::kHeadRegimes[r] == parsed) regime = static_cast<int>(r);
            auto& flags = seen[bin];
            auto& regimes = out.regimes[bin];
            if (flags.empty()) {
                flags.assign(heads, 0);
                regimes.assign(heads, 0);
            }
            if (flags[index])
                throw InputError(row.where() + ": " + head_name(index, run.heads) + " " +
                                 bin_name(out.bins[bin]) + " appears twice");
            flags[index] = 1;
            regimes[index] = regime;
        });
    for (const auto& [bin, flags] : seen)
        for (std::size_t i = 0; i < heads; ++i)
            if (!flags[i])
                throw InputError("'" + out.heads_by_length_path + "': no row for " +
                                 head_name(i, run.heads) + " " + bin_name(out.bins[bin]) +
                                 " (other heads have one; expected every head)");
}

}  // namespace

std::optional<ByLengthRun> read_by_length(const EmpiricalRun& run) {
    const fs::path folder(run.dir);
    ByLengthRun out;
    out.by_length_path = (folder / schema::file::by_length).string();
    out.heads_by_length_path = (folder / schema::file::heads_by_length).string();
    if (!fs::exists(out.by_length_path)) return std::nullopt;
    if (!fs::is_regular_file(out.heads_by_length_path))
        throw InputError("'" + out.heads_by_length_path +
                         "': missing, expected it beside by_length.csv (extract --queries "
                         "writes both)");
    out.bins = manifest_bins(run);
    read_pr_by_length(run, out);
    read_heads_by_length(run, out);
    return out;
}

std::string by_length_summary_csv(const ByLengthRun& by_length) {
    std::ostringstream csv;
    csv << schema::csv_header(schema::page::compare, schema::file::by_length_summary) << '\n';
    for (const auto& [key, values] : by_length.pr) {
        const LengthBin& bin = by_length.bins[key.first];
        const std::size_t n = values.first.size();
        double mean[2] = {0, 0};
        const std::vector<double>* series[2] = {&values.first, &values.second};
        for (int m = 0; m < 2; ++m) {
            for (double x : *series[m])
                mean[m] += x;
            mean[m] /= static_cast<double>(n);
        }
        csv << bin.lo << ',' << bin.hi << ',' << format_double(bin.length_mean) << ',' << key.second
            << ',' << n << ',' << format_double(mean[0]) << ',' << format_double(mean[1]);
        for (int m = 0; m < 2; ++m) {
            if (n < 2) {
                csv << ',' << kNoValue;
                continue;
            }
            double squares = 0;
            for (double x : *series[m])
                squares += (x - mean[m]) * (x - mean[m]);
            csv << ',' << format_double(std::sqrt(squares / static_cast<double>(n - 1)));
        }
        csv << '\n';
    }
    return csv.str();
}

std::string regimes_by_length_csv(const ByLengthRun& by_length) {
    std::ostringstream csv;
    csv << schema::csv_header(schema::page::compare, schema::file::regimes_by_length) << '\n';
    for (const auto& [b, regimes] : by_length.regimes) {
        const LengthBin& bin = by_length.bins[b];
        std::array<std::size_t, theory::kHeadRegimes.size()> counts{};
        for (int r : regimes)
            ++counts[r];
        csv << bin.lo << ',' << bin.hi << ',' << format_double(bin.length_mean) << ','
            << regimes.size();
        for (std::size_t count : counts)
            csv << ','
                << format_double(static_cast<double>(count) / static_cast<double>(regimes.size()));
        csv << '\n';
    }
    return csv.str();
}

}  // namespace attngeo::compare
