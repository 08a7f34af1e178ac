// The values of list-, grid- and number-valued flags, parsed one way for every command:
// selection-size lists (`--N all|pow2|1,2,4|1:64`), lists of positive numbers (`--tau`),
// positive grids (`--temperatures 0.1:10:9`) and whole numbers.
#pragma once
#include <string>
#include <vector>

namespace attngeo {

// Expands `spec` into sorted, unique selection sizes within 1..n:
//   "all"  -> 1..n;  "pow2" -> 1,2,4,... up to n, plus n itself;
//   "a,b,c" and ranges "a:b" (inclusive), which may be mixed: "1:8,16,32".
// Throws InputError naming `flag` when the text is malformed or a value is outside 1..n.
std::vector<int> parse_selection_sizes(const std::string& spec, int n, const std::string& flag);

// "a,b,c": positive finite numbers in the order given. InputError naming `flag`, the text and
// the item otherwise, or when the list is empty.
std::vector<double> parse_positive_list(const std::string& text, const std::string& flag);

// "lo:hi:count" (count >= 2 powers of ten with evenly spaced exponents, lo < hi) or a comma
// list of positive finite numbers (sorted, repeats dropped). InputError naming `flag` otherwise.
std::vector<double> parse_positive_grid(const std::string& text, const std::string& flag);

// A whole number >= 0 written with at most nine digits and nothing else, or -1.
long long whole_number_or_minus_one(const std::string& text);

}  // namespace attngeo
