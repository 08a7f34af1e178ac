// Scratch folders, whole-file reads and runs of the built `attngeo` for the test suites: one
// definition instead of a copy in every test file.
#pragma once
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "common/errors.hpp"

namespace attngeo::test_support {

// One folder per test process (CTest runs the cases of a file in parallel processes).
inline std::filesystem::path scratch_folder(const std::string& suite) {
    const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                      ("attngeo_test_" + suite + "_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    return dir;
}

inline std::string slurp(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

struct CliResult {
    int exit_code = -1;
    std::string out, err;
};

// Runs `executable args` through the shell, capturing stdout through a pipe and stderr through
// a file in `scratch`.
inline CliResult run_program(const std::string& executable, const std::string& args,
                             const std::filesystem::path& scratch) {
    const std::filesystem::path err_path = scratch / "stderr.txt";
    const std::string command = executable + " " + args + " 2>" + err_path.string();
    CliResult r;
    FILE* pipe = popen(command.c_str(), "r");
    if (pipe == nullptr) return r;
    char buffer[4096];
    std::size_t got;
    while ((got = fread(buffer, 1, sizeof buffer, pipe)) > 0)
        r.out.append(buffer, got);
    const int status = pclose(pipe);
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.err = slurp(err_path);
    return r;
}

// Whether `executable` was built with `extract` (libtorch): a build without it has no such
// subcommand, and CLI11 answers `extract --help` with the main help (exit 0), so the help's
// text decides, never the exit code.
inline bool extract_built(const std::string& executable, const std::filesystem::path& scratch) {
    const CliResult help = run_program(executable, "extract --help", scratch);
    return help.exit_code == 0 && help.out.find("--corpus") != std::string::npos;
}

// Runs `action`, which must throw InputError whose one-line message holds every phrase.
inline void expect_input_error(const std::function<void()>& action,
                               const std::vector<std::string>& phrases) {
    try {
        action();
        ADD_FAILURE() << "expected InputError, nothing thrown";
    } catch (const InputError& error) {
        const std::string message = error.what();
        for (const auto& phrase : phrases) {
            EXPECT_NE(message.find(phrase), std::string::npos)
                << "message lacks \"" << phrase << "\": " << message;
        }
        EXPECT_EQ(message.find('\n'), std::string::npos) << "not one line: " << message;
    } catch (const std::exception& error) {
        ADD_FAILURE() << "expected InputError, got another exception: " << error.what();
    }
}

}  // namespace attngeo::test_support
