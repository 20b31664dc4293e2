"""seedloader: a parallel data loader with random streams you can trust.

    import seedloader as sl
    ds = sl.ImageFolder("/data/train", transform="rrc:224,hflip,normalize:imagenet")
    loader = sl.DataLoader(ds, batch_size=64, num_workers=8, shuffle=True, seed=1234,
                           drop_last=True, persistent_workers=True)
    for epoch in range(epochs):
        loader.set_epoch(epoch)
        for batch in loader:
            x, y = batch["image"], batch["label"]      # torch.Tensor, no copy
            x = x.to("cuda", non_blocking=True)

Workers are processes forked by the C++ engine; batches are written by them into
shared memory and reach Python as tensors over that memory (DLPack). Every random
stream is numpy's PCG64(SeedSequence(seed, spawn_key=KEY)) for a key of (epoch,
rank, worker) or (epoch, sample): see DESIGN.md, "Randomness contract".
"""
import importlib.util
import os
import sys

from seedloader._errors import (CommError, ConfigError, DataError, Error, TimeoutError,
                                WorkerError)
from seedloader import _core
from seedloader._core import (Cifar10, Dataset, ImageFolder, Mnist, Synthetic, TarShards,
                              TensorFile, Transform)
from seedloader import _dataset

__all__ = [
    "Cifar10", "CommError", "ConfigError", "DataError", "DataLoader", "Dataset", "Error",
    "ImageFolder", "Mnist", "Synthetic", "TarShards", "TensorFile", "TimeoutError",
    "Transform", "WorkerError", "distributed_context", "transform",
]
__version__ = "0.1.0"


def transform(spec):
    """The C++ transform chain of `spec` ("rrc:224,hflip,normalize:imagenet"):
    call it as t(image_hwc_uint8, rng) with the numpy Generator a dataset is given."""
    return Transform(spec)


_announced = set()


