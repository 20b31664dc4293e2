"""A DataLoader whose batches a fleet makes (DataLoader(remote=fleet),
seedloader.ray.Fleet), and what any loader did (DataLoader.stats).

The trainer's side leases the epoch in parts of `num_workers` batches (one a
worker, at least one), at most prefetch_factor parts per actor at a time, and
delivers them in the epoch's order; a part whose actor died or was removed is
sent again, one running past straggler_factor times the median part is sent to
a second actor, and a result that comes twice is dropped and counted. The
actor's side builds the loader from its recipe (the arguments as given, with
the trainer's placement, seed and canonical nodes, its skips and mixture
schedule) and makes a part as a pass that ends early (DataLoader._pass_end).
Ray is imported only by seedloader.ray; a fleet passed here brings it.
"""
import collections
import statistics
import time

from seedloader._errors import ConfigError, Error, TimeoutError

# How long one wait for a part lasts before the straggler, removed-actor and
# no-progress checks run again.
_SLICE = 0.05
# How many of the newest parts' times the straggler bound is the median of.
_DURATIONS = 64


def check_remote(loader, remote):
    """`remote` as the loader keeps it: None, or a Fleet the loader's options
    allow (its batches must not depend on where they are made)."""
    if remote is None:
        return None
    if not (hasattr(remote, "live") and hasattr(remote, "num_workers")):
        raise ConfigError("DataLoader: remote must be a seedloader.ray.Fleet, not %s"
                          % type(remote).__name__)
    if loader.seeding != "sample":
        raise ConfigError(
            "DataLoader(remote=fleet) needs seeding=\"sample\": under seeding=%r a "
            "sample's random stream is its worker's, so batches made by other "
            "workers on other machines would differ" % (loader.seeding,))
    if loader._sampler is not None or loader._batch_sampler is not None:
        raise ConfigError(
            "DataLoader(remote=fleet) draws the order on every actor from the seed; a "
            "sampler or batch_sampler draws it in this process: use shuffle=True with "
            "seed= (or partition='elastic') instead")
    _pickled(loader, loader.dataset)  # now, not when the first part is sent
    return remote


def _pickled(loader, obj):
    """`obj` pickled for the fleet's actors (Ray's cloudpickle); a ConfigError
    naming the loader's data set when it cannot be."""
    from ray import cloudpickle
    try:
        return cloudpickle.dumps(obj)
    except Exception as e:
        raise ConfigError("DataLoader(remote=fleet): the dataset %s cannot be pickled "
                          "for the fleet's actors: %s: %s"
                          % (type(loader.dataset).__name__, type(e).__name__, e)) from e


class Position:
    """A fleet pass's place, with the attributes of _core.PassPosition that the
    loader's state, last_indices and the audit trace read; last_actor is the
    fleet's number of the actor that made the last batch."""

    def __init__(self):
        self.yielded = 0
        self.first = 0
        self.last_worker = 0
        self.last_actor = -1
        self.last_indices = None
        self.last_fingerprints = None
        self.last_stream_epochs = None
        self.worker_pids = []
        self.began = 0.0
        self.last_at = 0.0
        self.waited = 0.0


