"""attngeo for Python: the exact top-N selection metrics, the bounds of Theorems 1-2 and the
Monte Carlo runs of the `attngeo` CLI on NumPy arrays, and run folders read back as tables.
The kernels are the C++ library's (the `_core` extension); this file adds the keyword
signatures, the CSV tables and the optional pandas DataFrames."""

import csv
import inspect
import json
import math
import os
import re
import shutil
import tempfile

import numpy as np

from . import _core
from ._core import (HeadStatistics, ks_2samp, metrics, random_selection_distance,
                    random_selection_mean_square, random_unit_direction, selection_distance,
                    softmax_sensitivity)

__all__ = ["metrics", "bounds", "simulate", "read_run", "read_table", "HeadStatistics",
           "selection_distance", "random_selection_mean_square", "random_selection_distance",
           "softmax_sensitivity", "random_unit_direction", "ks_2samp"]



def _keyword(key):
    """A parameter's Python keyword: its table key, lambda_ for lambda (a Python keyword)."""
    return "lambda_" if key == "lambda" else key


# The model parameters of theory/parameter_table (the CLI's and the manifests' table).
_PARAMETERS = _core.parameter_table()
# The head keywords shared by bounds() and simulate() (L, p_sink, ..., rho0), in table order.
_HEAD_KEYWORDS = [_keyword(p["key"]) for p in _PARAMETERS if p["head"]]
# The keywords of bounds() and simulate(), by their CLI flag names.
_MODEL_FLAGS = {"preset": "--preset", "profile": "--profile", "sink_mode": "--sink-mode",
                **{_keyword(p["key"]): p["flag"] for p in _PARAMETERS if p["flag"]}}
# Parameters that come from the paper preset unless given (as `attngeo simulate` records).
_PRESET_PARAMETERS = [_keyword(p["key"]) for p in _PARAMETERS if p["from_preset"]]
# The table's defaults (the paper preset's d, kappa = 1 for the bounds, norm_cv = 0).
_DEFAULTS = {_keyword(p["key"]): p["default"] for p in _PARAMETERS}
_INTEGER = re.compile(r"^[+-]?[0-9]+$")


def _pandas():
    try:
        import pandas
    except ImportError:
        return None
    return pandas


def _as_table(columns, frames):
    """A {name: array} table as a pandas DataFrame when `frames` (None: when pandas imports)."""
    pandas = _pandas() if frames in (None, True) else None
    if frames is True and pandas is None:
        raise ValueError("frames=True needs pandas, which does not import")
    return pandas.DataFrame(columns) if pandas is not None else columns


def _column(texts):
    """One CSV column as an array: int64 if every field is an integer (Python ints beyond
    int64 stay exact in an object array), float64 if every field is a number or empty (NaN),
    else str."""
    if texts and all(_INTEGER.match(t) for t in texts):
        values = [int(t) for t in texts]
        if all(-2**63 <= v < 2**63 for v in values):
            return np.array(values, dtype=np.int64)
        return np.array(values, dtype=object)
    try:
        return np.array([float(t) if t != "" else math.nan for t in texts], dtype=np.float64)
    except ValueError:
        return np.array(texts, dtype=str)


def read_table(path, frames=None):
    """One header CSV written by attngeo, as {column: array} (or a DataFrame, see read_run)."""
    with open(path, newline="") as handle:
        rows = list(csv.reader(handle))
    if not rows:
        raise ValueError(f"attngeo.read_table: '{path}' is empty, expected a header line")
    header, body = rows[0], rows[1:]
    for line, row in enumerate(body, start=2):
        if len(row) != len(header):
            raise ValueError(f"attngeo.read_table: '{path}' line {line} has {len(row)} fields, "
                             f"expected {len(header)}")
    columns = {name: _column([row[k] for row in body]) for k, name in enumerate(header)}
    return _as_table(columns, frames)


# The run-folder layout this package reads (common/run_schema.hpp's kFormatVersion).
FORMAT_VERSION = _core.FORMAT_VERSION


def _check_format_version(manifest, manifest_path):
    version = manifest.get("format_version") if isinstance(manifest, dict) else None
    if version is None:
        raise ValueError(f"attngeo.read_run: '{manifest_path}': no format_version, expected "
                         f"format_version {FORMAT_VERSION} (written before run folders were "
                         "versioned: rerun the command that made it)")
    if version != FORMAT_VERSION:
        raise ValueError(f"attngeo.read_run: '{manifest_path}': format_version {version}, "
                         f"expected format_version {FORMAT_VERSION} (written by another attngeo "
                         "release: read it with that release or rerun the command that made it)")


def _read_manifest(path):
    """PATH/manifest.json, checked for this package's format_version."""
    manifest_path = os.path.join(path, "manifest.json")
    if not os.path.isfile(manifest_path):
        raise ValueError(f"attngeo.read_run: '{path}' has no manifest.json, expected a run folder")
    with open(manifest_path) as handle:
        try:
            manifest = json.load(handle)
        except json.JSONDecodeError as error:
            raise ValueError(f"attngeo.read_run: '{manifest_path}': {error}") from None
    _check_format_version(manifest, manifest_path)
    return manifest


