// Extract's failure modes, each reproduced: corrupt checkpoints (one NaN weight,
// weights ×1e12) through both engines, failing extracts leaving nothing behind, bad --out
// paths, corrupted resume state, incomplete or foreign merges, kill -9 at random moments, a
// full disk (RLIMIT_FSIZE) and an input vanishing mid-run.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/shared_data.hpp"
#include "tests/support/test_files.hpp"

namespace fs = std::filesystem;
using attngeo::test_support::shared_folder;
using attngeo::test_support::slurp;

namespace {

fs::path scratch() {
    return attngeo::test_support::scratch_folder("extract_faults");
}

struct Outcome {
    int exit_code = -1;
    std::string err;
};

Outcome run_cli(const std::string& args) {
    const auto result = attngeo::test_support::run_program(ATTNGEO_EXE, args, scratch());
    return {result.exit_code, result.err};
}

fs::path model_path() {
    return shared_folder() / "models" / "stories260K" / "stories260K.bin";
}

fs::path corpus_path() {
    return fs::path(ATTNGEO_SOURCE_DIR) / "examples" / "stories260K_corpus.txt";
}

std::string small_extract(const fs::path& model, const fs::path& out, const std::string& extra) {
    return "extract --model " + model.string() + " --corpus " + corpus_path().string() +
           (extra.find("--docs") == std::string::npos ? " --docs 4" : "") +
           " --context 32 --max-lag 8 --quiet " + extra + " --out " + out.string();
}

// One line on stderr (the error, last) that holds every phrase and none of the forbidden ones.
void expect_one_line_error(const Outcome& r, const std::vector<std::string>& phrases) {
    EXPECT_EQ(r.exit_code, 2) << r.err;
    std::string text = r.err;
    while (!text.empty() && text.back() == '\n')
        text.pop_back();
    EXPECT_EQ(text.find('\n'), std::string::npos) << "not one line: " << r.err;
    for (const auto& phrase : phrases)
        EXPECT_NE(r.err.find(phrase), std::string::npos) << "lacks \"" << phrase << "\": " << r.err;
    for (const char* internal : {"ExactSum", "internal error", "bad_alloc", "resize", "what()"})
        EXPECT_EQ(r.err.find(internal), std::string::npos) << r.err;
}

// A copy of stories260K.bin with `edit` applied to its float weights (after the 7-int header).
fs::path edited_checkpoint(
    const std::string& name,
    const std::function<void(std::vector<float>&, const std::int32_t*)>& edit) {
    const std::string bytes = slurp(model_path());
    std::int32_t header[7];
    std::memcpy(header, bytes.data(), sizeof header);
    std::vector<float> weights((bytes.size() - sizeof header) / sizeof(float));
    std::memcpy(weights.data(), bytes.data() + sizeof header, weights.size() * sizeof(float));
    edit(weights, header);
    const fs::path path = scratch() / name;
    // The tokenizer is found beside the checkpoint.
    fs::copy_file(model_path().parent_path() / "tok512.bin", scratch() / "tok512.bin",
                  fs::copy_options::overwrite_existing);
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(header), sizeof header);
    out.write(reinterpret_cast<const char*>(weights.data()), weights.size() * sizeof(float));
    return path;
}

// Every output file of a finished extract except manifest.json (it records timings).
const char* const kOutputs[] = {"heads.csv",       "pr.csv",   "by_position.csv",
                                "cos_by_lag.csv",  "diag.csv", "per_doc.safetensors",
                                "sums.safetensors"};

void expect_same_outputs(const fs::path& expected, const fs::path& actual) {
    for (const char* file : kOutputs) {
        const std::string want = slurp(expected / file);
        ASSERT_FALSE(want.empty()) << file;
        EXPECT_TRUE(slurp(actual / file) == want) << actual / file << " differs";
    }
}

// Nothing but `keep` in `folder`: no staging folders, no stray temporaries.
std::vector<std::string> entries(const fs::path& folder) {
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(folder))
        names.push_back(entry.path().filename().string());
    return names;
}

pid_t spawn_shell(const std::string& command) {
    const pid_t pid = ::fork();
    if (pid == 0) {
        ::setpgid(0, 0);
        ::execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
        ::_exit(127);
    }
    return pid;
}

}  // namespace

