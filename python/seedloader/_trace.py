"""Record per-sample traces from PyTorch DataLoaders for `seed-audit trace`.

Every sample a traced loader produces appends one JSON line to the trace:

    {"rank":0,"epoch":1,"worker":0,"batch":3,"index":17,"rng":"<fingerprint>"}

plus "content" (a hash of the returned sample) when record_content is set, and
"run" when given: which run of a training job that restarted (0, 1, ...), so that
one trace spans the runs and the audit sees samples consumed twice or never
across a restart (an absent run is run 0).

    loader = trace(DataLoader(ds, batch_size=8, shuffle=True, num_workers=2),
                   "trace.jsonl", rank=0)
    for epoch in range(2):
        for batch in loader:
            ...
    # then: seed-audit trace trace.jsonl --dataset-size 1000

Fields:
* rank: given by you (one traced loader per rank or simulated rank).
* worker: torch.utils.data.get_worker_info().id (0 when num_workers is 0).
* Map-style datasets: epoch and batch travel with the index. The recorder's batch
  sampler tags every index it yields with the epoch (how often the loader has been
  iterated) and the batch's position in that epoch, so they are right for any
  worker count, prefetching, persistent workers and sampler.
* IterableDataset: epoch is how often the dataset wrapper has been iterated; the
  traced loader numbers it in the main process, and a persistent worker counts
  its own re-iterations. A worker's k-th batch gets batch = k * num_workers +
  worker, the position at which DataLoader delivers it while every worker still
  yields. index is the sample's own index when it has one (a mapping's "index"
  key or an `index` attribute, if an integer), else batch * batch_size +
  position in the batch: unique in the epoch, and the delivery position. A
  dataset that yields the same data in every worker therefore only shows up in
  the audit if its samples carry their own index (or their generators repeat).
  With drop_last, the samples of a dropped partial batch are recorded anyway.
* rng: a hash of the states, taken when the sample starts, of the generators the
  sample used: Python's `random`, NumPy's global state, torch's default
  generator, and every generator reachable from the dataset (see
  find_generators). "Used" means the generator's state changed while the sample
  was produced, so a generator duplicated across workers but never drawn from
  does not count. A sample that used no generator gets a unique token (it has no
  random state to repeat).

Lines are appended with one write() each to a file opened with O_APPEND, so all
ranks and workers can share one file. This module imports neither seedloader nor
its compiled core, so tools/torch_trace.py loads it by path.
"""

import hashlib
import itertools
import json
import operator
import os
import pickle
import random
import types
from collections.abc import Mapping

import numpy as np
import torch
import torch.utils.data as tud

GENERATOR_TYPES = (np.random.Generator, np.random.RandomState, random.Random,
                   torch.Generator)
# How many attribute / element steps below the dataset the walk looks.
MAX_DEPTH = 8
# Values the walk never looks inside: they cannot hold a generator, or (modules,
# classes, functions) they lead away from the dataset into global state.
_LEAF_TYPES = (str, bytes, bytearray, int, float, complex, type(None), range,
               np.ndarray, np.generic, torch.Tensor, type, types.ModuleType,
               types.FunctionType, types.BuiltinFunctionType, types.MethodType)


def global_generators():
    """[(label, generator)]: the process-wide generators seeded per worker."""
    # random._inst and np.random.mtrand._rand are the objects behind random.seed()
    # and np.random.seed().
    return [("random", random._inst), ("numpy", np.random.mtrand._rand),
            ("torch", torch.default_generator)]


def find_generators(root, max_depth=MAX_DEPTH):
    """[(label, steps, generator)] for every generator reachable from `root`.

    The walk goes depth first through instance attributes (__dict__ in insertion
    order, then __slots__), list and tuple elements and dict values, up to
    `max_depth` steps, visiting every object once; each generator is listed once,
    at the first path that reaches it, and the global generators not at all. It
    does not look into sets (no stable order), closures, properties or C
    extension attributes. `steps` resolves with resolve(). A traced dataset is
    walked as the dataset it wraps.
    """
    found = []
    listed = {id(g) for _, g in global_generators()}
    visited = set()

    def visit(obj, steps):
        if _is_generator(obj):
            if id(obj) not in listed:
                listed.add(id(obj))
                found.append((_label(steps), steps, obj))
            return
        if len(steps) >= max_depth or id(obj) in visited:
            return
        visited.add(id(obj))
        for step, child in _children(obj):
            if not isinstance(child, _LEAF_TYPES):
                visit(child, steps + (step,))

    visit(_unwrap(root), ())
    return found


