// Tests for the cross-model figures (reports/models_figures.cpp) and the report's own-file list:
// several extract folders written here (and three stories260K compares made from ../shared)
// draw models_fig5_P/R, models_fig6 and models_fig8 with one legend entry and curve
// per model, their data equal plain recomputations from the folders' CSVs, --label renames,
// a re-report removes only the figures it no longer writes, and simulate folders overlay.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>

#include "common/errors.hpp"
#include "reports/csv_table.hpp"
#include "reports/palette.hpp"
#include "reports/report.hpp"
#include "tests/reports/report_checks.hpp"
#include "tests/support/shared_data.hpp"
#include "tests/support/test_files.hpp"

namespace fs = std::filesystem;
using namespace attngeo;

namespace {

using attngeo::test_support::dat_rows;
using attngeo::test_support::slurp;

fs::path scratch() {
    return attngeo::test_support::scratch_folder("models_report");
}

const char* const kFigures[4] = {"models_fig5_P", "models_fig5_R", "models_fig6", "models_fig8"};

// One synthetic model: its shape, its checkpoint path in the manifest and its context.
struct Shape {
    std::string model_path;
    int layers, heads, kv_heads, context;
};
const Shape kShapes[3] = {{"/models/tiny-a.bin", 3, 4, 2, 8},
                          {"/models/Mistral-7B-v0.1/", 4, 2, 1, 12},
                          {"/models/tiny-a.bin", 5, 2, 2, 6}};

// Deterministic per-head numbers that vary across heads and N (so correlations are defined).
double rho0_of(int model, int layer, int kv) {
    return 0.1 * std::sin(1.0 + model + 1.7 * layer + 2.3 * kv);
}
double recall_of(int model, int layer, int head, int N) {
    return 0.5 + 0.4 * std::cos(0.3 * N + 0.9 * head + 1.3 * layer + model);
}

// An extract folder with heads.csv, pr.csv, by_position.csv, cos_by_lag.csv, diag.csv and a
// manifest naming the model; regimes rotate over the heads.
fs::path make_extract(int model) {
    const Shape& s = kShapes[model];
    const fs::path dir = scratch() / ("extract" + std::to_string(model));
    fs::create_directories(dir);
    std::ostringstream heads, pr, by_position, cos, diag;
    heads << "layer,head,kv_head,docs,norm_mean,norm_median,cv_positional,cv_pooled,lambda,rho0,"
             "sink_mass,last_mass,m_sink,m_last,m_rest,regime,regime_margin\n";
    pr << "layer,head,N,docs,P_mean,P_se,R_mean,R_se,Fmax_mean,Fmin_mean\n";
    by_position << "layer,head,pos,norm_mean,alpha_mean,contrib_mean\n";
    cos << "layer,head,lag,cos_mean,pairs\n";
    diag << "layer,head,N,s_norm,s_norm_no_sink,s_norm_no_last,cos_s_v0,cos_s_vL\n";
    for (std::ostream* table : {&heads, &pr, &by_position, &cos})
        *table << std::setprecision(17);  // the references use the exact values
    const char* regimes[3] = {"Retriever", "Mixer", "Reset"};
    for (int layer = 0; layer < s.layers; ++layer)
        for (int head = 0; head < s.heads; ++head) {
            const int kv = head / (s.heads / s.kv_heads);
            const int regime = (layer + head + model) % 3;
            heads << layer << ',' << head << ',' << kv << ",4,2,2,0.1,0.2,0.25,"
                  << rho0_of(model, layer, kv) << ",0.3,0.1,0.3,0.2,0.5," << regimes[regime]
                  << ",1.5\n";
            for (int N = 1; N <= s.context; ++N) {
                pr << layer << ',' << head << ',' << N << ",4," << 1.0 / N << ",0,"
                   << recall_of(model, layer, head, N) << ",0,0.5,0.5\n";
                diag << layer << ',' << head << ',' << N << ",1,0.9,0.8,0.5,-0.2\n";
            }
            for (int p = 0; p < s.context; ++p)
                by_position << layer << ',' << head << ',' << p << ",2,"
                            << (p == 0 ? 0.3 : 0.7 / (s.context - 1)) << ",0.2\n";
            for (int lag = 1; lag < s.context - 1; ++lag)
                cos << layer << ',' << head << ',' << lag << ',' << std::exp(-0.3 * lag) << ",10\n";
        }
    std::ofstream(dir / "heads.csv") << heads.str();
    std::ofstream(dir / "pr.csv") << pr.str();
    std::ofstream(dir / "by_position.csv") << by_position.str();
    std::ofstream(dir / "cos_by_lag.csv") << cos.str();
    std::ofstream(dir / "diag.csv") << diag.str();
    const nlohmann::json manifest = {{"format_version", 4},
                                     {"kind", "extract"},
                                     {"model",
                                      {{"family", "llama"},
                                       {"layers", s.layers},
                                       {"heads", s.heads},
                                       {"kv_heads", s.kv_heads},
                                       {"head_dim", 4},
                                       {"vocab", 32},
                                       {"path", s.model_path}}},
                                     {"parameters", {{"context", s.context}}},
                                     {"documents", {{"windows_used", 4}}},
                                     {"decisions", {"synthetic test data"}},
                                     {"version", "test"},
                                     {"git_commit", "none"},
                                     {"command", "test"}};
    std::ofstream(dir / "manifest.json") << manifest.dump(2);
    return dir;
}

std::vector<std::string> extracts(int count) {
    std::vector<std::string> dirs;
    for (int m = 0; m < count; ++m)
        dirs.push_back(make_extract(m).string());
    return dirs;
}

// gnuplot's SVG colour for '#rrggbb': "rgb( 31, 119, 180)".
std::string svg_colour(const std::string& hex) {
    char out[32];
    std::snprintf(out, sizeof out, "rgb(%3d,%4d,%4d)", std::stoi(hex.substr(1, 2), nullptr, 16),
                  std::stoi(hex.substr(3, 2), nullptr, 16),
                  std::stoi(hex.substr(5, 2), nullptr, 16));
    return out;
}

// The colour the script gives the curve titled `label` ("" when no curve has that title).
std::string script_colour(const std::string& script, const std::string& label) {
    const std::regex curve("lc rgb '(#[0-9a-f]{6})' title '" +
                           std::regex_replace(label, std::regex(R"([()#.])"), R"(\$&)") + "'");
    std::smatch match;
    return std::regex_search(script, match, curve) ? match[1].str() : "";
}

// Line segments drawn in `colour` inside the SVG groups titled `label` (the legend sample is
// one; a curve through k points adds k − 1). −1 when the legend has no such entry.
int segments_of(const std::string& svg, const std::string& label, const std::string& colour) {
    const std::string title = "><title>" + label + "</title>";
    int segments = -1;
    for (auto at = svg.find(title); at != std::string::npos; at = svg.find(title, at + 1)) {
        segments = std::max(segments, 0);
        const auto end = svg.find("<g id=\"gnuplot_plot_", at);
        const std::string group = svg.substr(at, end == std::string::npos ? end : end - at);
        const std::regex path("<path stroke='" +
                              std::regex_replace(colour, std::regex(R"([()])"), R"(\$&)") +
                              "'[^>]* d='([^']*)'");
        for (auto it = std::sregex_iterator(group.begin(), group.end(), path);
             it != std::sregex_iterator(); ++it) {
            const std::string d = (*it)[1];
            segments += static_cast<int>(std::count(d.begin(), d.end(), 'L'));
        }
    }
    return segments;
}

// Every cross-model figure exists with its script, PNG and one data file per model, and its
// SVG has a legend entry and a curve (at least `min_segments` segments) per label, each in its
// own colour.
void expect_overlays(const fs::path& out, const std::vector<std::string>& labels,
                     const std::vector<std::string>& figures, int min_segments) {
    for (const std::string& id : figures) {
        const fs::path figures_dir = out / "figures";
        ASSERT_TRUE(fs::exists(figures_dir / (id + ".svg"))) << id;
        EXPECT_TRUE(fs::exists(figures_dir / (id + ".png"))) << id;
        const std::string svg = slurp(figures_dir / (id + ".svg"));
        const std::string script = slurp(figures_dir / (id + ".gp"));
        std::set<std::string> colours;
        for (std::size_t k = 0; k < labels.size(); ++k) {
            EXPECT_TRUE(fs::exists(figures_dir / (id + "_m" + std::to_string(k) + ".dat"))) << id;
            const std::string colour = script_colour(script, labels[k]);
            ASSERT_FALSE(colour.empty()) << id << ": no curve titled " << labels[k];
            colours.insert(colour);
            const int segments = segments_of(svg, labels[k], svg_colour(colour));
            EXPECT_GE(segments, min_segments) << id << ": " << labels[k];
        }
        EXPECT_EQ(colours.size(), labels.size()) << id << ": one colour per model";
    }
}

// Dashed lines of at least `min_segments` segments that the SVG draws in `colour` at stroke
// width `width` (gnuplot writes "%.2f" on the enclosing group).
int dashed_lines(const std::string& svg, const std::string& colour, double width,
                 int min_segments) {
    char width_text[32];
    std::snprintf(width_text, sizeof width_text, "stroke-width=\"%.2f\"", width);
    const std::string path = "<path stroke='" + colour + "' stroke-dasharray='";
    int lines = 0;
    for (auto at = svg.find(path); at != std::string::npos; at = svg.find(path, at + 1)) {
        const auto group = svg.rfind("stroke-width=\"", at);
        if (group == std::string::npos || svg.compare(group, std::strlen(width_text), width_text))
            continue;
        const auto data = svg.find("d='", at), end = svg.find('\'', data + 3);
        const std::string d = svg.substr(data, end - data);
        lines += std::count(d.begin(), d.end(), 'L') >= min_segments;
    }
    return lines;
}

// Each model draws the corrected variant's lower and upper envelopes in its own colour at the
// corrected width (narrower than every model's own line and the paper envelope, so nothing
// else matches), both key entries exist, and the caption names both variants.
void expect_corrected_envelopes(const fs::path& out, const std::vector<std::string>& labels,
                                const std::vector<std::string>& figures) {
    const double width = reports::palette::variant_width(3);  // bound_variants(): corrected
    for (const std::string& id : figures) {
        const std::string svg = slurp(out / "figures" / (id + ".svg"));
        const std::string script = slurp(out / "figures" / (id + ".gp"));
        for (const char* entry : {"lower envelope (corrected)", "upper envelope (corrected)",
                                  "lower envelope (paper)", "upper envelope (paper)"})
            EXPECT_NE(svg.find("<title>" + std::string(entry) + "</title>"), std::string::npos)
                << id << ": " << entry;
        for (const std::string& label : labels) {
            const std::string colour = svg_colour(script_colour(script, label));
            EXPECT_EQ(dashed_lines(svg, colour, width, 3), 2) << id << ": " << label;
        }
    }
    const std::string html = slurp(out / "index.html");
    EXPECT_NE(html.find("<code>paper</code> and <code>corrected</code> variants"),
              std::string::npos);
}

fs::path report(const std::vector<std::string>& dirs, const std::string& name,
                const std::vector<std::string>& labels = {}, bool fresh = true) {
    const fs::path out = scratch() / name;
    if (fresh) fs::remove_all(out);
    reports::write_report(dirs, out.string(), labels);
    return out;
}

// Plain reference of corr(R(r_min, N), ρ0) across key/value heads: R averaged over each group.
double reference_correlation(int model, int N) {
    const Shape& s = kShapes[model];
    std::vector<double> r, rho;
    for (int layer = 0; layer < s.layers; ++layer)
        for (int kv = 0; kv < s.kv_heads; ++kv) {
            const int group = s.heads / s.kv_heads;
            double sum = 0;
            for (int head = kv * group; head < (kv + 1) * group; ++head)
                sum += recall_of(model, layer, head, N);
            r.push_back(sum / group);
            rho.push_back(rho0_of(model, layer, kv));
        }
    double mr = 0, mh = 0;
    for (std::size_t i = 0; i < r.size(); ++i)
        mr += r[i] / r.size(), mh += rho[i] / rho.size();
    double num = 0, vr = 0, vh = 0;
    for (std::size_t i = 0; i < r.size(); ++i) {
        num += (r[i] - mr) * (rho[i] - mh);
        vr += (r[i] - mr) * (r[i] - mr);
        vh += (rho[i] - mh) * (rho[i] - mh);
    }
    return num / std::sqrt(vr * vh);
}

}  // namespace

