"""Python datasets in seedloader's workers: how their layout is learned.

A Python dataset is any map-style object with __len__ and __getitem__(index) or
__getitem__(index, rng) (a plain list too), returning a sample of any structure
default_collate takes (seedloader._samples). Its layout is declared by a
`fields` attribute ({name: (shape, dtype)} for dict samples) or learned when the
first iteration starts, never before: nothing reads a sample while the loader is
built. The layout pass (DataLoader._learn_from_batches; LayoutRecorder,
layout_of_batches) reads the pass's first batches in the pass's own workers,
which are then handed over to the pass (HandOver) and serve those batches from
what they read (Replay); with num_workers=0 the calling process reads them, as
PyTorch's DataLoader would; under spawn the layout pass's workers are spawned
too; under a collate_fn it learns the outputs' layout (collated_of_batches). A
Mixture's Python sources are recorded one recorder each
(layout_of_mixture_batches). Where the layout pass does not run (a pass resumed
under worker seeding, a pass with no batch left), a probe process forked for the
purpose reads the first samples, or a user's sampler's first items (so a sample
that hangs, crashes or raises does so in a child, reported as a WorkerError with
the child's traceback); with num_workers=0 the calling process does, and its
random, numpy and torch generators are restored afterwards.
"""
import contextlib
import copy
import gc
import inspect
import os
import pickle
import random
import select
import signal
import sys
import time
import traceback

import numpy as np

from seedloader import _checks, _samples, _seeding
from seedloader._errors import (ConfigError, DataError, Error, TimeoutError,
                                WorkerError, as_dataset_error, describe_exception,
                                type_name)

# Samples the layout is learned from (at least), to tell fixed fields from variable ones.
PROBE_SAMPLES = 8

# The exception a Python dataset raised in this process (num_workers=0), set by
# the engine's PythonDataset, taken by the loader to chain it.
in_process_error = None


def take_in_process_error():
    global in_process_error
    error, in_process_error = in_process_error, None
    return error


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


def check_map_style(dataset):
    """ConfigError unless `dataset` is map-style (len() and indexing)."""
    torch = sys.modules.get("torch")
    iterable = torch is not None and isinstance(dataset, torch.utils.data.IterableDataset)
    if iterable or (not hasattr(dataset, "__getitem__") and hasattr(dataset, "__iter__")):
        raise ConfigError(
            "%s is an iterable-style dataset; seedloader.DataLoader reads map-style "
            "datasets (len() and dataset[i]), so that every sample has an index its "
            "stream and the resume position refer to. For streamed shards use "
            "seedloader.TarShards (WebDataset layout)" % type(dataset).__name__)
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
        with _process_generators_kept():
            _seeding.seed_globals_from_stream(rng.bit_generator.state)
            return read_sample(self.dataset, index, rng, self.with_rng)


def rewrite_file(fd, data):
    """Makes the file `fd` (a memory file a worker reads) hold exactly `data`."""
    os.ftruncate(fd, len(data))
    view, at = memoryview(data), 0
    while at < len(data):
        at += os.pwrite(fd, view[at:], at)


