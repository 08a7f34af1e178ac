// Number formatting for every CSV and JSON the tool writes: full precision, round-trippable.
#pragma once
#include <string>

namespace attngeo {

// %.17g: 17 significant digits (round-trips a double), "inf"/"-inf"/"nan" for non-finite.
std::string format_double(double value);

}  // namespace attngeo
