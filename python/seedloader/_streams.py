"""seedloader.DataLoader over an iterable-style dataset (a torch IterableDataset: a
stream), with torch's semantics: each worker iterates its own replica; batches
come round-robin over the workers, a worker whose stream ends dropping out.
What seedloader adds:

* every worker's generators are seeded from its stream (1, epoch, rank, worker)
  (worker_rng() is that stream; shard_stream() splits shards by the seed);
* before the first batch of an epoch, the first samples of every worker (and,
  through torch.distributed, every rank) are compared: two streams that start
  with the same samples are a DuplicateStreamError (on_duplicate_stream);
* state_dict() holds each worker's resume point as of the last batch the
  trainer received (its replica's state_dict() where it has one, else how many
  batches it gave, to fast-forward by) and the round-robin position, so nothing
  prefetched is lost or repeated on resume.

seedloader._loader's StreamLoader (which DataLoader.__new__ makes for an
IterableDataset) binds the functions below as its methods. The replicas are
read by seedloader._stream_reader, in worker processes (Pool)
or, with num_workers=0, in this one (Inline). Batches cross from a worker as
torch's loader sends them: tensors in shared memory, other objects pickled.
"""
import collections
import errno
import importlib
import math
import multiprocessing
import os
import queue
import time
import warnings
import weakref
from multiprocessing.reduction import ForkingPickler

from seedloader import (_agreement, _arguments, _dataset, _errors, _placement,
                        _stream_reader)
from seedloader._errors import ConfigError, DuplicateStreamError, Error, WorkerError

_POLL = 0.1  # seconds between looks at a silent worker's process

# seedloader's options that have no meaning for a stream: only their defaults,
# which leave them unused, are taken.
_MAP_STYLE_ONLY = ("seeding", "partition", "order", "shuffle_block", "canonical_nodes",
                   "mixup_alpha", "cutmix_alpha", "num_classes", "variable_fields",
                   "pad_variable", "remote", "on_bad_sample")


# --- the StreamLoader's methods (seedloader._loader binds them) -----------------


