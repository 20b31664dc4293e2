"""seedloader.ray: a fleet of Ray actors that make a DataLoader's batches on other
machines' CPUs (docs/fleet.md).

    fleet = seedloader.ray.Fleet(actors=16, num_workers=8)
    loader = seedloader.DataLoader(dataset, batch_size=256, shuffle=True, seed=1,
                                   seeding="sample", remote=fleet)

Each actor runs a seedloader engine with `num_workers` local workers (forked,
shared memory) on whichever node Ray places it, and makes the batches of the
leases the trainer sends it: (epoch, first batch, end). A batch is a pure
function of (seed, epoch, batch number, rank), so a lease may be sent again, to
any actor, and come back the same; the trainer's side (seedloader._remote) keeps
the order, drops duplicates and re-sends what a lost actor held. Ray is the
transport: the actors are Ray actors, batches cross Ray's object store.

Needs the `ray` package (pip install seedloader[ray]); nothing else in
seedloader imports it.
"""
import array
import numbers
import os
import socket
import threading
import time

try:
    import ray
except ImportError as e:  # the one place ray is imported
    raise ImportError("seedloader.ray needs the ray package: pip install seedloader[ray] "
                      "(or pip install ray==2.60.0)") from e

from seedloader import _remote
from seedloader._errors import ConfigError
from seedloader._loader import DataLoader

__all__ = ["Fleet"]


class Fleet:
    """`actors` Ray actors, each with `num_workers` local workers.

    cpus_per_actor: the CPUs Ray reserves for each actor (default
      max(1, num_workers)); fractions are allowed.
    address: the Ray cluster to join when ray.init() was not called ("auto",
      "host:port"); None starts or joins the default one, as ray.init() does.
    timeout: seconds a pass waits with no actor delivering before it raises.
    straggler_factor: a lease running longer than this many times the median
      lease is sent to a second actor too (the first result wins).
    actor_options: further ray.remote options for the actors (resources,
      scheduling_strategy, runtime_env, ...).

    `actors` lists the live actors' handles; resize(n) grows or shrinks the
    fleet, also while a pass runs; shutdown() ends every actor. One process
    owns a fleet (it cannot be pickled); DDP ranks each make their own.
    """

    def __init__(self, actors, num_workers=0, cpus_per_actor=None, address=None,
                 timeout=120.0, straggler_factor=3.0, actor_options=None):
        _count(actors, "actors", 1)
        _count(num_workers, "num_workers", 0)
        if cpus_per_actor is None:
            cpus_per_actor = max(1, num_workers)
        if isinstance(cpus_per_actor, bool) or not isinstance(cpus_per_actor, numbers.Real) \
                or not cpus_per_actor >= 0:
            raise ConfigError("Fleet: cpus_per_actor must be a number >= 0, got %r"
                              % (cpus_per_actor,))
        for name, value, low in (("timeout", timeout, 0),
                                 ("straggler_factor", straggler_factor, 1)):
            if isinstance(value, bool) or not isinstance(value, numbers.Real) or \
                    not value > low or value != value:
                raise ConfigError("Fleet: %s must be a number > %g, got %r"
                                  % (name, low, value))
        _join(address)
        self.num_workers = num_workers
        self.timeout = float(timeout)
        self.straggler_factor = float(straggler_factor)
        options = dict(num_cpus=cpus_per_actor, max_restarts=0, max_task_retries=0)
        options.update(actor_options or {})
        self._maker = _MakerActor.options(**options)
        self._lock = threading.Lock()
        self._members = []  # every actor this fleet started, live or not
        self._counts = dict(actors_added=0, actors_lost=0, actors_removed=0,
                            leases_resent=0, leases_duplicated=0, duplicates_dropped=0)
        self._add(actors)
        self._counts["actors_added"] = 0  # those it started with are not "added"

    def __repr__(self):
        return "seedloader.ray.Fleet(actors=%d, num_workers=%d)" % (
            len(self.live()), self.num_workers)

    def __reduce__(self):
        raise TypeError("a seedloader.ray.Fleet belongs to the process that made it; "
                        "make one in each process (each DDP rank its own)")

    @property
    def actors(self):
        """The live actors' handles."""
        return [m.handle for m in self.live()]

    def live(self):
        """The live members (_Member), in the order they were started."""
        with self._lock:
            return [m for m in self._members if m.state == "alive"]

    def resize(self, actors):
        """Grows or shrinks the fleet to `actors` live actors; safe while a pass
        runs (the leases a removed actor held are sent to others)."""
        _count(actors, "actors", 0)
        live = self.live()
        if actors > len(live):
            self._add(actors - len(live))
        for member in reversed(live[actors:]):
            self.retire(member, "removed")

    def shutdown(self):
        """Ends every actor now; the fleet makes nothing more."""
        for member in self.live():
            self.retire(member, "removed")

    def stats(self):
        """The fleet's counts, and one entry per actor it started."""
        with self._lock:
            out = dict(self._counts)
            out["actors"] = [m.describe() for m in self._members]
        return out

    def count(self, name, n=1):
        with self._lock:
            self._counts[name] += n

    def retire(self, member, state):
        """Takes `member` out of the fleet: "lost" (it died) or "removed"."""
        with self._lock:
            if member.state != "alive":
                return
            member.state = state
            self._counts["actors_" + state] += 1
        if state == "removed":
            ray.kill(member.handle, no_restart=True)

    def _add(self, n):
        with self._lock:
            for _ in range(n):
                self._members.append(_Member(len(self._members), self._maker.remote()))
            self._counts["actors_added"] += n


