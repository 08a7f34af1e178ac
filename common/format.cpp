// Full-precision number formatting; see format.hpp.
#include "common/format.hpp"

#include <cmath>
#include <cstdio>

namespace attngeo {

std::string format_double(double value) {
    if (std::isnan(value)) return "nan";
    if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
    char buffer[40];
    std::snprintf(buffer, sizeof buffer, "%.17g", value);
    return buffer;
}

}  // namespace attngeo
