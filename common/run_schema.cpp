// The run-folder schema's few functions; see run_schema.hpp.
#include "common/run_schema.hpp"

#include <filesystem>

#include "common/errors.hpp"
#include "common/run_columns.hpp"

namespace attngeo::schema {
std::vector<std::string> bound_value_columns() {
    return csv_column_names(page::bounds, file::bounds, "Delta", "Fmin_upper");
}

std::vector<std::string> bound_flag_columns() {
    return csv_column_names(page::bounds, file::bounds, "delta_le0", "R_trivial_upper");
}

std::string manifest_path(const std::string& dir) {
    return (std::filesystem::path(dir) / file::manifest).string();
}

void check_format_version(const nlohmann::json& manifest, const std::string& path) {
    const std::string expected =
        "expected " + std::string(kFormatVersionKey) + " " + std::to_string(kFormatVersion);
    if (!manifest.is_object() || !manifest.contains(kFormatVersionKey))
        throw InputError("'" + path + "': no " + kFormatVersionKey + ", " + expected +
                         " (written before run folders were versioned: rerun the command that "
                         "made it)");
    const nlohmann::json& version = manifest.at(kFormatVersionKey);
    if (!version.is_number_integer() || version.get<std::int64_t>() != kFormatVersion)
        throw InputError("'" + path + "': " + kFormatVersionKey + " " + version.dump() + ", " +
                         expected +
                         " (written by another attngeo release: read it with that "
                         "release or rerun the command that made it)");
}

}  // namespace attngeo::schema
