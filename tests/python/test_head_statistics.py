# attngeo.HeadStatistics: the extract folder it writes against a plain NumPy evaluation of the
# per-head statistics (docs/design.md §6) and, where the CLI has `extract`, byte for byte against
# `attngeo extract` on run.c's stories260K dumps; layer order, GQA and bad input.
import math
import os

import numpy as np
import pytest

import attngeo
from test_metrics import cli_message, numpy_reference, python_message, write_points

SHARED = os.environ.get("ATTNGEO_SHARED",
                        os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared"))
FOLDER_FILES = ["heads.csv", "pr.csv", "by_position.csv", "cos_by_lag.csv", "diag.csv",
                "per_doc.safetensors", "sums.safetensors"]


def random_documents(rng, documents, layers, heads, kv_heads, n, d):
    """[documents][layers] of (alpha [H, n] float32 softmax rows, values [H_kv, n, d])."""
    out = []
    for _ in range(documents):
        doc = []
        for _ in range(layers):
            logits = rng.standard_normal((heads, n)) * 2
            logits[:, 0] += 3  # a sink
            alpha = np.exp(logits)
            alpha /= alpha.sum(axis=1, keepdims=True)
            values = rng.standard_normal((kv_heads, n, d)) * (1 + rng.random((kv_heads, n, 1)))
            doc.append((alpha.astype(np.float32), values.astype(np.float32)))
        out.append(doc)
    return out


def fill(statistics, documents, reverse_layers=False):
    for doc in documents:
        layers = list(enumerate(doc))
        for layer, (alpha, values) in reversed(layers) if reverse_layers else layers:
            statistics.add(alpha, values, layer=layer if reverse_layers else None)


def read_bytes(folder, name):
    with open(os.path.join(folder, name), "rb") as handle:
        return handle.read()


# per_doc.safetensors' attention-sink tensors: extract measures them from its forward, which
# HeadStatistics (given α and values only) does not see; it writes them as NaN.
SINK_TENSORS = {"sink_attention", "key_norm_ratio", "cos_query_sink", "cos_query_rest", "massive",
                "secondary_sinks"}


def safetensors_entries(path):
    """{name: (dtype, shape, bytes)} of a safetensors file, read by hand."""
    import json
    import struct
    with open(path, "rb") as handle:
        data = handle.read()
    header_bytes = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + header_bytes])
    body = data[8 + header_bytes:]
    return {name: (entry["dtype"], entry["shape"], body[entry["data_offsets"][0]:entry["data_offsets"][1]])
            for name, entry in header.items() if name != "__metadata__"}


def per_doc_without_sinks(folder):
    entries = safetensors_entries(os.path.join(folder, "per_doc.safetensors"))
    assert SINK_TENSORS <= set(entries)
    return {name: entry for name, entry in entries.items() if name not in SINK_TENSORS}


