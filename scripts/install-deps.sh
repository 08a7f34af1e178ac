#!/usr/bin/env bash
# Installs everything attngeo needs to build, test and draw on a fresh Debian 12 machine.
set -euo pipefail
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends \
  build-essential cmake git pkg-config ccache \
  libeigen3-dev libboost-math-dev libcli11-dev nlohmann-json3-dev librandom123-dev \
  libopenblas-dev libopenblas0-pthread libomp-dev \
  libgtest-dev libgmock-dev libbenchmark-dev zlib1g-dev \
  libtorch-dev libicu-dev \
  clang libfuzzer-14-dev \
  gnuplot-nox \
  munge slurmctld slurmd slurm-client openmpi-bin \
  pybind11-dev python3-dev python3-numpy python3-scipy python3-pytest python3-pandas python3-torch \
  python3-setuptools python3-pip python3-venv >/dev/null
# Headless Chromium renders the HTML report in its screenshot test (not needed to run attngeo).
if [ "${ATTNGEO_WITH_CHROMIUM:-1}" = "1" ]; then
  $SUDO apt-get install -y -qq --no-install-recommends chromium >/dev/null
fi