def init(loader, signature, *args, **kwargs):
    """A StreamLoader's __init__: DataLoader's arguments (`signature`, bound as
    given), checked for a stream, kept as torch's loader keeps them."""
    bound = signature.bind(loader, *args, **kwargs)
    bound.apply_defaults()
    a = dict(bound.arguments)
    del a["self"]
    _arguments.check_torch_arguments(
        a["batch_size"], a["shuffle"], a["sampler"], a["batch_sampler"], a["num_workers"],
        a["collate_fn"], a["drop_last"], a["timeout"], a["multiprocessing_context"],
        a["prefetch_factor"], a["persistent_workers"], a["pin_memory_device"])
    pipe = _stream_reader.is_datapipe(a["dataset"])
    for option in ("shuffle", "sampler", "batch_sampler"):
        if option == "shuffle" and pipe:
            continue  # torch's rule: a DataPipe's shufflers are switched by it
        if a[option] not in (None, False):
            raise ConfigError("DataLoader with IterableDataset: expected unspecified %s "
                              "option, but got %s=%r" % (option, option, a[option]))
    for option in _MAP_STYLE_ONLY:
        if a[option] != signature.parameters[option].default:
            raise ConfigError(
                "DataLoader: %s=%r applies to map-style datasets; %s is an "
                "IterableDataset, whose worker streams are keyed by (epoch, rank, "
                "worker) and whose order is its own" % (option, a[option],
                                                        _dataset.name_of(a["dataset"])))
    if a["format"] not in (None, "torch"):
        raise ConfigError("DataLoader: an IterableDataset's batches are collated by "
                          "torch; format=%r does not apply" % (a["format"],))
    _arguments.check_stream_options(a["on_duplicate_stream"], a["stream_resume"])
    _arguments.check_placement(a["rank"], a["world_size"])
    import torch.utils.data as tud
    config = dict(a)
    loader._given_placement = (a["rank"], a["world_size"])
    loader.rank, loader.world_size, _ = loader._placement()
    seed, generator = _arguments.base_seed(a["seed"], a["generator"]), a["generator"]
    num_workers = a["num_workers"]
    _arguments.warn_if_more_workers_than_cpus(num_workers)
    loader.dataset = a["dataset"]
    if pipe:  # as torch's loader takes one: shufflers switched, pickled with dill if present
        from torch.utils.data import graph_settings
        from torch.utils.data.datapipes.datapipe import _IterDataPipeSerializationWrapper
        if a["shuffle"] is not None:
            loader.dataset = graph_settings.apply_shuffle_settings(
                loader.dataset, shuffle=bool(a["shuffle"]))
        loader.dataset = _IterDataPipeSerializationWrapper(loader.dataset)
    loader.batch_size = a["batch_size"]
    loader.drop_last = a["drop_last"]
    loader.num_workers = num_workers
    loader.timeout = a["timeout"]
    loader.generator = generator
    loader.prefetch_factor = a["prefetch_factor"] if a["prefetch_factor"] is not None \
        else _arguments.torch_prefetch_default(num_workers)
    loader.persistent_workers = a["persistent_workers"]
    loader.pin_memory = bool(a["pin_memory"])
    loader.pin_memory_device = a["pin_memory_device"]
    loader.worker_init_fn = a["worker_init_fn"]
    loader.multiprocessing_context = a["multiprocessing_context"]
    loader._start_method = "fork" if a["multiprocessing_context"] is None else \
        _arguments.check_start_method(a["multiprocessing_context"], num_workers)
    loader.collate_fn = a["collate_fn"] if a["collate_fn"] is not None else \
        _arguments.default_collate(loader.batch_size is None)
    loader.in_order = a["in_order"]
    loader.seeding, loader.partition, loader.order = "worker", "strided", "numpy"
    loader.on_duplicate_stream = a["on_duplicate_stream"]
    loader.stream_resume = a["stream_resume"]
    # torch's for an IterableDataset: an endless sampler of Nones.
    loader.sampler = tud.dataloader._InfiniteConstantSampler()
    loader.batch_sampler = None if loader.batch_size is None else tud.BatchSampler(
        loader.sampler, loader.batch_size, loader.drop_last)
    loader._IterableDataset_len_called = None
    loader.seed = seed
    del config["seed"]
    config.update(generator=None)
    loader._config = config
    loader._loader, loader._pass, loader._remote = None, None, None  # map-style's, unused
    loader._pool = None        # the worker processes (Pool) of persistent workers
    loader._newest = _no_pass  # the newest pass (StreamPass), weakly: a dropped
    # iterator's workers end with it, as torch's do
    loader._epoch = 0
    loader._epoch_used = False  # a pass started in this epoch: the next one moves on
    loader._resume = None      # a loaded state's position, for the next pass
    loader._done_epoch = None  # the epoch a loaded state finished, while it is next
    loader._position = None    # the epoch's position as batches are delivered
    loader._trace_samples = False  # every sample fingerprinted (audit.StreamTrace)
    loader._initialized = True


def length(loader):
    """torch's: len(dataset), in batches when batching (rounded as drop_last
    says); the iteration warns when the stream yields more."""
    length = loader._IterableDataset_len_called = len(loader.dataset)
    if loader.batch_size is not None:
        length = length // loader.batch_size if loader.drop_last else \
            math.ceil(length / loader.batch_size)
    return length


def new_pass(loader):
    """A pass over the next epoch (started at its first next())."""
    return StreamPass(loader)


def set_epoch(loader, epoch):
    """The epoch the next iteration runs (keeps a loaded state's resume point for
    that same epoch)."""
    epoch = _arguments.epoch_number(epoch)
    if loader._resume is not None and loader._resume["epoch"] != epoch:
        loader._resume = None
    if epoch == loader._done_epoch:
        # A loaded state finished this epoch: its pass is empty.
        loader._resume = Position(0, [], 0, []).saved(epoch)
    loader._epoch, loader._epoch_used = epoch, False


def worker_pids(loader):
    newest = loader._newest()
    pool = newest.pool if newest is not None and newest.pool is not None else loader._pool
    return pool.pids() if pool is not None else []


def stats(loader):
    """What the newest pass did: batches delivered, seconds the loop waited for
    them (the data stall) and their share of the pass's time."""
    out = {"epoch": loader._epoch, "batches": 0, "stall_seconds": 0.0, "stall_share": 0.0}
    p = loader._newest()
    if p is not None and p.began is not None:
        wall = max(p.last_at - p.began, 1e-9)
        out.update(batches=p.delivered, stall_seconds=p.waited,
                   stall_share=min(1.0, p.waited / wall))
    return out


