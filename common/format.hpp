// Number formatting for every CSV and JSON the tool writes: full precision, round-trippable.
#pragma once
#include <string>

namespace attngeo {

// The shortest decimal that reads back to the same double (at most 17 significant digits,
// what %.17g would need), "inf"/"-inf"/"nan" for non-finite. Exact powers like 1e+20 print
// in the shorter of fixed and scientific form.
std::string format_double(double value);

}  // namespace attngeo
