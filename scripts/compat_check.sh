#!/usr/bin/env bash
# The framework checks (python/tests/test_frameworks.py, test_framework_hooks.py)
# and the real streams (test_real_streams.py: Hugging Face datasets, webdataset)
# against the newest torch, torchvision, Lightning, accelerate, transformers,
# datasets and webdataset
# (with its dependencies) on PyPI, in a virtual environment of their own
# (build/compat-venv, without Debian's Python packages; seedloader built into it
# from this checkout, its CMake build in build/compat-pip). torch and its CUDA
# libraries are gigabytes, so this is not part of the test suite: run it before
# resolving work that touches how frameworks use the loader, and when they release.
# Usage: scripts/compat_check.sh [pytest args...]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --demo-build
venv=build/compat-venv
[[ -x $venv/bin/python ]] || /usr/bin/python3 -m venv "$venv"
pip=("$venv/bin/python" -m pip install -q --disable-pip-version-check)
"${pip[@]}" --upgrade torch torchvision lightning accelerate transformers datasets \
  webdataset numpy pillow pytest
"${pip[@]}" "scikit-build-core>=0.10" "nanobind>=2.0" safetensors xxhash
CMAKE_BUILD_PARALLEL_LEVEL=2 "${pip[@]}" --no-build-isolation \
  --config-settings=build-dir=build/compat-pip .
"$venv/bin/python" - <<'PY'
import importlib.metadata as m
print("compat_check: " + ", ".join("%s %s" % (p, m.version(p)) for p in (
    "torch", "torchvision", "lightning", "accelerate", "transformers", "datasets",
    "webdataset", "numpy", "seedloader")))
PY
cd python/tests
SEEDLOADER_REQUIRE_CROSS_CHECKS=1 "../../$venv/bin/python" -m pytest -q -p no:cacheprovider \
  test_frameworks.py test_framework_hooks.py test_real_streams.py "$@"