class PlanChannel:
    """The epoch's batches, from the main process to the workers, persistent ones
    included (forked before the epoch was drawn): a memfd, which every fork
    inherits and which goes with the last process holding it, rewritten when an
    epoch begins (no task is in flight then) as int64 [version, epoch, number of
    batches, whether stream epochs follow, whether the items are keys,
    offsets...], then the items: int64 indices and the epoch each index's stream
    is keyed by (a Mixture's source epochs), or the pickled list of a Keyed
    epoch's keys (seedloader._checks)."""

    _HEAD = 5

    def __init__(self):
        self._fd = os.memfd_create("seedloader-batches", os.MFD_CLOEXEC)
        self._version = 0
        self._seen = None  # (version, epoch, offsets, items, stream epochs, keyed)
        self._local = None  # (pid, what current() gives) for keys kept in-process

    def publish(self, epoch, batches, stream_epochs=None, shared=True):
        """`batches`: lists of indices, or _checks.Keyed lists of keys;
        `stream_epochs`: the same lists' stream epochs, or None (every index's is
        `epoch`); `shared`: other processes read them (else a Keyed epoch's keys
        stay in this process, never pickled)."""
        self._version += 1
        keyed = isinstance(batches, _checks.Keyed)
        self._local = None
        offsets = np.zeros(len(batches) + 1, dtype=np.int64)
        np.cumsum([len(b) for b in batches], out=offsets[1:])
        head = np.array([self._version, epoch, len(batches), stream_epochs is not None,
                         keyed], np.int64)
        if keyed and not shared:
            self._local = (os.getpid(), (epoch, offsets, batches.items(), None, True))
            data = np.concatenate([head, offsets]).tobytes()
        elif keyed:
            try:
                keys = pickle.dumps(batches.items(), pickle.HIGHEST_PROTOCOL)
            except Exception as e:
                e.add_note("seedloader: the keys a sampler yields in epoch %d reach the "
                           "workers pickled; a key that cannot be pickled needs "
                           "num_workers=0" % epoch)
                raise
            data = np.concatenate([head, offsets]).tobytes() + keys
        else:
            parts = [head, offsets]
            for lists in [batches] + ([] if stream_epochs is None else [stream_epochs]):
                parts.append(np.fromiter((i for b in lists for i in b), dtype=np.int64,
                                         count=int(offsets[-1])))
            data = np.concatenate(parts).tobytes()
        rewrite_file(self._fd, data)

    def __getstate__(self):
        # For a worker started by spawn: the descriptor, which the engine keeps
        # open across its exec (LoaderOptions.worker_fds).
        return {"fd": self._fd}

    def __setstate__(self, state):
        self._fd, self._version, self._seen, self._local = state["fd"], 0, None, None

    def current(self):
        """(epoch, offsets, items, stream epochs or None, whether the items are
        keys) of the batches published last; items: an int64 array of indices, or
        the list of keys."""
        if self._local is not None and self._local[0] == os.getpid():
            return self._local[1]
        head = np.frombuffer(os.pread(self._fd, 8 * self._HEAD, 0), np.int64)
        if self._seen is None or self._seen[0] != head[0]:
            count = int(head[2])
            size = 8 * (self._HEAD + count + 1)
            offsets = np.frombuffer(os.pread(self._fd, size, 0), np.int64)[self._HEAD:]
            n = int(offsets[-1])
            streams = None
            if head[4]:
                items = pickle.loads(os.pread(self._fd, os.fstat(self._fd).st_size - size,
                                              size))
            else:
                both = np.frombuffer(os.pread(self._fd, 16 * n, size), np.int64) \
                    if n else np.zeros(0, np.int64)
                items, streams = both[:n], (both[n:2 * n] if head[3] else None)
            self._seen = (int(head[0]), int(head[1]), offsets, items, streams, bool(head[4]))
        return self._seen[1:]

    def __del__(self):
        try:
            os.close(self._fd)
        except (OSError, AttributeError):
            pass


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
            with _process_generators_kept():
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


class LayoutRecorder(Wrapper):
    """The dataset of the layout pass (DataLoader._learn_from_batches): each sample
    is read as the loader's engine reads it (through the engine's generator, which
    it hands on), and what it is made of goes to the memory file of the worker
    that read it: its tree and fields (Layout.of_sample) once, then each sample's
    index and field shapes, or the ConfigError that names what the loader cannot
    carry. The engine receives a one-byte placeholder. The samples stay in the
    reading process (`cache`, for Replay), keyed by what they were read from: the
    index, the generator's state and random's, numpy's and torch's global
    states; `initial` holds the global states its worker began reading from."""

    def __init__(self, dataset, fds, noun="sample"):
        super().__init__(dataset)
        self.fds = fds
        self.noun = noun  # what messages call an item: a collate_fn's is a "batch"
        self.worker, self.layout, self.cache, self.initial = 0, None, {}, None

    def __getitem__(self, index, rng):
        key = _replay_key(index, rng)
        sample = read_sample(self.dataset, index, rng, self.with_rng)
        try:  # a copy: the dataset may write into what it returned, later on
            self.cache[key] = (copy.deepcopy(sample), rng.bit_generator.state,
                               _global_states())
        except Exception:  # noqa: B902 (not copyable: read again in the pass)
            pass
        try:
            if self.layout is None:
                self.layout = _samples.Layout.of_sample(index, sample, self.noun)
                self._send(("layout", self.layout))
            self._send(("sample", index, self.layout.shapes(sample, index, self.noun)))
        except ConfigError as e:
            self._send(("refused", index, str(e)))
        return PLACEHOLDER_SAMPLE

    def _send(self, message):
        payload = _pickled(message)
        data = memoryview(len(payload).to_bytes(8, "little") + payload)
        while data:
            data = data[os.write(self.fds[self.worker], data):]


