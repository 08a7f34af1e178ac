# attngeo.metrics against plain references written here: exact counts in rational arithmetic
# (fractions) on the double contributions, a per-N NumPy loop, and `attngeo metrics` itself;
# batches, threads, dtypes and memory orders; bad input as one-line ValueErrors.
import math
import os
from fractions import Fraction

import numpy as np
import pytest

import attngeo
from conftest import csv_text_columns

COLUMNS = ["r_min", "r_max", "K_in", "K_out", "P", "R", "F_max", "F_min", "exact_decisions"]


def random_head(rng, n, d, sink=0.3):
    alpha = rng.random(n) ** 3
    alpha[0] = 0
    alpha *= (1 - sink) / alpha.sum()
    alpha[0] = sink
    return alpha, rng.standard_normal((n, d))


def ranking(alpha, values, rank):
    scores = alpha if rank == "attn" else alpha * np.linalg.norm(values, axis=1)
    return np.argsort(-scores, kind="stable")  # ties: the lower index first (docs/design.md §2)


def numpy_reference(alpha, values, sizes, rank="attn", distance="euclidean"):
    """Per-N loop in floating point: s(N), every D, radii and counts (docs/design.md §2)."""
    y = alpha[:, None] * values
    order = ranking(alpha, values, rank)
    n = len(alpha)
    rows = {name: [] for name in COLUMNS}
    for N in sizes:
        inside = np.zeros(n, dtype=bool)
        inside[order[:N]] = True
        s = y[order[:N]].sum(axis=0)
        if distance == "euclidean":
            D = ((s - y) ** 2).sum(axis=1)
        else:
            D = 1 - y @ s / (np.linalg.norm(y, axis=1) * np.linalg.norm(s) + 1e-12)
        D_max = D[inside].max()
        D_min = D[~inside].min() if N < n else math.inf
        K_out = int((D[~inside] <= D_max).sum())
        K_in = int((D[inside] <= D_min).sum())
        P, R = N / (N + K_out), K_in / N
        for name, value in zip(COLUMNS, [math.sqrt(D_min), math.sqrt(D_max), K_in, K_out, P, R,
                                         2 * P / (1 + P), 2 * R / (1 + R), 0]):
            rows[name].append(value)
    return rows


def rational_counts(alpha, values, N, rank="attn"):
    """K_in and K_out in exact arithmetic on the double contributions y = fl64(alpha * v)."""
    y = [[Fraction(float(x)) for x in row] for row in alpha[:, None] * values]
    order = list(ranking(alpha, values, rank))
    s = [sum(y[k][t] for k in order[:N]) for t in range(values.shape[1])]
    D = [sum((s[t] - row[t]) ** 2 for t in range(len(s))) for row in y]
    selected, rest = order[:N], order[N:]
    D_max = max(D[i] for i in selected)
    K_out = sum(D[j] <= D_max for j in rest)
    K_in = sum(D[i] <= min(D[j] for j in rest) for i in selected) if rest else N
    return K_in, K_out


def largest_difference(got, want):
    got, want = np.asarray(got, dtype=float), np.asarray(want, dtype=float)
    both_inf = np.isinf(got) & np.isinf(want)
    return float(np.max(np.abs(got[~both_inf] - want[~both_inf]), initial=0))


@pytest.mark.parametrize("rank", ["attn", "contrib"])
@pytest.mark.parametrize("distance", ["euclidean", "cosine"])
def test_equals_numpy_reference_on_random_heads(rank, distance):
    rng = np.random.default_rng(11)
    worst = 0.0
    for trial in range(20):
        alpha, values = random_head(rng, n=int(rng.integers(2, 60)), d=int(rng.integers(1, 9)))
        sizes = list(range(1, len(alpha) + 1))
        got = attngeo.metrics(alpha, values, N="all", rank=rank, distance=distance)
        want = numpy_reference(alpha, values, sizes, rank, distance)
        assert got["N"].tolist() == sizes
        for name in ["K_in", "K_out", "P", "R", "F_max", "F_min"]:
            assert got[name].tolist() == pytest.approx(want[name], abs=0), (trial, name)
        for name in ["r_min", "r_max"]:  # squared: sqrt amplifies rounding near D = 0
            worst = max(worst, largest_difference(got[name] ** 2, np.square(want[name])))
    print(f"largest squared-radius difference to the NumPy loop ({rank}, {distance}): "
          f"{worst:.3g}")
    assert worst < 1e-12


