"""Iterable-style datasets (streams) where they are read: in each worker (or, with
num_workers=0, in the main process) a replica of the dataset is iterated, its
samples collated into batches as torch's loader collates them, each batch sent
with what a resume needs (the replica's state_dict() where it has one, else the
count to fast-forward by, and the worker's generators) and, for the epoch's
first batch, its first samples' fingerprints, which the loader compares across
workers and ranks before it returns a batch (seedloader._streams).

Also here, for a dataset's own __iter__: worker_rng(), the worker's stream, and
shard_stream(), a list of shards split over (rank, worker) by the seed.
"""
import contextlib
import copy
import hashlib
import itertools
import os
import queue
import sys
from multiprocessing.reduction import ForkingPickler

import numpy as np

from seedloader import _dataset, _errors, _seeding
from seedloader._errors import ConfigError

# The purposes of the streams keyed here (docs/design.md): shard_stream's order
# (7, epoch); an IterDataPipe's shufflers, seeded alike everywhere (8, epoch).
SHARD_ORDER, DATAPIPE_SEED = 7, 8
# Samples of a worker's first batch fingerprinted for the duplicate check: four
# equal samples are a duplicated stream; hashing the whole batch would cost
# 2.5% of bench/iterable_bench.py's epoch.
CHECKED_SAMPLES = 4
# How often an idle worker looks whether its parent is still there (seconds).
_PARENT_CHECK = 1.0


class Context:
    """What a replica's reader knows of its pass: the base seed, the epoch, the
    rank of world_size and the worker of num_workers."""

    __slots__ = ("seed", "epoch", "rank", "world_size", "worker", "num_workers")

    def __init__(self, seed, epoch, rank, world_size, worker, num_workers):
        self.seed, self.epoch = int(seed), int(epoch)
        self.rank, self.world_size = rank, world_size
        self.worker, self.num_workers = worker, num_workers

    def __getstate__(self):
        return tuple(getattr(self, s) for s in self.__slots__)

    def __setstate__(self, values):
        for name, value in zip(self.__slots__, values, strict=True):
            setattr(self, name, value)


_active = None  # the EpochReader reading now in this process


def worker_rng():
    """The numpy Generator of the worker reading the stream now: PCG64 of the
    stream (1, epoch, rank, worker) of the loader's seed, the key a map-style
    loader's worker stream has (with num_workers=0, worker 0's). Random, numpy's
    global state and torch were seeded from its start in a worker; its state is
    kept with each batch, so a resumed stream draws on where it left off."""
    if _active is None:
        raise RuntimeError("seedloader.worker_rng() is the stream of a worker reading an "
                           "IterableDataset for seedloader.DataLoader; call it in the "
                           "dataset's __iter__ while the loader iterates it")
    if _active.generator is None:
        _active.generator = worker_generator(_active.context)
    return _active.generator


def worker_generator(context):
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence(
        context.seed, spawn_key=(1, context.epoch, context.rank, context.worker))))


