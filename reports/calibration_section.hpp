// The calibration of the verdict in a simulate report (`simulate --calibrate R`, docs/design.md
// §7): the false-alarm rate of each side on planted true bounds and the detection rate of each
// planted shift δ, with their Clopper–Pearson intervals, as calibration.csv and the manifest's
// "calibration" block say.
#pragma once
#include <optional>
#include <string>

#include "reports/sections.hpp"

namespace attngeo::reports {

struct CalibrationView {
    std::string sentence;  // HTML: one sentence for the verdict's bottom line
    Section section;       // the table, shown right after the verdict
};

// The calibration of the simulate folder `run`; nullopt when it has no calibration.csv. A
// damaged calibration.csv (a missing column, an unknown side, a bad number) or a manifest
// without its "calibration" block is an InputError naming the file.
std::optional<CalibrationView> calibration_of(const RunFolder& run);

}  // namespace attngeo::reports