TEST(ModelsReport, ThreeExtractFoldersOverlayInFourFiguresNamedFromTheirManifests) {
    const fs::path out = report(extracts(3), "three");
    // Models 0 and 2 share a checkpoint name, so the context tells them apart.
    const std::vector<std::string> labels = {"tiny-a (context 8)", "Mistral-7B-v0.1",
                                             "tiny-a (context 6)"};
    expect_overlays(out, labels, {std::begin(kFigures), std::end(kFigures)}, 3);
    const std::string html = slurp(out / "index.html");
    EXPECT_NE(html.find("Across models"), std::string::npos);
    EXPECT_GT(attngeo::test_support::check_references(out, html), 0);

    // Figure 5: each model's mean P over heads (P = 1/N for every head).
    double largest = 0;
    for (int m = 0; m < 3; ++m) {
        const auto rows =
            dat_rows(out / "figures" / ("models_fig5_P_m" + std::to_string(m) + ".dat"));
        ASSERT_EQ(rows.size(), static_cast<std::size_t>(kShapes[m].context));
        for (const auto& row : rows) {
            largest = std::max(largest, std::fabs(row[1] - 1.0 / row[0]));
            ASSERT_EQ(row.size(), 8u) << "N, P, band, paper and corrected envelopes";
            for (int c = 4; c < 8; ++c)
                EXPECT_TRUE(std::isnan(row[c])) << "extract: no envelope";
        }
    }
    EXPECT_LT(largest, 1e-12);
    std::cout << "largest |Figure 5 P - 1/N|: " << largest << "\n";
    // The key lists only what is drawn: no envelope entries without envelopes.
    for (const char* id : {"models_fig5_P", "models_fig5_R"})
        EXPECT_EQ(slurp(out / "figures" / (std::string(id) + ".svg")).find("envelope ("),
                  std::string::npos)
            << id;

    // Figure 6: Pearson across key/value heads, against the plain reference.
    largest = 0;
    for (int m = 0; m < 3; ++m)
        for (const auto& row :
             dat_rows(out / "figures" / ("models_fig6_m" + std::to_string(m) + ".dat"))) {
            const double expected = reference_correlation(m, static_cast<int>(row[0]));
            largest = std::max(largest, std::fabs(row[1] - expected));
            EXPECT_TRUE(std::isnan(row[2])) << "no bootstrap interval from an extract folder";
        }
    EXPECT_LT(largest, 1e-9);
    std::cout << "largest |Figure 6 corr - plain Pearson|: " << largest << "\n";
}

