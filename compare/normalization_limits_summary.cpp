// The critical N of a normalization folder; see normalization_limits_summary.hpp.
#include "compare/normalization_limits_summary.hpp"

#include <cmath>
#include <limits>
#include <map>
#include <sstream>
#include <utility>
#include <vector>

#include "common/atomic_file.hpp"
#include "common/csv.hpp"
#include "common/errors.hpp"
#include "common/format.hpp"
#include "common/json_file.hpp"
#include "common/manifest_values.hpp"
#include "common/run_columns.hpp"
#include "common/run_schema.hpp"
#include "compare/ks_test.hpp"

namespace attngeo::compare {
namespace {

// The heads' token-mean d̃ and E at one (bin, N).
struct HeadSamples {
    std::vector<double> distance, random_mean;
};
using BinKey = std::pair<int, int>;  // (length_lo, length_hi)

std::map<BinKey, std::map<int, HeadSamples>> read_distance_samples(const std::string& path) {
    CsvReader csv(path, "a normalization distance table");
    const std::size_t lo = csv.column("length_lo"), hi = csv.column("length_hi"),
                      n = csv.column("N"), distance = csv.column("distance"),
                      random = csv.column("random_mean");
    std::map<BinKey, std::map<int, HeadSamples>> samples;
    while (csv.next()) {
        const CsvRow& row = csv.row();
        HeadSamples& at =
            samples[{static_cast<int>(row.integer(lo)), static_cast<int>(row.integer(hi))}]
                   [static_cast<int>(row.integer(n))];
        at.distance.push_back(row.finite_number(distance));
        at.random_mean.push_back(row.finite_number(random));
    }
    if (samples.empty()) throw InputError("'" + path + "' has no rows, expected at least one");
    return samples;
}

// length_mean of each bin from the manifest's parameters.length_bins.
std::map<BinKey, double> bin_lengths(const nlohmann::json& manifest, const std::string& path) {
    std::map<BinKey, double> lengths;
    try {
        for (const auto& bin : manifest.at("parameters").at("length_bins"))
            lengths[{bin.at("lo").get<int>(), bin.at("hi").get<int>()}] =
                bin.at("length_mean").get<double>();
    } catch (const nlohmann::json::exception&) {
        throw InputError("'" + path +
                         "': parameters.length_bins is missing or damaged, expected "
                         "[{lo, hi, length_mean}, ...]");
    }
    return lengths;
}

double ks_level_of(const nlohmann::json& manifest, const std::string& path) {
    const auto parameters = manifest.find("parameters");
    if (parameters == manifest.end() || !parameters->contains("ks_level") ||
        !(*parameters)["ks_level"].is_number())
        throw InputError("'" + path + "': parameters.ks_level is missing, expected a number");
    const double level = (*parameters)["ks_level"].get<double>();
    if (!(level > 0 && level < 1))
        throw InputError("'" + path + "': parameters.ks_level = " + format_double(level) +
                         ", expected 0 < level < 1");
    return level;
}

}  // namespace

void summarise_normalization_limits(const std::string& dir) {
    const std::string manifest_path = schema::manifest_path(dir);
    nlohmann::json manifest = read_run_manifest(dir, {schema::kind::normalization});
    const double level = ks_level_of(manifest, manifest_path);
    const auto lengths = bin_lengths(manifest, manifest_path);
    const auto samples = read_distance_samples(dir + "/" + schema::file::selection_distance);
    std::ostringstream tests, critical;
    tests << schema::csv_header(schema::page::normalization, schema::file::critical_n) << '\n';
    critical << schema::csv_header(schema::page::normalization, schema::file::critical_n_by_length)
             << '\n';
    nlohmann::json summary = nlohmann::json::array();
    for (const auto& [bin, by_size] : samples) {
        const auto found = lengths.find(bin);
        const double length_mean = found != lengths.end()
                                       ? found->second
                                       : 0.5 * (bin.first + bin.second);  // not in the manifest
        int critical_n = -1;
        for (const auto& [N, heads] : by_size) {
            const KsTest test = ks_two_sample(heads.distance, heads.random_mean);
            const bool same = test.p_value >= level;
            if (same && critical_n < 0) critical_n = N;
            tests << bin.first << ',' << bin.second << ',' << format_double(length_mean) << ',' << N
                  << ',' << heads.distance.size() << ',' << format_double(test.statistic) << ','
                  << format_double(test.p_value) << ',' << (same ? 1 : 0) << '\n';
        }
        const double nan = std::numeric_limits<double>::quiet_NaN();
        const double n_value = critical_n > 0 ? critical_n : nan;
        critical << bin.first << ',' << bin.second << ',' << format_double(length_mean) << ','
                 << format_double(n_value) << ',' << format_double(n_value / length_mean) << '\n';
        summary.push_back(
            {{"length_lo", bin.first},
             {"length_hi", bin.second},
             {"length_mean", length_mean},
             {"critical_N", critical_n > 0 ? nlohmann::json(critical_n) : nlohmann::json(nullptr)},
             {"fraction", json_number(n_value / length_mean)}});
    }
    write_file_atomic(dir + "/" + schema::file::critical_n, tests.str());
    write_file_atomic(dir + "/" + schema::file::critical_n_by_length, critical.str());
    manifest["critical_n"] = summary;
    write_file_atomic(manifest_path, manifest.dump(2) + "\n");
}

}  // namespace attngeo::compare