TEST(ExtractFaults, NonFiniteActivationsNameModelLayerAndTensorInBothEngines) {
    REQUIRE_SHARED_FILE(model_path());
    // rms_att of layer 2, first element: everything before layer 2 is untouched, so the first
    // non-finite activation is layer 2's attention output.
    const fs::path nan_model = edited_checkpoint("nan.bin", [](auto& w, const std::int32_t* h) {
        const std::size_t dim = h[0], vocab = std::abs(h[5]);
        w[vocab * dim + 2 * dim] = std::numeric_limits<float>::quiet_NaN();
    });
    const fs::path huge_model = edited_checkpoint("huge.bin", [](auto& w, const std::int32_t*) {
        for (float& x : w)
            x *= 1e12f;
    });
    const fs::path dir = scratch();
    const Outcome runc_nan = run_cli(small_extract(nan_model, dir / "runc_nan", ""));
    expect_one_line_error(runc_nan, {"'" + nan_model.string() + "'",
                                     "non-finite activations in layer 2 (attention output)"});
    const Outcome torch_nan =
        run_cli(small_extract(nan_model, dir / "torch_nan", "--engine torch"));
    // libtorch checks the weights at load: the tensor is named before any forward.
    expect_one_line_error(torch_nan, {"'" + nan_model.string() + "'",
                                      "model.layers.2.input_layernorm.weight", "NaN"});
    for (const char* engine : {"runc", "torch"}) {
        const Outcome huge = run_cli(small_extract(
            huge_model, dir / (std::string("huge_") + engine), std::string("--engine ") + engine));
        expect_one_line_error(
            huge, {"'" + huge_model.string() + "'", "non-finite activations in layer 0"});
        std::cout << engine << ": " << huge.err;
    }
    // Nothing written: neither the output folders nor their partial state.
    for (const char* out : {"runc_nan", "torch_nan", "huge_runc", "huge_torch"})
        EXPECT_FALSE(fs::exists(dir / out)) << out;
    // The untouched checkpoint still runs through the checked forward.
    EXPECT_EQ(run_cli(small_extract(model_path(), dir / "clean", "")).exit_code, 0);
}

TEST(ExtractFaults, FailingExtractIntoAnExistingFolderLeavesItAsItWas) {
    REQUIRE_SHARED_FILE(model_path());
    const fs::path nan_model = edited_checkpoint("nan2.bin", [](auto& w, const std::int32_t* h) {
        w[std::size_t(std::abs(h[5])) * h[0]] = std::numeric_limits<float>::infinity();
    });
    const fs::path out = scratch() / "existing";
    fs::create_directories(out);
    std::ofstream(out / "notes.txt") << "mine";
    expect_one_line_error(run_cli(small_extract(nan_model, out, "")), {"non-finite"});
    EXPECT_EQ(entries(out), std::vector<std::string>{"notes.txt"});
}

TEST(ExtractFaults, BadOutPathsAreOneLineNamingTheFlag) {
    REQUIRE_SHARED_FILE(model_path());
    const fs::path dir = scratch();
    const fs::path long_name = dir / std::string(300, 'x');
    const fs::path file = dir / "a_file";
    std::ofstream(file) << "x";
    expect_one_line_error(run_cli(small_extract(model_path(), long_name, "")), {"--out", "longer"});
    expect_one_line_error(run_cli(small_extract(model_path(), file, "")),
                          {"--out", "not a folder"});
    const fs::path tokens = dir / "ids.txt";
    std::ofstream(tokens) << "1 2 3 4\n";
    const std::string capture =
        "capture --model " + model_path().string() + " --tokens " + tokens.string() + " --out ";
    expect_one_line_error(run_cli(capture + (long_name.string() + ".safetensors")),
                          {"--out", "longer"});
    expect_one_line_error(run_cli(capture + dir.string()), {"--out", "folder"});
    std::error_code ec;
    EXPECT_FALSE(fs::exists(long_name, ec));
}

TEST(ExtractFaults, TokenIdsOutsideTheVocabularyNameTheFileAndLine) {
    REQUIRE_SHARED_FILE(model_path());
    const fs::path dir = scratch();
    const fs::path tokens = dir / "big_ids.txt";
    std::ofstream(tokens) << "1 2 3\n\n1 2 300000\n";
    const Outcome capture = run_cli("capture --model " + model_path().string() + " --tokens " +
                                    tokens.string() + " --out " + (dir / "c.safetensors").string());
    expect_one_line_error(capture, {"--tokens '" + tokens.string() + "' line 3", "300000"});
    const Outcome extract = run_cli("extract --model " + model_path().string() + " --tokens " +
                                    tokens.string() + " --context 2 --out " + (dir / "e").string());
    expect_one_line_error(extract, {"--tokens '" + tokens.string() + "' line 3", "300000"});
}

