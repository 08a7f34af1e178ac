"""P(r_max, N) and R(r_min, N) for every N at once from the contributions in rank order, by the
Gram-matrix trick in NumPy (float64): the computation both Python peers of bench/run.py time
(numpy_trial.py for the simulator, peer_extract.py for extract)."""
import numpy as np


def all_n_precision_recall(y):
    """y [n, d]: the contributions alpha_i v_i sorted by descending score. Returns (P, R) [n]."""
    G = y @ y.T
    C = np.cumsum(G, axis=0)                       # C[N-1, l] = <s(N), y_l>
    s2 = np.diag(np.cumsum(C, axis=1))             # ||s(N)||^2: sum of the leading N x N block
    D = s2[:, None] + np.diag(G)[None, :] - 2 * C  # D[N-1, l] = ||s(N) - y_l||^2
    idx = np.arange(y.shape[0])
    inside = idx[None, :] < idx[:, None] + 1       # l < N: token l is selected
    dmax = np.where(inside, D, -np.inf).max(axis=1)
    dmin = np.where(~inside, D, np.inf).min(axis=1)
    k_out = ((D <= dmax[:, None]) & ~inside).sum(axis=1)
    k_in = ((D <= dmin[:, None]) & inside).sum(axis=1)
    N = idx + 1
    return N / (N + k_out), k_in / N