def resolve(root, steps):
    """The object find_generators() found at `steps` below `root` (raises
    LookupError, AttributeError or TypeError when the path no longer exists)."""
    obj = _unwrap(root)
    for kind, key in steps:
        if kind == "dict":
            obj = object.__getattribute__(obj, "__dict__")[key]
        elif kind == "slot":
            obj = object.__getattribute__(obj, key)
        else:
            obj = obj[key]
    return obj


def _is_generator(obj):
    # SystemRandom has no state to duplicate (or to fingerprint).
    return isinstance(obj, GENERATOR_TYPES) and not isinstance(obj, random.SystemRandom)


def _unwrap(obj):
    return obj.dataset if isinstance(obj, _Forwarding) else obj


def _children(obj):
    """(step, value) pairs below `obj`, in a stable order."""
    if isinstance(obj, dict):
        return ((("item", k), v) for k, v in obj.items())
    if isinstance(obj, (list, tuple)):
        return ((("item", i), v) for i, v in enumerate(obj))
    return itertools.chain(_dict_children(obj), _slot_children(obj))


def _dict_children(obj):
    # object.__getattribute__: past proxies' __getattr__, which may do anything.
    try:
        attrs = object.__getattribute__(obj, "__dict__")
    except AttributeError:
        return ()
    return ((("dict", k), v) for k, v in attrs.items()) if isinstance(attrs, dict) else ()


def _slot_children(obj):
    for cls in type(obj).__mro__:
        slots = cls.__dict__.get("__slots__", ())
        for name in (slots,) if isinstance(slots, str) else slots:
            if name in ("__dict__", "__weakref__"):
                continue
            try:
                yield ("slot", name), object.__getattribute__(obj, name)
            except AttributeError:  # an unset slot
                continue


def _label(steps):
    parts = ["dataset"]
    for kind, key in steps:
        parts.append("[%r]" % (key,) if kind == "item" else "." + key)
    return "".join(parts)


def state_bytes(gen):
    """A byte string equal exactly when the generator's state is equal."""
    if isinstance(gen, np.random.Generator):
        return _canonical(gen.bit_generator.state)
    if isinstance(gen, np.random.RandomState):
        return _canonical(gen.get_state(legacy=False))
    if isinstance(gen, torch.Generator):
        return gen.get_state().numpy().tobytes()
    if isinstance(gen, random.Random):
        return pickle.dumps(gen.getstate())
    raise TypeError("cannot fingerprint a generator of type %s" % type(gen).__name__)


def _canonical(value):
    """Bytes of a NumPy state dict; arrays in full (repr may elide them)."""
    if isinstance(value, dict):
        return b"{%s}" % b",".join(repr(k).encode() + b":" + _canonical(v)
                                   for k, v in value.items())
    if isinstance(value, np.ndarray):
        return value.dtype.str.encode() + value.tobytes()
    return repr(value).encode()


class _GeneratorWatch:
    """The generators a dataset can draw from, and their current states.

    The walk runs once per process (workers are forked, possibly after
    worker_init_fn replaced generators) and again whenever a path it found no
    longer leads to a generator. Generators named by the user are looked up by
    their dotted attribute path every time.
    """

    def __init__(self, names=()):
        self.names = tuple(names)
        self._pid = None
        self._found = ()

    def check_names(self, dataset):
        """Raises AttributeError or TypeError for a name that is not a generator."""
        for name in self.names:
            state_bytes(self._named(dataset, name))

    def states(self, dataset):
        """{label: state bytes} for every generator, each generator once."""
        gens = global_generators() + self._walked(dataset)
        gens += [("dataset." + n, self._named(dataset, n)) for n in self.names]
        states, seen = {}, set()
        for label, gen in gens:
            if id(gen) not in seen:
                seen.add(id(gen))
                states[label] = state_bytes(gen)
        return states

    def _walked(self, dataset):
        if self._pid == os.getpid():
            try:
                gens = [(label, resolve(dataset, steps)) for label, steps in self._found]
                if all(_is_generator(g) for _, g in gens):
                    return gens
            except (LookupError, AttributeError, TypeError):
                pass
        found = find_generators(dataset)
        self._pid = os.getpid()
        self._found = [(label, steps) for label, steps, _ in found]
        return [(label, gen) for label, _, gen in found]

    @staticmethod
    def _named(dataset, name):
        obj = _unwrap(dataset)
        for part in name.split("."):
            obj = getattr(obj, part)
        return obj


