// Checks shared by the report tests: every file a report links exists and is non-empty, a
// headless-Chromium render of index.html is not blank (a minimal PNG reader, zlib only), a
// figure's .dat rows read back, and the helpers that doctor a run folder's files and read a
// report's HTML back.
#pragma once
#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "reports/csv_table.hpp"
#include "reports/report.hpp"
#include "tests/support/test_files.hpp"

namespace attngeo::test_support {

// The data rows of a figure .dat file (comment and blank lines skipped), split on spaces.
inline std::vector<std::vector<std::string>> dat_text_rows(const std::filesystem::path& path) {
    std::vector<std::vector<std::string>> rows;
    std::istringstream in(slurp(path));
    std::string line;
    while (std::getline(in, line)) {
        if (line.empty() || line[0] == '#') continue;
        std::istringstream fields(line);
        std::vector<std::string> row;
        std::string field;
        while (fields >> field)
            row.push_back(field);
        rows.push_back(row);
    }
    return rows;
}

// The same rows as numbers ("nan" reads as NaN).
inline std::vector<std::vector<double>> dat_rows(const std::filesystem::path& path) {
    std::vector<std::vector<double>> rows;
    for (const auto& fields : dat_text_rows(path)) {
        std::vector<double> row;
        for (const auto& field : fields)
            row.push_back(std::stod(field));
        rows.push_back(row);
    }
    return rows;
}

// Every href/src in `html` that is not an anchor or URL must name an existing, non-empty file
// under `out`. Returns how many were checked.
inline int check_references(const std::filesystem::path& out, const std::string& html) {
    const std::regex reference(R"((?:href|src)=\"([^\"#][^\"]*)\")");
    int checked = 0;
    for (auto it = std::sregex_iterator(html.begin(), html.end(), reference);
         it != std::sregex_iterator(); ++it) {
        const std::string target = (*it)[1];
        if (target.rfind("http", 0) == 0) continue;
        const std::filesystem::path file = out / target;
        EXPECT_TRUE(std::filesystem::exists(file)) << target;
        if (std::filesystem::exists(file)) {
            EXPECT_GT(std::filesystem::file_size(file), 0u) << target;
        }
        ++checked;
    }
    return checked;
}

// Minimal PNG reader (8-bit RGB/RGBA, non-interlaced, as Chromium writes): returns the share
// of pixels that are not near-white and the number of distinct colours seen.
struct PngSummary {
    double ink = 0;
    std::size_t colours = 0;
};
inline PngSummary summarise_png(const std::string& bytes) {
    EXPECT_EQ(bytes.substr(1, 3), "PNG");
    std::size_t pos = 8;
    std::uint32_t width = 0, height = 0;
    int channels = 0;
    std::string idat;
    auto be32 = [&](std::size_t at) {
        return (std::uint32_t(std::uint8_t(bytes[at])) << 24) |
               (std::uint32_t(std::uint8_t(bytes[at + 1])) << 16) |
               (std::uint32_t(std::uint8_t(bytes[at + 2])) << 8) |
               std::uint32_t(std::uint8_t(bytes[at + 3]));
    };
    while (pos + 8 <= bytes.size()) {
        const std::uint32_t length = be32(pos);
        const std::string type = bytes.substr(pos + 4, 4);
        if (type == "IHDR") {
            width = be32(pos + 8);
            height = be32(pos + 12);
            EXPECT_EQ(bytes[pos + 16], 8) << "bit depth";
            const int colour_type = bytes[pos + 17];
            channels = colour_type == 6 ? 4 : colour_type == 2 ? 3 : 0;
            EXPECT_NE(channels, 0) << "colour type " << colour_type;
            EXPECT_EQ(bytes[pos + 20], 0) << "interlaced";
        } else if (type == "IDAT") {
            idat += bytes.substr(pos + 8, length);
        }
        pos += 12 + length;
    }
    const std::size_t stride = std::size_t(width) * channels;
    std::vector<unsigned char> raw((stride + 1) * height);
    uLongf size = raw.size();
    EXPECT_EQ(
        uncompress(raw.data(), &size, reinterpret_cast<const Bytef*>(idat.data()), idat.size()),
        Z_OK);
    std::vector<unsigned char> image(stride * height), previous(stride, 0);
    for (std::uint32_t y = 0; y < height; ++y) {
        const unsigned char filter = raw[y * (stride + 1)];
        const unsigned char* in = &raw[y * (stride + 1) + 1];
        unsigned char* row = &image[y * stride];
        for (std::size_t x = 0; x < stride; ++x) {
            const int a = x >= std::size_t(channels) ? row[x - channels] : 0, b = previous[x],
                      c = x >= std::size_t(channels) ? previous[x - channels] : 0;
            int predictor = 0;
            if (filter == 1) predictor = a;
            if (filter == 2) predictor = b;
            if (filter == 3) predictor = (a + b) / 2;
            if (filter == 4) {
                const int p = a + b - c, pa = std::abs(p - a), pb = std::abs(p - b),
                          pc = std::abs(p - c);
                predictor = pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
            }
            row[x] = static_cast<unsigned char>(in[x] + predictor);
        }
        std::copy(row, row + stride, previous.begin());
    }
    PngSummary s;
    std::set<std::uint32_t> colours;
    std::size_t ink = 0;
    for (std::size_t p = 0; p < std::size_t(width) * height; ++p) {
        const unsigned char* px = &image[p * channels];
        if (px[0] < 235 || px[1] < 235 || px[2] < 235) ++ink;
        if (colours.size() < 100000) colours.insert((px[0] << 16) | (px[1] << 8) | px[2]);
    }
    s.ink = double(ink) / (double(width) * height);
    s.colours = colours.size();
    return s;
}

// Renders `index` (a report's index.html) with headless Chromium into out/shot.png and expects
// ink and colour: a report whose figures failed to inline would be nearly blank. Skips when
// Chromium is absent, except on CI (CI or ATTNGEO_REQUIRE_CHROMIUM set), where it fails.
inline void expect_screenshot_not_blank(const std::string& index,
                                        const std::filesystem::path& out) {
    const char* chromium = "/usr/bin/chromium";
    const bool required =
        std::getenv("CI") != nullptr || std::getenv("ATTNGEO_REQUIRE_CHROMIUM") != nullptr;
    if (::access(chromium, X_OK) != 0) {
        if (required) FAIL() << "chromium is required on CI (apt-get install chromium)";
        GTEST_SKIP() << "chromium not installed (apt-get install chromium)";
    }
    const std::filesystem::path shot = out / "shot.png", profile = out / "chromium-profile";
    const std::string command =
        std::string(chromium) +
        " --headless --no-sandbox --disable-gpu --disable-quic --no-first-run "
        "--disable-background-networking --disable-component-update --disable-sync "
        "--hide-scrollbars --user-data-dir=" +
        profile.string() + " --window-size=1200,2400 --screenshot=" + shot.string() + " file://" +
        std::filesystem::absolute(index).string() + " > " + (out / "chromium.log").string() +
        " 2>&1";
    ASSERT_EQ(std::system(command.c_str()), 0) << slurp(out / "chromium.log");
    ASSERT_TRUE(std::filesystem::exists(shot)) << slurp(out / "chromium.log");
    const PngSummary s = summarise_png(slurp(shot));
    std::cout << "screenshot: " << s.ink * 100 << "% non-white pixels, " << s.colours
              << " colours\n";
    EXPECT_GT(s.ink, 0.02);
    EXPECT_GT(s.colours, 50u);
}

// ---- Doctoring run folders and writing their reports.

// A copy of `from` at `to` (replaced), so a test can doctor its files.
inline std::filesystem::path copy_folder(const std::filesystem::path& from,
                                         const std::filesystem::path& to) {
    std::filesystem::remove_all(to);
    std::filesystem::copy(from, to, std::filesystem::copy_options::recursive);
    return to;
}

// Rewrites a CSV in place: `edit(table, row)` may change the fields of each row.
inline void edit_csv(
    const std::filesystem::path& path,
    const std::function<void(const reports::CsvTable&, std::vector<std::string>&)>& edit) {
    reports::CsvTable table = reports::read_csv_table(path.string());
    std::ostringstream out;
    for (std::size_t c = 0; c < table.header.size(); ++c)
        out << (c ? "," : "") << table.header[c];
    out << '\n';
    for (auto& row : table.rows) {
        edit(table, row);
        for (std::size_t c = 0; c < row.size(); ++c)
            out << (c ? "," : "") << row[c];
        out << '\n';
    }
    std::ofstream(path) << out.str();
}

// The report of `runs` written to `out` (replaced): its index.html's text.
inline std::string report_text(const std::vector<std::filesystem::path>& runs,
                               const std::filesystem::path& out) {
    std::filesystem::remove_all(out);
    std::vector<std::string> dirs;
    for (const auto& r : runs)
        dirs.push_back(r.string());
    return slurp(reports::write_report(dirs, out.string()));
}

// A rounded table cell against the file's full-precision value: the relative difference.
inline double relative_difference(const std::string& cell, double want) {
    const double shown = std::stod(cell);
    if (want == 0) return std::abs(shown);
    return std::abs(shown - want) / std::abs(want);
}

// "%.{significant}g" of x, as the verdict's sentences print numbers.
inline std::string significant(double x, int digits) {
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%.*g", digits, x);
    return buffer;
}

// verdict.csv's N list ("[2-5;9]") as the report prints it ("2–5 and 9"), spelt here on its own.
inline std::string sizes_as_printed(std::string sizes) {
    if (sizes.size() >= 2 && sizes.front() == '[' && sizes.back() == ']')
        sizes = sizes.substr(1, sizes.size() - 2);
    std::vector<std::string> items;
    std::stringstream list(sizes);
    for (std::string item; std::getline(list, item, ';');) {
        const std::size_t dash = item.find('-');
        if (dash != std::string::npos) item = item.substr(0, dash) + "–" + item.substr(dash + 1);
        items.push_back(item);
    }
    std::string out;
    for (std::size_t i = 0; i < items.size(); ++i)
        out += (i == 0 ? "" : i + 1 == items.size() ? " and " : ", ") + items[i];
    return out;
}

// ---- Reading a report's HTML back, for the verdict tests.

// The part of the report about run `run` (from its <h2 id="runK"> to the next <h2>).
inline std::string run_html(const std::string& html, int run) {
    const std::size_t at = html.find("<h2 id=\"run" + std::to_string(run) + "\"");
    if (at == std::string::npos) return "";
    const std::size_t end = html.find("<h2", at + 1);
    return html.substr(at, end == std::string::npos ? std::string::npos : end - at);
}

// The titles of the <h3> sections of run `run`, in order.
inline std::vector<std::string> section_titles(const std::string& html, int run) {
    std::vector<std::string> titles;
    const std::string part = run_html(html, run);
    const std::regex heading(R"(<h3 id="[^"]*">([^<]*)</h3>)");
    for (auto it = std::sregex_iterator(part.begin(), part.end(), heading);
         it != std::sregex_iterator(); ++it)
        titles.push_back((*it)[1]);
    return titles;
}

// The HTML of run `run`'s section whose title starts with `title`, up to the next <h3>.
inline std::string section_html(const std::string& html, int run, const std::string& title) {
    const std::string part = run_html(html, run);
    const std::regex heading(R"(<h3 id="[^"]*">)");
    for (auto it = std::sregex_iterator(part.begin(), part.end(), heading);
         it != std::sregex_iterator(); ++it) {
        const std::size_t start = it->position() + it->length();
        if (part.compare(start, title.size(), title) != 0) continue;
        const std::size_t end = part.find("<h3", start);
        return part.substr(start, end == std::string::npos ? std::string::npos : end - start);
    }
    return "";
}

// `text` with the entities html_escape writes read back (&lt; &gt; &quot; &amp;).
inline std::string unescape_html(std::string text) {
    const std::pair<const char*, const char*> entities[4] = {
        {"&lt;", "<"}, {"&gt;", ">"}, {"&quot;", "\""}, {"&amp;", "&"}};
    for (const auto& [entity, character] : entities)
        for (std::size_t at; (at = text.find(entity)) != std::string::npos;)
            text.replace(at, std::string(entity).size(), character);
    return text;
}

// The body rows of the first <table> in `html`, each cell with its tags stripped and its
// entities read back.
inline std::vector<std::vector<std::string>> first_table_rows(const std::string& html) {
    std::vector<std::vector<std::string>> rows;
    const std::size_t start = html.find("<tbody>"), end = html.find("</tbody>");
    if (start == std::string::npos || end == std::string::npos) return rows;
    const std::string body = html.substr(start, end - start);
    const std::regex row(R"(<tr>(.*?)</tr>)"), cell(R"(<td>(.*?)</td>)"), tag(R"(<[^>]*>)");
    for (auto r = std::sregex_iterator(body.begin(), body.end(), row); r != std::sregex_iterator();
         ++r) {
        const std::string inner = (*r)[1];
        std::vector<std::string> cells;
        for (auto c = std::sregex_iterator(inner.begin(), inner.end(), cell);
             c != std::sregex_iterator(); ++c)
            cells.push_back(unescape_html(std::regex_replace(std::string((*c)[1]), tag, "")));
        rows.push_back(cells);
    }
    return rows;
}

// The paragraph of the verdict about `variant` ("<p><b><code>variant</code></b>: …</p>").
// What the verdict says of one variant: its own paragraph, then the sentences every variant
// shares ("Every variant" paragraph) with "every variant" read as that variant's name.
inline std::string variant_paragraph(const std::string& html, const std::string& variant) {
    const std::string opening = "<p><b><code>" + variant + "</code></b>";
    const std::size_t start = html.find(opening);
    std::string out = start == std::string::npos
                          ? std::string()
                          : html.substr(start, html.find("</p>", start) - start);
    const std::string common_opening = "<p><b>Every variant</b>";
    const std::size_t common = html.find(common_opening);
    if (common == std::string::npos) return out;
    std::string shared = html.substr(common, html.find("</p>", common) - common);
    const std::string every = "every variant", named = "<code>" + variant + "</code>";
    for (std::size_t at; (at = shared.find(every)) != std::string::npos;)
        shared.replace(at, every.size(), named);
    return out + (out.empty() ? opening + ": " : " ") + shared.substr(common_opening.size());
}

// The bottom line of the first verdict in `html` (its <div class="bottom-line">).
inline std::string bottom_line(const std::string& html) {
    const std::size_t start = html.find("<div class=\"bottom-line\">");
    if (start == std::string::npos) return "";
    return html.substr(start, html.find("</div>", start) - start);
}

// The items of the bottom line's sentence that opens with `opening` ("Falsified for every κ:"),
// split at "; ", up to the sentence's end (". ").
inline std::vector<std::string> sentence_items(const std::string& line,
                                               const std::string& opening) {
    std::vector<std::string> items;
    const std::size_t at = line.find(opening);
    if (at == std::string::npos) return items;
    const std::size_t from = at + opening.size();
    std::string sentence = line.substr(from, line.find(". ", from) - from);
    for (std::size_t cut; (cut = sentence.find("; ")) != std::string::npos;) {
        items.push_back(sentence.substr(0, cut));
        sentence = sentence.substr(cut + 2);
    }
    items.push_back(sentence);
    for (auto& item : items)
        while (!item.empty() && item.front() == ' ')
            item.erase(0, 1);
    return items;
}

}  // namespace attngeo::test_support