class RecordingInit:
    """The layout pass's worker_init: tells the recorders (one per Python data set
    the engine reads) their worker, runs what the loader's own workers run first
    (None: nothing), and keeps the global generators' states that leaves."""

    def __init__(self, recorders, inner):
        self.recorders, self.inner = recorders, inner

    def __call__(self, worker_id):
        for recorder in self.recorders:
            recorder.worker = worker_id
        if self.inner is not None:
            self.inner(worker_id)
        states = _global_states()
        for recorder in self.recorders:
            recorder.initial = states


class Replay:
    """What the layout pass read in this process (LayoutRecorder.cache), served
    again: PythonDataset asks it first (its `replay`), and a read from exactly
    the index, generator state and global generator states a recorded one was
    made from gives that sample, and leaves the generator and the global
    generators as that read left them. Anything else is None, and ends the replay
    (the engine then reads the dataset, and asks no more)."""

    def __init__(self, cache):
        self.cache = cache

    def __call__(self, index, rng):
        hit = self.cache.pop(_replay_key(index, rng), None) if self.cache else None
        if hit is None:
            self.cache = {}  # out of step with the layout pass, or done
            return None
        sample, after, states = hit
        rng.bit_generator.state = after
        _set_global_states(states)
        return sample


def _global_states():
    torch = sys.modules.get("torch")
    return (random.getstate(), np.random.get_state(),
            torch.get_rng_state() if torch is not None else None)


def _set_global_states(states):
    random.setstate(states[0])
    np.random.set_state(states[1])
    if states[2] is not None:
        sys.modules["torch"].set_rng_state(states[2])


def _replay_key(index, rng):
    state = rng.bit_generator.state
    py, numpy_state, torch_state = _global_states()
    return (index, state["state"]["state"], state["state"]["inc"], state["has_uint32"],
            state["uinteger"], hash(py), numpy_state[1].tobytes(), numpy_state[2:],
            None if torch_state is None else bytes(torch_state.numpy()))


