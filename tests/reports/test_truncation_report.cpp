// Tests for the report of `attngeo truncate` folders (reports/truncation_report.cpp): synthetic
// folders in the columns of docs/commands/truncate.md are reported, and the figures' data files
// must hold the numbers written into the fixture; scope head adds the ΔNLL-geometry scatter.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "common/errors.hpp"
#include "common/format.hpp"
#include "common/run_columns.hpp"
#include "common/run_schema.hpp"
#include "reports/figure.hpp"
#include "reports/report.hpp"
#include "tests/reports/report_checks.hpp"
#include "tests/support/test_files.hpp"

namespace fs = std::filesystem;
using namespace attngeo;

namespace {

using attngeo::test_support::dat_rows;
using attngeo::test_support::slurp;

fs::path scratch() {
    return attngeo::test_support::scratch_folder("truncation_report");
}

const std::vector<int> kGrid = {1, 2, 4, 8};
const std::vector<std::string> kPolicies = {"attn", "random"};
const int kLayers = 2, kHeads = 2;
const char* const kRegimes[3] = {"Retriever", "Mixer", "Reset"};

// The fixture's ΔNLL of a curve: falls with N, differs between policies, folders and units
// (unit −1: scope all). Every head has the same ΔNLL at N = 1, so the scatter's N is 2.
double delta_nll(int folder, int policy, int unit, int N) {
    if (unit >= 0 && N == 1) return 0.75;
    return (1.0 + folder + 0.5 * policy) / N + 0.01 * (unit + 1) * N;
}
double kl_of(int folder, int policy, int unit, int N) {
    return 0.5 * delta_nll(folder, policy, unit, N) + 0.001;
}
// A head's predictor value (rho0 is the best predictor of the scope-head fixture).
double rho0_of(int unit) {
    return 0.1 + 0.2 * unit;
}

void write_text(const fs::path& path, const std::string& text) {
    std::ofstream(path) << text;
}

std::string truncate_header() {
    return "policy,renorm,scope,layer,head,N,docs,delta_nll,delta_nll_se,delta_nll_lo,"
           "delta_nll_hi,kl,kl_se,top1,dropped_mass,output_error\n";
}

void write_manifest(const fs::path& dir, const std::string& scope, const std::string& model) {
    const nlohmann::json manifest = {
        {"kind", "truncate"},
        {"format_version", 4},
        {"model", {{"path", model}, {"family", "llama"}, {"layers", kLayers}, {"heads", kHeads}}},
        {"parameters",
         {{"context", 16},
          {"N", kGrid},
          {"policies", kPolicies},
          {"renorm", "no"},
          {"scope", scope},
          {"tau", {0.01, 0.1}}}},
        {"documents", {{"count", 4}}}};
    write_text(dir / "manifest.json", manifest.dump(2));
}

// One truncate.csv row: the interval is ΔNLL ± 0.05 for scope all, empty for units.
std::string truncate_row(const std::string& scope, int folder, int policy, int layer, int head,
                         int N) {
    const int unit = scope == "head" ? layer * kHeads + head : -1;
    const double d = delta_nll(folder, policy, unit, N);
    std::ostringstream row;
    row << std::setprecision(17) << kPolicies[policy] << ",no," << scope << ',' << layer << ','
        << head << ',' << N << ",4," << d << ",0.02,";
    if (unit < 0)
        row << d - 0.05 << ',' << d + 0.05;
    else
        row << ',';
    row << ',' << kl_of(folder, policy, unit, N) << ",0.01,0.9,0.2,0.3\n";
    return row.str();
}

void write_effective_size(const fs::path& dir, const std::string& scope) {
    std::ostringstream csv;
    csv << schema::csv_header(schema::page::truncate, schema::file::effective_size) << '\n';
    for (const std::string& policy : kPolicies) {
        if (scope == "all") {
            // T = 64: compression 1 − 8/64, its interval [0 (N* unbounded), 1 − 4/64].
            csv << policy << ",no,all,-1,-1,0.1,8,4,,200,0.875,,0.9375\n";
            csv << policy << ",no,all,-1,-1,0.01,,,,200,,,\n";
            continue;
        }
        for (int unit = 0; unit < kLayers * kHeads; ++unit)
            csv << policy << ",no,head," << unit / kHeads << ',' << unit % kHeads << ",0.1,"
                << (unit < 3 ? std::to_string(2 << unit) + ",1,8" : std::string(",,")) << ",200,"
                << (unit < 3 ? format_double(1 - (2 << unit) / 64.0) + ",0.875,0.984375"
                             : std::string(",,"))
                << '\n';
    }
    write_text(dir / "effective_size.csv", csv.str());
}

// One link_summary.json entry: under `attn` ρ0 at N = 2 is the best predictor (its adjusted
// interval excludes 0); under `random` the strongest test, λ at N = 4, does not exclude 0.
nlohmann::json link_entry(int policy) {
    nlohmann::json entry = {{"policy", kPolicies[policy]},
                            {"renorm", "no"},
                            {"heads", kLayers * kHeads},
                            {"tests", 12},
                            {"N_largest_F", 2},
                            {"N_largest_F_lo", 2},
                            {"N_largest_F_hi", 4},
                            {"N_knee", 8},
                            {"largest_F_before_knee", true}};
    if (policy == 0) {
        entry["best_predictor"] = "rho0";
        entry["tests_excluding_zero"] = 3;
        entry["strongest"] = {{"quantity", "rho0"}, {"N", 2},         {"spearman", 0.25},
                              {"p_holm", 0.0125},   {"adj_lo", 0.05}, {"adj_hi", 0.5}};
    } else {
        entry["best_predictor"] = nullptr;
        entry["tests_excluding_zero"] = 0;
        entry["strongest"] = {{"quantity", "lambda"}, {"N", 4},           {"spearman", 0.25},
                              {"p_holm", 0.5},        {"adj_lo", -0.375}, {"adj_hi", 0.625}};
    }
    return entry;
}

// head_link.csv, geometry_link.csv and link_summary.json of the scope-head fixture.
void write_link_files(const fs::path& dir) {
    std::ostringstream heads, geometry;
    heads << std::setprecision(17)
          << "policy,renorm,layer,head,N,delta_nll,precision,recall,f_score,dropped_mass,"
             "output_error,lambda,rho0,beta,regime\n";
    geometry << "policy,renorm,N,quantity,heads,spearman,ci_lo,ci_hi,replicates,p_value,head_lo,"
                "head_hi,family,tests,p_holm,adj_lo,adj_hi,excludes_zero\n";
    nlohmann::json summaries = nlohmann::json::array();
    for (int p = 0; p < 2; ++p) {
        for (int N : kGrid) {
            for (int unit = 0; unit < kLayers * kHeads; ++unit)
                heads << kPolicies[p] << ",no," << unit / kHeads << ',' << unit % kHeads << ',' << N
                      << ',' << delta_nll(0, p, unit, N) << ",0.5,0.6,0.55,0.2,0.3,0.25,"
                      << rho0_of(unit) << ",0.05," << kRegimes[unit % 3] << '\n';
            geometry << kPolicies[p] << ",no," << N << ",rho0,4," << 0.125 * N
                     << ",-0.5,0.75,200,0.001,0.1,0.6,1,12,"
                     << (p == 0 && N == 2 ? "0.0125,0.05,0.5,1" : "0.5,-0.375,0.625,0") << '\n';
            geometry << kPolicies[p] << ",no," << N << ",lambda,4,0.25,,,200,0.04,-0.2,0.6,1,12,"
                     << "0.5,-0.375,0.625,0\n";
            geometry << kPolicies[p] << ",no," << N << ",dropped_mass,4,0.5,0.1,0.8,200,0.2,"
                     << "-0.1,0.8,0,12,,,,\n";
        }
        summaries.push_back(link_entry(p));
    }
    write_text(dir / "head_link.csv", heads.str());
    write_text(dir / "geometry_link.csv", geometry.str());
    write_text(dir / "link_summary.json", summaries.dump(2));
}

// A truncate folder of `scope` (all or head) for model `model`; `folder` shifts its ΔNLL.
fs::path make_truncate(const std::string& name, const std::string& scope, int folder = 0,
                       const std::string& model = "/models/tiny-a.bin") {
    const fs::path dir = scratch() / name;
    fs::remove_all(dir);
    fs::create_directories(dir);
    write_manifest(dir, scope, model);
    std::ostringstream csv;
    csv << truncate_header();
    for (int p = 0; p < 2; ++p)
        for (int N : kGrid) {
            if (scope == "all") csv << truncate_row(scope, folder, p, -1, -1, N);
            if (scope == "head")
                for (int unit = 0; unit < kLayers * kHeads; ++unit)
                    csv << truncate_row(scope, folder, p, unit / kHeads, unit % kHeads, N);
        }
    write_text(dir / "truncate.csv", csv.str());
    write_effective_size(dir, scope);
    if (scope == "head") write_link_files(dir);
    return dir;
}

fs::path report(const std::vector<fs::path>& dirs, const std::string& name) {
    const fs::path out = scratch() / name;
    fs::remove_all(out);
    std::vector<std::string> in;
    for (const auto& dir : dirs)
        in.push_back(dir.string());
    reports::write_report(in, out.string());
    return out;
}

// Every figure of `ids` is named in index.html and, where gnuplot is installed, drawn.
void expect_figures(const fs::path& out, const std::vector<std::string>& ids) {
    const std::string html = slurp(out / "index.html");
    const bool gnuplot = !reports::find_gnuplot().empty();
    for (const std::string& id : ids) {
        EXPECT_NE(html.find("id=\"" + id + "\""), std::string::npos) << id;
        if (gnuplot) {
            EXPECT_TRUE(fs::exists(out / "figures" / (id + ".svg"))) << id;
        }
    }
    if (gnuplot) {
        EXPECT_EQ(html.find("not drawn"), std::string::npos);
    }
}

std::string error_of(const std::vector<fs::path>& dirs, const std::string& name) {
    try {
        report(dirs, name);
    } catch (const InputError& e) {
        return e.what();
    }
    return "";
}

}  // namespace

