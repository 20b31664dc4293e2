#!/usr/bin/env bash
# Installs this build tree into a scratch prefix and builds and runs the consumer
# project against it, as another project would use seedloader.
# Usage: install_test.sh BUILD_DIR SOURCE_DIR [CXX_FLAGS]
# CXX_FLAGS are the tree's own (a sanitizer build's consumer must be built and
# linked with the same -fsanitize flags).
set -euo pipefail
build=$1
source=$2
flags=${3:-}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" >/dev/null
cmake -S "$source/tests/install/consumer" -B "$work/consumer" \
  -DCMAKE_PREFIX_PATH="$work/prefix" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="$flags"
cmake --build "$work/consumer" -j 2
"$work/consumer/consumer"