TEST(ExtractFaults, CorruptedResumeStateIsANamedError) {
    REQUIRE_SHARED_FILE(model_path());
    const fs::path dir = scratch();
    const std::string args = "--checkpoint-every 0";
    const fs::path state = dir / "run" / ".partial" / "state.safetensors";
    // Data overwritten in place (the header intact): negative document counts, among others.
    ASSERT_EQ(run_cli(small_extract(model_path(), dir / "run", args + " --stop-after 2")).exit_code,
              130);
    std::string bytes = slurp(state);
    std::uint64_t header = 0;
    std::memcpy(&header, bytes.data(), 8);
    ASSERT_LT(8 + header, bytes.size());
    std::memset(bytes.data() + 8 + header, 0xff, bytes.size() - 8 - header);
    std::ofstream(state, std::ios::binary | std::ios::trunc) << bytes;
    expect_one_line_error(run_cli(small_extract(model_path(), dir / "run", args + " --resume")),
                          {"state.safetensors"});
    // The whole file overwritten.
    std::ofstream(state, std::ios::binary | std::ios::trunc) << std::string(300, '\xee');
    expect_one_line_error(run_cli(small_extract(model_path(), dir / "run", args + " --resume")),
                          {"state.safetensors"});
    // A checkpoint the run did not make is left for its owner to inspect.
    EXPECT_TRUE(fs::exists(state));
}

TEST(ExtractFaults, MergeRefusesMissingDuplicatedAndForeignShards) {
    REQUIRE_SHARED_FILE(model_path());
    const fs::path dir = scratch();
    auto shard = [&](int i, const std::string& name, const std::string& extra) {
        const fs::path out = dir / name;
        EXPECT_EQ(run_cli(small_extract(model_path(), out,
                                        "--shard " + std::to_string(i) + "/3 " + extra))
                      .exit_code,
                  0);
        return out.string();
    };
    const std::string s0 = shard(0, "s0", ""), s1 = shard(1, "s1", ""), s2 = shard(2, "s2", "");
    const std::string torch1 = shard(1, "torch1", "--engine torch");
    const std::string out = " --out " + (dir / "merged").string();
    expect_one_line_error(run_cli("merge " + s0 + " " + s1 + out), {"missing"});
    expect_one_line_error(run_cli("merge " + s0 + " " + s1 + " " + s1 + out), {s1, "each once"});
    expect_one_line_error(run_cli("merge " + s0 + " " + torch1 + " " + s2 + out),
                          {torch1, "engine"});
    EXPECT_FALSE(fs::exists(dir / "merged"));
    ASSERT_EQ(run_cli("merge " + s2 + " " + s0 + " " + s1 + out).exit_code, 0);
    ASSERT_EQ(run_cli(small_extract(model_path(), dir / "whole", "")).exit_code, 0);
    expect_same_outputs(dir / "whole", dir / "merged");
}

// kill -9 at 20 seeded random moments, each followed by --resume; the final
// outputs equal an uninterrupted run's byte for byte.
TEST(ExtractFaults, KillNineAtRandomMomentsThenResumeGivesIdenticalOutputs) {
    REQUIRE_SHARED_FILE(model_path());
    const fs::path dir = scratch();
    const std::string args = "--docs 12 --checkpoint-every 0";
    auto command = [&](const fs::path& out) {
        return std::string(ATTNGEO_EXE) + " " + small_extract(model_path(), out, args) +
               " --resume 2>/dev/null";
    };
    const auto t0 = std::chrono::steady_clock::now();
    ASSERT_EQ(run_cli(small_extract(model_path(), dir / "reference", args)).exit_code, 0);
    const double full_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::mt19937_64 rng(15);
    // Each resume has less left to do, so the moments stay in the first part of a full run.
    std::uniform_real_distribution<double> moment(0.0, 0.6 * full_s);
    int kills_landed = 0;
    for (int folder = 0; folder < 4; ++folder) {
        const fs::path out = dir / ("killed" + std::to_string(folder));
        for (int k = 0; k < 5; ++k) {
            const pid_t pid = spawn_shell("exec " + command(out));
            std::this_thread::sleep_for(std::chrono::duration<double>(moment(rng)));
            int status = 0;
            if (::waitpid(pid, &status, WNOHANG) == 0) {
                ::kill(pid, SIGKILL);
                ::waitpid(pid, &status, 0);
                ++kills_landed;
            }
        }
        ASSERT_EQ(std::system(command(out).c_str()), 0) << out;
        expect_same_outputs(dir / "reference", out);
        EXPECT_FALSE(fs::exists(out / ".partial")) << out;
    }
    RecordProperty("kills_landed", kills_landed);
    std::cout << "kill -9 landed " << kills_landed << " of 20 times (a run takes " << full_s
              << " s); every resumed run equals the uninterrupted one\n";
    EXPECT_GE(kills_landed, 5);  // how many land depends on the machine's load
}