TEST(TruncationReport, ScopeAllDrawsTheRowsWithTheirIntervals) {
    const fs::path out = report({make_truncate("all", "all")}, "all_out");
    expect_figures(out, {"run0_truncate_delta_nll", "run0_truncate_kl"});
    for (int p = 0; p < 2; ++p) {
        const auto nll =
            dat_rows(out / "figures" / ("run0_truncate_delta_nll_s" + std::to_string(p) + ".dat"));
        const auto kl =
            dat_rows(out / "figures" / ("run0_truncate_kl_s" + std::to_string(p) + ".dat"));
        ASSERT_EQ(nll.size(), kGrid.size());
        ASSERT_EQ(kl.size(), kGrid.size());
        for (std::size_t i = 0; i < kGrid.size(); ++i) {
            const double expected = delta_nll(0, p, -1, kGrid[i]);
            EXPECT_EQ(nll[i][0], kGrid[i]);
            EXPECT_NEAR(nll[i][1], expected, 1e-12);
            EXPECT_NEAR(nll[i][2], expected - 0.05, 1e-12);
            EXPECT_NEAR(nll[i][3], expected + 0.05, 1e-12);
            EXPECT_NEAR(kl[i][1], kl_of(0, p, -1, kGrid[i]), 1e-12);
            EXPECT_TRUE(std::isnan(kl[i][2]));
        }
    }
    const std::string html = slurp(out / "index.html");
    EXPECT_EQ(html.find("truncate_link"), std::string::npos) << "no scatter for scope all";
    EXPECT_NE(html.find("8 [4, ∞]"), std::string::npos) << "N* with an open interval";
    EXPECT_NE(html.find("0.875 [0, 0.9375]"), std::string::npos) << "its compression ratio";
    EXPECT_NE(html.find("none ≤ τ"), std::string::npos);
    EXPECT_NE(html.find("model.path"), std::string::npos);
    EXPECT_NE(html.find("parameters.scope"), std::string::npos);
}

