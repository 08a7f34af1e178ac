// Sharding one run over several processes or machines: shard i of n takes the slice
// [⌊i·T/n⌋, ⌊(i+1)·T/n⌋) of T trials or windows, so the shards' exact sums add up to the
// unsharded run (docs/design.md §5, §13).
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace attngeo {

struct Shard {
    int index = 0;  // i, 0 ≤ i < count
    int count = 1;  // n
};

// "i/n" as given to --shard; InputError naming --shard otherwise.
Shard parse_shard(const std::string& text);
// InputError "<where>, expected shard i/n with 0 <= i < n" when the shard is not one.
void check_shard(Shard shard, const std::string& where);
// The shard's slice [first, last) of `total` items.
std::pair<std::int64_t, std::int64_t> shard_trials(std::int64_t total, Shard shard);

// One shard folder as `attngeo merge` sees it: where it is, which run it belongs to (the run's
// fingerprint) and its place in that run.
struct ShardFolder {
    std::string dir;
    std::string run_fingerprint;
    Shard shard;
};

// `folders`, sorted by shard index, must be shards 0/n .. n−1/n of one run, each once; otherwise an
// InputError "merge: …" naming the folder that breaks the set (or the first missing shard).
void check_shard_set(const std::vector<ShardFolder>& folders);

}  // namespace attngeo