def tied_head():
    """Duplicated tokens and a symmetric pair: distances tie exactly; closed balls count them.
    Every number is exact in %.17g text, so the CLI reads the same doubles."""
    alpha = np.array([0.25, 0.125, 0.125, 0.125, 0.125, 0.0625, 0.0625, 0.125])
    values = np.array([[1, 0], [0, 1], [0, 1], [0, -1], [0, -1], [2, 2], [-2, -2], [1, 0]],
                      dtype=float)
    return alpha, values


def test_exact_ties_equal_rational_arithmetic():
    alpha, values = tied_head()
    got = attngeo.metrics(alpha, values)
    tied = False
    for k, N in enumerate(got["N"]):
        K_in, K_out = rational_counts(alpha, values, int(N))
        assert (got["K_in"][k], got["K_out"][k]) == (K_in, K_out), N
        tied |= K_out > 0
    assert tied, "the input was meant to put unselected tokens on the r_max sphere"
    # Exact ties have margin 0: decided exactly, and counted as such.
    print("exact decisions on the tied head:", got["exact_decisions"].tolist())
    assert got["exact_decisions"].sum() > 0
    per_n = attngeo.metrics(alpha, values, N=list(range(1, 9)))
    for name in COLUMNS:
        np.testing.assert_array_equal(per_n[name], got[name])


def test_below_double_resolution_is_decided_exactly():
    # A tail at alpha ~ 1e-17 sits at ~|s| from s: the comparisons need exact arithmetic.
    rng = np.random.default_rng(5)
    n, d = 24, 4
    alpha = np.full(n, 1e-17)
    alpha[:4] = [0.4, 0.3, 0.2, 0.1]
    alpha[:4] -= (alpha.sum() - 1) / 4
    values = rng.standard_normal((n, d))
    got = attngeo.metrics(alpha, values)
    for k, N in enumerate(got["N"]):
        assert (got["K_in"][k], got["K_out"][k]) == rational_counts(alpha, values, int(N)), N


def write_points(path, alpha, values):
    """points.csv for the CLI in %.17g, and the doubles it reads back (the same as the input's
    when every number round-trips)."""
    np.savetxt(path, np.column_stack([alpha, values]), fmt="%.17g", delimiter=",")
    table = np.loadtxt(path, delimiter=",", ndmin=2)
    return table[:, 0], table[:, 1:]


def assert_equals_cli(cli, points, alpha, values, N, rank="attn", distance="euclidean"):
    """attngeo.metrics and `attngeo metrics` on the same head: every column bit for bit."""
    want = csv_text_columns(cli("metrics", "--input", points, "--N", N, "--rank", rank,
                                "--distance", distance))
    got = attngeo.metrics(alpha, values, N=N, rank=rank, distance=distance)
    cli_names = dict(zip(["N", "r_min", "r_max", "K_in", "K_out", "P", "R", "F_max", "F_min",
                          "exact_decisions"], want))
    for name, cli_name in cli_names.items():
        integer = name in ("N", "K_in", "K_out", "exact_decisions")
        parsed = [int(x) if integer else float(x) for x in want[cli_name]]
        assert got[name].dtype.kind == ("i" if integer else "f"), name
        assert got[name].tolist() == parsed, (N, rank, distance, name)
    return got


def test_equals_the_cli_bit_for_bit(cli, tmp_path):
    rng = np.random.default_rng(3)
    alpha, values = write_points(tmp_path / "points.csv", *random_head(rng, n=40, d=6))
    for N, distance in [("all", "euclidean"), ("1,2,3,17,40", "cosine"), ("pow2", "euclidean")]:
        assert_equals_cli(cli, tmp_path / "points.csv", alpha, values, N, distance=distance)


def test_equals_the_cli_on_exact_ties(cli, tmp_path):
    alpha, values = tied_head()
    read_alpha, read_values = write_points(tmp_path / "points.csv", alpha, values)
    np.testing.assert_array_equal(read_alpha, alpha)
    np.testing.assert_array_equal(read_values, values)
    decided = 0
    for N in ["all", "1,2,3,4,5,6,7,8"]:
        for rank in ["attn", "contrib"]:
            for distance in ["euclidean", "cosine"]:
                got = assert_equals_cli(cli, tmp_path / "points.csv", alpha, values, N, rank,
                                        distance)
                decided += int(got["exact_decisions"].sum())
    # The ties are decided exactly on both sides, and the CLI counts the same decisions.
    assert decided > 0


def test_batch_equals_heads_one_by_one_on_any_thread_count():
    rng = np.random.default_rng(8)
    heads = [random_head(rng, n=33, d=5) for _ in range(7)]
    alpha = np.stack([a for a, _ in heads])
    values = np.stack([v for _, v in heads])
    for threads in (1, 3, 0):
        batch = attngeo.metrics(alpha, values, threads=threads)
        for h, (a, v) in enumerate(heads):
            one = attngeo.metrics(a, v)
            for name in COLUMNS:
                np.testing.assert_array_equal(batch[name][h], one[name])
    assert batch["P"].shape == (7, 33) and batch["N"].shape == (33,)


