// Tests for reports/: a report from small simulate and sweep runs references only files that
// exist and are non-empty, its figure data are the run's numbers, it degrades to tables when
// gnuplot is missing, and a headless Chromium screenshot of it is not blank.
#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "common/errors.hpp"
#include "reports/csv_table.hpp"
#include "reports/report.hpp"
#include "simulate/run.hpp"
#include "tests/support/test_files.hpp"

namespace fs = std::filesystem;
using namespace attngeo;

namespace {

using attngeo::test_support::slurp;

fs::path scratch() {
    return attngeo::test_support::scratch_folder("reports");
}

// A small simulate run (and a sweep) written through the library, as the CLI does.
fs::path make_run(const std::string& name, const std::string& kind) {
    const fs::path dir = scratch() / name;
    if (fs::exists(dir / "manifest.json")) return dir;
    simulate::RunConfig config;
    config.kind = kind;
    config.model.assumption3.L = 127;
    config.model.assumption3.T1 = 12;
    config.model.assumption3.T2 = 100;
    config.d = 32;
    config.trials = 24;
    if (kind == "sweep") {
        config.sizes = "pow2";
        config.sweep = {{"beta", {0.02, 0.2}}, {"d", {16, 64}}};
    }
    simulate::RunTimings timings;
    const auto sums = simulate::run_grid(config, 2, false, timings);
    simulate::write_run(dir.string(), config, sums, 2, {{"command", "test"}}, timings);
    return dir;
}

// Every href/src that is not an anchor or URL must name an existing, non-empty file.
int check_references(const fs::path& out, const std::string& html) {
    const std::regex reference(R"((?:href|src)=\"([^\"#][^\"]*)\")");
    int checked = 0;
    for (auto it = std::sregex_iterator(html.begin(), html.end(), reference);
         it != std::sregex_iterator(); ++it) {
        const std::string target = (*it)[1];
        if (target.rfind("http", 0) == 0) continue;
        const fs::path file = out / target;
        EXPECT_TRUE(fs::exists(file)) << target;
        if (fs::exists(file)) {
            EXPECT_GT(fs::file_size(file), 0u) << target;
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
PngSummary summarise_png(const std::string& bytes) {
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

}  // namespace

TEST(Report, EveryReferencedFileExistsAndFiguresCarryTheRunsNumbers) {
    const fs::path sim = make_run("sim", "simulate"), sweep = make_run("sweep", "sweep");
    const fs::path out = scratch() / "report";
    fs::remove_all(out);
    const std::string index = reports::write_report({sim.string(), sweep.string()}, out.string());
    const std::string html = slurp(index);
    const int references = check_references(out, html);
    std::cout << "checked " << references << " references\n";
    EXPECT_GE(references, 4 * 5);
    // 4 simulate figures + 2 metrics x 2 swept parameters, all drawn and inlined.
    std::size_t inline_svgs = 0;
    for (auto at = html.find("<svg"); at != std::string::npos; at = html.find("<svg", at + 1))
        ++inline_svgs;
    EXPECT_EQ(inline_svgs, 8u);
    for (const char* needle :
         {"κ and envelope agreement", "What the generator realised", "Decisions taken",
          "Table 1: sensitivity", "largest violation", "scale-invariant"}) {
        EXPECT_NE(html.find(needle), std::string::npos) << needle;
    }
    // The data behind the Precision figure are simulate.csv's numbers, character for character.
    const auto table = reports::read_csv_table((sim / "simulate.csv").string());
    std::istringstream dat(slurp(out / "figures" / "run0_P.dat"));
    std::string line;
    std::getline(dat, line);  // comment
    std::size_t row = 0;
    while (std::getline(dat, line)) {
        std::istringstream fields(line);
        std::string N, mean, lo, hi;
        fields >> N >> mean >> lo >> hi;
        ASSERT_LT(row, table.rows.size());
        EXPECT_EQ(N, table.text(row, "N"));
        EXPECT_EQ(mean, table.text(row, "P_mean"));
        EXPECT_EQ(lo, table.text(row, "P_ci_lo"));
        EXPECT_EQ(hi, table.text(row, "P_ci_hi"));
        ++row;
    }
    EXPECT_EQ(row, table.rows.size());
}

TEST(Report, WithoutGnuplotTheTablesRemainAndTheReportSaysWhy) {
    const fs::path sim = make_run("sim", "simulate");
    const fs::path out = scratch() / "report_no_gnuplot";
    fs::remove_all(out);
    ::setenv("ATTNGEO_GNUPLOT", "/nonexistent/gnuplot", 1);
    const std::string index = reports::write_report({sim.string()}, out.string());
    ::unsetenv("ATTNGEO_GNUPLOT");
    const std::string html = slurp(index);
    EXPECT_NE(html.find("Figures are missing: gnuplot was not found"), std::string::npos);
    EXPECT_NE(html.find("κ and envelope agreement"), std::string::npos);
    EXPECT_EQ(html.find("<svg"), std::string::npos);
    EXPECT_TRUE(fs::exists(out / "figures" / "run0_P.gp"));
    EXPECT_TRUE(fs::exists(out / "figures" / "run0_P.dat"));
    check_references(out, html);
}

TEST(Report, BadInputNamesTheFolder) {
    const fs::path empty = scratch() / "not_a_run";
    fs::create_directories(empty);
    try {
        reports::write_report({empty.string()}, (scratch() / "r").string());
        FAIL() << "expected InputError";
    } catch (const InputError& e) {
        EXPECT_NE(std::string(e.what()).find(empty.string()), std::string::npos) << e.what();
    }
    std::ofstream(empty / "manifest.json") << R"({"kind": "mystery"})";
    EXPECT_THROW(reports::write_report({empty.string()}, (scratch() / "r").string()), InputError);
    EXPECT_THROW(reports::write_report({}, (scratch() / "r").string()), InputError);
}

TEST(Report, HeadlessChromiumScreenshotIsNotBlank) {
    const char* chromium = "/usr/bin/chromium";
    const bool required =
        std::getenv("CI") != nullptr || std::getenv("ATTNGEO_REQUIRE_CHROMIUM") != nullptr;
    if (::access(chromium, X_OK) != 0) {
        if (required) FAIL() << "chromium is required on CI (apt-get install chromium)";
        GTEST_SKIP() << "chromium not installed (apt-get install chromium)";
    }
    const fs::path sim = make_run("sim", "simulate");
    const fs::path out = scratch() / "report_shot";
    fs::remove_all(out);
    const std::string index = reports::write_report({sim.string()}, out.string());
    const fs::path shot = out / "shot.png", profile = out / "chromium-profile";
    const std::string command =
        std::string(chromium) +
        " --headless --no-sandbox --disable-gpu --disable-quic --no-first-run "
        "--disable-background-networking --disable-component-update --disable-sync "
        "--hide-scrollbars --user-data-dir=" +
        profile.string() + " --window-size=1200,2400 --screenshot=" + shot.string() + " file://" +
        fs::absolute(index).string() + " > " + (out / "chromium.log").string() + " 2>&1";
    ASSERT_EQ(std::system(command.c_str()), 0) << slurp(out / "chromium.log");
    ASSERT_TRUE(fs::exists(shot)) << slurp(out / "chromium.log");
    const PngSummary s = summarise_png(slurp(shot));
    std::cout << "screenshot: " << s.ink * 100 << "% non-white pixels, " << s.colours
              << " colours\n";
    EXPECT_GT(s.ink, 0.02);
    EXPECT_GT(s.colours, 50u);
}
