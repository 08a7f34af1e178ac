// docs/design.md §10 on a full disk for sweep and merge (simulate and report: test_cli.cpp),
// simulated with RLIMIT_FSIZE and SIGXFSZ ignored: exit 2 naming the file, nothing left behind, and
// the same command with space succeeds.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>

#include "tests/support/test_files.hpp"

namespace fs = std::filesystem;

namespace {

using attngeo::test_support::CliResult;

fs::path scratch() {
    return attngeo::test_support::scratch_folder("full_disk");
}

CliResult run(const std::string& args) {
    return attngeo::test_support::run_program(ATTNGEO_EXE, args, scratch());
}

// `args` with files limited to 64 KiB (n = 256 makes every run's tables larger than that).
CliResult run_on_full_disk(const std::string& args) {
    return attngeo::test_support::run_program(
        "ulimit -f 64; trap '' XFSZ; exec " + std::string(ATTNGEO_EXE), args, scratch());
}

// The failed command: exit 2, its error line naming a file under `out`, and nothing
// in `parent`; then the same command with space succeeds.
void expect_full_disk_refused(const std::string& args, const fs::path& parent,
                              const fs::path& out) {
    const CliResult full = run_on_full_disk(args);
    EXPECT_EQ(full.exit_code, 2) << full.err;
    const std::size_t at = full.err.find("attngeo ");
    const std::string last = at == std::string::npos ? "" : full.err.substr(at);
    EXPECT_NE(last.find("'" + out.string() + "/"), std::string::npos) << full.err;
    EXPECT_NE(last.find("File too large"), std::string::npos) << full.err;
    EXPECT_TRUE(fs::is_empty(parent)) << "something was left in " << parent;
    const CliResult ok = run(args);
    EXPECT_EQ(ok.exit_code, 0) << ok.err;
    EXPECT_TRUE(fs::is_regular_file(out / "manifest.json"));
}

const char* const kModel = " --L 255 --T1 20 --T2 200 --trials 10 --quiet";

}  // namespace

TEST(FullDisk, SweepLeavesNothingBehindAndALaterRunSucceeds) {
    const fs::path parent = scratch() / "sweep_parent";
    fs::remove_all(parent);
    fs::create_directories(parent);
    const fs::path out = parent / "sweep";
    expect_full_disk_refused(
        "sweep --set beta=0.05,0.1" + std::string(kModel) + " --out " + out.string(), parent, out);
}

TEST(FullDisk, MergeLeavesNothingBehindAndALaterRunSucceeds) {
    std::string shards;
    for (const char* shard : {"0", "1"}) {
        const fs::path dir = scratch() / (std::string("shard") + shard);
        fs::remove_all(dir);
        ASSERT_EQ(
            run("simulate" + std::string(kModel) + " --shard " + shard + "/2 --out " + dir.string())
                .exit_code,
            0);
        shards += " " + dir.string();
    }
    const fs::path parent = scratch() / "merge_parent";
    fs::remove_all(parent);
    fs::create_directories(parent);
    const fs::path out = parent / "merged";
    expect_full_disk_refused("merge" + shards + " --out " + out.string(), parent, out);
}
