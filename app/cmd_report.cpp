// `attngeo report`: run folders to OUT/index.html with figures (docs/design.md §8); the work is in
// reports/report.hpp.
#include <iostream>

#include "app/commands.hpp"
#include "reports/report.hpp"

namespace attngeo::cli {

Runner register_report(CLI::App& app) {
    struct ReportOptions {
        std::vector<std::string> in;
        std::string out;
        std::vector<std::string> labels;
    };
    auto o = std::make_shared<ReportOptions>();
    app.add_option("--in", o->in,
                   "Run folders (simulate, sweep, extract, compare, compare-set, truncate, "
                   "normalization), each with its manifest.json of this format_version")
        ->required();
    app.add_option("--out", o->out,
                   "Report folder: index.html, figures/*.svg|png with gnuplot scripts and data")
        ->required();
    app.add_option("--label", o->labels,
                   "A name per --in folder, in order, for the cross-model figures (default: the "
                   "model's name from each manifest)");
    app.footer(
        "The report is self-contained (figures inlined as SVG) and opens offline from file://. "
        "Several extract or compare folders (or several simulate folders, or several truncate "
        "folders) are also drawn together, one colour per model (figures models_*).");
    return [o] { std::cout << reports::write_report(o->in, o->out, o->labels) << "\n"; };
}

}  // namespace attngeo::cli
