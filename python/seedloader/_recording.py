"""The layout pass's recording and hand-over (seedloader._layout_pass): the
pass's first batches are read in the pass's own workers through a LayoutRecorder
each, which writes what the samples are made of to a memory file
(layout_of_batches, layout_of_mixture_batches, collated_of_batches merge them);
the workers are then handed over to the pass's engine (HandOver) and serve those
batches from what they read (Replay). With num_workers=0 the calling process
reads them, as PyTorch's DataLoader would; under spawn the layout pass's
workers are spawned too.
"""
import copy
import os
import pickle
import socket

import numpy as np

from seedloader import _core, _dataset, _plan_channel, _probe, _samples, _spawned
from seedloader._errors import ConfigError, Error, WorkerError


class LayoutRecorder(_dataset.Wrapper):
    """The dataset of the layout pass (_layout_pass.learn_from_batches): each sample
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
        sample = _dataset.read_sample(self.dataset, index, rng, self.with_rng)
        try:  # a copy: the dataset may write into what it returned, later on
            self.cache[key] = (copy.deepcopy(sample), rng.bit_generator.state,
                               _dataset.global_states())
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
        payload = _probe.pickled(message)
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
        states = _dataset.global_states()
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
        _dataset.set_global_states(states)
        return sample


def _replay_key(index, rng):
    state = rng.bit_generator.state
    py, numpy_state, torch_state = _dataset.global_states()
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
        self.pairs = [(None, socket.socket(fileno=fd)) for fd in state["ends"]]
        self.recorders, self.pids, self.recipe_fd = state["recorders"], [], -1

    def forked(self):
        """The parent's part once the workers have forked: their ends closed."""
        for _, theirs in self.pairs:
            theirs.close()

    def serve(self, worker):
        """In worker `worker`, when its engine hands it over (never returns once
        told; returns when the parent closes its end, or the recipe fails)."""
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
        launch = _core.WorkerLaunch.parse(pickle.loads(message))
        recipe_fd, fds = fds[0], iter(fds[1:])
        # The shared memory's files as this process received them, in adopt()'s order.
        if launch.region_fd >= 0:
            launch.region_fd = next(fds)
        if launch.spares_fd >= 0:
            launch.spares_fd = next(fds)
        template, options, fmt, has_plan = pickle.loads(
            os.pread(recipe_fd, os.fstat(recipe_fd).st_size, 0))
        recorders = self.recorders
        recipe = _spawned.with_datasets(template, [r.dataset for r in recorders])
        loader = _core.Loader(
            _spawned.build_engine_dataset(recipe, [Replay(r.cache) for r in recorders]),
            _spawned.options_from(options), RestoreGlobalStates(recorders[0].initial),
            fmt, _spawned.no_plan if has_plan else None)
        loader.serve_worker(launch)

    def ready(self, recipe, options, fmt, has_plan):
        """Whether the pass can adopt the released workers (self.pids): every
        worker was released, and the engine's recipe (whose Python data sets are
        the recorders', in order; each worker has its own) pickles without them
        (into a memory file each worker reads)."""
        if len(self.pids) != len(self.pairs) or not all(p > 0 for p in self.pids):
            return False
        template = _spawned.with_datasets(recipe, [None] * len(self.recorders))
        try:
            data = pickle.dumps((template, options, fmt, has_plan))
        except (pickle.PicklingError, AttributeError, TypeError):
            return False
        self.recipe_fd = os.memfd_create("seedloader-handover", os.MFD_CLOEXEC)
        _plan_channel.rewrite_file(self.recipe_fd, data)
        return True

    def adopt(self, worker, launch, fds):
        """The engine's worker_adopt: tells worker `worker` what to serve (its
        _core.WorkerLaunch; `fds`: the shared memory's files it names); a worker
        that cannot be told (it died) is a WorkerError naming it."""
        try:
            socket.send_fds(self.pairs[worker][0], [pickle.dumps(launch.arguments())],
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
            if pid > 0 and _probe.is_child(pid):  # an engine may have reaped it already
                _probe.kill(pid)
        self.pids = []


class RestoreGlobalStates:
    """A handed-over worker's worker_init: random, numpy and torch as its
    worker_init left them in the layout pass (the engine has just seeded them from
    the worker's stream; the user's worker_init_fn ran there, once)."""

    def __init__(self, states):
        self.states = states

    def __call__(self, worker_id):
        if self.states is not None:
            _dataset.set_global_states(self.states)


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
        written.append(_probe.read_messages(os.pread(fd, size, 0) if size else b""))
    layouts = [next((_probe.resolved(m[1]) for m in w if m[0] == "layout"), None)
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
