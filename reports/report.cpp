// Report assembly: every folder's sections, figures rendered, one self-contained index.html and
// the list of the files it wrote.
#include "reports/report.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "common/json_file.hpp"
#include "common/output_folder.hpp"
#include "common/run_schema.hpp"

#include "attngeo/version.hpp"
#include "common/atomic_file.hpp"
#include "common/errors.hpp"
#include "common/manifest_values.hpp"
#include "reports/claims_section.hpp"
#include "reports/html.hpp"
#include "reports/models_figures.hpp"

namespace fs = std::filesystem;

namespace attngeo::reports {
namespace {

std::string slurp(const fs::path& path) {
    std::ifstream in(path);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// gnuplot's SVG starts with an XML prologue and DOCTYPE, which inline SVG must not have.
std::string inline_svg(const std::string& svg) {
    const auto start = svg.find("<svg");
    return start == std::string::npos ? svg : svg.substr(start);
}

const char* kStyle = R"(
body { font-family: -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; margin: 2em auto; max-width: 1100px; color: #222; line-height: 1.45; }
h1 { font-size: 1.6em; } h2 { border-bottom: 1px solid #ddd; padding-bottom: .2em; margin-top: 2em; } h3 { margin-top: 1.5em; }
table { border-collapse: collapse; margin: .8em 0; font-size: .9em; }
th, td { border: 1px solid #ccc; padding: .25em .6em; text-align: right; }
th { background: #f3f3f3; } td:first-child, th:first-child { text-align: left; }
figure { margin: 1.2em 0; } figcaption { font-size: .9em; color: #444; max-width: 860px; }
.files { font-size: .85em; color: #555; } .warn { background: #fff4e5; border-left: 4px solid #f0a030; padding: .5em .8em; }
.bad { color: #b00020; font-weight: bold; } .yes { color: #1b7f3b; font-weight: bold; } .dim { color: #888; } code { background: #f5f5f5; padding: 0 .2em; }
ul.decisions li { margin-bottom: .3em; font-size: .9em; }
)";

// Every folder's manifest, checked for a kind with a report, before anything is built.
std::vector<RunFolder> read_run_folders(const std::vector<std::string>& run_dirs) {
    if (run_dirs.empty()) throw InputError("--in: no run folders given");
    std::vector<RunFolder> runs;
    for (std::size_t i = 0; i < run_dirs.size(); ++i)
        runs.push_back(read_run_folder(run_dirs[i], static_cast<int>(i)));
    return runs;
}

using RunSections = std::vector<std::pair<const RunFolder*, std::vector<Section>>>;

RunSections build_sections(const std::vector<RunFolder>& runs) {
    RunSections parts;
    for (const auto& run : runs)
        parts.emplace_back(&run, run_sections(run));
    return parts;
}

// One figure rendered into `figures_dir` and its <figure> element: the inline SVG (or why it
// is missing), the caption and links to its files.
std::string figure_html(const Figure& figure, const fs::path& figures_dir,
                        const std::string& gnuplot) {
    std::ostringstream body;
    std::string error;
    const bool drawn = render_figure(figure, figures_dir.string(), gnuplot, error);
    body << "<figure id=\"" << figure.id << "\">\n";
    if (drawn) {
        body << inline_svg(slurp(figures_dir / (figure.id + ".svg"))) << "\n";
    } else {
        body << "<p class=\"warn\">" << html_escape(figure.title) << ": not drawn — "
             << html_escape(gnuplot.empty() ? "gnuplot is missing" : error) << ".</p>\n";
    }
    body << "<figcaption><b>" << html_escape(figure.title) << ".</b> " << figure.caption
         << "<br><span class=\"files\">Files: ";
    if (drawn) {
        body << "<a href=\"figures/" << figure.id << ".svg\">SVG</a> · <a href=\"figures/"
             << figure.id << ".png\">PNG</a> · ";
    }
    body << "<a href=\"figures/" << figure.id << ".gp\">gnuplot script</a>";
    for (const auto& [name, content] : figure.data)
        body << " · <a href=\"figures/" << name << "\">" << name << "</a>";
    body << "</span></figcaption>\n</figure>\n";
    return body.str();
}

std::string missing_gnuplot_note() {
    std::ostringstream note;
    note << "<p class=\"warn\">Figures are missing: gnuplot was not found"
         << (std::getenv("ATTNGEO_GNUPLOT") ? " (ATTNGEO_GNUPLOT points to a missing program)"
                                            : " on PATH")
         << ". Install Debian's <code>gnuplot-nox</code> and run <code>attngeo report</code> "
            "again; the scripts "
            "and data of every figure are in <code>figures/</code> already.</p>\n";
    return note.str();
}

// index.html around the table of contents and the body.
std::string page(const std::string& toc, const std::string& body) {
    std::ostringstream html;
    html << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
         << "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
         << "<title>attngeo report</title>\n<style>" << kStyle << "</style></head><body>\n"
         << "<h1>attngeo report</h1>\n<p>Geometry of token selection in multi-head attention: "
            "Monte Carlo and "
            "measurements against the envelopes of Theorems 1–2 and Corollary 1. attngeo "
         << kVersion << " (commit " << kGitCommit
         << "). Every figure is drawn from the CSV files of its run; its "
            "gnuplot script and data are linked under it.</p>\n<ul>"
         << toc << "</ul>\n"
         << body << "</body></html>\n";
    return html.str();
}

// Renders sections under one <h2> each: the body and its table-of-contents entry.
struct PageWriter {
    std::ostringstream body, toc;
    int section_number = 0;
    fs::path figures_dir;
    std::string gnuplot;

    void part(const std::string& anchor, const std::string& heading_html,
              const std::string& toc_html, const std::vector<Section>& sections) {
        body << "<h2 id=\"" << anchor << "\">" << heading_html << "</h2>\n";
        toc << "<li><a href=\"#" << anchor << "\">" << toc_html << "</a><ul>";
        for (const Section& section : sections) {
            const std::string id = "s" + std::to_string(section_number++);
            toc << "<li><a href=\"#" << id << "\">" << html_escape(section.title) << "</a></li>";
            body << "<h3 id=\"" << id << "\">" << html_escape(section.title) << "</h3>\n"
                 << section.html_before;
            for (const Figure& figure : section.figures)
                body << figure_html(figure, figures_dir, gnuplot);
            body << section.html_after;
        }
        toc << "</ul></li>";
    }
};

// ---- the report's own files --------------------------------------------------------------

// Lists what a report wrote, so the next report into the same folder removes what it no longer
// writes and nothing else (a report may share its folder with a run or a user's notes).
const char* const kFileList = schema::file::report_files;

// Every file under the staging folder, as paths relative to it ("figures/run0_P.svg").
std::set<std::string> staged_files(const std::string& staging) {
    std::set<std::string> files;
    for (const auto& entry : fs::recursive_directory_iterator(staging))
        if (entry.is_regular_file())
            files.insert(fs::relative(entry.path(), staging).generic_string());
    return files;
}

std::string file_list_json(const std::set<std::string>& files) {
    nlohmann::json list = manifest_header("report-files");
    list["note"] =
        "The files attngeo report wrote into this folder; the next report into it removes "
        "those it no longer writes.";
    list["files"] = files;
    return list.dump(2) + "\n";
}

// A name a report writes under figures/: "run<k>_…" or "models_…" with a figure's extension.
bool report_figure_name(const std::string& name) {
    static const std::regex figure(R"((run[0-9]+|models)_[A-Za-z0-9_.-]+\.(svg|png|gp|dat|log))");
    return std::regex_match(name, figure);
}

// The files an earlier report wrote into `out`: its report_files.json, or for a report written
// before that list existed, the files of figures/ named the way reports name figures.
std::set<std::string> earlier_report_files(const std::string& out) {
    std::set<std::string> files;
    const fs::path list = fs::path(out) / kFileList;
    std::error_code ec;
    if (fs::is_regular_file(list, ec)) {
        try {
            const nlohmann::json earlier = read_json_file(list.string(), "a report's file list");
            for (const auto& file : earlier.at("files"))
                if (file.is_string()) files.insert(file.get<std::string>());
        } catch (const std::exception&) {
            files.clear();  // a damaged list names nothing for sure: remove nothing
        }
        return files;
    }
    for (const auto& entry : fs::directory_iterator(fs::path(out) / "figures", ec))
        if (entry.is_regular_file(ec) && report_figure_name(entry.path().filename().string()))
            files.insert("figures/" + entry.path().filename().string());
    return files;
}

// Removes the files of `earlier` that `written` lacks; only plain files directly in figures/
// with a report figure's name, whatever a (hand-edited) list says.
void remove_stale_files(const std::string& out, const std::set<std::string>& earlier,
                        const std::set<std::string>& written) {
    for (const std::string& file : earlier) {
        if (written.count(file) || file.rfind("figures/", 0) != 0) continue;
        const std::string name = file.substr(std::string("figures/").size());
        if (!report_figure_name(name)) continue;
        const fs::path path = fs::path(out) / "figures" / name;
        std::error_code ec;
        if (fs::is_regular_file(fs::symlink_status(path, ec))) fs::remove(path, ec);
    }
}

}  // namespace

std::string write_report(const std::vector<std::string>& run_dirs, const std::string& out_dir,
                         const std::vector<std::string>& labels) {
    const std::vector<RunFolder> runs = read_run_folders(run_dirs);
    const std::vector<std::string> run_names = run_labels(runs, labels);
    // Build every section before writing anything.
    const RunSections parts = build_sections(runs);
    const std::vector<Section> claims = claims_sections(runs, run_names);
    std::vector<Section> across_models = models_sections(runs, run_names);
    const std::vector<Section> across_truncations = truncate_overlay_sections(runs, run_names);
    across_models.insert(across_models.end(), across_truncations.begin(), across_truncations.end());

    // Figures and index.html appear together or not at all (the folder may be the run's own).
    OutputFolder folder(out_dir, "--out");
    PageWriter page_writer;
    page_writer.figures_dir = fs::path(folder.staging()) / "figures";
    std::error_code ec;
    fs::create_directories(page_writer.figures_dir, ec);
    if (ec) throw InputError("--out '" + out_dir + "': cannot create folder: " + ec.message());
    page_writer.gnuplot = find_gnuplot();

    if (page_writer.gnuplot.empty()) page_writer.body << missing_gnuplot_note();
    if (!claims.empty())
        page_writer.part("claims", "The paper's claims", "The paper's claims", claims);
    if (!across_models.empty())
        page_writer.part("models", "Across models", "Across models", across_models);
    for (const auto& [run, sections] : parts) {
        const std::string kind = run->manifest.at("kind");
        page_writer.part("run" + std::to_string(run->index),
                         html_escape(kind) + ": <code>" + html_escape(run->dir) + "</code>",
                         html_escape(kind) + ": " + html_escape(run->dir), sections);
    }
    folder.write("index.html", page(page_writer.toc.str(), page_writer.body.str()));
    const std::set<std::string> written = staged_files(folder.staging());
    folder.write(kFileList, file_list_json(written));
    const std::set<std::string> earlier = earlier_report_files(folder.destination());
    folder.commit();
    remove_stale_files(folder.destination(), earlier, written);
    return (fs::path(out_dir) / "index.html").string();
}

}  // namespace attngeo::reports
