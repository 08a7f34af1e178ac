// Atomic output: a file either appears complete or not at all (docs/design.md §10), so an
// interrupted run never leaves a half-written CSV that a later step would read as data.
#pragma once
#include <string>

namespace attngeo {

// Writes `content` to `path` through a temporary file in the same folder and a rename.
// Throws InputError naming the path when the folder cannot be written.
void write_file_atomic(const std::string& path, const std::string& content);

}  // namespace attngeo
