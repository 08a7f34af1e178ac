// Selection-size list parsing; see number_list.hpp.
#include "common/number_list.hpp"

#include <algorithm>
#include <cmath>
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

std::vector<std::string> split_on(const std::string& text, char separator) {
    std::vector<std::string> parts;
    std::stringstream items(text);
    for (std::string item; std::getline(items, item, separator);)
        parts.push_back(item);
    return parts;
}

double positive_number(const std::string& item, const std::string& text, const std::string& flag) {
    std::size_t used = 0;
    double x = 0;
    try {
        x = std::stod(item, &used);
    } catch (const std::exception&) {
        used = 0;
    }
    if (item.empty() || used != item.size() || !(x > 0) || !std::isfinite(x))
        throw InputError(flag + " '" + text + "': '" + item + "', expected a positive number");
    return x;
}

// lo:hi:count as powers of ten of evenly spaced exponents, so a decade's ends come out as
// written.
std::vector<double> log_grid(const std::vector<std::string>& parts, const std::string& text,
                             const std::string& flag) {
    const long long count = parts.size() == 3 ? whole_number_or_minus_one(parts[2]) : -1;
    if (count < 2)
        throw InputError(flag + " '" + text +
                         "': expected lo:hi:count (a log grid, count >= 2) or a comma list");
    const double lo = positive_number(parts[0], text, flag),
                 hi = positive_number(parts[1], text, flag);
    if (!(hi > lo)) throw InputError(flag + " '" + text + "': expected lo < hi");
    const double first = std::log10(lo), last = std::log10(hi);
    std::vector<double> grid;
    for (long long i = 0; i < count; ++i)
        grid.push_back(std::pow(10.0, first + (last - first) * static_cast<double>(i) /
                                                  static_cast<double>(count - 1)));
    return grid;
}

}  // namespace

long long whole_number_or_minus_one(const std::string& text) {
    if (text.empty() || text.size() > 9 ||
        text.find_first_not_of("0123456789") != std::string::npos)
        return -1;
    return std::stoll(text);
}

std::vector<double> parse_positive_list(const std::string& text, const std::string& flag) {
    std::vector<double> values;
    for (const std::string& item : split_on(text, ','))
        values.push_back(positive_number(item, text, flag));
    if (values.empty()) throw InputError(flag + ": expected at least one positive number");
    return values;
}

std::vector<double> parse_positive_grid(const std::string& text, const std::string& flag) {
    if (text.find(':') != std::string::npos) return log_grid(split_on(text, ':'), text, flag);
    std::vector<double> grid = parse_positive_list(text, flag);
    std::sort(grid.begin(), grid.end());
    grid.erase(std::unique(grid.begin(), grid.end()), grid.end());
    return grid;
}

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
