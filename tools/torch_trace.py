"""Record per-sample traces from PyTorch DataLoaders for `seed-audit trace`.

Every __getitem__ of a wrapped map-style dataset writes one JSON line:

    {"rank":0,"epoch":1,"worker":0,"batch":3,"index":17,"rng":"<fingerprint>"}

* rank: given by you (one recorder per rank or simulated rank).
* epoch, batch: carried by the index itself. The recorder's batch sampler tags
  every index it yields with the epoch (how often the loader has been iterated)
  and the batch's position in that epoch; the tag travels with the index through
  the DataLoader's index queue, so it is right for any worker count, prefetching,
  persistent workers and sampler - nothing is inferred from worker order.
* worker: torch.utils.data.get_worker_info().id (0 when num_workers is 0).
* rng: a hash of the states, taken when the sample starts, of the generators the
  sample used: Python's `random`, NumPy's global state, torch's default
  generator, and the generator objects you name as dataset attributes
  (np.random.Generator / RandomState, torch.Generator, random.Random). "Used"
  means the generator's state changed during __getitem__, so a generator that
  is duplicated across workers but never drawn from does not count. A sample
  that used no generator gets a unique token (it has no random state to repeat).
* content (optional): a hash of the returned sample.

Lines are appended with one write() each to a file opened with O_APPEND, so all
ranks and workers can share one file. Works with Debian's python3 and torch 1.13.

    from torch_trace import TraceRecorder
    rec = TraceRecorder("trace.jsonl", rank=0, generators=["rng"])
    loader = rec.loader(MyDataset(), batch_size=8, shuffle=True, num_workers=2)
    for epoch in range(2):
        for batch in loader:
            ...
    # then: seed-audit trace trace.jsonl --dataset-size 1000
"""

import hashlib
import json
import os
import pickle
import random

import numpy as np
import torch
import torch.utils.data as tud


class TracedIndex(int):
    """A dataset index that also carries its epoch and batch number."""

    def __new__(cls, value, epoch, batch):
        obj = super().__new__(cls, value)
        obj.epoch = epoch
        obj.batch = batch
        return obj

    def __reduce__(self):
        return (TracedIndex, (int(self), self.epoch, self.batch))


class TracedBatchSampler(tud.Sampler):
    """Yields the inner batch sampler's batches with every index tagged.

    The epoch is the number of times this sampler has been iterated before, the
    batch its position in the epoch. Use set_epoch() to number epochs yourself.
    """

    def __init__(self, batch_sampler):
        self.batch_sampler = batch_sampler
        self._next_epoch = 0

    def set_epoch(self, epoch):
        """Numbers the next iteration `epoch` (does not touch the inner sampler)."""
        self._next_epoch = epoch

    def __iter__(self):
        epoch = self._next_epoch
        self._next_epoch += 1
        for k, batch in enumerate(self.batch_sampler):
            yield [TracedIndex(i, epoch, k) for i in batch]

    def __len__(self):
        return len(self.batch_sampler)


def _state_bytes(gen):
    """A byte string equal exactly when the generator's state is equal."""
    if isinstance(gen, np.random.Generator):
        return repr(gen.bit_generator.state).encode()
    if isinstance(gen, np.random.RandomState):
        s = gen.get_state()
        return s[1].tobytes() + repr(s[2:]).encode()
    if isinstance(gen, torch.Generator):
        return gen.get_state().numpy().tobytes()
    if isinstance(gen, random.Random):
        return pickle.dumps(gen.getstate())
    raise TypeError("cannot fingerprint a generator of type %s" % type(gen).__name__)