TEST(ModelsReport, Figure8SharesAreTheLayersRegimeCounts) {
    const fs::path out = report(extracts(2), "fig8");
    for (int m = 0; m < 2; ++m) {
        const Shape& s = kShapes[m];
        const auto rows =
            dat_rows(out / "figures" / ("models_fig8_m" + std::to_string(m) + ".dat"));
        ASSERT_EQ(rows.size(), static_cast<std::size_t>(s.layers));
        for (const auto& row : rows) {
            const int layer = static_cast<int>(row[0]);
            EXPECT_DOUBLE_EQ(row[1], static_cast<double>(layer) / (s.layers - 1));
            EXPECT_EQ(row[2], s.heads);
            for (int r = 0; r < 3; ++r) {
                int count = 0;
                for (int head = 0; head < s.heads; ++head)
                    count += (layer + head + m) % 3 == r;
                EXPECT_DOUBLE_EQ(row[3 + r], static_cast<double>(count) / s.heads)
                    << "model " << m << " layer " << layer << " regime " << r;
            }
        }
    }
}

TEST(ModelsReport, LabelRenamesTheModelsAndAWrongCountIsAnInputErrorNamingLabel) {
    const std::vector<std::string> labels = {"LLaMA", "Mistral", "Gemma"};
    const fs::path out = report(extracts(3), "labels", labels);
    expect_overlays(out, labels, {std::begin(kFigures), std::end(kFigures)}, 3);
    for (const char* id : kFigures)
        EXPECT_EQ(slurp(out / "figures" / (std::string(id) + ".svg")).find("tiny-a"),
                  std::string::npos)
            << id;
    attngeo::test_support::expect_input_error(
        [&] {
            report(extracts(3), "labels_bad", {"LLaMA", "Mistral"});
        },
        {"--label", "2 given for 3"});
    attngeo::test_support::expect_input_error(
        [&] {
            report(extracts(2), "labels_empty", {"LLaMA", ""});
        },
        {"--label", "empty"});
    EXPECT_FALSE(fs::exists(scratch() / "labels_bad")) << "nothing written";

    const auto cli = attngeo::test_support::run_program(
        ATTNGEO_EXE,
        "report --in " + extracts(2)[0] + " " + extracts(2)[1] + " --label only-one --out " +
            (scratch() / "labels_cli").string(),
        scratch());
    EXPECT_EQ(cli.exit_code, 2);
    EXPECT_NE(cli.err.find("--label"), std::string::npos) << cli.err;
    EXPECT_EQ(std::count(cli.err.begin(), cli.err.end(), '\n'), 1) << cli.err;
}

