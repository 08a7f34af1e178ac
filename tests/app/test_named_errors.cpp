// Error messages that name what the user gave: a run folder's manifest key (not a flag) through
// merge, the file of a damaged run folder through report (not just the folder), a table that
// misses a row of the manifest's N grid, the JSON file of an extract or compare folder with a
// value of the wrong type, and the folder a run wrote, quoted.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "tests/support/test_files.hpp"

namespace fs = std::filesystem;

namespace {

using attngeo::test_support::CliResult;
using attngeo::test_support::slurp;

fs::path scratch() {
    return attngeo::test_support::scratch_folder("named_errors");
}

CliResult run(const std::string& args) {
    return attngeo::test_support::run_program(ATTNGEO_EXE, args, scratch());
}

// Exit code 2 and exactly one line on stderr.
void expect_one_line(const CliResult& r) {
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "not one line: " << r.err;
}

// A small simulate folder (L = 31: N = 1, 2, 4, 8, 16, 31 with --N pow2), made once.
const fs::path& good_run() {
    static const fs::path dir = [] {
        const fs::path d = scratch() / "good";
        fs::remove_all(d);
        const CliResult r =
            run("simulate --L 31 --T1 4 --T2 24 --trials 20 --N pow2 --quiet --out " + d.string());
        EXPECT_EQ(r.exit_code, 0) << r.err;
        return d;
    }();
    return dir;
}

// A copy of good_run() named `name` with `edit` applied to its file `file`.
fs::path damaged(const std::string& name, const std::string& file,
                 const std::function<void(std::string&)>& edit) {
    const fs::path dir = scratch() / name;
    fs::remove_all(dir);
    fs::copy(good_run(), dir);
    std::string text = slurp(dir / file);
    edit(text);
    std::ofstream(dir / file, std::ios::trunc) << text;
    return dir;
}

void replace(std::string& text, const std::string& from, const std::string& to) {
    const std::size_t at = text.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    text.replace(at, from.size(), to);
}

// Removes the data row of `text` (a CSV) whose first field is `first`.
void erase_row(std::string& text, const std::string& first) {
    const std::size_t at = text.find("\n" + first + ",");
    ASSERT_NE(at, std::string::npos) << first;
    text.erase(at + 1, text.find('\n', at + 1) - at);
}

}  // namespace

// A manifest value out of range is named as the manifest's key, once prefixed by the command:
// it was `attngeo merge: merge: '…': --d: …`, a flag never given.
TEST(NamedErrors, MergeNamesTheManifestKeyNotAFlag) {
    const fs::path dir = damaged("huge_d", "manifest.json", [](std::string& t) {
        replace(t, "\"d\": 128.0", "\"d\": 1.8e19");
    });
    const fs::path out = scratch() / "merged";
    const CliResult r = run("merge " + dir.string() + " --out " + out.string());
    expect_one_line(r);
    EXPECT_EQ(r.err.rfind("attngeo merge: '" + (dir / "manifest.json").string() +
                              "': d = 1.8e+19: expected an integer d >= 1 (at most 1e6) or inf",
                          0),
              0u)
        << r.err;
    EXPECT_EQ(r.err.find("--d"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(out));
}

// simulate closes with the folder quoted, as extract and compare do, on stderr and stdout.
TEST(NamedErrors, SimulateSaysWhichFolderItWroteQuoted) {
    const fs::path out = scratch() / "quoted";
    fs::remove_all(out);
    const CliResult r = run("simulate --L 31 --T1 4 --T2 24 --trials 10 --out " + out.string());
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("wrote '" + out.string() + "'"), std::string::npos) << r.err;
    EXPECT_NE(r.out.find("wrote '" + out.string() + "'\n"), std::string::npos) << r.out;
}

// report on a damaged table or manifest names that file, not only the folder (it was `--in
// 'D': a file of the run folder is damaged (stoi)` and `'D': (/config/trials) …`).
TEST(NamedErrors, ReportNamesTheDamagedFile) {
    struct Case {
        std::string name, file;
        std::function<void(std::string&)> edit;
        std::vector<std::string> needles;
    } cases[] = {
        {"n_cell",
         "simulate.csv",
         [](std::string& t) { replace(t, "\n4,", "\nfour,"); },
         {"simulate.csv' line", "column 'N'", "'four' is not an integer"}},
        {"mean_cell",
         "simulate.csv",
         [](std::string& t) { replace(t, "\n8,20,", "\n8,20,x"); },
         {"simulate.csv' line"}},
        {"bounds_n",
         "bounds.csv",
         [](std::string& t) { replace(t, "\n16,paper,", "\n1x6,paper,"); },
         {"bounds.csv' line", "column 'N'"}},
        {"manifest_key",
         "manifest.json",
         [](std::string& t) { replace(t, "\"trials\": 20", "\"trials\": \"twenty\""); },
         {"manifest.json'", "trials"}},
    };
    for (const Case& c : cases) {
        const fs::path dir = damaged("report_" + c.name, c.file, c.edit);
        const fs::path out = scratch() / ("report_out_" + c.name);
        const CliResult r = run("report --in " + dir.string() + " --out " + out.string());
        expect_one_line(r);
        EXPECT_NE(r.err.find("'" + (dir / c.file).string()), std::string::npos)
            << c.name << ": " << r.err;
        for (const auto& needle : c.needles)
            EXPECT_NE(r.err.find(needle), std::string::npos) << c.name << ": " << r.err;
        EXPECT_EQ(r.err.find("stoi"), std::string::npos) << r.err;
        EXPECT_FALSE(fs::exists(out / "index.html")) << c.name;
    }
}

