// The one way attngeo reads a JSON file it did not just write itself (run-folder manifests,
// config.json, tokenizer files, index files): depth-limited parsing, and type or presence errors
// turned into one line that names the file and the JSON pointer of the offending value.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "common/errors.hpp"

namespace attngeo {

// Deeper nesting than any file attngeo reads, and far below what would exhaust the stack of a
// recursive consumer (json::dump recurses once per level).
constexpr int kMaxJsonDepth = 256;

// Parses `text` (from `path`, `what` says what it should be, e.g. "a run manifest");
// InputError naming the path when it is not JSON or nests deeper than kMaxJsonDepth.
nlohmann::json parse_json_text(const std::string& text, const std::string& path,
                               const std::string& what);
// Reads and parses the file; InputError naming it when it cannot be read, too.
nlohmann::json read_json_file(const std::string& path, const std::string& what);

// "'path': <what the JSON library says, with the pointer of the value>": one line.
std::string json_error_message(const std::string& path, const nlohmann::json::exception& error);

// Runs `use` (which reads a document from `path`); a missing key or a value of the wrong type
// inside becomes an InputError naming the file and the value's JSON pointer.
template <class Use>
auto with_json_context(const std::string& path, Use&& use) -> decltype(use()) {
    try {
        return std::forward<Use>(use)();
    } catch (const nlohmann::json::exception& error) {
        throw InputError(json_error_message(path, error));
    }
}

}  // namespace attngeo
