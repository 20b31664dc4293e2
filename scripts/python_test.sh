#!/usr/bin/env bash
# The Python package's part of the test suite, as a user installs it:
# scripts/python_env.sh (build/venv, `pip install .`, and the frameworks of
# test_frameworks.py), mypy on the package and the Python examples, then pytest on
# python/tests.
# Usage: scripts/python_test.sh [pytest args...]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/python_env.sh
venv=build/venv
"$venv/bin/python" -m pip install -q --disable-pip-version-check pytest mypy
# Lightning, accelerate and transformers, pinned, for the end-to-end trainings of
# test_frameworks.py.
bash scripts/python_env.sh --frameworks
# The package's types (seedloader/_core.pyi and the annotated modules) against the
# package itself and the examples that use it.
MYPYPATH=python "$venv/bin/python" -m mypy --no-incremental --ignore-missing-imports \
  python/seedloader examples/python
# The C++ loader's batches, for the equivalence test, and seed-audit, whose order
# of a saved mixture state is checked against the loader's (built by the default
# preset).
dump=$PWD/build/default/tests/python/batch_dump
[[ -x $dump ]] && export SEEDLOADER_BATCH_DUMP=$dump
audit=$PWD/build/default/tools/seed-audit
[[ -x $audit ]] && export SEEDLOADER_SEED_AUDIT=$audit
# From outside the source tree, so `import seedloader` is the installed package.
cd python/tests
# --durations: the 20 slowest, so that growth shows.
../../$venv/bin/python -m pytest -q -p no:cacheprovider --durations=20 "$@" .