TEST(ModelsReport, OneModelDrawsNoOverlay) {
    const fs::path out = report(extracts(1), "single");
    for (const auto& entry : fs::directory_iterator(out / "figures"))
        EXPECT_NE(entry.path().filename().string().rfind("models_", 0), 0u) << entry.path();
    EXPECT_EQ(slurp(out / "index.html").find("Across models"), std::string::npos);
}

TEST(ModelsReport, ReReportingWithFewerInputsRemovesOnlyTheStaleFigures) {
    const fs::path out = report(extracts(3), "stale");
    auto run2_files = [&] {
        int n = 0;
        for (const auto& entry : fs::directory_iterator(out / "figures"))
            n += entry.path().filename().string().rfind("run2_", 0) == 0;
        return n;
    };
    ASSERT_GT(run2_files(), 0);
    std::ofstream(out / "figures" / "my_notes.txt") << "mine";
    std::ofstream(out / "figures" / "run2_by_hand.txt") << "mine too (not a figure's name)";
    std::ofstream(out / "notes.md") << "mine";
    report(extracts(2), "stale", {}, false);
    EXPECT_EQ(run2_files(), 1) << "only run2_by_hand.txt is left";
    EXPECT_TRUE(fs::exists(out / "figures" / "models_fig5_P.svg"));
    EXPECT_FALSE(fs::exists(out / "figures" / "models_fig5_P_m2.dat"));
    EXPECT_TRUE(fs::exists(out / "figures" / "my_notes.txt"));
    EXPECT_TRUE(fs::exists(out / "notes.md"));
    // The list names exactly what is left of the report.
    const nlohmann::json list = nlohmann::json::parse(slurp(out / "report_files.json"));
    for (const auto& file : list.at("files"))
        EXPECT_TRUE(fs::exists(out / file.get<std::string>())) << file;

    // One model: the models_* figures go too.
    report(extracts(1), "stale", {}, false);
    EXPECT_FALSE(fs::exists(out / "figures" / "models_fig5_P.svg"));
    EXPECT_FALSE(fs::exists(out / "figures" / "run1_fig5_precision_recall.svg"));
    EXPECT_TRUE(fs::exists(out / "figures" / "run0_fig5_precision_recall.svg"));
}

