#!/usr/bin/env bash
# Builds attngeo and its Python module (Release, -O3), runs every test with CTest and the kernel,
# simulate and extract-statistics tests again with ATTNGEO_PLAIN=1 (every plain twin: SSYRK, no
# AVX2 or libmvec); builds and runs the torch suites again against PyPI's torch 2.11 with CUDA
# compiled in, with the live transformers peer (scripts/torch-build.sh; ATTNGEO_TORCH_STAGE=1 —
# off by default until its peer tests pass, issue 39); then every torch-free suite under AddressSanitizer + UBSan, and fuzzes every
# parser (scripts/fuzz.sh, FUZZ_SECONDS per target: 30 here).
set -euo pipefail
cd "$(dirname "$0")/.."
export JOBS="${JOBS:-$(nproc)}"
export ATTNGEO_SHARED="${ATTNGEO_SHARED:-$(cd .. && pwd)/shared}"
export ATTNGEO_REQUIRE_CHROMIUM="${ATTNGEO_REQUIRE_CHROMIUM:-1}"

# ccache where it is installed (scripts/install-deps.sh installs it); its cache lives outside
# the clone (~/.cache/ccache) and paths are taken relative to the clone, so a second CI run on the
# same machine, from any clone, rebuilds little.
export CCACHE_BASEDIR="$PWD"
LAUNCHER=()
if command -v ccache >/dev/null; then LAUNCHER=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi

# Each stage's wall time, printed as a table when the script ends (on a failure too).
STAGES=()
CURRENT=""
stage() {
  local name="$1" start=$SECONDS
  CURRENT="$name"
  shift
  "$@"
  STAGES+=("$(printf '%-34s %5d s' "$name" $((SECONDS - start)))")
  CURRENT=""
}
print_stages() {
  local rc=$?
  echo "---- stages (wall time) ----"
  for row in "${STAGES[@]}"; do echo "$row"; done
  if [ $rc -ne 0 ] && [ -n "$CURRENT" ]; then printf '%-34s failed\n' "$CURRENT"; fi
  printf '%-34s %5d s%s\n' "total" "$SECONDS" "$([ $rc -eq 0 ] || echo "  (stopped: exit $rc)")"
}
trap print_stages EXIT

# The Python module too (pytest through CTest); Debian's python3, whatever comes first on PATH.
stage "configure + build (Release)" bash -c 'cmake -S . -B build -DCMAKE_BUILD_TYPE=Release \
  -DATTNGEO_PYTHON=ON -DPython_EXECUTABLE=/usr/bin/python3 "$@" && cmake --build build -j"$JOBS"' \
  _ "${LAUNCHER[@]}"
stage "ctest (every suite)" ctest --test-dir build --output-on-failure -j"$JOBS"

# The branches a CPU with AVX2 never takes: the plain kernels, SSYRK's Gram matrix, std::exp in
# the bounds, one OpenMP thread where the count is left open (common/cpu_features.hpp), extract's
# per-head statistics included.
stage "ctest, plain twins (ATTNGEO_PLAIN=1)" env ATTNGEO_PLAIN=1 \
  ctest --test-dir build --output-on-failure -j"$JOBS" -L "theory|simulate|empirical_core"

# The users' stack: the torch suites against torch 2.11 (CUDA compiled in, run on the CPU) and
# the live transformers peer, from a venv and wheel folder outside the clone.
if [ "${ATTNGEO_TORCH_STAGE:-0}" = "1" ]; then
  stage "torch 2.11 + transformers peer" bash scripts/torch-build.sh
fi

# Every torch-free suite (theory, common, cli, simulate, compare, reports, and what else builds
# without libtorch) under ASan + UBSan: libtorch is not instrumented, so it stays out. -O1 keeps
# the instrumented tree fast enough for CI; per-test timeouts bound a hung case.
stage "configure + build (ASan + UBSan)" bash -c 'cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug \
  "-DCMAKE_CXX_FLAGS_DEBUG=-g -O1" -DATTNGEO_SANITIZE=ON -DATTNGEO_WITH_TORCH=OFF \
  -DATTNGEO_BUILD_BENCH=OFF "$@" && cmake --build build-asan -j"$JOBS"' _ "${LAUNCHER[@]}"
stage "ctest (ASan + UBSan)" env ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir build-asan --output-on-failure -j"$JOBS" --timeout "${ASAN_TEST_TIMEOUT:-900}"

# libFuzzer targets for every parser (fuzz/, clang + ASan + UBSan), FUZZ_SECONDS each.
stage "fuzz (build + every target)" env FUZZ_SECONDS="${FUZZ_SECONDS:-30}" bash scripts/fuzz.sh
