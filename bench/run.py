#!/usr/bin/env python3
"""attngeo's performance table (issue 42): every figure beside its peer or floor measured in the
same run, the ratio and the goal. Rows:
  trial      the simulator's all-N trial (n = 1025, d = 128, 1 thread) against the NumPy peer
             (bench/numpy_trial.py) and the floor: the faster of OpenBLAS SSYRK and our Gram
             tiles (AVX-512 where the CPU has it) on the same values, plus the all-N sweep on
             the Gram matrix (bench_simulate's stage benchmarks); the draw is not in the floor
  forward    extract's forward of the synthetic 8-layer model (hidden 512, 8 heads, 2 kv heads,
             T = 1024, 1 thread) in GFLOP/s against NumPy's sgemm rate on the same shapes
  statistics extract's statistics per (head, document) against the simulator's trial, n = 1024, d = 64
  peer       extract end to end against transformers' eager forward + the NumPy statistics,
             where a Python with transformers is given (--peer-python)
  compare    compare of the synthetic model's 64 heads x 1024 N x 3 documents
  truncate   truncate --scope all per N against one full forward
  long       extract at T = 4096: seconds per document and peak RSS
  long7b     (opt-in, --7b) extract of a LLaMA-2-7B-shaped bf16 model at T = 2048: seconds per
             document and peak RSS (writes 13.5 GB of weights under the temporary folder)
Usage: python3 bench/run.py [BUILD] [--quick] [--peer-python PY] [--only row,row] [--7b]
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
ONE_THREAD = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def run(cmd, env=None, capture=True):
    full = dict(os.environ, **(env or {}))
    r = subprocess.run(cmd, env=full, text=True, capture_output=capture)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({r.returncode}): {r.stderr[-2000:]}")
    return r.stdout


def gbench(binary, pattern, reps):
    """Median time (ms) per item (a trial, a head) of each benchmark matching `pattern`."""
    out = run([binary, f"--benchmark_filter={pattern}", f"--benchmark_repetitions={reps}",
               "--benchmark_format=json", "--benchmark_report_aggregates_only=true"], ONE_THREAD)
    medians = {}
    for b in json.loads(out)["benchmarks"]:
        if b.get("aggregate_name") != "median":
            continue
        if "items_per_second" in b:  # a batch per iteration (trials): the time per item
            medians[b["run_name"]] = 1e3 / b["items_per_second"]
        else:
            scale = {"ms": 1, "us": 1e-3, "ns": 1e-6, "s": 1e3}[b["time_unit"]]
            medians[b["run_name"]] = b["real_time"] * scale
    return medians


def pick(medians, prefix):
    for name, value in medians.items():
        if name.startswith(prefix):
            return value
    raise KeyError(f"no benchmark {prefix} in {list(medians)}")


class Table:
    def __init__(self):
        self.rows = []
        self.notes = []  # text printed under the table (the forward's breakdown)

    def add(self, work, ours, peer, ratio, goal, met):
        self.rows.append((work, ours, peer, ratio, goal, met))
        print(f"[bench] {work}: {ours} | {peer} | {ratio} | {goal} | {met}", file=sys.stderr)

    def markdown(self):
        lines = ["| work | attngeo | peer or floor (same run) | ratio | goal | met |",
                 "|---|---|---|---|---|---|"]
        lines += ["| " + " | ".join(r) + " |" for r in self.rows]
        return "\n".join(lines + self.notes)


def trial_row(build, table, reps):
    medians = gbench(os.path.join(build, "bench", "bench_simulate"),
                     "BM_Trial/n:1025/d:128/allN:1/threads:1/|BM_SingleGramSsyrk/1025/128|"
                     "BM_SingleGram/n:1025/d:128/bits:0|"
                     "BM_MetricsFromSingleGram/n:1025/d:128/radii:0", reps)
    ours = pick(medians, "BM_Trial/n:1025/d:128/allN:1/threads:1")
    ssyrk, tiles = pick(medians, "BM_SingleGramSsyrk"), pick(medians, "BM_SingleGram/n:")
    gram_name = "SSYRK" if ssyrk <= tiles else "the Gram tiles"
    floor = min(ssyrk, tiles) + pick(medians, "BM_MetricsFromSingleGram")
    numpy_ms = []
    for _ in range(reps):
        out = run([sys.executable, os.path.join(HERE, "numpy_trial.py"), "1025", "128", "5"],
                  ONE_THREAD)
        numpy_ms.append(float(re.search(r": ([0-9.]+) ms", out).group(1)))
    numpy = statistics.median(numpy_ms)
    table.add("Monte Carlo all-N trial, n = 1025, d = 128, 1 thread", f"{ours:.2f} ms",
              f"NumPy {numpy:.1f} ms", f"{numpy / ours:.1f}x faster", ">= 25x",
              "yes" if numpy / ours >= 25 else "no")
    table.add("  the same trial against its floor", f"{ours:.2f} ms",
              f"{gram_name} + all-N sweep {floor:.2f} ms (SSYRK {ssyrk:.2f}, tiles "
              f"{tiles:.2f})", f"{ours / floor:.2f}x the floor", "<= 1.3x",
              "yes" if ours / floor <= 1.3 else "no")


def synthetic(build, work, name, windows, context):
    folder = os.path.join(work, name)
    if not os.path.exists(folder):
        run([os.path.join(build, "bench", "make_synthetic_llama"), folder, str(windows),
             str(context)])
    return folder


def forward_flops(config, t):
    """Causal forward of the layers (no LM head): projections, attention, MLP."""
    h, heads = config["hidden_size"], config["num_attention_heads"]
    kv, inter = config["num_key_value_heads"], config["intermediate_size"]
    d = h // heads
    per_layer = (2 * t * h * h * 2 + 2 * t * h * 2 * kv * d + 6 * t * h * inter
                 + 2 * h * t * (t + 1))
    return per_layer * config["num_hidden_layers"]


def extract(build, model, out, context, n_grid="pow2", env=None, extra=()):
    cmd = [os.path.join(build, "app", "attngeo"), "extract", "--model", model, "--tokens",
           os.path.join(model, "windows.txt"), "--context", str(context), "--N", n_grid,
           "--threads", "1", "--quiet", "--out", out, *extra]
    run(cmd, env)
    return json.load(open(os.path.join(out, "manifest.json")))


def forward_row(build, work, table):
    model = synthetic(build, work, "syn1024", 2, 1024)
    config = json.load(open(os.path.join(model, "config.json")))
    manifest = extract(build, model, os.path.join(work, "fwd"), 1024, env=ONE_THREAD)
    docs = manifest["documents"]["windows_used"]
    seconds = manifest["timings"]["forward_s"] / docs
    rate = forward_flops(config, 1024) / seconds / 1e9
    peer = json.loads(run([sys.executable, os.path.join(HERE, "sgemm_shapes.py"),
                           str(config["hidden_size"]), str(config["num_attention_heads"]),
                           str(config["num_key_value_heads"]), str(config["intermediate_size"]),
                           "1024"], ONE_THREAD))
    table.add("extract forward, synthetic 8L/512/8H (GQA 2), T = 1024, 1 thread",
              f"{seconds:.3f} s/doc = {rate:.0f} GFLOP/s",
              f"sgemm of the same shapes {peer['gflops']:.0f} GFLOP/s",
              f"{rate / peer['gflops']:.2f} of the sgemm rate", ">= 0.8",
              "yes" if rate / peer["gflops"] >= 0.8 else "no")
    forward_breakdown(build, model, 1024, table)


def fold_trace(path):
    """Self time (ms) per stage (the forward's named scopes) and per (stage, aten op) of a
    Chrome trace of one forward; a stage's time is the self time of everything inside it that is
    not inside a nested stage, "other" is what no stage holds (residual adds, the embedding)."""
    events = sorted((e for e in json.load(open(path)) if e.get("ph") == "X"),
                    key=lambda e: (e["ts"], -e["dur"]))
    stage_ms, op_ms, stack = {}, {}, []
    nodes = []
    for e in events:
        end = e["ts"] + e["dur"]
        while stack and stack[-1]["end"] <= e["ts"]:
            stack.pop()
        parent = stack[-1] if stack else None
        stage = e["name"] if not e["name"].startswith("aten::") else (
            parent["stage"] if parent else "other")
        node = {"end": end, "self": e["dur"], "stage": stage, "name": e["name"]}
        if parent:
            parent["self"] -= e["dur"]
        stack.append(node)
        nodes.append(node)
    for n in nodes:
        stage_ms[n["stage"]] = stage_ms.get(n["stage"], 0) + n["self"] / 1e3
        if n["name"].startswith("aten::"):
            key = (n["stage"], n["name"][6:])
            op_ms[key] = op_ms.get(key, 0) + n["self"] / 1e3
    total = (max(e["ts"] + e["dur"] for e in events) - events[0]["ts"]) / 1e3
    return total, stage_ms, op_ms


def forward_breakdown(build, model, tokens, table):
    trace = os.path.join(os.path.dirname(model), "forward_trace.json")
    run([os.path.join(build, "bench", "forward_profile"), model, str(tokens), trace], ONE_THREAD)
    total, stages, ops = fold_trace(trace)
    table.notes += ["", f"Where one profiled forward's {total:.0f} ms go (T = {tokens}, 1 thread; "
                    "the named stages of empirical/model/transformer.cpp, each with its three "
                    "largest aten operations by self time):", "",
                    "| stage | ms | share | largest operations (ms) |", "|---|---|---|---|"]
    for stage, ms in sorted(stages.items(), key=lambda kv: -kv[1]):
        top = sorted(((o, t) for (st, o), t in ops.items() if st == stage), key=lambda x: -x[1])
        table.notes.append(f"| {stage} | {ms:.1f} | {100 * ms / total:.0f} % | "
                           + ", ".join(f"{o} {t:.1f}" for o, t in top[:3]) + " |")


def statistics_row(build, table, reps):
    medians = gbench(os.path.join(build, "bench", "bench_statistics"),
                     "BM_HeadStatistics/n:1024/d:64/reference:0|BM_SimulatorTrial/n:1024/d:64",
                     reps)
    ours = pick(medians, "BM_HeadStatistics/n:1024/d:64/reference:0")
    trial = pick(medians, "BM_SimulatorTrial/n:1024/d:64")
    table.add("extract statistics per (head, document), n = 1024, d = 64, 1 thread",
              f"{ours:.2f} ms", f"simulator trial {trial:.2f} ms", f"{ours / trial:.2f}x",
              "<= 1.5x", "yes" if ours / trial <= 1.5 else "no")


def peer_row(build, work, table, python):
    model = synthetic(build, work, "syn1024", 2, 1024)
    if not python:
        table.add("extract end to end vs transformers eager + NumPy, 1 thread", "-",
                  "not measured: no Python with transformers (--peer-python)", "-", ">= 5x", "-")
        return
    # Both sides' per-document work (forward, copies, statistics), model loading left out.
    t = extract(build, model, os.path.join(work, "peer_ours"), 1024, "all", ONE_THREAD)["timings"]
    ours = (t["forward_s"] + t["capture_copy_s"] + t["metrics_device_s"] + t["statistics_s"] +
            t["sinks_s"])
    out = run([python, os.path.join(HERE, "peer_extract.py"), model, "1024"], ONE_THREAD)
    theirs = json.loads(out)["seconds"]
    table.add("extract --N all vs transformers eager + NumPy statistics, 1 thread, 2 docs "
              "(loading excluded)", f"{ours:.2f} s", f"{theirs:.2f} s",
              f"{theirs / ours:.1f}x faster", ">= 5x", "yes" if theirs / ours >= 5 else "no")


def compare_row(build, work, table):
    model = synthetic(build, work, "syn3", 3, 1024)
    emp = os.path.join(work, "syn3_extract")
    extract(build, model, emp, 1024, "all")
    out = os.path.join(work, "syn3_compare")
    start = time.perf_counter()
    run([os.path.join(build, "app", "attngeo"), "compare", "--emp", emp, "--out", out,
         "--quiet"])
    seconds = time.perf_counter() - start
    timings = json.load(open(os.path.join(out, "manifest.json")))["timings"]
    table.add("compare, 64 heads x 1024 N x 3 documents, 2 threads", f"{seconds:.1f} s",
              f"envelopes {timings['envelopes_s']:.1f} s, intervals "
              f"{timings['intervals_s']:.1f} s", "-", "<= 15 s",
              "yes" if seconds <= 15 else "no")


def truncate_row(build, work, table):
    model = synthetic(build, work, "syn1024", 2, 1024)
    out = os.path.join(work, "trunc")
    run([os.path.join(build, "app", "attngeo"), "truncate", "--model", model, "--tokens",
         os.path.join(model, "windows.txt"), "--context", "1024", "--N", "1,16,256",
         "--scope", "all", "--policy", "attn", "--replicates", "0", "--quiet", "--out", out],
        ONE_THREAD)
    t = json.load(open(os.path.join(out, "manifest.json")))["timings"]
    full = t["full_forward_s"]
    per_n = t["truncated_forward_s"] / 3
    table.add("truncate --scope all, per N, synthetic T = 1024, 1 thread",
              f"{per_n:.2f} s per N", f"one full forward {full:.2f} s",
              f"{per_n / full:.2f}x", "<= 2x", "yes" if per_n / full <= 2 else "no")


def long_row(build, work, table):
    model = synthetic(build, work, "syn4096", 1, 4096)
    out = os.path.join(work, "long")
    timed = ["/usr/bin/time", "-v"]
    cmd = [os.path.join(build, "app", "attngeo"), "extract", "--model", model, "--tokens",
           os.path.join(model, "windows.txt"), "--context", "4096", "--N", "pow2", "--quiet",
           "--out", out]
    r = subprocess.run(timed + cmd, text=True, capture_output=True)
    if r.returncode != 0:
        raise RuntimeError(r.stderr[-2000:])
    rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", r.stderr).group(1))
    m = json.load(open(os.path.join(out, "manifest.json")))
    per_doc = m["timings"]["total_s"] / m["documents"]["windows_used"]
    table.add("extract at T = 4096, synthetic, 2 threads", f"{per_doc:.1f} s/doc",
              f"peak RSS {rss / 2**20:.2f} GiB", "-", "nothing allocates L*H*T^2 at once",
              "yes" if rss / 2**20 < 4 else "no")


def long_7b_row(build, work, table):
    """Opt-in (--7b): LLaMA-2-7B's shapes in bfloat16 (13.5 GB of random weights written under
    the bench's temporary folder) at T = 2048, one document."""
    model = os.path.join(work, "llama2_7b")
    run([os.path.join(build, "bench", "make_synthetic_llama"), model, "1", "2048", "--shape",
         "llama2-7b", "--dtype", "bfloat16"])
    out = os.path.join(work, "long_7b")
    cmd = [os.path.join(build, "app", "attngeo"), "extract", "--model", model, "--tokens",
           os.path.join(model, "windows.txt"), "--context", "2048", "--N", "pow2", "--dtype",
           "bfloat16", "--quiet", "--out", out]
    r = subprocess.run(["/usr/bin/time", "-v"] + cmd, text=True, capture_output=True)
    if r.returncode != 0:
        raise RuntimeError(r.stderr[-2000:])
    rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", r.stderr).group(1))
    t = json.load(open(os.path.join(out, "manifest.json")))["timings"]
    table.add("extract, LLaMA-2-7B shape in bf16 (32L/4096/32H), T = 2048, 1 document, "
              f"{os.cpu_count()} threads", f"{t['total_s'] - t['load_s']:.0f} s/doc (forward "
              f"{t['forward_s']:.0f} s, statistics {t['statistics_s']:.0f} s; load "
              f"{t['load_s']:.0f} s)", f"peak RSS {rss / 2**20:.2f} GiB (weights 12.6 GiB "
              "mapped)", "-", "nothing allocates L*H*T^2 at once", "yes" if rss / 2**20 < 16
              else "no")
    shutil.rmtree(model, ignore_errors=True)


ROWS = {"trial": trial_row, "forward": forward_row, "statistics": statistics_row,
        "peer": peer_row, "compare": compare_row, "truncate": truncate_row, "long": long_row}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("build", nargs="?", default="build")
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    parser.add_argument("--peer-python", default=os.environ.get("PEER_PYTHON", ""))
    parser.add_argument("--only", default=",".join(ROWS))
    parser.add_argument("--7b", dest="with_7b", action="store_true",
                        help="add the opt-in LLaMA-2-7B-shaped bf16 row (13.5 GB on disk)")
    args = parser.parse_args()
    names = args.only.split(",") + (["long7b"] if args.with_7b else [])
    unknown = [n for n in names if n not in ROWS and n != "long7b"]
    if unknown:
        parser.error(f"--only: unknown row '{unknown[0]}', expected some of {', '.join(ROWS)}, "
                     "long7b")
    build = os.path.abspath(args.build)
    reps = 3 if args.quick else 7
    table = Table()
    work = tempfile.mkdtemp(prefix="attngeo_bench_")
    try:
        for name in names:
            if name == "long7b":
                long_7b_row(build, work, table)
            elif name in ("trial", "statistics"):
                ROWS[name](build, table, reps)
            elif name == "peer":
                ROWS[name](build, work, table, args.peer_python)
            else:
                ROWS[name](build, work, table)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(table.markdown())


if __name__ == "__main__":
    main()