TEST(ModelsReport, AListNamingOtherFilesRemovesNothingOfTheUsers) {
    const fs::path out = report(extracts(2), "tampered");
    std::ofstream(out / "notes.md") << "mine";
    std::ofstream(scratch() / "outside.txt") << "mine";
    nlohmann::json list = nlohmann::json::parse(slurp(out / "report_files.json"));
    list["files"].push_back("notes.md");
    list["files"].push_back("figures/../../outside.txt");
    list["files"].push_back("../outside.txt");
    std::ofstream(out / "report_files.json") << list.dump();
    report(extracts(2), "tampered", {}, false);
    EXPECT_TRUE(fs::exists(out / "notes.md"));
    EXPECT_TRUE(fs::exists(scratch() / "outside.txt"));

    // A report written before the list existed: its figures/ files named like a report's go.
    fs::remove(out / "report_files.json");
    std::ofstream(out / "figures" / "run7_precision.svg") << "<svg/>";
    std::ofstream(out / "figures" / "photo.png") << "mine";
    report(extracts(2), "tampered", {}, false);
    EXPECT_FALSE(fs::exists(out / "figures" / "run7_precision.svg"));
    EXPECT_TRUE(fs::exists(out / "figures" / "photo.png"));
}

TEST(ModelsReport, SimulateFoldersOverlayTheirMeansAndEnvelopes) {
    std::vector<std::string> dirs;
    for (const char* beta : {"0.05", "0.2"}) {
        const fs::path dir = scratch() / (std::string("sim_beta") + beta);
        const auto r = attngeo::test_support::run_program(
            ATTNGEO_EXE,
            std::string("simulate --L 63 --T1 8 --T2 48 --N pow2 --trials 40 --beta ") + beta +
                " --out " + dir.string() + " > /dev/null",
            scratch());
        ASSERT_EQ(r.exit_code, 0) << r.err;
        dirs.push_back(dir.string());
    }
    const fs::path out = report(dirs, "sims");
    const std::vector<std::string> labels = {"beta=0.05", "beta=0.2"};
    expect_overlays(out, labels, {"models_sim_P", "models_sim_R"}, 3);
    expect_corrected_envelopes(out, labels, {"models_sim_P", "models_sim_R"});
    EXPECT_FALSE(fs::exists(out / "figures" / "models_fig5_P.svg")) << "no extract or compare";

    // The curves are simulate.csv's means and intervals and bounds.csv's paper and corrected
    // envelopes, in that order.
    double largest = 0;
    for (int k = 0; k < 2; ++k) {
        const reports::CsvTable sim = reports::read_csv_table(dirs[k] + "/simulate.csv");
        const reports::CsvTable bounds = reports::read_csv_table(dirs[k] + "/bounds.csv");
        std::map<int, std::vector<double>> expected;
        for (std::size_t r = 0; r < sim.rows.size(); ++r)
            expected[static_cast<int>(sim.number(r, "N"))] = {
                sim.number(r, "R_mean"), sim.number(r, "R_ci_lo"), sim.number(r, "R_ci_hi")};
        for (const char* variant : {"paper", "corrected"})
            for (std::size_t r = 0; r < bounds.rows.size(); ++r)
                if (bounds.text(r, "variant") == variant) {
                    auto& e = expected[static_cast<int>(bounds.number(r, "N"))];
                    e.push_back(bounds.number(r, "R_lower_edge"));
                    e.push_back(bounds.number(r, "R_upper_edge"));
                }
        const auto rows =
            dat_rows(out / "figures" / ("models_sim_R_m" + std::to_string(k) + ".dat"));
        ASSERT_EQ(rows.size(), expected.size());
        for (const auto& row : rows) {
            const auto& e = expected.at(static_cast<int>(row[0]));
            ASSERT_EQ(e.size(), 7u);
            ASSERT_EQ(row.size(), 8u);
            for (int c = 0; c < 7; ++c)
                largest = std::max(largest, std::fabs(row[1 + c] - e[c]));
        }
    }
    EXPECT_EQ(largest, 0.0) << "shortest round-trip text reads back exactly";
    std::cout << "largest difference of models_sim_R data from the CSVs: " << largest << "\n";
}