def test_dtypes_orders_and_array_likes_give_the_same_rows():
    rng = np.random.default_rng(4)
    alpha, values = random_head(rng, n=20, d=3)
    alpha32, values32 = alpha.astype(np.float32), values.astype(np.float32)
    alpha32 /= alpha32.sum(dtype=np.float64)  # sums to 1 within float32 rounding
    want = attngeo.metrics(alpha32.astype(np.float64), values32.astype(np.float64))

    class ArrayLike:  # anything with __array__, like a CPU torch tensor
        def __init__(self, array):
            self.array = array

        def __array__(self, dtype=None):
            return self.array

    wide = np.zeros((20, 7), dtype=np.float32)
    wide[:, ::2][:, :3] = values32  # a strided, non-contiguous view
    for a, v in [(alpha32, values32), (alpha32, np.asfortranarray(values32)),
                 (ArrayLike(alpha32), ArrayLike(values32)), (alpha32, wide[:, ::2][:, :3])]:
        got = attngeo.metrics(a, v)
        for name in COLUMNS:
            np.testing.assert_array_equal(got[name], want[name])


def test_torch_tensors_when_torch_imports():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(6)
    alpha, values = random_head(rng, n=16, d=4)
    got = attngeo.metrics(torch.from_numpy(alpha), torch.from_numpy(values).T.contiguous().T)
    np.testing.assert_array_equal(got["K_out"], attngeo.metrics(alpha, values)["K_out"])


def test_degenerate_heads():
    # One token: N = n = 1, everything is 1 by convention, r_min = inf.
    one = attngeo.metrics(np.array([1.0]), np.array([[2.0, -1.0]]))
    assert one["P"].tolist() == [1.0] and math.isinf(one["r_min"][0])
    # All values zero: every distance is 0, every ball holds every token.
    zero = attngeo.metrics(np.full(4, 0.25), np.zeros((4, 2)))
    assert zero["K_out"].tolist() == [3, 2, 1, 0] and zero["K_in"].tolist() == [1, 2, 3, 4]
    # No heads in a batch: empty [0, n] rows.
    empty = attngeo.metrics(np.zeros((0, 5)), np.zeros((0, 5, 2)))
    assert empty["P"].shape == (0, 5)
    # Scaling every value by 2 scales the radii by 2 and keeps the counts.
    rng = np.random.default_rng(9)
    alpha, values = random_head(rng, n=30, d=4)
    base, scaled = attngeo.metrics(alpha, values), attngeo.metrics(alpha, 2 * values)
    np.testing.assert_array_equal(scaled["K_out"], base["K_out"])
    np.testing.assert_array_equal(scaled["r_max"], 2 * base["r_max"])


@pytest.mark.parametrize("alpha, values, kwargs, message", [
    (np.array([1, 0]), np.ones((2, 2)), {}, "alpha has dtype int64, expected float32 or float64"),
    (np.ones(2, dtype=np.float16) / 2, np.ones((2, 2)), {}, "dtype float16"),
    (np.ones(2, dtype=complex) / 2, np.ones((2, 2)), {}, "dtype complex128"),
    (np.array(["a", "b"]), np.ones((2, 2)), {}, "alpha has dtype"),
    (np.ones(2) / 2, np.ones((2, 2), dtype=bool), {}, "values has dtype bool"),
    (np.ones(2) / 2, np.ones(2), {}, "values has shape (2,), expected 2 dimension(s)"),
    (np.ones((2, 2, 2)), np.ones((2, 2)), {}, "alpha has shape (2, 2, 2), expected [n] or"),
    (np.ones((2, 2)) / 2, np.ones((2, 2)), {}, "values (alpha is [heads, n]) has shape (2, 2)"),
    (np.ones(3) / 3, np.ones((2, 2)), {}, "values has shape (2, 2), expected (3, d)"),
    (np.ones((2, 3)) / 3, np.ones((3, 3, 1)), {}, "expected (2, 3, d)"),
    (np.zeros(0), np.zeros((0, 2)), {}, "alpha has no tokens"),
    (np.ones(2) / 2, np.zeros((2, 0)), {}, "values have d = 0"),
    (np.array([0.5, math.nan]), np.ones((2, 2)), {}, "alpha[1] = nan, expected a finite alpha"),
    (np.array([1.5, -0.5]), np.ones((2, 2)), {}, "alpha[1] = -0.5 is negative, expected"),
    (np.array([0.5, 0.4]), np.ones((2, 2)), {}, "alpha sums to 0.9, expected"),
    (np.ones(2) / 2, np.array([[1, 2], [math.inf, 0]]), {}, "values holds inf at token 1"),
    (np.ones(2) / 2, np.ones((2, 2)), {"N": 3}, "attngeo.metrics: N"),
    (np.ones(2) / 2, np.ones((2, 2)), {"N": [0, 1]}, "attngeo.metrics: N"),
    (np.ones(2) / 2, np.ones((2, 2)), {"N": [1.5]}, "N must be"),
    (np.ones(2) / 2, np.ones((2, 2)), {"N": []}, "N is empty"),
    (np.ones(2) / 2, np.ones((2, 2)), {"rank": "top"}, "rank: top not in {attn,contrib}"),
    (np.ones(2) / 2, np.ones((2, 2)), {"distance": "l1"}, "distance: l1 not in {euclidean,"),
    (np.ones((1, 2)) / 2, np.ones((1, 2, 2)), {"threads": -1}, "threads = -1"),
    (None, np.ones((2, 2)), {}, "alpha is None"),
])
def test_bad_input_is_a_value_error(alpha, values, kwargs, message):
    with pytest.raises(ValueError) as error:
        attngeo.metrics(alpha, values, **kwargs)
    text = str(error.value)
    assert message in text and "\n" not in text
    assert text.startswith("attngeo.metrics: ")