class HandOver:
    """The layout pass's workers, handed over to the pass (DataLoader.
    _learn_from_batches): one socket pair per worker, made before they fork. The
    parent's end tells worker w its WorkerLaunch, with the shared memory's
    descriptors and a memory file holding the pass's engine recipe (adopt, as the
    engine's worker_adopt); the worker's end (serve, its handoff) builds that
    engine around a Replay of what it read, and serves the pass from its first
    batch, which it read already. Workers not adopted (abandon) are killed and
    reaped."""

    def __init__(self, workers, recorders):
        import socket
        self.pairs = [socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
                      for _ in range(workers)]
        self.recorders, self.pids, self.recipe_fd = recorders, [], -1

    def worker_ends(self):
        """The workers' ends' descriptors, which a spawned worker keeps open
        across its exec (LoaderOptions.worker_fds)."""
        return [theirs.fileno() for _, theirs in self.pairs]

    def __getstate__(self):
        # For a spawned layout-pass worker: the workers' ends by descriptor (the
        # parent's ends are close-on-exec, gone there).
        return {"ends": self.worker_ends(), "recorders": self.recorders}

    def __setstate__(self, state):
        import socket
        self.pairs = [(None, socket.socket(fileno=fd)) for fd in state["ends"]]
        self.recorders, self.pids, self.recipe_fd = state["recorders"], [], -1

    def forked(self):
        """The parent's part once the workers have forked: their ends closed."""
        for _, theirs in self.pairs:
            theirs.close()

    def serve(self, worker):
        """In worker `worker`, when its engine hands it over (never returns once
        told; returns when the parent closes its end, or the recipe fails)."""
        import socket
        for w, (ours, theirs) in enumerate(self.pairs):
            if ours is not None:
                ours.close()
            if w != worker:
                theirs.close()
        try:
            message, fds, _, _ = socket.recv_fds(self.pairs[worker][1], 1 << 16, 4)
        except OSError:
            return
        if not message:
            return
        from seedloader import _core, _spawned
        arguments = pickle.loads(message)
        recipe_fd, fds = fds[0], iter(fds[1:])
        for at in (4, 6):  # region_fd and spares_fd, as this process received them
            if int(arguments[at]) >= 0:
                arguments[at] = str(next(fds))
        template, options, fmt, has_plan = pickle.loads(
            os.pread(recipe_fd, os.fstat(recipe_fd).st_size, 0))
        recorders = self.recorders
        recipe = _spawned.with_datasets(template, [r.dataset for r in recorders])
        loader = _core.Loader(
            _spawned.build_engine_dataset(recipe, [Replay(r.cache) for r in recorders]),
            _spawned.options_from(options), RestoreGlobalStates(recorders[0].initial),
            fmt, _spawned.no_plan if has_plan else None)
        loader.serve_worker(arguments)

    def ready(self, recipe, options, fmt, has_plan):
        """Whether the pass can adopt the released workers (self.pids): every
        worker was released, and the engine's recipe (whose Python data sets are
        the recorders', in order; each worker has its own) pickles without them
        (into a memory file each worker reads)."""
        from seedloader import _spawned
        if len(self.pids) != len(self.pairs) or not all(p > 0 for p in self.pids):
            return False
        template = _spawned.with_datasets(recipe, [None] * len(self.recorders))
        try:
            data = pickle.dumps((template, options, fmt, has_plan))
        except (pickle.PicklingError, AttributeError, TypeError):
            return False
        self.recipe_fd = os.memfd_create("seedloader-handover", os.MFD_CLOEXEC)
        rewrite_file(self.recipe_fd, data)
        return True

    def adopt(self, worker, arguments, fds):
        """The engine's worker_adopt: tells worker `worker` what to serve; a worker
        that cannot be told (it died) is a WorkerError naming it."""
        import socket
        try:
            socket.send_fds(self.pairs[worker][0], [pickle.dumps(list(arguments))],
                            [self.recipe_fd] + list(fds))
        except OSError as e:
            self.close()
            raise WorkerError("worker %d (pid %d) of the layout pass could not be handed "
                              "over to the pass: %s" % (worker, self.pids[worker], e),
                              worker=worker, pid=self.pids[worker]) from e
        if worker == len(self.pairs) - 1:
            self.close()

    def close(self):
        """The parent's ends and the recipe's file closed: every worker told."""
        for ours, _ in self.pairs:
            if ours is not None:
                ours.close()
        if self.recipe_fd >= 0:
            os.close(self.recipe_fd)
            self.recipe_fd = -1

    def __del__(self):
        try:
            self.close()
        except (OSError, AttributeError):
            pass

    def abandon(self):
        """The workers not adopted after all: told nothing, killed and reaped."""
        self.close()
        self.forked()
        for pid in self.pids:
            if pid > 0 and _is_child(pid):  # an engine may have reaped it already
                _kill(pid)
        self.pids = []


class RestoreGlobalStates:
    """A handed-over worker's worker_init: random, numpy and torch as its
    worker_init left them in the layout pass (the engine has just seeded them from
    the worker's stream; the user's worker_init_fn ran there, once)."""

    def __init__(self, states):
        self.states = states

    def __call__(self, worker_id):
        if self.states is not None:
            _set_global_states(self.states)


