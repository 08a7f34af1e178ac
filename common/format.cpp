// Full-precision number formatting; see format.hpp.
#include "common/format.hpp"

#include <charconv>
#include <cmath>
#include <system_error>

namespace attngeo {

std::string format_double(double value) {
    if (std::isnan(value)) return "nan";
    if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
    // std::to_chars without a precision writes the shortest digits that read back to the same
    // double (Ryu-style), so 0.05 stays "0.05" instead of %.17g's "0.050000000000000003".
    char buffer[40];
    const auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
    if (result.ec != std::errc()) return "nan";  // unreachable: 40 chars hold any double
    return std::string(buffer, result.ptr);
}

}  // namespace attngeo
