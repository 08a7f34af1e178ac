// Staged output folders; see output_folder.hpp.
#include "common/output_folder.hpp"

#include <unistd.h>

#include <filesystem>

#include "common/atomic_file.hpp"
#include "common/errors.hpp"

namespace attngeo {
namespace fs = std::filesystem;
namespace {

std::string in_quotes(const fs::path& path) {
    return "'" + path.string() + "'";
}

// Moves the staged tree into place: a missing entry by one rename, a folder present on both
// sides entry by entry (a report re-written into its own folder keeps unrelated files).
void move_into(const fs::path& from, const fs::path& to, const std::string& flag) {
    std::error_code ec;
    if (!fs::exists(to, ec)) {
        fs::rename(from, to, ec);
        if (ec)
            throw InputError(flag + " " + in_quotes(to) +
                             ": cannot move the output in: " + ec.message());
        return;
    }
    if (fs::is_directory(from, ec) && fs::is_directory(to, ec)) {
        for (const auto& entry : fs::directory_iterator(from, ec))
            move_into(entry.path(), to / entry.path().filename(), flag);
        if (ec) throw InputError(flag + " " + in_quotes(from) + ": cannot list: " + ec.message());
        return;
    }
    if (fs::is_directory(to, ec)) fs::remove_all(to, ec);  // a folder where a file now goes
    fs::rename(from, to, ec);
    if (ec) throw InputError(flag + " " + in_quotes(to) + ": cannot replace: " + ec.message());
}

}  // namespace

void check_output_folder(const std::string& destination, const std::string& flag) {
    if (destination.empty()) throw InputError(flag + ": empty path, expected an output folder");
    const fs::path path = fs::absolute(fs::path(destination)).lexically_normal();
    const long name_max =
        ::pathconf(path.has_parent_path() ? path.parent_path().c_str() : ".", _PC_NAME_MAX);
    for (const auto& part : path)
        if (name_max > 0 && part.string().size() > static_cast<std::size_t>(name_max))
            throw InputError(flag + " " + in_quotes(destination) + ": the name '" +
                             part.string().substr(0, 40) + "…' is longer than " +
                             std::to_string(name_max) + " bytes, the file system's limit");
    std::error_code ec;
    const fs::file_status status = fs::status(path, ec);
    if (fs::exists(status) && !fs::is_directory(status))
        throw InputError(flag + " " + in_quotes(destination) + ": exists and is not a folder");
    fs::path parent = path.parent_path();
    while (!parent.empty() && !fs::exists(parent, ec) && parent != parent.root_path())
        parent = parent.parent_path();
    if (!parent.empty() && fs::exists(parent, ec) && !fs::is_directory(parent, ec))
        throw InputError(flag + " " + in_quotes(destination) + ": " + in_quotes(parent) +
                         " is a file, expected a folder");
    if (!parent.empty() && ::access(parent.c_str(), W_OK | X_OK) != 0)
        throw InputError(flag + " " + in_quotes(destination) + ": " + in_quotes(parent) +
                         " is not writable");
}

OutputFolder::OutputFolder(const std::string& destination, const std::string& flag)
    : destination_(destination), flag_(flag) {
    check_output_folder(destination, flag);
    const fs::path path = fs::absolute(fs::path(destination)).lexically_normal();
    const fs::path parent = path.parent_path();
    std::error_code ec;
    fs::create_directories(parent, ec);
    if (ec)
        throw InputError(flag + " " + in_quotes(destination) + ": cannot create " +
                         in_quotes(parent) + ": " + ec.message());
    const fs::path staging =
        parent / ("." + path.filename().string() + ".staging-" + std::to_string(::getpid()));
    fs::remove_all(staging, ec);
    fs::create_directory(staging, ec);
    if (ec)
        throw InputError(flag + " " + in_quotes(destination) + ": cannot create " +
                         in_quotes(staging) + ": " + ec.message());
    staging_ = staging.string();
}

OutputFolder::~OutputFolder() {
    if (committed_) return;
    std::error_code ec;
    fs::remove_all(staging_, ec);
}

void OutputFolder::write(const std::string& name, const std::string& content) {
    const fs::path target = fs::path(staging_) / name;
    std::error_code ec;
    fs::create_directories(target.parent_path(), ec);
    try {
        if (ec) throw InputError(ec.message());
        write_file_atomic(target.string(), content);
    } catch (const InputError& e) {
        std::string why = e.what();
        const std::size_t cut = why.rfind("': ");
        if (cut != std::string::npos) why = why.substr(cut + 3);
        throw InputError(flag_ + ": cannot write " + in_quotes(fs::path(destination_) / name) +
                         ": " + why + "; nothing was written");
    }
}

void OutputFolder::commit() {
    move_into(staging_, fs::absolute(fs::path(destination_)).lexically_normal(), flag_);
    std::error_code ec;
    fs::remove_all(staging_, ec);
    committed_ = true;
}

}  // namespace attngeo
