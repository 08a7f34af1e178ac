# The predecessor paper's row measurements (docs/design.md §14) through attngeo against plain
# NumPy float64 references written here: d~(N) by brute force, E|.|^2 by enumerating the
# N-subsets, the Monte Carlo E|.| within 4 standard errors of the enumerated mean, g(T, eps) by a
# direct finite difference, and the exact KS test against scipy.stats.ks_2samp(method="exact").
import itertools
import math
import warnings

import numpy as np
import pytest

import attngeo


def random_row(rng, n, d):
    return rng.dirichlet(np.ones(n)), rng.standard_normal((n, d))


def order_of(alpha, values, rank):
    scores = alpha if rank == "attn" else alpha * np.linalg.norm(values, axis=1)
    return np.argsort(-scores, kind="stable")  # ties: the lower index first


def signed_norm(y, inside):
    """|sum_{i not in J} y_i - sum_{i in J} y_i| for the token indices `inside` (J)."""
    signs = np.ones(len(y))
    signs[list(inside)] = -1
    return float(np.linalg.norm(signs @ y))


def enumerate_subsets(y, N):
    """E|.| and E|.|^2 over every N-subset."""
    norms = np.array([signed_norm(y, J) for J in itertools.combinations(range(len(y)), N)])
    return norms.mean(), (norms ** 2).mean()


def numpy_softmax(x, T):
    x = np.asarray(x, dtype=np.float64)
    z = np.where(np.isneginf(x), -np.inf, (x - x[np.isfinite(x)].max()) / T)
    w = np.exp(z)
    return w / w.sum()


def test_selection_distance_matches_brute_force():
    rng = np.random.default_rng(2730)
    largest = 0.0
    for _ in range(60):
        n, d = int(rng.integers(1, 25)), int(rng.integers(1, 7))
        alpha, values = random_row(rng, n, d)
        y = alpha[:, None] * values
        for rank in ("attn", "contrib"):
            order = order_of(alpha, values, rank)
            result = attngeo.selection_distance(alpha, values, "all", rank=rank)
            np.testing.assert_array_equal(result["N"], np.arange(1, n + 1))
            got = result["distance"]
            assert got.shape == (n,) and got.dtype == np.float64
            for N in range(1, n + 1):
                expected = signed_norm(y, order[:N])
                largest = max(largest, abs(got[N - 1] - expected))
                assert got[N - 1] == pytest.approx(expected, rel=1e-13, abs=1e-15)
    # Other sizes: sorted and unique, as attngeo.metrics takes them; each N's value unchanged.
    alpha, values = random_row(rng, 9, 3)
    every = attngeo.selection_distance(alpha, values)["distance"]
    some = attngeo.selection_distance(alpha, values, [4, 1, 9, 4])
    np.testing.assert_array_equal(some["N"], [1, 4, 9])
    np.testing.assert_array_equal(some["distance"], every[[0, 3, 8]])
    np.testing.assert_array_equal(attngeo.selection_distance(alpha, values, 5)["distance"],
                                  every[[4]])
    np.testing.assert_array_equal(attngeo.selection_distance(alpha, values, "pow2")["N"],
                                  [1, 2, 4, 8, 9])
    print(f"selection_distance vs brute force: largest difference {largest:.3g}")


def test_random_selection_mean_square_matches_enumeration():
    rng = np.random.default_rng(2731)
    largest = 0.0
    for _ in range(30):
        n, d = int(rng.integers(1, 11)), int(rng.integers(1, 5))
        alpha, values = random_row(rng, n, d)
        y = alpha[:, None] * values
        for N in range(1, n + 1):
            expected = enumerate_subsets(y, N)[1]
            got = attngeo.random_selection_mean_square(alpha, values, N)
            largest = max(largest, abs(got - expected) / expected)
            assert got == pytest.approx(expected, rel=1e-12)
    print(f"random_selection_mean_square vs enumeration: largest relative difference "
          f"{largest:.3g}")


def test_random_selection_distance_within_four_standard_errors():
    rng = np.random.default_rng(2732)
    largest_z = 0.0
    for trial in range(20):
        n, d = int(rng.integers(2, 11)), int(rng.integers(1, 5))
        N = int(rng.integers(1, n))
        alpha, values = random_row(rng, n, d)
        exact = enumerate_subsets(alpha[:, None] * values, N)[0]
        mean, standard_error = attngeo.random_selection_distance(alpha, values, N, 4000, trial)
        assert standard_error > 0
        largest_z = max(largest_z, abs(mean - exact) / standard_error)
        assert abs(mean - exact) <= 4 * standard_error
    # Same seed, same estimate; N = n is one subset: no spread.
    alpha, values = random_row(rng, 12, 3)
    assert (attngeo.random_selection_distance(alpha, values, 5, 300, 9)
            == attngeo.random_selection_distance(alpha, values, 5, 300, 9))
    mean, standard_error = attngeo.random_selection_distance(alpha, values, 12, 50, 1)
    assert mean == pytest.approx(np.linalg.norm((alpha[:, None] * values).sum(axis=0)), rel=1e-14)
    assert standard_error == 0
    print(f"random_selection_distance: largest |mean - exact| / SE {largest_z:.3g}")


