#!/usr/bin/env bash
# Builds attngeo and its Python module (Release, -O3), runs every test with CTest and the kernel,
# simulate and extract-statistics tests again with ATTNGEO_PLAIN=1 (every plain twin: SSYRK, no
# AVX2 or libmvec); then every torch-free suite under AddressSanitizer + UBSan, and fuzzes every
# parser (scripts/fuzz.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
JOBS="${JOBS:-$(nproc)}"
export ATTNGEO_SHARED="${ATTNGEO_SHARED:-$(cd .. && pwd)/shared}"
export ATTNGEO_REQUIRE_CHROMIUM="${ATTNGEO_REQUIRE_CHROMIUM:-1}"

# The Python module too (pytest through CTest); Debian's python3, whatever comes first on PATH.
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DATTNGEO_PYTHON=ON -DPython_EXECUTABLE=/usr/bin/python3
cmake --build build -j"$JOBS"
ctest --test-dir build --output-on-failure -j"$JOBS"

# The branches a CPU with AVX2 never takes: the plain kernels, SSYRK's Gram matrix, std::exp in
# the bounds, one OpenMP thread where the count is left open (common/cpu_features.hpp), extract's
# per-head statistics included.
ATTNGEO_PLAIN=1 ctest --test-dir build --output-on-failure -j"$JOBS" -L "theory|simulate|empirical_core"

# Every torch-free suite (theory, common, cli, simulate, compare, reports, and what else builds
# without libtorch) under ASan + UBSan: libtorch is not instrumented, so it stays out. -O1 keeps
# the instrumented tree fast enough for CI; per-test timeouts bound a hung case.
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug "-DCMAKE_CXX_FLAGS_DEBUG=-g -O1" \
  -DATTNGEO_SANITIZE=ON -DATTNGEO_WITH_TORCH=OFF -DATTNGEO_BUILD_BENCH=OFF
cmake --build build-asan -j"$JOBS"
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir build-asan --output-on-failure -j"$JOBS" --timeout "${ASAN_TEST_TIMEOUT:-900}"

# libFuzzer targets for every parser (fuzz/, clang + ASan + UBSan), FUZZ_SECONDS each.
bash scripts/fuzz.sh
