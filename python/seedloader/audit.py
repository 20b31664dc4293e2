"""Auditing pipelines: record a trace, then run seedloader's detectors on it.

    from seedloader.audit import trace, check
    loader = trace(DataLoader(ds, batch_size=8, num_workers=2), "trace.jsonl", rank=0)
    for batch in loader: ...
    report = check("trace.jsonl", dataset_size=len(ds))
    assert report["verdict"] == "clean", report["findings"]

trace() takes a torch.utils.data.DataLoader (see seedloader._trace for the trace
format and what is recorded; TraceRecorder is the same with options) or a
seedloader.DataLoader, whose engine records each delivered sample's index, worker
and stream fingerprint, and whose declared skips (loader.skip()) are written as
"skipped" lines. check() returns the report `seed-audit trace FILE --json`
writes: {"verdict": "clean" | "findings", "samples": N, "findings": [{"kind",
"count", "examples", "hint"}], "information": [...]}, declared skips under
"information" as declared_skip. A trace that spans the runs of a restarted job
(trace(..., run=K) in each run) also reports resume_duplicate and resume_gap.
"""

import array
import json
import os

from seedloader import _trace
from seedloader._trace import TraceRecorder

__all__ = ["LoaderTrace", "StreamTrace", "TraceRecorder", "check", "trace"]


def trace(loader, path, rank=None, generators=(), record_content=False, run=None):
    """`loader` as a loader that appends one line per sample to `path`.

    A torch.utils.data.DataLoader is rebuilt to record (rank: given by you, 0 when
    None; generators and record_content: see TraceRecorder). A
    seedloader.DataLoader is wrapped in a LoaderTrace: its rank is its own (a
    `rank` given must be the same), and generators and record_content do not
    apply (the engine knows each sample's stream)."""
    import seedloader
    from seedloader._loader import StreamLoader
    if isinstance(loader, StreamLoader):
        if generators or record_content:
            raise ValueError("trace: generators and record_content are for torch "
                             "DataLoaders; a stream's trace records each sample's "
                             "content itself")
        return StreamTrace(loader, path, rank=rank, run=run)
    if isinstance(loader, seedloader.DataLoader):
        if generators or record_content:
            raise ValueError("trace: generators and record_content are for torch "
                             "DataLoaders; a seedloader.DataLoader records each sample's "
                             "stream fingerprint itself")
        return LoaderTrace(loader, path, rank=rank, run=run)
    return _trace.trace(loader, path, 0 if rank is None else rank, generators,
                        record_content, run)


class LoaderTrace:
    """A seedloader.DataLoader that appends to `path`, for every sample it delivers,
    {"rank", "epoch", "worker", "batch", "index", "rng"} (batch: the step in its
    epoch; rng: the fingerprint of the sample's stream state; "run" when given;
    over a Mixture also "source" and "source_epoch", index being the sample's
    index in its source),
    and for every sample its declared skips leave out (loader.skip(): a skipped
    step, or a skipped sample of a delivered step) {"rank", "epoch", "batch",
    "index", "skipped": true}, as the steps are passed. Each rank traces its own
    loader; lines are appended with one write() per batch (O_APPEND), so the ranks
    may share one file. Iterate it as the loader; other attributes are the
    loader's. The skipped samples come from loader.ledger(), so a loader with
    skips and a sampler of its own cannot be traced (ConfigError at the pass's
    first batch); without skips no ledger is asked."""

    def __init__(self, loader, path, rank=None, run=None):
        if run is not None and (isinstance(run, bool) or not isinstance(run, int) or
                                run < 0):
            raise ValueError("run must be a non-negative integer, not %r" % (run,))
        if getattr(loader, "_collate", None) is not None:  # none over a stream
            raise ValueError("trace: this seedloader.DataLoader has a collate_fn, under "
                             "which a whole batch is one item of the engine: its samples "
                             "have no stream of their own to record")
        self.loader = loader
        self.path = os.fspath(path)
        self.run = run
        self._rank = rank

    def __len__(self):
        return len(self.loader)

    def __getattr__(self, name):
        if name == "loader":  # not set yet (a copy being made): no loader to ask
            raise AttributeError(name)
        return getattr(self.loader, name)

    def __iter__(self):
        loader = self.loader
        loader._place()
        self._check_rank(loader.rank)
        loader._record_fingerprints = True  # the engine's, exported from now on
        batches = iter(loader)
        declared, written, started = [], 0, None
        for batch in batches:
            if started is None:
                started = loader._pass
                declared = self._declared(loader, started.first)
            step = started.yielded - 1
            lines = []  # the skipped samples of the steps up to this one, then its own
            while written < len(declared) and declared[written][0] <= step:
                lines.append(declared[written][1])
                written += 1
            epoch, rank, worker = loader.epoch, loader.rank, started.last_worker
            # A fleet's batch: the actor that made it (seedloader._remote.Position).
            made_by = {"actor": started.last_actor} if hasattr(started, "last_actor") \
                else {}
            fingerprints = _uint64s(started.last_fingerprints)
            if loader._mixture_history is not None:
                # A mixture's sample: its source, the source's epoch, its index there.
                for (name, index), source_epoch, rng in zip(
                        loader.last_indices, _uint64s(started.last_stream_epochs),
                        fingerprints):
                    lines.append(self._line(rank=rank, epoch=epoch, worker=worker,
                                            batch=step, source=name,
                                            source_epoch=source_epoch, index=index,
                                            rng="%016x" % rng, **made_by))
            else:
                # A sampler's keys by their positions in the epoch, as the engine
                # indexes them.
                for index, rng in zip(loader._last_indices(keys=False), fingerprints):
                    lines.append(self._line(rank=rank, epoch=epoch, worker=worker,
                                            batch=step, index=index, rng="%016x" % rng,
                                            **made_by))
            self._append(lines)
            yield batch
        if started is None and loader._pass is not None:
            # A pass whose every step left was skipped: it delivered nothing.
            started = loader._pass
            declared = self._declared(loader, started.first)
        # The steps skipped at the epoch's end (a pass that ends by running out).
        self._append([text for _, text in declared[written:]])

    def _check_rank(self, rank):
        if self._rank is not None and self._rank != rank:
            raise ValueError("trace: rank=%r was given, but the loader runs as rank %d"
                             % (self._rank, rank))

    def _line(self, **fields):
        if self.run is not None:
            fields["run"] = self.run
        return json.dumps(fields, separators=(",", ":"))

    def _declared(self, loader, first):
        """[(step, line)]: the samples of this rank that the epoch's declared skips
        leave out, from step `first` on (one ledger query, its skipped entries)."""
        end = len(loader)
        if (not loader._skip_steps and not loader._skip_samples) or first >= end:
            return []
        epoch, rank = loader.epoch, loader.rank
        out = []
        for e in loader.ledger(range(first, end), epoch=epoch, rank=rank,
                               skipped_only=True):
            where = {"index": e["index"]}
            if "source" in e:  # a mixture's sample, as its trained lines name it
                where = {"source": e["source"], "source_epoch": e["source_epoch"],
                         "index": e["source_index"]}
            out.append((e["step"], self._line(rank=rank, epoch=epoch, batch=e["step"],
                                              skipped=True, **where)))
        return out

    def _append(self, lines):
        if not lines:
            return
        data = memoryview(("\n".join(lines) + "\n").encode())
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            while data:
                data = data[os.write(fd, data):]
        finally:
            os.close(fd)


