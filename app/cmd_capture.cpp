// `attngeo capture`: a real checkpoint's attention rows and value states through libtorch
// (docs/design.md §6); the work is in empirical/model/capture.hpp (the CLI stays free of torch
// headers).
#include "app/commands.hpp"
#include "empirical/model/capture.hpp"

namespace attngeo::cli {

Runner register_capture(CLI::App& app) {
    auto r = std::make_shared<empirical::CaptureRequest>();
    app.add_option("--model", r->model,
                   "Hugging Face folder (config.json + safetensors), llama2.c .bin or .gguf")
        ->required();
    app.add_option("--tokens", r->tokens_file,
                   "Token ids: one sequence per line, space-separated, all lines the same length")
        ->required();
    app.add_option("--out", r->out, "Output FILE.safetensors")->required();
    app.add_option("--queries", r->queries, "Attention rows to capture: last or all")
        ->check(CLI::IsMember({"last", "all"}))
        ->capture_default_str();
    app.add_option("--dtype", r->dtype,
                   "Weights and activations: float32, bfloat16, float16 or float64 (alpha is "
                   "always float32)")
        ->check(CLI::IsMember({"float32", "bfloat16", "float16", "float64"}))
        ->capture_default_str();
    app.add_option("--device", r->device, "cpu, cuda or cuda:k")->capture_default_str();
    app.add_flag("--hidden-states", r->hidden_states,
                 "Also write hidden_states.{0..L} and layer_outputs.{l}");
    app.add_option("--sliding-window", r->sliding_window,
                   "Override the config's sliding window (keys per query; 0 = none)");
    app.add_option("--max-output-gb", r->max_output_gb,
                   "Refuse, before the forward, an output larger than this (--queries all "
                   "writes T^2 floats per head and layer)")
        ->check(CLI::PositiveNumber)
        ->capture_default_str();
    app.footer(
        "Writes logits [B,T,V], attentions.{l} [B,H,Tq,T], values.{l} [B,H_kv,T,d_head] (float32) "
        "and input_ids.");
    return [r] { empirical::run_capture(*r); };
}

}  // namespace attngeo::cli