def test_heads_and_pr_equal_a_numpy_evaluation(tmp_path):
    rng = np.random.default_rng(21)
    L, H, H_kv, n, d = 2, 4, 2, 24, 6
    documents = random_documents(rng, 3, L, H, H_kv, n, d)
    statistics = attngeo.HeadStatistics(context=n, layers=L, N="all", max_lag=8)
    fill(statistics, documents)
    assert statistics.documents == 3
    statistics.write(str(tmp_path / "run"))
    tables = attngeo.read_run(tmp_path / "run", frames=False)["tables"]
    heads, pr = tables["heads"], tables["pr"]
    largest = 0.0
    for row in range(len(heads["layer"])):
        layer, head = int(heads["layer"][row]), int(heads["head"][row])
        assert heads["kv_head"][row] == head // (H // H_kv)
        sums = dict(sink_mass=0.0, last_mass=0.0, m_sink=0.0, m_last=0.0, m_rest=0.0, rho0=0.0)
        P = np.zeros(n)
        for doc in documents:
            alpha = doc[layer][0][head].astype(np.float64)
            values = doc[layer][1][head // (H // H_kv)].astype(np.float64)
            y = alpha[:, None] * values
            norms = np.linalg.norm(values, axis=1)
            sums["sink_mass"] += alpha[0]
            sums["last_mass"] += alpha[-1]
            sums["m_sink"] += np.linalg.norm(y[0])
            sums["m_last"] += np.linalg.norm(y[-1])
            sums["m_rest"] += np.linalg.norm(y[1:-1].sum(axis=0))
            sums["rho0"] += np.mean(values[1:] @ values[0] / (norms[1:] * norms[0]))
            P += numpy_reference(alpha, values, range(1, n + 1))["P"]
        for name, total in sums.items():
            largest = max(largest, abs(heads[name][row] - total / len(documents)))
        rows = (pr["layer"] == layer) & (pr["head"] == head)
        largest = max(largest, float(np.max(np.abs(pr["P_mean"][rows] - P / len(documents)))))
    print(f"largest difference to the NumPy evaluation: {largest:.3g}")
    assert largest < 1e-12


def test_layer_order_threads_and_dtype_do_not_change_the_folder(tmp_path):
    rng = np.random.default_rng(5)
    documents = random_documents(rng, 2, 3, 4, 1, 16, 4)
    first = attngeo.HeadStatistics(context=16, layers=3, N="pow2", threads=1)
    fill(first, documents)
    first.write(str(tmp_path / "a"))
    second = attngeo.HeadStatistics(context=16, layers=3, N="pow2", threads=3)
    fill(second, [[(a.astype(np.float64), np.asfortranarray(v)) for a, v in doc]
                  for doc in documents], reverse_layers=True)
    second.write(str(tmp_path / "b"))
    for name in FOLDER_FILES:
        assert read_bytes(tmp_path / "a", name) == read_bytes(tmp_path / "b", name), name


def test_equals_extract_on_the_stories260k_dumps(cli, tmp_path):
    dumps = os.path.join(SHARED, "golden", "llama2c-stories260K", "stories260K_ref_once")
    model = os.path.join(SHARED, "models", "stories260K", "stories260K.bin")
    if not os.path.exists(dumps + ".attn.f32"):
        pytest.skip(f"no stories260K dumps under {SHARED} (set ATTNGEO_SHARED)")
    if "--model" not in cli.failing("extract", "--help").stdout:
        pytest.skip("this attngeo has no extract (built with ATTNGEO_WITH_TORCH=OFF)")
    L, H, H_kv, d, T = 5, 8, 4, 8, 64
    tokens = np.fromfile(dumps + ".tokens.i32", dtype="<i4")
    attention = np.fromfile(dumps + ".attn.f32", dtype="<f4").reshape(L, H, T, T)
    value_cache = np.fromfile(dumps + ".vcache.f32", dtype="<f4").reshape(L, T, H_kv, d)
    (tmp_path / "ids.txt").write_text(" ".join(map(str, tokens)) + "\n")
    cli("extract", "--model", model, "--tokens", tmp_path / "ids.txt", "--context", T,
        "--engine", "runc", "--quiet", "--out", tmp_path / "extract")
    statistics = attngeo.HeadStatistics(context=T, layers=L)
    for layer in range(L):  # the final query row of each head; values as [H_kv, T, d]
        statistics.add(attention[layer, :, T - 1, :], value_cache[layer].transpose(1, 0, 2))
    statistics.write(str(tmp_path / "python"), model={"family": "llama", "vocab": 512},
                     windows=[tokens.tolist()])
    for name in FOLDER_FILES:
        if name == "per_doc.safetensors":  # every tensor but the sink measures, byte for byte
            assert (per_doc_without_sinks(tmp_path / "python") ==
                    per_doc_without_sinks(tmp_path / "extract"))
            continue
        assert read_bytes(tmp_path / "python", name) == read_bytes(tmp_path / "extract", name), name
    # extract measured the sink; HeadStatistics, without the forward, says it did not (NaN).
    sink = safetensors_entries(os.path.join(tmp_path / "python", "per_doc.safetensors"))
    assert np.isnan(np.frombuffer(sink["sink_attention"][2], dtype="<f4")).all()
    measured = safetensors_entries(os.path.join(tmp_path / "extract", "per_doc.safetensors"))
    assert np.isfinite(np.frombuffer(measured["sink_attention"][2], dtype="<f4")).all()


def test_compare_reads_the_folder(cli, tmp_path):
    rng = np.random.default_rng(3)
    statistics = attngeo.HeadStatistics(context=40, layers=2, N="pow2")
    fill(statistics, random_documents(rng, 3, 2, 2, 2, 40, 8))
    statistics.write(str(tmp_path / "run"))
    cli("compare", "--emp", tmp_path / "run", "--out", tmp_path / "compare", "--quiet")
    assert os.path.isfile(tmp_path / "compare" / "manifest.json")


@pytest.mark.parametrize("call, message", [
    (lambda s: s.add(np.ones((2, 9), np.float32) / 9, np.ones((1, 8, 3), np.float32)),
     "must have context = 8 positions"),
    (lambda s: s.add(np.ones((3, 8), np.float32) / 8, np.ones((2, 8, 3), np.float32)),
     "a divisor H_kv of H"),
    (lambda s: s.add(np.ones((2, 8), np.int32), np.ones((1, 8, 3), np.float32)),
     "alpha has dtype int32, expected float16, float32 or float64"),
    (lambda s: s.add(np.ones(8, np.float32), np.ones((1, 8, 3), np.float32)),
     "alpha has shape (8,), expected 2 dimension(s)"),
    (lambda s: s.add(np.full((2, 8), math.nan, np.float32), np.ones((1, 8, 3), np.float32)),
     "alpha of layer 0 in document 0 holds nan (head 0)"),
    (lambda s: s.add(np.ones((2, 8), np.float32) / 8, np.ones((1, 8, 3)), layer=2),
     "layer = 2, expected 0 <= layer < 2"),
    (lambda s: s.add(np.ones((2, 8), np.float32) / 8, np.ones((1, 8, 3)), layer="x"),
     "layer = 'x', expected None or an int"),
    (lambda s: s.write("unused"), "write: no complete document was added"),
    (lambda s: s.add(np.array([[1.5, -0.5] + [0] * 6] * 2, np.float32), np.ones((1, 8, 3))),
     "alpha of layer 0 in document 0, head 0, position 1: alpha = -0.5 is negative, expected "
     "alpha >= 0"),
])
def test_bad_input_is_a_value_error(call, message):
    statistics = attngeo.HeadStatistics(context=8, layers=2)
    with pytest.raises(ValueError) as error:
        call(statistics)
    assert message in str(error.value) and "\n" not in str(error.value)


def test_misuse_across_calls_is_a_value_error(tmp_path):
    statistics = attngeo.HeadStatistics(context=8, layers=2)
    alpha, values = np.ones((2, 8), np.float32) / 8, np.ones((1, 8, 3), np.float32)
    statistics.add(alpha, values, layer=1)
    with pytest.raises(ValueError, match="layer 1 was already added to document 0"):
        statistics.add(alpha, values, layer=1)
    with pytest.raises(ValueError, match=r"differ from the first add's 2 heads, 1 kv heads"):
        statistics.add(np.ones((4, 8), np.float32) / 8, values)
    with pytest.raises(ValueError, match="write: document 0 has 1 of 2 layers"):
        statistics.write(str(tmp_path / "run"))
    statistics.add(alpha, values)
    with pytest.raises(ValueError, match="model: unknown key 'size'"):
        statistics.write(str(tmp_path / "run"), model={"size": 1})
    with pytest.raises(ValueError, match="windows has 2 token lists, expected one per document"):
        statistics.write(str(tmp_path / "run"), windows=[[1], [2]])
    assert not os.path.exists(tmp_path / "run")
    for kwargs, message in [(dict(context=1, layers=1), "context = 1, expected >= 2"),
                            (dict(context=8, layers=0), "layers = 0, expected >= 1"),
                            (dict(context=8, layers=1, N=9), "N"),
                            (dict(context=8, layers=1, rank="x"), "rank: x not in")]:
        with pytest.raises(ValueError, match=message):
            attngeo.HeadStatistics(**kwargs)


def test_messages_are_the_clis(cli, tmp_path):
    # As attngeo.metrics: the CLI's line (`extract` refuses --rank/--distance as `metrics`
    # does) with "attngeo.HeadStatistics: " for its prefix and the flag named as the keyword.
    points = tmp_path / "points.csv"
    write_points(points, np.ones(2) / 2, np.ones((2, 2)))
    for flags, kwargs in [(["--rank", "top"], dict(rank="top")),
                          (["--distance", "l1"], dict(distance="l1"))]:
        want = cli_message(cli.failing("metrics", "--input", points, *flags), "metrics")
        got = python_message(lambda: attngeo.HeadStatistics(context=8, layers=1, **kwargs),
                             "HeadStatistics")
        assert got == want.replace(flags[0], flags[0][2:], 1), flags
    # A negative weight, printed as the CLI prints the same double (float32 -0.1 widened):
    # the shortest text that reads back, not 6 digits.
    weight = np.float32(-0.1)
    write_points(points, np.array([1 - float(weight), float(weight)]), np.ones((2, 2)))
    want = cli_message(cli.failing("metrics", "--input", points), "metrics")
    alpha = np.full((2, 8), 1 / 8, np.float32)
    alpha[1, 3] = weight
    statistics = attngeo.HeadStatistics(context=8, layers=1)
    got = python_message(lambda: statistics.add(alpha, np.ones((1, 8, 3), np.float32)),
                         "HeadStatistics")
    assert got.startswith("alpha of layer 0 in document 0, head 1, position 3: "), got
    assert want.endswith(": " + got.split(": ", 1)[1]), (want, got)
    assert "-0.10000000149011612" in got
