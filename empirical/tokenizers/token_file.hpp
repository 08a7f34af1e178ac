// Token-id files (`--tokens`) for capture, generate and extract: one sequence per line.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace attngeo::empirical {

// Token id sequences from a text file: one sequence per line, ids separated by spaces.
// With equal_lengths, every line must have the same length (a batch); with vocab_size > 0, every
// id must be below it. Throws InputError naming the file and line.
std::vector<std::vector<std::int64_t>> read_token_file(const std::string& path, bool equal_lengths,
                                                       std::int64_t vocab_size = 0);

}  // namespace attngeo::empirical