# The layout pass's batches: one byte per sample, never looked at.
PLACEHOLDER = _samples.Layout.declared({"placeholder": ((1,), "uint8")})
PLACEHOLDER_SAMPLE = {"placeholder": np.zeros(1, np.uint8)}


def layout_of_batches(fds, batches, variable_paths, variable_bytes, unbatched=False):
    """The layout the layout pass's `batches` give, [(worker, [index, ...])] in the
    pass's order, from what each worker's recorder wrote to fds[worker]: the
    first worker's tree and fields, each field variable where its shapes differ
    over all those samples (Layout.settled, `unbatched` too). A sample the loader
    cannot carry is the ConfigError naming it; workers that learned other fields,
    one naming both samples."""
    base, learned, seen = _recorded(fds, batches)
    return base.settled(learned, seen, variable_paths, variable_bytes, unbatched)


def layout_of_mixture_batches(files, batches, locate, names, variable_paths,
                              variable_bytes):
    """As layout_of_batches, for a Mixture whose sources are all Python data sets:
    files[s] are source names[s]'s recorders' files, and the engine's indices in
    `batches` are the Mixture's (locate: index -> (name, index in the source)).
    {name: layout} of each source drawn in `batches`, from its samples there."""
    layouts = {}
    for name, fds in zip(names, files):
        mine = [(worker, [local for n, local in map(locate, indices) if n == name])
                for worker, indices in batches]
        if any(local for _, local in mine):
            base, learned, seen = _recorded(fds, mine, "source %r sample" % name)
            layouts[name] = base.settled(learned, seen, variable_paths, variable_bytes)
    return layouts


def collated_of_batches(fds, batches, budget):
    """As layout_of_batches, for a collate_fn's outputs (the engine's items are
    CollatedBatches' batches): their tree, each leaf within `budget` bytes or
    twice the largest seen (_samples.Collated, as Collated.learn learns it)."""
    base, learned, seen = _recorded(fds, batches, "batch")
    layout = base.settled(learned[:1], [shapes[:1] for shapes in seen], (),
                          _samples.DEFAULT_VARIABLE_BYTES)
    return _samples.Collated.of_shapes(layout, learned, seen, budget)


def _recorded(fds, batches, noun="sample"):
    """(the first worker's layout, the indices learned from, each field's shapes
    in them) from what the recorders wrote (of items messages call `noun`); see
    layout_of_batches."""
    written = []
    for fd in fds:
        size = os.fstat(fd).st_size
        written.append(_messages(os.pread(fd, size, 0) if size else b""))
    layouts = [next((_resolved(m[1]) for m in w if m[0] == "layout"), None)
               for w in written]
    samples = [{m[1]: m for m in w if m[0] != "layout"} for w in written]
    base, seen, first, learned = None, None, None, []
    for worker, indices in batches:
        for index in indices:
            message = samples[worker].get(index)
            if message is None:
                continue
            if message[0] == "refused":
                raise ConfigError(message[2])
            layout = layouts[worker]
            if base is None:
                base, first = layout, (worker, index)
                seen = [[] for _ in base.fields]
            elif _signature(layout) != _signature(base):
                raise ConfigError(
                    "%s differ between workers: %s %d (worker %d) has %s, %s %d (worker "
                    "%d) has %s" % (
                        "collate_fn's outputs" if noun == "batch" else "the samples' fields",
                        noun, first[1], first[0], describe_fields(base), noun, index,
                        worker, describe_fields(layout)))
            learned.append(index)
            for shapes, shape in zip(seen, message[2]):
                shapes.append(tuple(shape))
    if base is None:
        raise Error("the layout pass delivered batches of which no worker recorded a "
                    "sample")
    return base, learned, seen


def _signature(layout):
    return [(f.path, f.dtype, f.python) for f in layout.fields]


