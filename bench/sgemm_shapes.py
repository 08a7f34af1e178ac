#!/usr/bin/env python3
"""The single-precision GEMM rate of a LLaMA forward's shapes, one thread (the floor the
forward row of bench/run.py is read against): the q, k/v, o and MLP projections of T tokens and
each head's attention products, timed with NumPy's BLAS (Debian's OpenBLAS).
    OPENBLAS_NUM_THREADS=1 python3 bench/sgemm_shapes.py HIDDEN HEADS KV_HEADS INTERMEDIATE T
Prints one JSON object: flops, seconds, gflops (the best of five repetitions).
"""
import json
import sys
import time

import numpy as np


def shapes(h, heads, kv_heads, inter, t):
    d = h // heads
    # (m, k, n, count): count products of an m x k by a k x n matrix.
    return [(t, h, h, 2), (t, h, 2 * kv_heads * d, 1), (t, h, inter, 2), (t, inter, h, 1),
            (t, d, t, heads), (t, t, d, heads)]


def main():
    h, heads, kv_heads, inter, t = (int(x) for x in sys.argv[1:6])
    rng = np.random.default_rng(1)
    work = [(rng.standard_normal((m, k), dtype=np.float32),
             rng.standard_normal((k, n), dtype=np.float32), count)
            for m, k, n, count in shapes(h, heads, kv_heads, inter, t)]
    flops = sum(2.0 * a.shape[0] * a.shape[1] * b.shape[1] * count for a, b, count in work)
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        for a, b, count in work:
            for _ in range(count):
                np.matmul(a, b)
        best = min(best, time.perf_counter() - start)
    print(json.dumps({"flops": flops, "seconds": best, "gflops": flops / best / 1e9}))


if __name__ == "__main__":
    main()
