// Size checks against files and the memory budget; see size_checks.hpp.
#include "common/size_checks.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <limits>

#include "common/errors.hpp"

namespace attngeo {
namespace {

constexpr std::uint64_t kUnlimited = std::numeric_limits<std::uint64_t>::max();

std::uint64_t physical_memory() {
    const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGE_SIZE);
    if (pages <= 0 || page <= 0) return kUnlimited;
    return checked_bytes(static_cast<std::uint64_t>(pages), static_cast<std::uint64_t>(page));
}

std::uint64_t address_space_limit() {
    struct rlimit limit {};
    if (::getrlimit(RLIMIT_AS, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return kUnlimited;
    return static_cast<std::uint64_t>(limit.rlim_cur);
}

// ATTNGEO_MEMORY_BUDGET when it is a whole number of bytes; a malformed value is ignored
// rather than failing every command (the variable is for tests and shared machines).
std::uint64_t configured_budget() {
    const char* text = std::getenv("ATTNGEO_MEMORY_BUDGET");
    if (text == nullptr || *text == '\0') return kUnlimited;
    char* end = nullptr;
    const unsigned long long value = std::strtoull(text, &end, 10);
    return *end == '\0' && value > 0 ? value : kUnlimited;
}

}  // namespace

std::uint64_t memory_budget_bytes() {
    return std::min({physical_memory(), address_space_limit(), configured_budget()});
}

std::uint64_t checked_bytes(std::uint64_t count, std::uint64_t element_bytes) {
    if (element_bytes != 0 && count > kUnlimited / element_bytes) return kUnlimited;
    return count * element_bytes;
}

void check_allocation(std::uint64_t count, std::uint64_t element_bytes, const std::string& what) {
    const std::uint64_t bytes = checked_bytes(count, element_bytes), budget = memory_budget_bytes();
    if (bytes <= budget) return;
    throw InputError(what + ": needs " +
                     (bytes == kUnlimited ? std::string("more than 2^64") : std::to_string(bytes)) +
                     " bytes, more than the memory budget of " + std::to_string(budget) +
                     " bytes (physical memory, ulimit -v or ATTNGEO_MEMORY_BUDGET)");
}

void check_within_file(std::uint64_t offset, std::uint64_t length, std::uint64_t file_size,
                       const std::string& what) {
    if (offset <= file_size && length <= file_size - offset) return;
    const std::uint64_t end = offset > kUnlimited - length ? kUnlimited : offset + length;
    throw InputError(what + ": extends to byte " +
                     (end == kUnlimited ? std::string("2^64") : std::to_string(end)) +
                     ", past the end of the file (" + std::to_string(file_size) + " bytes)");
}

}  // namespace attngeo
