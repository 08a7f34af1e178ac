// Google Benchmark figures for the simulator (docs/design.md §5): one trial vs n and d, all-N
// (Gram) and grid-N (per-N) paths, its stages, the κ-independent bound terms and one κ evaluation,
// threads 1–2, and one n×n×d GEMM on the same machine for scale.
#include <benchmark/benchmark.h>
#include <cblas.h>

#include <vector>

#include "common/cpu_features.hpp"
#if ATTNGEO_X86
#include <immintrin.h>
#endif

#include "simulate/montecarlo.hpp"
#include "simulate/rng.hpp"
#include "theory/bounds.hpp"
#include "theory/gram_kernels.hpp"
#include "theory/metrics.hpp"
#include "theory/single_gram.hpp"

using namespace attngeo;

namespace {

simulate::SimulationSpec spec_for(int n, int d, bool all_sizes) {
    simulate::SimulationSpec spec;
    spec.model.profile.L = n - 1;
    spec.model.profile.T1 = (n - 1) / 10;
    spec.model.profile.T2 = (n - 1) * 25 / 32;
    spec.d = d;
    spec.all_sizes = all_sizes;
    if (all_sizes) {
        for (int N = 1; N <= n; ++N)
            spec.sizes.push_back(N);
    } else {
        for (int N = 1; N < n; N *= 2)
            spec.sizes.push_back(N);
        spec.sizes.push_back(n);
    }
    return spec;
}

void BM_Gemm(benchmark::State& state) {
    const int n = static_cast<int>(state.range(0)), d = static_cast<int>(state.range(1));
    openblas_set_num_threads(1);
    std::vector<double> a(static_cast<std::size_t>(n) * d, 0.5), c(static_cast<std::size_t>(n) * n);
    for (std::size_t i = 0; i < a.size(); ++i)
        a[i] = static_cast<double>(i % 17) * 0.1;
    for (auto _ : state) {
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, n, d, 1.0, a.data(), d, a.data(), d,
                    0.0, c.data(), n);
        benchmark::DoNotOptimize(c.data());
    }
    state.counters["GFLOP/s"] =
        benchmark::Counter(2.0 * n * n * d, benchmark::Counter::kIsIterationInvariantRate,
                           benchmark::Counter::kIs1000);
}

// One Monte Carlo trial, end to end, on `threads` threads (items = trials).
void BM_Trial(benchmark::State& state) {
    const int n = static_cast<int>(state.range(0)), d = static_cast<int>(state.range(1));
    const bool all = state.range(2) != 0;
    const int threads = static_cast<int>(state.range(3));
    const auto spec = spec_for(n, d, all);
    const simulate::TrialEngine engine(spec);  // per-grid-point setup, outside the timing
    const int batch = 32 * threads;
    std::int64_t first = 0;
    for (auto _ : state) {
        auto sums = engine.run(first, first + batch, threads);
        benchmark::DoNotOptimize(sums.trials);
        first += batch;
    }
    state.SetItemsProcessed(state.iterations() * batch);
}

void BM_GenerateValues(benchmark::State& state) {
    const int n = static_cast<int>(state.range(0)), d = static_cast<int>(state.range(1));
    const auto spec = spec_for(n, d, true);
    const auto head = simulate::simulation_head(spec);
    const simulate::ValueGenerator generator(simulate::generator_settings(spec, head));
    theory::RowMatrix values;
    std::uint32_t trial = 0;
    for (auto _ : state) {
        simulate::RandomStream stream(1, 0, trial++);
        generator.draw_values(stream, values);
        benchmark::DoNotOptimize(values.data());
    }
}

// One trial's Philox words (n = 1025, d = 128: 131,200 normals, one word each) by each refill.
void BM_PhiloxRefill(benchmark::State& state) {
    const int blocks = 65600;  // a multiple of 32
    std::vector<std::uint64_t> words(2 * static_cast<std::size_t>(blocks));
    const int bits = static_cast<int>(state.range(0));  // 0: the plain twin
#if ATTNGEO_X86
    if ((bits == 512 && !cpu_has_avx512f()) || (bits == 256 && !cpu_has_avx2())) {
        state.SkipWithError("the CPU lacks this vector width");
        return;
    }
#endif
    const simulate::Philox::key_type key = {{1, 0}};
    std::uint32_t trial = 0;
    for (auto _ : state) {
        const simulate::Philox::ctr_type counter = {{0, trial++, 0, 0}};
#if ATTNGEO_X86
        if (bits == 512)
            simulate::philox_words_avx512(counter, key, blocks, words.data());
        else if (bits == 256)
            simulate::philox_words_avx2(counter, key, blocks, words.data());
        else
#endif
            simulate::philox_words_plain(counter, key, blocks, words.data());
        benchmark::DoNotOptimize(words.data());
    }
}

