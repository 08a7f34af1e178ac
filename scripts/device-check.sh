#!/usr/bin/env bash
# The GPU check of docs/design.md §13, one prepared command for a lent GPU machine (CUDA,
# PyTorch, CMake and ninja; no network, no Debian -dev packages). Here, first:
#   bash scripts/device-debs.sh            (fills .device/: the .debs and the shared data)
# then one device call from the repository root, carry [".device"], timeout_s 600:
#   bash scripts/device-check.sh
# It unpacks the .debs into a private prefix, builds attngeo and test_empirical against
# python3's libtorch, runs the CUDA tests against the CPU, times extract and truncate on a
# 7B-shaped synthetic model and writes $OUT/summary.json, $OUT/logs.txt and the manifests.
# Every step has a time limit; a failed step is reported and the later ones still run (those
# that need its result say so). Without a GPU the CUDA steps are skipped, saying why.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-$ROOT/out/device-check}
PREFIX=${DEVICE_PREFIX:-/tmp/attngeo-prefix}
BUILD=${DEVICE_BUILD:-$ROOT/build-device}
TARGETS=${DEVICE_TARGETS:-attngeo test_empirical}
LAYERS=${DEVICE_7B_LAYERS:-32}
PY=${PYTHON:-python3}
# Every step's time limit is multiplied by this (a 2-core machine without a GPU needs ~8).
LIMIT_SCALE=${DEVICE_LIMIT_SCALE:-1}
LOGS=$(mktemp -d /tmp/device-check-logs.XXXXXX)
export ATTNGEO_SHARED=${ATTNGEO_SHARED:-$ROOT/.device/shared}
export ROOT OUT PREFIX BUILD TARGETS LAYERS PY LOGS
mkdir -p "$OUT"
: >"$LOGS/steps.tsv"
BEGIN=$(date +%s)

# step NAME LIMIT_S FUNCTION: runs it with its output in $LOGS/NAME.log; records the outcome.
step() {
  local name=$1 limit=$2 fn=$3 t0 rc status
  t0=$(date +%s)
  timeout "$((limit * LIMIT_SCALE))" bash -c "$fn" >"$LOGS/$name.log" 2>&1
  rc=$?
  case $rc in
    0) status=ok ;;
    124) status=timeout ;;
    77) status=skipped ;;
    *) status="failed($rc)" ;;
  esac
  printf '%s\t%s\t%s\t%s\n' "$name" "$status" "$(($(date +%s) - t0))" \
    "$(tail -n 1 "$LOGS/$name.log" | tr '\t' ' ' | cut -c1-300)" >>"$LOGS/steps.tsv"
  echo "[device-check] $name: $status in $(($(date +%s) - t0)) s (at $(($(date +%s) - BEGIN)) s)"
  return $rc
}

environment() {
  set -x
  nproc
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv || true
  "$PY" -c 'import torch, sys; print("torch", torch.__version__, "cuda", torch.version.cuda,
"available", torch.cuda.is_available(), "abi", int(torch._C._GLIBCXX_USE_CXX11_ABI),
"cmake", torch.utils.cmake_prefix_path)'
  g++ --version | head -1
  cmake --version | head -1
  ninja --version || true
}

