// Shared plumbing of the libFuzzer targets: a per-process scratch folder for parsers that only
// take paths, splitting one input into several files, and the rule that InputError (and, where
// documented, std::domain_error) is the expected way to reject an input; anything else aborts.
#pragma once
#include <unistd.h>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/errors.hpp"

namespace attngeo::fuzz {

// Separates the files of a multi-file input (a folder); chosen to be readable in text seeds
// and unlikely inside the binary ones.
inline const std::string kFileSeparator = "\n==== next file ====\n";

// The input cut at each kFileSeparator; always at least one (possibly empty) part.
inline std::vector<std::string> split_files(const std::uint8_t* data, std::size_t size) {
    const std::string text(reinterpret_cast<const char*>(data), size);
    std::vector<std::string> parts;
    std::size_t start = 0;
    while (true) {
        const std::size_t at = text.find(kFileSeparator, start);
        parts.push_back(
            text.substr(start, at == std::string::npos ? std::string::npos : at - start));
        if (at == std::string::npos) return parts;
        start = at + kFileSeparator.size();
    }
}

// A folder under $TMPDIR private to this process (libFuzzer's -fork/-jobs run several),
// emptied and reused by every input, removed at exit.
class ScratchFolder {
  public:
    static ScratchFolder& instance() {
        static ScratchFolder folder;
        return folder;
    }
    const std::filesystem::path& path() const { return path_; }
    // Empties the folder (a previous input's files must not leak into this one).
    void clear() {
        for (const auto& entry : std::filesystem::directory_iterator(path_))
            std::filesystem::remove_all(entry.path());
    }
    std::string write(const std::string& name, const std::string& bytes) const {
        const std::filesystem::path file = path_ / name;
        std::ofstream out(file, std::ios::binary | std::ios::trunc);
        out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
        if (!out) {
            std::fprintf(stderr, "fuzz harness: cannot write %s\n", file.c_str());
            std::abort();
        }
        return file.string();
    }
    ~ScratchFolder() {
        std::error_code ignored;
        std::filesystem::remove_all(path_, ignored);
    }

  private:
    ScratchFolder() {
        const char* tmp = std::getenv("TMPDIR");
        path_ = std::filesystem::path(tmp && *tmp ? tmp : "/tmp") /
                ("attngeo-fuzz-" + std::to_string(::getpid()));
        std::filesystem::create_directories(path_);
    }
    std::filesystem::path path_;
};

// Runs `parse`; the rejections a parser is allowed are swallowed, anything else escaping is a
// finding: its message is printed and the process aborts so that libFuzzer saves the input.
enum class DomainErrors { finding, expected };
template <class Parse>
void expect_only_input_errors(Parse&& parse, DomainErrors domain_errors = DomainErrors::finding) {
    // ATTNGEO_FUZZ_VERBOSE=1 prints each rejection: how to check that a seed is accepted.
    static const bool verbose = std::getenv("ATTNGEO_FUZZ_VERBOSE") != nullptr;
    try {
        parse();
        if (verbose) std::fprintf(stderr, "fuzz: accepted\n");
    } catch (const InputError& e) {
        if (verbose) std::fprintf(stderr, "fuzz: InputError: %s\n", e.what());
    } catch (const std::domain_error& e) {
        if (domain_errors == DomainErrors::expected) {
            if (verbose) std::fprintf(stderr, "fuzz: domain_error: %s\n", e.what());
            return;
        }
        std::fprintf(stderr, "fuzz finding: std::domain_error escaped: %s\n", e.what());
        std::abort();
    } catch (const std::exception& e) {
        std::fprintf(stderr, "fuzz finding: exception escaped: %s\n", e.what());
        std::abort();
    }
}

}  // namespace attngeo::fuzz
