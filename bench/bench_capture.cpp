// Forward throughput of a synthetic LLaMA (8 layers, hidden 512, 8 heads, 2 kv heads,
// T = 1024, CPU) with `--queries last` capture and without: capture must cost < 20% extra.
#include <benchmark/benchmark.h>

#include "empirical/model/capture.hpp"

namespace {

void BM_Forward(benchmark::State& state) {
    static attngeo::empirical::SyntheticForward model(attngeo::empirical::SyntheticLlama{});
    const bool capture = state.range(0) != 0;
    for (auto _ : state)
        model.run(capture);
    state.SetItemsProcessed(state.iterations() * 1024);  // tokens
    state.SetLabel(capture ? "capture last row + values" : "no capture");
}

}  // namespace

BENCHMARK(BM_Forward)
    ->ArgName("capture")
    ->Arg(0)
    ->Arg(1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_MAIN();