// A row of the manifest's N grid deleted from simulate.csv or bounds.csv (N >= 4 used to pass:
// the report was built on the incomplete table) is one line naming the file and the N.
TEST(NamedErrors, ReportRefusesTablesMissingAnNOfTheGrid) {
    const fs::path sim =
        damaged("no_n4", "simulate.csv", [](std::string& t) { erase_row(t, "4"); });
    const fs::path bounds =
        damaged("no_n16", "bounds.csv", [](std::string& t) { erase_row(t, "16,scale-invariant"); });
    for (const auto& [dir, file, N] :
         {std::tuple{sim, "simulate.csv", "N = 4"}, std::tuple{bounds, "bounds.csv", "N = 16"}}) {
        const CliResult r =
            run("report --in " + dir.string() + " --out " + (scratch() / "missing_out").string());
        expect_one_line(r);
        EXPECT_NE(r.err.find("'" + (dir / file).string() + "': no row for " + N), std::string::npos)
            << r.err;
    }
    // The undamaged folder still gives a report.
    const CliResult ok =
        run("report --in " + good_run().string() + " --out " + (scratch() / "ok_out").string());
    EXPECT_EQ(ok.exit_code, 0) << ok.err;
}

namespace {

// A folder holding only `files` (header-only tables and a manifest.json): enough for report to
// reach the manifest's values before drawing anything.
fs::path folder_of(const std::string& name,
                   const std::vector<std::pair<std::string, std::string>>& files) {
    const fs::path dir = scratch() / name;
    fs::remove_all(dir);
    fs::create_directories(dir);
    for (const auto& [file, text] : files)
        std::ofstream(dir / file) << text;
    return dir;
}

}  // namespace

// A value of the wrong type in an extract or compare folder's manifest.json is named as that
// file and the value's pointer (it was `'D': (/git_commit) type must be string…`, the folder);
// an extract folder is read by compare's strict reader, which checks the model's shape first.
TEST(NamedErrors, ReportNamesTheJsonFileOfExtractAndCompareFolders) {
    const fs::path extract = folder_of(
        "extract_bad_commit",
        {{"heads.csv",
          "layer,head,cv_positional,cv_pooled,lambda,rho0,norm_median,m_sink,m_last,m_rest,"
          "regime\n"},
         {"by_position.csv", "layer,head,pos,norm_mean,alpha_mean,contrib_mean\n"},
         {"pr.csv", "layer,head,N,P_mean,R_mean\n"},
         {"manifest.json",
          R"({"format_version": 4, "kind": "extract", "model": {"layers": "2"}})"}});
    const fs::path compare = folder_of(
        "compare_bad_count_per",
        {{"fits.csv", "layer,head,beta,mae,beta_offset,c_inf,mae_offset,cv_positional,cv_pooled\n"},
         {"profile.csv", "layer,head\n"},
         {"profile_global.csv", "layer,head\n"},
         {"envelope.csv", "variant,N,P_lower,P_upper,R_lower,R_upper,P_mean,R_mean,heads\n"},
         {"agreement.csv", "variant\n"},
         {"violations.csv", "variant\n"},
         {"corr_rho0.csv", "N,corr\n"},
         {"kappa.json", "{}"},
         {"manifest.json",
          R"({"format_version": 4, "kind": "compare", "parameters": {"count_per": 5}})"}});
    for (const auto& [dir, pointer] :
         {std::pair{extract, "(/model/layers)"}, std::pair{compare, "(/parameters/count_per)"}}) {
        const fs::path out = scratch() / ("json_out_" + dir.filename().string());
        const CliResult r = run("report --in " + dir.string() + " --out " + out.string());
        expect_one_line(r);
        EXPECT_NE(r.err.find("'" + (dir / "manifest.json").string() + "': " + pointer),
                  std::string::npos)
            << r.err;
        EXPECT_FALSE(fs::exists(out / "index.html")) << r.err;
    }
}
