#!/bin/bash
# The README's C++-versus-NumPy speed comparison on a shared machine: alternates attngeo's one-thread trial
# benchmark with the NumPy trial ROUNDS times (so both see the same background load) and prints
# the median of each and the ratio of the medians, the median of the per-round ratios (each
# pairs two adjacent runs) and the ratio of the fastest runs (the least disturbed).
#   bash bench/compare_numpy.sh [build dir] [rounds] [n]   (PYTHON: an interpreter with NumPy)
set -euo pipefail
build=${1:-build}
rounds=${2:-9}
n=${3:-1025}
here=$(cd "$(dirname "$0")" && pwd)
bench="$build/bench/bench_simulate"
[ -x "$bench" ] || { echo "compare_numpy.sh: $bench not found (build the bench_simulate target)" >&2; exit 2; }
ours=() theirs=()
for ((i = 0; i < rounds; i++)); do
  rate=$("$bench" --benchmark_filter="BM_Trial/n:$n/d:128/allN:1/threads:1/real_time" \
           --benchmark_min_time=0.5 2>/dev/null | sed -n 's/.*items_per_second=\([0-9.]*\)\([kM]\?\)\/s.*/\1 \2/p')
  ours+=("$(python3 -c "v,u='$rate'.split(' ') if ' ' in '$rate' else ('$rate',''); print(1000/(float(v)*{'':1,'k':1e3,'M':1e6}[u]))")")
  theirs+=("$(OPENBLAS_NUM_THREADS=1 "${PYTHON:-/usr/bin/python3}" "$here/numpy_trial.py" "$n" 128 "${NUMPY_TRIALS:-10}" | sed 's/.*: \([0-9.]*\) ms.*/\1/')")
done
python3 - "${ours[*]}" "${theirs[*]}" <<'PY'
import statistics, sys
ours = [float(x) for x in sys.argv[1].split()]
theirs = [float(x) for x in sys.argv[2].split()]
a, b = statistics.median(ours), statistics.median(theirs)
print(f"attngeo ms per trial: {' '.join(f'{x:.2f}' for x in ours)}")
print(f"numpy   ms per trial: {' '.join(f'{x:.1f}' for x in theirs)}")
rounds = [t / o for o, t in zip(ours, theirs)]
print(f"medians: attngeo {a:.2f} ms, numpy {b:.1f} ms, ratio {b / a:.1f}x "
      f"(per-round ratios {min(rounds):.1f}-{max(rounds):.1f}x, their median "
      f"{statistics.median(rounds):.1f}x; minima {min(ours):.2f} vs {min(theirs):.1f} ms, "
      f"{min(theirs) / min(ours):.1f}x)")
PY
