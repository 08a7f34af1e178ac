// Binary formats read by reinterpreting their bytes (llama2.c checkpoints and tokenizer.bin,
// GGUF): whether this host is little-endian like the files, and the size of a regular file
// checked before it is read.
#pragma once
#include <cstdint>
#include <string>

namespace attngeo {

bool host_is_little_endian();

// std::runtime_error "<reader>: big-endian hosts are not supported" on a big-endian host.
void require_little_endian_host(const std::string& reader);

// The size in bytes of the regular file `path`; an InputError naming the file and `what` (e.g.
// "llama2.c tokenizer") when it is missing, not a regular file or unreadable.
std::uint64_t regular_file_size(const std::string& path, const char* what);

}  // namespace attngeo
