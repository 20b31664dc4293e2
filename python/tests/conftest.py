"""Shared test helpers: the audit verdict comes from seedloader.audit.check."""
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
