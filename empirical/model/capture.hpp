// The torch-free face of empirical/ for the CLI: `attngeo capture` and `attngeo generate`.
// (The CLI never includes torch headers; these functions do the work inside empirical/.)
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "empirical/tokenizers/token_file.hpp"

namespace attngeo::empirical {

struct CaptureRequest {
    std::string model;              // HF folder, llama2.c .bin or .gguf
    std::string tokens_file;        // one sequence per line, all the same length
    std::string out;                // FILE.safetensors
    std::string queries = "last";   // last | all
    std::string dtype = "float32";  // float32 | bfloat16 | float16
    std::string device = "cpu";     // cpu | cuda[:k]
    bool hidden_states = false;     // also hidden_states.{0..L} and layer_outputs.{l}
    int sliding_window = -1;        // override the config's window (keys per query); −1 = keep
    double max_output_gb = 8;       // refuse, before the forward, an output larger than this
};
// Writes `logits` [B,T,V], `attentions.{l}` [B,H,Tq,T], `values.{l}` [B,H_kv,T,d_head]
// (float32) and `input_ids` [B,T] (I64) to `out`, atomically.
void run_capture(const CaptureRequest& request);

struct GenerateRequest {
    std::string model;
    std::string prompt;       // text (needs a tokenizer), or
    std::string tokens_file;  // one line of prompt ids
    std::string
        tokenizer;    // llama2.c tokenizer.bin; default: tokenizer.bin / tok*.bin beside the model
    int steps = 200;  // like run.c's -n: positions including BOS and the prompt
    double temperature = 0;  // only 0 (greedy) is supported
    std::string dtype = "float32";
    std::string device = "cpu";
};
// Greedy generation, printing decoded text as llama2.c's run.c does. Returns the text.
std::string run_generate(const GenerateRequest& request);

// A random-weight LLaMA of a given size, for benchmarking the forward with and without
// capture (bench/bench_capture.cpp) without torch headers outside empirical/.
struct SyntheticLlama {
    int layers = 8, hidden = 512, heads = 8, kv_heads = 2, intermediate = 1376, vocab = 32000,
        tokens = 1024;
};
class SyntheticForward {
  public:
    SyntheticForward(const SyntheticLlama& spec, const std::string& device = "cpu");
    ~SyntheticForward();
    // One forward over `tokens` positions (batch 1); capture = false skips storing α and values.
    void run(bool capture);

  private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace attngeo::empirical
