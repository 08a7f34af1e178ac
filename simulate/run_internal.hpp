// What simulate's run files share and nothing outside them needs: the random stream a run
// draws (so shards of different versions never merge), sums.csv's writer and reader, and the
// selection sizes of a grid point.
#pragma once
#include <sstream>
#include <string>
#include <vector>

#include "simulate/run.hpp"

namespace attngeo::simulate {

// Names the random numbers a run drew (generator, key and counter layout, normal transform),
// so that shards drawn by different versions are never merged into one estimate.
inline constexpr const char* kRandomStream =
    "philox4x32-10 key=seed counter=(block,trial,grid_point,substream); ziggurat-256 normals, "
    "one word each, misses finished from substream|2^31";
// What a manifest without random_stream drew from (the field came with the second stream).
inline constexpr const char* kUnnamedRandomStream = "philox4x64-10";

// The sizes N that `config` evaluates for a head of n tokens (--N's rule).
std::vector<int> point_sizes(const RunConfig& config, int n);

// Appends grid point `grid`'s sums.csv rows (header: grid,N,quantity,count,sum,sum_squares).
void write_sums_csv(std::ostringstream& out, int grid, const std::vector<int>& sizes,
                    const SimulationSums& sums);

// DIR/sums.csv of a run folder (or of a saved state), laid out by `config`'s grid. `who` opens
// every message ("merge", "--resume").
std::vector<SimulationSums> read_sums(const std::string& dir, const RunConfig& config,
                                      const std::string& who = "merge");

}  // namespace attngeo::simulate
