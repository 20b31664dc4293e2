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
rank, worker) or (epoch, sample): see docs/design.md, "Randomness contract".
"""
import array as _array
import itertools as _itertools
import importlib as _importlib
import importlib.metadata as _metadata
import importlib.util as _importlib_util
import os as _os
import re as _re
import reprlib as _reprlib
import sys as _sys
import warnings as _warnings

from seedloader._errors import (CommError, ConfigError, DataError, Error, TimeoutError,
                                WorkerError)
from seedloader import _core
from seedloader._core import (Cifar10, Dataset, ImageFolder, Mnist, Synthetic, TarShards,
                              TensorFile, Transform)
from seedloader import _agreement, _checks, _compat, _dataset, _errors, _samples, _spawned
from seedloader._mixture import Mixture

__all__ = [
    "Cifar10", "CommError", "ConfigError", "DataError", "DataLoader", "Dataset", "Error",
    "ImageFolder", "Mixture", "Mnist", "Synthetic", "TarShards", "TensorFile",
    "TimeoutError",
    "Transform", "WorkerError", "distributed_context", "node_count", "transform",
]


def _version():
    """The installed distribution's version: pyproject.toml is its one source."""
    try:
        return _metadata.version("seedloader")
    except _metadata.PackageNotFoundError:  # imported from a build tree
        return "0+unknown"


__version__ = _version()


def __getattr__(name):
    """seedloader.torch, seedloader.audit and seedloader.checkpoint, imported on
    first use, so that
    `import seedloader as sl; sl.torch.seed_worker` works without importing torch
    up front."""
    if name in _SUBMODULES:
        return _importlib.import_module("seedloader." + name)
    raise AttributeError("module 'seedloader' has no attribute %r" % name)


_SUBMODULES = ("audit", "checkpoint", "torch", "transformers")


def transform(spec):
    """The C++ transform chain of `spec` ("rrc:224,hflip,normalize:imagenet"):
    call it as t(image_hwc_uint8, rng) with the numpy Generator a dataset is given."""
    return Transform(spec)


_announced: set = set()  # the sources of rank and world size already printed


