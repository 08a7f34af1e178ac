# attngeo.bounds against a plain NumPy evaluation of the printed formulas (docs/design.md §3,
# variant `paper`) and against `attngeo bounds` on the same parameters and files; bad input as the
# CLI's one-line messages in a ValueError.
import inspect
import math

import numpy as np
import pytest

import attngeo
from conftest import csv_text_columns

BOUNDS = ["P_lower", "P_upper", "R_lower", "R_upper", "Fmax_lower", "Fmax_upper",
          "Fmin_lower", "Fmin_upper"]


def explicit_head(rng, n):
    alpha = rng.random(n) ** 2
    alpha[0] = 0
    alpha *= 0.6 / alpha.sum()
    alpha[0] = 0.4
    norms = 1 + 0.3 * rng.random(n)
    norms[0] = 0.1
    lags = np.abs(np.subtract.outer(np.arange(n), np.arange(n)))
    cosine = np.exp(-0.2 * lags)
    cosine[0, 1:] = cosine[1:, 0] = 0.1
    return alpha, norms, cosine


def paper_reference(alpha, norms, cosine, N, d, kappa):
    """Theorems 1-2 and Corollary 1 as printed (docs/design.md §3), every pair explicitly."""
    n = len(alpha)
    a = alpha * norms
    order = np.argsort(-alpha, kind="stable")
    selected, rest = list(order[:N]), list(order[N:])
    core = [k for k in selected if k != 0]
    if N == n or not core:
        return dict.fromkeys(BOUNDS, 1.0)
    s_in = a[core].sum()
    rho_out = cosine[np.ix_(rest, core)].max()
    a_max_out = a[rest].max()
    delta = a[core].min() ** 2 - 2 * a_max_out * s_in * rho_out
    delta0 = a[0] ** 2 - (s_in * rho_out) ** 2
    B = a[selected].max() + a_max_out + s_in
    tail = lambda x: math.exp(-kappa * d * (max(x, 0) / B) ** 2)
    n_out = n - N
    union = n_out * tail(delta) + ((n_out / N) * tail(delta0) if 0 in selected else 0)
    M = {j: sum(a[l] * cosine[l, j] for l in core) for j in range(n)}
    sigma = B / math.sqrt(2 * kappa * d)

    def p_minus(i, j):
        xi = ((a[j] ** 2 - a[i] ** 2) - 2 * a[j] * M[j] + 2 * a[i] * M[i]) / sigma
        if xi <= 0:
            return 0.5
        return math.exp(-xi * xi / 2) / math.sqrt(2 * math.pi) / (xi + 1 / xi)

    worst = [max(p_minus(i, j) for j in rest) for i in selected]
    P_lower, R_lower = 1 / (1 + union), max(0.0, 1 - union)
    P_upper = 1 - max(worst) / (N + 1)
    R_upper = sum(1 - p for p in worst) / N
    f = lambda x: 2 * x / (1 + x)
    return dict(zip(BOUNDS, [P_lower, P_upper, R_lower, R_upper, f(P_lower), f(P_upper),
                             f(R_lower), f(R_upper)]))


def test_paper_variant_equals_the_printed_formulas():
    rng = np.random.default_rng(2)
    worst = 0.0
    for n, d, kappa in [(12, 64, 1.0), (25, 8, 0.05), (40, 128, 3.0)]:
        alpha, norms, cosine = explicit_head(rng, n)
        got = attngeo.bounds(alpha=alpha, norms=norms, cos=cosine, d=d, kappa=kappa,
                             frames=False)
        assert got["N"].tolist() == list(range(1, n + 1))
        for k, N in enumerate(got["N"]):
            want = paper_reference(alpha, norms, cosine, int(N), d, kappa)
            for name in BOUNDS:
                worst = max(worst, abs(got[name][k] - want[name]))
    print(f"largest difference to the printed formulas: {worst:.3g}")
    assert worst < 1e-12


