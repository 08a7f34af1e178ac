#!/usr/bin/env bash
# attngeo's performance table: each figure beside its peer or floor measured in the same run
# (bench/run.py says which). Builds the programs it times, then prints a Markdown table.
#   bash bench/run.sh [BUILD_DIR] [--quick] [--peer-python PY] [--only trial,forward,...]
set -euo pipefail
build=${1:-build}
shift || true
cmake --build "$build" -j"$(nproc)" --target attngeo bench_simulate bench_statistics \
  make_synthetic_llama forward_profile >/dev/null
exec /usr/bin/python3 "$(dirname "$0")/run.py" "$build" "$@"
