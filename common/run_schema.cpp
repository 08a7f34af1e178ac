// The run-folder schema's few functions; see run_schema.hpp.
#include "common/run_schema.hpp"

#include <filesystem>
#include <sstream>

#include "common/errors.hpp"

namespace attngeo::schema {
namespace {

std::vector<std::string> split_columns(const char* columns) {
    std::vector<std::string> out;
    std::istringstream in(columns);
    for (std::string name; std::getline(in, name, ',');)
        out.push_back(name);
    return out;
}

}  // namespace

std::vector<std::string> bound_value_columns() {
    return split_columns(kBoundValueColumns);
}

std::vector<std::string> bound_flag_columns() {
    return split_columns(kBoundFlagColumns);
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
