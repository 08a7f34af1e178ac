#!/usr/bin/env bash
# Prepares here what scripts/device-check.sh needs on a lent GPU machine, which has CUDA,
# PyTorch, CMake and ninja but no network and no Debian -dev packages (docs/design.md §13):
# the .deb files of the headers and small libraries the build needs, and the shared data the
# CUDA tests read, under .device/ (git-ignored). Prints the `carry` list and the total size,
# which must stay under the 64 MiB a device call may take with the working tree.
set -euo pipefail
cd "$(dirname "$0")/.."
SHARED=${ATTNGEO_SHARED:-../shared}

# Header-only packages, the libraries simulate/ and empirical/ link (OpenBLAS and its
# libgfortran, ICU) and googletest's sources (built there with that machine's C++ ABI).
PACKAGES=(libeigen3-dev libboost1.74-dev libcli11-dev nlohmann-json3-dev librandom123-dev
          libopenblas-dev libopenblas-pthread-dev libopenblas0-pthread libgfortran5
          libicu-dev libicu72 googletest zlib1g-dev)

rm -rf .device
mkdir -p .device/debs .device/shared/models
(cd .device/debs && apt-get download -q "${PACKAGES[@]}" >/dev/null)

# The data the CUDA tests read: every golden model and stories260K (ATTNGEO_SHARED there).
cp -r "$SHARED/golden" .device/shared/
cp -r "$SHARED/models/stories260K" .device/shared/models/

tree_bytes=$(git ls-files -z | xargs -0 du -cb | tail -1 | cut -f1)
device_bytes=$(du -sb .device | cut -f1)
total=$((tree_bytes + device_bytes))
limit=$((64 * 1024 * 1024))
printf 'debs %s, shared data %s, working tree %s: %s MiB of the 64 MiB a call may carry\n' \
  "$(du -sh .device/debs | cut -f1)" "$(du -sh .device/shared | cut -f1)" \
  "$((tree_bytes / 1024 / 1024)) MiB" "$((total / 1024 / 1024))"
if [ "$total" -ge "$limit" ]; then
  echo "device-debs: .device/ and the tree together exceed 64 MiB" >&2
  exit 1
fi
echo 'carry: [".device"]'
echo 'run:   bash scripts/device-check.sh   (timeout_s 600; results in $OUT/summary.json)'
