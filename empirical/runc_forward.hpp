// A scalar float32 port of llama2.c's run.c forward (karpathy/llama2.c), operation for
// operation in run.c's order, so that the attention rows and value states of a llama2.c
// checkpoint equal run.c's own bit for bit (the checks against run.c's dumps need this: P and R
// are counts, and a 1e-6 difference in α can swap two near-equal tokens). Torch-free.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "empirical/llama2c.hpp"

namespace attngeo::empirical {

class RunCForward {
  public:
    explicit RunCForward(const Llama2cCheckpoint& checkpoint);

    // What the last position of one sequence sees.
    struct LastRow {
        std::vector<float> attention;  // [layers, H, T] post-softmax row of the last query
        std::vector<float> values;  // [layers, T, kv_dim] value cache (head h reads h / (H/H_kv))
        std::vector<float> logits;  // [vocab] at the last position
    };
    // tokens: [T] ids, T ≤ seq_len; throws InputError for an id outside the vocabulary, and
    // InputError naming the checkpoint, layer and tensor when an activation is NaN or inf.
    LastRow run(const std::vector<std::int64_t>& tokens) const;

    const Llama2cHeader& header() const { return header_; }

  private:
    Llama2cHeader header_;
    std::string source_;  // the checkpoint's path, for messages
    // run.c's TransformerWeights, row-major as run.c indexes them (w[i * n + j], i the output).
    std::vector<float> embed_;              // [vocab, dim]
    std::vector<float> rms_att_, rms_ffn_;  // [layers, dim]
    std::vector<float> wq_, wo_;            // [layers, dim, dim]
    std::vector<float> wk_, wv_;            // [layers, kv_dim, dim]
    std::vector<float> w1_, w3_;            // [layers, hidden, dim]
    std::vector<float> w2_;                 // [layers, dim, hidden]
    std::vector<float> rms_final_;          // [dim]
    std::vector<float> classifier_;         // [vocab, dim]
};

}  // namespace attngeo::empirical