class _SampleRecorder:
    """Writes one trace line per sample; shared by the map-style and iterable
    wrappers (one copy per process, since workers get copies of the wrapper)."""

    def __init__(self, path, rank, generators, record_content, run=None):
        self.path = os.fspath(path)
        self.rank = int(rank)
        self.run = None if run is None else int(run)
        self.watch = _GeneratorWatch(generators)
        self.record_content = record_content
        self._fd = None
        self._pid = None
        self._unused = 0

    def states(self, dataset):
        return self.watch.states(dataset)

    def write(self, dataset, before, epoch, worker, batch, index, item):
        """Records a sample that started from the generator states `before`."""
        after = self.watch.states(dataset)
        used = [b for label, b in before.items() if after.get(label) != b]
        record = {"rank": self.rank, "epoch": epoch, "worker": worker, "batch": batch,
                  "index": index, "rng": self._fingerprint(used, epoch, worker)}
        if self.run is not None:
            record["run"] = self.run
        if self.record_content:
            record["content"] = hashlib.blake2b(
                pickle.dumps(_plain(item)), digest_size=16).hexdigest()
        self._append(json.dumps(record, separators=(",", ":")))

    def _fingerprint(self, used, epoch, worker):
        if not used:
            self._unused += 1
            return "unused/%s/%d/%d/%d/%d/%d" % (self.run, self.rank, epoch, worker,
                                                 os.getpid(), self._unused)
        h = hashlib.blake2b(digest_size=16)
        for b in used:
            h.update(len(b).to_bytes(8, "little"))
            h.update(b)
        return h.hexdigest()

    def _append(self, line):
        # Workers are forked: a descriptor opened by another process is not ours.
        if self._pid != os.getpid():
            self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            self._pid = os.getpid()
        data = (line + "\n").encode()
        if os.write(self._fd, data) != len(data):
            raise OSError("short write to trace " + self.path)


def _plain(item):
    """Tensors as NumPy arrays, so equal samples pickle alike."""
    if isinstance(item, torch.Tensor):
        return item.detach().cpu().numpy()
    if isinstance(item, (list, tuple)):
        return type(item)(_plain(x) for x in item)
    if isinstance(item, dict):
        return {k: _plain(v) for k, v in item.items()}
    return item


def _worker():
    """(worker id, number of workers); (0, 1) in the main process."""
    info = tud.get_worker_info()
    return (0, 1) if info is None else (info.id, info.num_workers)


class TracedIndex(int):
    """A dataset index that also carries its epoch and batch number."""

    def __new__(cls, value, epoch, batch):
        obj = super().__new__(cls, value)
        obj.epoch = epoch
        obj.batch = batch
        return obj

    def __reduce__(self):
        return (TracedIndex, (int(self), self.epoch, self.batch))


class _EpochCounter:
    """Numbers its iterations 0, 1, ...; set_epoch() numbers the next one."""

    def __init__(self):
        self._next_epoch = 0

    def set_epoch(self, epoch):
        """Numbers the next iteration `epoch` (does not touch the inner sampler)."""
        self._next_epoch = epoch

    def _take_epoch(self):
        epoch = self._next_epoch
        self._next_epoch += 1
        return epoch


