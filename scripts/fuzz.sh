#!/usr/bin/env bash
# Builds the libFuzzer targets of fuzz/ (clang, ASan + UBSan) and runs each for FUZZ_SECONDS
# (default 60) or FUZZ_RUNS inputs (default 300000), whichever comes first, FUZZ_JOBS at a time
# (default 2), from the seeds generated out of ../shared and fuzz/regressions/. Exits non-zero on
# any finding: a crash, a sanitizer report, a leak, an exception other than InputError, an input
# taking > 10 s or allocating > 2 GB.
# The default run is deterministic: a fixed seed, a fresh corpus and a run cap, so CI replays
# exactly the inputs a developer's run of this script replayed (or a prefix of them on a slower
# machine). FUZZ_SEED=0 FUZZ_SECONDS=600 FUZZ_KEEP_CORPUS=1 explores instead.
# FUZZ_TARGETS="gguf numeric_csv" runs a subset; the findings are left in BUILD/fuzz/findings.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD="${FUZZ_BUILD:-build-fuzz}"
SECONDS_PER_TARGET="${FUZZ_SECONDS:-60}"
JOBS="${FUZZ_JOBS:-2}"
RUNS="${FUZZ_RUNS:-300000}"
export ATTNGEO_SHARED="${ATTNGEO_SHARED:-$(cd .. && pwd)/shared}"

LAUNCHER=()
if command -v ccache >/dev/null; then LAUNCHER=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
# FUZZ_CONFIGURE=0 builds in a tree configured already with ATTNGEO_FUZZ=ON (CI's sanitizer
# tree, which also holds the unit tests).
if [ "${FUZZ_CONFIGURE:-1}" = 1 ]; then
  cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_COMPILER=clang++ "${LAUNCHER[@]}" \
    -DATTNGEO_FUZZ=ON -DATTNGEO_WITH_TORCH=OFF -DATTNGEO_BUILD_TESTS=OFF -DATTNGEO_BUILD_BENCH=OFF
fi
cmake --build "$BUILD" -j"$JOBS" --target attngeo_fuzz

ALL_TARGETS=$(sed -n '/^set(ATTNGEO_FUZZ_TARGETS/,/^)/p' fuzz/CMakeLists.txt | sed '1d;$d' | tr -d ' ')
TARGETS="${FUZZ_TARGETS:-$ALL_TARGETS}"
OUT="$BUILD/fuzz"
[ "${FUZZ_KEEP_CORPUS:-0}" = 1 ] || rm -rf "$OUT/corpus"
mkdir -p "$OUT/findings" "$OUT/logs"
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=0}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"

# Inputs larger than a real header are rarely more interesting; GGUF's tiny model needs 64 KiB.
max_len() { case "$1" in gguf) echo 65536 ;; *) echo 16384 ;; esac; }

run_target() {
  local target="$1" corpus="$OUT/corpus/$1" log="$OUT/logs/$1.log"
  mkdir -p "$corpus" "$OUT/findings/$target"
  local inputs=("$corpus")
  [ -d "$OUT/seeds/$target" ] && inputs+=("$OUT/seeds/$target")
  [ -d "fuzz/regressions/$target" ] && inputs+=("fuzz/regressions/$target")
  # A fixed seed makes a CI run reproducible (FUZZ_SEED=0 draws a fresh one).
  if "$OUT/fuzz_$target" -max_total_time="$SECONDS_PER_TARGET" -runs="$RUNS" -timeout=10 -seed="${FUZZ_SEED:-1}" \
      -rss_limit_mb=2048 -malloc_limit_mb=2048 -max_len="$(max_len "$target")" \
      -print_final_stats=1 -artifact_prefix="$OUT/findings/$target/" "${inputs[@]}" >"$log" 2>&1; then
    local runs cov
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
    cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1)
    echo "fuzz $target: clean, $runs runs, $cov"
  else
    echo "fuzz $target: FINDING (log $log, input in $OUT/findings/$target/)"
    grep -m3 -E 'ERROR|fuzz finding|runtime error|SUMMARY' "$log" | sed 's/^/  /'
    return 1
  fi
}
export -f run_target max_len
export OUT SECONDS_PER_TARGET RUNS

echo "fuzzing $(echo $TARGETS | wc -w) targets for ${SECONDS_PER_TARGET}s or $RUNS inputs each," \
  "seed ${FUZZ_SEED:-1}, $JOBS at a time"
if printf '%s\n' $TARGETS | xargs -P "$JOBS" -I{} bash -c 'run_target {}'; then
  echo "fuzz: no findings"
else
  echo "fuzz: findings above; reproduce with $OUT/fuzz_TARGET INPUT" >&2
  exit 1
fi
