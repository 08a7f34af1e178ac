// An 8×8 float transpose in AVX2 registers, shared by theory's strip reads of the lower
// triangle and simulate's panel packing (both turn columns into rows 8 at a time). x86 only:
// elsewhere those callers have only their plain twins.
#pragma once

#include "common/cpu_features.hpp"

#if ATTNGEO_X86
#include <immintrin.h>

#include <cstddef>

namespace attngeo {

// dst row k = column k of the 8 rows r[0..7]: dst[k·dst_ld + m] = r[m][k].
ATTNGEO_TARGET_AVX2_FMA inline void transpose8x8_rows(const __m256 (&r)[8], float* dst,
                                                      std::ptrdiff_t dst_ld) {
    __m256 t[8], s[8];
    for (int k = 0; k < 8; k += 2) {
        t[k] = _mm256_unpacklo_ps(r[k], r[k + 1]);
        t[k + 1] = _mm256_unpackhi_ps(r[k], r[k + 1]);
    }
    for (int k = 0; k < 8; k += 4) {
        s[k] = _mm256_shuffle_ps(t[k], t[k + 2], _MM_SHUFFLE(1, 0, 1, 0));
        s[k + 1] = _mm256_shuffle_ps(t[k], t[k + 2], _MM_SHUFFLE(3, 2, 3, 2));
        s[k + 2] = _mm256_shuffle_ps(t[k + 1], t[k + 3], _MM_SHUFFLE(1, 0, 1, 0));
        s[k + 3] = _mm256_shuffle_ps(t[k + 1], t[k + 3], _MM_SHUFFLE(3, 2, 3, 2));
    }
    for (int k = 0; k < 4; ++k) {
        _mm256_storeu_ps(dst + k * dst_ld, _mm256_permute2f128_ps(s[k], s[k + 4], 0x20));
        _mm256_storeu_ps(dst + (k + 4) * dst_ld, _mm256_permute2f128_ps(s[k], s[k + 4], 0x31));
    }
}

}  // namespace attngeo
#endif
