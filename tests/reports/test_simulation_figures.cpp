// Tests for the simulation report's figures: in the demo report (`attngeo simulate`
// defaults, then `attngeo report`) every legend entry has a visible mark in the SVG, labels stay
// inside the frame, captions count in words; a sweep's sweep.csv is long and its panels cover
// every grid point of the two swept parameters at one joint κ.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <iostream>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "common/csv.hpp"
#include "tests/support/test_files.hpp"

namespace fs = std::filesystem;

namespace {

using attngeo::test_support::slurp;

fs::path scratch() {
    return attngeo::test_support::scratch_folder("simulation_figures");
}

int run_attngeo(const std::string& args) {
    return std::system((std::string(ATTNGEO_EXE) + " " + args + " > /dev/null 2>&1").c_str());
}

// The demo: the default simulation and its report, built once for the tests below.
fs::path demo_report() {
    const fs::path dir = scratch() / "demo";
    if (!fs::exists(dir / "index.html")) {
        fs::remove_all(dir);
        EXPECT_EQ(run_attngeo("simulate --quiet --out " + dir.string()), 0);
        EXPECT_EQ(run_attngeo("report --in " + dir.string() + " --out " + dir.string()), 0);
    }
    return dir;
}

// One titled plot of a gnuplot SVG (<g id="gnuplot_plot_K"><title>…</title>…</g>): what it
// draws beyond its key sample (the first subpath, or the first point, of the group).
struct DrawnSeries {
    std::string title;
    std::string data_path;     // the line's subpaths after the key sample, as the SVG has them
    std::string dash;          // stroke-dasharray, "" when solid
    double width = 0;          // stroke-width of the line
    int extra_points = 0;      // point marks (<use>) after the key sample
    int extra_fills = 0;       // filled polygons (bands) after the key sample
    bool transparent = false;  // an opacity of 0 somewhere in the group
};

// Plain find-based scanning: std::regex recurses once per character of a long d='…' path and
// overflows the stack under AddressSanitizer.
std::size_t count_of(const std::string& text, const std::string& needle) {
    std::size_t count = 0;
    for (std::size_t at = text.find(needle); at != std::string::npos;
         at = text.find(needle, at + needle.size()))
        ++count;
    return count;
}

// The text between `open` (found at or after `from`) and the next `close`; "" when absent.
std::string between(const std::string& text, const std::string& open, char close,
                    std::size_t from = 0, std::size_t before = std::string::npos) {
    const std::size_t at = text.find(open, from);
    if (at == std::string::npos || at >= before) return "";
    const std::size_t begin = at + open.size(), stop = text.find(close, begin);
    return stop == std::string::npos ? "" : text.substr(begin, stop - begin);
}

// The group's line: its subpaths concatenated, the dash of the last path that has one, and
// the last stroke-width set before a path.
void scan_paths(const std::string& body, DrawnSeries& s, std::string& subpaths) {
    for (std::size_t at = body.find("<path"); at != std::string::npos;
         at = body.find("<path", at + 5)) {
        const std::size_t data_at = body.find("d='", at);
        if (data_at == std::string::npos) break;
        subpaths += between(body, "d='", '\'', data_at);
        const std::string dash = between(body, "stroke-dasharray='", '\'', at, data_at);
        if (!dash.empty()) s.dash = dash;
        const std::size_t width_at = body.rfind("stroke-width=\"", at);
        if (width_at != std::string::npos)
            s.width = std::stod(between(body, "stroke-width=\"", '"', width_at));
    }
}

std::vector<DrawnSeries> drawn_series(const std::string& svg) {
    std::vector<DrawnSeries> out;
    const std::regex zero_opacity(R"re((?:stroke|fill)-opacity\s*=\s*['"]0(?:\.0*)?['"])re");
    const std::string group = "<g id=\"gnuplot_plot_";
    std::vector<std::pair<std::size_t, std::string>> starts;
    for (std::size_t at = svg.find(group); at != std::string::npos;
         at = svg.find(group, at + group.size())) {
        // Only titled plots (<g id="gnuplot_plot_K" ><title>…): an untitled group belongs to
        // the titled one before it.
        const std::size_t tag_end = svg.find("\" >", at);
        if (tag_end != std::string::npos && svg.compare(tag_end + 3, 7, "<title>") == 0)
            starts.push_back({at, between(svg, "<title>", '<', tag_end)});
    }
    for (std::size_t g = 0; g < starts.size(); ++g) {
        const std::size_t end = g + 1 < starts.size() ? starts[g + 1].first : svg.size();
        const std::string body = svg.substr(starts[g].first, end - starts[g].first);
        DrawnSeries s;
        s.title = starts[g].second;
        std::string subpaths;
        scan_paths(body, s, subpaths);
        const std::size_t second = subpaths.find('M', 1);  // the key sample is the first
        s.data_path = second == std::string::npos ? "" : subpaths.substr(second);
        const std::size_t uses = count_of(body, "<use ");
        s.extra_points = uses > 0 ? static_cast<int>(uses) - 1 : 0;
        const std::size_t polygons = count_of(body, "<polygon ");
        s.extra_fills = polygons > 0 ? static_cast<int>(polygons) - 1 : 0;
        s.transparent = std::regex_search(body, zero_opacity);
        out.push_back(s);
    }
    return out;
}

// Why a legend entry shows nothing ("" when it is visible): no mark beyond its key sample, no
// width or opacity, or a later series with the same points and dash at least as wide on top.
std::string hidden_reason(const std::vector<DrawnSeries>& all, std::size_t i) {
    const DrawnSeries& s = all[i];
    if (s.transparent) return "zero opacity";
    if (s.data_path.find('L') == std::string::npos && s.extra_points == 0 && s.extra_fills == 0)
        return "nothing drawn";
    if (!s.data_path.empty() && !(s.width > 0)) return "zero width";
    for (std::size_t j = i + 1; j < all.size() && !s.data_path.empty(); ++j)
        if (all[j].data_path == s.data_path && all[j].dash == s.dash && all[j].width >= s.width)
            return "covered by '" + all[j].title + "'";
    return "";
}

TEST(SimulationFigures, EveryLegendEntryOfTheDemoIsVisible) {
    const fs::path dir = demo_report();
    int checked = 0, hidden = 0;
    for (const char* metric : {"P", "R", "Fmax", "Fmin"}) {
        const std::string svg = slurp(dir / "figures" / ("run0_" + std::string(metric) + ".svg"));
        ASSERT_FALSE(svg.empty()) << metric;
        const auto series = drawn_series(svg);
        EXPECT_GE(series.size(), 9u) << metric;  // the mean and 2 × 4 envelopes at least
        for (std::size_t i = 0; i < series.size(); ++i) {
            const std::string why = hidden_reason(series, i);
            EXPECT_EQ(why, "") << metric << ": legend entry '" << series[i].title << "'";
            hidden += !why.empty();
            ++checked;
        }
        // F has no interval column: its legend must not promise one.
        if (metric[0] == 'F') {
            EXPECT_EQ(svg.find("95% interval"), std::string::npos) << metric;
        }
    }
    RecordProperty("legend_entries_checked", checked);
    std::cout << checked << " legend entries checked, " << hidden << " hidden\n";
}

// The checker itself: identical points with the same dash at the same width hide the first;
// a wider first line under a narrower one, or a different dash, stays visible.
TEST(SimulationFigures, HiddenSeriesAreDetected) {
    DrawnSeries a{"a", "M1,1 L2,2", "", 2.0, 0, 0, false}, b = a;
    b.title = "b";
    EXPECT_NE(hidden_reason({a, b}, 0), "");
    EXPECT_EQ(hidden_reason({a, b}, 1), "");
    b.width = 1.0;
    EXPECT_EQ(hidden_reason({a, b}, 0), "");
    b.width = 2.0;
    b.dash = "3,4";
    EXPECT_EQ(hidden_reason({a, b}, 0), "");
    DrawnSeries nothing{"n", "", "", 1.0, 0, 0, false};
    EXPECT_EQ(hidden_reason({nothing}, 0), "nothing drawn");
    DrawnSeries clear = a;
    clear.transparent = true;
    EXPECT_EQ(hidden_reason({clear}, 0), "zero opacity");
}

// The m labels sit inside the plot frame (the SVG's axis border) and captions count in words.
TEST(SimulationFigures, LabelsInsideTheFrameAndCountsInWords) {
    const fs::path dir = demo_report();
    const std::string svg = slurp(dir / "figures" / "run0_P.svg");
    const std::regex border(
        R"re(d='M([0-9.]+),([0-9.]+) L\1,([0-9.]+) L([0-9.]+),\3 L\4,\2 L\1,\2 Z)re");
    std::smatch frame;
    ASSERT_TRUE(std::regex_search(svg, frame, border));
    const double top = std::stod(frame[2]), bottom = std::stod(frame[3]);
    const std::regex label(
        R"re(<g transform="translate\(([0-9.]+),([0-9.]+)\)"[^>]*>\s*<text>((?:(?!</text>).)*m</tspan>(?:(?!</text>).)*)</text>)re");
    int labels = 0;
    for (auto it = std::sregex_iterator(svg.begin(), svg.end(), label);
         it != std::sregex_iterator(); ++it) {
        const double y = std::stod((*it)[2]);
        EXPECT_GT(y, top) << (*it)[3];
        EXPECT_LT(y, bottom) << (*it)[3];
        ++labels;
    }
    EXPECT_EQ(labels, 3) << "m_1, m_2, m_3";
    const std::string html = slurp(dir / "index.html");
    const std::regex counted(R"re(at (\d+) of (\d+) values? of N)re");
    std::smatch m;
    // The demo's P estimate leaves the paper envelope at a few N (red circles in the figure).
    ASSERT_TRUE(std::regex_search(html, m, counted));
    EXPECT_GT(std::stoi(m[1]), 0);
    EXPECT_LE(std::stoi(m[1]), std::stoi(m[2]));
    std::cout << "caption count: " << m[0] << "\n";
    EXPECT_EQ(html.find(" N (red circles)re"), std::string::npos);
    EXPECT_EQ(std::regex_search(html, std::regex(R"re(at \d+ N\b)re")), false);
}

}  // namespace
