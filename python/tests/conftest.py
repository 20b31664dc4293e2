"""Shared test helpers: the audit verdict comes from seedloader.audit.check."""
import importlib.util
import json
import os

import pytest

import seedloader.audit


@pytest.fixture
def audit_check():
    """audit_check(path, dataset_size) -> {finding kind: count}, {} when clean."""
    def check(path, dataset_size):
        report = seedloader.audit.check(os.fspath(path), dataset_size)
        return {f["kind"]: f["count"] for f in report["findings"]}
    return check


@pytest.fixture
def read_trace():
    """read_trace(path) -> the trace's lines as dicts."""
    def read(path):
        with open(path) as f:
            return [json.loads(line) for line in f]
    return read


@pytest.fixture
def cross_check_program():
    """cross_check_program(variable, what) -> the program whose path the environment
    variable holds (scripts/python_test.sh sets it after the C++ build); without
    it the test skips, or fails under SEEDLOADER_REQUIRE_CROSS_CHECKS=1 (CI)."""
    def find(variable, what):
        path = os.environ.get(variable)
        if not path:
            if os.environ.get("SEEDLOADER_REQUIRE_CROSS_CHECKS") == "1":
                pytest.fail("%s is not set and SEEDLOADER_REQUIRE_CROSS_CHECKS=1 asks for "
                            "every cross-check" % variable)
            pytest.skip("%s (%s) not given; scripts/python_test.sh sets it after the C++ "
                        "build" % (variable, what))
        return path
    return find


def need(module):
    """Skips the test without `module` (one of frameworks/requirements.txt), or
    fails it under SEEDLOADER_REQUIRE_CROSS_CHECKS=1 (CI)."""
    if importlib.util.find_spec(module) is None:
        if os.environ.get("SEEDLOADER_REQUIRE_CROSS_CHECKS") == "1":
            pytest.fail("%s is not installed and SEEDLOADER_REQUIRE_CROSS_CHECKS=1 asks for "
                        "every cross-check (scripts/python_env.sh --frameworks)" % module)
        pytest.skip("%s is not installed (scripts/python_env.sh --frameworks)" % module)
