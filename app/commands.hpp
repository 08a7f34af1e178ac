// The subcommands of the thin CLI. Each registers its flags on `app` and returns the function
// that runs it once parsing has succeeded.
#pragma once
#include <CLI/CLI.hpp>
#include <functional>

namespace attngeo::cli {

using Runner = std::function<void()>;

Runner register_metrics(CLI::App& app);
Runner register_bounds(CLI::App& app);

}  // namespace attngeo::cli
