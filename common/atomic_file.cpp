// Temp-file-and-rename writes; see atomic_file.hpp.
#include "common/atomic_file.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "common/errors.hpp"

namespace attngeo {

void write_file_atomic(const std::string& path, const std::string& content) {
    const std::string temp = path + ".tmp." + std::to_string(::getpid());
    {
        std::ofstream out(temp, std::ios::binary | std::ios::trunc);
        if (!out)
            throw InputError("cannot write '" + path + "': " + std::strerror(errno) +
                             " (does its folder exist and is it writable?)");
        errno = 0;
        out.write(content.data(), static_cast<std::streamsize>(content.size()));
        out.flush();
        if (!out) {
            const int error = errno;  // EFBIG, ENOSPC, EIO, …
            std::remove(temp.c_str());
            throw InputError("cannot write '" + path +
                             "': " + (error ? std::string(std::strerror(error)) : "write failed") +
                             " (disk full or over a file-size limit?)");
        }
    }
    if (std::rename(temp.c_str(), path.c_str()) != 0) {
        std::remove(temp.c_str());
        throw InputError("cannot write '" + path + "': rename from temporary file failed");
    }
}

}  // namespace attngeo