TEST(TruncationReport, ScopeHeadDrawsTheMeanOverHeadsAndTheGeometryScatter) {
    const fs::path out = report({make_truncate("head", "head")}, "head_out");
    expect_figures(out, {"run0_truncate_delta_nll", "run0_truncate_kl", "run0_truncate_link0",
                         "run0_truncate_link1"});
    const auto nll = dat_rows(out / "figures" / "run0_truncate_delta_nll_s1.dat");
    ASSERT_EQ(nll.size(), kGrid.size());
    for (std::size_t i = 0; i < kGrid.size(); ++i) {
        double mean = 0;
        for (int unit = 0; unit < kLayers * kHeads; ++unit)
            mean += delta_nll(0, 1, unit, kGrid[i]) / (kLayers * kHeads);
        EXPECT_NEAR(nll[i][1], mean, 1e-12) << "N = " << kGrid[i];
        EXPECT_TRUE(std::isnan(nll[i][2])) << "no interval for a mean over heads";
    }
    // attn: the scatter is at N = 2, the strongest test's N, against rho0, the best predictor.
    const auto points = dat_rows(out / "figures" / "run0_truncate_link0.dat");
    ASSERT_EQ(points.size(), static_cast<std::size_t>(kLayers * kHeads));
    for (const auto& point : points) {
        const int unit = static_cast<int>(point[0]) * kHeads + static_cast<int>(point[1]);
        EXPECT_NEAR(point[2], rho0_of(unit), 1e-12);
        EXPECT_NEAR(point[3], delta_nll(0, 0, unit, 2), 1e-12);
    }
    // random: no best predictor; the strongest test, lambda at N = 4, is drawn and said not to
    // be a finding.
    const auto strongest = dat_rows(out / "figures" / "run0_truncate_link1.dat");
    ASSERT_EQ(strongest.size(), static_cast<std::size_t>(kLayers * kHeads));
    for (const auto& point : strongest) {
        const int unit = static_cast<int>(point[0]) * kHeads + static_cast<int>(point[1]);
        EXPECT_EQ(point[2], 0.25) << "x is head_link.csv's lambda";
        EXPECT_NEAR(point[3], delta_nll(0, 1, unit, 4), 1e-12);
    }
    const std::string html = slurp(out / "index.html");
    EXPECT_NE(html.find("ΔNLL at N = 2 (the N of the strongest test)"), std::string::npos);
    EXPECT_NE(html.find("ΔNLL at N = 4 (the N of the strongest test)"), std::string::npos);
    EXPECT_NE(html.find("<td>0.25</td><td>[-0.5, 0.75]</td><td>[0.1, 0.6]</td><td>0.001</td>"
                        "<td>0.0125</td><td><b>[0.05, 0.5]</b></td><td>yes</td>"),
              std::string::npos)
        << "Spearman of rho0 at N = 2 with its three intervals, p and Holm p";
    EXPECT_NE(html.find("<td>reference</td>"), std::string::npos) << "dropped_mass";
    EXPECT_NE(html.find("attn, renorm no: the best predictor of a head's ΔNLL is "
                        "<code>rho0</code>: Spearman ρ = 0.25 at N = 2 across 4 heads, "
                        "simultaneous interval [0.05, 0.5] (level 1 − 0.05/12, Holm p = 0.0125), "
                        "which excludes 0 after adjustment for the 12 tests"),
              std::string::npos);
    EXPECT_NE(html.find("3 of the 12 tests exclude 0."), std::string::npos);
    EXPECT_NE(html.find("random, renorm no: no geometric quantity predicts a head's ΔNLL after "
                        "adjustment for the 12 tests (P, R, F, λ, ρ0, β at every N): the "
                        "strongest, <code>lambda</code>, has Spearman ρ = 0.25 at N = 4 across 4 "
                        "heads, simultaneous interval [-0.375, 0.625] (level 1 − 0.05/12, Holm p "
                        "= 0.5), which contains 0."),
              std::string::npos);
    EXPECT_NE(html.find("the strongest test of link_summary.json — not a finding"),
              std::string::npos);
    EXPECT_NE(html.find("Over 2 ≤ N &lt; n (at N = 1 and at N = n, every token kept, F = 1 for "
                        "every head: identities) the head-mean F is largest at N = 2 [95% "
                        "bootstrap interval 2, 4]; the knee (ΔNLL at "
                        "most 10% of its first value) is at N = 8, so the largest F comes before "
                        "the knee (its whole interval does)."),
              std::string::npos);
    EXPECT_EQ(html.find("mean |ρ|"), std::string::npos) << "the withdrawn mean |ρ| is no finding";
    EXPECT_NE(html.find("median N*"), std::string::npos);
    EXPECT_NE(html.find("<td>4</td><td>4</td><td>2 – 8</td><td>1</td>"), std::string::npos)
        << "4 heads, median of 2, 4, 8 and one head without N*";
}