def describe_fields(layout):
    """"['x'] int64 (2,), ['u'] float64 ()": each field's path, dtype and shape,
    as errors name a layout."""
    return ", ".join("%s %s %s%s" % (f.path, f.dtype, tuple(f.shape),
                                     " variable" if f.variable else "")
                     for f in layout.fields)


def read_sample(dataset, index, rng, with_rng):
    return dataset.__getitem__(index, rng) if with_rng else dataset.__getitem__(index)


def probe_indices(size, count=PROBE_SAMPLES):
    return list(range(min(size, count)))


def sample_generator(seed, epoch, index):
    """The per-sample stream (2, epoch, index) as a numpy Generator."""
    return np.random.Generator(np.random.PCG64(
        np.random.SeedSequence(seed, spawn_key=(2, epoch, index))))


def _read_probe(dataset, with_rng, seed, epoch, seed_globals, count, report=None):
    """[(index, sample)] for the probe's indices. A DataError skips that sample;
    another exception ends the probe once it has a sample (the engine reports it at
    its batch) and is raised, as a WorkerError naming the index, before that.
    report(samples), if given, is called after each sample read."""
    samples, skipped = [], []
    for index in probe_indices(len(dataset), count):
        rng = sample_generator(seed, epoch, index)
        if seed_globals:
            _seeding.seed_globals_from_stream(rng.bit_generator.state)
        try:
            samples.append((index, read_sample(dataset, index, rng, with_rng)))
        except DataError as e:
            skipped.append("sample %d: %s" % (index, e))
            continue
        except Exception as e:
            if samples:
                break
            error = WorkerError("%s[%d]: %s" % (type(dataset).__name__, index,
                                                describe_exception(e)), index=index)
            raise as_dataset_error(error, type_name(type(e))) or error from e
        if report is not None:
            report(samples)
    if not samples:
        raise DataError("every sample the layout was to be learned from failed: %s"
                        % "; ".join(skipped))
    return samples


def learn_in_process(dataset, with_rng, seed, epoch, learn, count=PROBE_SAMPLES):
    """learn([(index, sample)]), the layout, from the first `count` samples read
    here; the caller's generators are kept."""
    with _process_generators_kept():
        samples = _read_probe(dataset, with_rng, seed, epoch, False, count)
    return learn(samples)


