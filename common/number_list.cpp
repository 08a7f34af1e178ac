// Selection-size list parsing; see number_list.hpp.
#include "common/number_list.hpp"

#include <algorithm>
#include <cstdlib>
#include <sstream>

#include "common/errors.hpp"

namespace attngeo {
namespace {

int parse_size(const std::string& text, int n, const std::string& flag) {
    char* end = nullptr;
    const long value = std::strtol(text.c_str(), &end, 10);
    if (text.empty() || end != text.c_str() + text.size()) {
        throw InputError(flag + ": '" + text +
                         "' is not an integer (expected all, pow2, or a list like 1,2,4 or 1:16)");
    }
    if (value < 1 || value > n) {
        throw InputError(flag + ": " + text +
                         " is out of range, expected 1 <= N <= n = " + std::to_string(n));
    }
    return static_cast<int>(value);
}

}  // namespace

std::vector<int> parse_selection_sizes(const std::string& spec, int n, const std::string& flag) {
    std::vector<int> sizes;
    if (spec == "all") {
        for (int N = 1; N <= n; ++N)
            sizes.push_back(N);
        return sizes;
    }
    if (spec == "pow2") {
        for (long N = 1; N <= n; N *= 2)
            sizes.push_back(static_cast<int>(N));
        if (sizes.back() != n) sizes.push_back(n);
        return sizes;
    }
    std::istringstream in(spec);
    std::string item;
    while (std::getline(in, item, ',')) {
        const auto colon = item.find(':');
        if (colon == std::string::npos) {
            sizes.push_back(parse_size(item, n, flag));
        } else {
            const int first = parse_size(item.substr(0, colon), n, flag);
            const int last = parse_size(item.substr(colon + 1), n, flag);
            if (last < first) throw InputError(flag + ": empty range '" + item + "'");
            for (int N = first; N <= last; ++N)
                sizes.push_back(N);
        }
    }
    if (sizes.empty()) throw InputError(flag + ": empty list, expected all, pow2 or sizes");
    std::sort(sizes.begin(), sizes.end());
    sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
    return sizes;
}

}  // namespace attngeo
