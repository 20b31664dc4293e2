#!/usr/bin/env bash
# The main job: builds seedloader and runs the demo pipeline.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh default
build/default/examples/streams_demo 1234
echo
build/default/tools/seed-audit derive --seed 1234 --purpose worker --epoch 0 --rank 1 --worker 1 --count 3
