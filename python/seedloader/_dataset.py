"""Python datasets in seedloader's workers: the adapters the engine reads them
through.

A Python dataset is any map-style object with __len__ and __getitem__(index) or
__getitem__(index, rng) (a plain list too), returning a sample of any structure
default_collate takes (seedloader._samples). The adapters here read it as the
engine asks: with the sample's own stream (SampleSeeded), a user's sampler's
keys (KeyedSamples, Items), a collate_fn's batches (CollatedBatches, one item
per batch), a Mixture's sources (MixtureSamples); WorkerInit sets torch's
get_worker_info() in each worker. Its layout is declared by a `fields`
attribute ({name: (shape, dtype)} for dict samples) or learned when the first
iteration starts (seedloader._layout_pass), never before: nothing reads a sample
while the loader is built.
"""
import contextlib
import inspect
import os
import random
import sys

import numpy as np

from seedloader import _seeding
from seedloader._errors import ConfigError


# Samples the layout is learned from (at least), to tell fixed fields from variable ones.
PROBE_SAMPLES = 8


def name_of(dataset):
    """How errors name a dataset: a wrapper's name is its dataset's."""
    return getattr(dataset, "_seedloader_name", type(dataset).__qualname__)


def takes_rng(dataset):
    """Whether dataset.__getitem__ accepts (index, rng) rather than (index)."""
    try:
        params = inspect.signature(dataset.__getitem__).parameters.values()
    except (TypeError, ValueError):
        return False  # a builtin (list, tuple, array): __getitem__(index)
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    varargs = any(p.kind == p.VAR_POSITIONAL for p in params)
    return varargs or len(positional) >= 2


def is_stream(dataset):
    """Whether torch treats `dataset` as iterable-style (an IterableDataset, which
    seedloader._streams reads)."""
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(dataset, torch.utils.data.IterableDataset)


def check_map_style(dataset):
    """ConfigError unless `dataset` is map-style (len() and indexing)."""
    if not hasattr(dataset, "__getitem__") and hasattr(dataset, "__iter__"):
        raise ConfigError(
            "%s is iterable but not a torch.utils.data.IterableDataset; "
            "seedloader.DataLoader reads streams as torch's loader does, as "
            "IterableDatasets (each worker iterating its own replica): subclass "
            "IterableDataset and yield the samples from __iter__" % type(dataset).__name__)
    if not hasattr(dataset, "__getitem__") or not hasattr(dataset, "__len__"):
        raise ConfigError("%s has no __len__ and __getitem__; a dataset is map-style"
                          % type(dataset).__name__)


class Wrapper:
    """A Python dataset as something of seedloader's own reads it: as long as the
    dataset, named as it is in errors, reading it with or without a generator as
    its __getitem__ takes."""

    def __init__(self, dataset):
        self.dataset, self.with_rng = dataset, takes_rng(dataset)
        self._seedloader_name = name_of(dataset)

    def __len__(self):
        return len(self.dataset)


class SampleSeeded(Wrapper):
    """num_workers=0 with seeding="sample": each sample runs with random, numpy and
    torch seeded from its own stream, exactly as in a worker, so the batches do not
    depend on the worker count; the caller's generators are restored after it."""

    def __getitem__(self, index, rng):
        with process_generators_kept():
            _seeding.seed_globals_from_stream(rng.bit_generator.state)
            return read_sample(self.dataset, index, rng, self.with_rng)


class Samples:
    """A map-style dataset's samples as CollatedBatches reads them: sample `index`
    with a generator, and the per-sample stream (2, epoch, index)."""

    def __init__(self, dataset):
        self.dataset, self.with_rng = dataset, takes_rng(dataset)

    def read(self, index, rng):
        return read_sample(self.dataset, index, rng, self.with_rng)

    def generator(self, seed, epoch, index):
        return sample_generator(seed, epoch, index)


class MixtureSamples:
    """A Mixture's samples as CollatedBatches reads them: mixture index `index`
    from its source, and the stream (6, source_key(name), source epoch, index in
    the source), as the engine keys it (seedloader/derive.h)."""

    def __init__(self, mixture):
        self.dataset = mixture
        self.with_rng = {n: takes_rng(s) for n, s in mixture.sources.items()}
        self.keys = {n: source_key(n) for n in mixture.names}

    def read(self, index, rng):
        name, local = self.dataset.locate(index)
        return read_sample(self.dataset.sources[name], local, rng, self.with_rng[name])

    def generator(self, seed, epoch, index):
        name, local = self.dataset.locate(index)
        return np.random.Generator(np.random.PCG64(
            np.random.SeedSequence(seed, spawn_key=(6, self.keys[name], epoch, local))))


def source_key(name):
    """A mixture source's key in its streams: the FNV-1a 64-bit hash of the
    name's UTF-8 bytes, shifted right by one (seedloader/derive.h)."""
    h = 0xcbf29ce484222325
    for c in name.encode():
        h = ((h ^ c) * 0x100000001b3) & 0xffffffffffffffff
    return h >> 1