class TracedBatchSampler(_EpochCounter, tud.Sampler):
    """Yields the inner batch sampler's batches with every index tagged with the
    epoch (this sampler's iteration count) and the batch's position in it."""

    def __init__(self, batch_sampler):
        super().__init__()
        self.batch_sampler = batch_sampler

    def __iter__(self):
        epoch = self._take_epoch()
        for k, batch in enumerate(self.batch_sampler):
            yield [TracedIndex(i, epoch, k) for i in batch]

    def __len__(self):
        return len(self.batch_sampler)


class TracedSampler(_EpochCounter, tud.Sampler):
    """For loaders without automatic batching (batch_size=None): tags every index,
    each its own batch."""

    def __init__(self, sampler):
        super().__init__()
        self.sampler = sampler

    def __iter__(self):
        epoch = self._take_epoch()
        for k, i in enumerate(self.sampler):
            yield TracedIndex(i, epoch, k)

    def __len__(self):
        return len(self.sampler)


class _Forwarding:
    """Attribute reads and writes other than the wrapper's own (_OWN) go to the
    wrapped dataset, so worker_init_fn code such as
    `get_worker_info().dataset.rng = ...` works unchanged."""

    _OWN: tuple[str, ...] = ("dataset", "_rec")

    def __getattr__(self, name):
        # torch >= 2 fetches whole batches through __getitems__, past __getitem__.
        if name == "__getitems__":
            raise AttributeError(name)
        return getattr(object.__getattribute__(self, "dataset"), name)

    def __setattr__(self, name, value):
        if name in type(self)._OWN:
            object.__setattr__(self, name, value)
        else:
            setattr(self.dataset, name, value)

    def __len__(self):
        return len(self.dataset)


class TracedDataset(_Forwarding, tud.Dataset):
    """Wraps a map-style dataset; records one trace line per __getitem__, which
    must get indices from TracedBatchSampler or TracedSampler."""

    def __init__(self, dataset, recorder):
        self.dataset = dataset
        self._rec = recorder

    def __getitem__(self, idx):
        if not isinstance(idx, TracedIndex):
            raise TypeError(
                "TracedDataset needs indices from TracedBatchSampler; build the loader "
                "with trace() or TraceRecorder.loader()")
        before = self._rec.states(self.dataset)
        item = self.dataset[int(idx)]
        self._rec.write(self.dataset, before, idx.epoch, _worker()[0], idx.batch,
                        int(idx), item)
        return item


class TracedIterableDataset(_Forwarding, tud.IterableDataset):
    """Wraps an IterableDataset; records one trace line per yielded sample
    (epoch, batch and index as the module docstring says)."""

    _OWN = ("dataset", "_rec", "batch_size", "_next_epoch")

    def __init__(self, dataset, recorder, batch_size):
        self.dataset = dataset
        self._rec = recorder
        self.batch_size = batch_size or 1
        self._next_epoch = 0

    def __iter__(self):
        epoch = self._next_epoch
        self._next_epoch += 1
        return self._samples(epoch)

    def _samples(self, epoch):
        worker, workers = _worker()
        before = self._rec.states(self.dataset)
        it = iter(self.dataset)  # inside the first sample: setup may draw (shuffles)
        for pos in itertools.count():
            try:
                item = next(it)
            except StopIteration:
                return
            batch = pos // self.batch_size * workers + worker
            index = _own_index(item)
            if index is None:
                index = batch * self.batch_size + pos % self.batch_size
            self._rec.write(self.dataset, before, epoch, worker, batch, index, item)
            yield item
            before = self._rec.states(self.dataset)


def _own_index(item):
    """The sample's own integer index ("index" key or attribute), else None."""
    value = item.get("index") if isinstance(item, Mapping) else getattr(item, "index", None)
    try:
        return operator.index(value)
    except TypeError:
        return None


class TracedIterableLoader:
    """A DataLoader over a TracedIterableDataset that numbers epochs: each
    iteration tells the dataset its epoch before workers are started from it.
    Other attributes are the DataLoader's."""

    def __init__(self, loader):
        self.loader = loader
        self._epochs = 0

    def __iter__(self):
        self.loader.dataset._next_epoch = self._epochs
        self._epochs += 1
        return iter(self.loader)

    def __len__(self):
        return len(self.loader)

    def __getattr__(self, name):
        if name == "loader":  # not set yet (unpickling)
            raise AttributeError(name)
        return getattr(self.loader, name)


