// Parsing of selection-size lists (`--N all|pow2|1,2,4|1:64`), shared by every command.
#pragma once
#include <string>
#include <vector>

namespace attngeo {

// Expands `spec` into sorted, unique selection sizes within 1..n:
//   "all"  -> 1..n;  "pow2" -> 1,2,4,... up to n, plus n itself;
//   "a,b,c" and ranges "a:b" (inclusive), which may be mixed: "1:8,16,32".
// Throws InputError naming `flag` when the text is malformed or a value is outside 1..n.
std::vector<int> parse_selection_sizes(const std::string& spec, int n, const std::string& flag);

}  // namespace attngeo