class CollatedBatches:
    """A custom collate_fn's batches as the engine's items: item k is batch k of
    the epoch published in `channel`; its samples (`samples`: Samples, or
    MixtureSamples) are read in order and handed to collate_fn, in the worker, as
    PyTorch does. With per-sample seeding each sample gets its stream and random,
    numpy and torch are seeded from it, exactly as without a collate_fn (and, in
    the calling process, restored afterwards); otherwise the worker's stream runs
    on from sample to sample."""

    def __init__(self, samples, collate_fn, channel, seed, per_sample, size):
        self.samples, self.collate_fn, self.channel = samples, collate_fn, channel
        self.seed, self.per_sample, self.size = seed, per_sample, size
        self._main = os.getpid()
        self._seedloader_name = type(samples.dataset).__qualname__ + " + collate_fn"

    def __len__(self):
        return self.size

    def __getitem__(self, k, rng):
        epoch, offsets, items, streams, keyed = self.channel.current()
        if k + 1 >= len(offsets):
            raise ConfigError("batch %d of epoch %d: the epoch has %d batches"
                              % (k, epoch, len(offsets) - 1))
        part = slice(int(offsets[k]), int(offsets[k + 1]))
        # A Keyed epoch's keys are read as they are; each sample's stream is keyed
        # by its position in the epoch.
        batch = items[part] if keyed else [int(i) for i in items[part]]
        if not self.per_sample:
            return self.collate_fn([self.samples.read(i, rng) for i in batch])
        streamed = range(part.start, part.stop) if keyed else batch
        epochs = [epoch] * len(batch) if streams is None else [int(e) for e in streams[part]]
        seeded = zip(batch, streamed, epochs)
        if os.getpid() == self._main:
            with process_generators_kept():
                samples = [self._seeded(*s) for s in seeded]
        else:
            samples = [self._seeded(*s) for s in seeded]
        return self.collate_fn(samples)

    def _seeded(self, index, stream, epoch):
        rng = self.samples.generator(self.seed, epoch, stream)
        _seeding.seed_globals_from_stream(rng.bit_generator.state)
        return self.samples.read(index, rng)


class Items(Wrapper):
    """The samples `dataset` holds at `items` (indices or keys), as a probe reads
    them: item k is dataset[items[k]]."""

    def __init__(self, dataset, items):
        super().__init__(dataset)
        self.items = items

    def __len__(self):
        return len(self.items)

    def __getitem__(self, k, rng):
        return read_sample(self.dataset, self.items[k], rng, self.with_rng)


class KeyedSamples(Wrapper):
    """A Python dataset under a user's sampler, as the engine reads it: in a Keyed
    epoch (seedloader._checks) engine index p is the epoch's item at position p,
    a key the dataset is read at as torch's loader reads it (dataset[key]), its
    stream keyed by p; in any other epoch the engine's index is the sample's. The
    epoch's items come from `channel` (a PlanChannel the plan publishes to)."""

    def __init__(self, dataset, channel):
        super().__init__(dataset)
        self.channel = channel

    def __getitem__(self, index, rng):
        epoch, _, items, _, keyed = self.channel.current()
        if not keyed:
            return read_sample(self.dataset, index, rng, self.with_rng)
        # Beyond the epoch's items only a bad sample's replacement (on_bad_sample=
        # "skip": the next one) reaches: the items go round.
        key = items[index % len(items)]
        try:
            return read_sample(self.dataset, key, rng, self.with_rng)
        except Exception as e:
            e.add_note("seedloader: reading key %r, item %d of epoch %d's sampler"
                       % (key, index % len(items), epoch))
            raise


def enter_worker(worker_id, num_workers, dataset):
    """torch.utils.data.get_worker_info() in a seedloader worker, as torch's own
    worker loop sets it: the worker's id, num_workers, the seed torch was seeded
    with there (from the worker's stream) and the dataset. Nothing when the
    worker has not imported torch."""
    torch = sys.modules.get("torch")
    if torch is None:
        return
    from torch.utils.data._utils import worker
    worker._worker_info = worker.WorkerInfo(id=worker_id, num_workers=num_workers,
                                            seed=torch.initial_seed(), dataset=dataset)


class WorkerInit:
    """What each worker runs first: torch's get_worker_info() set for the dataset,
    then the user's worker_init_fn. A class, not a closure: a worker started by
    spawn receives it pickled."""

    def __init__(self, user, num_workers, dataset):
        self.user, self.num_workers, self.dataset = user, num_workers, dataset

    def __call__(self, worker_id):
        enter_worker(worker_id, self.num_workers, self.dataset)
        if self.user is not None:
            self.user(worker_id)


def global_states():
    torch = sys.modules.get("torch")
    return (random.getstate(), np.random.get_state(),
            torch.get_rng_state() if torch is not None else None)


def set_global_states(states):
    random.setstate(states[0])
    np.random.set_state(states[1])
    if states[2] is not None:
        sys.modules["torch"].set_rng_state(states[2])


def read_sample(dataset, index, rng, with_rng):
    return dataset.__getitem__(index, rng) if with_rng else dataset.__getitem__(index)


def sample_generator(seed, epoch, index):
    """The per-sample stream (2, epoch, index) as a numpy Generator."""
    return np.random.Generator(np.random.PCG64(
        np.random.SeedSequence(seed, spawn_key=(2, epoch, index))))


def generators_kept(kept):
    """_process_generators_kept() where `kept`, else nothing."""
    return process_generators_kept() if kept else contextlib.nullcontext()


@contextlib.contextmanager
def process_generators_kept():
    """Restores random, numpy's global state and torch's afterwards: reading samples
    for the layout must not move the caller's generators."""
    saved = global_states()
    try:
        yield
    finally:
        set_global_states(saved)
