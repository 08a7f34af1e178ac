# attngeo.read_run / read_table: every CSV of a run folder as typed columns, checked against
# the files' own text; hidden folders skipped; a simulate folder's verdict files and calibration,
# a compare set's universal kappa and model folders; damaged folders and folders of an older
# format_version as one-line ValueErrors, from the C++ reader of the folder's kind (check=True)
# or the CSV reader (hand-made folders, check=False).
import json
import math

import numpy as np
import pytest

import attngeo


MANIFEST = {"tool": "attngeo", "kind": "extract", "format_version": attngeo.FORMAT_VERSION}


def write_folder(root):
    root.mkdir()
    (root / "manifest.json").write_text(json.dumps(MANIFEST))
    (root / "heads.csv").write_text(
        "layer,big,x,se,regime,flag\n"
        "0,1180591620717411303424,0.5,,Mixer,1\n"
        "1,-3,inf,2.5e-3,Retriever,0\n")
    (root / "empty.csv").write_text("N,P\n")
    (root / "sub").mkdir()
    (root / "sub" / "pr.csv").write_text("N,P\n1,1\n2,0.75\n")
    (root / ".partial").mkdir()
    (root / ".partial" / "sums.csv").write_text("a\n1\n")
    (root / "notes.txt").write_text("not a table")


def test_columns_are_typed_as_their_text_says(tmp_path):
    write_folder(tmp_path / "run")
    run = attngeo.read_run(tmp_path / "run", frames=False, check=False)
    assert run["manifest"] == MANIFEST
    assert sorted(run["tables"]) == ["empty", "heads", "sub/pr"]
    heads = run["tables"]["heads"]
    assert heads["layer"].dtype == np.int64 and heads["layer"].tolist() == [0, 1]
    assert heads["big"].tolist() == [2**70, -3]  # beyond int64: exact Python ints
    assert heads["x"].dtype == np.float64 and heads["x"][1] == math.inf
    assert math.isnan(heads["se"][0]) and heads["se"][1] == 2.5e-3
    assert heads["regime"].tolist() == ["Mixer", "Retriever"]
    assert heads["flag"].tolist() == [1, 0]
    assert run["tables"]["empty"]["P"].shape == (0,)
    assert run["tables"]["sub/pr"]["P"].tolist() == [1.0, 0.75]


@pytest.mark.parametrize("version", [None, 0, 1, 2, attngeo.FORMAT_VERSION + 1,
                                     str(attngeo.FORMAT_VERSION)])
