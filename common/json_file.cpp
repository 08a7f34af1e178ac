// Checked JSON reading; see json_file.hpp.
#include "common/json_file.hpp"

#include <fstream>
#include <sstream>

namespace attngeo {
namespace {

// nlohmann's messages open with "[json.exception.type_error.302] "; the id means nothing to a
// user, so it goes, and what remains is the pointer (with JSON_DIAGNOSTICS) and the problem.
std::string without_exception_id(const std::string& message) {
    if (message.rfind("[json.exception.", 0) != 0) return message;
    const std::size_t end = message.find("] ");
    return end == std::string::npos ? message : message.substr(end + 2);
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

}  // namespace attngeo