def skip(loader, *args, **kwargs):
    raise ConfigError("DataLoader.skip() declares steps or samples of a map-style "
                      "epoch; %s is a stream" % _dataset.name_of(loader.dataset))


def ledger(loader, *args, **kwargs):
    raise ConfigError("DataLoader.ledger() lists the samples of map-style steps; %s is "
                      "a stream" % _dataset.name_of(loader.dataset))


def close_engine(loader):
    newest = loader._newest()
    if newest is not None:
        newest.close()
    if loader._pool is not None:
        loader._pool.close()
        loader._pool = None


def state_dict(loader):
    """This rank's position in its stream: the epoch, the batches delivered, the
    round-robin position and each worker's resume point as of the last batch
    the trainer received."""
    if loader._resume is not None:
        position = loader._resume
    elif loader._epoch_used and loader._position is not None:
        position = loader._position.saved(loader._epoch)
    else:
        position = Position.fresh(replicas(loader)).saved(loader._epoch)
    return dict(position, stream=_dataset.name_of(loader.dataset), seed=int(loader.seed),
                drawn_seed=isinstance(loader.seed, _agreement.DrawnSeed),
                num_workers=loader.num_workers, rank=loader.rank,
                world_size=loader.world_size)


def load_state_dict(loader, state):
    """Resumes at `state` (this loader's state_dict(), from this rank, with the same
    num_workers): the next pass gives exactly the rest of its epoch."""
    if not isinstance(state, dict) or "stream" not in state:
        raise ConfigError("DataLoader over the stream %s: the state is not a stream's "
                          "(saved from a map-style loader?)" % _dataset.name_of(loader.dataset))
    place(loader)
    for key in ("num_workers", "world_size", "rank"):
        if state[key] != getattr(loader, key):
            raise ConfigError(
                "DataLoader over the stream %s: the state was saved with %s=%r, this "
                "loader has %r; each worker of each rank resumes its own stream, so "
                "resume with the same num_workers, world size and rank (save every "
                "rank's state_dict())" % (_dataset.name_of(loader.dataset), key, state[key],
                                          getattr(loader, key)))
    seed = int(state["seed"])
    loader.__dict__["seed"] = _agreement.DrawnSeed(seed) if state["drawn_seed"] else seed
    loader._epoch = _arguments.epoch_number(state["epoch"])
    loader._position = None
    if state["finished"]:
        loader._resume, loader._epoch_used = None, True
        loader._done_epoch = loader._epoch
    else:
        loader._resume, loader._epoch_used = dict(state), False


def place(loader):
    rank, size, source = loader._placement()
    loader.rank, loader.world_size = rank, size
    return source


def replicas(loader):
    return max(loader.num_workers, 1)


def claim(loader):
    """The epoch this pass runs and where in it it starts (a Position: without
    workers in its order when a loaded state finished the epoch)."""
    source = place(loader)
    _placement.announce(loader.rank, loader.world_size, source)
    seed = _agreement.agreed_seed(loader.seed, loader.rank, loader.world_size, source, True)
    if seed is not loader.seed:
        loader.__dict__["seed"] = seed
    resume, loader._resume = loader._resume, None
    if resume is None and loader._epoch_used:
        if loader._done_epoch == loader._epoch:
            loader._done_epoch = None
        loader._epoch = _arguments.epoch_number(loader._epoch + 1, "the next epoch")
    loader._epoch_used = True
    loader._position = Position.fresh(replicas(loader)) if resume is None else \
        Position.loaded(resume)
    return loader._position


def open_pool(loader):
    """The worker processes a pass reads from: the persistent ones, or new ones."""
    if loader.num_workers == 0:
        return Inline(loader)
    if loader.persistent_workers:
        if loader._pool is not None and loader._pool.traced != loader._trace_samples:
            loader._pool.close()  # its workers fingerprint too few samples, or too many
            loader._pool = None
        if loader._pool is None:
            loader._pool = Pool(loader)
        return loader._pool
    return Pool(loader)


