// A figure is data plus a gnuplot script; rendering writes both beside the SVG and PNG so a
// user can restyle it. Adding a figure kind means writing one function that returns a Figure.
#pragma once
#include <string>
#include <utility>
#include <vector>

namespace attngeo::reports {

struct Figure {
    std::string id;  // file stem under figures/, e.g. "run0_precision"
    std::string title;
    std::string caption;  // HTML
    // Data files written beside the script: (file name, content). The script refers to them
    // by file name; it is run from the figures/ folder.
    std::vector<std::pair<std::string, std::string>> data;
    // The plot commands, without terminal/output lines (render() adds SVG and PNG).
    std::string script;
};

// How rendering went, for the report to say so.
struct RenderStatus {
    bool available = true;  // gnuplot found
    std::string message;    // why figures are missing, if they are
};

// Finds gnuplot: $ATTNGEO_GNUPLOT if set (tests point it at a missing file), else `gnuplot`
// on PATH. Returns an empty string when there is none.
std::string find_gnuplot();

// Writes figures/<id>.gp, its data files, and runs gnuplot twice for <id>.svg and <id>.png.
// Returns false (and fills `error`) when gnuplot fails on this figure.
bool render_figure(const Figure& figure, const std::string& figures_dir, const std::string& gnuplot,
                   std::string& error);

}  // namespace attngeo::reports
