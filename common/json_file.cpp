// Checked JSON reading; see json_file.hpp.
#include "common/json_file.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/run_schema.hpp"

namespace attngeo {
namespace {

// nlohmann's messages open with "[json.exception.type_error.302] "; the id means nothing to a
// user, so it goes, and what remains is the pointer (with JSON_DIAGNOSTICS) and the problem.
std::string without_exception_id(const std::string& message) {
    if (message.rfind("[json.exception.", 0) != 0) return message;
    const std::size_t end = message.find("] ");
    return end == std::string::npos ? message : message.substr(end + 2);
}

// "\"simulate\" or \"sweep\"" for messages, "simulate or sweep" for the commands.
std::string joined(const std::vector<std::string>& kinds, bool quoted) {
    std::string text;
    for (std::size_t k = 0; k < kinds.size(); ++k) {
        if (k > 0) text += k + 1 == kinds.size() ? " or " : ", ";
        text += quoted ? "\"" + kinds[k] + "\"" : kinds[k];
    }
    return text;
}

}  // namespace

nlohmann::json parse_json_text(const std::string& text, const std::string& path,
                               const std::string& what) {
    const nlohmann::json::parser_callback_t depth_guard =
        [&](int depth, nlohmann::json::parse_event_t event, nlohmann::json&) {
            // depth counts from 0 at the outermost value: values nest kMaxJsonDepth + 1 deep.
            if (depth > kMaxJsonDepth && (event == nlohmann::json::parse_event_t::object_start ||
                                          event == nlohmann::json::parse_event_t::array_start)) {
                throw InputError("'" + path + "': nested deeper than " +
                                 std::to_string(kMaxJsonDepth) + " levels, expected " + what);
            }
            return true;
        };
    try {
        return nlohmann::json::parse(text, depth_guard);
    } catch (const nlohmann::json::exception& e) {
        // parse_error, and out_of_range for a number beyond double (1E400): both bad text.
        throw InputError("'" + path + "': not valid JSON (" + without_exception_id(e.what()) +
                         "), expected " + what);
    }
}

nlohmann::json read_json_file(const std::string& path, const std::string& what) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw InputError("'" + path + "': cannot open, expected " + what);
    std::ostringstream text;
    text << in.rdbuf();
    if (in.bad()) throw InputError("'" + path + "': read error, expected " + what);
    return parse_json_text(text.str(), path, what);
}

std::string json_error_message(const std::string& path, const nlohmann::json::exception& error) {
    std::string message = without_exception_id(error.what());
    for (char& c : message)
        if (c == '\n' || c == '\r') c = ' ';
    return "'" + path + "': " + message;
}

std::int64_t json_integer_at(const nlohmann::json& document, const std::string& pointer,
                             std::int64_t minimum, std::int64_t maximum, const std::string& path) {
    const nlohmann::json::json_pointer at(pointer);
    if (!document.contains(at))
        throw InputError("'" + path + "': " + pointer + " is missing, expected an integer");
    const std::int64_t value =
        with_json_context(path, [&] { return json_integer<std::int64_t>(document.at(at)); });
    if (value < minimum || value > maximum)
        throw InputError("'" + path + "': " + pointer + " = " + std::to_string(value) +
                         ", expected " + std::to_string(minimum) + ".." + std::to_string(maximum));
    return value;
}

std::string run_manifest_path(const std::string& dir) {
    return schema::manifest_path(dir);
}

nlohmann::json read_run_manifest(const std::string& dir, const std::vector<std::string>& kinds) {
    const std::string path = run_manifest_path(dir);
    const std::string commands = joined(kinds, false);
    nlohmann::json manifest = read_json_file(path, "an attngeo " + commands + " manifest");
    const bool has_kind = manifest.is_object() && manifest.contains("kind");
    const bool known = has_kind && std::any_of(kinds.begin(), kinds.end(), [&](const auto& kind) {
                           return manifest.at("kind") == kind;
                       });
    if (!known)
        throw InputError("'" + path + "': kind is " +
                         (has_kind ? manifest.at("kind").dump() : std::string("missing")) +
                         ", expected " + joined(kinds, true) + " (a folder written by attngeo " +
                         commands + ")");
    schema::check_format_version(manifest, path);
    return manifest;
}

}  // namespace attngeo