void BM_GramAndSymmetrize(benchmark::State& state) {
    const int n = static_cast<int>(state.range(0)), d = static_cast<int>(state.range(1));
    openblas_set_num_threads(1);
    theory::RowMatrix y = theory::RowMatrix::Random(n, d);
    Eigen::MatrixXd gram(n, n);
    for (auto _ : state) {
        cblas_dsyrk(CblasColMajor, CblasLower, CblasTrans, n, d, 1.0, y.data(), d, 0.0, gram.data(),
                    n);
        theory::symmetrize_from_lower(gram);
        benchmark::DoNotOptimize(gram.data());
    }
}

// The Euclidean trial's Gram as the simulator makes it: σ and the packed tiles (lower triangle
// only), as the dispatcher picks them (bits 0) or the AVX2 (256) or AVX-512 (512) twin.
void BM_SingleGram(benchmark::State& state) {
    const int n = static_cast<int>(state.range(0)), d = static_cast<int>(state.range(1));
    theory::RowMatrix y = theory::RowMatrix::Random(n, d);
    const int ld = theory::single_gram_leading_dimension(n);
    Eigen::MatrixXf gram(ld, n);
    std::vector<float> panels;
    const int bits = static_cast<int>(state.range(2));  // 0: the dispatcher's choice
#if ATTNGEO_X86
    if ((bits == 512 && !cpu_has_avx512f()) || (bits == 256 && !cpu_has_avx2_fma())) {
        state.SkipWithError("the CPU lacks this vector width");
        return;
    }
#endif
    for (auto _ : state) {
        const int e = theory::single_precision_scale_exponent(y);
#if ATTNGEO_X86
        if (bits == 512)
            theory::single_gram_lower_avx512(y, e, gram.data(), ld, panels);
        else if (bits == 256)
            theory::single_gram_lower_avx2(y, e, gram.data(), ld, panels);
        else
#endif
            theory::single_gram_lower(y, e, gram.data(), ld, panels);
        benchmark::DoNotOptimize(gram.data());
    }
}

#if ATTNGEO_X86
// The core's float32 FMA peak with 256- and 512-bit vectors: twelve independent accumulator
// chains (more than FMA latency × throughput), registers only. What the AVX2 Gram tiles are
// read against, and whether AVX-512 could raise it (on a core that splits 512-bit FMAs into two
// 256-bit halves, it cannot).
constexpr int kFmaChains = 12, kFmaSteps = 4096;
ATTNGEO_TARGET_AVX2_FMA __attribute__((noipa)) float fma_chains_avx2(float start, float factor) {
    __m256 acc[kFmaChains];
    for (int c = 0; c < kFmaChains; ++c)
        acc[c] = _mm256_set1_ps(start + 1e-3f * c);
    const __m256 scale = _mm256_set1_ps(factor), shift = _mm256_set1_ps(1e-7f);
    for (int step = 0; step < kFmaSteps; ++step)
        for (int c = 0; c < kFmaChains; ++c)
            acc[c] = _mm256_fmadd_ps(acc[c], scale, shift);
    __m256 sum = acc[0];
    for (int c = 1; c < kFmaChains; ++c)
        sum = _mm256_add_ps(sum, acc[c]);
    return _mm256_cvtss_f32(sum);
}
ATTNGEO_TARGET_AVX512_FMA __attribute__((noipa)) float fma_chains_avx512(float start,
                                                                         float factor) {
    __m512 acc[kFmaChains];
    for (int c = 0; c < kFmaChains; ++c)
        acc[c] = _mm512_set1_ps(start + 1e-3f * c);
    const __m512 scale = _mm512_set1_ps(factor), shift = _mm512_set1_ps(1e-7f);
    for (int step = 0; step < kFmaSteps; ++step)
        for (int c = 0; c < kFmaChains; ++c)
            acc[c] = _mm512_fmadd_ps(acc[c], scale, shift);
    __m512 sum = acc[0];
    for (int c = 1; c < kFmaChains; ++c)
        sum = _mm512_add_ps(sum, acc[c]);
    alignas(64) float lanes[16];  // (GCC 12's _mm512_reduce_add_ps warns of its own internals)
    _mm512_store_ps(lanes, sum);
    return lanes[0] + lanes[15];
}