TEST(TruncationReport, AMissingColumnInTruncateCsvIsAnErrorNamingTheFile) {
    const fs::path dir = make_truncate("missing", "all");
    std::string csv = slurp(dir / "truncate.csv");
    const std::string header = truncate_header();
    std::string damaged = header;
    damaged.replace(damaged.find(",kl_se"), 6, "");
    std::ostringstream rewritten;
    rewritten << damaged;
    std::istringstream rows(csv.substr(header.size()));
    std::string line;
    while (std::getline(rows, line)) {  // drop the same field (the 13th) from every row
        std::vector<std::string> fields;
        std::istringstream split(line);
        std::string field;
        while (std::getline(split, field, ','))
            fields.push_back(field);
        fields.erase(fields.begin() + 12);
        for (std::size_t i = 0; i < fields.size(); ++i)
            rewritten << (i ? "," : "") << fields[i];
        rewritten << '\n';
    }
    write_text(dir / "truncate.csv", rewritten.str());
    const std::string message = error_of({dir}, "missing_out");
    EXPECT_NE(message.find("truncate.csv"), std::string::npos) << message;
    EXPECT_NE(message.find("kl_se"), std::string::npos) << message;
}

TEST(TruncationReport, ABrokenLinkFileOrManifestIsAnErrorNamingIt) {
    const fs::path head = make_truncate("broken_link", "head");
    write_text(head / "geometry_link.csv", "policy,renorm,N,quantity,heads,spearman\n");
    EXPECT_NE(error_of({head}, "broken_link_out").find("geometry_link.csv"), std::string::npos);
    // The previous release's file, without the head-level tests, is refused naming a column.
    write_text(head / "geometry_link.csv",
               "policy,renorm,N,quantity,heads,spearman,ci_lo,ci_hi,replicates\n"
               "attn,no,2,rho0,4,0.25,-0.5,0.75,200\n");
    const std::string old_file = error_of({head}, "broken_link_old_out");
    EXPECT_NE(old_file.find("geometry_link.csv"), std::string::npos) << old_file;
    EXPECT_NE(old_file.find("p_value"), std::string::npos) << old_file;

    const fs::path version = make_truncate("version", "all");
    nlohmann::json manifest = nlohmann::json::parse(slurp(version / "manifest.json"));
    manifest["format_version"] = 1;  // an older release's folder
    write_text(version / "manifest.json", manifest.dump());
    EXPECT_NE(error_of({version}, "version_out").find("manifest.json"), std::string::npos);
}