def _set_models(manifest, path):
    """The model folders of a compare set, in the manifest's order, each a name inside PATH."""
    models = manifest.get("models")
    folders = [m.get("folder") if isinstance(m, dict) else None for m in models or []]
    for folder in folders:
        if not isinstance(folder, str) or not folder or "/" in folder or folder.startswith("."):
            raise ValueError(f"attngeo.read_run: '{os.path.join(path, 'manifest.json')}': "
                             f"models: {folder!r} is not a folder name inside the set")
    return folders


def _tables(path, frames, skip=()):
    """Every CSV under PATH (hidden folders and the folders named in SKIP left out), keyed by
    its path without ".csv"."""
    tables = {}
    for folder, subfolders, files in os.walk(path):
        top = folder == path
        subfolders[:] = sorted(s for s in subfolders
                               if not s.startswith(".") and not (top and s in skip))
        for name in sorted(files):
            if name.endswith(".csv"):
                file_path = os.path.join(folder, name)
                key = os.path.relpath(file_path, path)[:-len(".csv")].replace(os.sep, "/")
                tables[key] = read_table(file_path, frames)
    return tables


def read_run(path, frames=None, check=True):
    """A run folder (simulate, sweep, extract, compare, ...): {"manifest": dict, "tables":
    {name: table}} with every CSV of the folder and its subfolders, named by its path without
    ".csv" ("simulate", "bounds", "verdict", "kappa_scan", "calibration", ...). Hidden folders
    (an interrupted run's .partial/) are skipped. Tables are pandas DataFrames when pandas
    imports (frames=None), else (or with frames=False) dicts of NumPy arrays.
    A compare set (compare with several --emp, kind "compare-set") reads as {"manifest",
    "tables": {"universal_kappa": ...}, "models": {folder: read_run of that compare folder}},
    the models in the manifest's order.
    check=True first reads the folder with the reader of its manifest's kind, the one
    `attngeo report` uses (every file and column the kind requires, numbers where numbers
    belong), so a damaged folder is one ValueError naming its file; check=False reads any
    folder of this format_version as it is. A folder of another format_version (an older
    release's) is refused with one line naming its manifest."""
    path = os.fspath(path)
    manifest = _read_manifest(path)
    if check:
        _core.check_run_folder(path)
    if manifest.get("kind") != "compare-set":
        return {"manifest": manifest, "tables": _tables(path, frames)}
    folders = _set_models(manifest, path)
    return {"manifest": manifest, "tables": _tables(path, frames, skip=folders),
            "models": {folder: read_run(os.path.join(path, folder), frames, check=False)
                       for folder in folders}}


def _number(value, name, function):
    """A float argument, refused as the model keywords are (C++ real_entry): a str or bool is
    not taken for a number, so kappa="1" fails as beta="0.1" does."""
    if not isinstance(value, (str, bytes, bool)):
        try:
            return float(value)
        except (TypeError, ValueError):
            pass
    raise ValueError(f"attngeo.{function}: {name} = {value!r}, expected a number")


def _model_dict(preset, profile, parameters):
    model = {"preset": preset, "profile": profile}
    for name, value in parameters.items():
        model["lambda" if name == "lambda_" else name] = value
    return model


def _is_path(value):
    return isinstance(value, (str, os.PathLike))


def bounds(*, preset="paper", profile="assumption3", L=None, p_sink=None, T1=None, T2=None,
           eta=None, omega=None, C=None, lambda_=None, beta=None, rho0=None, alpha=None,
           norms=None, cos=None, d=_DEFAULTS["d"], kappa=_DEFAULTS["kappa"], variant="paper",
           rank="attn", N="all", sensitivity=False, frames=None):
    """The envelopes of Theorems 1-2 and Corollary 1, as `attngeo bounds` prints them.

    The head: the paper preset with any of L, p_sink, T1, T2, eta, omega (Assumption 3), C,
    lambda_ (Assumption 1), beta, rho0 (Assumption 2) overridden (None keeps the preset);
    profile "assumption3" | "uniform" | "zipf:s" | "file:PATH"; alpha [n], norms [n] and cos
    [n, n] as arrays or file paths replace the profile, C/lambda_ and beta/rho0.
    d (float("inf") for the d -> infinity limit), kappa, variant (a name, a list of names or
    "all": paper, exact-mean, scale-invariant, corrected), rank ("attn" | "contrib"), N as in
    metrics(). Returns the CLI's columns with a `variant` column after N (one block of rows
    per variant); with sensitivity=True the Table-1 derivatives d(bound)/d(log parameter)."""
    given = locals()
    parameters = {name: given[name] for name in _HEAD_KEYWORDS}
    model = _model_dict(preset, profile, parameters)
    arrays = {}
    for name, value in (("alpha", alpha), ("norms", norms), ("cos", cos)):
        if _is_path(value):
            model[name + "_file"] = os.fspath(value)
            value = None
        arrays[name] = value
    variants = [variant] if isinstance(variant, str) else list(variant)
    table = _core.bounds(model, arrays["alpha"], arrays["norms"], arrays["cos"],
                         _number(d, "d", "bounds"), _number(kappa, "kappa", "bounds"), variants,
                         rank, N, bool(sensitivity))
    for name in ("variant", "regime", "parameter"):
        if name in table:
            table[name] = np.array(table[name], dtype=str)
    return _as_table(table, frames)


