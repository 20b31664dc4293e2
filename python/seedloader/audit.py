"""Auditing PyTorch pipelines: record a trace, then run seedloader's detectors on it.

    from seedloader.audit import trace, check
    loader = trace(DataLoader(ds, batch_size=8, num_workers=2), "trace.jsonl", rank=0)
    for batch in loader: ...
    report = check("trace.jsonl", dataset_size=len(ds))
    assert report["verdict"] == "clean", report["findings"]

trace / TraceRecorder: see seedloader._trace (the trace format and what is
recorded). check() returns the report `seed-audit trace FILE --json` writes:
{"verdict": "clean" | "findings", "samples": N, "findings": [{"kind", "count",
"examples", "hint"}]}. A trace that spans the runs of a restarted job
(trace(..., run=K) in each run) also reports resume_duplicate and resume_gap.
"""

import json
import os

from seedloader._trace import TraceRecorder, trace

__all__ = ["TraceRecorder", "check", "trace"]


def check(path, dataset_size=None, allow_missing=0, global_batch=None):
    """Audits the trace at `path`; returns the report as a dict.

    dataset_size: N to check that every epoch covers [0, N), or None.
    allow_missing: samples an epoch may leave out by design (drop_last).
    global_batch: G for a loader with partition="elastic", whose epochs are padded
      to a multiple of G rather than of the world size.
    Raises seedloader.DataError for a missing or malformed trace.
    """
    # Imported here, so that trace() works without the compiled module.
    from seedloader import _core
    return json.loads(_core.audit_trace(os.fspath(path), dataset_size, allow_missing,
                                        global_batch))