class RemotePass:
    """One pass over an epoch whose parts a fleet makes; an iterator."""

    def __init__(self, loader):
        self._loader = loader
        self._fleet = loader._remote
        self.position = Position()
        self._batches = None

    def __iter__(self):
        return self

    def __next__(self):
        if self._batches is None:
            self._batches = self._run()
        asked = time.monotonic()
        if not self.position.began:
            self.position.began = asked
        try:
            return next(self._batches)
        finally:
            self.position.last_at = time.monotonic()
            self.position.waited += self.position.last_at - asked

    def close(self):
        if self._batches is not None:
            self._batches.close()

    def _run(self):
        import ray
        loader, fleet, pos = self._loader, self._fleet, self.position
        first = loader._claim_epoch()
        loader._pass = pos
        pos.first = pos.yielded = first
        epoch, end = loader._epoch, len(loader)
        key, recipe = recipe_for(loader)
        depth, size = lease_shape(loader.prefetch_factor, fleet.num_workers)
        parts = [_Part(a, min(a + size, end)) for a in range(first, end, size)]
        book = _Book(fleet, ray, (key, [recipe], epoch, loader._record_fingerprints))
        sent = 0
        try:
            for part in parts:
                while part.result is None:
                    while sent < len(parts) and book.send(parts[sent], depth):
                        sent += 1
                    book.wait(part, epoch)
                made, member = part.result
                part.result = None  # freed as the batches go
                for packed, number, worker, positions, fingerprints, stream_epochs in made:
                    batch = unpack(packed, loader.pin_memory)
                    pos.last_worker, pos.last_actor = worker, member.index
                    pos.last_indices = positions
                    pos.last_fingerprints, pos.last_stream_epochs = fingerprints, \
                        stream_epochs
                    pos.yielded = number + 1  # declared skips before it count as passed
                    member.batches += 1
                    yield batch
                    del batch
            pos.yielded = max(pos.yielded, end)  # and those at the epoch's end
        finally:
            book.cancel()


