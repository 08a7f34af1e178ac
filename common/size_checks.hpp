// The one place where a size read from a file header or a flag is checked before anything is
// allocated or read from it (docs/design.md §10): against the bytes the file really has, and
// against a memory budget, so a hostile or corrupt size is a named one-line error, never
// std::bad_alloc.
#pragma once
#include <cstdint>
#include <string>

namespace attngeo {

// Bytes attngeo may allocate at once: the smallest of physical memory (sysconf), the
// address-space limit (RLIMIT_AS, e.g. `ulimit -v`) and ATTNGEO_MEMORY_BUDGET (bytes) when set.
std::uint64_t memory_budget_bytes();

// `count` × `element_bytes` without overflow; UINT64_MAX when the product overflows.
std::uint64_t checked_bytes(std::uint64_t count, std::uint64_t element_bytes);

// Throws InputError("<what>: needs N bytes, more than the memory budget of M bytes …") when
// count × element_bytes exceeds the budget. `what` names the file or flag and the quantity,
// e.g. "--replicates 2147483647" or "'model.gguf': tensor 'x'".
void check_allocation(std::uint64_t count, std::uint64_t element_bytes, const std::string& what);

// Throws InputError("<what>: … extends to byte E, past the end of the file (S bytes)") when
// [offset, offset + length) does not lie inside a file of `file_size` bytes.
void check_within_file(std::uint64_t offset, std::uint64_t length, std::uint64_t file_size,
                       const std::string& what);

}  // namespace attngeo