class StreamTrace(LoaderTrace):
    """A seedloader.DataLoader over an IterableDataset that appends to `path`, for
    every sample it delivers, {"rank", "epoch", "worker", "batch", "index", "rng",
    "content"} ("run" when given): batch is the worker's batch number k in its
    stream, index the sample's position p = k * batch_size + j in its worker's
    stream made unique over the workers and ranks ((p * num_workers + worker) *
    world_size + rank; a resume keeps it), rng names the worker's stream (seed,
    epoch, rank, worker) and p, and content is the sample's fingerprint (BLAKE2b,
    seedloader._stream_reader.fingerprint, taken in the worker). seed-audit trace
    reports a content trained twice in an epoch (content_repeat): a stream every
    worker or rank iterates whole, or a resume that restarted it."""

    def __iter__(self):
        loader = self.loader
        loader._trace_samples = True  # the workers fingerprint every sample from now on
        batches = iter(loader)
        size = 1 if loader.batch_size is None else loader.batch_size
        workers = max(loader.num_workers, 1)
        for batch in batches:
            self._check_rank(loader.rank)
            worker, k, prints = batches.last
            epoch, rank, ranks, seed = loader.epoch, loader.rank, loader.world_size, loader.seed
            lines = []
            for j, content in enumerate(prints):
                p = k * size + j
                lines.append(self._line(
                    rank=rank, epoch=epoch, worker=worker, batch=k,
                    index=(p * workers + worker) * ranks + rank,
                    rng="stream %d %d %d %d %d" % (seed, epoch, rank, worker, p),
                    content="%016x" % content))
            self._append(lines)
            yield batch


def _uint64s(raw):
    return array.array("Q", raw).tolist() if raw is not None else []


def check(path, dataset_size=None, allow_missing=0, global_batch=None, source_sizes=None,
          mixture=None):
    """Audits the trace at `path`; returns the report as a dict.

    dataset_size: N to check that every epoch covers [0, N), or None.
    allow_missing: samples an epoch may leave out by design (drop_last).
    global_batch: G for a loader with partition="elastic", whose epochs are padded
      to a multiple of G rather than of the world size.
    source_sizes: {name: size} of a Mixture's sources (mixture.sizes by
      mixture.names), to check that every source epoch but the trace's last covers
      its source; a mixture's samples are checked within their sources' epochs
      (repeats) with or without it.
    mixture: a Mixture loader's state_dict()["mixture"] (its last, for a trace
      across restarts: it holds every schedule the run had), with global_batch:
      each global step's sources are checked against the weights in force
      (mixture_composition).
    Raises seedloader.DataError for a missing or malformed trace.
    """
    # Imported here, so that trace() works without the compiled module.
    from seedloader import _core
    return json.loads(_core.audit_trace(os.fspath(path), dataset_size, allow_missing,
                                        global_batch, dict(source_sizes or {}),
                                        "" if mixture is None else json.dumps(mixture)))