def test_softmax_sensitivity_matches_numpy_finite_difference():
    rng = np.random.default_rng(2733)
    largest = 0.0
    for _ in range(60):
        n = int(rng.integers(1, 30))
        scores = rng.standard_normal(n) * 3
        if n > 2:
            scores[rng.integers(1, n)] = -np.inf  # a masked key
        direction = attngeo.random_unit_direction(n, int(rng.integers(0, 2**63)))
        for T in (0.1, 1.0, 10.0):
            for epsilon in (1e-3, 1e-1, 10.0):
                expected = np.linalg.norm(numpy_softmax(scores + epsilon * direction, T)
                                          - numpy_softmax(scores, T)) / epsilon
                got = attngeo.softmax_sensitivity(scores, direction, T, epsilon)
                largest = max(largest, abs(got - expected) * epsilon)
                assert abs(got - expected) * epsilon <= 1e-14 * (n + 40 / T)
                assert got <= 1 / (2 * T) + 1e-12 / epsilon  # the Jacobian's spectral norm
    print(f"softmax_sensitivity vs NumPy: largest difference x eps {largest:.3g}")


def test_random_unit_direction():
    for n in (1, 5, 300):
        v = attngeo.random_unit_direction(n, 17)
        assert v.shape == (n,)
        assert np.linalg.norm(v) == pytest.approx(1, abs=1e-15)
        np.testing.assert_array_equal(v, attngeo.random_unit_direction(n, 17))
    assert not np.array_equal(attngeo.random_unit_direction(5, 1),
                              attngeo.random_unit_direction(5, 2))


def test_ks_2samp_matches_scipy():
    stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(2734)
    largest_statistic = largest_p = 0.0
    compared = 0
    for trial in range(20):
        m, n = (int(k) for k in rng.integers(3, 41, size=2))
        a = rng.standard_normal(m)
        b = rng.standard_normal(n) + rng.choice([0.0, 0.5, 1.5])
        if trial % 4 == 0:  # ties within and across the samples
            a, b = np.round(a), np.round(b)
        statistic, p_value = attngeo.ks_2samp(a, b)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            reference = stats.ks_2samp(a, b, method="exact")
        if caught:
            # SciPy gives up on its exact method (and warns) only where its sum leaves [0, 1]:
            # D = 1/n for m = n, where every path leaves the band at once and p = 1.
            assert m == n and statistic == pytest.approx(1 / n) and p_value == 1.0
            continue
        compared += 1
        largest_statistic = max(largest_statistic, abs(statistic - reference.statistic))
        largest_p = max(largest_p, abs(p_value - reference.pvalue))
        assert statistic == pytest.approx(reference.statistic, abs=1e-15)
        assert p_value == pytest.approx(reference.pvalue, abs=1e-10)
        assert attngeo.ks_2samp(b, a) == pytest.approx((statistic, p_value), abs=1e-14)
    assert compared >= 15
    print(f"ks_2samp vs scipy (method='exact') on {compared} pairs: largest statistic "
          f"difference {largest_statistic:.3g}, largest p-value difference {largest_p:.3g}")


def test_ks_2samp_spot_values():
    # From SciPy 1.10.1 ks_2samp(a, b, method="exact"), as in tests/compare/test_ks_test.cpp.
    assert attngeo.ks_2samp([1.0, 2, 3, 4], [5.0, 6, 7, 8, 9, 10]) == pytest.approx(
        (1.0, 0.009523809523809525), abs=1e-15)
    assert attngeo.ks_2samp([1.0, 2, 3], [1.0, 2, 3]) == (0.0, 1.0)


@pytest.mark.parametrize("call, message", [
    (lambda: attngeo.selection_distance(np.ones(3) / 3, np.ones((2, 2))), "values has shape"),
    (lambda: attngeo.selection_distance(np.array([0.5, -0.1, 0.6]), np.ones((3, 2))), ""),
    (lambda: attngeo.selection_distance(np.ones(3) / 3, np.ones((3, 2)), [4]), "sizes"),
    (lambda: attngeo.selection_distance(np.ones(3) / 3, np.ones((3, 2)), rank="top"), "rank"),
    (lambda: attngeo.selection_distance(np.ones(3) / 3, np.full((3, 2), np.nan)), ""),
    (lambda: attngeo.random_selection_mean_square(np.ones(3) / 3, np.ones((3, 2)), 0), "N = 0"),
    (lambda: attngeo.random_selection_distance(np.ones(3) / 3, np.ones((3, 2)), 4, 10, 1),
     "N = 4"),
    (lambda: attngeo.random_selection_distance(np.ones(3) / 3, np.ones((3, 2)), 1, 1, 1),
     "subsets = 1"),
    (lambda: attngeo.softmax_sensitivity([0.0, 1.0], [1.0, 0.0], 0.0, 0.1), "temperature"),
    (lambda: attngeo.softmax_sensitivity([0.0, 1.0], [1.0, 0.0], 1.0, -1.0), "epsilon"),
    (lambda: attngeo.softmax_sensitivity([0.0, 1.0], [1.0], 1.0, 0.1), "direction"),
    (lambda: attngeo.softmax_sensitivity([-np.inf, -np.inf], [1.0, 0.0], 1.0, 0.1), "-inf"),
    (lambda: attngeo.random_unit_direction(0, 1), "n = 0"),
    (lambda: attngeo.ks_2samp([], [1.0]), "empty"),
    (lambda: attngeo.ks_2samp([1.0, np.nan], [1.0]), "non-finite"),
    (lambda: attngeo.ks_2samp([[1.0]], [1.0]), "shape"),
])
def test_bad_input_is_a_value_error(call, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        call()
