// attngeo: the command-line entry point. Parses, dispatches to one subcommand, and turns
// every exception into one line on stderr: exit 2 for bad input, 1 for internal errors.
#include <iostream>
#include <map>
#include <stdexcept>

#include "app/commands.hpp"
#include "attngeo/version.hpp"
#include "common/errors.hpp"

namespace attngeo::cli {
namespace {
std::string g_command_line;
}
const std::string& command_line() {
    return g_command_line;
}
}  // namespace attngeo::cli

int main(int argc, char** argv) {
    for (int i = 0; i < argc; ++i) {
        attngeo::cli::g_command_line += (i ? " " : "") + std::string(argv[i]);
    }
    CLI::App app{
        "attngeo: the geometry of token selection in multi-head attention.\n"
        "Precision/Recall of top-N selection in value space, the bounds of Theorems 1-2,\n"
        "Monte Carlo checks and real-model measurements.",
        "attngeo"};
    app.set_version_flag("--version",
                         std::string(attngeo::kVersion) + " (" + attngeo::kGitCommit + ")");
    app.require_subcommand(1);
    std::map<CLI::App*, attngeo::cli::Runner> runners;
    auto add = [&](attngeo::cli::Runner (*reg)(CLI::App&), const char* name, const char* help) {
        CLI::App* sub = app.add_subcommand(name, help);
        runners[sub] = reg(*sub);
    };
    add(attngeo::cli::register_metrics, "metrics",
        "P, R, F of top-N selection for one head's points");
    add(attngeo::cli::register_bounds, "bounds", "the envelopes of Theorems 1-2 and Corollary 1");
    add(attngeo::cli::register_simulate, "simulate",
        "Monte Carlo E[P], E[R], E[F] under Assumptions 1-3 with the bounds");
    add(attngeo::cli::register_sweep, "sweep", "simulate over a cartesian grid of parameters");
    add(attngeo::cli::register_merge, "merge", "combine shard run folders exactly");
    add(attngeo::cli::register_report, "report",
        "figures and an offline HTML report from run folders");
    add(attngeo::cli::register_compare, "compare",
        "fits, envelopes and correlations of an extract folder");
#ifdef ATTNGEO_WITH_EMPIRICAL
    add(attngeo::cli::register_capture, "capture",
        "attention rows and value states of a real checkpoint (libtorch)");
    add(attngeo::cli::register_generate, "generate",
        "greedy text generation, to see a checkpoint is alive");
    add(attngeo::cli::register_extract, "extract",
        "per-head statistics of a checkpoint over a corpus (libtorch)");
    add(attngeo::cli::register_truncate, "truncate",
        "keep each head's top-N tokens and measure the next-token loss (libtorch)");
    add(attngeo::cli::register_normalization, "normalization",
        "the predecessor paper's distance, critical N, separability and softmax sensitivity "
        "over every query position (libtorch)");
#endif

    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
        std::cerr << "attngeo: " << e.what() << " (see --help)\n";
        return 2;
    }
    CLI::App* chosen = app.get_subcommands().front();
    try {
        runners.at(chosen)();
        return 0;
    } catch (const attngeo::Interrupted& e) {
        std::cerr << "attngeo " << chosen->get_name() << ": " << e.what() << "\n";
        return 130;
    } catch (const attngeo::InputError& e) {
        // Library messages say which operation failed ("merge: ..."), for the Python bindings;
        // here the command already says it.
        std::string what = e.what();
        const std::string operation = chosen->get_name() + ": ";
        if (what.rfind(operation, 0) == 0) what.erase(0, operation.size());
        std::cerr << "attngeo " << chosen->get_name() << ": " << what << "\n";
        return 2;
    } catch (const std::domain_error& e) {
        // theory/ rejects invalid parameters; at the CLI those came from the user's flags.
        std::cerr << "attngeo " << chosen->get_name() << ": invalid parameters: " << e.what()
                  << "\n";
        return 2;
    } catch (const std::exception& e) {
        // One line, like every error: libraries (libtorch) append backtraces after the first.
        std::string what = e.what();
        what = what.substr(0, what.find('\n'));
        std::cerr << "attngeo " << chosen->get_name() << ": internal error: " << what << "\n";
        return 1;
    }
}