class TracedDataset(tud.Dataset):
    """Wraps a map-style dataset; records one trace line per __getitem__.

    Attribute reads and writes other than the wrapper's own go to the wrapped
    dataset, so worker_init_fn code such as `get_worker_info().dataset.rng = ...`
    works unchanged.
    """

    _OWN = ("dataset", "path", "rank", "generators", "record_content", "_fd", "_pid", "_seq")

    def __init__(self, dataset, path, rank, generators=(), record_content=False):
        object.__setattr__(self, "dataset", dataset)
        object.__setattr__(self, "path", os.fspath(path))
        object.__setattr__(self, "rank", int(rank))
        object.__setattr__(self, "generators", tuple(generators))
        object.__setattr__(self, "record_content", record_content)
        object.__setattr__(self, "_fd", None)
        object.__setattr__(self, "_pid", None)
        object.__setattr__(self, "_seq", 0)
        for name in self.generators:
            _state_bytes(getattr(dataset, name))  # fail early on a bad name

    def __getattr__(self, name):
        return getattr(object.__getattribute__(self, "dataset"), name)

    def __setattr__(self, name, value):
        if name in TracedDataset._OWN:
            object.__setattr__(self, name, value)
        else:
            setattr(self.dataset, name, value)

    def __len__(self):
        return len(self.dataset)

    def _states(self):
        states = [
            ("random", pickle.dumps(random.getstate())),
            ("numpy", _state_bytes_legacy()),
            ("torch", torch.get_rng_state().numpy().tobytes()),
        ]
        for name in self.generators:
            states.append(("attr:" + name, _state_bytes(getattr(self.dataset, name))))
        return states

    def _write(self, line):
        # Workers are forked: a descriptor opened by another process is not ours.
        if self._pid != os.getpid():
            self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            self._pid = os.getpid()
        data = (line + "\n").encode()
        if os.write(self._fd, data) != len(data):
            raise OSError("short write to trace " + self.path)

    def __getitem__(self, idx):
        if not isinstance(idx, TracedIndex):
            raise TypeError(
                "TracedDataset needs indices from TracedBatchSampler; build the loader "
                "with TraceRecorder.loader() or pass batch_sampler=TracedBatchSampler(...)")
        before = self._states()
        item = self.dataset[int(idx)]
        after = self._states()
        used = [b for (name, b), (_, a) in zip(before, after) if a != b]
        info = tud.get_worker_info()
        worker = info.id if info is not None else 0
        if used:
            h = hashlib.blake2b(digest_size=16)
            for b in used:
                h.update(len(b).to_bytes(8, "little"))
                h.update(b)
            rng = h.hexdigest()
        else:
            object.__setattr__(self, "_seq", self._seq + 1)
            rng = "unused/%d/%d/%d/%d/%d" % (self.rank, idx.epoch, worker, os.getpid(),
                                               self._seq)
        record = {"rank": self.rank, "epoch": idx.epoch, "worker": worker,
                  "batch": idx.batch, "index": int(idx), "rng": rng}
        if self.record_content:
            record["content"] = hashlib.blake2b(
                pickle.dumps(_plain(item)), digest_size=16).hexdigest()
        self._write(json.dumps(record, separators=(",", ":")))
        return item


def _state_bytes_legacy():
    s = np.random.get_state()
    return s[1].tobytes() + repr(s[2:]).encode()


def _plain(item):
    """Tensors as NumPy arrays, so equal samples pickle alike."""
    if isinstance(item, torch.Tensor):
        return item.detach().cpu().numpy()
    if isinstance(item, (list, tuple)):
        return type(item)(_plain(x) for x in item)
    if isinstance(item, dict):
        return {k: _plain(v) for k, v in item.items()}
    return item


class TraceRecorder:
    """Builds traced DataLoaders for one rank, all appending to `path`."""

    def __init__(self, path, rank=0, generators=(), record_content=False):
        self.path = os.fspath(path)
        self.rank = rank
        self.generators = tuple(generators)
        self.record_content = record_content

    def wrap(self, dataset):
        return TracedDataset(dataset, self.path, self.rank, self.generators,
                             self.record_content)

    def loader(self, dataset, batch_size=1, shuffle=False, sampler=None, drop_last=False,
               **kwargs):
        """A DataLoader like DataLoader(dataset, batch_size, shuffle, sampler,
        drop_last, **kwargs), recording every sample. kwargs go to DataLoader
        (num_workers, worker_init_fn, persistent_workers, generator, ...)."""
        if sampler is None:
            sampler = (tud.RandomSampler(dataset, generator=kwargs.get("generator"))
                       if shuffle else tud.SequentialSampler(dataset))
        elif shuffle:
            raise ValueError("sampler and shuffle are exclusive, as in DataLoader")
        batches = TracedBatchSampler(tud.BatchSampler(sampler, batch_size, drop_last))
        return tud.DataLoader(self.wrap(dataset), batch_sampler=batches, **kwargs)