// stories260K extracted here at three contexts (../shared's checkpoint, examples/' corpus) and
// compared: the report overlays the three as models. Needs attngeo's extract (libtorch): a
// build without it skips, saying so.
std::vector<std::string> three_stories_compares() {
    const fs::path model = test_support::shared_folder() / "models" / "stories260K";
    const fs::path corpus = fs::path(ATTNGEO_SOURCE_DIR) / "examples" / "stories260K_corpus.txt";
    std::vector<std::string> dirs;
    for (const char* context : {"64", "128", "256"}) {
        const fs::path extract = scratch() / (std::string("s260k_c") + context);
        const fs::path compare = scratch() / (std::string("s260k_c") + context + "-compare");
        fs::remove_all(extract);
        fs::remove_all(compare);
        const auto e =
            test_support::run_program(ATTNGEO_EXE,
                                      "extract --model " + (model / "stories260K.bin").string() +
                                          " --corpus " + corpus.string() + " --context " + context +
                                          " --docs 3 --quiet --out " + extract.string(),
                                      scratch());
        EXPECT_EQ(e.exit_code, 0) << e.err;
        const auto c =
            test_support::run_program(ATTNGEO_EXE,
                                      "compare --emp " + extract.string() +
                                          " --replicates 100 --quiet --out " + compare.string(),
                                      scratch());
        EXPECT_EQ(c.exit_code, 0) << c.err;
        dirs.push_back(compare.string());
    }
    return dirs;
}