TEST(TruncationReport, TwoFoldersOverlayTheirDeltaNllInOneFigure) {
    const fs::path a = make_truncate("overlay_a", "all", 0, "/models/tiny-a.bin");
    const fs::path b = make_truncate("overlay_b", "all", 1, "/models/Mistral-7B-v0.1/");
    const fs::path out = report({a, b}, "overlay_out");
    expect_figures(
        out, {"models_truncate_delta_nll", "run0_truncate_delta_nll", "run1_truncate_delta_nll"});
    // One series per folder and policy, in command-line order.
    const std::string titles[4] = {"tiny-a: attn", "tiny-a: random", "Mistral-7B-v0.1: attn",
                                   "Mistral-7B-v0.1: random"};
    for (int s = 0; s < 4; ++s) {
        const fs::path file =
            out / "figures" / ("models_truncate_delta_nll_s" + std::to_string(s) + ".dat");
        EXPECT_NE(slurp(file).find("# " + titles[s]), std::string::npos) << titles[s];
        const auto rows = dat_rows(file);
        ASSERT_EQ(rows.size(), kGrid.size());
        for (std::size_t i = 0; i < kGrid.size(); ++i)
            EXPECT_NEAR(rows[i][1], delta_nll(s / 2, s % 2, -1, kGrid[i]), 1e-12) << titles[s];
    }
    EXPECT_FALSE(fs::exists(out / "figures" / "models_truncate_delta_nll_s4.dat"));
    EXPECT_EQ(slurp(report({a}, "single_out") / "index.html").find("models_truncate"),
              std::string::npos)
        << "one folder draws no overlay";
}