def lease_shape(prefetch_factor, num_workers):
    """(parts an actor holds at most, batches a part): prefetch_factor x
    num_workers batches an actor (one worker at least), in two parts when
    prefetch_factor allows, so that an actor has its next part while it sends
    one back and each Ray call carries prefetch_factor / 2 batches a worker."""
    prefetch = max(1, prefetch_factor or 2)
    depth = 2 if prefetch >= 2 else 1
    return depth, max(1, num_workers) * (prefetch // depth)


class _Part:
    """Batches [first, end) of the epoch: its sends and, once one came back,
    (made, member)."""

    def __init__(self, first, end):
        self.first, self.end = first, end
        self.sends = []  # _Send, live or not
        self.result = None
        self.done = False


class _Send:
    """`part` sent to `member`: its result's ref until taken, and when the actor
    began it (None while it waits behind others)."""

    def __init__(self, part, member, ref, started):
        self.part, self.member, self.ref, self.started = part, member, ref, started


class _Book:
    """The parts in flight: which actor holds which, when each began, the lease
    times seen; sends, waits, re-sends and drops duplicates."""

    def __init__(self, fleet, ray, lease):
        self.fleet, self.ray = fleet, ray
        self.lease = lease  # (key, [recipe], epoch, record) of every part's call
        self.queues = {}   # member -> its sends in the order it runs them
        # Seconds of the newest parts completed: the straggler bound's median is
        # taken at every wait, so over a window, not the whole epoch's parts.
        self.durations = collections.deque(maxlen=_DURATIONS)
        self.progress = time.monotonic()  # when a part last came back
        self.orphans = []  # parts whose actor left, waiting for another

    def send(self, part, depth, avoid=None):
        """Sends `part` to the live actor with the fewest parts (fewer than
        `depth`); False when every one has `depth` (or none lives)."""
        members = [m for m in self.fleet.live() if m is not avoid]
        if not members:
            return False
        member = min(members, key=lambda m: len(self.queues.get(m, ())))
        queue = self.queues.setdefault(member, [])
        if len(queue) >= depth:
            return False
        key, recipe, epoch, record = self.lease
        ref = member.handle.make.remote(key, recipe, epoch, part.first, part.end, record)
        send = _Send(part, member, ref, None if queue else time.monotonic())
        queue.append(send)
        part.sends.append(send)
        return True

    def wait(self, part, epoch):
        """Waits one slice for any part; takes what came back; re-sends what a
        lost or removed actor held; duplicates a straggling `part`; raises when
        nothing came back for the fleet's timeout."""
        by_ref = {s.ref: s for q in self.queues.values() for s in q}
        if by_ref:
            refs = list(by_ref)
            ready, rest = self.ray.wait(refs, num_returns=1, timeout=_SLICE)
            if ready and rest:  # the others already back, without waiting
                ready += self.ray.wait(rest, num_returns=len(rest), timeout=0)[0]
            for ref in ready:
                self._take(by_ref[ref])
        else:
            time.sleep(_SLICE)
        self._resend_orphans()
        if not part.done:
            self._maybe_duplicate(part)
        if not part.done and time.monotonic() - self.progress > self.fleet.timeout:
            raise TimeoutError(
                "%r: no actor delivered a part for %g s while epoch %d's batches "
                "[%d, %d) were awaited (%d actors live); add actors (fleet.resize) or "
                "raise Fleet(timeout=)" % (self.fleet, self.fleet.timeout, epoch,
                                           part.first, part.end, len(self.fleet.live())))

    def _take(self, send):
        ray = self.ray
        self._leave_queue(send)
        ref, send.ref = send.ref, None  # the object goes with its batches
        try:
            made, seconds, node = ray.get(ref)
        except (ray.exceptions.RayActorError, ray.exceptions.WorkerCrashedError,
                ray.exceptions.ObjectLostError, ray.exceptions.NodeDiedError):
            self.fleet.retire(send.member, "lost")
            self._orphan(send)  # _resend_orphans sends its part again
            return
        except ray.exceptions.RayTaskError as e:
            raise _own_error(e) from None
        member, part = send.member, send.part
        member.node, member.leases = node, member.leases + 1
        member.seconds += seconds
        self.durations.append(seconds)
        self.progress = time.monotonic()
        if part.done:
            self.fleet.count("duplicates_dropped")
            return
        part.done, part.result = True, (made, member)

    def _leave_queue(self, send):
        queue = self.queues.get(send.member, [])
        if send in queue:
            at = queue.index(send)
            del queue[at]
            if at < len(queue) and queue[at].started is None:
                queue[at].started = time.monotonic()  # the actor runs it now

    def _resend_orphans(self):
        """Parts whose every send is with an actor no longer live go again (once
        an actor is live to take them)."""
        for member in [m for m in self.queues if m.state != "alive"]:
            for send in self.queues.pop(member):
                self._orphan(send)
        waiting = []
        for part in self.orphans:
            if part.done:
                continue
            if self.send(part, 1 << 30):
                self.fleet.count("leases_resent")
            else:
                waiting.append(part)
        self.orphans = waiting

    def _orphan(self, send):
        """Forgets `send`, whose actor left; its part waits for another actor
        unless it is done or a live one has it too."""
        part = send.part
        part.sends.remove(send)
        if not part.done and part not in self.orphans and \
                not any(s.member.state == "alive" for s in part.sends):
            self.orphans.append(part)

    def _maybe_duplicate(self, part):
        live = [s for s in part.sends if s.member.state == "alive"]
        if len(live) != 1 or live[0].started is None or len(self.durations) < 3:
            return
        # Not below a second: a part's time varies more than that at first (each
        # actor builds its loader and starts its workers with its first part).
        bound = max(1.0, self.fleet.straggler_factor * statistics.median(self.durations))
        if time.monotonic() - live[0].started > bound and \
                self.send(part, 1 << 30, avoid=live[0].member):
            self.fleet.count("leases_duplicated")

    def cancel(self):
        """Leaves what is still in flight (a pass that ended early): the actors
        finish those parts, and their results are dropped with the refs."""
        self.queues.clear()


def _own_error(e):
    """The seedloader error an actor raised, as itself where it pickled whole."""
    cause = getattr(e, "cause", None)
    if isinstance(cause, Error):
        return cause
    return Error("a fleet actor failed: %s" % (e,))


def recipe_for(loader):
    """(key, object ref) of what an actor builds the loader from; put in Ray's
    object store once per configuration (a changed seed, placement, skip list or
    mixture schedule makes a new one)."""
    import ray
    fleet = loader._remote
    config = dict(loader._config, seed=int(loader.seed), remote=None, rank=loader.rank,
                  world_size=loader.world_size, canonical_nodes=loader.canonical_nodes,
                  # 0 (no launcher said) is the actor's own answer too.
                  nodes=loader._node_count(loader.world_size) or None,
                  num_workers=fleet.num_workers,
                  persistent_workers=fleet.num_workers > 0)
    if fleet.num_workers == 0:
        config.update(prefetch_factor=None, multiprocessing_context=None)
    extra = (loader._mixture_history, loader._mixture_known,
             sorted(loader._skip_steps), sorted(loader._skip_samples))
    key = repr((int(loader.seed), loader.rank, loader.world_size, loader.canonical_nodes,
                config["nodes"], extra, id(loader)))
    if loader._remote_recipe is None or loader._remote_recipe[0] != key:
        blob = _pickled(loader, {"config": config, "extra": extra})
        loader._remote_recipe = (key, ray.put(blob))
    return loader._remote_recipe


class _Tensor:
    """A torch tensor's bytes for the trip: a NumPy array Ray's store keeps
    whole (torch dtypes NumPy lacks travel as bytes)."""

    __slots__ = ("data", "dtype", "shape")

    def __init__(self, tensor):
        import torch
        self.dtype, self.shape = tensor.dtype, tuple(tensor.shape)
        self.data = tensor.detach().contiguous().reshape(-1).view(torch.uint8).numpy()

    def __reduce__(self):
        return (_rebuild_tensor, (self.data, self.dtype, self.shape))

    def tensor(self, pin):
        import torch
        out = _writable(self.data).view(self.dtype).reshape(self.shape)
        return out.pin_memory() if pin and torch.cuda.is_available() else out


def _writable(array):
    """A tensor over `array`'s memory, writable as a local loader's batch is. Ray
    marks arrays it maps from its store read-only, but the mapping is writable
    and the object this process's alone (it goes with the batch): no copy."""
    import warnings

    import torch
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "The given NumPy array is not
        return torch.from_numpy(array)                # writable"


def _rebuild_tensor(data, dtype, shape):
    box = _Tensor.__new__(_Tensor)
    box.data, box.dtype, box.shape = data, dtype, shape
    return box


def _mapped(obj, leaf):
    """`obj` with leaf(x) for each x that is not a list, tuple or dict (named
    tuples and dict subclasses keep their type)."""
    if isinstance(obj, (list, tuple)) and not hasattr(obj, "_fields"):
        return type(obj)(_mapped(x, leaf) for x in obj)
    if isinstance(obj, tuple):  # a named tuple
        return type(obj)(*(_mapped(x, leaf) for x in obj))
    if isinstance(obj, dict):
        return type(obj)((k, _mapped(v, leaf)) for k, v in obj.items())
    return leaf(obj)


def pack(obj):
    """A batch with its torch tensors as _Tensor (NumPy arrays travel as they are)."""
    def leaf(x):
        is_tensor = type(x).__module__ == "torch" and \
            type(x).__name__ in ("Tensor", "Parameter")
        return _Tensor(x) if is_tensor else x
    return _mapped(obj, leaf)


def unpack(obj, pin=False):
    """pack's inverse: tensors over the object store's memory, writable as a local
    loader's are (no copy), pinned with pin_memory where CUDA runs."""
    def leaf(x):
        if isinstance(x, _Tensor):
            return x.tensor(pin)
        if type(x).__module__ != "numpy" or type(x).__name__ != "ndarray" or \
                x.flags.writeable or x.dtype.hasobject:
            return x
        try:
            return _writable(x).numpy()
        except (ImportError, TypeError):  # no torch, or a dtype torch lacks
            return x.copy()
    return _mapped(obj, leaf)


def stats(loader):
    """What the loader did in its newest pass: batches delivered, seconds the
    loop waited for them (the data stall) and their share of the pass's time;
    with a fleet, the fleet's counts and each actor's batches and rate."""
    pos = loader._pass
    out = {"epoch": loader._epoch, "batches": 0, "stall_seconds": 0.0, "stall_share": 0.0}
    if pos is not None and pos.began:
        wall = max(pos.last_at - pos.began, 1e-9)
        out.update(batches=pos.yielded - pos.first, stall_seconds=pos.waited,
                   stall_share=min(1.0, pos.waited / wall))
    if loader._remote is not None:
        out["fleet"] = loader._remote.stats()
    return out