# The .debs into $PREFIX (dpkg -x, or ar + tar where dpkg is missing), then the two fixes a
# relocated Debian tree needs: OpenBLAS's config names absolute /usr paths, and zlib1g-dev's
# libz.so points at the runtime package, which the machine has in its own /usr.
unpack() {
  set -e
  rm -rf "$PREFIX"
  mkdir -p "$PREFIX"
  for deb in "$ROOT"/.device/debs/*.deb; do
    if command -v dpkg >/dev/null; then
      dpkg -x "$deb" "$PREFIX"
    else
      (cd "$(mktemp -d)" && ar x "$deb" && tar -xf data.tar.* -C "$PREFIX")
    fi
  done
  local lib="$PREFIX/usr/lib/x86_64-linux-gnu"
  sed -i "s#/usr/#$PREFIX/usr/#g" "$lib/openblas-pthread/cmake/openblas/OpenBLASConfig.cmake"
  local libz
  libz=$(ls /usr/lib/x86_64-linux-gnu/libz.so.1 /lib/x86_64-linux-gnu/libz.so.1 2>/dev/null | head -1)
  [ -n "$libz" ] && ln -sf "$libz" "$lib/libz.so"
  ls "$PREFIX/usr/include" | head -50
  echo "unpacked $(ls "$ROOT"/.device/debs/*.deb | wc -l) packages into $PREFIX"
}

torch_facts() {  # prints: cmake-prefix abi cxx-standard
  "$PY" -c 'import torch
v = tuple(int(x) for x in torch.__version__.split("+")[0].split(".")[:2])
print(torch.utils.cmake_prefix_path, int(torch._C._GLIBCXX_USE_CXX11_ABI), 20 if v >= (2, 13) else 17)'
}

# googletest from its sources, with the C++ ABI of python3's libtorch.
googletest() {
  set -e
  read -r _ abi _ < <(torch_facts)
  cmake -S "$PREFIX/usr/src/googletest" -B "$PREFIX/gtest-build" -G Ninja \
    -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX="$PREFIX/gtest" \
    -DCMAKE_CXX_FLAGS="-D_GLIBCXX_USE_CXX11_ABI=$abi"
  cmake --build "$PREFIX/gtest-build" -j "$(nproc)" --target install
}

# The configure line of scripts/torch-configure.sh (the one CI's torch stage builds with), plus
# the relocated Debian tree of the .debs.
configure() {
  set -e
  rm -rf "$BUILD"
  TORCH_CONFIGURE_PREFIX="$PREFIX/gtest;$PREFIX/usr" bash "$ROOT/scripts/torch-configure.sh" \
    "$BUILD" "$PY" \
    -DOpenBLAS_DIR="$PREFIX/usr/lib/x86_64-linux-gnu/openblas-pthread/cmake/openblas" \
    -DICU_ROOT="$PREFIX/usr" -DZLIB_ROOT="$PREFIX/usr" \
    -DCMAKE_CXX_FLAGS="-isystem $PREFIX/usr/include" \
    -DCMAKE_BUILD_RPATH="$PREFIX/usr/lib/x86_64-linux-gnu;$PREFIX/usr/lib/x86_64-linux-gnu/openblas-pthread"
}

# The compiler's errors (a libtorch of another version breaks here first) and the last lines.
build() {
  # shellcheck disable=SC2086
  cmake --build "$BUILD" -j "$(nproc)" --target $TARGETS >"$LOGS/build-full.log" 2>&1
  local rc=$?
  grep -E -A3 "error|Error [0-9]" "$LOGS/build-full.log" | head -n 200
  tail -n 5 "$LOGS/build-full.log"
  exit $rc
}

has_cuda() {
  "$PY" -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null
}

cpu_tests() {
  "$BUILD/tests/test_empirical" --gtest_brief=1 \
    --gtest_filter='*HuggingFaceGolden.*:*Llama2cGolden.*:Truncate.ReproducesTransformers*'
}

cuda_tests() {
  has_cuda || { echo "no CUDA device: the CUDA tests were not run"; exit 77; }
  "$BUILD/tests/test_empirical" --gtest_filter='*Cuda*:CaptureCli.*' \
    --gtest_output="json:$OUT/cuda_tests.json"
}

# A llama with LLaMA-2-7B's shapes (hidden 4096, 32 heads of 128, MLP 11008, vocabulary 32000;
# DEVICE_7B_LAYERS layers, 32 by default) and random bf16 weights, and 4 windows of 1024 ids.
synthetic_7b() {
  has_cuda || { echo "no CUDA device: no 7B-shaped model made"; exit 77; }
  "$PY" "$ROOT/scripts/synthetic_llama.py" --out /tmp/synth7b --layers "$LAYERS" --windows 4 \
    --context 1024
}

time_extract() {
  [ -f /tmp/synth7b/model.safetensors ] || { echo "no 7B-shaped model"; exit 77; }
  rm -rf /tmp/synth7b-extract
  "$BUILD/app/attngeo" extract --model /tmp/synth7b --tokens /tmp/synth7b/ids.txt \
    --bos no --context 1024 --docs 4 --N all --device cuda --dtype bfloat16 --out /tmp/synth7b-extract
  cp /tmp/synth7b-extract/manifest.json "$OUT/extract_7b_manifest.json"
  nvidia-smi --query-gpu=memory.used --format=csv || true
}

time_truncate() {
  [ -f /tmp/synth7b/model.safetensors ] || { echo "no 7B-shaped model"; exit 77; }
  rm -rf /tmp/synth7b-truncate
  "$BUILD/app/attngeo" truncate --model /tmp/synth7b --tokens /tmp/synth7b/ids.txt --bos no \
    --context 1024 --docs 2 --N 16,128 --policy attn,window --device cuda --dtype bfloat16 \
    --out /tmp/synth7b-truncate
  cp /tmp/synth7b-truncate/manifest.json "$OUT/truncate_7b_manifest.json"
}

export -f environment unpack torch_facts googletest configure build has_cuda cpu_tests \
  cuda_tests synthetic_7b time_extract time_truncate

step environment 60 environment
step unpack 120 unpack
step googletest 180 googletest
step configure 120 configure
step build 420 build
step cpu_tests 120 cpu_tests
step cuda_tests 240 cuda_tests
step synthetic_7b 180 synthetic_7b
step extract_7b 300 time_extract
step truncate_7b 300 time_truncate

# logs.txt: every step's log (the last 150 lines of each); summary.json from steps.tsv.
for f in "$LOGS"/*.log; do
  echo "===== $(basename "$f" .log)"
  tail -n 150 "$f"
done >"$OUT/logs.txt"
"$PY" "$ROOT/scripts/device_summary.py" "$LOGS" "$OUT" "$(($(date +%s) - BEGIN))"
cat "$OUT/summary.json"