def distributed_context():
    """(rank, world_size, source): torch.distributed's when it is initialised, else
    the launcher's environment (torchrun's RANK/WORLD_SIZE, Slurm's
    SLURM_PROCID/SLURM_NTASKS, OpenMPI's OMPI_COMM_WORLD_RANK/SIZE), else (0, 1)."""
    dist = sys.modules.get("torch.distributed")
    if dist is not None and dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size(), "torch.distributed"
    for rank_var, size_var in (("RANK", "WORLD_SIZE"), ("SLURM_PROCID", "SLURM_NTASKS"),
                               ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE")):
        if rank_var in os.environ and size_var in os.environ:
            try:
                rank, size = int(os.environ[rank_var]), int(os.environ[size_var])
            except ValueError:
                raise ConfigError("%s=%r and %s=%r are not a rank and a world size"
                                  % (rank_var, os.environ[rank_var], size_var,
                                     os.environ[size_var])) from None
            return rank, size, "%s/%s" % (rank_var, size_var)
    return 0, 1, "no torch.distributed or launcher environment"


def _torch_available():
    return importlib.util.find_spec("torch") is not None


class DataLoader:
    """PyTorch's DataLoader arguments, seedloader's engine.

    dataset: a seedloader dataset (ImageFolder, ...) or any object with __len__ and
      __getitem__(index, rng) / __getitem__(index) returning {field: array}.
    batch_size, shuffle, num_workers, drop_last, persistent_workers, timeout
      (seconds, 0 = none), worker_init_fn(worker_id): as PyTorch's.
    prefetch_factor: batch slots per worker (default 2), as PyTorch's.
    seed: the base seed of every stream (None: drawn once and printed).
    order: the shuffle's generator. "numpy" (default): numpy's PCG64 shuffle stream
      of the seed. "torch": exactly the order of torch's DistributedSampler(
      shuffle=True, seed=seed) after set_epoch(epoch), i.e. torch.randperm(n,
      generator=torch.Generator().manual_seed(seed + epoch)) sharded the same way,
      for any world size (1 included): for comparing with a PyTorch run.
    seeding: "worker" (one stream per worker and epoch) or "sample" (one per sample
      and epoch: batches identical for any num_workers).
    on_bad_sample: "raise" or "skip" (a sample raising DataError is replaced).
    rank, world_size: None takes distributed_context(); world_size > 1 shards the
      data as torch's DistributedSampler does.
    format: "torch" (default when torch imports) or "numpy".
    pin_memory: register the shared slots with CUDA once (default: when torch sees
      a GPU), so .to("cuda", non_blocking=True) copies asynchronously.
    mixup_alpha, cutmix_alpha: > 0 mixes each batch in the worker as torchvision's
      transforms.v2 MixUp / CutMix do (each sample with the one before it), lam ~
      Beta(alpha, alpha) from the batch's own stream (seed, epoch, rank, batch);
      with both on, a batch gets CutMix with probability cutmix_prob (0.5). The
      batch gains "target": float32 [batch, num_classes] soft labels ("label" is
      kept); its "image" must be a float output for MixUp (CutMix takes uint8).

    Batches are dicts {field: tensor} over the shared slot, valid for as long as
    you keep them; the slot is refilled once every tensor of the batch is freed.
    Each worker has prefetch_factor + 1 slots (the loader has prefetch_factor + 1
    when num_workers = 0): the one your loop variable holds while the next batch
    is fetched, and prefetch_factor batches loading ahead. Worker w serves its
    slots in turn, so holding more of its batches than that and asking for the
    next raises seedloader.Error naming the slot count, rather than waiting
    forever; copy (tensor.clone()) what you keep longer.
    """

    def __init__(self, dataset, batch_size=1, shuffle=False, num_workers=0,
                 drop_last=False, persistent_workers=False, prefetch_factor=None,
                 timeout=0, worker_init_fn=None, seed=None, seeding="worker",
                 on_bad_sample="raise", rank=None, world_size=None, format=None,
                 pin_memory=None, order="numpy", mixup_alpha=0.0, cutmix_alpha=0.0,
                 cutmix_prob=0.5, num_classes=None):
        if rank is None or world_size is None:
            found_rank, found_size, source = distributed_context()
            rank = found_rank if rank is None else rank
            world_size = found_size if world_size is None else world_size
            if source not in _announced:
                _announced.add(source)
                # One write, so lines from several ranks do not run together.
                sys.stderr.write("seedloader: rank %d of %d (from %s)\n"
                                 % (rank, world_size, source))
        if format is None:
            format = "torch" if _torch_available() else "numpy"
        if not isinstance(dataset, Dataset):
            dataset = _core.PythonDataset(dataset, _dataset.fields_of(dataset),
                                          _dataset.takes_rng(dataset))
        self.dataset = dataset
        self.batch_size = batch_size
        self.num_workers = num_workers
        self.rank, self.world_size = int(rank), int(world_size)
        self.seeding = seeding
        self.order = order
        self._args = dict(dataset=dataset, batch_size=batch_size,
                          num_workers=num_workers,
                          # One slot per worker more than prefetch_factor: the batch
                          # the loop variable still holds while the next is fetched.
                          prefetch=(2 if prefetch_factor is None else prefetch_factor) + 1,
                          shuffle=shuffle, order=order, drop_last=drop_last,
                          persistent_workers=persistent_workers, rank=self.rank,
                          world_size=self.world_size, seeding=seeding,
                          on_bad_sample=on_bad_sample, timeout=float(timeout),
                          worker_init_fn=worker_init_fn, format=format,
                          mix=(float(mixup_alpha), float(cutmix_alpha), float(cutmix_prob),
                               0 if num_classes is None else int(num_classes)))
        self._core = _core.Loader(seed=seed, **self._args)
        self._resume = None      # (epoch, batch) the next iteration starts at
        self._yielded = 0        # batches delivered in the current epoch
        self._pinned = None
        if pin_memory or (pin_memory is None and format == "torch"):
            self._pin(required=bool(pin_memory))

    def __len__(self):
        return len(self._core)

    @property
    def seed(self):
        """The base seed every stream derives from."""
        return self._core.base_seed

    @property
    def epoch(self):
        return self._core.epoch

    def set_epoch(self, epoch):
        """The epoch the next iteration runs (keeps a load_state_dict() resume point
        for that same epoch)."""
        if self._resume is not None and self._resume[0] != epoch:
            self._resume = None
        self._core.set_epoch(epoch)
        self._yielded = 0

    def __iter__(self):
        self._core.stop()  # one iteration at a time, as the engine runs them
        epoch, first = self._resume or (self._core.epoch, 0)
        self._resume = None
        replay = 0
        if first and self.seeding == "sample":
            self._core.resume(epoch, first)  # the batches before `first` are not loaded
        else:
            self._core.set_epoch(epoch)
            replay = first  # worker streams must advance as they did: load, discard
        self._yielded = first
        return self._batches(replay)

    def _batches(self, replay):
        try:
            while True:
                item = self._core.next()
                if item is None:
                    return
                if replay:
                    replay -= 1
                    continue
                batch, self.last_indices = item
                item = None
                self._yielded += 1
                yield batch
                batch = None  # only the caller may keep it alive
        finally:
            self._core.stop()

    def state_dict(self):
        """Where the loader is: resume with load_state_dict() on a loader built with
        the same dataset and options (the keys of torchdata's StatefulDataLoader
        state where they mean the same)."""
        return {"epoch": self._core.epoch, "_num_yielded": self._yielded,
                "base_seed": self.seed, "seeding": self.seeding, "order": self.order,
                "world_size": self.world_size, "rank": self.rank,
                "batch_size": self.batch_size, "num_batches": len(self)}

    def load_state_dict(self, state):
        """The next iteration continues epoch state["epoch"] after its first
        state["_num_yielded"] batches, exactly as an uninterrupted epoch would."""
        # Not the rank: every rank is at the same position, so one rank's state
        # (say rank 0's checkpoint) resumes them all.
        for key in ("seeding", "order", "world_size", "batch_size", "num_batches"):
            mine = self.state_dict()[key]
            if state.get(key, mine) != mine:
                raise ConfigError("load_state_dict: the state was saved with %s=%r, this "
                                  "loader has %r" % (key, state[key], mine))
        if state["base_seed"] != self.seed:
            self._core.close()
            self._core = _core.Loader(seed=state["base_seed"], **self._args)
        self._core.set_epoch(state["epoch"])
        self._resume = (state["epoch"], state["_num_yielded"])
        self._yielded = state["_num_yielded"]

    def worker_pids(self):
        return self._core.worker_pids()

    def close(self):
        """Stops the workers now (they also stop when the loader is collected)."""
        self._unpin()
        self._core.close()

    def _pin(self, required):
        try:
            import torch
            available = torch.cuda.is_available()
        except ImportError:
            available = False
        if not available:
            if required:
                raise ConfigError("pin_memory=True needs torch with a CUDA device")
            return
        address, size = self._core.shared_memory()
        rc = torch.cuda.cudart().cudaHostRegister(address, size, 0)
        if int(rc) != 0:
            raise Error("cudaHostRegister of the %d-byte shared region failed (%s)"
                        % (size, rc))
        self._pinned = address

    def _unpin(self):
        if self._pinned is not None:
            import torch
            torch.cuda.cudart().cudaHostUnregister(self._pinned)
            self._pinned = None

    def __del__(self):
        try:
            self._unpin()
        except Exception:  # interpreter shutdown: CUDA may be gone already
            pass
