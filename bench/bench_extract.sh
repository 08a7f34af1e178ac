#!/usr/bin/env bash
# Documents/s of `attngeo extract`, split into forward, capture (copy of α and values to the
# host), the batched Gram matrices (--metrics device) and the per-head statistics, for
# stories260K (../shared) and the synthetic 8-layer LLaMA at context 1024. Prints a table.
# With --7b (opt-in, not CI: writes 13.5 GB under a temporary folder, removed at exit) it also
# prints the LLaMA-2-7B-shaped bf16 row: peak RSS, load and per-document time of 2 documents.
# Usage: bench/bench_extract.sh [--7b] [BUILD_DIR] [WINDOWS]
set -euo pipefail
with_7b=0
if [[ "${1:-}" == "--7b" ]]; then with_7b=1; shift; fi
build=${1:-build}
windows=${2:-8}
shared=${ATTNGEO_SHARED:-$(dirname "$0")/../../shared}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
attngeo="$build/app/attngeo"

"$build/bench/make_synthetic_llama" "$work/synthetic" "$windows" 1024
row() {  # name, run folder
  python3 - "$1" "$2/manifest.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[2])); t = m["timings"]; n = m["documents"]["windows_used"]
print(f"| {sys.argv[1]:<34} | {m['parameters']['context']:>5} | {n:>4} | {n / t['total_s']:>8.2f} "
      f"| {t['forward_s']:>8.2f} | {t['capture_copy_s']:>8.3f} | {t['metrics_device_s']:>8.2f} "
      f"| {t['statistics_s']:>8.2f} | {t['sinks_s']:>8.2f} | {t['total_s']:>7.2f} |")
PY
}
echo "| run | context | docs | docs/s | forward s | capture s | gram s | statistics s | sinks s | total s |"
echo "|---|---|---|---|---|---|---|---|---|---|"
for N in all pow2; do
  "$attngeo" extract --model "$shared/models/stories260K/stories260K.bin" \
    --corpus "$(dirname "$0")/../examples/stories260K_corpus.txt" --context 128 --N $N --engine torch \
    --quiet --out "$work/s260k_$N"
  row "stories260K, N=$N" "$work/s260k_$N"
  "$attngeo" extract --model "$work/synthetic" --tokens "$work/synthetic/windows.txt" \
    --context 1024 --N $N --quiet --out "$work/synthetic_$N"
  row "synthetic 8L/512/8H (GQA 2), N=$N" "$work/synthetic_$N"
done
"$attngeo" extract --model "$shared/models/stories260K/stories260K.bin" --engine runc \
  --corpus "$(dirname "$0")/../examples/stories260K_corpus.txt" --context 128 --quiet --out "$work/s260k_runc"
row "stories260K, N=all, --engine runc" "$work/s260k_runc"
"$attngeo" extract --model "$work/synthetic" --tokens "$work/synthetic/windows.txt" \
  --context 1024 --N all --metrics device --quiet --out "$work/synthetic_device"
row "synthetic, N=all, --metrics device" "$work/synthetic_device"

# The 7B-shaped row: sharded bf16 safetensors (3 shards of ≤ 5 GB), computed in bf16 straight
# from the memory-mapped shards. Load = everything outside the per-window stages (open, map,
# finite check of every weight, windows); per document = forward + capture + statistics.
if [[ $with_7b == 1 ]]; then
  "$build/bench/make_synthetic_llama" "$work/llama2_7b" 2 256 --shape llama2-7b --dtype bfloat16
  /usr/bin/time -v "$attngeo" extract --model "$work/llama2_7b" --tokens "$work/llama2_7b/windows.txt" \
    --context 256 --N all --dtype bfloat16 --quiet --out "$work/llama2_7b_extract" 2> "$work/time_7b.txt"
  python3 - "$work/llama2_7b_extract/manifest.json" "$work/time_7b.txt" <<'PY'
import json, re, sys
m = json.load(open(sys.argv[1])); t = m["timings"]; n = m["documents"]["windows_used"]
rss_kib = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", open(sys.argv[2]).read()).group(1))
per_doc = (t["forward_s"] + t["capture_copy_s"] + t["metrics_device_s"] + t["statistics_s"] +
           t["sinks_s"]) / n
load = t["total_s"] - per_doc * n
print()
print("| run | context | docs | peak RSS GiB | load s | per document s | forward s/doc | statistics s/doc | total s |")
print("|---|---|---|---|---|---|---|---|---|")
print(f"| llama2-7b shape, bf16, 32L/4096/32H, N=all | {m['parameters']['context']} | {n} "
      f"| {rss_kib / 2**20:.2f} | {load:.1f} | {per_doc:.1f} | {t['forward_s'] / n:.1f} "
      f"| {t['statistics_s'] / n:.1f} | {t['total_s']:.1f} |")
PY
fi
