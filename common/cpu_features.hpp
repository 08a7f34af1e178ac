// Run-time CPU checks for the AVX2 kernels (theory/gram_kernels, simulate/rng and
// generator_kernels): each kernel is compiled for its target alone and chosen at run time,
// with a plain twin for CPUs without it. One place, so every library asks the same question.
#pragma once

// Compiles one function for AVX2 (no FMA: GCC would contract a·b + c and change the rounding
// against the plain twin), or for AVX2 with explicit FMA.
#define ATTNGEO_TARGET_AVX2 __attribute__((target("avx2")))
#define ATTNGEO_TARGET_AVX2_FMA __attribute__((target("avx2,fma")))

namespace attngeo {

inline bool cpu_has_avx2() {
    static const bool avx2 = __builtin_cpu_supports("avx2");
    return avx2;
}

inline bool cpu_has_avx2_fma() {
    static const bool both = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    return both;
}

}  // namespace attngeo
