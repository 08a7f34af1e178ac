// Shard arithmetic and the --shard parser; see shard.hpp.
#include "common/shard.hpp"

#include <stdexcept>

#include "common/errors.hpp"
#include "common/exact_sums.hpp"

namespace attngeo {

Shard parse_shard(const std::string& text) {
    const auto slash = text.find('/');
    Shard s;
    try {
        if (slash == std::string::npos) throw std::invalid_argument("no slash");
        std::size_t used = 0;
        s.index = std::stoi(text.substr(0, slash), &used);
        if (used != slash) throw std::invalid_argument("index");
        const std::string count = text.substr(slash + 1);
        s.count = std::stoi(count, &used);
        if (used != count.size()) throw std::invalid_argument("count");
    } catch (const std::exception&) {
        throw InputError("--shard: '" + text + "', expected i/n such as 0/4");
    }
    check_shard(s, "--shard: '" + text + "'");
    return s;
}

void check_shard(Shard shard, const std::string& where) {
    if (shard.count < 1 || shard.index < 0 || shard.index >= shard.count) {
        throw InputError(where + ", expected shard i/n with 0 <= i < n");
    }
}

std::pair<std::int64_t, std::int64_t> shard_trials(std::int64_t total, Shard shard) {
    const auto first =
        static_cast<std::int64_t>(static_cast<Int128>(total) * shard.index / shard.count);
    const auto last =
        static_cast<std::int64_t>(static_cast<Int128>(total) * (shard.index + 1) / shard.count);
    return {first, last};
}

void check_shard_set(const std::vector<ShardFolder>& folders) {
    if (folders.empty()) throw InputError("merge: no run folders given");
    const int count = folders[0].shard.count;
    const std::string range = "0/" + std::to_string(count) + " .. " + std::to_string(count - 1) +
                              "/" + std::to_string(count);
    for (std::size_t i = 0; i < folders.size(); ++i) {
        const ShardFolder& f = folders[i];
        if (f.run_fingerprint != folders[0].run_fingerprint)
            throw InputError("merge: '" + f.dir + "' is from a different run than '" +
                             folders[0].dir + "' (model, windows or settings differ)");
        if (f.shard.count != count || f.shard.index != static_cast<int>(i))
            throw InputError("merge: shards must be " + range + ", each once; got '" + f.dir +
                             "' as " + std::to_string(f.shard.index) + "/" +
                             std::to_string(f.shard.count));
    }
    if (static_cast<int>(folders.size()) != count)
        throw InputError("merge: " + std::to_string(folders.size()) +
                         " shard folders given, the run has " + std::to_string(count) + "; shard " +
                         std::to_string(folders.size()) + "/" + std::to_string(count) +
                         " is missing");
}

}  // namespace attngeo
