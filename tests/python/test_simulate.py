# attngeo.simulate against `attngeo simulate` / `attngeo sweep` with the same parameters and
# seed (every CSV byte for byte, the manifest apart from command line and timings), the tables
# against the folder's own text, and bad input as one-line ValueErrors.
import json
import math
import os
import tempfile

import numpy as np
import pytest

import attngeo

SMALL = dict(L=63, T1=10, T2=50, d=16, trials=40, N="pow2", seed=3)
SMALL_FLAGS = ["--L", 63, "--T1", 10, "--T2", 50, "--d", 16, "--trials", 40, "--N", "pow2",
               "--seed", 3, "--quiet"]


def csv_files(folder):
    return sorted(name for name in os.listdir(folder) if name.endswith(".csv"))


def assert_same_folders(python_dir, cli_dir):
    assert csv_files(python_dir) == csv_files(cli_dir)
    for name in csv_files(cli_dir):
        with open(os.path.join(python_dir, name), "rb") as a, \
                open(os.path.join(cli_dir, name), "rb") as b:
            assert a.read() == b.read(), name
    manifests = []
    for folder in (python_dir, cli_dir):
        with open(os.path.join(folder, "manifest.json")) as handle:
            manifest = json.load(handle)
        # git_commit: a build-time value; threads: torch, once imported, sets OpenMP's default.
        for key in ("command", "explicit_flags", "timings", "git_commit", "threads"):
            manifest.pop(key)
        manifests.append(manifest)
    assert manifests[0] == manifests[1]


def test_simulate_equals_the_cli(cli, tmp_path):
    cli("simulate", *SMALL_FLAGS, "--kappa", 0.5, "--out", tmp_path / "cli")
    run = attngeo.simulate(tmp_path / "py", kappa=0.5, frames=False, **SMALL)
    assert_same_folders(tmp_path / "py", tmp_path / "cli")
    table = run["tables"]["simulate"]
    assert table["N"].tolist() == [1, 2, 4, 8, 16, 32, 64]
    assert np.all(table["trials"] == 40)
    assert np.all((table["P_ci_lo"] <= table["P_mean"]) & (table["P_mean"] <= table["P_ci_hi"]))
    assert run["manifest"]["kind"] == "simulate" and run["manifest"]["from_preset"] == [
        "p-sink", "eta", "omega", "C", "lambda", "beta", "rho0"]


def test_sweep_with_fitted_kappa_equals_the_cli(cli, tmp_path):
    cli("sweep", *SMALL_FLAGS, "--set", "beta=0.05,0.2", "--set", "norm_cv=0,0.1", "--out",
        tmp_path / "cli")
    run = attngeo.simulate(tmp_path / "py", sweep={"beta": [0.05, 0.2], "norm_cv": [0, 0.1]},
                           frames=False, **SMALL)
    assert_same_folders(tmp_path / "py", tmp_path / "cli")
    assert sorted(set(run["tables"]["sweep"]["grid"].tolist())) == [0, 1, 2, 3]


def test_explicit_arrays_equal_the_clis_files(cli, tmp_path):
    rng = np.random.default_rng(4)
    n = 20
    alpha = rng.random(n)
    alpha /= alpha.sum()
    norms = 1 + rng.random(n)
    np.savetxt(tmp_path / "alpha.txt", alpha, fmt="%.17g")
    np.savetxt(tmp_path / "norms.txt", norms, fmt="%.17g")
    alpha, norms = np.loadtxt(tmp_path / "alpha.txt"), np.loadtxt(tmp_path / "norms.txt")
    cli("simulate", "--alpha", tmp_path / "alpha.txt", "--norms", tmp_path / "norms.txt",
        "--d", 8, "--trials", 30, "--quiet", "--kappa", 1, "--out", tmp_path / "cli")
    run = attngeo.simulate(tmp_path / "py", alpha=alpha, norms=norms.astype(np.float64), d=8,
                           trials=30, kappa=1, frames=False)
    for name in csv_files(tmp_path / "cli"):
        with open(tmp_path / "py" / name, "rb") as a, open(tmp_path / "cli" / name, "rb") as b:
            assert a.read() == b.read(), name
    assert os.path.isfile(tmp_path / "py" / "inputs" / "alpha.txt")
    assert run["manifest"]["config"]["model"]["alpha_file"].endswith("alpha.txt")


def test_without_out_leaves_nothing_and_gives_frames(tmp_path, monkeypatch):
    pandas = pytest.importorskip("pandas")
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    run = attngeo.simulate(d=math.inf, L=40, T1=5, T2=30)
    assert isinstance(run["tables"]["bounds"], pandas.DataFrame)
    assert set(run["tables"]) >= {"simulate", "bounds", "sums", "kappa_scan"}
    assert run["manifest"]["points"][0]["trials"] == 0  # d = inf: the expected Gram, no trials
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("kwargs, message", [
    (dict(rho0=0.99, beta=0.001), "is infeasible with beta = 0.001 and L = 63: the largest"),
    (dict(sweep={"gamma": [1]}), "sweep: unknown parameter 'gamma', expected one of L, p_sink"),
    (dict(sweep={"beta": []}), "sweep: parameter 'beta' has no values"),
    (dict(trials=0), "trials = 0, expected >= 1"),
    (dict(threads=-2), "threads = -2, expected >= 0"),
    (dict(kappa="x"), "attngeo.simulate: kappa = 'x', expected a number"),
    (dict(norm_cv="0.1"), "attngeo.simulate: norm_cv = '0.1', expected a number"),
    (dict(N=[0]), "--N: 0 is out of range, expected 1 <= N <= n = 64"),
    (dict(N=[1.5]), "N must be"),
    (dict(alpha=np.array([0.7, 0.7])), "--alpha file"),
    (dict(sink_mode="other"), "--sink-mode: 'other', expected exact or project"),
])
def test_bad_input_is_a_value_error(tmp_path, kwargs, message):
    arguments = dict(SMALL, **kwargs)
    with pytest.raises(ValueError) as error:
        attngeo.simulate(tmp_path / "run", **arguments)
    assert message in str(error.value) and "\n" not in str(error.value)
    assert not os.path.exists(tmp_path / "run" / "manifest.json")
    assert not os.path.exists(tmp_path / "run" / "inputs")


def test_out_that_is_a_file_is_refused(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(ValueError, match="attngeo.simulate: out '.*file': exists and is not a"):
        attngeo.simulate(tmp_path / "file", **SMALL)
