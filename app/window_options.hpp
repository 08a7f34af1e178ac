// The flags of the commands that run a checkpoint over a corpus's windows (extract, truncate,
// normalization): what is read, and --threads.
#pragma once
#include <CLI/CLI.hpp>
#include <string>

#include "empirical/extract/extract.hpp"

namespace attngeo::cli {

// Registers --model --tokens --corpus --out --context --docs --bos --stride --seed --dtype
// --device --quiet on `app`, writing into `r`.
void add_window_options(CLI::App& app, empirical::ExtractRequest* r);

// --threads K: a whole number >= 1 (the default, every core, is the flag left out); an
// InputError naming the flag otherwise.
int parse_thread_count(const std::string& text);

}  // namespace attngeo::cli
