// Strict reader of `attngeo extract` folders; see extract_folder_reader.hpp. The CSVs are addressed
// by header name and streamed row by row, since by_position.csv of a 7B model has a million rows.
#include "compare/extract_folder_reader.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <stdexcept>

#include "common/csv.hpp"
#include "common/errors.hpp"
#include "common/json_file.hpp"
#include "common/run_columns.hpp"
#include "common/run_schema.hpp"
#include "common/size_checks.hpp"
#include "theory/head_regime.hpp"

namespace fs = std::filesystem;

namespace attngeo::compare {
namespace {

// Streams one extract table; a table without rows is an error (extract writes every head).
void for_each_row(
    const std::string& path, const std::vector<std::string>& names,
    const std::function<void(const CsvRow&, const std::vector<std::size_t>&)>& visit) {
    for_each_csv_row(path, "an attngeo extract table", names, true, visit);
}

// A standard error: empty means undefined, allowed only when `defined` is false.
std::optional<double> standard_error(const CsvRow& row, std::size_t column, bool defined) {
    const auto value = row.optional_finite_number(column);
    if (!value && defined)
        throw InputError(row.where(column) +
                         ": empty, expected a number (a standard error is undefined only with "
                         "fewer than 2 documents)");
    return value;
}

void read_heads(const std::string& path, EmpiricalRun& run) {
    std::vector<char> seen(run.rows.size(), 0);
    for_each_row(
        path,
        // Every column, in the schema's order (layer, head, kv_head, docs, the norms, ...,
        // regime, regime_margin): c[k] is the k-th.
        schema::csv_column_names(schema::page::extract, schema::file::heads),
        [&](const CsvRow& row, const std::vector<std::size_t>& c) {
            const auto index = checked_head_index(row, c[0], c[1], run);
            if (seen[index])
                throw InputError(row.where() + ": " + head_name(index, run.heads) +
                                 " appears twice");
            seen[index] = 1;
            EmpiricalHead& h = run.rows[index];
            h.kv_head = static_cast<int>(row.integer(c[2]));
            h.docs = row.integer(c[3]);
            if (h.docs < 1) throw InputError(row.where(c[3]) + ": expected at least 1 document");
            double* targets[] = {&h.norm_mean, &h.norm_median, &h.cv_positional, &h.cv_pooled,
                                 &h.lambda,    &h.rho0,        &h.sink_mass,     &h.last_mass,
                                 &h.m_sink,    &h.m_last,      &h.m_rest};
            for (int k = 0; k < 11; ++k)
                *targets[k] = row.finite_number(c[4 + k]);
            h.regime = checked_regime(row, c[15]);
            // +inf is a valid margin (the smaller magnitude is 0).
            h.regime_margin = row.text(c[16]) == "inf" ? std::numeric_limits<double>::infinity()
                                                       : row.finite_number(c[16]);
            if (!(h.regime_margin >= 1))
                throw InputError(row.where(c[16]) + ": " + row.text(c[16]) +
                                 ", expected a ratio >= 1");
        });
    for (std::size_t i = 0; i < seen.size(); ++i)
        if (!seen[i]) throw InputError("'" + path + "': no row for " + head_name(i, run.heads));
}

void read_pr(const std::string& path, EmpiricalRun& run) {
    // N grid: collected per head, then required to be the same for every head.
    struct Values {
        double P_mean, R_mean, Fmax_mean, Fmin_mean;
        std::optional<double> P_se, R_se;
    };
    std::vector<std::map<int, Values>> by_head(run.rows.size());
    for_each_row(path,
                 schema::csv_column_names(schema::page::extract, schema::file::precision_recall,
                                          {"layer", "head", "N", "P_mean", "P_se", "R_mean", "R_se",
                                           "Fmax_mean", "Fmin_mean"}),
                 [&](const CsvRow& row, const std::vector<std::size_t>& c) {
                     const auto index = checked_head_index(row, c[0], c[1], run);
                     const auto N = row.integer(c[2]);
                     if (N < 1 || N > run.context)
                         throw InputError(row.where(c[2]) + ": N = " + std::to_string(N) +
                                          ", expected 1.." + std::to_string(run.context));
                     const bool defined = run.rows[index].docs >= 2;  // heads.csv is read first
                     const Values values{row.finite_number(c[3]),
                                         row.finite_number(c[5]),
                                         row.finite_number(c[7]),
                                         row.finite_number(c[8]),
                                         standard_error(row, c[4], defined),
                                         standard_error(row, c[6], defined)};
                     if (!by_head[index].emplace(static_cast<int>(N), values).second)
                         throw InputError(row.where() + ": " + head_name(index, run.heads) +
                                          " N = " + std::to_string(N) + " appears twice");
                 });
    for (const auto& [N, values] : by_head[0])
        run.sizes.push_back(N);
    for (std::size_t i = 0; i < by_head.size(); ++i) {
        const auto& rows = by_head[i];
        bool same = rows.size() == run.sizes.size();
        std::size_t k = 0;
        for (auto it = rows.begin(); same && it != rows.end(); ++it, ++k)
            same = it->first == run.sizes[k];
        if (!same)
            throw InputError("'" + path + "': " + head_name(i, run.heads) + " has " +
                             std::to_string(rows.size()) +
                             " N values, expected the same N grid as layer 0 head 0 (" +
                             std::to_string(run.sizes.size()) + " values)");
        EmpiricalHead& h = run.rows[i];
        for (const auto& [N, v] : rows) {
            h.P_mean.push_back(v.P_mean);
            h.P_se.push_back(v.P_se);
            h.R_mean.push_back(v.R_mean);
            h.R_se.push_back(v.R_se);
            h.Fmax_mean.push_back(v.Fmax_mean);
            h.Fmin_mean.push_back(v.Fmin_mean);
        }
    }
}

void read_by_position(const std::string& path, EmpiricalRun& run) {
    const std::size_t n = run.context;
    std::vector<std::vector<char>> seen(run.rows.size(), std::vector<char>(n, 0));
    for (auto& h : run.rows) {
        h.norm_by_position.assign(n, 0);
        h.alpha_by_position.assign(n, 0);
        h.contrib_by_position.assign(n, 0);
    }
    for_each_row(path,
                 schema::csv_column_names(
                     schema::page::extract, schema::file::by_position,
                     {"layer", "head", "pos", "norm_mean", "alpha_mean", "contrib_mean"}),
                 [&](const CsvRow& row, const std::vector<std::size_t>& c) {
                     const auto index = checked_head_index(row, c[0], c[1], run);
                     const auto pos = row.integer(c[2]);
                     if (pos < 0 || pos >= static_cast<std::int64_t>(n))
                         throw InputError(row.where(c[2]) + ": position " + std::to_string(pos) +
                                          ", expected 0.." + std::to_string(n - 1) +
                                          " (manifest.json parameters.context)");
                     if (seen[index][pos])
                         throw InputError(row.where() + ": " + head_name(index, run.heads) +
                                          " position " + std::to_string(pos) + " appears twice");
                     seen[index][pos] = 1;
                     EmpiricalHead& h = run.rows[index];
                     h.norm_by_position[pos] = row.finite_number(c[3]);
                     h.alpha_by_position[pos] = row.finite_number(c[4]);
                     h.contrib_by_position[pos] = row.finite_number(c[5]);
                     if (h.alpha_by_position[pos] < 0 || h.norm_by_position[pos] < 0)
                         throw InputError(row.where() + ": negative alpha_mean or norm_mean");
                 });
    for (std::size_t i = 0; i < seen.size(); ++i) {
        const auto missing = std::find(seen[i].begin(), seen[i].end(), 0);
        if (missing != seen[i].end())
            throw InputError("'" + path + "': no row for " + head_name(i, run.heads) +
                             " position " + std::to_string(missing - seen[i].begin()) +
                             " (expected positions 0.." + std::to_string(n - 1) + ")");
        double total = 0;
        for (double a : run.rows[i].alpha_by_position)
            total += a;
        if (!(std::abs(total - 1) <= 1e-3))
            throw InputError("'" + path + "': " + head_name(i, run.heads) + " alpha_mean sums to " +
                             std::to_string(total) + ", expected 1 (within 1e-3)");
    }
}

void read_cos_by_lag(const std::string& path, EmpiricalRun& run) {
    std::vector<std::map<int, std::pair<double, std::int64_t>>> by_head(run.rows.size());
    for_each_row(
        path,
        schema::csv_column_names(schema::page::extract, schema::file::cos_by_lag,
                                 {"layer", "head", "lag", "cos_mean", "pairs"}),
        [&](const CsvRow& row, const std::vector<std::size_t>& c) {
            const auto index = checked_head_index(row, c[0], c[1], run);
            const auto lag = row.integer(c[2]);
            if (lag < 1 || lag >= run.context)
                throw InputError(row.where(c[2]) + ": lag " + std::to_string(lag) +
                                 ", expected 1.." + std::to_string(run.context - 1));
            const double cosine = row.finite_number(c[3]);
            if (std::abs(cosine) > 1 + 1e-9)
                throw InputError(row.where(c[3]) + ": " + std::to_string(cosine) +
                                 ", expected a cosine in [-1, 1]");
            if (!by_head[index]
                     .emplace(static_cast<int>(lag), std::make_pair(cosine, row.integer(c[4])))
                     .second)
                throw InputError(row.where() + ": " + head_name(index, run.heads) + " lag " +
                                 std::to_string(lag) + " appears twice");
        });
    run.max_lag = static_cast<int>(by_head[0].size());
    for (std::size_t i = 0; i < by_head.size(); ++i) {
        const auto& lags = by_head[i];
        // Lags must be exactly 1..K, the same K for every head.
        if (static_cast<int>(lags.size()) != run.max_lag || lags.empty() ||
            lags.begin()->first != 1 || lags.rbegin()->first != run.max_lag)
            throw InputError("'" + path + "': " + head_name(i, run.heads) +
                             " does not have lags 1.." + std::to_string(run.max_lag) +
                             " like layer 0 head 0");
        for (const auto& [lag, value] : lags) {
            run.rows[i].cos_by_lag.push_back(value.first);
            run.rows[i].pairs_by_lag.push_back(value.second);
        }
    }
}

}  // namespace

std::size_t checked_head_index(const CsvRow& row, std::size_t layer_column, std::size_t head_column,
                               const EmpiricalRun& run) {
    const auto layer = row.integer(layer_column), head = row.integer(head_column);
    if (layer < 0 || layer >= run.layers)
        throw InputError(row.where(layer_column) + ": layer " + std::to_string(layer) +
                         ", expected 0.." + std::to_string(run.layers - 1) + " (manifest.json)");
    if (head < 0 || head >= run.heads)
        throw InputError(row.where(head_column) + ": head " + std::to_string(head) +
                         ", expected 0.." + std::to_string(run.heads - 1) + " (manifest.json)");
    return static_cast<std::size_t>(layer) * run.heads + static_cast<std::size_t>(head);
}

std::string head_name(std::size_t index, int heads) {
    return "layer " + std::to_string(index / heads) + " head " + std::to_string(index % heads);
}

theory::HeadRegime checked_regime(const CsvRow& row, std::size_t column) {
    try {
        return theory::parse_head_regime(row.text(column));
    } catch (const std::domain_error&) {
        throw InputError(row.where(column) + ": '" + row.text(column) +
                         "', expected Retriever, Mixer or Reset");
    }
}

EmpiricalRun read_empirical_run(const std::string& dir) {
    EmpiricalRun run;
    run.dir = dir;
    if (!fs::is_directory(dir))
        throw InputError("--emp '" + dir + "': not a folder (expected an attngeo extract folder)");
    const std::string manifest_path = run_manifest_path(dir);
    run.manifest = read_run_manifest(dir, {"extract"});
    constexpr std::int64_t kLargest = 1 << 24;
    run.layers = static_cast<int>(
        json_integer_at(run.manifest, "/model/layers", 1, kLargest, manifest_path));
    run.heads =
        static_cast<int>(json_integer_at(run.manifest, "/model/heads", 1, kLargest, manifest_path));
    run.head_dim = static_cast<int>(
        json_integer_at(run.manifest, "/model/head_dim", 1, kLargest, manifest_path));
    run.context = static_cast<int>(
        json_integer_at(run.manifest, "/parameters/context", 2, kLargest, manifest_path));
    // Sizes from the manifest are checked before the rows are allocated from them.
    check_allocation(static_cast<std::uint64_t>(run.layers) * static_cast<std::uint64_t>(run.heads),
                     sizeof(EmpiricalHead), "'" + manifest_path + "': model.layers × model.heads");
    run.rows.resize(static_cast<std::size_t>(run.layers) * run.heads);
    for (int l = 0; l < run.layers; ++l)
        for (int h = 0; h < run.heads; ++h) {
            run.rows[static_cast<std::size_t>(l) * run.heads + h].layer = l;
            run.rows[static_cast<std::size_t>(l) * run.heads + h].head = h;
        }
    const fs::path folder(dir);
    read_heads((folder / schema::file::heads).string(), run);
    read_pr((folder / schema::file::precision_recall).string(), run);
    read_by_position((folder / schema::file::by_position).string(), run);
    read_cos_by_lag((folder / schema::file::cos_by_lag).string(), run);
    return run;
}

}  // namespace attngeo::compare