def _write_input(folder, name, array):
    """An explicit array as the CLI's input file (one value per line, or CSV rows), %.17g."""
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, name + ".txt")
    values = np.asarray(array, dtype=np.float64)
    np.savetxt(path, values if values.ndim == 2 else values.reshape(-1, 1), fmt="%.17g",
               delimiter=",")
    return path


def simulate(out=None, *, preset="paper", profile="assumption3", L=None, p_sink=None, T1=None,
             T2=None, eta=None, omega=None, C=None, lambda_=None, beta=None, rho0=None,
             alpha=None, norms=None, cos=None, d=_DEFAULTS["d"], kappa=None, trials=1000,
             seed=1, threads=0, N="all", rank="attn", distance="euclidean", sink_mode="exact",
             norm_cv=_DEFAULTS["norm_cv"], sweep=None, frames=None):
    """A Monte Carlo run under Assumptions 1-3 with the bounds beside it, as `attngeo
    simulate` (or, with sweep={"beta": [0.01, 0.1], ...}, `attngeo sweep`) writes it.

    The model keywords are those of bounds(); alpha, norms and cos given as arrays are written
    to OUT/inputs/ (%.17g) and read from there. kappa None judges each side by its kappa set
    (test inversion, docs/design.md section 7); a number judges that kappa alone. The folder
    goes to `out` (kept) or to a temporary folder (removed). Returns read_run() of
    the folder: {"manifest": dict, "tables": {"simulate" | "sweep", "bounds", "sums",
    "kappa_scan", ...}}, bit for bit the CLI's numbers for the same parameters and seed."""
    arguments = dict(preset=preset, profile=profile, L=L, p_sink=p_sink, T1=T1, T2=T2, eta=eta,
                     omega=omega, C=C, lambda_=lambda_, beta=beta, rho0=rho0, alpha=alpha,
                     norms=norms, cos=cos, d=d, kappa=kappa, trials=trials, seed=seed,
                     threads=threads, N=N, rank=rank, distance=distance, sink_mode=sink_mode,
                     norm_cv=norm_cv, sweep=sweep)
    provenance = _provenance(arguments)
    parameters = {name: arguments[name] for name in _HEAD_KEYWORDS}
    sweep_items = [(str(k), [float(v) for v in np.atleast_1d(values)])
                   for k, values in (sweep or {}).items()]
    scratch = tempfile.mkdtemp(prefix="attngeo-simulate-") if out is None else None
    folder = os.path.join(scratch, "run") if scratch else os.fspath(out)
    created_inputs = None
    try:
        model = _model_dict(preset, profile, parameters)
        for name, value in (("alpha", alpha), ("norms", norms), ("cos", cos)):
            if value is None:
                continue
            if not _is_path(value):
                created_inputs = os.path.join(folder, "inputs")
                value = _write_input(created_inputs, name, value)
            model[name + "_file"] = os.fspath(value)
        _core.simulate_run(folder, model, _number(d, "d", "simulate"),
                           None if kappa is None else _number(kappa, "kappa", "simulate"),
                           int(trials), int(seed), int(threads), N, rank, distance, sink_mode,
                           _number(norm_cv, "norm_cv", "simulate"), sweep_items,
                           json.dumps(provenance))
        return read_run(folder, frames)
    except BaseException:
        if created_inputs and scratch is None:
            shutil.rmtree(created_inputs, ignore_errors=True)
        raise
    finally:
        if scratch:
            shutil.rmtree(scratch, ignore_errors=True)


def _differs(value, default):
    try:
        return bool(value != default)
    except (TypeError, ValueError):  # an array: compared element by element
        return True


def _provenance(arguments):
    """What the manifest records of the call, as `attngeo simulate` records its command line:
    the call, the keywords given (by their CLI flag names) and the parameters left to the
    preset."""
    defaults = {name: parameter.default
                for name, parameter in inspect.signature(simulate).parameters.items()}
    given = [name for name, value in arguments.items()
             if value is not None and _differs(value, defaults[name])]
    shown = ", ".join(f"{name}={arguments[name]!r}" for name in given
                      if isinstance(arguments[name], (str, int, float, dict, list, tuple)))
    return {"command": f"attngeo.simulate({shown})",
            "explicit_flags": [_MODEL_FLAGS.get(name, "--" + name) for name in given],
            "from_preset": [_MODEL_FLAGS[name][2:] for name in _PRESET_PARAMETERS
                            if name not in given]}
