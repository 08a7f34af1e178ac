// Temp-file-and-rename writes; see atomic_file.hpp.
#include "common/atomic_file.hpp"

#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "common/errors.hpp"

namespace attngeo {

void write_file_atomic(const std::string& path, const std::string& content) {
    const std::string temp = path + ".tmp." + std::to_string(::getpid());
    {
        std::ofstream out(temp, std::ios::binary | std::ios::trunc);
        if (!out) throw InputError("cannot write '" + path + "': cannot create " + temp);
        out.write(content.data(), static_cast<std::streamsize>(content.size()));
        out.flush();
        if (!out) {
            std::remove(temp.c_str());
            throw InputError("cannot write '" + path + "': write failed (disk full?)");
        }
    }
    if (std::rename(temp.c_str(), path.c_str()) != 0) {
        std::remove(temp.c_str());
        throw InputError("cannot write '" + path + "': rename from temporary file failed");
    }
}

}  // namespace attngeo
