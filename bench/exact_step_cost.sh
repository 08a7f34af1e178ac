#!/usr/bin/env bash
# What the exact counts cost (docs/design.md §2): the share of CPU samples spent in the
# exact step — the candidates the bands leave undecided, then ExactShiftedDistances /
# ExactGramDistances and big integers — in the simulator's all-N trial and in extract's per-head
# statistics at n = 1025, d = 128, one thread, from perf on bench_statistics.
#
# Usage: bench/exact_step_cost.sh [BENCH_STATISTICS] [SECONDS]
#   BENCH_STATISTICS  the bench_statistics binary (default build/bench/bench_statistics)
#   SECONDS           minimum time per benchmark (default 5)
# Budgets: trial <= 5 %, extract statistics <= 10 %. Needs perf (linux-perf).
set -euo pipefail

bench=${1:-build/bench/bench_statistics}
seconds=${2:-5}
command -v perf > /dev/null || { echo "exact_step_cost.sh: perf not found (apt install linux-perf)" >&2; exit 2; }
[ -x "$bench" ] || { echo "exact_step_cost.sh: $bench: not an executable (build bench_statistics)" >&2; exit 2; }

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

# The exact step's own functions: collecting a bracket's undecided tokens, then tiers 2 and 3
# (add_rows: the running sums of tier 2).
exact_symbols='Exact(Shifted|Gram)Distances|ExactComparisons|collect_band|add_row|boost::multiprecision|cpp_int'

share() {  # benchmark filter, label, budget in percent
    local data="$scratch/$2.data"
    perf record -q -F 999 -o "$data" -- "$bench" --benchmark_filter="$1" \
        --benchmark_min_time="$seconds" > "$scratch/$2.txt" 2>&1
    perf report -i "$data" --no-children --sort symbol --stdio 2> /dev/null |
        awk -v pattern="$exact_symbols" -v label="$2" -v budget="$3" '
            /^ *[0-9.]+%/ { share = $1; sub("%", "", share); total += share
                            if ($0 ~ pattern) exact += share }
            END { printf "%-22s exact step %5.2f %% of %5.1f %% sampled (budget %s %%)\n",
                         label, exact, total, budget }'
    grep "^BM_" "$scratch/$2.txt" | sed 's/^/    /'
}

share 'BM_SimulatorTrial/n:1025/d:128$' simulate-trial 5
share 'BM_HeadStatistics/n:1025/d:128/reference:0$' extract-statistics 10