// Arg: the vector width in bits (256 or 512); skipped where the CPU lacks it.
void BM_FmaPeak(benchmark::State& state) {
    const bool wide = state.range(0) == 512;
    if (wide ? !cpu_has_avx512f() : !cpu_has_avx2_fma()) {
        state.SkipWithError("the CPU lacks this vector width");
        return;
    }
    float start = 1.0f, factor = 0.999999f;  // opaque to the compiler: no folding of the chains
    benchmark::DoNotOptimize(start);
    benchmark::DoNotOptimize(factor);
    for (auto _ : state)
        benchmark::DoNotOptimize(wide ? fma_chains_avx512(start, factor)
                                      : fma_chains_avx2(start, factor));
    const double flops = 2.0 * kFmaChains * kFmaSteps * (wide ? 16 : 8);
    state.counters["GFLOP/s"] =
        benchmark::Counter(flops * state.iterations() / 1e9, benchmark::Counter::kIsRate);
}
#endif

// The same through OpenBLAS: scale to float32, SSYRK (β = 0 zeroes the triangle first).
void BM_SingleGramSsyrk(benchmark::State& state) {
    const int n = static_cast<int>(state.range(0)), d = static_cast<int>(state.range(1));
    openblas_set_num_threads(1);
    theory::RowMatrix y = theory::RowMatrix::Random(n, d);
    theory::SingleRowMatrix scaled;
    Eigen::MatrixXf gram(theory::single_gram_leading_dimension(n), n);
    for (auto _ : state) {
        theory::scaled_single_precision(y, scaled);
        cblas_ssyrk(CblasColMajor, CblasLower, CblasTrans, n, d, 1.0f, scaled.data(), d, 0.0f,
                    gram.data(), static_cast<int>(gram.rows()));
        benchmark::DoNotOptimize(gram.data());
    }
}

// The Euclidean sweep's reads of the part above the diagonal: every 8-row strip of an n×n
// lower triangle (8×8 transposes), as one trial does them.
void BM_UpperStrips(benchmark::State& state) {
    const int n = static_cast<int>(state.range(0)), ld = static_cast<int>(state.range(1));
    const Eigen::MatrixXf lower = Eigen::MatrixXf::Random(ld, n);
    const int stride = (n + 7) / 8 * 8;
    std::vector<float> strip(8 * static_cast<std::size_t>(stride));
    for (auto _ : state) {
        for (int first = 0; first < n; first += 8)
            theory::gram_kernels::upper_strip(lower.data(), ld, first, std::min(8, n - first),
                                              strip.data(), stride);
        benchmark::DoNotOptimize(strip.data());
    }
}

// A trial's ranked contributions (paper-default head), for the metrics benchmarks.
theory::RowMatrix ranked_trial(const simulate::SimulationSpec& spec) {
    const int n = spec.model.profile.L + 1, d = spec.d;
    const auto head = simulate::simulation_head(spec);
    const simulate::ValueGenerator generator(simulate::generator_settings(spec, head));
    theory::RowMatrix values;
    simulate::RandomStream stream(1, 0, 0);
    generator.draw_values(stream, values);
    theory::RowMatrix ranked(n, d);
    const auto order = theory::selection_order(head.alpha);
    for (int k = 0; k < n; ++k)
        ranked.row(k) = head.alpha[order[k]] * values.row(order[k]);
    return ranked;
}

void BM_MetricsFromSingleGram(benchmark::State& state) {
    const int n = static_cast<int>(state.range(0)), d = static_cast<int>(state.range(1));
    const auto spec = spec_for(n, d, true);
    const theory::RowMatrix ranked = ranked_trial(spec);
    theory::SingleRowMatrix scaled;
    const int e = theory::scaled_single_precision(ranked, scaled);
    Eigen::MatrixXf gram(theory::single_gram_leading_dimension(n), n);  // as the simulator
    gram.topRows(n) = scaled * scaled.transpose();
    std::vector<theory::SelectionMetrics> rows;
    const bool radii = state.range(2) != 0;
    for (auto _ : state) {
        theory::selection_metrics_from_single_gram(
            ranked, gram.data(), static_cast<int>(gram.rows()), e, spec.sizes, rows, radii);
        benchmark::DoNotOptimize(rows.data());
    }
}

