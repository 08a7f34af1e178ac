// The subcommands of the thin CLI. Each registers its flags on `app` and returns the function
// that runs it once parsing has succeeded.
#pragma once
#include <CLI/CLI.hpp>
#include <functional>
#include <string>

namespace attngeo::cli {

using Runner = std::function<void()>;

Runner register_metrics(CLI::App& app);
Runner register_bounds(CLI::App& app);
Runner register_simulate(CLI::App& app);
Runner register_sweep(CLI::App& app);
Runner register_merge(CLI::App& app);
Runner register_report(CLI::App& app);
Runner register_compare(CLI::App& app);
Runner register_capture(CLI::App& app);
Runner register_generate(CLI::App& app);
Runner register_extract(CLI::App& app);
Runner register_truncate(CLI::App& app);
Runner register_normalization(CLI::App& app);

// The command line as typed, for manifests.
const std::string& command_line();

}  // namespace attngeo::cli