TEST(ModelsReport, ThreeStoriesComparesAtThreeContexts) {
    if (!test_support::extract_built(ATTNGEO_EXE, scratch()))
        GTEST_SKIP() << "attngeo was built without libtorch: no extract";
    REQUIRE_SHARED_FILE(test_support::shared_folder() / "models" / "stories260K");
    const std::vector<std::string> dirs = three_stories_compares();
    if (::testing::Test::HasFailure()) return;
    const fs::path out = report(dirs, "stories");
    const std::vector<std::string> labels = {
        "stories260K (context 64)", "stories260K (context 128)", "stories260K (context 256)"};
    expect_overlays(out, labels, {std::begin(kFigures), std::end(kFigures)}, 3);
    expect_corrected_envelopes(out, labels, {"models_fig5_P", "models_fig5_R"});

    // Figure 5 and 6 data against compare's own tables.
    double largest = 0;
    for (int m = 0; m < 3; ++m) {
        const reports::CsvTable envelope = reports::read_csv_table(dirs[m] + "/envelope.csv");
        std::map<int, double> p_mean;
        for (std::size_t r = 0; r < envelope.rows.size(); ++r)
            if (envelope.text(r, "variant") == "paper")
                p_mean[static_cast<int>(envelope.number(r, "N"))] = envelope.number(r, "P_mean");
        for (const auto& row :
             dat_rows(out / "figures" / ("models_fig5_P_m" + std::to_string(m) + ".dat")))
            largest = std::max(largest, std::fabs(row[1] - p_mean.at(static_cast<int>(row[0]))));
        const reports::CsvTable corr = reports::read_csv_table(dirs[m] + "/corr_rho0.csv");
        const auto rows =
            dat_rows(out / "figures" / ("models_fig6_m" + std::to_string(m) + ".dat"));
        ASSERT_EQ(rows.size(), corr.rows.size());
        for (std::size_t r = 0; r < rows.size(); ++r)
            if (!corr.text(r, "corr").empty())
                largest = std::max(largest, std::fabs(rows[r][1] - corr.number(r, "corr")));
    }
    EXPECT_EQ(largest, 0.0);
    std::cout << "largest difference of Figure 5/6 data from envelope.csv/corr_rho0.csv: "
              << largest << "\n";
}
