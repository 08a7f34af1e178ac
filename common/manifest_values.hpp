// Values every manifest.json writes: the header naming the tool, version, commit and kind of
// run, numbers that may be non-finite, and stage timings.
#pragma once
#include <chrono>
#include <cmath>
#include <nlohmann/json.hpp>
#include <string>

#include "attngeo/version.hpp"
#include "common/format.hpp"
#include "common/run_schema.hpp"

namespace attngeo {

// The fields every manifest carries: tool, version, git_commit, kind, the folder's
// format_version (common/run_schema.hpp) and, when a command line is given, command. Readers
// recognise a run folder by them.
inline nlohmann::json manifest_header(const std::string& kind, const std::string& command = {}) {
    nlohmann::json header = {{"tool", "attngeo"},
                             {"version", kVersion},
                             {"git_commit", kGitCommit},
                             {"kind", kind},
                             {schema::kFormatVersionKey, schema::kFormatVersion}};
    if (!command.empty()) header["command"] = command;
    return header;
}

// A double as a JSON value: a number when finite; JSON has no inf/nan, so those become the
// strings "inf", "-inf", "nan" (format_double).
inline nlohmann::json json_number(double value) {
    if (std::isfinite(value)) return value;
    return format_double(value);
}

// A number as json_number writes it: a JSON number, or "inf", "-inf", "nan" for a non-finite
// one. Anything else is a type error carrying the value's JSON pointer, so with_json_context
// names the file.
inline double json_number_value(const nlohmann::json& value) {
    if (value.is_number()) return value.get<double>();
    if (value.is_string()) {
        const std::string& text = value.get_ref<const std::string&>();
        if (text == "inf") return HUGE_VAL;
        if (text == "-inf") return -HUGE_VAL;
        if (text == "nan") return std::nan("");
    }
    throw nlohmann::json::type_error::create(
        302, "expected a number (or \"inf\", \"-inf\", \"nan\"), found " + value.dump(), &value);
}

// Seconds of steady-clock time since `start`.
inline double seconds_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace attngeo