TEST(TruncationReport, LinkSummaryIsAListOfEntriesPerPolicyAndRenorm) {
    const fs::path dir = make_truncate("keyed", "head");
    nlohmann::json entries = nlohmann::json::array();
    for (int p = 0; p < 2; ++p) {
        nlohmann::json entry = link_entry(1);
        entry["policy"] = kPolicies[p];
        entry["tests"] = 0;
        entry["heads"] = 4;
        entry["strongest"] = nullptr;
        entry["N_largest_F"] = 4;
        entry["N_largest_F_lo"] = 2;
        entry["N_largest_F_hi"] = 8;
        entry["N_knee"] = p == 0 ? nlohmann::json(nullptr) : nlohmann::json(4);
        entry["largest_F_before_knee"] = nullptr;
        entries.push_back(entry);
    }
    write_text(dir / "link_summary.json", entries.dump(2));
    const fs::path out = report({dir}, "keyed_out");
    const std::string html = slurp(out / "index.html");
    for (const char* policy : {"attn", "random"})
        EXPECT_NE(html.find(std::string(policy) +
                            ", renorm no: no head-level test could be made (4 heads: a test "
                            "needs at least 10 and a quantity that varies between them), so no "
                            "geometric quantity is named"),
                  std::string::npos)
            << policy;
    EXPECT_NE(html.find("largest at N = 4 [95% bootstrap interval 2, 8]; the knee (ΔNLL at most "
                        "10% of its first value) is not reached, so the largest F has no knee to "
                        "compare with."),
              std::string::npos);
    EXPECT_NE(html.find("is at N = 4, so the largest F cannot be placed before or after the "
                        "knee: its interval reaches across it."),
              std::string::npos);
    EXPECT_EQ(html.find("truncate_link"), std::string::npos) << "no test: no scatter";
    EXPECT_NE(html.find("at N = 2 ("), std::string::npos) << "the table at the first varying N";

    const std::string bad[] = {
        // not a column of head_link.csv
        R"([{"policy": "attn", "renorm": "no", "best_predictor": "top1", "heads": 4, "tests": 1,
             "tests_excluding_zero": 1, "strongest": {"quantity": "top1", "N": 2, "spearman": 1,
             "p_holm": 0, "adj_lo": 1, "adj_hi": 1}, "N_largest_F": 2, "N_largest_F_lo": 2,
             "N_largest_F_hi": 2, "N_knee": null, "largest_F_before_knee": null}])",
        // a best predictor that is not the strongest test
        R"([{"policy": "attn", "renorm": "no", "best_predictor": "rho0", "heads": 4, "tests": 1,
             "tests_excluding_zero": 0, "strongest": null, "N_largest_F": 2, "N_largest_F_lo": 2,
             "N_largest_F_hi": 2, "N_knee": null, "largest_F_before_knee": null}])",
        // the withdrawn form: no tests, no strongest
        R"([{"policy": "attn", "renorm": "no", "best_predictor": "lambda", "N_largest_F": 4}])",
        R"({"attn": {"no": {"best_predictor": "lambda"}}})",    // not a list
        R"([{"policy": "attn", "best_predictor": "lambda"}])",  // no renorm
    };
    for (const std::string& text : bad) {
        write_text(dir / "link_summary.json", text);
        EXPECT_NE(error_of({dir}, "keyed_bad_out").find("link_summary.json"), std::string::npos)
            << text;
    }
}
