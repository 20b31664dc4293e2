#!/usr/bin/env bash
# Installs the peers bench/compare_peers.py measures seedloader against, from PyPI,
# into build/peers-venv: NVIDIA DALI (its CPU pipeline) and tf.data (tensorflow-cpu),
# beside the seedloader package itself. The environment sees Debian's python3
# packages (--system-site-packages), so PyTorch is Debian's torch and torchvision
# unless --with-torch is given.
#
# Usage: bench/setup_peers.sh [--with-torch]
#   --with-torch  also install torch and torchvision from PyPI into the environment
#                 (shadowing Debian's 1.13/0.14), which brings torchvision.transforms.v2
#                 and so the decode_jpeg + v2 contender. PyPI's Linux torch wheel is the
#                 CUDA build: it adds about 5.5 GB with its nvidia-* libraries, for a
#                 bench that runs on the CPU. Off by default.
#
# Safe to run again: pip skips what is already installed at the pinned version, and
# the seedloader build in build/pip (shared with scripts/python_env.sh) is
# incremental. Delete build/peers-venv to start over.
set -euo pipefail
cd "$(dirname "$0")/.."

# Pins, each the newest that installs on Python 3.11 without replacing Debian's
# numpy 1.24 (Debian's torch 1.13 is built against numpy 1.x and fails to import
# beside numpy 2):
#   tensorflow-cpu 2.17.1: 2.18 and later require numpy >= 1.26.
#   nvidia-dali-cuda130 2.4.0: the CUDA 13 build; its CPU pipeline needs no GPU.
TF_PIN="tensorflow-cpu==2.17.1"
DALI_PIN="nvidia-dali-cuda130==2.4.0"
TORCH_PINS=("torch==2.14.1" "torchvision==0.29.2")

with_torch=0
for arg in "$@"; do
  case $arg in
    --with-torch) with_torch=1 ;;
    -h | --help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "setup_peers.sh: unknown argument '$arg' (see --help)" >&2; exit 2 ;;
  esac
done

venv=build/peers-venv
py=$venv/bin/python
if [[ ! -x $py ]]; then
  /usr/bin/python3 -m venv --system-site-packages "$venv"
fi
pip=("$py" -m pip install -q --disable-pip-version-check)

# One resolver run for the peers and seedloader's build tools, so that it honours
# all their bounds at once (scikit-build-core alone would upgrade packaging past
# DALI's limit).
peers=("$TF_PIN" "$DALI_PIN" "scikit-build-core>=0.10" "nanobind>=2.0")
if ((with_torch)); then
  peers+=("${TORCH_PINS[@]}")
fi
"${pip[@]}" "${peers[@]}"
# The seedloader package as scripts/python_env.sh installs it: `pip install .`
# without build isolation, with the build tools just installed.
CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-2} "${pip[@]}" \
  --no-build-isolation .

echo "installed in $venv:"
TF_CPP_MIN_LOG_LEVEL=2 "$py" - <<'EOF'
import importlib
import importlib.metadata as md

for dist, module in (("seedloader", "seedloader"), ("nvidia-dali-cuda130", "nvidia.dali"),
                     ("tensorflow-cpu", "tensorflow"), ("torch", "torch"),
                     ("torchvision", "torchvision")):
    try:
        version = md.version(dist)
    except md.PackageNotFoundError:
        version = "?"
    try:
        mod = importlib.import_module(module)
        where = mod.__file__.split("/lib/")[0] if mod.__file__ else "?"
        print("  %-20s %-12s import ok (%s)" % (dist, getattr(mod, "__version__", version), where))
    except Exception as e:  # a peer that fails to import is reported, not fatal
        print("  %-20s %-12s import FAILED: %s" % (dist, version, str(e).splitlines()[0]))
EOF
du -sh "$venv" | sed 's/^/  size of /'