def learn_in_child(dataset, with_rng, seed, epoch, learn, timeout, count=PROBE_SAMPLES):
    """The layout from samples read in a forked probe process, which sends the
    layout learned so far after each sample: a probe that dies (os._exit, a signal)
    after its first sample leaves the layout of the samples before, and the engine's
    worker meets the same end at its batch. One that raises, or dies before any
    sample, is a WorkerError (worker -1) with its traceback or its end; one that
    outlives `timeout` (seconds, 0: none) a TimeoutError."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the probe: never returns
        os.close(read_end)
        out = os.fdopen(write_end, "wb")

        def send(message):
            payload = _pickled(message)
            out.write(len(payload).to_bytes(8, "little") + payload)
            out.flush()

        code = 0
        try:
            _read_probe(dataset, with_rng, seed, epoch, True, count,
                        lambda samples: send(("ok", learn(samples))))
        except BaseException as e:  # noqa: B902 (everything goes back to the parent)
            try:
                send(("error", type_name(type(e.__cause__ or e)), str(e),
                      traceback.format_exc(), getattr(e, "index", None),
                      isinstance(e, (ConfigError, DataError))))
            except BaseException:  # noqa: B902
                code = 1
        os._exit(code)
    os.close(write_end)
    data = bytearray()
    deadline = time.monotonic() + timeout if timeout > 0 else None
    try:
        with os.fdopen(read_end, "rb") as source:
            while True:
                if deadline is not None and time.monotonic() > deadline:
                    raise TimeoutError("the probe process (pid %d) reading the first "
                                       "samples to learn the layout took more than "
                                       "timeout=%gs" % (pid, timeout))
                ready, _, _ = select.select([source], [], [], 0.05)
                if ready:
                    chunk = os.read(source.fileno(), 1 << 20)
                    if not chunk:
                        break
                    data += chunk
    except BaseException:  # noqa: B902 (a timeout, Ctrl-C: the probe must not outlive it)
        _kill(pid)
        raise
    _, status = os.waitpid(pid, 0)
    messages = _messages(bytes(data))
    if not messages:
        raise WorkerError(
            "the probe process (pid %d) reading the first samples to learn the layout %s"
            % (pid, _describe_status(status)), worker=-1, pid=pid,
            signal=os.WTERMSIG(status) if os.WIFSIGNALED(status) else None,
            exit_code=os.WEXITSTATUS(status) if os.WIFEXITED(status) else None)
    result = messages[-1]
    if result[0] == "ok":
        return _resolved(result[1])
    _, name, message, remote_traceback, index, ours = result
    if ours:
        raise (ConfigError if name.endswith("ConfigError") else DataError)(message)
    # The dataset's own exception type, as past the probe and as torch raises it.
    error = WorkerError("%s in the probe process (pid %d) reading the first samples to "
                        "learn the layout: %s\n\nOriginal traceback:\n%s"
                        % (name, pid, message, remote_traceback), worker=-1, pid=pid,
                        index=index)
    raise as_dataset_error(error, name) or error


def _messages(data):
    """The complete length-prefixed pickles in `data` (a probe that died mid-write
    leaves a partial last one)."""
    out, at = [], 0
    while at + 8 <= len(data):
        size = int.from_bytes(data[at:at + 8], "little")
        if at + 8 + size > len(data):
            break
        out.append(pickle.loads(data[at + 8:at + 8 + size]))
        at += 8 + size
    return out


def process_state(pid):
    """(state letter, parent pid) of process `pid` from /proc, or None when there
    is none."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return fields[0], int(fields[1])
    except (OSError, ValueError, IndexError):
        return None


def _is_child(pid):
    """Whether `pid` is a child of this process that has not been reaped."""
    state = process_state(pid)
    return state is not None and state[1] == os.getpid()


def _kill(pid):
    try:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    except (ProcessLookupError, ChildProcessError):
        pass  # reaped already


def _describe_status(status):
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        return "was killed by signal %d (%s)" % (number, signal.Signals(number).name)
    return "exited with code %d" % os.WEXITSTATUS(status)


class _TypeRef:
    """A sample type pickle cannot name (made in a function): its id, valid in the
    parent because the probe is its fork."""

    def __init__(self, type_):
        self.id, self.name = id(type_), type_.__qualname__


def _pickled(value):
    try:
        return pickle.dumps(value)
    except (pickle.PicklingError, AttributeError, TypeError):
        pass
    for node in _nodes(value[1].tree):
        try:
            pickle.dumps(node.type)
        except (pickle.PicklingError, AttributeError, TypeError):
            node.type = _TypeRef(node.type)
    return pickle.dumps(value)


def _resolved(layout):
    refs = [n for n in _nodes(layout.tree) if isinstance(n.type, _TypeRef)]
    if refs:
        # type(o), not isinstance: some objects warn when their __class__ is read.
        types = {id(o): o for o in gc.get_objects() if issubclass(type(o), type)}
        for node in refs:
            found = types.get(node.type.id)
            if found is None or found.__qualname__ != node.type.name:
                raise ConfigError(
                    "the sample type %s is created inside __getitem__, so the main "
                    "process cannot build batches of it; define it once, outside"
                    % node.type.name)
            node.type = found
    return layout


def _nodes(node):
    if isinstance(node, _samples.Node):
        yield node
        for child in node.children:
            yield from _nodes(child)


def generators_kept(kept):
    """_process_generators_kept() where `kept`, else nothing."""
    return _process_generators_kept() if kept else contextlib.nullcontext()


@contextlib.contextmanager
def _process_generators_kept():
    """Restores random, numpy's global state and torch's afterwards: reading samples
    for the layout must not move the caller's generators."""
    saved = _global_states()
    try:
        yield
    finally:
        _set_global_states(saved)
