// The one way attngeo reads a JSON file it did not just write itself (run-folder manifests,
// config.json, tokenizer files, index files): depth-limited parsing, and type or presence errors
// turned into one line that names the file and the JSON pointer of the offending value.
#pragma once
#include <cmath>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

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

// An integer value of type T: a JSON integer, or a whole number written as a float, within T's
// range; anything else is a type error carrying the value's pointer (so with_json_context
// names the file), never a float-to-integer conversion out of range.
template <class T>
T json_integer(const nlohmann::json& j) {
    static_assert(std::is_integral_v<T>, "json_integer needs an integer type");
    bool fits = false;
    if (j.is_number_unsigned())
        fits = j.get<std::uint64_t>() <= static_cast<std::uint64_t>(std::numeric_limits<T>::max());
    else if (j.is_number_integer())
        fits = j.get<std::int64_t>() >= static_cast<std::int64_t>(std::numeric_limits<T>::min()) &&
               (j.get<std::int64_t>() < 0 ||
                static_cast<std::uint64_t>(j.get<std::int64_t>()) <=
                    static_cast<std::uint64_t>(std::numeric_limits<T>::max()));
    else if (j.is_number_float()) {
        const double x = j.get<double>();
        // 2^63 and 2^64 are exact doubles: the bounds below are exclusive above.
        const double top = std::ldexp(1.0, std::numeric_limits<T>::digits);
        const double bottom = std::is_signed_v<T> ? -top : 0.0;
        fits = std::floor(x) == x && x >= bottom && x < top;
        if (fits) return static_cast<T>(x);
    }
    if (!fits)
        throw nlohmann::json::type_error::create(
            302, "expected an integer in range, found " + j.dump(), &j);
    return j.get<T>();
}

// The integer at `pointer` (e.g. "/model/layers") of `document`, read from `path`, within
// [minimum, maximum]; an InputError naming the file and the pointer when it is missing, not an
// integer or out of range.
std::int64_t json_integer_at(const nlohmann::json& document, const std::string& pointer,
                             std::int64_t minimum, std::int64_t maximum, const std::string& path);

// DIR/manifest.json, the file every attngeo run folder is recognised by.
std::string run_manifest_path(const std::string& dir);
// Reads DIR/manifest.json through read_json_file and requires an object whose "kind" is one of
// `kinds` (e.g. {"simulate", "sweep"}: the commands that write the folders a reader accepts);
// otherwise an InputError naming the file, what kind it is and what was expected.
nlohmann::json read_run_manifest(const std::string& dir, const std::vector<std::string>& kinds);

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