def test_a_folder_of_another_format_is_refused_naming_its_manifest(tmp_path, version):
    write_folder(tmp_path / "run")
    manifest = dict(MANIFEST)
    if version is None:
        del manifest["format_version"]
    else:
        manifest["format_version"] = version
    (tmp_path / "run" / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(ValueError) as error:
        attngeo.read_run(tmp_path / "run")
    message = str(error.value)
    assert str(tmp_path / "run" / "manifest.json") in message
    assert f"expected format_version {attngeo.FORMAT_VERSION}" in message and "\n" not in message


def test_a_simulate_folder_reads_back_as_its_text(tmp_path):
    attngeo.simulate(tmp_path / "run", L=31, T1=5, T2=20, d=8, trials=20, N="pow2", kappa=1)
    run = attngeo.read_run(tmp_path / "run", frames=False)
    largest = 0.0
    for name, table in run["tables"].items():
        lines = (tmp_path / "run" / f"{name}.csv").read_text().splitlines()
        header = lines[0].split(",")
        assert list(table) == header
        for k, column in enumerate(header):
            texts = [line.split(",")[k] for line in lines[1:]]
            values = table[column]
            if values.dtype.kind == "U":
                assert values.tolist() == texts
                continue
            want = np.array([float(t) if t else math.nan for t in texts])
            got = values.astype(np.float64)
            same = (got == want) | (np.isnan(got) & np.isnan(want))
            assert same.all(), (name, column)
            finite = np.isfinite(want)
            largest = max(largest, float(np.max(np.abs(got - want)[finite], initial=0)))
    print(f"largest difference to the CSV text: {largest}")
    assert run["manifest"]["kind"] == "simulate"


def small_simulate(folder, frames=None, **sweep):
    return attngeo.simulate(folder, L=31, T1=5, T2=20, d=8, trials=20, N="pow2", kappa=1,
                            frames=frames, **sweep)


def drop_column(path, column):
    """PATH rewritten without COLUMN (every row)."""
    rows = [line.split(",") for line in path.read_text().splitlines()]
    k = rows[0].index(column)
    path.write_text("".join(",".join(r[:k] + r[k + 1:]) + "\n" for r in rows))


@pytest.mark.parametrize("file, column", [("bounds.csv", "P_lower_edge"),
                                          ("bounds.csv", "z_P_upper"),
                                          ("verdict.csv", "kappa_set"),
                                          ("verdict.csv", "replicates_on_split"),
                                          ("kappa_scan.csv", "max_z"),
                                          ("simulate.csv", "P_mean")])
def test_a_damaged_simulate_folder_is_refused_by_its_kinds_reader(tmp_path, file, column):
    """The generic CSV reader would take a table without a column; the simulate folder's
    reader (the report's) wants every column its kind writes, and says which file lacks it."""
    small_simulate(tmp_path / "run")
    attngeo.read_run(tmp_path / "run", frames=False)  # intact: the kind's reader takes it
    drop_column(tmp_path / "run" / file, column)
    with pytest.raises(ValueError) as error:
        attngeo.read_run(tmp_path / "run", frames=False)
    message = str(error.value)
    print(message)
    assert file in message and "\n" not in message
    tables = attngeo.read_run(tmp_path / "run", frames=False, check=False)["tables"]
    assert column not in tables[file[:-len(".csv")]]


def test_a_simulate_folder_of_format_version_1_is_refused_in_one_line(tmp_path):
    """A folder of the release before verdict III (its withdrawn verdict columns) has
    format_version 1: read_run refuses it naming its manifest and the version, with the kind's
    reader or without, before any table is read."""
    small_simulate(tmp_path / "run")
    manifest_path = tmp_path / "run" / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["format_version"] = 1
    manifest_path.write_text(json.dumps(manifest))
    for check in (True, False):
        with pytest.raises(ValueError) as error:
            attngeo.read_run(tmp_path / "run", check=check)
        message = str(error.value)
        assert str(manifest_path) in message and "format_version 1" in message, message
        assert "\n" not in message


def test_the_verdict_files_read_back_with_their_columns(tmp_path):
    """verdict.csv's states and kappa sets as text, its counts as integers, kappa_scan.csv's
    max z as floats, bounds.csv's *_edge columns as numbers, and the manifest's per-side
    blocks agreeing with verdict.csv."""
    run = small_simulate(tmp_path / "run", frames=False)
    tables = run["tables"]
    verdict, scan, bounds = tables["verdict"], tables["kappa_scan"], tables["bounds"]
    assert len(verdict["state"]) == 16
    states = {"holds", "holds-uninformative", "falsified-every-kappa", "kappa-free-falsified",
              "contradicted-by-construction", "falsified-at-given-kappa", "untestable"}
    assert set(verdict["state"].tolist()) <= states
    assert verdict["kappa_set"].dtype.kind == "U"
    assert verdict["persistent_points"].dtype == np.int64
    assert verdict["points"].tolist() == [verdict["points"][0]] * 16
    assert scan["max_z"].dtype == np.float64 and scan["consistent"].dtype == np.int64
    for side in ("P_lower", "P_upper", "R_lower", "R_upper"):
        assert bounds[side + "_edge"].dtype.kind in "if"  # 0 and 1 alone read as integers
    # the kappa the manifest's block judged each side at is the one bounds.csv's rows carry
    envelopes = run["manifest"]["points"][0]["envelopes"]
    for k, variant in enumerate(verdict["variant"].tolist()):
        side = envelopes[variant]["sides"][verdict["metric"][k]][verdict["side"][k]]
        assert side["state"] == verdict["state"][k]
        assert side["kappa_set"] == verdict["kappa_set"][k]


def test_a_calibration_folder_reads_its_calibration_table(tmp_path, cli):
    """simulate --calibrate R adds calibration.csv (false alarms on planted true bounds,
    detection rates per shift) and the manifest's calibration block; read_run reads both."""
    cli("simulate", "--L", 31, "--T1", 5, "--T2", 20, "--d", 8, "--trials", 60, "--N", "pow2",
        "--calibrate", 10, "--quiet", "--out", tmp_path / "run")
    run = attngeo.read_run(tmp_path / "run", frames=False)
    calibration = run["tables"]["calibration"]
    lines = (tmp_path / "run" / "calibration.csv").read_text().splitlines()
    assert len(calibration["side"]) == len(lines) - 1 == 16
    assert calibration["planted"].tolist().count("true") == 4
    assert sorted(set(calibration["shift"].tolist())) == [0.0, 2.0, 4.0, 8.0]
    assert calibration["runs"].dtype == np.int64 and set(calibration["runs"].tolist()) == {10}
    rate = calibration["falsified"] / calibration["runs"]
    largest = float(np.max(np.abs(rate - calibration["rate"])))
    print(f"largest |falsified/runs - rate|: {largest}")
    assert largest <= 1e-15
    assert (calibration["ci_lo"] <= calibration["rate"]).all()
    assert (calibration["rate"] <= calibration["ci_hi"]).all()
    assert run["manifest"]["calibration"]["runs"] == 10


def test_a_compare_set_reads_its_universal_kappa_and_each_model(tmp_path, cli):
    """compare with two --emp writes a compare-set folder: read_run gives its universal_kappa
    table and each model's folder read as a compare folder, in the manifest's order."""
    for name, seed in (("a", 1), ("b", 2)):
        cli("simulate", "--as-extract", tmp_path / name, "--heads", 3, "--docs", 30, "--L", 32,
            "--T1", 4, "--T2", 24, "--d", 16, "--seed", seed, "--quiet")
    cli("compare", "--emp", tmp_path / "a", "--emp", tmp_path / "b", "--replicates", 50,
        "--quiet", "--out", tmp_path / "set")
    run = attngeo.read_run(tmp_path / "set", frames=False)
    assert run["manifest"]["kind"] == "compare-set"
    assert list(run["tables"]) == ["universal_kappa"]
    universal = run["tables"]["universal_kappa"]
    assert len(universal["state"]) == 16
    assert set(universal["state"].tolist()) <= {"universal-kappa", "no-universal-kappa"}
    assert set(universal["models"].tolist()) == {2}
    folders = [m["folder"] for m in run["manifest"]["models"]]
    assert list(run["models"]) == folders and len(folders) == 2
    for folder in folders:
        model = run["models"][folder]
        assert model["manifest"]["kind"] == "compare"
        assert {"verdict", "kappa_scan", "bounds"} <= set(model["tables"])
        # a side with no universal kappa has a model whose own set is empty there
    for k in range(16):
        if universal["state"][k] == "no-universal-kappa":
            own = [run["models"][f]["tables"]["verdict"] for f in folders]
            rows = [next(i for i in range(16)
                         if v["variant"][i] == universal["variant"][k]
                         and v["metric"][i] == universal["metric"][k]
                         and v["side"][i] == universal["side"][k]) for v in own]
            consistent = sum(v["kappa_set"][i] != "none" for v, i in zip(own, rows))
            assert consistent == universal["models_consistent"][k]
    # a model folder the manifest lists must be there
    import shutil
    shutil.rmtree(tmp_path / "set" / folders[1])
    with pytest.raises(ValueError, match=folders[1]):
        attngeo.read_run(tmp_path / "set")


def test_a_sweep_folder_is_read_by_its_kinds_reader(tmp_path):
    run = small_simulate(tmp_path / "run", sweep={"beta": [0.05, 0.2]})
    assert run["manifest"]["kind"] == "sweep"
    assert attngeo.read_run(tmp_path / "run", frames=False)["manifest"] == run["manifest"]
    (tmp_path / "run" / "sweep.csv").write_text("point\n")
    with pytest.raises(ValueError, match="sweep.csv"):
        attngeo.read_run(tmp_path / "run")


def test_a_folder_of_no_known_kind_is_refused_naming_read_run(tmp_path):
    write_folder(tmp_path / "run")
    (tmp_path / "run" / "manifest.json").write_text(json.dumps(dict(MANIFEST, kind="banana")))
    with pytest.raises(ValueError, match=r"attngeo.read_run '.*run': run kind 'banana' has no "
                                         r"reader \(known: simulate, sweep, extract"):
        attngeo.read_run(tmp_path / "run")
    # the hand-made extract folder lacks every file an extract folder has
    (tmp_path / "run" / "manifest.json").write_text(json.dumps(MANIFEST))
    with pytest.raises(ValueError):
        attngeo.read_run(tmp_path / "run")


def test_frames_when_pandas_imports(tmp_path):
    pandas = pytest.importorskip("pandas")
    write_folder(tmp_path / "run")
    frame = attngeo.read_run(tmp_path / "run", check=False)["tables"]["heads"]
    assert isinstance(frame, pandas.DataFrame) and frame["regime"].tolist() == ["Mixer",
                                                                                "Retriever"]
    assert isinstance(attngeo.read_table(tmp_path / "run" / "heads.csv", frames=False), dict)


def test_damaged_folders_are_value_errors(tmp_path):
    with pytest.raises(ValueError, match="has no manifest.json, expected a run folder"):
        attngeo.read_run(tmp_path)
    (tmp_path / "manifest.json").write_text("{")
    with pytest.raises(ValueError, match="manifest.json"):
        attngeo.read_run(tmp_path)
    (tmp_path / "manifest.json").write_text(json.dumps(MANIFEST))
    (tmp_path / "bad.csv").write_text("a,b\n1,2\n3\n")
    with pytest.raises(ValueError, match=r"bad.csv' line 3 has 1 fields, expected 2"):
        attngeo.read_run(tmp_path, check=False)
    (tmp_path / "bad.csv").write_text("")
    with pytest.raises(ValueError, match=r"bad.csv' is empty, expected a header line"):
        attngeo.read_run(tmp_path, check=False)


def test_a_truncate_folder_reads_with_its_extract_subfolder(tmp_path, cli):
    """attngeo truncate --scope head writes truncate.csv, head_link.csv, ... and extract/;
    read_run gives each as a table, the numbers as the CSV's text says."""
    import os
    shared = os.environ.get("ATTNGEO_SHARED", os.path.join(os.path.dirname(__file__),
                                                            "..", "..", "..", "shared"))
    model = os.path.join(shared, "golden", "stories260k-hf")
    windows = os.path.join(shared, "golden", "truncation", "stories260k_windows96.txt")
    if not os.path.isfile(os.path.join(model, "model.safetensors")):
        if os.environ.get("ATTNGEO_REQUIRE_SHARED") == "1":
            pytest.fail(f"shared model {model} not found (ATTNGEO_REQUIRE_SHARED=1)")
        pytest.skip(f"shared model {model} not found")
    help_text = cli.failing("truncate", "--help").stdout
    if "--policy" not in help_text:
        pytest.skip("attngeo built without libtorch: no truncate")
    out = tmp_path / "truncate"
    cli("truncate", "--model", model, "--tokens", windows, "--context", 96, "--docs", 2,
        "--N", "1,8", "--scope", "head", "--heads", "0:0,1:1,2:2", "--replicates", 10,
        "--quiet", "--out", out)
    run = attngeo.read_run(out, frames=False)
    assert run["manifest"]["kind"] == "truncate"
    tables = run["tables"]
    for name in ["truncate", "effective_size", "geometry_link", "head_link", "extract/heads"]:
        assert name in tables, name
    truncate = tables["truncate"]
    text = (out / "truncate.csv").read_text().strip().splitlines()
    header = text[0].split(",")
    column = header.index("delta_nll")
    assert truncate["delta_nll"].tolist() == [float(line.split(",")[column]) for line in text[1:]]
    assert sorted(set(truncate["head"].tolist())) == [0, 1, 2]
    assert set(tables["head_link"]["regime"].tolist()) <= {"Retriever", "Mixer", "Reset"}


def test_a_normalization_folder_reads_like_the_others(tmp_path):
    """docs/commands/normalization.md: critical_N is `nan` where no N is indistinguishable, so
    the column is float64 with NaN, not text; read_run needs no list of kinds."""
    root = tmp_path / "run"
    root.mkdir()
    manifest = {"kind": "normalization", "format_version": attngeo.FORMAT_VERSION,
                "parameters": {"ks_level": 0.01}}
    (root / "manifest.json").write_text(json.dumps(manifest))
    (root / "critical_n_by_length.csv").write_text(
        "length_lo,length_hi,length_mean,critical_N,fraction\n"
        "2,3,2.5,nan,nan\n"
        "4,7,5.5,2,0.36363636363636365\n")
    (root / "sensitivity.csv").write_text(
        "layer,head,temperature,epsilon,queries,g\n0,1,0.01,0.001,42,0.5\n")
    run = attngeo.read_run(root, frames=False, check=False)
    assert run["manifest"]["kind"] == "normalization"
    assert sorted(run["tables"]) == ["critical_n_by_length", "sensitivity"]
    by_length = run["tables"]["critical_n_by_length"]
    assert by_length["length_lo"].dtype == np.int64
    assert by_length["critical_N"].dtype == np.float64
    assert math.isnan(by_length["critical_N"][0]) and by_length["critical_N"][1] == 2
    assert run["tables"]["sensitivity"]["temperature"].tolist() == [0.01]


def test_an_extract_folder_with_by_length_files_reads_them(tmp_path):
    """extract --queries other than last adds by_length.csv and heads_by_length.csv; compare
    then adds by_length_summary.csv and regimes_by_length.csv. read_run lists no files, so
    they are read with the rest: empty standard errors (one query) as NaN, regimes as text."""
    root = tmp_path / "run"
    root.mkdir()
    manifest = dict(MANIFEST, parameters={"queries": "all", "length_bins": [
        {"lo": 1, "hi": 4, "shortest": 1, "positions": 4, "length_mean": 2.5}]})
    (root / "manifest.json").write_text(json.dumps(manifest))
    (root / "by_length.csv").write_text(
        "layer,head,length_lo,length_hi,N,queries,P_mean,P_se,R_mean,R_se\n"
        "0,0,1,4,1,1,1,,1,\n0,0,1,4,2,3,0.5,0.125,0.75,0.25\n")
    (root / "heads_by_length.csv").write_text(
        "layer,head,length_lo,length_hi,queries,lambda,rho0,sink_mass,m_sink,m_last,m_rest,"
        "regime\n0,0,1,4,4,0.5,0.25,0.75,0.5,0.125,0.25,Reset\n")
    run = attngeo.read_run(root, frames=False, check=False)
    assert sorted(run["tables"]) == ["by_length", "heads_by_length"]
    by_length = run["tables"]["by_length"]
    assert by_length["N"].dtype == np.int64
    assert by_length["P_se"].dtype == np.float64 and math.isnan(by_length["P_se"][0])
    assert by_length["R_se"][1] == 0.25
    assert run["tables"]["heads_by_length"]["regime"].tolist() == ["Reset"]
    assert run["manifest"]["parameters"]["length_bins"][0]["length_mean"] == 2.5


def test_an_extract_folder_reads_with_its_sink_tables(tmp_path, cli):
    """extract writes sinks.csv, sink_layers.csv and secondary_sinks.csv (issue 43); read_run
    gives each as a table, the sink rate per layer the mean of its heads' sink shares."""
    import os
    shared = os.environ.get("ATTNGEO_SHARED", os.path.join(os.path.dirname(__file__),
                                                            "..", "..", "..", "shared"))
    model = os.path.join(shared, "models", "tinysink", "tinysink.bin")
    tokens = os.path.join(shared, "models", "tinysink", "fortunes_tokens.txt")
    if not os.path.isfile(model):
        if os.environ.get("ATTNGEO_REQUIRE_SHARED") == "1":
            pytest.fail(f"shared model {model} not found (ATTNGEO_REQUIRE_SHARED=1)")
        pytest.skip(f"shared model {model} not found")
    if "--model" not in cli.failing("extract", "--help").stdout:
        pytest.skip("attngeo built without libtorch: no extract")
    out = tmp_path / "extract"
    cli("extract", "--model", model, "--tokens", tokens, "--bos", "no", "--context", 64, "--docs",
        6, "--N", "pow2", "--quiet", "--out", out)
    tables = attngeo.read_run(out, frames=False)["tables"]
    sinks, layers = tables["sinks"], tables["sink_layers"]
    assert "secondary_sinks" in tables
    assert sinks["layer"].dtype.kind == "i" and sinks["sink_share"].dtype.kind == "f"
    assert len(sinks["layer"]) == 16 and len(layers["layer"]) == 4
    for layer in range(4):
        shares = sinks["sink_share"][sinks["layer"] == layer]
        assert abs(layers["sink_rate"][layer] - shares.mean()) < 1e-12
    assert (sinks["windows"] == 6).all()
    assert layers["sink_rate"][0] > 0.3  # tinysink's sink is in layer 0