def _loader_settings(loader):
    """DataLoader keyword arguments that reproduce `loader`'s worker setup."""
    kw = dict(num_workers=loader.num_workers, collate_fn=loader.collate_fn,
              pin_memory=loader.pin_memory, timeout=loader.timeout,
              worker_init_fn=loader.worker_init_fn,
              multiprocessing_context=loader.multiprocessing_context,
              generator=loader.generator, persistent_workers=loader.persistent_workers)
    if loader.num_workers > 0:
        kw["prefetch_factor"] = loader.prefetch_factor
    for name in ("pin_memory_device", "in_order"):  # newer torch versions only
        if hasattr(loader, name):
            kw[name] = getattr(loader, name)
    return kw


class TraceRecorder:
    """Traces DataLoaders for one rank, all appending to `path`.

    generators: dotted attribute paths below the dataset ("tf.rng") of generators
    the walk cannot reach (behind properties, in sets or closures, deeper than
    MAX_DEPTH); checked when a dataset is wrapped.
    run: which run of a restarted job this process is (0, 1, ...), written to
    every line; None writes no run field (a single run).
    """

    def __init__(self, path, rank=0, generators=(), record_content=False, run=None):
        if run is not None and (isinstance(run, bool) or operator.index(run) < 0):
            raise ValueError("run must be a non-negative integer, not %r" % (run,))
        self.path = os.fspath(path)
        self.rank = rank
        self.run = run
        self.generators = tuple(generators)
        self.record_content = record_content

    def _recorder(self, dataset):
        rec = _SampleRecorder(self.path, self.rank, self.generators, self.record_content,
                              self.run)
        rec.watch.check_names(dataset)
        return rec

    def wrap(self, dataset):
        """A TracedDataset over the map-style `dataset`."""
        if isinstance(dataset, tud.IterableDataset):
            raise TypeError("wrap() takes a map-style dataset; %s is an IterableDataset: "
                            "use trace(DataLoader(...))" % type(dataset).__name__)
        return TracedDataset(dataset, self._recorder(dataset))

    def loader(self, dataset, batch_size=1, shuffle=False, sampler=None, drop_last=False,
               **kwargs):
        """trace(DataLoader(dataset, batch_size, shuffle, sampler, drop_last,
        **kwargs)): kwargs go to DataLoader (num_workers, worker_init_fn, ...)."""
        return self.trace(tud.DataLoader(dataset, batch_size=batch_size, shuffle=shuffle,
                                         sampler=sampler, drop_last=drop_last, **kwargs))

    def trace(self, loader):
        """A loader like `loader` (same sampler, batching, workers, worker_init_fn,
        collate_fn, generator) that records every sample it produces."""
        if not isinstance(loader, tud.DataLoader):
            raise TypeError("trace() takes a torch.utils.data.DataLoader, not %s"
                            % type(loader).__name__)
        dataset = loader.dataset
        if isinstance(dataset, _Forwarding):
            raise ValueError("this DataLoader's dataset is already traced (%s)"
                             % type(dataset).__name__)
        kw = _loader_settings(loader)
        if isinstance(dataset, tud.IterableDataset):
            wrapped = TracedIterableDataset(dataset, self._recorder(dataset),
                                            loader.batch_size)
            return TracedIterableLoader(tud.DataLoader(
                wrapped, batch_size=loader.batch_size, drop_last=loader.drop_last, **kw))
        wrapped = TracedDataset(dataset, self._recorder(dataset))
        if loader.batch_sampler is not None:
            return tud.DataLoader(wrapped, batch_sampler=TracedBatchSampler(
                loader.batch_sampler), **kw)
        return tud.DataLoader(wrapped, sampler=TracedSampler(loader.sampler),
                              batch_size=None, **kw)


def trace(loader, path, rank=0, generators=(), record_content=False, run=None):
    """`loader` (a DataLoader you built) as a loader that appends one line per
    sample to `path`; see TraceRecorder for `generators` and `run`."""
    return TraceRecorder(path, rank, generators, record_content, run).trace(loader)
