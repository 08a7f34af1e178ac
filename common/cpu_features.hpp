// Run-time kernel choice for the AVX2 kernels (theory/gram_kernels, theory/bound_kernels,
// common/sum_of_squares, simulate/rng, generator_kernels, single_gram and
// empirical/extract/statistics_kernels, whose lag dots also have AVX-512): each kernel is compiled for
// its target alone, has a plain twin, and asks here which one to take.
#pragma once

#include <cstdlib>
#include <cstring>

// x86 builds compile the AVX2 kernels (chosen at run time); other architectures only the plain
// twins, so immintrin.h and the target attributes stay behind this.
#if defined(__x86_64__) || defined(__i386__)
#define ATTNGEO_X86 1
// Compiles one function for AVX2 (no FMA: GCC would contract a·b + c and change the rounding
// against the plain twin), or for AVX2 with explicit FMA.
#define ATTNGEO_TARGET_AVX2 __attribute__((target("avx2")))
#define ATTNGEO_TARGET_AVX2_FMA __attribute__((target("avx2,fma")))
// The few kernels with an AVX-512 variant (the lag dot products of the per-head statistics, the
// Gram tiles and all-N sweep, the Philox refill).
#define ATTNGEO_TARGET_AVX512_FMA __attribute__((target("avx512f,avx2,fma")))
#else
#define ATTNGEO_X86 0
#endif

namespace attngeo {

// ATTNGEO_PLAIN=1 in the environment (read once, at the first kernel choice) makes every
// dispatcher take its plain twin: the kernels below, SSYRK instead of the packed float tiles,
// and one thread where a thread count is left to OpenMP. Outputs stay valid (counts are
// exact on every path); CI runs the kernel and simulate tests so.
inline bool plain_paths_forced() {
    static const bool forced = [] {
        const char* value = std::getenv("ATTNGEO_PLAIN");
        return value != nullptr && value[0] != '\0' && std::strcmp(value, "0") != 0;
    }();
    return forced;
}

// What the CPU can run (false off x86): the tests compare the *_avx2 kernels with their
// plain twins wherever this holds, whatever ATTNGEO_PLAIN says.
inline bool cpu_has_avx2() {
#if ATTNGEO_X86
    static const bool avx2 = __builtin_cpu_supports("avx2");
    return avx2;
#else
    return false;
#endif
}

inline bool cpu_has_avx2_fma() {
#if ATTNGEO_X86
    static const bool both = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    return both;
#else
    return false;
#endif
}

inline bool cpu_has_avx512f() {
#if ATTNGEO_X86
    static const bool avx512 = __builtin_cpu_supports("avx512f") && cpu_has_avx2_fma();
    return avx512;
#else
    return false;
#endif
}

// What the dispatchers take: the CPU's AVX2 unless ATTNGEO_PLAIN forces the plain twins.
inline bool use_avx2() {
    return cpu_has_avx2() && !plain_paths_forced();
}

inline bool use_avx2_fma() {
    return cpu_has_avx2_fma() && !plain_paths_forced();
}

inline bool use_avx512f() {
    return cpu_has_avx512f() && !plain_paths_forced();
}

}  // namespace attngeo
