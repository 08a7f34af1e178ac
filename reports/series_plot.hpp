// Pieces shared by the figures that draw one curve per chosen value against the context length
// (the by-length P/R curves, the predecessor paper's distance and separability figures): the
// series colours, the gnuplot plot command, and which N to follow across length bins.
#pragma once
#include <cstddef>
#include <map>
#include <string>
#include <vector>

namespace attngeo::reports {

// " lc rgb '…'": the k-th colour of palette::kSeries (cycling).
std::string series_colour(std::size_t k);

// "  plot A, \
//        B\n" over `curves`; "  plot 1/0 notitle\n" when there is none (gnuplot refuses an
// empty plot, and an empty frame says "no rows" better than a failed figure).
std::string plot_command(const std::vector<std::string>& curves);

// Up to four of `values` (ascending) spread out: the smallest, two in the middle, the largest.
std::vector<int> spread_four(const std::vector<int>& values);

// The N a figure against L follows: up to four of those present in at least two length bins
// (a curve needs two points), or of all N when none is.
struct SizesAcrossBins {
    std::vector<int> shown;    // ascending
    bool single_bins = false;  // no N is in two bins: each curve is one point
};
// `bins_per_size`: N → how many length bins have a row for it.
SizesAcrossBins sizes_across_bins(const std::map<int, int>& bins_per_size);
// The caption's "N = 1, 8, 64, 255 (of the N present in at least two bins: …)".
std::string sizes_across_bins_caption(const SizesAcrossBins& sizes);

}  // namespace attngeo::reports
