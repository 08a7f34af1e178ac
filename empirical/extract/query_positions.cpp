// Query positions and length bins; see query_positions.hpp.
#include "empirical/extract/query_positions.hpp"

#include <algorithm>
#include <sstream>

#include "common/errors.hpp"
#include "common/number_list.hpp"

namespace attngeo::empirical {

namespace {

std::vector<int> listed_positions(const std::string& list, const std::string& text, int context) {
    std::vector<int> positions;
    std::stringstream items(list);
    std::string item;
    while (std::getline(items, item, ',')) {
        const long long t = whole_number_or_minus_one(item);
        if (t < 0 || t >= context)
            throw InputError("--queries '" + text + "': '" + item + "', expected positions 0.." +
                             std::to_string(context - 1) + " (the window has --context " +
                             std::to_string(context) + " tokens)");
        positions.push_back(static_cast<int>(t));
    }
    if (positions.empty())
        throw InputError("--queries '" + text + "': expected positions:a,b,... with at least one");
    std::sort(positions.begin(), positions.end());
    positions.erase(std::unique(positions.begin(), positions.end()), positions.end());
    return positions;
}

}  // namespace

std::vector<int> parse_query_positions(const std::string& text, int context) {
    if (text == "last") return {context - 1};
    std::vector<int> positions;
    if (text == "all") {
        for (int t = 0; t < context; ++t)
            positions.push_back(t);
        return positions;
    }
    if (text.rfind("every:", 0) == 0) {
        const long long step = whole_number_or_minus_one(text.substr(6));
        if (step < 1)
            throw InputError("--queries '" + text + "': expected every:K with a whole K >= 1");
        for (long long t = context - 1; t >= 0; t -= step)
            positions.push_back(static_cast<int>(t));
        std::reverse(positions.begin(), positions.end());
        return positions;
    }
    if (text.rfind("positions:", 0) == 0) return listed_positions(text.substr(10), text, context);
    throw InputError("--queries '" + text +
                     "': expected last, all, every:K or positions:a,b,... (0 <= t < context)");
}

std::vector<LengthBin> make_length_bins(int count, int context, const std::vector<int>& positions) {
    if (count < 1) throw InputError("--length-bins: " + std::to_string(count) + ", expected >= 1");
    const int bins = std::min(count, context);
    std::vector<LengthBin> kept;
    for (int b = 0; b < bins; ++b) {
        LengthBin bin{1 + static_cast<int>(static_cast<long long>(b) * context / bins),
                      static_cast<int>(static_cast<long long>(b + 1) * context / bins), 0};
        for (int t : positions)
            if (t + 1 >= bin.lo && t + 1 <= bin.hi && bin.shortest == 0) bin.shortest = t + 1;
        if (bin.shortest > 0) kept.push_back(bin);
    }
    return kept;
}

nlohmann::json length_bins_json(const std::vector<LengthBin>& bins,
                                const std::vector<int>& positions) {
    nlohmann::json list = nlohmann::json::array();
    for (const LengthBin& bin : bins) {
        double lengths = 0;
        int count = 0;
        for (int t : positions)
            if (t + 1 >= bin.lo && t + 1 <= bin.hi) {
                lengths += t + 1;
                ++count;
            }
        list.push_back({{"lo", bin.lo},
                        {"hi", bin.hi},
                        {"shortest", bin.shortest},
                        {"positions", count},
                        {"length_mean", count > 0 ? lengths / count : 0.0}});
    }
    return list;
}

}  // namespace attngeo::empirical
