// per_trial.safetensors: the per-trial counts written through common's safetensors writer and
// read back with every shape, value and sum checked; see trial_counts_file.hpp.
#include "simulate/trial_counts_file.hpp"

#include <cstring>
#include <filesystem>
#include <limits>
#include <set>
#include <stdexcept>
#include <string>

#include "common/errors.hpp"
#include "common/run_schema.hpp"
#include "common/safetensors.hpp"
#include "common/shard.hpp"

namespace fs = std::filesystem;

namespace attngeo::simulate {
namespace {

constexpr const char* kFirstTrialKey = "first_trial";

std::string tensor_name(const char* quantity, std::size_t grid) {
    return std::string(quantity) + "." + std::to_string(grid);
}

// The file being read, so that every message opens the same way.
struct CountsFile {
    SafetensorsFile file;
    std::string who;

    [[noreturn]] void fail(const std::string& what) const {
        throw InputError(who + ": '" + file.path() + "': " + what);
    }
    // The tensor `name`, of `dtype` and rank `shape.size()`; its extents must equal `shape`
    // except where `shape` holds −1 (checked by the caller).
    HostTensor tensor(const std::string& name, DType dtype,
                      const std::vector<std::int64_t>& shape) const {
        if (!file.contains(name))
            fail("no tensor '" + name + "', expected " + to_string(dtype) + " " +
                 shape_text(shape));
        HostTensor t = file.get(name);
        bool same = t.dtype == dtype && t.shape.size() == shape.size();
        for (std::size_t i = 0; same && i < shape.size(); ++i)
            same = shape[i] < 0 || t.shape[i] == shape[i];
        if (!same)
            fail("tensor '" + name + "' is " + to_string(t.dtype) + " " + shape_text(t.shape) +
                 ", expected " + to_string(dtype) + " " + shape_text(shape));
        return t;
    }
};

// The values of a checked tensor (the map may be unaligned for T: copied, never cast).
template <class T>
std::vector<T> tensor_values(const HostTensor& t) {
    std::vector<T> out(static_cast<std::size_t>(t.numel()));
    if (!out.empty()) std::memcpy(out.data(), t.data, out.size() * sizeof(T));
    return out;
}

// What one grid point's tensors must be.
struct PointLayout {
    std::size_t grid = 0;
    std::int64_t first = 0;   // the trial of row 0
    std::vector<int> sizes;   // [S] the point's N
    int n = 0;                // tokens of its head
    std::int64_t summed = 0;  // trials of its sums.csv rows
    std::int64_t most = 0;    // trials its slice of the shard holds
    TrialsHeld held = TrialsHeld::exactly;
};

// N.<g> must list the point's sizes.
void check_sizes(const CountsFile& in, const PointLayout& p) {
    const std::string name = tensor_name("N", p.grid);
    const std::int64_t S = static_cast<std::int64_t>(p.sizes.size());
    const auto N = tensor_values<std::int64_t>(in.tensor(name, DType::I64, {S}));
    for (std::size_t s = 0; s < p.sizes.size(); ++s)
        if (N[s] != p.sizes[s])
            in.fail("tensor '" + name + "' holds N = " + std::to_string(N[s]) + " at index " +
                    std::to_string(s) + ", expected " + std::to_string(p.sizes[s]) +
                    " (grid point " + std::to_string(p.grid) + "'s sizes)");
}

// The rows of one count tensor, each value within 0..limit(N).
std::vector<std::int32_t> read_count_tensor(const CountsFile& in, const PointLayout& p,
                                            const char* quantity, std::int64_t rows) {
    const std::string name = tensor_name(quantity, p.grid);
    const std::int64_t S = static_cast<std::int64_t>(p.sizes.size());
    auto values = tensor_values<std::int32_t>(in.tensor(name, DType::I32, {rows, S}));
    const bool inside = std::string(quantity) == "K_in";
    for (std::int64_t t = 0; t < rows; ++t)
        for (std::int64_t s = 0; s < S; ++s) {
            const int N = p.sizes[static_cast<std::size_t>(s)];
            const std::int64_t limit = inside ? N : p.n - N;
            const std::int32_t k = values[static_cast<std::size_t>(t * S + s)];
            if (k < 0 || k > limit)
                in.fail("tensor '" + name + "' row " + std::to_string(t) + " (trial " +
                        std::to_string(p.first + t) + "), N = " + std::to_string(N) + ": " +
                        quantity + " = " + std::to_string(k) + ", expected 0.." +
                        std::to_string(limit) + " (n = " + std::to_string(p.n) + ")");
        }
    return values;
}

// The trials K_in.<g> holds: exactly the summed ones, or (a saved state) any number from
// those to the whole slice.
std::int64_t rows_held(const CountsFile& in, const PointLayout& p) {
    const std::string name = tensor_name("K_in", p.grid);
    const std::int64_t S = static_cast<std::int64_t>(p.sizes.size());
    if (p.held == TrialsHeld::exactly) return in.tensor(name, DType::I32, {p.summed, S}).shape[0];
    const std::int64_t rows = in.tensor(name, DType::I32, {-1, S}).shape[0];
    if (rows < p.summed || rows > p.most)
        in.fail("tensor '" + name + "' holds " + std::to_string(rows) + " trials, expected " +
                std::to_string(p.summed) + ".." + std::to_string(p.most) + " (sums.csv holds " +
                std::to_string(p.summed) + " for grid point " + std::to_string(p.grid) + ")");
    return rows;
}

std::string moments_text(const MomentSums& m) {
    return std::to_string(m.count) + ", " + to_string_int128(m.sum) + ", " +
           to_string_int128(m.sum_squares);
}

// The counts must give the P and R sums of sums.csv exactly, trial by trial.
void check_against_sums(const CountsFile& in, const PointLayout& p, const TrialCounts& c,
                        const SimulationSums& sums) {
    auto compare = [&](const char* quantity, std::size_t s, const MomentSums& recounted,
                       const MomentSums& held) {
        if (recounted == held) return;
        in.fail("grid point " + std::to_string(p.grid) + ", N = " + std::to_string(p.sizes[s]) +
                ": the counts give " + quantity + "'s count, sum, sum_squares " +
                moments_text(recounted) + ", " + schema::file::monte_carlo_sums + " holds " +
                moments_text(held));
    };
    for (std::size_t s = 0; s < p.sizes.size(); ++s) {
        MomentSums precision, recall;
        for (std::int64_t t = 0; t < c.trials; ++t) {
            precision.add(trial_precision(c, t, s, p.sizes[s]));
            recall.add(trial_recall(c, t, s, p.sizes[s]));
        }
        compare("P", s, precision, sums.by_size[s].precision);
        compare("R", s, recall, sums.by_size[s].recall);
    }
}

// One point's counts, checked, cut to the summed trials.
TrialCounts read_point(const CountsFile& in, const PointLayout& p, const SimulationSums& sums) {
    check_sizes(in, p);
    const std::int64_t rows = rows_held(in, p);
    const int S = static_cast<int>(p.sizes.size());
    TrialCounts c;
    c.first = p.first;
    c.trials = rows;
    c.size_count = S;
    c.K_in = read_count_tensor(in, p, "K_in", rows);
    c.K_out = read_count_tensor(in, p, "K_out", rows);
    c.trials = p.summed;
    c.K_in.resize(static_cast<std::size_t>(p.summed) * S);
    c.K_out.resize(c.K_in.size());
    check_against_sums(in, p, c, sums);
    return c;
}

// Every tensor of the file belongs to a point read (an unexpected one is a foreign or edited
// file, which would otherwise be silently ignored).
void check_no_other_tensors(const CountsFile& in, const std::set<std::string>& expected) {
    for (const std::string& name : in.file.names())
        if (!expected.count(name))
            in.fail("unexpected tensor '" + name +
                    "', expected K_in.<g>, K_out.<g> and N.<g> for the grid points with trials");
}

}  // namespace

void write_trial_counts(const std::string& path, const RunConfig& config,
                        const std::vector<std::vector<int>>& point_sizes,
                        const std::vector<SimulationSums>& sums) {
    const std::int64_t first = shard_trials(config.trials, config.shard).first;
    std::vector<std::vector<std::int64_t>> sizes;  // N.<g>'s data, alive until written
    sizes.reserve(sums.size());                    // never moved: the views point into it
    std::vector<HostTensor> tensors;
    for (std::size_t g = 0; g < sums.size(); ++g) {
        const TrialCounts& c = sums[g].counts;
        if (c.trials != sums[g].trials)
            throw std::logic_error("write_trial_counts: grid point " + std::to_string(g) +
                                   " sums " + std::to_string(sums[g].trials) +
                                   " trials but holds " + std::to_string(c.trials) +
                                   " rows of counts");
        if (c.trials == 0) continue;
        const std::size_t S = point_sizes.at(g).size();
        if (c.first != first || static_cast<std::size_t>(c.size_count) != S ||
            c.K_in.size() != static_cast<std::size_t>(c.trials) * S ||
            c.K_out.size() != c.K_in.size())
            throw std::logic_error("write_trial_counts: grid point " + std::to_string(g) +
                                   "'s counts do not fit the run");
        const std::vector<std::int64_t> shape = {c.trials, c.size_count};
        const std::size_t bytes = c.K_in.size() * sizeof(std::int32_t);
        tensors.push_back(
            tensor_view(tensor_name("K_in", g), DType::I32, shape, c.K_in.data(), bytes));
        tensors.push_back(
            tensor_view(tensor_name("K_out", g), DType::I32, shape, c.K_out.data(), bytes));
        sizes.emplace_back(point_sizes[g].begin(), point_sizes[g].end());
        tensors.push_back(tensor_view(tensor_name("N", g), DType::I64,
                                      {static_cast<std::int64_t>(S)}, sizes.back().data(),
                                      S * sizeof(std::int64_t)));
    }
    write_safetensors(path, tensors, {{kFirstTrialKey, std::to_string(first)}});
}

void write_trial_counts(OutputFolder& folder, const RunConfig& config,
                        const std::vector<SimulationSums>& sums) {
    std::vector<std::vector<int>> sizes(sums.size());
    for (const GridPoint& p : grid_points(config))
        if (sums.at(static_cast<std::size_t>(p.index)).counts.trials > 0)
            sizes[p.index] = setup_point(config, p).spec.sizes;
    try {
        write_trial_counts((fs::path(folder.staging()) / schema::file::trial_counts).string(),
                           config, sizes, sums);
    } catch (const InputError& e) {  // named as OutputFolder::write names its files
        std::string why = e.what();
        const std::size_t cut = why.rfind("': ");
        if (cut != std::string::npos) why = why.substr(cut + 3);
        throw InputError("--out: cannot write '" +
                         (fs::path(folder.destination()) / schema::file::trial_counts).string() +
                         "': " + why + "; nothing was written");
    }
}

void read_trial_counts(const std::string& dir, const RunConfig& config,
                       std::vector<SimulationSums>& sums, const std::string& who, TrialsHeld held) {
    const std::string path = (fs::path(dir) / schema::file::trial_counts).string();
    const CountsFile in = [&] {
        try {
            return CountsFile{SafetensorsFile(path), who};
        } catch (const InputError& e) {
            throw InputError(who + ": " + e.what());
        }
    }();
    const auto [first, last] = shard_trials(config.trials, config.shard);
    const auto meta = in.file.metadata().find(kFirstTrialKey);
    if (meta == in.file.metadata().end() || meta->second != std::to_string(first))
        in.fail(std::string("metadata ") + kFirstTrialKey + " = '" +
                (meta == in.file.metadata().end() ? "(none)" : meta->second) + "', expected '" +
                std::to_string(first) + "' (the first trial of shard " +
                std::to_string(config.shard.index) + "/" + std::to_string(config.shard.count) +
                ")");
    std::set<std::string> expected;
    for (const GridPoint& point : grid_points(config)) {
        PointLayout p;
        p.grid = static_cast<std::size_t>(point.index);
        p.first = first;
        p.summed = sums.at(p.grid).trials;
        p.most = last - first;
        p.held = held;
        const bool present = in.file.contains(tensor_name("K_in", p.grid));
        if (p.summed == 0 && (held == TrialsHeld::exactly || !present)) continue;
        const PointSetup setup = setup_point(config, point);
        if (setup.spec.d_infinite) continue;  // no trials, so no tensors
        p.sizes = setup.spec.sizes;
        p.n = static_cast<int>(setup.head.alpha.size());
        for (const char* quantity : {"K_in", "K_out", "N"})
            expected.insert(tensor_name(quantity, p.grid));
        sums[p.grid].counts = read_point(in, p, sums[p.grid]);
    }
    check_no_other_tensors(in, expected);
}

}  // namespace attngeo::simulate
