#!/usr/bin/env bash
# Documents/s of `attngeo extract`, split into forward, capture (copy of α and values to the
# host), the batched Gram matrices (--metrics device) and the per-head statistics, for
# stories260K (../shared) and the synthetic 8-layer LLaMA at context 1024. Prints a table.
# Usage: bench/bench_extract.sh [BUILD_DIR] [WINDOWS]
set -euo pipefail
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
      f"| {t['statistics_s']:>8.2f} | {t['total_s']:>7.2f} |")
PY
}
echo "| run | context | docs | docs/s | forward s | capture s | gram s | statistics s | total s |"
echo "|---|---|---|---|---|---|---|---|---|"
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