class _Member:
    """One actor of a fleet and what it did."""

    def __init__(self, index, handle):
        self.index = index
        self.handle = handle
        self.state = "alive"  # or "lost", "removed"
        self.node = None      # the Ray node id it reported
        self.batches = 0      # batches of its leases the trainer took
        self.leases = 0       # leases it completed
        self.seconds = 0.0    # seconds it spent making them

    def describe(self):
        return {"actor": self.index, "state": self.state, "node": self.node,
                "batches": self.batches, "leases": self.leases,
                "seconds": round(self.seconds, 6),
                "rate": self.batches / self.seconds if self.seconds > 0 else 0.0}


class _Maker:
    """The actor: one seedloader engine per loader it serves (kept, with its
    workers, across leases and epochs), built from the loader's recipe."""

    def __init__(self):
        self._loaders = {}  # recipe key -> DataLoader, the newest last
        self._node = ray.get_runtime_context().get_node_id()  # an actor stays put

    def make(self, key, recipe, epoch, first, end, record):
        """Batches [first, end) of `epoch` (a declared skip's left out), each as
        (packed batch, its number, worker, sample positions, stream fingerprints,
        stream epochs); the seconds it took, its node. `recipe` is [the recipe's
        object ref], fetched once per key."""
        started = time.monotonic()
        loader = self._loaders.pop(key, None)
        if loader is None:
            loader = _build_from_recipe(ray.get(recipe[0]))
            while len(self._loaders) >= 2:  # a loader the trainer no longer sends
                self._loaders.pop(next(iter(self._loaders))).close()
        self._loaders[key] = loader
        made = _make_part(loader, epoch, first, end, record)
        return made, time.monotonic() - started, self._node

    def pid(self):
        return os.getpid()


def _build_from_recipe(blob):
    """In an actor: the loader a recipe describes."""
    recipe = ray.cloudpickle.loads(blob)
    loader = DataLoader(**recipe["config"])
    history, known, steps, samples = recipe["extra"]
    loader._mixture_history, loader._mixture_known = history, known
    loader._set_skips(set(map(tuple, steps)), set(samples))
    return loader


def _make_part(loader, epoch, first, end, record):
    """In an actor: batches [first, end) of `epoch`, packed, with where each came
    from (see _Maker.make)."""
    loader._resume, loader._pass_end = (epoch, first), end
    loader._record_fingerprints = record
    made = []
    try:
        for batch in loader:
            pos = loader._pass
            made.append((_remote.pack(batch), pos.yielded - 1, pos.last_worker,
                         _positions(loader), pos.last_fingerprints,
                         pos.last_stream_epochs))
    finally:
        loader._pass_end = None
    return made


def _positions(loader):
    """The last batch's samples as the engine's positions (uint64 bytes), a
    collate_fn's item resolved to its batch's samples."""
    raw = loader._pass.last_indices
    if loader._collated is None or raw is None:
        return raw
    k = array.array("Q", raw)[0]
    return array.array("Q", loader._collated[1][k]).tobytes()


# Made a Ray actor class once (each Fleet gives its own options): Ray exports a
# class to the cluster once per ray.remote().
_MakerActor = ray.remote(_Maker)


def _count(value, name, low):
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ConfigError("Fleet: %s must be an int >= %d, got %r" % (name, low, value))


def _join(address):
    """ray.init(address) unless Ray runs already; an address nothing answers at is
    a ConfigError at once, not a wait for Ray's own connection timeout."""
    if ray.is_initialized():
        return
    if address is not None and ":" in address and not address.startswith("ray://"):
        host, _, port = address.rpartition(":")
        try:
            socket.create_connection((host, int(port)), timeout=5).close()
        except (OSError, ValueError) as e:
            raise ConfigError("Fleet: no Ray cluster answers at %s (%s); start one there "
                              "(ray start --head) or leave address=None"
                              % (address, e)) from None
    ray.init(address=address, include_dashboard=False, log_to_driver=True)
