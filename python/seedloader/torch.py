"""Seeding PyTorch's own DataLoader workers the way seedloader seeds its workers,
and ddp-train's checkpoints in PyTorch (load_checkpoint, save_checkpoint, from
seedloader.checkpoint).

    sampler = DistributedSampler(ds)
    init = seed_worker(1234, sampler=sampler)
    loader = DataLoader(ds, sampler=sampler, num_workers=4, worker_init_fn=init)
    for epoch in range(epochs):
        sampler.set_epoch(epoch)
        for batch in loader: ...

In worker w, every random stream comes from seedloader's worker-stream key
(docs/design.md, "Randomness contract"):

    key = (1, epoch, rank, w)
    child(j) = np.random.SeedSequence(base_seed, spawn_key=key + (j,))
             (= np.random.SeedSequence(base_seed, spawn_key=key).spawn(n)[j])

    j = 0      random.seed(int128(child(0)))
    j = 1      NumPy's global state = RandomState(MT19937(child(1)))
    j = 2      torch.manual_seed(int63(child(2)))
    j = 3 + i  the i-th generator found in the dataset, in the order of
               seedloader._trace.find_generators (depth first through attributes,
               list/tuple elements and dict values), reseeded in place so that
               references held elsewhere stay valid:
                 np.random.Generator g:  g.bit_generator.state =
                                         type(g.bit_generator)(child).state
                 np.random.RandomState r: r's bit generator type seeded from child,
                                         no cached Gaussian
                 random.Random:          .seed(int128(child))
                 torch.Generator:        .manual_seed(int63(child))

where int128(c) = sum(w_k << 32k for the words w_0..w_3 of c.generate_state(4))
and int63(c) = int(c.generate_state(1, np.uint64)[0]) >> 1. So a dataset's default_rng
draws in worker w what
np.random.default_rng(np.random.SeedSequence(base_seed, spawn_key=(1, epoch, rank, w, 3)))
draws, if it is the first generator found.

rank: the one given, else torch.distributed's rank when it is initialised, else
the environment's RANK (torchrun), else SLURM_PROCID, else 0; looked up in the
worker, which sees the trainer's state as it was when workers were started.
epoch: `sampler.epoch` when a sampler is given (DistributedSampler keeps it after
set_epoch), else the value of this object's set_epoch(), else 0. Workers are
started when the DataLoader's iterator is created, so call set_epoch before
`iter(loader)` / the for loop. Under the spawn or forkserver start methods the
seeder is pickled at that moment, with the rank and epoch fixed then.

With persistent_workers=True, worker_init_fn runs once, when the workers start
for the first epoch: later epochs continue the streams seeded then (nothing
repeats, but an epoch's draws then depend on how much earlier epochs drew, not
on (base_seed, epoch, rank, worker) alone). With num_workers=0 DataLoader calls
no worker_init_fn, and nothing is seeded.
"""

import os

import numpy as np
import torch
import torch.distributed as dist
import torch.utils.data as tud

from seedloader._seeding import (TORCH, int128, reseed_random_state, seed_process_generators,
                                 int63)
from seedloader._trace import find_generators
# ddp-train's checkpoints, kept reachable here where the README first put them.
from seedloader.checkpoint import (CHECKPOINT_VERSION, OPTIMIZER_SUFFIX,  # noqa: F401
                                   load_checkpoint, optimizer_file, save_checkpoint)

# Spawn-key positions of the process-wide generators; dataset generators follow.
_FIRST_DATASET = TORCH + 1
_WORKER_STREAM = 1  # seedloader's purpose tag for worker streams


def seed_worker(base_seed, rank=None, sampler=None):
    """A picklable worker_init_fn seeding each worker as the module docstring says.

    base_seed: non-negative int. rank: int, or None to look it up. sampler: an
    object with an `epoch` attribute (DistributedSampler), or None to number
    epochs with the returned object's set_epoch().
    """
    return WorkerSeeder(base_seed, rank, sampler)


class WorkerSeeder:
    """The worker_init_fn returned by seed_worker()."""

    def __init__(self, base_seed, rank=None, sampler=None):
        if isinstance(base_seed, bool) or not isinstance(base_seed, (int, np.integer)) \
                or base_seed < 0:
            raise ValueError("seed_worker: base_seed must be a non-negative int, not %r"
                             % (base_seed,))
        if sampler is not None and not hasattr(sampler, "epoch"):
            raise TypeError("seed_worker: %s has no `epoch` attribute; pass a "
                            "DistributedSampler or call set_epoch() on the seeder"
                            % type(sampler).__name__)
        self.base_seed = int(base_seed)
        self._rank = rank
        self._sampler = sampler
        self._epoch = 0

    @property
    def rank(self):
        """The rank the next worker is seeded for."""
        return int(self._rank) if self._rank is not None else _launcher_rank()

    @property
    def epoch(self):
        """The epoch the next worker is seeded for."""
        return int(self._sampler.epoch) if self._sampler is not None else self._epoch

    def set_epoch(self, epoch):
        """Seeds workers started from now on for `epoch` (without a sampler)."""
        if self._sampler is not None:
            raise ValueError("seed_worker: the epoch comes from the %s given; call its "
                             "set_epoch() instead" % type(self._sampler).__name__)
        self._epoch = int(epoch)

    def worker_key(self, worker):
        """(1, epoch, rank, worker): the spawn key of `worker`'s stream now."""
        return (_WORKER_STREAM, self.epoch, self.rank, int(worker))

    def __call__(self, worker_id):
        info = tud.get_worker_info()
        if info is None:
            raise RuntimeError("seed_worker() returns a DataLoader worker_init_fn; it "
                               "runs only inside a worker")
        key = self.worker_key(worker_id)

        def child(j):
            return np.random.SeedSequence(self.base_seed, spawn_key=key + (j,))

        seed_process_generators(child)
        for i, (_, _, gen) in enumerate(find_generators(info.dataset)):
            _reseed(gen, child(_FIRST_DATASET + i))

    def __getstate__(self):
        # Fix rank and epoch in the trainer: a spawned worker cannot see them.
        return {"base_seed": self.base_seed, "_rank": self.rank, "_sampler": None,
                "_epoch": self.epoch}


def _launcher_rank():
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank()
    for name in ("RANK", "SLURM_PROCID"):
        value = os.environ.get(name)
        if value is not None:
            try:
                return int(value)
            except ValueError:
                raise ValueError("seed_worker: environment variable %s=%r is not a rank"
                                 % (name, value)) from None
    return 0


def _reseed(gen, seq):
    """Reseeds `gen` in place from the SeedSequence `seq`."""
    if isinstance(gen, np.random.Generator):
        gen.bit_generator.state = type(gen.bit_generator)(seq).state
    elif isinstance(gen, np.random.RandomState):
        reseed_random_state(gen, seq)
    elif isinstance(gen, torch.Generator):
        gen.manual_seed(int63(seq))
    else:  # random.Random, the only other kind find_generators returns
        gen.seed(int128(seq))
