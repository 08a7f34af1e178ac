#!/usr/bin/env python3
"""The same all-N trial as attngeo's simulator, vectorised in NumPy, for the speed comparison
in the README (a C++ trial must cost at least 15x less). One trial = draw Gaussian
directions with the AR(1)+sink covariance, normalise, scale by alpha and the norms, Gram
matrix, cumulative sums, and K_in/K_out for every N. Single-threaded BLAS:
    OPENBLAS_NUM_THREADS=1 /usr/bin/python3 bench/numpy_trial.py [n] [d] [trials]
"""
import math
import sys
import time

import numpy as np

from numpy_all_n import all_n_precision_recall


def paper_alpha(L=1024, p_sink=0.3, T1=100, T2=800, eta=0.02, omega=0.05):
    i = np.arange(1, L + 1)
    w = np.where(i <= T1, 1.0, np.where(i <= T2, 1 + eta * np.cos(omega * i), np.exp(eta * (i - T2))))
    alpha = np.empty(L + 1)
    alpha[0] = p_sink
    alpha[1:] = (1 - p_sink) * w / w.sum()
    return alpha


def trial(rng, alpha, norms, order, d, beta=0.05):
    n = alpha.size
    r = math.exp(-beta)
    eps = rng.standard_normal((n, d)) / math.sqrt(d)
    g = np.empty_like(eps)
    g[0] = eps[0]  # rho0 = 0: the sink is independent
    g[1] = eps[1]
    # AR(1) along tokens, vectorised as a linear filter over the token axis
    coeff = r ** np.arange(n - 1)
    innov = eps[1:].copy()
    innov[1:] *= math.sqrt(1 - r * r)
    g[1:] = np.cumsum(innov / coeff[:, None], axis=0) * coeff[:, None]
    v = g / np.linalg.norm(g, axis=1, keepdims=True) * norms[:, None]
    y = (alpha[:, None] * v)[order]
    return all_n_precision_recall(y)


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1025
    d = int(sys.argv[2]) if len(sys.argv) > 2 else 128
    trials = int(sys.argv[3]) if len(sys.argv) > 3 else 10
    alpha = paper_alpha(L=n - 1, T1=(n - 1) // 10, T2=(n - 1) * 25 // 32)
    norms = np.ones(n)
    norms[0] = 0.1
    order = np.argsort(-alpha, kind="stable")
    rng = np.random.default_rng(1)
    trial(rng, alpha, norms, order, d)  # warm-up
    start = time.perf_counter()
    for _ in range(trials):
        trial(rng, alpha, norms, order, d)
    per_trial = (time.perf_counter() - start) / trials
    print(f"numpy all-N trial: n={n} d={d}: {per_trial * 1e3:.1f} ms per trial")


if __name__ == "__main__":
    main()