def cli_message(done, command):
    """The one line `attngeo <command>` wrote on stderr, without its prefix: "attngeo
    <command>: " for errors found in the command, "attngeo: " and " (see --help)" for flag
    values CLI11 refuses while parsing."""
    assert done.returncode == 2, done.stderr
    line = done.stderr.strip()
    assert "\n" not in line, line
    for prefix, suffix in [(f"attngeo {command}: ", ""), ("attngeo: ", " (see --help)")]:
        if line.startswith(prefix) and line.endswith(suffix):
            return line[len(prefix):len(line) - len(suffix)]
    raise AssertionError(f"unexpected stderr line: {line}")


def python_message(call, function):
    """A ValueError's message without its "attngeo.<function>: " prefix."""
    with pytest.raises(ValueError) as error:
        call()
    text = str(error.value)
    assert text.startswith(f"attngeo.{function}: "), text
    return text[len(f"attngeo.{function}: "):]


def test_messages_are_the_clis(cli, tmp_path):
    # The module's message is the CLI's line with "attngeo.metrics: " for the CLI's prefix and
    # each flag named as its keyword (--rank -> rank), as N's messages have always been.
    points = tmp_path / "points.csv"
    alpha, values = write_points(points, np.ones(2) / 2, np.ones((2, 2)))
    for flags, kwargs in [(["--rank", "top"], dict(rank="top")),
                          (["--distance", "l1"], dict(distance="l1")),
                          (["--N", "3"], dict(N=3)),
                          (["--N", "0:1"], dict(N="0:1"))]:
        want = cli_message(cli.failing("metrics", "--input", points, *flags), "metrics")
        got = python_message(lambda: attngeo.metrics(alpha, values, **kwargs), "metrics")
        assert got == want.replace(flags[0], flags[0][2:], 1), flags
    # A bad weight: the CLI names the file and line, the module the index; the rest is the
    # same text, numbers printed as the shortest round-trip.
    for weights in [[1.1, -0.1], [0.5, 0.4000000000000001]]:
        alpha, values = write_points(points, np.array(weights), np.ones((2, 2)))
        want = cli_message(cli.failing("metrics", "--input", points), "metrics")
        got = python_message(lambda: attngeo.metrics(alpha, values), "metrics")
        got = got.replace("alpha[1] = ", "alpha = ")
        assert want.endswith(": " + got), (want, got)


def test_a_nan_in_one_head_of_a_batch_names_it():
    alpha = np.full((3, 4), 0.25)
    values = np.ones((3, 4, 2))
    values[2, 1, 0] = math.nan
    with pytest.raises(ValueError, match=r"values\[2\] holds nan at token 1"):
        attngeo.metrics(alpha, values)


def test_memory_budget_refuses_a_huge_gram_matrix():
    env = dict(os.environ)
    try:
        os.environ["ATTNGEO_MEMORY_BUDGET"] = "1000"
        with pytest.raises(ValueError, match="memory budget"):
            attngeo.metrics(np.full(64, 1 / 64), np.ones((64, 2)), threads=1)
    finally:
        os.environ.clear()
        os.environ.update(env)
