#!/usr/bin/env bash
# Runs the README's examples (the demo, bounds, the simulate and sweep lines, stories260K and
# tinysink end to end, truncate, the every-8 extract, normalization) into OUT, so that a
# refactoring can prove its outputs unchanged: run it before and after, then
#   python3 scripts/same-outputs.py OUT_BEFORE OUT_AFTER
# Usage: bash scripts/readme-outputs.sh BUILD_DIR OUT   (ATTNGEO_SHARED: the shared data, ../shared)
set -euo pipefail
BUILD="$(cd "$1" && pwd)"
OUT="$2"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
SHARED="${ATTNGEO_SHARED:-$ROOT/../shared}"
SHARED="$(cd "$SHARED" && pwd)"
A="$BUILD/app/attngeo"
M="$SHARED/models/stories260K/stories260K.bin"
S="$SHARED/models/tinysink"
CORPUS="$ROOT/examples/stories260K_corpus.txt"
mkdir -p "$OUT"
cd "$OUT"
rm -rf out runs bounds
mkdir -p bounds
run() { echo "+ $*" >&2; "$@" > /dev/null; }

run "$A" simulate --preset paper --out out/demo --quiet
run "$A" report --in out/demo --out out/demo
"$A" bounds --preset paper > bounds/paper.csv
"$A" bounds --d 64 --beta 0.1 --variant exact-mean --N pow2 > bounds/exact_mean.csv
"$A" bounds --profile zipf:1.2 --L 511 > bounds/zipf.csv
"$A" bounds --sensitivity --N 1,4,64 > bounds/sensitivity.csv
run "$A" simulate --d 64 --beta 0.1 --rho0 0.1 --trials 4000 --N pow2 --kappa 0.5 --out runs/a --quiet
run "$A" simulate --d inf --out runs/limit --quiet
run "$A" sweep --set beta=0.01,0.05,0.1 --set d=64,128,256 --trials 200 --N pow2 --out runs/sweep --quiet
run "$A" report --in out/demo runs/sweep --out runs/sweep-report

run "$A" extract --model "$M" --corpus "$CORPUS" --context 128 --out runs/stories --quiet
run "$A" compare --emp runs/stories --out runs/stories-compare --quiet
run "$A" report --in runs/stories-compare --out runs/stories-report

run "$A" extract --model "$S/hf" --tokens "$S/fortunes_tokens.txt" --bos no --context 128 \
  --docs 24 --out runs/tinysink --quiet
run "$A" compare --emp runs/tinysink --out runs/tinysink-compare --quiet
run "$A" report --in runs/tinysink-compare runs/stories-compare --label tinysink stories260K \
  --out runs/sink-report

run "$A" truncate --model "$M" --corpus "$CORPUS" --context 128 --docs 4 \
  --policy attn,contrib,random,window --renorm both --out runs/stories-truncate --quiet
run "$A" truncate --model "$M" --corpus "$CORPUS" --context 128 --docs 4 \
  --scope head --policy attn --out runs/stories-truncate-heads --quiet
run "$A" report --in runs/stories-truncate runs/stories-truncate-heads --out runs/truncate-report

run "$A" extract --model "$M" --corpus "$CORPUS" --context 128 --docs 64 --N pow2 \
  --queries every:8 --out runs/stories-every8 --quiet
run "$A" compare --emp runs/stories-every8 --out runs/stories-every8-compare --quiet
run "$A" report --in runs/stories-every8-compare --out runs/every8-report

run "$A" normalization --model "$M" --corpus "$CORPUS" --context 128 --docs 64 \
  --queries every:8 --out runs/stories-normalization --quiet
run "$A" report --in runs/stories-normalization --out runs/normalization-report
echo "wrote $OUT" >&2