class Position:
    """Where a rank is in its stream's epoch: batches delivered, the workers still
    in the round-robin, whose turn it is, and each worker's resume point (what
    _stream_reader.EpochReader.next() gave with its last delivered batch)."""

    def __init__(self, delivered, order, turn, points):
        self.delivered, self.order, self.turn, self.points = delivered, order, turn, points

    @classmethod
    def fresh(cls, replicas):
        return cls(0, list(range(replicas)), 0, [{"batches": 0} for _ in range(replicas)])

    @classmethod
    def loaded(cls, state):
        return cls(state["batches"], list(state["order"]), state["turn"],
                   [dict(p) for p in state["workers"]])

    def saved(self, epoch):
        return {"epoch": epoch, "batches": self.delivered, "finished": not self.order,
                "order": list(self.order), "turn": self.turn,
                "workers": [dict(p) for p in self.points]}


class StreamPass:
    """One pass over a stream's epoch: torch's round-robin over the workers."""

    def __init__(self, loader):
        self.loader, self.pool, self.position = loader, None, None
        self.buffered = collections.defaultdict(collections.deque)
        self.began = self.last_at = None
        self.last = None  # (worker, its batch number, its samples' fingerprints)
        self.delivered, self.waited, self.done = 0, 0.0, False

    def __iter__(self):
        return self

    def __len__(self):
        return len(self.loader)

    @property
    def _workers(self):
        """torch's iterator attribute: the worker processes (join, is_alive,
        exitcode), none with num_workers=0."""
        pool = self.pool
        return [] if pool is None or pool.inline else list(pool.processes)

    def __next__(self):
        if self.done:
            raise StopIteration
        start = time.monotonic()
        if self.began is None:
            self.began = start
            self._start()
        try:
            batch = self._next_batch()
        except StopIteration:
            self.close()
            raise
        finally:
            self.last_at = time.monotonic()
            self.waited += self.last_at - start
        return batch

    def _start(self):
        loader = self.loader
        older = loader._newest()
        if older is not None and older is not self:
            older.close()
        loader._newest = weakref.ref(self)
        self.position = claim(loader)
        if not self.position.order:
            return
        self.pool = open_pool(loader)
        p = self.position
        contexts = [_stream_reader.Context(loader.seed, loader._epoch, loader.rank,
                                           loader.world_size, w, replicas(loader))
                    for w in range(replicas(loader))]
        resumed = p.delivered > 0 or any(pt["batches"] for pt in p.points)
        self.pool.begin(contexts, {w: (p.points[w] if resumed else None) for w in p.order})
        for w in p.order:
            for _ in range(self.pool.prefetch):
                self.pool.ask(w)
        if not resumed:
            self._check_duplicates()

    def _next_batch(self):
        loader, p = self.loader, self.position
        while p is not None and p.order:
            if loader._newest() is not self:
                raise Error("DataLoader: this iterator was replaced by a newer iteration of "
                            "the same loader (or the loader was closed); iterate the newer one")
            turn = p.turn % len(p.order)
            w = p.order[turn]
            message = self._take(w)
            if message[0] == "end":
                del p.order[turn]
                p.turn = turn % len(p.order) if p.order else 0
                p.points[w] = dict(p.points[w], ended=True)
                continue
            self.pool.ask(w)
            p.turn = (turn + 1) % len(p.order)
            if message[0] == "error":
                raise self.pool.error(w, message)
            _, k, batch, point, prints = message
            self.last = (w, k, prints)  # what a trace records (audit.StreamTrace)
            p.points[w] = point
            p.delivered += 1
            self.delivered += 1
            self._warn_if_longer(p.delivered)
            if loader.pin_memory:
                batch = _pinned(batch)
            return batch
        raise StopIteration

    def _take(self, w):
        if self.buffered[w]:
            return self.buffered[w].popleft()
        return self.pool.receive(w)

    def _warn_if_longer(self, delivered):
        length = self.loader._IterableDataset_len_called
        if length is not None and delivered > length:
            message = ("Length of IterableDataset {} was reported to be {} (when accessing "
                       "len(dataloader)), but {} samples have been fetched. ").format(
                           self.loader.dataset, length, delivered)
            if self.loader.num_workers > 0:
                message += ("For multiprocessing data-loading, this could be caused by not "
                            "properly configuring the IterableDataset replica at each "
                            "worker. Please see https://pytorch.org/docs/stable/data.html"
                            "#torch.utils.data.IterableDataset for examples.")
            warnings.warn(message)

    # --- the duplicate check --------------------------------------------------------

    def _check_duplicates(self):
        """Compares the first samples of every worker of every rank; two streams
        that start with largely the same samples are reported as
        on_duplicate_stream says."""
        loader = self.loader
        if loader.on_duplicate_stream == "off" or \
                getattr(loader.dataset, "identical_streams", False):
            return
        group = _placement.process_group()
        ranks = loader.world_size > 1 and group is not None
        if len(self.position.order) < 2 and not ranks:
            return
        starts = {w: self._first_samples(w) for w in self.position.order}
        found = _same_starts([(loader.rank, w, s) for w, s in starts.items()])
        if ranks and not found:
            gathered = [None] * loader.world_size
            group.all_gather_object(gathered, starts)
            found = _same_starts([(r, w, s) for r, theirs in enumerate(gathered)
                                  for w, s in theirs.items()])
        if not found:
            return
        (r1, w1), (r2, w2) = found
        where = ("workers %d and %d of rank %d" % (w1, w2, r1) if r1 == r2 else
                 "worker %d of rank %d and worker %d of rank %d" % (w1, r1, w2, r2))
        message = (
            "DataLoader: %s start epoch %d with the same samples from %s: each worker "
            "of each rank iterates its own replica of an IterableDataset, and this one "
            "does not split itself, so every sample would be trained %s. Split the stream "
            "by worker and rank: seedloader.shard_stream(shards) gives this replica its "
            "share (or use torch.utils.data.get_worker_info() and the rank). A stream "
            "that repeats on purpose sets identical_streams = True on the dataset; "
            "on_duplicate_stream='warn' or 'off' turns the check down"
            % (where, loader._epoch, _dataset.name_of(loader.dataset),
               "once per worker and rank" if ranks else
               "%d times" % len(self.position.order)))
        if loader.on_duplicate_stream == "warn":
            warnings.warn(message, stacklevel=3)
            return
        self.close()
        raise DuplicateStreamError(message)

    def _first_samples(self, w):
        """The fingerprints of the samples of worker w's first batch (none when it
        ended or raised first), the batch kept for its turn."""
        message = self.pool.receive(w)
        self.buffered[w].append(message)
        if message[0] != "batch" or message[1] != 0:
            return ()
        return tuple(message[4][:_stream_reader.CHECKED_SAMPLES])

    def __del__(self):
        try:
            self.close()
        except Exception:  # interpreter shutdown
            pass

    def close(self):
        """Ends the pass: its workers stop (persistent ones wait for the next)."""
        self.done = True
        pool, self.pool = self.pool, None
        if pool is not None and pool is not self.loader._pool:
            pool.close()


