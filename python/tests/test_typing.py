"""The type stubs: seedloader/_core.pyi is what nanobind's stub generator makes of
the compiled module (so a binding change that forgets the stub fails here), and
the package is marked typed. mypy over the package and the examples runs in
scripts/python_test.sh."""
import os
import subprocess
import sys

import seedloader


def test_the_core_stub_matches_the_compiled_module(tmp_path):
    fresh = tmp_path / "_core.pyi"
    subprocess.run([sys.executable, "-m", "nanobind.stubgen", "-q", "-m", "seedloader._core",
                    "-o", str(fresh)], check=True, capture_output=True)
    package = os.path.dirname(seedloader.__file__)
    with open(os.path.join(package, "_core.pyi")) as f:
        shipped = f.read()
    assert fresh.read_text() == shipped, (
        "python/seedloader/_core.pyi is out of date: regenerate it with "
        "`python -m nanobind.stubgen -m seedloader._core -o python/seedloader/_core.pyi`")


def test_the_package_is_marked_typed():
    assert os.path.exists(os.path.join(os.path.dirname(seedloader.__file__), "py.typed"))


def test_the_version_is_pyprojects_and_the_checkpoint_module_is_one():
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "..", "..", "pyproject.toml")) as f:
        declared = next(line.split('"')[1] for line in f if line.startswith("version ="))
    assert seedloader.__version__ == declared
    assert seedloader.checkpoint.load_checkpoint is seedloader.torch.load_checkpoint
