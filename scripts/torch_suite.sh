#!/usr/bin/env bash
# PyTorch's own DataLoader tests against seedloader.DataLoader: test/test_dataloader.py
# of PyTorch 1.13.1 (the source of Debian's python3-torch, taken from Debian's
# archive with apt-get source, in an apt state of its own so the system's package
# lists stay as they are) with torch.utils.data.DataLoader replaced by
# seedloader.DataLoader, in the test process and in the processes the tests start
# (a sitecustomize on PYTHONPATH), and nothing else changed. Runs the tests of its
# DataLoader classes (TestDataLoader, TestDataLoaderPersistentWorkers, the string,
# dict, named-tuple, custom-pin, individual-worker-queue and conv-after-fork
# classes) and prints pytest's summary. Needs build/venv
# (scripts/python_env.sh). Usage: scripts/torch_suite.sh [pytest args...]
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
dir=build/torch-suite
mkdir -p "$dir/adapter"
if [[ ! -f $dir/test_dataloader.py ]]; then
  apt_dir=$(mktemp -d)
  trap 'rm -rf "$apt_dir"' EXIT
  mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial"
  cat >"$apt_dir/src.sources" <<'EOF'
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
  apt=(-qq -o Dir::Etc::sourcelist="$apt_dir/src.sources" -o Dir::Etc::sourceparts=-
    -o Dir::State::Lists="$apt_dir/lists" -o Dir::Cache="$apt_dir/cache")
  apt-get update "${apt[@]}"
  # Only the upstream tarball is needed (the Debian part may be gone from the pool).
  (cd "$apt_dir" && apt-get source --download-only "${apt[@]}" pytorch=1.13.1+dfsg-4 ||
    [[ -f pytorch_1.13.1+dfsg.orig.tar.xz ]])
  tar -xJf "$apt_dir/pytorch_1.13.1+dfsg.orig.tar.xz" -C "$apt_dir" \
    pytorch-1.13.1/test/test_dataloader.py
  cp "$apt_dir/pytorch-1.13.1/test/test_dataloader.py" "$dir/test_dataloader.py"
fi
# What torch's test helpers import beyond torch (torch.testing._internal.common_utils).
build/venv/bin/python -m pip install -q --disable-pip-version-check --no-deps \
  expecttest==0.2.1
# The adapter: torch's name bound to seedloader's loader before the tests import it,
# with the duplicate-stream check off (ON_DUPLICATE_STREAM=error runs it on): the
# suite's streams repeat across workers on purpose (CountingIterableDataset in
# every worker, WorkerSpecificIterableDataset's overlapping ranges, DataPipes
# without a sharding filter), which the default check refuses before a batch.
cat >"$dir/adapter/sitecustomize.py" <<EOF
import torch.utils.data
import torch.utils.data.dataloader

import seedloader


class DataLoader(seedloader.DataLoader):
    def __init__(self, *args, **kwargs):
        kwargs.setdefault("on_duplicate_stream", "${ON_DUPLICATE_STREAM:-off}")
        super().__init__(*args, **kwargs)


torch.utils.data.DataLoader = DataLoader
torch.utils.data.dataloader.DataLoader = DataLoader
EOF
printf '[pytest]\n' >"$dir/pytest.ini"  # the suite's own rootdir, not the project's
cd "$dir"
PYTHONPATH="$root/$dir/adapter${PYTHONPATH:+:$PYTHONPATH}" \
  "$root/build/venv/bin/python" -m pytest -q -p no:cacheprovider -o faulthandler_timeout=300 \
  test_dataloader.py::TestDataLoader test_dataloader.py::TestDataLoaderPersistentWorkers \
  test_dataloader.py::TestStringDataLoader test_dataloader.py::TestDictDataLoader \
  test_dataloader.py::TestNamedTupleDataLoader test_dataloader.py::TestCustomPinFn \
  test_dataloader.py::TestIndividualWorkerQueue test_dataloader.py::TestConvAfterFork "$@"