def _out_of_descriptors(margin=10):
    """Whether this process is within `margin` file descriptors of its limit."""
    opened = []
    try:
        for _ in range(margin):
            opened.append(os.open(os.devnull, os.O_RDONLY))
    except OSError as e:
        return e.errno == errno.EMFILE
    finally:
        for fd in opened:
            os.close(fd)
    return False


def _no_pass():
    return None


def _same_starts(starts):
    """The first two (rank, worker) whose first samples are largely the same
    ones (at least half of the fewer, in any order: a shuffle buffer reorders a
    duplicated stream), or None."""
    for i, (r1, w1, a) in enumerate(starts):
        for r2, w2, b in starts[i + 1:]:
            fewer = min(len(set(a)), len(set(b)))
            if fewer and 2 * len(set(a) & set(b)) >= fewer:
                return (r1, w1), (r2, w2)
    return None


def _pinned(batch):
    import torch
    if not torch.cuda.is_available():
        return batch
    from torch.utils.data._utils.pin_memory import pin_memory
    return pin_memory(batch)


# --- where replicas are read ------------------------------------------------------


class Pool:
    """num_workers processes, each reading its replica (_stream_reader.worker_loop),
    started by the loader's start method; each has a command queue and a results
    queue, so worker w's next batch is always read from its own."""

    inline = False

    def __init__(self, loader):
        importlib.import_module("torch.multiprocessing")  # tensors cross in shared memory
        context = loader.multiprocessing_context
        if context is None or isinstance(context, str):
            context = multiprocessing.get_context(loader._start_method)
        spec = _stream_reader.Spec(loader, owns_generators=True)
        self.name = _dataset.name_of(loader.dataset)
        self.traced = spec.fingerprint_all
        self.timeout = loader.timeout
        self.prefetch = loader.prefetch_factor
        self.generation = 0
        self.commands, self.results, self.processes = [], [], []
        for w in range(loader.num_workers):
            commands, results = context.Queue(), context.Queue()
            process = context.Process(
                target=_stream_reader.worker_loop, daemon=True,
                args=(loader.dataset, spec, w, loader.num_workers, loader.worker_init_fn,
                      commands, results, os.getpid()))
            process.start()
            self.commands.append(commands)
            self.results.append(results)
            self.processes.append(process)

    def pids(self):
        return [p.pid for p in self.processes]

    def begin(self, contexts, points):
        """Starts a generation: each worker in `points` begins its epoch there."""
        self.generation += 1
        for w, point in points.items():
            self.commands[w].put(("epoch", self.generation, contexts[w], point))

    def ask(self, w):
        self.commands[w].put(("next", self.generation))

    def receive(self, w):
        """Worker w's next answer of this generation, without the generation; a
        WorkerError when its process ended, a TimeoutError past `timeout`."""
        waited = time.monotonic()
        while True:
            try:
                data = self.results[w].get(timeout=_POLL)
            except queue.Empty:
                process = self.processes[w]
                if process.exitcode is not None:
                    code = process.exitcode
                    raise WorkerError(
                        "DataLoader: worker %d reading the stream %s ended" % (w, self.name),
                        worker=w, pid=process.pid, signal=-code if code < 0 else None,
                        exit_code=code if code >= 0 else None)
                if self.timeout and time.monotonic() - waited > self.timeout:
                    error = _errors.TimeoutError(
                        "DataLoader: worker %d reading the stream %s sent nothing"
                        % (w, self.name), timeout=self.timeout)
                    error.code = "timed_out"
                    raise error
                continue
            message = self._unpickled(w, data)
            if message[0] == self.generation:
                return message[1:]

    def _unpickled(self, w, data):
        """An answer of worker w, its tensors mapped from shared memory; out of
        file descriptors (each tensor kept holds one), a RuntimeError saying what
        to change, as torch's loader says it."""
        try:
            return ForkingPickler.loads(data)
        except Exception:
            if not _out_of_descriptors():
                raise
            raise WorkerError(
                "DataLoader: too many open files to receive worker %d's batch of the "
                "stream %s: every tensor of a stream's batch you keep holds a file "
                "descriptor of its shared memory. Raise the limit with `ulimit -n` in "
                "the shell, or call torch.multiprocessing.set_sharing_strategy("
                "'file_system') at the start of your program" % (w, self.name),
                worker=w) from None

    def error(self, w, message):
        """A dataset's exception in worker w, as its own type too (as torch
        re-raises it)."""
        _, text, kind = message
        error = WorkerError("Caught %s in DataLoader worker process %d.\n%s"
                            % (kind.rsplit(".", 1)[-1], w, text), worker=w,
                            pid=self.processes[w].pid, exception_type=kind)
        error.code = "batch_failed"
        return _errors.as_dataset_error(error) or error

    def close(self):
        for commands in self.commands:
            try:
                commands.put(None)
            except (OSError, ValueError):
                pass
        # An idle worker ends at once; one still reading its replica is given a
        # second, then ended: what it reads would be dropped anyway.
        deadline = time.monotonic() + 1
        for process in self.processes:
            process.join(max(0.0, deadline - time.monotonic()))
            if process.is_alive():
                process.terminate()
                process.join(1)
        for q in self.commands + self.results:
            q.cancel_join_thread()
            q.close()
        self.commands, self.results, self.processes = [], [], []


class Inline:
    """num_workers=0: the dataset itself is read in this process, as torch's loader
    reads it (its exceptions raised as they are, the caller's generators left
    alone, get_worker_info() None)."""

    inline = True
    prefetch = 1

    def __init__(self, loader):
        self.dataset = loader.dataset
        self.spec = _stream_reader.Spec(loader, owns_generators=False)
        self.reader = None

    def pids(self):
        return []

    def begin(self, contexts, points):
        self.reader = _stream_reader.EpochReader(self.dataset, self.spec, contexts[0],
                                                 points.get(0))
        self.reader.start()

    def ask(self, w):
        pass

    def receive(self, w):
        item = self.reader.next()
        return ("end",) if item is None else ("batch",) + item

    def close(self):
        self.reader = None