// A full disk (RLIMIT_FSIZE, SIGXFSZ ignored) is exit 2 naming the file, with
// no output folder or staging folder left; a later run with space succeeds.
TEST(ExtractFaults, FullDiskLeavesNothingBehindAndALaterRunSucceeds) {
    REQUIRE_SHARED_FILE(model_path());
    const fs::path dir = scratch() / "disk";
    fs::create_directories(dir);
    for (int kib : {1, 4, 16}) {
        const fs::path out = dir / ("out" + std::to_string(kib));
        const Outcome r = run_cli(
            "--version >/dev/null; ulimit -f " + std::to_string(kib) + "; trap '' XFSZ; exec " +
            ATTNGEO_EXE + " " + small_extract(model_path(), out, "--docs 12 --checkpoint-every 0"));
        expect_one_line_error(r, {"cannot write", "'" + dir.string()});
        EXPECT_FALSE(fs::exists(out)) << kib << " KiB: " << r.err;
        std::cout << kib << " KiB: " << r.err;
    }
    EXPECT_TRUE(entries(dir).empty());
    ASSERT_EQ(run_cli(small_extract(model_path(), dir / "out1", "--docs 12")).exit_code, 0);
    EXPECT_TRUE(fs::exists(dir / "out1" / "manifest.json"));
    // D10: a bootstrap of 2^31 - 1 replicates is refused up front, never std::bad_alloc.
    const Outcome replicates =
        run_cli("--version >/dev/null; ulimit -v 4194304; exec " + std::string(ATTNGEO_EXE) +
                " compare --quiet --emp " + (dir / "out1").string() +
                " --replicates 2147483647 --out " + (dir / "cmp").string());
    expect_one_line_error(replicates, {"--replicates 2147483647", "memory budget"});
    // compare on that folder, under the same limit.
    const Outcome compare = run_cli("--version >/dev/null; ulimit -f 1; trap '' XFSZ; exec " +
                                    std::string(ATTNGEO_EXE) + " compare --quiet --emp " +
                                    (dir / "out1").string() + " --out " + (dir / "cmp").string());
    expect_one_line_error(compare, {"cannot write"});
    EXPECT_FALSE(fs::exists(dir / "cmp"));
    EXPECT_EQ(entries(dir), std::vector<std::string>{"out1"});
    EXPECT_EQ(
        run_cli("compare --emp " + (dir / "out1").string() + " --out " + (dir / "cmp").string())
            .exit_code,
        0);
}

// The spill deleted under a running extract, or between a stop and --resume, is
// a named error rather than a crash or silently short outputs.
TEST(ExtractFaults, AVanishedSpillIsANamedError) {
    REQUIRE_SHARED_FILE(model_path());
    const fs::path dir = scratch();
    const fs::path spill = dir / "vanish" / ".partial" / "per_doc.bin";
    ASSERT_EQ(run_cli(small_extract(model_path(), dir / "vanish", "--stop-after 3")).exit_code,
              130);
    fs::remove(spill);
    expect_one_line_error(run_cli(small_extract(model_path(), dir / "vanish", "--resume")),
                          {"per_doc.bin"});
    // Mid-run: the spill unlinked while windows are still being written to it. On a loaded
    // machine the run can finish before this thread sees the spill; such a run proves nothing
    // and is repeated in a fresh folder.
    const fs::path live = dir / "live" / ".partial" / "per_doc.bin";
    int status = 0, attempts = 0;
    for (; attempts < 5; ++attempts) {
        const pid_t pid = spawn_shell(std::string("exec ") + ATTNGEO_EXE + " " +
                                      small_extract(model_path(), dir / "live", "--docs 60") +
                                      " 2>" + (dir / "live_err.txt").string());
        for (int i = 0; i < 30000 && !fs::exists(live); ++i)  // up to 30 s on a loaded machine
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        fs::remove(live);
        ::waitpid(pid, &status, 0);
        ASSERT_TRUE(WIFEXITED(status));
        if (WEXITSTATUS(status) != 0) break;
        fs::remove_all(dir / "live");  // finished before the unlink: try again
    }
    ASSERT_LT(attempts, 5) << "every run finished before its spill could be removed";
    expect_one_line_error({WEXITSTATUS(status), slurp(dir / "live_err.txt")}, {"per_doc.bin"});
    EXPECT_FALSE(fs::exists(dir / "live"));
}
