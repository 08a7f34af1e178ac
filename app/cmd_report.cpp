// `attngeo report`: run folders to OUT/index.html with figures (SPEC §8); the work is in
// reports/report.hpp.
#include <iostream>

#include "app/commands.hpp"
#include "reports/report.hpp"

namespace attngeo::cli {

Runner register_report(CLI::App& app) {
    struct ReportOptions {
        std::vector<std::string> in;
        std::string out;
    };
    auto o = std::make_shared<ReportOptions>();
    app.add_option("--in", o->in,
                   "Run folders (simulate, sweep, extract, compare), each with its manifest.json")
        ->required();
    app.add_option("--out", o->out,
                   "Report folder: index.html, figures/*.svg|png with gnuplot scripts and data")
        ->required();
    app.footer(
        "The report is self-contained (figures inlined as SVG) and opens offline from file://.");
    return [o] { std::cout << reports::write_report(o->in, o->out) << "\n"; };
}

}  // namespace attngeo::cli
