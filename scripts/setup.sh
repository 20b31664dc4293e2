#!/usr/bin/env bash
# Installs, with apt-get, the Debian packages seedloader needs that are missing.
# Idempotent: a machine that has everything is left alone. Run as root.
# Usage: scripts/setup.sh [--demo]   (--demo: only what scripts/demo.sh needs,
# without the test, benchmark and fuzzing tools)
set -euo pipefail

packages=(
  build-essential cmake pkg-config
  libboost-dev libpcg-cpp-dev libopencv-dev libturbojpeg0-dev libjpeg62-turbo-dev libwebp-dev
  libopenmpi-dev openmpi-bin
  nlohmann-json3-dev libcli11-dev libarchive-dev libeigen3-dev libxxhash-dev
  python3-numpy python3-torch python3-dev python3-venv python3-pip python3-pil
)
if [[ ${1:-} != --demo ]]; then
  packages+=(libgtest-dev libgmock-dev libbenchmark-dev clang-14 libclang-rt-14-dev
             python3-torchvision python3-matplotlib)
fi

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
