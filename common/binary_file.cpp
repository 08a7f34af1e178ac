// Byte order and file size checks of the binary readers; see binary_file.hpp.
#include "common/binary_file.hpp"

#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "common/errors.hpp"

namespace attngeo {

bool host_is_little_endian() {
    const std::uint32_t one = 1;
    unsigned char first;
    std::memcpy(&first, &one, 1);
    return first == 1;
}

void require_little_endian_host(const std::string& reader) {
    if (!host_is_little_endian())
        throw std::runtime_error(reader + ": big-endian hosts are not supported");
}

std::uint64_t regular_file_size(const std::string& path, const char* what) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec))
        throw InputError(path + ": cannot open " + what + " (not a readable regular file)");
    const auto size = std::filesystem::file_size(path, ec);
    if (ec) throw InputError(path + ": cannot open " + what + " (" + ec.message() + ")");
    return size;
}

}  // namespace attngeo
