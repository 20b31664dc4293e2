#!/usr/bin/env bash
# Installs, with apt-get, the Debian packages seedloader needs that are missing.
# Idempotent: a machine that has everything is left alone. Run as root.
# Usage: scripts/setup.sh [--demo-build | --demo-python]
#   (no option) everything: building, testing, benchmarks, fuzzing
#   --demo-build   what scripts/demo.sh needs to build (compilers, libraries,
#                  Python's headers and venv)
#   --demo-python  what its Python part needs to run (torch, numpy, Pillow),
#                  which the demo installs while it builds
set -euo pipefail

build_packages=(
  build-essential cmake pkg-config
  libboost-dev libpcg-cpp-dev libopencv-dev libturbojpeg0-dev libjpeg62-turbo-dev libwebp-dev
  libopenmpi-dev openmpi-bin
  nlohmann-json3-dev libcli11-dev libarchive-dev libeigen3-dev libxxhash-dev
  libcurl4-openssl-dev
  python3-dev python3-venv python3-pip
)
python_packages=(python3-numpy python3-torch python3-pil)
case ${1:-} in
  --demo-build) packages=("${build_packages[@]}") ;;
  --demo-python) packages=("${python_packages[@]}") ;;
  "") packages=("${build_packages[@]}" "${python_packages[@]}"
                libgtest-dev libgmock-dev libbenchmark-dev clang-14 libclang-rt-14-dev
                python3-torchvision python3-matplotlib nginx-light strace) ;;
  *) echo "usage: scripts/setup.sh [--demo-build | --demo-python]" >&2; exit 2 ;;
esac

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$p")
done

if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  if [[ $(id -u) -ne 0 ]]; then
    echo "setup: these packages are missing and installing them needs root: ${missing[*]}" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  if ! apt-get update -qq; then
    echo "setup: apt-get update failed; cannot install ${missing[*]}" >&2
    exit 1
  fi
  if ! apt-get install -y -qq --no-install-recommends "${missing[@]}" >/tmp/seedloader-apt.log 2>&1; then
    tail -20 /tmp/seedloader-apt.log >&2
    echo "setup: apt-get could not install: ${missing[*]} (log: /tmp/seedloader-apt.log)" >&2
    exit 1
  fi
fi

# CUDA lives outside PATH on these machines; CMake finds nvcc through this.
if [[ -x /usr/local/cuda/bin/nvcc ]]; then
  echo "setup: CUDA found at /usr/local/cuda ($(/usr/local/cuda/bin/nvcc --version | tail -1))"
else
  echo "setup: no CUDA toolkit at /usr/local/cuda; building without CUDA"
fi
echo "setup: dependencies present"