void BM_MetricsFromGram(benchmark::State& state) {
    const int n = static_cast<int>(state.range(0)), d = static_cast<int>(state.range(1));
    const auto spec = spec_for(n, d, true);
    const theory::RowMatrix ranked = ranked_trial(spec);
    Eigen::MatrixXd gram = ranked * ranked.transpose();
    std::vector<theory::SelectionMetrics> rows;
    const bool radii = state.range(2) != 0;
    for (auto _ : state) {
        theory::selection_metrics_from_gram(ranked, gram, spec.sizes, theory::Distance::euclidean,
                                            rows, radii);
        benchmark::DoNotOptimize(rows.data());
    }
}

void BM_BoundTerms(benchmark::State& state) {
    const int n = static_cast<int>(state.range(0));
    const auto spec = spec_for(n, 128, true);
    const auto head = simulate::simulation_head(spec);
    for (auto _ : state) {
        theory::BoundTerms terms(head, spec.sizes, theory::BoundVariant::paper);
        benchmark::DoNotOptimize(&terms);
    }
}

void BM_BoundEvaluate(benchmark::State& state) {
    const int n = static_cast<int>(state.range(0));
    const auto spec = spec_for(n, 128, true);
    const auto head = simulate::simulation_head(spec);
    theory::BoundTerms terms(head, spec.sizes, theory::BoundVariant::paper);
    for (auto _ : state) {
        auto rows = terms.evaluate(128, 0.5);
        benchmark::DoNotOptimize(rows.data());
    }
}

}  // namespace

// One n×n×d GEMM for every trial shape below, so each trial can be read against it.
BENCHMARK(BM_Gemm)
    ->ArgNames({"n", "d"})
    ->Args({129, 128})
    ->Args({257, 128})
    ->Args({513, 128})
    ->Args({1025, 128})
    ->Args({2049, 128})
    ->Args({4097, 128})
    ->Args({1025, 16})
    ->Args({1025, 64})
    ->Args({1025, 256})
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Trial)
    ->ArgNames({"n", "d", "allN", "threads"})
    ->Args({1025, 128, 1, 1})
    ->Args({1025, 128, 1, 2})
    ->Args({1025, 128, 0, 1})
    ->Args({129, 128, 1, 1})
    ->Args({257, 128, 1, 1})
    ->Args({513, 128, 1, 1})
    ->Args({2049, 128, 1, 1})
    ->Args({4097, 128, 1, 1})
    ->Args({1025, 16, 1, 1})
    ->Args({1025, 64, 1, 1})
    ->Args({1025, 256, 1, 1})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_GenerateValues)->Args({1025, 128})->Unit(benchmark::kMillisecond);
BENCHMARK(BM_PhiloxRefill)
    ->ArgName("bits")
    ->Arg(0)
    ->Arg(256)
    ->Arg(512)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_GramAndSymmetrize)->Args({1025, 128})->Unit(benchmark::kMillisecond);
BENCHMARK(BM_SingleGram)
    ->ArgNames({"n", "d", "bits"})
    ->Args({1025, 128, 0})
    ->Args({1025, 128, 256})
    ->Args({1025, 128, 512})
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_SingleGramSsyrk)->Args({1025, 128})->Unit(benchmark::kMillisecond);
#if ATTNGEO_X86
BENCHMARK(BM_FmaPeak)->ArgName("bits")->Arg(256)->Arg(512)->Unit(benchmark::kMicrosecond);
#endif
BENCHMARK(BM_UpperStrips)
    ->Args({1025, 1025})
    ->Args({1025, 1040})
    ->Args({1025, 1032})
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_MetricsFromSingleGram)
    ->ArgNames({"n", "d", "radii"})
    ->Args({1025, 128, 0})
    ->Args({1025, 128, 1})
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_MetricsFromGram)
    ->ArgNames({"n", "d", "radii"})
    ->Args({1025, 128, 0})
    ->Args({1025, 128, 1})
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_BoundTerms)->Arg(1025)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_BoundEvaluate)->Arg(1025)->Unit(benchmark::kMillisecond);
BENCHMARK_MAIN();