def test_variants_all_lists_each_variant_as_its_own_call():
    every = attngeo.bounds(L=900, N="pow2", variant="all", frames=False)
    names = ["paper", "exact-mean", "scale-invariant", "corrected"]
    assert list(dict.fromkeys(every["variant"].tolist())) == names
    for name in names:
        one = attngeo.bounds(L=900, N="pow2", variant=name, frames=False)
        rows = every["variant"] == name
        for column, values in one.items():
            np.testing.assert_array_equal(np.asarray(every[column])[rows], values)


def cli_equals(cli_text, table, skip=("variant",)):
    want = csv_text_columns(cli_text)
    for name, texts in want.items():
        got = np.asarray(table[name])
        if got.dtype.kind in "iu":
            assert got.tolist() == [int(t) for t in texts], name
        elif got.dtype.kind == "f":
            np.testing.assert_array_equal(got, [float(t) for t in texts], err_msg=name)
        else:
            assert got.tolist() == texts, name
    assert set(table) - set(want) <= set(skip)


def test_equals_the_cli_on_the_preset_and_on_files(cli, tmp_path):
    cli_equals(cli("bounds", "--preset", "paper", "--N", "pow2"),
               attngeo.bounds(N="pow2", frames=False))
    cli_equals(cli("bounds", "--L", 300, "--beta", 0.1, "--profile", "zipf:1.2", "--variant",
                   "corrected", "--kappa", 0.2, "--rank", "contrib", "--N", "1:20"),
               attngeo.bounds(L=300, beta=0.1, profile="zipf:1.2", variant="corrected",
                              kappa=0.2, rank="contrib", N="1:20", frames=False))
    rng = np.random.default_rng(7)
    alpha, norms, cosine = explicit_head(rng, 30)
    for name, array in (("a.txt", alpha), ("n.txt", norms)):
        np.savetxt(tmp_path / name, array, fmt="%.17g")
    np.savetxt(tmp_path / "c.csv", cosine, fmt="%.17g", delimiter=",")
    alpha, norms = np.loadtxt(tmp_path / "a.txt"), np.loadtxt(tmp_path / "n.txt")
    cosine = np.loadtxt(tmp_path / "c.csv", delimiter=",")
    text = cli("bounds", "--alpha", tmp_path / "a.txt", "--norms", tmp_path / "n.txt", "--cos",
               tmp_path / "c.csv", "--kappa", 0.5, "--d", 64, "--variant", "exact-mean")
    cli_equals(text, attngeo.bounds(alpha=alpha, norms=norms, cos=cosine, kappa=0.5, d=64,
                                    variant="exact-mean", frames=False))
    cli_equals(text, attngeo.bounds(alpha=str(tmp_path / "a.txt"), norms=tmp_path / "n.txt",
                                    cos=str(tmp_path / "c.csv"), kappa=0.5, d=64,
                                    variant="exact-mean", frames=False))
    cli_equals(cli("bounds", "--sensitivity", "--N", "1,4,64"),
               attngeo.bounds(sensitivity=True, N=[1, 4, 64], frames=False))


def test_infinite_d_and_float32_arrays():
    rng = np.random.default_rng(1)
    alpha, norms, cosine = explicit_head(rng, 10)
    limit = attngeo.bounds(alpha=alpha, norms=norms, cos=cosine, d=math.inf, frames=False)
    assert np.all((limit["P_lower"] >= 0) & (limit["P_upper"] <= 1))
    wide = attngeo.bounds(alpha=alpha, norms=norms.astype(np.float32), cos=cosine,
                          frames=False)
    narrow = attngeo.bounds(alpha=alpha, norms=norms.astype(np.float32).astype(np.float64),
                            cos=cosine, frames=False)
    np.testing.assert_array_equal(wide["P_upper"], narrow["P_upper"])


def test_data_frame_when_pandas_imports():
    pandas = pytest.importorskip("pandas")
    frame = attngeo.bounds(N="1,2")
    assert isinstance(frame, pandas.DataFrame) and list(frame["N"]) == [1, 2]
    assert frame.columns[:3].tolist() == ["N", "variant", "regime"]


