#!/usr/bin/env bash
# Builds attngeo and its Python module (Release, -O3, Debian's libtorch), runs every test with
# CTest and the kernel, simulate and extract-statistics tests again with ATTNGEO_PLAIN=1 (every
# plain twin: SSYRK, no AVX2 or libmvec); builds the torch programs again against PyPI's torch
# 2.11 with CUDA compiled in and runs the torch suites and the live transformers peer
# (scripts/torch-build.sh; ATTNGEO_TORCH_STAGE=0 leaves it out); then the unit-level suites
# under clang's AddressSanitizer + UBSan, and fuzzes every parser from the same tree
# (scripts/fuzz.sh, FUZZ_SECONDS per target: 20 here). Prints each stage's wall time at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
export JOBS="${JOBS:-$(nproc)}"
export ATTNGEO_SHARED="${ATTNGEO_SHARED:-$(cd .. && pwd)/shared}"
export ATTNGEO_REQUIRE_CHROMIUM="${ATTNGEO_REQUIRE_CHROMIUM:-1}"

# ccache where it is installed (scripts/install-deps.sh installs it); its cache lives outside
# the clone (~/.cache/ccache) and paths are taken relative to the clone, so a second CI run on the
# same machine, from any clone, rebuilds little.
export CCACHE_BASEDIR="$PWD"
# The torch translation units compile through a precompiled header, which ccache caches only
# with this sloppiness (without it every CI run compiled all of them, in both trees; no source
# uses __DATE__ or __TIME__).
export CCACHE_SLOPPINESS="${CCACHE_SLOPPINESS:-pch_defines,time_macros,include_file_mtime,include_file_ctime}"
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
# Ninja, as scripts/torch-configure.sh: the torch tree's torch-free objects then have this tree's
# compile lines, and ccache hands them over instead of compiling them again.
stage "configure + build (Release)" bash -c 'cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release \
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
if [ "${ATTNGEO_TORCH_STAGE:-1}" = "1" ]; then
  stage "torch 2.11 + transformers peer" bash scripts/torch-build.sh
fi

# One clang tree instrumented with ASan + UBSan (and libFuzzer's coverage) serves the unit-level
# suites (parsers, kernels, statistics: common, theory, empirical_core) and the fuzz targets, which
# feed every parser and run/extract/report folder reader: clang compiles instrumented code ~2.5x
# faster than GCC, and the libraries are built once for both. The CLI-level suites run against
# the Release build only (an instrumented attngeo and its suites would not fit CI's hour).
# libtorch is not instrumented, so it stays out. -O1 keeps the tests fast; timeouts bound a hang.
stage "configure + build (clang ASan + UBSan)" bash -c 'cmake -S . -B build-asan -G Ninja \
  -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG=-O1 \
  -DATTNGEO_FUZZ=ON -DATTNGEO_WITH_TORCH=OFF -DATTNGEO_BUILD_BENCH=OFF "$@" &&
  cmake --build build-asan -j"$JOBS" --target attngeo_fuzz test_common test_theory test_empirical_core' \
  _ "${LAUNCHER[@]}"
stage "ctest (ASan + UBSan)" env ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir build-asan --output-on-failure -j"$JOBS" --timeout "${ASAN_TEST_TIMEOUT:-900}" \
  -L "^(common|theory|empirical_core)$"

# libFuzzer targets for every parser (fuzz/), from the same tree, FUZZ_SECONDS each.
stage "fuzz (every target)" env FUZZ_SECONDS="${FUZZ_SECONDS:-20}" FUZZ_BUILD=build-asan \
  FUZZ_CONFIGURE=0 bash scripts/fuzz.sh
