// The flags shared by extract, truncate and normalization; see window_options.hpp.
#include "app/window_options.hpp"

#include <algorithm>

#include "common/errors.hpp"

namespace attngeo::cli {

void add_window_options(CLI::App& app, empirical::ExtractRequest* r) {
    app.add_option("--model", r->model, "Hugging Face folder, llama2.c .bin or .gguf")->required();
    app.add_option("--tokens", r->tokens_file,
                   "Pre-tokenised documents: one per line, space-separated ids");
    app.add_option("--corpus", r->corpus,
                   "Text corpus (blank-line separated) or JSONL with a text field");
    app.add_option("--out", r->out, "Output folder")->required();
    app.add_option("--context", r->context, "Window length: BOS + context - 1 tokens")
        ->capture_default_str();
    app.add_option("--docs", r->docs,
                   "Documents to use (0 = all); shorter ones are skipped and counted")
        ->capture_default_str();
    app.add_option("--bos", r->bos,
                   "auto: add the model's BOS unless the document starts with it; yes: always; "
                   "no: never (a model without a BOS id needs no)")
        ->check(CLI::IsMember({"auto", "yes", "no"}))
        ->capture_default_str();
    app.add_option("--stride", r->stride,
                   "More windows per document, this many tokens apart (0 = one)")
        ->capture_default_str();
    app.add_option("--seed", r->seed, "Document order: 0 = file order, else a seeded shuffle")
        ->capture_default_str();
    app.add_option("--dtype", r->dtype, "float32, bfloat16, float16 or float64")
        ->capture_default_str();
    app.add_option("--device", r->device, "cpu, cuda or cuda:k")->capture_default_str();
    app.add_flag("--quiet", r->quiet, "No progress on stderr");
}

int parse_thread_count(const std::string& text) {
    const bool digits =
        !text.empty() && text.size() <= 6 &&
        std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
    const int value = digits ? std::stoi(text) : 0;
    if (value < 1) throw InputError("--threads: '" + text + "', expected a whole number >= 1");
    return value;
}


}  // namespace attngeo::cli
