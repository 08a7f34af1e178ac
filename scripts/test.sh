#!/usr/bin/env bash
# Builds attngeo (Release, -O3) and runs every test with CTest; then rebuilds the
# non-torch libraries with AddressSanitizer + UBSan (Debug) and runs their tests again, and
# fuzzes every parser for a bounded time (scripts/fuzz.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
JOBS="${JOBS:-$(nproc)}"
export ATTNGEO_SHARED="${ATTNGEO_SHARED:-$(cd .. && pwd)/shared}"
export ATTNGEO_REQUIRE_CHROMIUM="${ATTNGEO_REQUIRE_CHROMIUM:-1}"

cmake -S . -B build -DCMAKE_BUILD_TYPE=Release
cmake --build build -j"$JOBS"
ctest --test-dir build --output-on-failure -j"$JOBS"

# libtorch is not instrumented, so the sanitizer tree leaves empirical/ out.
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DATTNGEO_SANITIZE=ON -DATTNGEO_WITH_TORCH=OFF
cmake --build build-asan -j"$JOBS" --target test_theory test_common test_cli attngeo
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir build-asan --output-on-failure -j"$JOBS" -L "theory|common|cli|compare"

# libFuzzer targets for every parser (fuzz/, clang + ASan + UBSan), FUZZ_SECONDS each.
bash scripts/fuzz.sh
