#!/usr/bin/env bash
# Configures and builds one CMake preset (default: "default") with 2 jobs.
# Usage: scripts/build.sh [PRESET] [extra cmake -D options...]
set -euo pipefail
cd "$(dirname "$0")/.."
preset=${1:-default}
shift || true
export PATH="$PATH:/usr/local/cuda/bin"
cmake --preset "$preset" "$@" >/dev/null
cmake --build --preset "$preset" -j 2