def shard_stream(items, *, uneven=None, shuffle=True, seed=None, epoch=None):
    """The items (shards: files, URLs, anything) this (rank, worker) reads in this
    epoch, so that a stream built on them reads each once per epoch over all
    ranks and workers.

    S = world_size * num_workers streams; stream s = rank * num_workers + worker
    takes positions s, s + S, s + 2S, ... of the epoch's order: a permutation of
    the items drawn from PCG64(SeedSequence(seed, spawn_key=(7, epoch))) (the
    same on every rank and worker), or the items as given with shuffle=False.
    When S does not divide the count, `uneven` says what to do: "pad" repeats the
    order from its start up to a multiple of S (some items read twice), "drop"
    leaves out its last items (some not read this epoch); None raises a
    ConfigError saying so.

    Under seedloader.DataLoader the seed, epoch, rank and worker are the loader's;
    elsewhere (torch's loader) the worker comes from get_worker_info(), the rank
    from torch.distributed and `seed` and `epoch` must be given when shuffling.
    """
    items = list(items)
    context = copy.copy(_active.context) if _active is not None else \
        _foreign_context(seed, epoch, shuffle)
    if seed is not None:
        context.seed = _checked_int(seed, "seed")
    if epoch is not None:
        context.epoch = _checked_int(epoch, "epoch")
    n, streams = len(items), context.world_size * context.num_workers
    if n == 0:
        raise ConfigError("shard_stream: no items to split over %d streams" % streams)
    order = list(range(n))
    if shuffle:
        order = [int(i) for i in np.random.Generator(np.random.PCG64(np.random.SeedSequence(
            context.seed, spawn_key=(SHARD_ORDER, context.epoch)))).permutation(n)]
    if n % streams:
        if uneven == "pad":
            order = [order[j % n] for j in range(-(-n // streams) * streams)]
        elif uneven == "drop":
            if n < streams:
                raise ConfigError("shard_stream: %d items over %d streams (%d ranks x %d "
                                  "workers): uneven='drop' leaves none; pad, or use fewer "
                                  "workers" % (n, streams, context.world_size,
                                               context.num_workers))
            order = order[:n - n % streams]
        else:
            raise ConfigError(
                "shard_stream: %d items do not split evenly over %d streams (%d ranks x %d "
                "workers); say uneven='pad' (repeat items from the epoch's order so every "
                "stream reads %d) or uneven='drop' (leave out %d items this epoch)"
                % (n, streams, context.world_size, context.num_workers, -(-n // streams),
                   n % streams))
    mine = context.rank * context.num_workers + context.worker
    return [items[i] for i in order[mine::streams]]


def _checked_int(value, what):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
        raise ConfigError("shard_stream: %s must be an int >= 0, got %r" % (what, value))
    return int(value)


def _foreign_context(seed, epoch, shuffle):
    """The context of a stream read by another loader (torch's): its worker from
    get_worker_info(), its rank from torch.distributed."""
    if shuffle and (seed is None or epoch is None):
        raise ConfigError("shard_stream outside seedloader.DataLoader shuffles by seed= "
                          "and epoch=; give both (the same on every rank), or "
                          "shuffle=False")
    from seedloader._placement import distributed_context
    rank, world_size, _ = distributed_context()
    worker, num_workers = 0, 1
    torch = sys.modules.get("torch")
    info = torch.utils.data.get_worker_info() if torch is not None else None
    if info is not None:
        worker, num_workers = info.id, info.num_workers
    return Context(seed or 0, epoch or 0, rank, world_size, worker, num_workers)


# --- fingerprints -----------------------------------------------------------------

def fingerprint(sample):
    """A 64-bit fingerprint of a sample's content: its tree's structure, each
    leaf's type, dtype, shape and bytes (BLAKE2b)."""
    h = hashlib.blake2b(digest_size=8)
    _feed(h, sample)
    return int.from_bytes(h.digest(), "little")


def _feed(h, x):
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(x, torch.Tensor):
        x = x.detach().cpu().contiguous()
        h.update(b"T%s%r" % (str(x.dtype).encode(), tuple(x.shape)))
        h.update(x.reshape(-1).view(torch.uint8).numpy().tobytes())
    elif isinstance(x, (np.ndarray, np.generic)):
        x = np.asarray(x)
        h.update(b"A%s%r" % (x.dtype.str.encode(), x.shape))
        h.update(repr(x.tolist()).encode() if x.dtype.hasobject else
                 np.ascontiguousarray(x).tobytes())
    elif isinstance(x, (str, bytes, bytearray)):
        h.update(b"S" if isinstance(x, str) else b"B")
        h.update(x.encode() if isinstance(x, str) else bytes(x))
    elif isinstance(x, dict):
        h.update(b"{%d" % len(x))
        for k, v in x.items():
            _feed(h, k)
            _feed(h, v)
    elif isinstance(x, (list, tuple)):
        h.update(b"(%d" % len(x))
        for v in x:
            _feed(h, v)
    else:  # numbers, None, other objects: by type and repr
        h.update(b"O%s%s" % (type(x).__qualname__.encode(), repr(x).encode()))


# --- one replica's epoch ----------------------------------------------------------

class Spec:
    """How a replica's samples become batches, the loader's: batch_size (None:
    one by one), drop_last, collate_fn (called on the list of samples, or on
    each sample under batch_size=None); whether a resume point holds the
    replica's state (stream_resume="state"); whether the reader owns the
    process's generators (a worker: seeds them, keeps them in each batch's
    resume point)."""

    def __init__(self, loader, owns_generators):
        self.batch_size, self.drop_last = loader.batch_size, loader.drop_last
        self.collate_fn, self.owns_generators = loader.collate_fn, owns_generators
        self.use_state = loader.stream_resume == "state"
        # Every sample fingerprinted (a trace's content), not only the check's.
        self.fingerprint_all = getattr(loader, "_trace_samples", False)


def is_datapipe(dataset):
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(dataset, torch.utils.data.IterDataPipe)


def _datapipe_epoch(pipe, context):
    """An IterDataPipe's epoch, as torch's loader sets it: its shufflers seeded
    alike in every worker and rank (from (8, epoch) of the seed, not a seed
    broadcast per pass), then its sharding filters given this replica's share
    (worker * world_size + rank of num_workers * world_size)."""
    import torch
    from torch.utils.data import graph_settings
    shared = torch.Generator()
    shared.manual_seed(_seeding.int63(np.random.SeedSequence(
        context.seed, spawn_key=(DATAPIPE_SEED, context.epoch))))
    graph_settings.apply_random_seed(pipe, shared)
    graph_settings.apply_sharding(pipe, context.num_workers * context.world_size,
                                  context.worker * context.world_size + context.rank)


def is_stateful(dataset):
    return callable(getattr(dataset, "state_dict", None)) and \
        callable(getattr(dataset, "load_state_dict", None))


class EpochReader:
    """One replica's batches in one epoch, batch by batch: next() returns (k,
    batch, resume point, fingerprints of its samples when k == 0) or None at the
    stream's end. A dataset's exception leaves next(); the reader stays usable
    (the next call asks the iterator again, as torch's worker does)."""

    def __init__(self, dataset, spec, context, resume):
        self.dataset, self.spec, self.context = dataset, spec, context
        self.generator = None  # worker_rng(), made on first use
        self.stateful = spec.use_state and is_stateful(dataset)
        self.k, self.ended, self.resume = 0, False, resume
        self.own = None  # in the main process: the stream's generators, between reads
        with self._generators():
            _seeding.seed_globals_from_stream(worker_rng().bit_generator.state)

    @contextlib.contextmanager
    def _generators(self):
        """In a worker: the process's generators are the stream's. In the main
        process they are the caller's: the stream's are set around each read
        and the caller's put back, so the stream draws as worker 0 would."""
        global _active
        if self.spec.owns_generators:
            _active = self
            yield
            return
        previous, _active = _active, self
        caller = _dataset.global_states()
        if self.own is not None:
            _dataset.set_global_states(self.own)
        try:
            yield
        finally:
            self.own = _dataset.global_states()
            _dataset.set_global_states(caller)
            _active = previous

    def start(self):
        """Readies the replica for the epoch (set_epoch, the resume point) and
        starts iterating it; the dataset's exceptions leave here."""
        with self._generators():
            self._start()

    def _start(self):
        set_epoch = getattr(self.dataset, "set_epoch", None)
        if callable(set_epoch):
            set_epoch(self.context.epoch)
        resume, skip = self.resume, 0
        if resume is not None:
            self.k = resume["batches"]
            if resume.get("ended"):
                self.ended = True
                return
            if resume.get("state") is not None:
                self.dataset.load_state_dict(copy.deepcopy(resume["state"]))
                _set_generators(resume["generators"])
            else:
                skip = self.k  # read again and dropped (no state to load)
        if is_datapipe(self.dataset):
            _datapipe_epoch(self.dataset, self.context)
        self.it = iter(self.dataset)
        for done in range(skip):
            if self._take() is None:
                raise ConfigError(
                    "worker %d: fast-forwarding %s to batch %d of epoch %d for a resume, "
                    "its stream ended after %d batches: it yields another stream than the "
                    "one the state was saved from (a stream that can resume exactly "
                    "implements state_dict() and load_state_dict())"
                    % (self.context.worker, _dataset.name_of(self.dataset), skip,
                       self.context.epoch, done))

    def next(self):
        if self.ended:
            return None
        with self._generators():
            return self._next()

    def _next(self):
        samples = self._take()
        if samples is None:
            self.ended = True
            return None
        spec = self.spec
        batch = spec.collate_fn(samples[0] if spec.batch_size is None else samples)
        if spec.fingerprint_all:
            fingerprints = [fingerprint(s) for s in samples]
        else:
            fingerprints = [fingerprint(s) for s in samples[:CHECKED_SAMPLES]] \
                if self.k == 0 else None
        self.k += 1
        point = {"batches": self.k}
        if self.stateful:
            point["state"] = copy.deepcopy(self.dataset.state_dict())
            point["generators"] = _generators()
        return self.k - 1, batch, point, fingerprints

    def _take(self):
        """The next batch's samples (a list), None at the stream's end (a last
        partial batch under drop_last included)."""
        size = self.spec.batch_size
        samples = list(itertools.islice(self.it, 1 if size is None else size))
        if not samples or (size is not None and self.spec.drop_last and len(samples) < size):
            return None
        return samples


def _generators():
    """The generators a resume must restore: worker_rng()'s if it was made, and
    random's, numpy's global and torch's."""
    rng = _active.generator
    return {"worker_rng": rng.bit_generator.state if rng is not None else None,
            "process": _dataset.global_states()}


def _set_generators(saved):
    if saved["worker_rng"] is not None:
        worker_rng().bit_generator.state = saved["worker_rng"]
    _dataset.set_global_states(saved["process"])


# --- a worker process -------------------------------------------------------------

def worker_loop(dataset, spec, worker, num_workers, worker_init_fn, commands, results,
                parent):
    """A stream worker's process: takes ("epoch", generation, context, resume)
    and ("next", generation) commands and answers each "next" of the current
    generation with (generation, "batch", k, batch, point, fingerprints),
    (generation, "end") or (generation, "error", message, exception type);
    None, or its parent gone, ends it. Ctrl-C is the parent's to report."""
    # Its answers need not reach a parent that is gone or done: exiting does not
    # wait for them to be written.
    results.cancel_join_thread()
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_num_threads(1)  # as torch's workers: one thread each
    try:
        _serve(dataset, spec, worker, num_workers, worker_init_fn, commands, results, parent)
    except KeyboardInterrupt:
        pass


def _serve(dataset, spec, worker, num_workers, worker_init_fn, commands, results, parent):
    reader, generation, initialized = None, None, False
    while True:
        try:
            command = commands.get(timeout=_PARENT_CHECK)
        except queue.Empty:
            if os.getppid() != parent:
                return
            continue
        if command is None:
            return
        if command[0] == "epoch":
            _, generation, context, resume = command
            reader = None
            try:
                reader = EpochReader(dataset, spec, context, resume)
                _dataset.enter_worker(worker, num_workers, dataset)
                if not initialized:
                    initialized = True
                    if worker_init_fn is not None:
                        worker_init_fn(worker)
                reader.start()
            except Exception as e:  # the first batch's error; the stream then ends
                _send(results, _error(generation, e))
                reader = _Ended()
            continue
        if command[1] != generation:
            continue  # a pass given up since
        try:
            item = reader.next()
        except Exception as e:
            _send(results, _error(generation, e))
            continue
        _send(results, (generation, "end") if item is None else (generation, "batch") + item)


def _send(results, message):
    """Puts `message` on the results queue pickled here, as torch's reductions
    pickle (tensors to shared memory): an object that does not pickle is its
    batch's error, not a message lost in the queue's thread."""
    try:
        data = bytes(ForkingPickler.dumps(message))  # a memoryview: put() takes bytes
    except Exception as e:
        e.add_note("seedloader: batch %d of this worker could not be sent to the main "
                   "process: what a stream yields (and its collate_fn returns) must "
                   "pickle" % message[2])
        data = bytes(ForkingPickler.dumps(_error(message[0], e)))
    results.put(data)


class _Ended:
    def next(self):
        return None


def _error(generation, e):
    return (generation, "error", _errors.describe_exception(e, budget=8000),
            _errors.type_name(type(e)))
