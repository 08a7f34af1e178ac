// `attngeo generate`: greedy text generation, to see a checkpoint is alive; the work is in
// empirical/model/capture.hpp (the CLI stays free of torch headers).
#include "app/commands.hpp"
#include "empirical/model/capture.hpp"

namespace attngeo::cli {

Runner register_generate(CLI::App& app) {
    auto r = std::make_shared<empirical::GenerateRequest>();
    app.add_option("--model", r->model, "Hugging Face folder, llama2.c .bin or .gguf")->required();
    app.add_option("--prompt", r->prompt, "Prompt text (needs a llama2.c tokenizer)");
    app.add_option("--tokens", r->tokens_file,
                   "Prompt token ids (first line), instead of --prompt");
    app.add_option("--tokenizer", r->tokenizer,
                   "llama2.c tokenizer.bin (default: tokenizer.bin or tok*.bin beside the model)");
    app.add_option("-n,--steps", r->steps,
                   "Positions, counting BOS and the prompt (as llama2.c's run.c -n)")
        ->capture_default_str();
    app.add_option("--temperature", r->temperature,
                   "Sampling temperature; 0 = greedy (the only mode)")
        ->capture_default_str();
    app.add_option("--dtype", r->dtype, "float32, bfloat16 or float16")->capture_default_str();
    app.add_option("--device", r->device, "cpu, cuda or cuda:k")->capture_default_str();
    return [r] { empirical::run_generate(*r); };
}

}  // namespace attngeo::cli
