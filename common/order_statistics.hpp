// The median every folder needs (fits, κ scan, recovery, extract's norms, the report's tables):
// one definition, so an empty input means the same thing everywhere.
#pragma once
#include <algorithm>
#include <cmath>
#include <vector>

namespace attngeo {

// The middle value, or the mean of the two middle values for an even count; NaN when empty.
// Selection, not a full sort: O(n).
inline double median(std::vector<double> values) {
    if (values.empty()) return std::nan("");
    const std::size_t mid = values.size() / 2;
    std::nth_element(values.begin(), values.begin() + mid, values.end());
    const double upper = values[mid];
    if (values.size() % 2 == 1) return upper;
    return 0.5 * (upper + *std::max_element(values.begin(), values.begin() + mid));
}

}  // namespace attngeo
