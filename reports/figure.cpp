// Writing and rendering gnuplot figures; see figure.hpp.
#include "reports/figure.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "common/atomic_file.hpp"

namespace fs = std::filesystem;

namespace attngeo::reports {
namespace {

std::string shell_quote(const std::string& s) {
    std::string out = "'";
    for (char c : s)
        out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return out + "'";
}

}  // namespace

std::string find_gnuplot() {
    if (const char* forced = std::getenv("ATTNGEO_GNUPLOT")) {
        return ::access(forced, X_OK) == 0 ? std::string(forced) : std::string();
    }
    const char* path = std::getenv("PATH");
    std::istringstream dirs(path ? path : "/usr/bin:/bin");
    std::string dir;
    while (std::getline(dirs, dir, ':')) {
        const fs::path candidate = fs::path(dir.empty() ? "." : dir) / "gnuplot";
        if (::access(candidate.c_str(), X_OK) == 0) return candidate.string();
    }
    return "";
}

bool render_figure(const Figure& figure, const std::string& figures_dir, const std::string& gnuplot,
                   std::string& error) {
    for (const auto& [name, content] : figure.data)
        write_file_atomic((fs::path(figures_dir) / name).string(), content);
    // One script that draws both outputs, so the file a user edits is the file we ran.
    std::ostringstream script;
    script << "# " << figure.title << "\n# Run `gnuplot " << figure.id
           << ".gp` in this folder to redraw " << figure.id << ".svg and " << figure.id << ".png.\n"
           << "set encoding utf8\n"
           << "do for [out in \"svg png\"] {\n"
           << "  if (out eq \"svg\") { set terminal svg size 860,600 dynamic enhanced font "
              "'Helvetica,13' background rgb 'white'; set output '"
           << figure.id
           << ".svg' } else { set terminal pngcairo size 1290,900 enhanced font 'Helvetica,13' "
              "background rgb 'white'; set output '"
           << figure.id << ".png' }\n"
           << figure.script << "\n  unset output\n}\n";
    const std::string script_path = (fs::path(figures_dir) / (figure.id + ".gp")).string();
    write_file_atomic(script_path, script.str());
    if (gnuplot.empty()) return false;
    const std::string command = "cd " + shell_quote(figures_dir) + " && " + shell_quote(gnuplot) +
                                " " + shell_quote(figure.id + ".gp") + " > " +
                                shell_quote(figure.id + ".log") + " 2>&1";
    const int status = std::system(command.c_str());
    if (status != 0 || !fs::exists(fs::path(figures_dir) / (figure.id + ".svg")) ||
        !fs::exists(fs::path(figures_dir) / (figure.id + ".png"))) {
        error = "gnuplot failed on " + figure.id + ".gp (see figures/" + figure.id + ".log)";
        return false;
    }
    fs::remove(fs::path(figures_dir) / (figure.id + ".log"));
    return true;
}

}  // namespace attngeo::reports