@pytest.mark.parametrize("kwargs, message", [
    (dict(profile="bogus"), "--profile: 'bogus': expected assumption3, uniform, zipf:s"),
    (dict(kappa=-1), "attngeo.bounds: kappa = -1: expected kappa > 0"),
    (dict(L=20), "attngeo.bounds: T1 = 100, T2 = 800, L = 20: expected 0 <= T1 <= T2 <= L"),
    (dict(lambda_=1.5), "attngeo.bounds: lambda_ = 1.5: expected 0 < lambda < 1"),
    (dict(preset="llama"), "preset = 'llama', expected 'paper'"),
    (dict(L="x"), "L = 'x', expected an int"),
    (dict(beta="0.1"), "beta = '0.1', expected a number"),
    (dict(kappa="x"), "attngeo.bounds: kappa = 'x', expected a number"),
    (dict(d="x"), "attngeo.bounds: d = 'x', expected a number"),
    (dict(kappa="1"), "attngeo.bounds: kappa = '1', expected a number"),
    (dict(d=None), "attngeo.bounds: d = None, expected a number"),
    (dict(variant="best"), "variant: 'best', expected paper, exact-mean, scale-invariant or corrected"),
    (dict(rank="top"), "attngeo.bounds: rank: top not in {attn,contrib}"),
    (dict(variant=[]), "variant is empty"),
    (dict(N=2000), "attngeo.bounds: N"),
    (dict(alpha=np.array([0.5, 0.6])), "alpha sums to 1.1, expected 1 within"),
    (dict(alpha=np.array([1.0])), "alpha has 1 weight(s), expected at least 2"),
    (dict(alpha=np.array([1.5, -0.5])), "alpha[1] = -0.5"),
    (dict(alpha=np.array([0.5, 0.5]), L=5), "L = 5 disagrees with alpha, which has n = 2"),
    (dict(alpha=np.array([[0.5, 0.5]])), "alpha has shape (1, 2), expected 1 dimension(s)"),
    (dict(alpha=np.array([1, 0])), "alpha has dtype int64"),
    (dict(L=3, norms=np.ones(3)), "norms has 3 values, expected n = 4"),
    (dict(L=3, norms=np.array([1, 1, math.nan, 1.0])), "norms[2] = nan"),
    (dict(L=1, cos=np.array([[1, 0.5], [0.4, 1]])), "differs from cosine[1][0]"),
    (dict(L=1, cos=np.ones((3, 3))), "cos has shape (3, 3), expected (2, 2)"),
    (dict(alpha=np.array([0.5, 0.5]), profile="file:x.txt"), "alpha cannot be combined"),
])
def test_bad_input_is_a_value_error(kwargs, message):
    with pytest.raises(ValueError) as error:
        attngeo.bounds(**kwargs)
    assert message in str(error.value) and "\n" not in str(error.value)


def test_messages_are_the_clis(cli):
    """The CLI names the flag, Python the keyword; what is expected reads the same."""
    for flags, kwargs in [(["--profile", "bogus"], dict(profile="bogus")),
                          (["--kappa", "-1"], dict(kappa=-1)),
                          (["--L", "20"], dict(L=20))]:
        done = cli.failing("bounds", *flags)
        assert done.returncode == 2
        with pytest.raises(ValueError) as error:
            attngeo.bounds(**kwargs)
        message = str(error.value)
        assert message[message.index("expected"):] in done.stderr


def test_keywords_follow_the_parameter_table():
    """bounds() and simulate() take every head parameter of theory/parameter_table, in its
    order, with the table's defaults for d (and kappa in bounds)."""
    table = attngeo._core.parameter_table()
    head = ["lambda_" if p["key"] == "lambda" else p["key"] for p in table if p["head"]]
    defaults = {p["key"]: p["default"] for p in table}
    for function in (attngeo.bounds, attngeo.simulate):
        signature = inspect.signature(function).parameters
        assert [name for name in signature if name in head] == head, function.__name__
        assert signature["d"].default == defaults["d"] == 128
    assert inspect.signature(attngeo.bounds).parameters["kappa"].default == defaults["kappa"]
