#!/usr/bin/env bash
# The whole test suite from a fresh machine: set-up, configure, build, ctest.
# Usage: scripts/test.sh [PRESET]   (default, asan or tsan)
set -euo pipefail
cd "$(dirname "$0")/.."
preset=${1:-default}
bash scripts/setup.sh
bash scripts/build.sh "$preset"
ctest --preset "$preset" --timeout 600