def distributed_context():
    """(rank, world_size, source): torch.distributed's when it is initialised, else
    the launcher's environment (torchrun's RANK/WORLD_SIZE, Slurm's
    SLURM_PROCID/SLURM_NTASKS, OpenMPI's OMPI_COMM_WORLD_RANK/SIZE), else (0, 1)."""
    dist = _sys.modules.get("torch.distributed")
    if dist is not None and dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size(), "torch.distributed"
    for rank_var, size_var in (("RANK", "WORLD_SIZE"), ("SLURM_PROCID", "SLURM_NTASKS"),
                               ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE")):
        if rank_var in _os.environ and size_var in _os.environ:
            try:
                rank, size = int(_os.environ[rank_var]), int(_os.environ[size_var])
            except ValueError:
                raise ConfigError("%s=%r and %s=%r are not a rank and a world size"
                                  % (rank_var, _os.environ[rank_var], size_var,
                                     _os.environ[size_var])) from None
            return rank, size, "%s/%s" % (rank_var, size_var)
    return 0, 1, "no torch.distributed or launcher environment"


def node_count(world_size):
    """The physical nodes a world of `world_size` ranks runs on, from the launcher:
    torchrun's LOCAL_WORLD_SIZE or OpenMPI's OMPI_COMM_WORLD_LOCAL_SIZE (ranks per
    node), else Slurm's SLURM_NNODES; 0 when none says (or the ranks per node do not
    divide the world)."""
    for variable in ("LOCAL_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE"):
        local = _os.environ.get(variable, "")
        if local.isdigit() and int(local) > 0:
            return world_size // int(local) if world_size % int(local) == 0 else 0
    nodes = _os.environ.get("SLURM_NNODES", "")
    return int(nodes) if nodes.isdigit() else 0


def _torch_available():
    return _importlib_util.find_spec("torch") is not None


# How many failed batches in a row the layout pass reads on, looking for a sample
# to learn the layout from, before the pass raises their errors in turn and ends.
_FAILED_BATCHES = 64


class DataLoader:
    """torch.utils.data.DataLoader's arguments, seedloader's engine.

    dataset: a seedloader dataset (ImageFolder, ...) or any map-style dataset
      (len() and dataset[i], a plain list too) whose samples are what PyTorch's
      default_collate takes: tuples, lists, dicts and namedtuples of tensors,
      numpy arrays and numbers. __getitem__(index, rng) receives the sample's
      numpy Generator. Batches have default_collate's structure and dtypes.
    batch_size, shuffle, sampler, batch_sampler, num_workers, pin_memory,
      drop_last, timeout (seconds, 0 = none), worker_init_fn(worker_id),
      multiprocessing_context, generator (seeds the loader when seed is None),
      prefetch_factor (batches each worker loads ahead, default 2),
      persistent_workers, in_order: as PyTorch's, in its positional order.
      Under multiprocessing_context "spawn" or "forkserver" each worker that runs
      Python is a fresh interpreter that receives the dataset pickled (nothing of
      the parent runs in it), with the same streams and batches as a forked one;
      the workers of seedloader's own data sets are forked under any start method
      (they run no Python unless worker_init_fn is given, which then runs in the
      fork).
      batch_size=None gives samples one by one (default_convert, or collate_fn
      called on each sample), as PyTorch's loader does without auto-batching.
      A sampler or batch_sampler is drawn in the main process when each epoch
      begins, and its indices go to the workers with the tasks. collate_fn runs
      in the worker on the batch's samples (in order), as PyTorch runs it; its
      output (a tree of tensors, arrays, numbers and strings, the same tree for
      every batch; Python values come back as themselves) crosses the slot leaf
      by leaf, each leaf in any shape within variable_bytes or twice the largest
      of the first batches.
    Keyword-only, seedloader's own:
    seed: the base seed of every stream, an int (or numpy integer) in [0, 2**64)
      (None: from `generator`, else drawn once and printed; over several ranks
      every rank takes rank 0's when a shuffled pass starts, through
      torch.distributed, and one with no process group to agree through is a
      ConfigError).
    order: the built-in shuffle's generator. "numpy" (default): numpy's PCG64
      shuffle stream of the seed. "torch": exactly the order of torch's
      DistributedSampler(shuffle=True, seed=seed) after set_epoch(epoch), i.e.
      torch.randperm(n, generator=torch.Generator().manual_seed(seed + epoch))
      sharded the same way, for any world size (1 included). "shards": for a
      TarShards data set, its shards in a shuffled order, read whole: their
      samples are cut into blocks of shuffle_block (0: four times the largest
      shard's sample count) and shuffled within each block, so a rank reads a few
      shards at a time (what a bounded shard cache needs).
    seeding: "worker" (one stream per worker and epoch) or "sample" (one per
      sample and epoch: batches identical for any num_workers). Either way a
      worker seeds Python's random, numpy's global state and torch from the
      stream, so torchvision or albumentations transforms drawing from them are
      reproducible (and, with "sample", independent of the worker count).
    on_bad_sample: "raise" or "skip" (a sample raising DataError is replaced).
    rank, world_size: None takes distributed_context(); world_size > 1 shards the
      data as torch's DistributedSampler does (unless sampler/batch_sampler).
    partition: how ranks split the data. "strided" (default): torch's
      DistributedSampler. "elastic": with G = batch_size * world_size, global batch
      g is positions [g*G, (g+1)*G) of one epoch order (padded to a multiple of G,
      or truncated with drop_last) and rank r takes its r-th run of batch_size, so
      each step's samples, and with seeding="sample" every byte of them, are the
      same at any world size dividing G; state_dict() then resumes at another
      world size or batch size with the same G. Needs seeding="sample".
    canonical_nodes: with partition="elastic", C > 0 cuts each epoch's order into C
      contiguous parts and every global batch takes G/C samples of each (G a
      multiple of C), so the ranks of one of N nodes (N dividing C, from nodes or
      node_count()) read only their node's parts; with order="shards" the shards
      are cut into the parts before they are shuffled, so each node downloads
      about its share of a remote data set. The global batches are the same at any world size
      dividing G; a state keeps C, and another C is refused (another order). A node
      reads C/N parts at once: its shard cache must hold C/N shuffle blocks.
      0: no split. None (default): one part per node under
      partition="elastic" with a shuffled order="shards" on more than one node,
      else 0; fixed when the first epoch starts, and a state's C when one is
      loaded.
    nodes: the physical nodes the world runs on, its ranks numbered node by node
      (None: node_count(), from the launcher's environment).
    format: "torch" (default when torch imports) or "numpy".
    mixup_alpha, cutmix_alpha, cutmix_prob, num_classes: MixUp / CutMix in the
      worker, as torchvision's transforms.v2 do (see docs/datasets.md).
    variable_fields: paths (as errors print them, e.g. "[1]['boxes']") of fields
      whose first dimension varies between samples; fields whose shape differs
      among the first samples are found without it. variable_bytes: each such
      field's budget per sample (default 64 KiB). A variable field arrives as a
      list of per-sample tensors over the slot, or with pad_variable=True as
      (padded [batch, longest, ...] tensor, int64 lengths).

    Nothing reads a sample before the first iteration: a Python dataset's layout
    is declared by a `fields` attribute or learned then (seedloader._dataset).
    Each iteration without set_epoch() runs the next epoch, as PyTorch's loader
    reshuffles every time; set_epoch(e) chooses it.
    Batches live in shared slots, valid for as long as you keep them; each
    worker has prefetch_factor + 1 slots (the loader prefetch_factor + 1 with
    num_workers = 0). A batch still kept when its slot is needed again is moved
    to private memory at its address (with the slots pinned for CUDA, the slot
    moves on to a spare block instead), so any number can be kept (list(loader)).
    """

    def __class_getitem__(cls, item):  # DataLoader[T], as torch's is generic
        return cls

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None,
                 batch_sampler=None, num_workers=0, collate_fn=None, pin_memory=None,
                 drop_last=False, timeout=0, worker_init_fn=None,
                 multiprocessing_context=None, generator=None, *, prefetch_factor=None,
                 persistent_workers=False, pin_memory_device="", in_order=True,
                 seed=None, seeding="worker", on_bad_sample="raise", rank=None,
                 world_size=None, format=None, order="numpy", shuffle_block=0,
                 partition="strided", canonical_nodes=None, nodes=None, mixup_alpha=0.0,
                 cutmix_alpha=0.0, cutmix_prob=0.5, num_classes=None,
                 variable_fields=(), variable_bytes=65536, pad_variable=False):
        # The arguments as given: what a pickled loader is rebuilt from.
        config = {k: v for k, v in locals().items() if k not in ("self", "__class__")}
        _check_torch_arguments(batch_size, shuffle, sampler, batch_sampler, num_workers,
                               collate_fn, drop_last, timeout, multiprocessing_context,
                               prefetch_factor, persistent_workers, pin_memory_device)
        if batch_sampler is not None:
            batch_size = None
        # batch_size=None: samples one by one, as torch gives them without
        # auto-batching (default_convert); inside, batches of one, unbatched.
        self._unbatched = batch_size is None and batch_sampler is None
        if self._unbatched:
            if partition == "elastic":
                raise ConfigError("partition='elastic' splits global batches of "
                                  "batch_size * world_size; give batch_size")
            drop_last = False
        self._batch_size = 1 if self._unbatched else batch_size
        for name, value in (("rank", rank), ("world_size", world_size)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                      or value < (0 if name == "rank" else 1)):
                raise ConfigError("%s must be an int >= %d or None, got %r"
                                  % (name, 0 if name == "rank" else 1, value))
        # Given ones are kept; the others are taken when each iteration starts.
        self._given_placement = (rank, world_size)
        rank, world_size, _ = self._placement()
        if format is None:
            format = "torch" if _torch_available() else "numpy"
        if format not in ("torch", "numpy"):
            raise ConfigError("format must be 'torch' or 'numpy', not %r" % (format,))
        if seed is not None:
            # A drawn seed stays one when a framework rebuilds the loader from vars().
            drawn = isinstance(seed, _agreement.DrawnSeed)
            seed = _checks.integer(seed, "seed")
        elif generator is not None:
            # As torch draws its loader's: the same on every rank whose generator
            # was seeded alike (torch.Generator()'s default seed is a constant).
            drawn, seed = False, _seed_from(generator)
        else:
            drawn = True  # each process draws its own: ranks agree on one (_agreement)
            seed = _core.draw_base_seed("DataLoader")
        if drawn:
            seed = _agreement.DrawnSeed(seed)
        if not isinstance(dataset, Dataset):
            _dataset.check_map_style(dataset)
        _warn_if_more_workers_than_cpus(num_workers)
        self.dataset = dataset
        self.batch_size = batch_size
        self._sampler, self._batch_sampler = sampler, batch_sampler  # the user's
        self.num_workers = num_workers
        self.drop_last = drop_last
        self.timeout = timeout
        self.generator = generator
        # torch's attributes, with torch's kinds of values (frameworks read them).
        self.prefetch_factor = prefetch_factor if prefetch_factor is not None else \
            _torch_prefetch_default(num_workers)
        self.persistent_workers = persistent_workers
        self.pin_memory = bool(pin_memory)
        self.pin_memory_device = pin_memory_device
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        # "spawn" and "forkserver" start workers that run Python as fresh
        # interpreters (seedloader._spawned); the others are forked.
        self._start_method = ("fork" if multiprocessing_context is None else
                              _check_start_method(multiprocessing_context, num_workers))
        self._payload = None  # a spawned worker's recipe (_spawned.Payload)
        self._spawn_args = None
        self._recipe = None  # how the engine's data set was built (_spawned)
        self.in_order = in_order
        self.collate_fn = collate_fn if collate_fn is not None else _default_collate(
            self._unbatched)
        self.rank, self.world_size = int(rank), int(world_size)
        self.shuffle = bool(shuffle)
        self.seeding = seeding
        self.order = order
        if (isinstance(shuffle_block, bool) or not isinstance(shuffle_block, int) or
                not 0 <= shuffle_block < 2**63):
            raise ConfigError("shuffle_block must be an int >= 0 (0: four times the "
                              "largest shard), got %r" % (shuffle_block,))
        self.shuffle_block = shuffle_block
        if canonical_nodes is not None and (
                isinstance(canonical_nodes, bool) or not isinstance(canonical_nodes, int)
                or not 0 <= canonical_nodes < 2**63):
            raise ConfigError("canonical_nodes must be an int >= 0 (0: no split) or None "
                              "(one per node where that helps), got %r"
                              % (canonical_nodes,))
        if canonical_nodes and partition != "elastic":
            raise ConfigError("canonical_nodes needs partition='elastic', whose global "
                              "batches they split")
        if nodes is not None and (isinstance(nodes, bool) or not isinstance(nodes, int) or
                                  not 1 <= nodes < 2**63):
            raise ConfigError("nodes must be an int >= 1, or None (from the launcher), "
                              "got %r" % (nodes,))
        self._nodes = nodes
        # None: the default for the world the first epoch starts in (_place).
        self._canonical_default = canonical_nodes is None
        self.canonical_nodes = canonical_nodes or 0
        self.partition = partition
        if partition == "elastic" and (sampler is not None or batch_sampler is not None):
            raise ConfigError("partition='elastic' draws its own order over the whole data "
                              "set; it does not take a sampler or batch_sampler")
        self.pad_variable = bool(pad_variable)
        self._variable = (tuple(variable_fields), int(variable_bytes))
        self._collate = None if collate_fn is None or _is_default_collate(collate_fn) \
            else collate_fn
        if self._collate is not None and self._unbatched:
            self._collate = _OneSample(self._collate)
        if self._collate is not None and isinstance(dataset, Dataset):
            raise ConfigError("collate_fn runs on a Python dataset's samples; %s is one of "
                              "seedloader's own datasets, whose batches the engine builds"
                              % type(dataset).__name__)
        # A Mixture's schedule segments (seedloader._mixture), new weights at a
        # resume adding one; None for any other data set.
        self._mixture_history = None
        self._mixture_cache = None  # (key, _core.MixtureOrder)
        # (step, [count per source]) a loaded state gives: orders start from there.
        self._mixture_known = []
        if isinstance(dataset, Mixture):
            self._mixture_history = _check_mixture_arguments(
                dataset, sampler, batch_sampler, self._unbatched, self._collate)
            if self._collate is not None and on_bad_sample == "skip":
                raise ConfigError("DataLoader: on_bad_sample=\"skip\" with a collate_fn "
                                  "over a Mixture: a bad sample would take its whole "
                                  "batch's place, not one sample of its source; skip "
                                  "without the collate_fn, or raise")
        if self._collate is not None and (variable_fields or pad_variable):
            raise ConfigError("variable_fields and pad_variable do not apply with a "
                              "collate_fn: every leaf of its output may take any shape "
                              "within variable_bytes")
        self._shuffle = bool(shuffle)
        self._channel = None     # collate_fn: the epoch's batches, to the workers
        self._collated = None    # collate_fn: (epoch, [[index]]) the engine runs
        self._collated_size = 0  # collate_fn: the most batches an epoch may have
        self._seed = seed  # a DrawnSeed until the ranks agree on it
        # An attribute, not a property: a framework that rebuilds a loader from
        # vars() and the __init__ signature must get the same seed on every rank.
        self.seed = self._seed  # the base seed every stream derives from
        config.update(seed=self._seed, generator=None)  # the seed drawn, on every copy
        self._config = config
        self._options = _loader_options(
            num_workers=num_workers,
            # One slot per worker more than prefetch_factor: the batch the loop
            # variable still holds while the next is fetched.
            prefetch=(2 if prefetch_factor is None else prefetch_factor) + 1,
            shuffle=bool(shuffle), order=order, shuffle_block=self.shuffle_block,
            seed=self._seed, drop_last=drop_last,
            persistent_workers=persistent_workers, rank=self.rank,
            world_size=self.world_size, partition=partition, seeding=seeding,
            canonical_nodes=self.canonical_nodes, nodes=self._node_count(self.world_size),
            on_bad_sample=on_bad_sample,
            timeout=float(timeout), mixup_alpha=float(mixup_alpha),
            cutmix_alpha=float(cutmix_alpha), cutmix_prob=float(cutmix_prob),
            num_classes=0 if num_classes is None else int(num_classes))
        self._canonical_fixed = False  # by the first epoch, or a state loaded
        if self._canonical_default:
            self._set_canonical_nodes(_core.default_canonical_nodes(self._options))
        self._worker_init_fn, self._format = worker_init_fn, format
        self._pin_request = pin_memory if pin_memory is not None else (
            None if format == "torch" else False)
        self._loader = None      # the engine (_core.Loader), built when a pass starts
        self._layout = None      # a Python dataset's sample tree (seedloader._samples)
        self._built_for = None   # len(dataset) when the engine was built
        self._plan = None        # (epoch, [[index]]) drawn from sampler / batch_sampler
        self._epoch = 0
        self._skip_steps, self._skip_samples = set(), set()  # declared with skip()
        self._skips_changed = False  # the engine was built with other skips
        self._epoch_used = False  # a pass started in this epoch: the next one moves on
        self._resume = None      # (epoch, batch) the next pass starts at
        self._yielded = 0        # batches of the epoch consumed before any pass started
        self._pass = None        # the newest started pass's _core.PassPosition
        self._pass_first = 0     # the batch the newest pass starts at
        self._starting = None    # the pass _start() is starting, while it does
        self._handover = None    # the layout pass's workers, for the pass's engine
        self._replayed = None    # with num_workers=0, the samples the layout pass read
        self._record_fingerprints = False  # passes export stream fingerprints (a trace)
        self._done_epoch = None  # the epoch a loaded state finished, while it is next
        self._pinned = None
        self._warned_padding = False  # _last_batch_samples warned once
        self._warned_pinning = False  # _pin warned once
        if isinstance(dataset, Dataset):
            self._engine()  # a C++ dataset knows its layout without reading a sample
        else:  # the engine comes later; its options are checked now
            self._options.batch_size = batch_size or 1
            _core.validate(self._options, len(dataset))
        self.sampler, self.batch_sampler = _compat.samplers(self)
        self._initialized = True

    def __len__(self):
        if self._mixture_history is not None:
            self._place()
            return self._mixture_order().steps_per_epoch
        if self._batch_sampler is not None:
            return len(self._batch_sampler)
        if self._sampler is not None:
            n = len(self._sampler)
            return n // self._batch_size if self.drop_last else -(-n // self._batch_size)
        self._place()
        return _core.epoch_batches(self._order_options(), len(self.dataset))

    def __setattr__(self, name, value):
        # torch's rule: what decides the batches is fixed once the loader exists.
        if name in _FIXED_AFTER_INIT and self.__dict__.get("_initialized", False):
            raise ValueError("%s attribute should not be set after %s is initialized"
                             % (name, type(self).__name__))
        super().__setattr__(name, value)

    def __getstate__(self):
        """A pickled loader is its configuration and position: unpickled, it is a new
        loader (no workers yet) with the same arguments, the same base seed on every
        copy, and state_dict() loaded, as torch.multiprocessing.spawn needs."""
        return {"config": self._config, "state": self.state_dict()}

    def __setstate__(self, pickled):
        self.__init__(**pickled["config"])
        self.load_state_dict(pickled["state"])

    @property
    def _auto_collation(self):
        """torch's: whether samples are collated into batches (batch_size=None: not)."""
        return self.batch_sampler is not None

    @property
    def _index_sampler(self):
        """torch's: what yields each item's indices, the batch sampler or the sampler."""
        return self.batch_sampler if self._auto_collation else self.sampler

    @property
    def last_indices(self):
        """The sample indices of the batch last yielded, as a list (the keys a
        sampler yielded, where it yields keys)."""
        return self._last_indices(keys=True)

    def _last_indices(self, keys):
        """last_indices; with `keys` False, a Keyed epoch's samples by their
        positions in it, as the engine indexes them (and the audit trace)."""
        raw = self._pass.last_indices if self._pass is not None else None
        if raw is None:
            return []
        indices = _array.array("Q", raw).tolist()
        if self._collated is not None:  # the engine's item k is batch k
            batches = self._collated[1]
            if isinstance(batches, _checks.Keyed) and not keys:
                start = batches.start(indices[0])
                return list(range(start, start + len(batches[indices[0]])))
            indices = list(batches[indices[0]])
        elif keys and self._plan is not None and isinstance(self._plan[1], _checks.Keyed):
            items = self._plan[1].items()
            indices = [items[p % len(items)] for p in indices]  # the engine's: positions
        if self._mixture_history is not None:
            return [self.dataset.locate(i) for i in indices]
        return indices

    @property
    def epoch(self):
        """The epoch the current (or next) iteration runs."""
        return self._epoch

    @property
    def skipped_samples(self):
        """Samples replaced under on_bad_sample="skip" in the current (or last) epoch."""
        return self._loader.skipped_samples if self._loader is not None else 0

    def set_epoch(self, epoch):
        """The epoch the next iteration runs (keeps a load_state_dict() resume point
        for that same epoch)."""
        epoch = _epoch_number(epoch)
        if self._resume is not None and self._resume[0] != epoch:
            self._resume = None
        if epoch == self._done_epoch:
            # A loaded state finished this epoch: its pass is empty. (Lightning
            # restarts from a checkpoint of an epoch's last step this way.)
            self._resume = (epoch, len(self))
        self._epoch = epoch
        self._epoch_used = False
        self._yielded = self._resume[1] if self._resume is not None else 0

    def __iter__(self):
        """A pass over the next epoch. Nothing is claimed until its first next():
        a framework may call iter() to check the loader, as PyTorch's loader draws
        its order only then."""
        if self._loader is not None and self._loader.busy:
            raise Error(_core.BUSY)
        # A pass that runs in C++ per batch (seedloader._core.Batches says how).
        batches = _compat.Pass(self._start, self._raise_batch_error)
        accelerate = _compat.gradient_state()
        return batches if accelerate is None else _compat.accelerate_pass(self, batches,
                                                                          accelerate)

    def _last_batch_samples(self):
        """The real samples of the epoch's last global batch (every rank's last batch,
        gathered in rank order), where the padding of the built-in partitions comes
        last in that order; 0 when nothing is padded, -1 when the padding cannot be
        told by its place (a user's sampler; the strided partition padding more
        than one rank's last batch of several samples, which warns once)."""
        if self._mixture_history is not None:
            return 0  # every step of a mixture is a whole global batch
        n, ranks, size = len(self.dataset), self.world_size, self._batch_size
        if self._sampler is not None or self._batch_sampler is not None or \
                self.drop_last or self._collate is not None:
            return -1 if not self.drop_last else 0
        if self.partition == "elastic":
            return n % (size * ranks)
        per_rank = -(-n // ranks)
        padded = per_rank * ranks - n
        last = per_rank - size * (-(-per_rank // size) - 1)  # each rank's last batch
        if padded == 0:
            return 0
        if padded == 1 or last == 1:
            return ranks * last - padded
        if not self._warned_padding:
            self._warned_padding = True
            _warnings.warn(
                "seedloader.DataLoader: %d samples over %d ranks pad %d ranks' last "
                "batches of %d; accelerate's gather_for_metrics drops padding only from "
                "the end of the gathered batch, so it keeps these duplicates. For "
                "evaluation use partition='elastic' (with seeding='sample'), whose "
                "padding comes last" % (n, ranks, padded, last), stacklevel=2)
        return -1

    def _start(self, batches):
        """The first next() of pass `batches`: takes the rank and world size, claims
        its epoch (the resume point, else the next epoch once one has started) and
        readies the engine; returns (engine, first batch, batches to replay, layout,
        pad_variable), or None when nothing is left of the epoch. An older
        pass is replaced either way."""
        self._agree_seed(self._place(announce=True))
        self._canonical_fixed = True  # C is the run's from its first epoch on
        if self.worker_init_fn is not self._worker_init_fn:
            # Set after construction (Lightning's seed_everything(workers=True)
            # does): torch's loader uses it from its next iterator on; so does this.
            self._close_engine()
            self._worker_init_fn = self.worker_init_fn
        if self._loader is not None:
            self._loader.stop()  # one pass at a time, as the engine runs them
        if self._skips_changed:
            self._close_engine()  # rebuilt with the skips declared since
            self._skips_changed = False
        if self._resume is not None:
            self._epoch, first = self._resume
        else:
            if self._epoch_used:
                self._epoch = _epoch_number(self._epoch + 1, "the next epoch")
            first = 0
        self._resume, self._done_epoch = None, None
        self._epoch_used = True
        self._pass = None
        if first >= len(self):
            self._yielded = first
            if self._loader is not None:
                self._loader.begin_pass()  # an older pass is stale all the same
            return None  # the epoch was consumed whole before this pass
        built = self._loader
        self._pass_first, self._starting = first, batches
        try:
            core = self._engine()
        finally:
            self._starting = None  # nothing may hold a pass its caller drops
        if core is built and self._spawn_args is not None and not self.persistent_workers:
            # The dataset as it is now, as torch pickles it (a new engine just did).
            self._payload.write(*self._spawn_args)
        replay = self._begin_epoch(core, first)
        self._pass = batches.position  # not the pass: nothing holds an iterator dropped
        batches.record_fingerprints = self._record_fingerprints
        layout = self._layout
        if self._unbatched and self._collate is None:
            layout = _Unbatch(layout)
        return core, first, replay, layout, self.pad_variable

    def _agree_seed(self, source):
        """A drawn seed becomes rank 0's on every rank (seedloader._agreement) when
        this pass runs over several; the engine is rebuilt if it changed."""
        seed = _agreement.agreed_seed(self._seed, self.rank, self.world_size, source,
                                      self._order_depends_on_seed())
        if seed is self._seed:
            return
        if seed != self._seed:
            self._close_engine()  # rebuilt, and pinned again, for the new seed
        self._seed = self._config["seed"] = seed
        self.__dict__["seed"] = seed  # past __setattr__'s rule

    def _order_depends_on_seed(self):
        """Whether the epoch's order is drawn from the base seed (not a user's
        sampler's, not sequential)."""
        if self._mixture_history is not None:
            return True
        return self._shuffle and self._sampler is None and self._batch_sampler is None

    def _begin_epoch(self, core, first):
        """Begins this epoch on `core` from batch `first`; returns how many batches
        the pass loads and drops before it delivers one."""
        if first and self.seeding == "sample":
            core.resume(self._epoch, first)  # the batches before `first` are not loaded
            return 0
        core.set_epoch(self._epoch)
        return first  # worker streams must advance as they did: load, discard

    def _placement(self):
        """(rank, world size, source) now: the given ones, the others from
        distributed_context(). Given ones that a torch.distributed process group
        contradicts are a ConfigError: never a silent single-rank epoch."""
        given_rank, given_size = self._given_placement
        rank, size, source = distributed_context()
        if given_rank is None and given_size is None:
            return rank, size, source
        if source == "torch.distributed" and (given_rank not in (None, rank) or
                                              given_size not in (None, size)):
            raise ConfigError(
                "DataLoader: rank=%s, world_size=%s were given, but torch.distributed's "
                "process group is rank %d of %d; leave rank and world_size unset and the "
                "loader takes the process group's when each iteration starts"
                % (given_rank, given_size, rank, size))
        return (rank if given_rank is None else given_rank,
                size if given_size is None else given_size, source + " and arguments")

    def _place(self, announce=False):
        """Takes the rank and world size as they are now (_placement); a change from
        the ones the engine was built for rebuilds it. The source is printed once per
        process when a pass starts, and returned."""
        rank, size, source = self._placement()
        if announce and source not in _announced:
            _announced.add(source)
            # One write, so lines from several ranks do not run together.
            _sys.stderr.write("seedloader: rank %d of %d (from %s)\n" % (rank, size, source))
        if (rank, size) == (self.rank, self.world_size):
            return source
        if not 0 <= rank < size:
            raise ConfigError("rank %d is not in [0, world_size %d)" % (rank, size))
        self._close_engine()
        self.rank, self.world_size = rank, size
        self._options.rank, self._options.world_size = rank, size
        self._options.nodes = self._node_count(size)
        if self._canonical_default and not self._canonical_fixed:
            self._set_canonical_nodes(_core.default_canonical_nodes(self._options))
        return source

    def _node_count(self, world_size):
        return node_count(world_size) if self._nodes is None else self._nodes

    def _set_canonical_nodes(self, parts):
        if (parts != self._options.canonical_nodes and
                self.__dict__.get("_loader") is not None):
            self._close_engine()  # rebuilt with the new split
        self.canonical_nodes = self._options.canonical_nodes = parts

    def _raise_batch_error(self, batches):
        """Raises the error the pass `batches` met, in this API's terms: a held slot
        as what to do about it; a dataset's exception as a WorkerError that is also
        of that exception's type, and with num_workers=0 chained to the exception
        itself and its traceback."""
        try:
            batches.rethrow()
        except Error as e:
            held = _held_slot_error(e)
            if held is not None:
                raise held from None
            cause = _dataset.take_in_process_error()
            own = _errors.as_dataset_error(e) if isinstance(e, WorkerError) else None
            if own is not None:
                raise own from cause
            if cause is None:
                raise
            raise e from cause

    def state_dict(self):
        """Where the loader is: resume with load_state_dict() on a loader built with
        the same dataset and options (the keys of torchdata's StatefulDataLoader
        state where they mean the same; "_finished": the epoch was delivered
        whole, so a loaded state continues with the next one). The position is
        global: "samples" is what every rank together consumed in the epoch, and
        under partition="elastic" any world size with the same global batch size
        resumes from it."""
        num_batches = len(self)  # takes the rank and world size as they are now
        global_batch = (self._batch_size or 0) * self.world_size
        yielded = self._consumed()
        state = {"epoch": self._epoch, "_num_yielded": yielded,
                 "_finished": self._epoch_used and yielded >= num_batches,
                 "samples": yielded * global_batch,
                 "global_batch_size": global_batch,
                 "base_seed": int(self._seed),
                 # Not yet agreed (no pass over several ranks began): a loaded state
                 # agrees it when its first pass does.
                 "base_seed_drawn": isinstance(self._seed, _agreement.DrawnSeed),
                 "seeding": self.seeding, "order": self.order,
                 "shuffle_block": self.shuffle_block,
                 "canonical_nodes": self.canonical_nodes,
                 "partition": self.partition, "world_size": self.world_size,
                 "rank": self.rank, "batch_size": self.batch_size,
                 "num_batches": num_batches,
                 "dataset": _dataset_fingerprint(self.dataset),
                 "skip": {"steps": [list(r) for r in sorted(self._skip_steps)],
                          "samples": sorted(self._skip_samples)}}
        if self._plan is not None and self._plan[0] == self._epoch:
            # A user's sampler may not draw them again.
            state["batches"] = [list(b) for b in self._plan[1]]
        if self._mixture_history is not None:
            state["mixture"] = self._mixture_state(num_batches, yielded)
        return state

    def _mixture_order(self):
        """The Mixture's order for this rank (_core.MixtureOrder), kept while the
        history, placement, batch size and seed stay."""
        if self.world_size > 1 and self.partition != "elastic":
            raise ConfigError("DataLoader: a Mixture over %d ranks needs "
                              "partition='elastic' (its global batches are composed "
                              "whole), not %r" % (self.world_size, self.partition))
        m = self.dataset
        key = (self._mixture_history, self._mixture_known, self.rank, self.world_size,
               self._batch_size, self._seed)
        if self._mixture_cache is None or self._mixture_cache[0] != key:
            self._mixture_cache = (key, _core.MixtureOrder(
                m.names, m.sizes, self._mixture_history, m.samples_per_epoch,
                self._batch_size, self.world_size, self.rank, self._seed,
                self._mixture_known))
        return self._mixture_cache[1]

    def _mixture_state(self, num_batches, yielded):
        """state["mixture"]: the global step of the position, each source's epoch and
        consumed count there (and its count at the epoch's first step, from which a
        resume computes the epoch without going through the steps before it), and
        the history of schedules it was reached under."""
        m = self.dataset
        first = self._epoch * num_batches
        order = self._mixture_order()
        at_first = order.consumed_at(first)
        consumed = order.consumed_at(first + yielded)
        return {"step": first + yielded, "samples_per_epoch": m.samples_per_epoch,
                "epoch_first_step": first,
                "sources": {name: {"size": size, "epoch": count // size,
                                   "consumed": count, "epoch_first_count": start}
                            for name, size, count, start
                            in zip(m.names, m.sizes, consumed, at_first)},
                "history": [[from_step, list(names), [[s, list(w)] for s, w in points],
                             list(counts), interpolate]
                            for from_step, names, points, counts, interpolate
                            in self._mixture_history]}

    def _consumed(self):
        """Batches of the current epoch consumed: the started pass's count, else the
        resume point (or 0)."""
        if self._epoch_used and self._pass is not None:
            return self._pass.yielded
        return self._yielded

    def load_state_dict(self, state):
        """The next iteration continues epoch state["epoch"] after the batches the
        state says were consumed, exactly as an uninterrupted epoch would (the next
        epoch when the state says the epoch was finished). Under
        partition="elastic" the state may come from another world size, batch size
        or worker count with the same global batch size; otherwise the world size
        and batch size must match."""
        missing = [k for k in ("epoch", "_num_yielded", "base_seed") if k not in state]
        if missing:
            raise ConfigError("load_state_dict: the state has no %s (it has %s)"
                              % (", ".join(missing), ", ".join(sorted(map(str, state)))))
        state = _checked_state(state)
        epoch = state["epoch"]
        # Not the rank: every rank is at the same position, so one rank's state
        # (say rank 0's checkpoint) resumes them all.
        mine = self.state_dict()
        must_match = ["partition", "seeding", "order", "shuffle_block", "dataset"]
        mixture = self._mixture_history is not None or "mixture" in state
        if mixture:
            if self._mixture_history is None:
                raise ConfigError("load_state_dict: the state is a Mixture's; this loader "
                                  "reads %s" % type(self.dataset).__name__)
            if not isinstance(state.get("mixture"), dict):
                raise ConfigError("load_state_dict: this loader reads a Mixture; the state "
                                  "has no mixture section")
            must_match.remove("dataset")  # the sources are checked one by one
        # Unset, C is the state's (a run goes on with the split it started with);
        # given, it must be the same.
        saved_parts = state.get("canonical_nodes", 0)
        if self._canonical_default:
            if (isinstance(saved_parts, bool) or not isinstance(saved_parts, int) or
                    not 0 <= saved_parts < 2**63):
                raise ConfigError("load_state_dict: canonical_nodes %r is not an int >= 0"
                                  % (saved_parts,))
            if saved_parts and self.partition != "elastic":
                raise ConfigError("load_state_dict: the state splits its order into %d "
                                  "canonical nodes, which needs partition='elastic'"
                                  % saved_parts)
            # Checked against this world now, not at the next iteration.
            options = _loader_options(partition=self.partition, seeding=self.seeding,
                                      world_size=self.world_size, rank=self.rank,
                                      batch_size=self._batch_size or 1,
                                      canonical_nodes=saved_parts,
                                      nodes=self._options.nodes)
            _core.validate(options, max(len(self.dataset), 1))
            if saved_parts and mine["global_batch_size"] % saved_parts:
                raise ConfigError("load_state_dict: the state's canonical_nodes %d does "
                                  "not divide this loader's global batch of %d"
                                  % (saved_parts, mine["global_batch_size"]))
        else:
            must_match.append("canonical_nodes")
        must_match += (["global_batch_size"] if self.partition == "elastic" else
                       ["world_size", "batch_size", "num_batches"])
        for key in must_match:
            saved = state.get(key, {"partition": "strided", "canonical_nodes": 0}.get(
                key, mine[key]))
            if saved != mine[key]:
                raise ConfigError("load_state_dict: the state was saved with %s=%r, this "
                                  "loader has %r" % (key, saved, mine[key]))
        history = None
        if mixture:  # after the global batch is known to be the same
            history, known = _loaded_mixture_history(self, state)
        yielded = _resumed_batches(state, mine["global_batch_size"], len(self),
                                   self.partition == "elastic")
        # Everything is checked before anything changes: a refused state leaves
        # the loader as it was.
        skips = _state_skips(state.get("skip", {}))
        if mixture and skips[1]:  # indices of the saved mixture: a source added moves them
            skips = (skips[0], {_moved_index(state["mixture"]["sources"], self.dataset, i)
                                for i in skips[1]})
        outside = [i for i in skips[1] if i >= len(self.dataset)]
        if outside:
            raise ConfigError("load_state_dict: the state skips sample %d, outside the "
                              "data set's %d samples" % (min(outside), len(self.dataset)))
        if skips[1] and self._collate is not None:
            raise ConfigError("load_state_dict: the state skips samples, which a loader "
                              "with a collate_fn cannot (it reads whole batches)")
        if skips[1] and self.seeding != "sample":
            raise ConfigError("load_state_dict: the state skips samples, which needs "
                              "seeding=\"sample\"; this loader has %r" % self.seeding)
        plan = None
        if "batches" in state:
            plan = (epoch, _checks.plan(state["batches"], len(self.dataset),
                                        "load_state_dict: batches", epoch,
                                        not isinstance(self.dataset, Dataset)))
        done_epoch = None
        if state["_finished"] or yielded == len(self):
            done_epoch = epoch
            epoch = _epoch_number(epoch + 1, "load_state_dict: the epoch after finished "
                                  "epoch %d" % epoch)
            yielded = 0
        if self._canonical_default:  # first: it may close the engine, or refuse to
            self._set_canonical_nodes(saved_parts)
            self._canonical_fixed = True
        seed = state["base_seed"]
        if state["base_seed_drawn"]:
            seed = _agreement.DrawnSeed(seed)
        if seed != self._seed:
            self._close_engine()  # rebuilt, and pinned again, for the new seed
        self._seed = self._config["seed"] = seed
        self.__dict__["seed"] = seed  # past __setattr__'s rule
        if plan is not None:
            self._plan = plan
        if history is not None and (history, known) != (self._mixture_history,
                                                        self._mixture_known):
            self._close_engine()  # rebuilt with the new weights from the saved step
            self._mixture_history, self._mixture_known = history, known
        self._set_skips(self._skip_steps | skips[0], self._skip_samples | skips[1])
        self._done_epoch = done_epoch
        self._epoch = epoch
        self._epoch_used = False
        self._resume = (epoch, yielded) if yielded else None
        self._yielded = yielded

    def worker_pids(self):
        return self._loader.worker_pids() if self._loader is not None else []

    def close(self):
        """Stops the workers now (they also stop when the loader is collected)."""
        self._close_engine()

    def _close_engine(self):
        if self._loader is not None:
            self._loader.stop()  # refuses while another thread waits for a batch
        self._unpin()
        if self._loader is not None:
            self._loader.close()
            self._loader = None
        if self._payload is not None:
            self._payload.close()
            self._payload, self._spawn_args = None, None

    def _engine(self):
        """The engine, built on first use; a Python dataset's layout is learned here.
        A Python dataset that grew or shrank since gets a new engine (same layout),
        as PyTorch's loader takes len(dataset) afresh for each iteration."""
        if self._loader is not None:
            if isinstance(self.dataset, Dataset) or len(self.dataset) == self._built_for:
                return self._loader
            self._close_engine()
        try:
            return self._build_engine()
        finally:
            if self._handover is not None:  # the layout pass's workers, not adopted
                self._handover.abandon()
                self._handover = None

    def _build_engine(self):
        if not isinstance(self.dataset, Dataset):
            self._built_for = len(self.dataset)
        self._channel = None
        if self._collate is not None:
            # One item per batch, in the order the published batches give (set
            # first: the layout pass runs with these options).
            self._options.batch_size, self._options.shuffle = 1, False
            self._options.drop_last = False
            self._options.partition = _core.Partition.strided
            dataset, plan = self._collated_dataset()
        elif self._mixture_history is not None:
            self._options.batch_size = self._batch_size  # first: the layout pass's too
            dataset, plan = self._mixture_dataset(), None
        else:
            dataset, plan = self._sample_dataset()
        self._options.seed = self._seed
        worker_init = self._worker_init()
        self._options.worker_command, self._options.worker_fds = [], []
        spawned = (self._start_method in ("spawn", "forkserver") and self.num_workers > 0
                   and self._recipe is not None)
        if (self._start_method in ("spawn", "forkserver") and self.num_workers > 0 and
                self._recipe is None and self._mixture_history is not None and
                not all(isinstance(d, Dataset) for d in self.dataset.sources.values())):
            _warnings.warn("seedloader.DataLoader: multiprocessing_context=%r, but this "
                           "Mixture holds seedloader's own data sets, whose workers are "
                           "forked: its Python sources are read in forked workers too"
                           % self._start_method, stacklevel=3)
        if spawned:
            # Written before the engine exists: a recipe that does not pickle
            # leaves no engine behind whose workers would read an empty one.
            payload = _spawned.Payload()
            spawn_args = (self._recipe, _spawned.options_state(self._options),
                          worker_init, self._format, plan is not None,
                          "the dataset, its layout and worker_init_fn")
            try:
                payload.write(*spawn_args)
            except BaseException:
                payload.close()
                raise
            self._payload, self._spawn_args = payload, spawn_args
            self._options.worker_command = _spawned.command(payload.fd)
            self._options.worker_fds = [payload.fd] + (
                [self._channel._fd] if self._channel is not None else [])
        adopt, handover = None, self._handover
        if handover is not None and self._recipe is not None and handover.ready(
                self._recipe, _spawned.options_state(self._options), self._format,
                plan is not None):
            adopt = (handover.pids, handover.adopt)  # the layout pass's workers go on
        self._loader = _core.Loader(dataset, self._options, worker_init, self._format, plan,
                                  adopt=adopt)
        if adopt is not None:
            self._handover = None  # the engine owns them now
        self._skips_changed = False  # built with the skips declared now
        if self._pin_request is not False:
            self._pin(required=bool(self._pin_request))
        return self._loader

    def _sample_dataset(self):
        """(the engine's dataset, its batch plan or None), the batch size set: a C++
        dataset as it is, a Python one with its layout; a user's sampler drawn."""
        dataset, plan = self.dataset, None
        self._recipe = None  # seedloader's own data set: its workers are forked
        capacity = self._batch_size
        if self._sampler is not None or self._batch_sampler is not None:
            plan = self._draw_plan
            drawn = self._draw_plan(self._epoch)
            capacity = max([getattr(self._batch_sampler, "batch_size", None) or 1] +
                           [len(b) for b in drawn] + [self._batch_size or 1])
        self._options.batch_size = capacity
        if not isinstance(dataset, Dataset):
            if plan is not None:  # its items may be keys, in any epoch
                self._channel = _dataset.PlanChannel()
                dataset, plan = _dataset.KeyedSamples(dataset, self._channel), self._keyed_plan
            if self.num_workers == 0 and self.seeding == "sample":
                dataset = _dataset.SampleSeeded(dataset)
            if self._layout is None:
                self._layout = self._learn_layout(engine_dataset=dataset, plan=plan)
            self._recipe = ("python", dataset, [f.as_tuple() for f in self._layout.fields],
                            _samples.Flatten(self._layout), _dataset.takes_rng(dataset))
            dataset = _spawned.build_engine_dataset(self._recipe, self._take_replay())
        return dataset, plan

    def _take_replay(self):
        """With num_workers=0, what the layout pass read in this process, to be served
        again (once): one Replay per Python data set of the engine's recipe."""
        replays = [_dataset.Replay(c) for c in self._replayed] if self._replayed else None
        self._replayed = None
        return replays

    def _mixture_dataset(self):
        """The engine's MixtureDataset over the sources: seedloader's own as they are,
        Python ones each with its layout (learned, or declared by `fields`), which
        must be one; the batches are built from the first's. Beside seedloader's own
        sources a Python source's samples are dicts of their fields: its layout is
        theirs, and the batches are built as theirs are."""
        m = self.dataset
        native = next((m.sources[n] for n in m.names if isinstance(m.sources[n], Dataset)),
                      None)
        python = [n for n in m.names if not isinstance(m.sources[n], Dataset)]
        read = {n: _dataset.SampleSeeded(m.sources[n])
                if self.num_workers == 0 and self.seeding == "sample" else m.sources[n]
                for n in python}
        layouts = {}
        for name in python:
            declared = getattr(m.sources[name], "fields", None)
            if native is not None:
                declared = {f[0]: (f[2], f[1]) for f in native.fields}
            if isinstance(declared, dict):
                layouts[name] = _samples.Layout.declared(declared)
        if native is None and len(layouts) < len(python):
            if self._layout is None:
                # Learned once, each source's by the layout pass from its samples in
                # the first batches, or by the probe where it has none there.
                learned = self._learn_mixture_layout(read)
                for name in python:
                    if name not in layouts:
                        layouts[name] = learned.get(name) or \
                            self._learn_layout(m.sources[name])
            for name in python:
                layouts.setdefault(name, self._layout)  # checked when it was learned
        if native is None:  # else the engine checks them against the native's
            first = python[0]
            self._layout = layouts[first]
            for name in python:
                if _fields_of(layouts[name]) != _fields_of(self._layout):
                    raise ConfigError(
                        "Mixture: the sources' samples must have one layout; %r gives "
                        "%s, %r gives %s" % (
                            first, _dataset.describe_fields(self._layout), name,
                            _dataset.describe_fields(layouts[name])))
        recipes = {name: ("python", read[name], _fields_of(layouts[name]),
                          _samples.Flatten(layouts[name]), _dataset.takes_rng(read[name]))
                   for name in python}
        if len(python) == len(m.names):
            self._recipe = ("mixture", m.names, [recipes[n] for n in m.names],
                            self._mixture_history, m.samples_per_epoch,
                            self._mixture_known)
            return _spawned.build_engine_dataset(self._recipe, self._take_replay())
        self._recipe = None  # seedloader's own sources: the workers are forked
        return _core.MixtureDataset(
            m.names, [_spawned.build_engine_dataset(recipes[n]) if n in recipes
                      else m.sources[n] for n in m.names],
            self._mixture_history, m.samples_per_epoch, self._mixture_known)

    def _learn_mixture_layout(self, sources):
        """{name: layout} of a Mixture's Python sources drawn in the layout pass's
        first batches (`sources`: {name: the data set its engine reads}; the
        Mixture has no other); empty when the pass cannot run, or has no batch."""
        m = self.dataset
        if len(m) == 0 or not self._layout_pass_can():
            return {}
        paths, budget = self._variable
        names = list(sources)
        return self._learn_from_batches(
            [sources[n] for n in names], None, _dataset.PROBE_SAMPLES,
            lambda files, read: _dataset.layout_of_mixture_batches(
                files, read, m.locate, names, paths, budget),
            (m.names, self._mixture_history, m.samples_per_epoch, self._mixture_known),
            ["source %r sample" % n for n in names]) or {}

    def _collated_dataset(self):
        """(the engine's dataset, its batch plan) under a collate_fn: one item per
        batch (seedloader._dataset.CollatedBatches), the epoch's batches drawn here
        and published to the workers."""
        self._channel = _dataset.PlanChannel()
        samples = (_dataset.MixtureSamples(self.dataset) if self._mixture_history is not None
                   else _dataset.Samples(self.dataset))
        batches = _dataset.CollatedBatches(
            samples, self._collate, self._channel, self._seed,
            self.seeding == "sample", max(len(self), 1))
        self._collated_size = len(batches)
        self._publish(self._epoch)
        if self._layout is None:
            budget = self._variable[1]
            self._layout = self._learn_layout(
                batches, lambda outputs: _samples.Collated.learn(outputs, budget), 2,
                batches, self._publish,
                lambda files, read: _dataset.collated_of_batches(files[0], read, budget))
        self._recipe = ("python", batches, [f.as_tuple() for f in self._layout.fields],
                        self._layout, True)
        dataset = _spawned.build_engine_dataset(self._recipe, self._take_replay())
        return dataset, self._publish

    def _worker_init(self):
        """What each forked worker runs first: torch's get_worker_info() set for a
        Python dataset, then the user's worker_init_fn."""
        user, workers, dataset = self._worker_init_fn, self.num_workers, self.dataset
        if isinstance(dataset, Dataset) and user is None:
            return None  # the workers run no Python at all
        return _dataset.WorkerInit(user, workers, dataset)

    def _publish(self, epoch):
        """The engine's plan under a collate_fn: the epoch's batches go to the
        workers through the channel, and the engine runs batch k as item k."""
        streams = None
        if self._sampler is not None or self._batch_sampler is not None:
            drawn = self._draw_plan(epoch)
        elif self._mixture_history is not None:  # whole steps, each sample's source epoch
            order, epochs = self._mixture_order().order(epoch)
            drawn = _batched(order.tolist(), self._batch_size, False)
            streams = _batched(epochs.tolist(), self._batch_size, False)
        else:
            order = _core.epoch_order(self._order_options(), len(self.dataset), epoch)
            drawn = _batched(order.tolist(), self._batch_size, self.drop_last)
        bound = self._collated_size
        if len(drawn) > bound:
            raise ConfigError("epoch %d has %d batches; this loader with a collate_fn "
                              "was built for at most %d (len(loader) when it started)"
                              % (epoch, len(drawn), bound))
        self._channel.publish(epoch, drawn, streams, shared=self.num_workers > 0)
        self._collated = (epoch, drawn)
        return [[k] for k in range(len(drawn))]

    def ledger(self, step, epoch=None, rank=None, skipped_only=False):
        """The samples global step `step` of `epoch` (default: self.epoch) trains on,
        computed from this loader's configuration alone: nothing is read, nothing
        replayed, and the cost does not grow with the step (seedloader's ledger, as
        `seed-audit order` prints it). `step` is a step number or a range of them;
        `rank` narrows to one rank (default: every rank of the world the loader runs
        in). One dict per sample, by step, rank and slot, with the keys epoch, step,
        rank, worker (the worker that fills it when the epoch runs from its first
        batch), slot (its place in the rank's batch), index, stream (the spawn key
        of its random stream) and fingerprint (that stream's state before the
        sample, under seeding="sample"; None under "worker", where it depends on the
        worker's earlier draws) and skipped (declared with skip(): not delivered;
        slot is then the place it had); skipped_only=True returns those alone (the
        declared skips of many steps at the cost of one). Over a Mixture, index is
        the mixture's index and each entry also names its source, source_index (its
        index there) and source_epoch (the source's epoch, which keys its stream).
        A sampler or batch_sampler of your own has its own order, which this does
        not know: a ConfigError."""
        if self._sampler is not None or self._batch_sampler is not None:
            raise ConfigError("DataLoader.ledger: this loader's order comes from its own "
                              "sampler or batch_sampler, which the ledger cannot compute")
        if isinstance(step, range):
            steps = step
        else:
            first = _checks.integer(step, "DataLoader.ledger: step")
            steps = range(first, first + 1)
        if steps.step != 1 or len(steps) == 0:
            raise ConfigError("DataLoader.ledger: steps %r are not a non-empty range of "
                              "consecutive steps" % (steps,))
        epoch = self._epoch if epoch is None else _epoch_number(epoch)
        self._place(announce=False)
        options = self._order_options()
        options.num_workers = self.num_workers
        options.seeding = _CHOICES["seeding"][self.seeding]
        options.skip_steps = sorted(self._skip_steps)
        options.skip_samples = sorted(self._skip_samples)
        mixture = None
        if self._mixture_history is not None:
            m = self.dataset
            mixture = _core.LedgerMixture(m.names, m.sizes, self._mixture_history,
                                          m.samples_per_epoch, self._mixture_known)
        keys = ("epoch", "step", "rank", "worker", "slot", "index", "stream", "fingerprint",
                "skipped")
        entries = [(dict(zip(keys, entry)), entry[-1]) for entry in _core.ledger(
            options, len(self.dataset), epoch,
            _checks.integer(steps.start, "DataLoader.ledger: step"),
            _checks.integer(steps.stop, "DataLoader.ledger: step"),
            None if rank is None else _checks.integer(rank, "DataLoader.ledger: rank"),
            bool(skipped_only), mixture,
            self.dataset if isinstance(self.dataset, Dataset) else None)]
        if mixture is not None:
            for entry, source_epoch in entries:
                entry["source"], entry["source_index"] = self.dataset.locate(entry["index"])
                entry["source_epoch"] = source_epoch
        return [entry for entry, _ in entries]

    def skip(self, steps=(), samples=()):
        """Declares steps and samples not to deliver, say the batches around a loss
        spike: every other step stays exactly the batch it would have been (its
        samples, worker and streams; numbering does not shift). `steps`: (a, b)
        pairs of global steps a to b-1, a global step being epoch * len(loader) + the
        step in its epoch; a span of any length is kept as at most three ranges.
        `samples`: sample indices within the data set (over a Mixture, its indices
        or (source, index) pairs within the source), left out of their batches
        (needs seeding="sample", under which no other sample's stream depends on
        them, and no collate_fn or MixUp/CutMix); samples that would empty a batch are
        a ConfigError naming the step when its epoch begins (another rank may keep
        samples there): skip that step instead. Added to what was declared
        before; state_dict() keeps the list and load_state_dict() adds a state's to
        this loader's, so a resumed run (at another world size too, elastic) keeps
        it. From the next pass on; ledger() marks what is skipped."""
        for name, given in (("steps", steps), ("samples", samples)):
            if isinstance(given, (str, bytes)) or not hasattr(given, "__iter__"):
                raise ConfigError("DataLoader.skip: %s must be a list of %s, got %r"
                                  % (name, "(first, end) pairs of global steps"
                                     if name == "steps" else "sample indices", given))
        per_epoch = len(self)
        new_steps = set()
        for pair in steps:
            if not isinstance(pair, (tuple, list)) or len(pair) != 2:
                raise ConfigError("DataLoader.skip: steps must be (first, end) pairs, got %r"
                                  % (pair,))
            a = _checks.integer(pair[0], "DataLoader.skip: step")
            b = _checks.integer(pair[1], "DataLoader.skip: step")
            if a >= b:
                raise ConfigError("DataLoader.skip: steps (%d, %d) are empty" % (a, b))
            # At most three (epoch, first, end[, epochs]) ranges, whatever the span.
            new_steps.update(tuple(r) for r in _core.epoch_step_ranges(a, b, per_epoch))
        new_samples = {self._sample_index(i) for i in samples}
        if new_samples and self._collate is not None:
            raise ConfigError("DataLoader.skip: samples cannot be skipped under a "
                              "collate_fn (the engine reads whole batches); skip steps")
        if new_samples and self.seeding != "sample":
            raise ConfigError("DataLoader.skip: skipping samples needs seeding=\"sample\": "
                              "under worker streams the samples after a skipped one would "
                              "be augmented differently")
        self._set_skips(self._skip_steps | new_steps, self._skip_samples | new_samples)

    def _sample_index(self, sample):
        """The index skip() is given a sample by: an index, or over a Mixture also
        (source name, index in it), as last_indices and the trace name samples."""
        if self._mixture_history is None or not isinstance(sample, (tuple, list)):
            index = _checks.integer(sample, "DataLoader.skip: sample")
            if index >= len(self.dataset):
                own = isinstance(self.dataset, (Dataset, Mixture))
                raise ConfigError("DataLoader.skip: sample %d is outside the data set's "
                                  "%d samples (%s)" % (index, len(self.dataset),
                                                       repr(self.dataset) if own else
                                                       type(self.dataset).__name__))
            return index
        m = self.dataset
        if len(sample) != 2 or sample[0] not in m.names:
            raise ConfigError("DataLoader.skip: %r is not a sample of this Mixture: give "
                              "its index or (source, index), a source being one of %s"
                              % (sample, ", ".join(map(repr, m.names))))
        s = m.names.index(sample[0])
        index = _checks.integer(sample[1], "DataLoader.skip: sample")
        if index >= m.sizes[s]:
            raise ConfigError("DataLoader.skip: source %r has %d samples, not %d"
                              % (sample[0], m.sizes[s], index + 1))
        return m.offsets[s] + index

    def _set_skips(self, steps, samples):
        """Makes `steps` ((epoch, first, end) triples, or (epoch, first, end, epochs)
        for the whole epochs of a long span) and `samples` the skip list;
        the engine is rebuilt for it when the next pass starts (a pass in progress
        runs on as it began)."""
        if (steps, samples) == (self._skip_steps, self._skip_samples):
            return
        self._skip_steps, self._skip_samples = set(steps), set(samples)
        self._options.skip_steps = sorted(self._skip_steps)
        self._options.skip_samples = sorted(self._skip_samples)
        self._skips_changed = True

    def _epoch_order(self):
        """This rank's sample order in the current epoch under the built-in samplers
        (a Mixture's own)."""
        self._place()
        if self._mixture_history is not None:
            return self._mixture_order().order(self._epoch)[0]
        return _core.epoch_order(self._order_options(), len(self.dataset), self._epoch)

    def _order_options(self):
        """The options that decide the built-in samplers' order and batch count."""
        return _loader_options(shuffle=self._shuffle, order=self.order,
                               shuffle_block=self.shuffle_block, seed=self._seed,
                               rank=self.rank, world_size=self.world_size,
                               partition=self.partition, batch_size=self._batch_size or 1,
                               drop_last=self.drop_last,
                               canonical_nodes=self.canonical_nodes)

    def _learn_layout(self, dataset=None, learn=None, count=_dataset.PROBE_SAMPLES,
                      engine_dataset=None, plan=None, merge=None):
        """The layout of `dataset`'s items (the dataset's samples by default) from
        learn([(index, item)]), on the first `count` items; or, where
        _learn_from_batches can, from the pass's first batches (at least `count`
        items) of `engine_dataset` with the engine's `plan`, merge(memory files,
        batches read) making the layout of what their recorders wrote (by
        default the samples', _dataset.layout_of_batches)."""
        paths, budget = self._variable
        unbatched = self._unbatched and self._collate is None
        samples = dataset is None
        if samples:
            dataset = self.dataset
            declared = getattr(dataset, "fields", None)
            if declared is not None and isinstance(declared, dict):
                return _samples.Layout.declared(declared)
        if engine_dataset is not None and len(dataset) > 0 and self._layout_pass_can():
            if merge is None:
                merge = lambda files, read: _dataset.layout_of_batches(  # noqa: E731
                    files[0], read, paths, budget, unbatched)
            layout = self._learn_from_batches([engine_dataset], plan, count, merge,
                                              noun="sample" if samples else "batch")
            if layout is not None:
                return layout
        if samples and self._plan is not None and self._plan[0] == self._epoch and \
                any(self._plan[1]):
            # The probe reads the sampler's first items, indices or keys.
            dataset = _dataset.Items(dataset, list(
                _itertools.islice(_itertools.chain.from_iterable(self._plan[1]), count)))
        if len(dataset) == 0:
            raise ConfigError("%s is empty" % type(dataset).__name__)
        if learn is None:
            learn = lambda samples: _samples.Layout.learn(  # noqa: E731
                samples, paths, budget, unbatched)
        with_rng = _dataset.takes_rng(dataset)
        if self.num_workers > 0:
            return _dataset.learn_in_child(dataset, with_rng, self._seed, self._epoch,
                                           learn, self.timeout, count)
        return _dataset.learn_in_process(dataset, with_rng, self._seed, self._epoch, learn,
                                         count)

    def _layout_pass_can(self):
        """Whether the layout pass can learn this pass's layout: not when it resumes
        under worker seeding, whose batches before the resume point are loaded and
        dropped (the workers would keep every sample of them for the replay)."""
        return self._pass_first == 0 or self.seeding == "sample"

    def _learn_from_batches(self, datasets, plan, least, merge, mixture=None,
                            noun="sample"):
        """The layout of Python data sets' samples (`datasets`: the engine's one, or
        `mixture`'s sources as the recipe (names, history, samples_per_epoch,
        known) makes a MixtureDataset of them), learned by the layout pass: an
        engine with the loader's options (MixUp and CutMix aside), plan and
        worker_init, its batches of a one-byte placeholder, runs the pass's first
        batches (every worker's first, and at least `least` items), each
        worker reading its batch as it will in the pass itself (its worker_init_fn
        run, get_worker_info() set, its streams), and the recorders (one per data
        set) each worker reads through say what the samples are made of
        (seedloader._dataset.LayoutRecorder, whose messages call an item `noun`,
        or per data set noun[i]; merge(their files, per data set, and the batches
        read) gives the layout). Then the pass's own engine starts from the same
        batch, on the same workers, handed over (_dataset.HandOver; num_workers=0: in this
        process), and each serves the samples it read already from what it
        recorded (_dataset.Replay). A batch that failed fails in its turn. While
        every batch has failed the layout pass goes on, up to _FAILED_BATCHES
        batches: then the first error is raised here and the pass raises the
        others in turn, and ends. A worker that died or timed out is raised here.
        None when the pass has no batch."""
        workers = max(self.num_workers, 1)
        files, handover, core, passes, kept, payload = [], None, None, None, [], None
        try:
            for _ in datasets:
                files.append([_os.memfd_create("seedloader-layout", _os.MFD_CLOEXEC)
                              for _ in range(workers)])
            nouns = noun if isinstance(noun, list) else [noun] * len(datasets)
            recorders = [_dataset.LayoutRecorder(d, fds, n)
                         for d, fds, n in zip(datasets, files, nouns)]
            if self.num_workers:
                handover = _dataset.HandOver(self.num_workers, recorders)
            options = _spawned.options_from(_spawned.options_state(self._options))
            options.prefetch, options.persistent_workers = 1, False
            options.seed = self._seed
            # The placeholder has no image to mix; mixing never moves a sample's stream.
            options.mixup_alpha = options.cutmix_alpha = 0.0
            recipes = [("python", r, [f.as_tuple() for f in _dataset.PLACEHOLDER.fields],
                        _samples.Flatten(_dataset.PLACEHOLDER), True) for r in recorders]
            recipe = recipes[0] if mixture is None else \
                ("mixture", mixture[0], recipes) + tuple(mixture[1:])
            init = _dataset.RecordingInit(recorders, self._worker_init())
            handoff = handover.serve if handover is not None else None
            if self.num_workers and self._start_method in ("spawn", "forkserver"):
                # Spawned as the pass's workers are, each keeping the recorder's
                # files and its end of the hand-over across its exec.
                payload = _spawned.Payload()
                payload.write(recipe, _spawned.options_state(options), init, "numpy",
                              plan is not None, "the dataset and worker_init_fn", handoff)
                options.worker_command = _spawned.command(payload.fd)
                options.worker_fds = [payload.fd] + sum(files, []) + \
                    handover.worker_ends() + (
                        [self._channel._fd] if self._channel is not None else [])
            core = _core.Loader(_spawned.build_engine_dataset(recipe), options, init,
                                "numpy", plan, handoff=handoff)
            first = self._pass_first

            def start(batches):
                replay = self._begin_epoch(core, first)  # 0: see _layout_pass_can
                return core, first, replay, _dataset.PLACEHOLDER, False

            passes = _core.Batches(start, self._raise_batch_error)
            read, errors = [], []
            with _dataset.generators_kept(self.num_workers == 0):
                while (not read and len(errors) < _FAILED_BATCHES) or \
                        len(read) + len(errors) < workers or (
                        sum(len(i) for _, i in read) < least
                        and len(read) + len(errors) < workers + least):
                    try:
                        kept.append(next(passes))  # kept: its worker reads no further
                    except StopIteration:
                        break
                    except Exception as e:  # noqa: B902 (the batch's own error)
                        if not _errors.is_dataset_error(e):
                            raise  # a worker died, timed out: no later batch comes
                        errors.append(e)
                        continue
                    position = passes.position
                    indices = _array.array("Q")
                    indices.frombytes(position.last_indices)
                    read.append((position.last_worker, indices.tolist()))
            if not read and errors:
                # Every batch failed: the pass raises each batch's error in turn,
                # as torch's iterator does, and ends.
                self._starting.raise_later(errors[1:])
                raise errors[0]
            if not read:
                return None  # the pass has no batch left: the first samples tell
            layout = merge(files, read)
            if handover is not None:
                handover.pids = core.release_workers()
                self._handover, handover = handover, None
            else:
                self._replayed = [r.cache for r in recorders]
            return layout
        finally:
            del kept
            if passes is not None:
                passes.close()
            if core is not None:
                core.close()
            for fd in sum(files, []):
                _os.close(fd)
            if payload is not None:
                payload.close()
            if handover is not None:
                handover.abandon()
            elif self._handover is not None:
                self._handover.forked()

    def _draw_plan(self, epoch):
        """The epoch's batches from the user's sampler or batch_sampler, drawn once
        per epoch in this process (and kept for state_dict)."""
        if self._plan is not None and self._plan[0] == epoch:
            return self._plan[1]
        # Checked once per epoch here: the engine takes uint64 indices below the
        # data set's size, and int() would truncate a float.
        size, keys = len(self.dataset), not isinstance(self.dataset, Dataset)
        if self._batch_sampler is not None:
            batches = _checks.plan(self._batch_sampler, size, "DataLoader: batch_sampler "
                                   + type(self._batch_sampler).__name__, epoch, keys)
        else:
            indices = _checks.indices(self._sampler, size, "DataLoader: sampler "
                                      + type(self._sampler).__name__, epoch,
                                      self._batch_size, keys)
            batches = _batched(indices, self._batch_size, self.drop_last)
            if isinstance(indices, _checks.Keyed):
                batches = _checks.Keyed(batches)
        self._plan = (epoch, batches)
        return batches

    def _keyed_plan(self, epoch):
        """The engine's plan over a Python dataset under a user's sampler
        (_dataset.KeyedSamples): the drawn batches, published to the workers; in a
        Keyed epoch, the items' positions in the epoch, batched alike."""
        drawn = self._draw_plan(epoch)
        if not isinstance(drawn, _checks.Keyed):
            self._channel.publish(epoch, [])  # the engine's indices are the samples'
            return drawn
        if self._skip_samples:
            raise ConfigError("DataLoader: skip() names samples %s by index, but the "
                              "sampler yields keys in epoch %d, whose samples have no "
                              "index; skip steps instead"
                              % (sorted(self._skip_samples)[:8], epoch))
        count = len(drawn.items())
        if count > len(self.dataset):
            who = self._batch_sampler if self._batch_sampler is not None else self._sampler
            raise ConfigError("DataLoader: %s yields %d keys in epoch %d; keys are read by "
                              "their position in the epoch, which must stay below the data "
                              "set's len() %d" % (type(who).__name__, count, epoch,
                                                   len(self.dataset)))
        self._channel.publish(epoch, drawn, shared=self.num_workers > 0)
        return [list(range(drawn.start(k), drawn.start(k) + len(b)))
                for k, b in enumerate(drawn)]

    def _pin(self, required):
        try:
            import torch
            available = torch.cuda.is_available()
        except ImportError:
            available = False
        if not available:
            if required and not self._warned_pinning:
                # torch's loader warns and goes on unpinned; so does this one.
                self._warned_pinning = True
                _warnings.warn("seedloader.DataLoader: pin_memory=True, but torch sees no "
                               "CUDA device: batches stay in unpinned memory",
                               stacklevel=4)
            return
        address, size = self._loader.shared_memory()
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
        # The workers go with the loader, as torch's go with their iterator, even
        # while batches are kept: those keep only their memory (the engine's region
        # lives as long as they do).
        try:
            self._close_engine()
        except Exception:  # interpreter shutdown: CUDA or the module may be gone
            pass


# torch's DataLoader refuses to change these once built (its __setattr__).
_FIXED_AFTER_INIT = ("batch_size", "batch_sampler", "sampler", "drop_last", "dataset",
                     "persistent_workers", "seed")  # and the seed: load_state_dict sets it

_CHOICES = {
    "order": {"numpy": _core.ShuffleOrder.numpy, "torch": _core.ShuffleOrder.torch,
              "shards": _core.ShuffleOrder.shards},
    "partition": {"strided": _core.Partition.strided, "elastic": _core.Partition.elastic},
    "seeding": {"worker": _core.SeedScope.worker, "sample": _core.SeedScope.sample},
    "on_bad_sample": {"raise": _core.BadSample.raise_error, "skip": _core.BadSample.skip},
}


def _loader_options(**values):
    """The engine's LoaderOptions by name; a choice outside its enum is a
    ConfigError listing the valid ones."""
    options = _core.LoaderOptions()
    for name, value in values.items():
        if name in _CHOICES:
            choices = _CHOICES[name]
            if value not in choices:
                raise ConfigError("%s must be %s, not %r" % (
                    name, " or ".join(repr(c) for c in choices), value))
            value = choices[value]
        setattr(options, name, value)
    return options


def _check_mixture_arguments(mixture, sampler, batch_sampler, unbatched, collate):
    """The history a loader over `mixture` starts with; a ConfigError for what a
    Mixture does not take."""
    if sampler is not None or batch_sampler is not None:
        raise ConfigError("DataLoader: a Mixture sets its own order; it takes no sampler "
                          "or batch_sampler")
    if unbatched:
        raise ConfigError("DataLoader: a Mixture is read in global batches; give "
                          "batch_size")
    if collate is not None:
        own = [n for n in mixture.names if isinstance(mixture.sources[n], Dataset)]
        if own:
            raise ConfigError("DataLoader: a collate_fn runs on Python data sets' samples; "
                              "the Mixture's source %r is %s, seedloader's own (its "
                              "batches are built by the engine)"
                              % (own[0], type(mixture.sources[own[0]]).__name__))
    return mixture.history()


def _moved_index(saved_sources, mixture, index):
    """Index `index` of the mixture a state was saved from ({name: {"size", ...}}
    in its order) as an index of `mixture`: the same source's sample."""
    local = index
    for name, saved in saved_sources.items():
        size = _checks.integer(saved["size"], "load_state_dict: mixture size")
        if local < size:
            if name not in mixture.names:
                raise ConfigError("load_state_dict: skipped sample %d is in source %r, "
                                  "which this Mixture does not hold" % (index, name))
            return mixture.offsets[mixture.names.index(name)] + local
        local -= size
    raise ConfigError("load_state_dict: skipped sample %d is past the saved Mixture's %d "
                      "samples" % (index, index - local))


def _loaded_mixture_history(loader, state):
    """(history, known counts) a loader over a Mixture goes on with from `state`: the
    state's history, and, when the loader's weights are not the state's last, a
    new segment from the saved step with each source's saved count (0 for a source
    new here); the counts at the saved step and at its epoch's first. A
    ConfigError for a state of another kind, a source gone or resized, or another
    samples_per_epoch."""
    saved = state.get("mixture")
    if loader._mixture_history is None:
        raise ConfigError("load_state_dict: the state is a Mixture's; this loader reads "
                          "%s" % type(loader.dataset).__name__)
    if not isinstance(saved, dict):
        raise ConfigError("load_state_dict: this loader reads a Mixture; the state has "
                          "no mixture section")
    m = loader.dataset
    what = "load_state_dict: mixture"
    if not _nested_within(saved, _MAX_STATE_DEPTH):
        raise ConfigError("%s is malformed: nested deeper than %d lists and dicts (a "
                          "Mixture's state nests 6)" % (what, _MAX_STATE_DEPTH))
    try:
        step = _checks.integer(saved["step"], what + " step")
        per_epoch = _checks.integer(saved["samples_per_epoch"], what + " samples_per_epoch")
        first = _checks.integer(saved["epoch_first_step"], what + " epoch_first_step")
        sources = {name: (_checks.integer(info["size"], what + " size"),
                          _checks.integer(info["consumed"], what + " consumed"),
                          _checks.integer(info["epoch_first_count"],
                                          what + " epoch_first_count"))
                   for name, info in saved["sources"].items()}
        # A segment's fifth element, interpolation, is absent from older states.
        history = [(_checks.integer(seg[0], what + " history"), [str(n) for n in seg[1]],
                    [(_checks.integer(s, what + " history"), [float(x) for x in w])
                     for s, w in seg[2]],
                    [_checks.integer(c, what + " history") for c in seg[3]],
                    bool(seg[4]) if len(seg) > 4 else False)
                   for seg in saved["history"]]
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise ConfigError("%s is malformed (%s: %s)" % (what, type(e).__name__,
                                                        _reprlib.repr(e.args[0]) if
                                                        isinstance(e, KeyError) else e)
                          ) from None
    if per_epoch != m.samples_per_epoch:
        raise ConfigError("load_state_dict: the state was saved with samples_per_epoch=%d, "
                          "this Mixture has %d" % (per_epoch, m.samples_per_epoch))
    for name, (size, _, _) in sources.items():
        if name not in m.names:
            raise ConfigError("load_state_dict: the state's source %r is not in this "
                              "Mixture; keep it with a weight of 0 to pause it" % name)
        now = m.sizes[m.names.index(name)]
        if size != now:
            raise ConfigError("load_state_dict: the Mixture's source %r had %d samples when "
                              "the state was saved, it has %d now" % (name, size, now))
    if not history:
        raise ConfigError("%s history is empty" % what)
    # The saved counts must be the saved history's own, from the epoch's first step:
    # at most an epoch's steps from there, once the position is one an epoch has.
    saved_names = list(sources)
    saved_order = _core.MixtureOrder(
        saved_names, [sources[n][0] for n in saved_names], history, per_epoch,
        loader._batch_size, loader.world_size, loader.rank, state["base_seed"],
        [(first, [sources[n][2] for n in saved_names])])
    try:
        saved_order.check_position(first, step)
    except ConfigError as e:
        raise ConfigError("load_state_dict: %s" % e) from None
    if first != state["epoch"] * saved_order.steps_per_epoch:
        raise ConfigError("load_state_dict: the state's mixture epoch begins at step %d, "
                          "but its epoch %d of %d steps begins at step %d"
                          % (first, state["epoch"], saved_order.steps_per_epoch,
                             state["epoch"] * saved_order.steps_per_epoch))
    at_step = saved_order.consumed_at(step)
    if at_step != [sources[n][1] for n in saved_names]:
        raise ConfigError("load_state_dict: the state's mixture counts at step %d are %s, "
                          "but its history gives %s there: the state does not belong "
                          "together" % (step, [sources[n][1] for n in saved_names], at_step))
    points = [(s, list(w)) for s, w in m.points]
    if (history[-1][1], history[-1][2], history[-1][4]) != (m.names, points,
                                                             m.interpolate):
        counts = [sources[name][1] if name in sources else 0 for name in m.names]
        if step < history[-1][0]:
            raise ConfigError("load_state_dict: the state's step %d is before its last "
                              "schedule's first, %d" % (step, history[-1][0]))
        if step == history[-1][0]:
            history.pop()
        history.append((step, list(m.names), points, counts, m.interpolate))
    # The whole history checked now, not at the next iteration.
    known = [(at, [sources[name][field] if name in sources else 0 for name in m.names])
             for at, field in ((first, 2), (step, 1))]
    _core.MixtureOrder(m.names, m.sizes, history, m.samples_per_epoch,
                       loader._batch_size, loader.world_size, loader.rank,
                       state["base_seed"], known).consumed_at(step)
    return history, known


# A Mixture's state nests 6 deep (its history's weights), a skip list 3; a crafted
# one nested far deeper would make every reading of it recurse that deep.
_MAX_STATE_DEPTH = 64


def _nested_within(value, limit):
    """Whether `value`'s lists, tuples and dicts nest at most `limit` deep (checked
    without recursion)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children = list(item.keys()) + list(item.values())
        elif isinstance(item, (list, tuple)):
            children = item
        else:
            continue
        if depth > limit:
            return False
        stack.extend((child, depth + 1) for child in children
                     if isinstance(child, (dict, list, tuple)))
    return True


def _dataset_fingerprint(dataset):
    """What a state records of the data set, so that a state is not loaded into a
    loader over another: its size and description (a C++ dataset's own, a Python
    dataset's class)."""
    if isinstance(dataset, Dataset):
        description = repr(dataset)
    else:
        kind = type(dataset)
        # A script's classes are __mp_main__'s in the processes spawn starts.
        module = "__main__" if kind.__module__ == "__mp_main__" else kind.__module__
        description = "%s.%s" % (module, kind.__qualname__)
    return {"size": len(dataset), "description": description}


# The integer fields of a state (as state_dict() writes them) and their least
# values; every one is below 2**64, the engine's uint64. batch_size is None for a
# loader with a batch_sampler or batch_size=None. Not the rank: no load reads it.
_STATE_INTEGERS = {"epoch": 0, "_num_yielded": 0, "samples": 0, "base_seed": 0,
                   "global_batch_size": 0, "world_size": 1, "batch_size": 1,
                   "num_batches": 0, "shuffle_block": 0, "canonical_nodes": 0}


def _state_skips(skip):
    """A state's "skip" as (a set of (epoch, first, end[, epochs]), a set of
    samples), each checked; a ConfigError names what is wrong."""
    what = "load_state_dict: skip"
    if not isinstance(skip, dict):
        raise ConfigError("%s must be a dict, got %s" % (what, _reprlib.repr(skip)))
    if not _nested_within(skip, _MAX_STATE_DEPTH):
        raise ConfigError("%s is malformed: nested deeper than %d lists and dicts (a "
                          "skip list nests 3)" % (what, _MAX_STATE_DEPTH))
    steps = set()
    for r in skip.get("steps", []):
        if not isinstance(r, (list, tuple)) or len(r) not in (3, 4):
            raise ConfigError("%s: steps must be [epoch, first, end] triples (or [epoch, "
                              "first, end, epochs] over several epochs), got %s"
                              % (what, _reprlib.repr(r)))
        values = tuple(_checks.integer(v, what + " steps") for v in r)
        if values[1] >= values[2] or values[3:] == (0,):
            raise ConfigError("%s: steps %r are empty" % (what, list(values)))
        # A range of one epoch is a triple, as skip() makes it.
        steps.add(values[:3] if values[3:] == (1,) else values)
    samples = {_checks.integer(i, what + " samples") for i in skip.get("samples", [])}
    return steps, samples


def _checked_state(state):
    """A copy of `state` whose integer fields are ints and whose "_finished" is a
    bool, each checked (an int or numpy integer, never a bool or a float, in
    range); the first bad one is a ConfigError naming the field and the value."""
    checked = dict(state)
    for key, low in _STATE_INTEGERS.items():
        if key in state and not (key == "batch_size" and state[key] is None):
            checked[key] = _checks.integer(state[key], "load_state_dict: " + key, low)
    dataset = state.get("dataset")
    if isinstance(dataset, dict) and "size" in dataset:
        checked["dataset"] = dict(dataset, size=_checks.integer(
            dataset["size"], "load_state_dict: dataset['size']"))
    checked["_finished"] = _checks.boolean(state.get("_finished", False),
                                           "load_state_dict: _finished")
    checked["base_seed_drawn"] = _checks.boolean(state.get("base_seed_drawn", False),
                                                 "load_state_dict: base_seed_drawn")
    return checked


def _resumed_batches(state, global_batch, num_batches, elastic):
    """The batches of the epoch a (checked) state says were consumed: its global
    sample count over the global batch size under the elastic partition, else
    _num_yielded."""
    if elastic and "samples" in state:
        samples = state["samples"]
        if samples % global_batch:
            raise ConfigError("load_state_dict: samples is %r, not a whole number of "
                              "global batches of %d" % (samples, global_batch))
        if samples // global_batch > num_batches:
            raise ConfigError("load_state_dict: samples is %d, %d global batches; this "
                              "loader has %d per epoch" % (samples, samples // global_batch,
                                                           num_batches))
        return samples // global_batch
    yielded = state["_num_yielded"]
    if yielded > num_batches:
        raise ConfigError("load_state_dict: _num_yielded is %r; this loader has %d "
                          "batches per epoch" % (yielded, num_batches))
    return yielded


def _fields_of(layout):
    """A layout's fields as the engine takes them (and as they compare)."""
    return [f.as_tuple() for f in layout.fields]


def _batched(indices, size, drop_last):
    """`indices` in batches of `size`, the last one shorter or, with drop_last, gone."""
    batches = [indices[k:k + size] for k in range(0, len(indices), size)]
    if drop_last and batches and len(batches[-1]) < size:
        batches.pop()
    return batches


def _held_slot_error(error):
    """The engine's error for a batch whose slot an earlier, still referenced batch
    holds, in this API's terms; None for any other error."""
    found = _re.match(r"DataLoader: batch (\d+) cannot be loaded: its slot is still held.*"
                     r"has (\d+) slots", str(error))
    if found is None:
        return None
    return Error("DataLoader: batch %s cannot be loaded: its slot is still held by an "
                 "earlier batch you keep a reference to, and the slots were pinned for "
                 "CUDA after the workers started, so the batch cannot be moved aside. The loader has %s slots "
                 "(prefetch_factor + 1 per worker; in all with num_workers=0): pass "
                 "pin_memory=False to keep any number of batches, keep fewer, "
                 ".clone() what you keep, or raise prefetch_factor" % found.groups())


def _epoch_number(epoch, what="epoch"):
    """`epoch` as an int the engine takes (a uint64), else a ConfigError."""
    return _checks.integer(epoch, what)


def _seed_from(generator):
    """A base seed drawn from a torch.Generator, as torch draws its loader's."""
    import torch
    return int(torch.empty((), dtype=torch.int64).random_(generator=generator).item())


def _check_torch_arguments(batch_size, shuffle, sampler, batch_sampler, num_workers,
                           collate_fn, drop_last, timeout, multiprocessing_context,
                           prefetch_factor, persistent_workers, pin_memory_device):
    """PyTorch's argument rules, as ConfigError (a ValueError, as torch raises)."""
    if batch_size is not None and (isinstance(batch_size, bool) or
                                   not isinstance(batch_size, int) or batch_size < 1):
        raise ConfigError("batch_size should be a positive integer value, but got "
                          "batch_size=%r" % (batch_size,))
    if not isinstance(num_workers, int) or num_workers < 0:
        raise ConfigError("num_workers option should be non-negative; use "
                          "num_workers=0 to disable multiprocessing")
    if timeout < 0:
        raise ConfigError("timeout option should be non-negative")
    if prefetch_factor is not None:
        # 2 with num_workers=0 is torch 1.13's default, which frameworks pass back.
        if num_workers == 0 and prefetch_factor != 2:
            raise ConfigError("prefetch_factor option could only be specified in "
                              "multiprocessing: let num_workers > 0, or set "
                              "prefetch_factor to None")
        if not isinstance(prefetch_factor, int) or prefetch_factor < 1:
            raise ConfigError("prefetch_factor must be an int >= 1, got %r"
                              % (prefetch_factor,))
    if persistent_workers and num_workers == 0:
        raise ConfigError("persistent_workers option needs num_workers > 0")
    if sampler is not None and shuffle:
        raise ConfigError("sampler option is mutually exclusive with shuffle")
    if batch_sampler is not None:
        if batch_size != 1 or shuffle or sampler is not None or drop_last:
            raise ConfigError("batch_sampler option is mutually exclusive with "
                              "batch_size, shuffle, sampler, and drop_last")
    if collate_fn is not None and not callable(collate_fn):
        raise ConfigError("collate_fn must be callable, got %r" % (collate_fn,))
    if batch_size is None and batch_sampler is None and drop_last:
        raise ConfigError("batch_size=None option disables auto-batching and is mutually "
                          "exclusive with drop_last")
    if multiprocessing_context is not None:
        _check_start_method(multiprocessing_context, num_workers)
    if pin_memory_device not in ("", "cuda"):
        raise ConfigError("pin_memory_device=%r: seedloader pins for CUDA only"
                          % (pin_memory_device,))


def _warn_if_more_workers_than_cpus(num_workers):
    """A warning, as torch's loader gives, when the workers outnumber the CPUs this
    process may run on: they then take turns, and the loader is slower, not faster."""
    try:
        cpus = len(_os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = _os.cpu_count() or 0
    if cpus and num_workers > cpus:
        _warnings.warn("seedloader.DataLoader: num_workers=%d worker processes, but this "
                       "process may use %d CPUs; more workers than CPUs take turns, and "
                       "such excessive worker creation might get DataLoader running slow "
                       "or even freeze: lower num_workers to at most %d"
                       % (num_workers, cpus, cpus), stacklevel=3)


def _torch_prefetch_default(num_workers):
    """The prefetch_factor torch's own loader shows when given none, which
    frameworks pass back to it: 2, except None without workers from torch 2.0 on
    (whose loader refuses 2 there); None without torch."""
    if not _torch_available():
        return None
    if num_workers > 0:
        return 2
    import torch
    return 2 if int(torch.__version__.split(".")[0]) < 2 else None


def _default_collate(unbatched=False):
    """torch's default_collate (default_convert for batch_size=None), the
    collate_fn torch's loader shows when given none (None without torch)."""
    try:
        from torch.utils.data import default_collate, default_convert
    except ImportError:
        return None
    return default_convert if unbatched else default_collate


def _check_start_method(context, num_workers):
    """torch's rules for multiprocessing_context (with its messages); the start
    method it names."""
    import multiprocessing
    if num_workers == 0:
        raise ConfigError("multiprocessing_context can only be used with multi-process "
                          "loading (num_workers > 0), but got num_workers=%d" % num_workers)
    if isinstance(context, str):
        methods = multiprocessing.get_all_start_methods()
        if context not in methods:
            raise ConfigError("multiprocessing_context option should specify a valid start "
                              "method in %r, but got multiprocessing_context=%r"
                              % (methods, context))
        method = context
    elif callable(getattr(context, "get_start_method", None)):
        method = context.get_start_method()
    else:
        raise TypeError("multiprocessing_context option should be a valid context object "
                        "or a string specifying the start method, but got "
                        "multiprocessing_context=%r" % (context,))
    return method


def _is_default_collate(fn):
    torch = _sys.modules.get("torch")
    if torch is None:
        return False
    collate = torch.utils.data._utils.collate
    return fn in (collate.default_collate, getattr(torch.utils.data, "default_collate", None),
                  collate.default_convert, getattr(torch.utils.data, "default_convert", None))


class _OneSample:
    """A user's collate_fn under batch_size=None: torch calls it on each sample,
    the engine on a batch of one."""

    def __init__(self, collate_fn):
        self.collate_fn = collate_fn

    def __call__(self, samples):
        return self.collate_fn(samples[0])


class _Unbatch:
    """The builder a pass uses under batch_size=None: each batch of one becomes
    its sample, as torch's default_convert gives it (layout.build_one), or for a
    C++ data set each field without its batch dimension (a view)."""

    def __init__(self, layout):
        self.layout = layout

    def build(self, fields, lengths, pad):
        if self.layout is None:
            return {name: t[0] for name, t in fields.items()}
        return self.layout.build_one(fields, lengths)
