// The shared curve pieces of the figures against context length; see series_plot.hpp.
#include "reports/series_plot.hpp"

#include <cmath>
#include <set>

#include "reports/palette.hpp"

namespace attngeo::reports {

std::string series_colour(std::size_t k) {
    return std::string(" lc rgb '") + palette::kSeries[k % palette::kSeries.size()] + "'";
}

std::string plot_command(const std::vector<std::string>& curves) {
    if (curves.empty()) return "  plot 1/0 notitle\n";
    std::string plot = "  plot ";
    for (std::size_t i = 0; i < curves.size(); ++i)
        plot += (i ? ", \\\n       " : "") + curves[i];
    return plot + "\n";
}

std::vector<int> spread_four(const std::vector<int>& values) {
    if (values.size() <= 4) return values;
    const double last = static_cast<double>(values.size() - 1);
    std::set<int> picked;
    for (double share : {0.0, 1.0 / 3.0, 2.0 / 3.0, 1.0})
        picked.insert(values[static_cast<std::size_t>(std::lround(share * last))]);
    return {picked.begin(), picked.end()};
}

SizesAcrossBins sizes_across_bins(const std::map<int, int>& bins_per_size) {
    std::vector<int> in_two, any;
    for (const auto& [N, bins] : bins_per_size) {
        any.push_back(N);
        if (bins >= 2) in_two.push_back(N);
    }
    SizesAcrossBins sizes;
    sizes.single_bins = in_two.empty();
    sizes.shown = spread_four(sizes.single_bins ? any : in_two);
    return sizes;
}

std::string sizes_across_bins_caption(const SizesAcrossBins& sizes) {
    std::string shown;
    for (std::size_t k = 0; k < sizes.shown.size(); ++k)
        shown += (k ? ", " : "") + std::to_string(sizes.shown[k]);
    return "N = " + (shown.empty() ? std::string("(none: the file has no rows)") : shown) +
           (sizes.single_bins ? " (no N of the grid is in two bins, so each is one point)"
                              : " (of the N present in at least two bins: the smallest, two in "
                                "the middle and the largest)");
}

}  // namespace attngeo::reports
