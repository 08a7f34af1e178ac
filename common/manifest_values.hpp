// Values every manifest.json writes: numbers that may be non-finite, and stage timings.
#pragma once
#include <chrono>
#include <cmath>
#include <nlohmann/json.hpp>

#include "common/format.hpp"

namespace attngeo {

// A double as a JSON value: a number when finite; JSON has no inf/nan, so those become the
// strings "inf", "-inf", "nan" (format_double).
inline nlohmann::json json_number(double value) {
    if (std::isfinite(value)) return value;
    return format_double(value);
}

// Seconds of steady-clock time since `start`.
inline double seconds_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace attngeo
