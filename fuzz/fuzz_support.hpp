// Shared plumbing of the libFuzzer targets: a per-process scratch folder for parsers that only
// take paths, splitting one input into several files, and the rule that InputError (and, where
// documented, std::domain_error) is the expected way to reject an input; anything else aborts.
#pragma once
#include <unistd.h>
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <stdexcept>
#include <string>
#include <utility>
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

// Valid folders written once per process under $TMPDIR/attngeo-fuzz-NAME-PID/ (one subfolder per
// entry, by its writer) and removed at exit: the templates a folder target damages.
class TemplateFolders {
  public:
    using Writer = std::function<void(const std::filesystem::path&)>;
    TemplateFolders(const std::string& name,
                    const std::vector<std::pair<std::string, Writer>>& folders) {
        const char* tmp = std::getenv("TMPDIR");
        root_ = std::filesystem::path(tmp && *tmp ? tmp : "/tmp") /
                ("attngeo-fuzz-" + name + "-" + std::to_string(::getpid()));
        std::filesystem::remove_all(root_);
        for (const auto& [subfolder, write] : folders) {
            dirs_.push_back(root_ / subfolder);  // the writer creates it
            write(dirs_.back());
        }
    }
    TemplateFolders(const TemplateFolders&) = delete;
    TemplateFolders& operator=(const TemplateFolders&) = delete;
    ~TemplateFolders() {
        std::error_code ignored;
        std::filesystem::remove_all(root_, ignored);
    }
    const std::filesystem::path& at(std::size_t i) const { return dirs_.at(i); }

  private:
    std::filesystem::path root_;
    std::vector<std::filesystem::path> dirs_;
};

// A copy of `source` in the scratch folder with one file damaged by the input: byte 0 picks the
// file (its low 6 bits, over the regular files by name; bit 7 is the target's, e.g. which
// template); with bit 6 set the rest replaces the whole file, else bytes 1-2 are an offset, byte
// 3 how many bytes to delete there and the rest what to insert (so even tiny inputs damage a
// valid file). Returns the copy; `damaged` is the file's name. `size` must be at least 1.
inline std::filesystem::path copy_with_one_file_edited(const std::filesystem::path& source,
                                                       const std::uint8_t* data, std::size_t size,
                                                       std::string& damaged) {
    namespace fs = std::filesystem;
    std::vector<fs::path> files;
    for (const auto& entry : fs::directory_iterator(source))
        if (entry.is_regular_file()) files.push_back(entry.path());
    std::sort(files.begin(), files.end());
    const fs::path& victim = files[(data[0] & 0x3f) % files.size()];
    std::ifstream in(victim, std::ios::binary);
    std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    if (data[0] & 0x40) {
        text.assign(reinterpret_cast<const char*>(data) + 1, size - 1);
    } else if (size >= 4) {
        const std::size_t at = (data[1] | (std::size_t(data[2]) << 8)) % (text.size() + 1);
        const std::size_t erase = std::min<std::size_t>(data[3], text.size() - at);
        text.replace(at, erase, reinterpret_cast<const char*>(data) + 4, size - 4);
    }
    auto& scratch = ScratchFolder::instance();
    scratch.clear();
    const fs::path copy = scratch.path() / "run";
    // File by file through streams, not fs::copy: its sendfile gives up on EINTR, and libFuzzer's
    // timer signals interrupt it now and then (a harness crash, not a finding). Subfolders are
    // left out, as fs::copy without `recursive` leaves them.
    fs::create_directory(copy);
    for (const fs::path& file : files) {
        std::ifstream from(file, std::ios::binary);
        std::ofstream(copy / file.filename(), std::ios::binary) << from.rdbuf();
    }
    std::ofstream(copy / victim.filename(), std::ios::binary | std::ios::trunc) << text;
    damaged = victim.filename().string();
    return copy;
}

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
