#!/usr/bin/env bash
# Configures an attngeo build tree against the libtorch of a Python's `torch` (a pip or conda
# wheel, CUDA or CPU): the one configure line scripts/torch-build.sh and scripts/device-check.sh
# share. Usage: torch-configure.sh BUILD_DIR PYTHON [more cmake arguments...]; more package
# prefixes (a relocated Debian tree) in TORCH_CONFIGURE_PREFIX, ';'-separated.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$1
PY=$2
shift 2

# The wheel's CMake prefix, its C++ ABI, the C++ standard its headers need (20 from 2.13 on)
# and its CUDA version ("none" for a CPU wheel).
read -r torch_cmake abi standard torch_cuda torch_lib < <("$PY" - <<'EOF'
import os, torch, torch.utils
v = tuple(int(x) for x in torch.__version__.split("+")[0].split(".")[:2])
print(torch.utils.cmake_prefix_path, int(torch._C._GLIBCXX_USE_CXX11_ABI),
      20 if v >= (2, 13) else 17, torch.version.cuda or "none",
      os.path.join(os.path.dirname(torch.__file__), "lib"))
EOF
)
# TorchConfig.cmake looks for c10 in the system's paths before the wheel's: where Debian's
# libtorch is installed too it would link /usr/lib's libc10.so.1.13 beside the wheel's libtorch
# (an internal assert at start-up), so the wheel's is named.
torch_libs=(-Dc10_LIBRARY="$torch_lib/libc10.so")

cuda_args=()
if [ "$torch_cuda" != "none" ]; then
  # Torch's CMake config finds the toolkit itself (CUDAToolkit); point it at the machine's nvcc.
  nvcc=${CUDACXX:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
  [ -x "$nvcc" ] || { echo "torch-configure: torch $torch_cuda needs the CUDA toolkit (nvcc), none found"; exit 2; }
  toolkit=$(cd "$(dirname "$nvcc")/.." && pwd)
  nvcc_version=$("$nvcc" --version | sed -n 's/.*release \([0-9]*\.[0-9]*\).*/\1/p')
  if [ "${nvcc_version%%.*}" != "${torch_cuda%%.*}" ]; then
    echo "torch-configure: torch was built with CUDA $torch_cuda, nvcc is $nvcc_version;" \
      "install the matching toolkit (pip install nvidia-cuda-nvcc-cu${torch_cuda%%.*}) and set CUDACXX"
    exit 2
  fi
  cuda_args=(-DCUDAToolkit_ROOT="$toolkit" -DCMAKE_CUDA_COMPILER="$nvcc"
             -DCMAKE_CUDA_ARCHITECTURES="${ATTNGEO_CUDA_ARCHITECTURES:-90}")
  echo "torch-configure: torch CUDA $torch_cuda with nvcc $nvcc_version at $toolkit"
fi

launcher=()
if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi

cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DATTNGEO_BUILD_BENCH=OFF -DATTNGEO_PYTHON=OFF -DATTNGEO_CXX_STANDARD="$standard" \
  -DCMAKE_PREFIX_PATH="$torch_cmake${TORCH_CONFIGURE_PREFIX:+;$TORCH_CONFIGURE_PREFIX}" \
  -DATTNGEO_TORCH_ABI="$abi" "${torch_libs[@]}" "${cuda_args[@]}" "${launcher[@]}" "$@"
