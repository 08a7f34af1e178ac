#!/usr/bin/env bash
# attngeo against the users' stack (docs/design.md §13): a venv outside the clone with PyPI's
# torch 2.11 (its CUDA wheel) and a pinned transformers; attngeo and its torch suites configured
# against that libtorch with CUDA compiled in (scripts/torch-configure.sh), built, and run on the
# CPU; then the live transformers peer (tests/peer). CUDA-only tests skip saying why.
# Environment: ATTNGEO_TORCH_VENV (default ~/.cache/attngeo/torch-venv), ATTNGEO_WHEELS (the
# downloaded wheels, kept between runs: ~/.cache/attngeo/wheels), BUILD_TORCH (build-torch).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
TORCH_SPEC=${ATTNGEO_TORCH_SPEC:-torch==2.11.0}
TRANSFORMERS_SPEC=${ATTNGEO_TRANSFORMERS_SPEC:-transformers==5.17.0}
VENV=${ATTNGEO_TORCH_VENV:-$HOME/.cache/attngeo/torch-venv}
WHEELS=${ATTNGEO_WHEELS:-$HOME/.cache/attngeo/wheels}
BUILD=${BUILD_TORCH:-$ROOT/build-torch}
JOBS=${JOBS:-$(nproc)}
export ATTNGEO_SHARED="${ATTNGEO_SHARED:-$(cd .. && pwd)/shared}"
export CCACHE_BASEDIR="$ROOT"
# The torch translation units compile through a precompiled header, which ccache caches only
# with this sloppiness (without it every CI run compiled all of them, in both trees; no source
# uses __DATE__ or __TIME__).
export CCACHE_SLOPPINESS="${CCACHE_SLOPPINESS:-pch_defines,time_macros,include_file_mtime,include_file_ctime}"

# The venv, filled from the wheel folder; pip downloads into it only what is missing, so a second
# run (or a second clone on the same machine) installs without the network.
venv() {
  [ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
  local want=("$TORCH_SPEC" "$TRANSFORMERS_SPEC" safetensors numpy pytest)
  if "$VENV/bin/python" - "${want[@]}" <<'EOF'; then echo "venv $VENV: up to date"; return; fi
import sys
from importlib.metadata import version, PackageNotFoundError
for spec in sys.argv[1:]:
    name, _, pinned = spec.partition("==")
    try:
        have = version(name)
    except PackageNotFoundError:
        sys.exit(1)
    if pinned and have.split("+")[0] != pinned:
        sys.exit(1)
EOF
  mkdir -p "$WHEELS"
  "$VENV/bin/pip" download --quiet --dest "$WHEELS" --find-links "$WHEELS" "${want[@]}"
  "$VENV/bin/pip" install --quiet --no-index --find-links "$WHEELS" "${want[@]}"
}

configure() {
  bash scripts/torch-configure.sh "$BUILD" "$VENV/bin/python" \
    -DATTNGEO_PEER_PYTHON="$VENV/bin/python"
}

# Only the torch programs: the torch-free objects have the plain tree's compile lines, so ccache
# hands them over where that tree was built first (scripts/test.sh).
build() {
  cmake --build "$BUILD" -j"$JOBS" --target attngeo test_empirical
}

# The torch suites on the CPU (the CUDA tests skip: no device), then the live peer. The suites
# whose subject is torch-free (fault injection, rational arithmetic) ran against the plain build
# already; TORCH_SUITE_EXCLUDE= runs them here too.
torch_tests() {
  ctest --test-dir "$BUILD" --output-on-failure -j"$JOBS" -L "^empirical$" \
    -E "${TORCH_SUITE_EXCLUDE-^(ExtractFaults|ExactCounts)\.}"
}

# Each case's largest differences (pytest -s prints them) and what attngeo refuses, from its log.
peer_tests() {
  local log="$BUILD/peer.log" rc=0
  ATTNGEO_REQUIRE_TRANSFORMERS=${ATTNGEO_REQUIRE_TRANSFORMERS:-1} \
    ctest --test-dir "$BUILD" --output-on-failure -V -L "^peer$" >"$log" 2>&1 || rc=$?
  grep -E "largest difference|not supported yet|Config\(\): | passed| failed|Error" "$log" |
    sed -E 's/^[0-9]+: //' || true
  [ $rc -eq 0 ] || echo "torch-build: the transformers peer failed; its log: $log"
  return $rc
}

for step in venv configure build torch_tests peer_tests; do
  start=$SECONDS
  "$step"
  printf 'torch-build: %-12s %5d s\n' "$step" $((SECONDS - start))
done
"$VENV/bin/python" -c 'import torch, transformers; print("torch-build: torch", torch.__version__,
"(CUDA", str(torch.version.cuda) + ") and transformers", transformers.__version__, "passed")'
