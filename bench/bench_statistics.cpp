// Google Benchmark figures for extract's per-head statistics: one (head, document)
// on the fast path and on the plain reference, against the simulator's all-N trial at the same
// n and d (one thread), and the statistics of one layer's heads on 1 and 2 threads.
#include <benchmark/benchmark.h>

#include <vector>

#include "empirical/extract/statistics.hpp"
#include "simulate/generator.hpp"
#include "simulate/montecarlo.hpp"
#include "simulate/rng.hpp"

using namespace attngeo;

namespace {

// The paper's profile at n tokens (as bench_simulate's trials), every N.
simulate::SimulationSpec spec_for(int n, int d) {
    simulate::SimulationSpec spec;
    spec.model.profile.L = n - 1;
    spec.model.profile.T1 = (n - 1) / 10;
    spec.model.profile.T2 = (n - 1) * 25 / 32;
    spec.d = d;
    for (int N = 1; N <= n; ++N)
        spec.sizes.push_back(N);
    return spec;
}

// Documents of one head as extract sees them: float32 α (the profile) and values drawn by the
// simulator's generator, so both benchmarks measure the same geometry.
struct HeadDocuments {
    int n = 0, d = 0;
    std::vector<float> alpha;                // [n]
    std::vector<std::vector<float>> values;  // [documents][n, d]
    HeadDocuments(int n_, int d_, int documents) : n(n_), d(d_), alpha(n_) {
        const auto spec = spec_for(n, d);
        const auto head = simulate::simulation_head(spec);
        const simulate::ValueGenerator generator(simulate::generator_settings(spec, head));
        for (int i = 0; i < n; ++i)
            alpha[i] = static_cast<float>(head.alpha[i]);
        theory::RowMatrix drawn;
        for (int doc = 0; doc < documents; ++doc) {
            simulate::RandomStream stream(7, 0, static_cast<std::uint32_t>(doc));
            generator.draw_values(stream, drawn);
            values.emplace_back(drawn.data(), drawn.data() + drawn.size());
        }
    }
};

empirical::StatisticsSettings extract_settings(int n) {
    empirical::StatisticsSettings settings;  // extract's defaults: every N, lags 1..128
    settings.context = n;
    settings.max_lag = std::min(128, n - 2);
    for (int N = 1; N <= n; ++N)
        settings.sizes.push_back(N);
    return settings;
}

// One (head, document) through HeadStatistics (items = head-documents).
void BM_HeadStatistics(benchmark::State& state) {
    const int n = static_cast<int>(state.range(0)), d = static_cast<int>(state.range(1));
    const bool reference = state.range(2) != 0;
    const HeadDocuments head(n, d, 8);
    empirical::HeadStatistics statistics(extract_settings(n));
    std::size_t doc = 0;
    for (auto _ : state) {
        const auto& values = head.values[doc++ % head.values.size()];
        const auto record =
            reference ? statistics.add_document_reference(head.alpha.data(), values.data(), d)
                      : statistics.add_document(head.alpha.data(), values.data(), d);
        benchmark::DoNotOptimize(record.rho0);
    }
    state.SetItemsProcessed(state.iterations());
}

// The simulator's all-N trial at the same n and d, one thread (items = trials).
void BM_SimulatorTrial(benchmark::State& state) {
    const int n = static_cast<int>(state.range(0)), d = static_cast<int>(state.range(1));
    const simulate::TrialEngine engine(spec_for(n, d));
    const int batch = 8;
    std::int64_t first = 0;
    for (auto _ : state) {
        auto sums = engine.run(first, first + batch, 1);
        benchmark::DoNotOptimize(sums.trials);
        first += batch;
    }
    state.SetItemsProcessed(state.iterations() * batch);
}

// One document of a layer of 8 query heads on 2 kv heads (the synthetic llama's layer) on
// `threads` threads (items = head-documents); wall time.
void BM_LayerStatistics(benchmark::State& state) {
    const int n = static_cast<int>(state.range(0)), d = static_cast<int>(state.range(1));
    const int threads = static_cast<int>(state.range(2));
    const int heads = 8, kv_heads = 2;
    const HeadDocuments kv(n, d, kv_heads);
    std::vector<empirical::HeadStatistics> layer(heads,
                                                 empirical::HeadStatistics(extract_settings(n)));
    for (auto _ : state) {
        empirical::for_each_head(heads, threads, [&](int h) {
            const auto& values = kv.values[h / (heads / kv_heads)];
            layer[h].add_document(kv.alpha.data(), values.data(), d);
        });
    }
    state.SetItemsProcessed(state.iterations() * heads);
}

}  // namespace

BENCHMARK(BM_HeadStatistics)
    ->ArgNames({"n", "d", "reference"})
    ->Args({1024, 64, 0})
    ->Args({1025, 128, 0})
    ->Args({1024, 64, 1})
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_SimulatorTrial)
    ->ArgNames({"n", "d"})
    ->Args({1024, 64})
    ->Args({1025, 128})
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_LayerStatistics)
    ->ArgNames({"n", "d", "threads"})
    ->Args({1024, 64, 1})
    ->Args({1024, 64, 2})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

BENCHMARK_MAIN();
