"""seedloader.DataLoader: torch.utils.data.DataLoader's arguments over
seedloader's engine. This module holds the loader's arguments as given, its
placement (rank, world size, nodes) and the lifecycle of its passes (which epoch
and batch a pass starts at, the seed the ranks agree on, the engine it runs on);
the other parts are modules of functions bound to the class: its state
(seedloader._state), ledger and skips (seedloader._ledger), engine assembly
(seedloader._assembly) and the layout pass (seedloader._layout_pass).
"""
import array
import inspect
import warnings

from seedloader import (_agreement, _arguments, _assembly, _checks, _compat, _core, _dataset,
                        _errors, _layout_pass, _ledger, _placement, _remote, _state, _streams)
from seedloader._core import Dataset
from seedloader._errors import ConfigError, Error, WorkerError
from seedloader._mixture import Mixture


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
    remote: a seedloader.ray.Fleet whose actors make the batches on a Ray
      cluster (docs/fleet.md); the batches are those of the same loader
      without it, bit for bit. Needs seeding="sample" and the built-in order.
      prefetch_factor then bounds the batches in flight per actor worker
      (each Ray call carries half of them). stats() tells what the loader did
      (with or without a fleet).
    on_duplicate_stream: for an IterableDataset (a stream, seedloader._streams:
      torch's semantics, each worker iterating its own replica), what to do when
      two workers or ranks start with the same samples: "error" (default: a
      DuplicateStreamError before the first batch), "warn" or "off".
    stream_resume: how a stream's workers resume a saved position: "state"
      (default: the replica's own state_dict()/load_state_dict() where it has
      them, else replay) or "replay" (read again from the epoch's start and
      dropped up to the position: exact for any deterministic stream, at the
      cost of reading it again).

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

    def __new__(cls, *args, **kwargs):
        """A loader over an IterableDataset is a StreamLoader (seedloader._streams);
        a subclass's, a class of the subclass over StreamLoader."""
        if not issubclass(cls, StreamLoader) and \
                _dataset.is_stream(args[0] if args else kwargs.get("dataset")):
            cls = StreamLoader if cls is DataLoader else _stream_class(cls)
        return super().__new__(cls)

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None,
                 batch_sampler=None, num_workers=0, collate_fn=None, pin_memory=None,
                 drop_last=False, timeout=0, worker_init_fn=None,
                 multiprocessing_context=None, generator=None, *, prefetch_factor=None,
                 persistent_workers=False, pin_memory_device="", in_order=True,
                 seed=None, seeding="worker", on_bad_sample="raise", rank=None,
                 world_size=None, format=None, order="numpy", shuffle_block=0,
                 partition="strided", canonical_nodes=None, nodes=None, mixup_alpha=0.0,
                 cutmix_alpha=0.0, cutmix_prob=0.5, num_classes=None,
                 variable_fields=(), variable_bytes=65536, pad_variable=False,
                 remote=None, on_duplicate_stream="error", stream_resume="state"):
        # The arguments as given: what a pickled loader is rebuilt from.
        config = {k: v for k, v in locals().items() if k not in ("self", "__class__")}
        _arguments.check_torch_arguments(
            batch_size, shuffle, sampler, batch_sampler, num_workers, collate_fn, drop_last,
            timeout, multiprocessing_context, prefetch_factor, persistent_workers,
            pin_memory_device, remote)
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
        _arguments.check_placement(rank, world_size)
        # Given ones are kept; the others are taken when each iteration starts.
        self._given_placement = (rank, world_size)
        rank, world_size, _ = self._placement()
        if format is None:
            format = "torch" if _arguments.torch_available() else "numpy"
        if format not in ("torch", "numpy"):
            raise ConfigError("format must be 'torch' or 'numpy', not %r" % (format,))
        seed = _arguments.base_seed(seed, generator)
        if not isinstance(dataset, Dataset):
            _dataset.check_map_style(dataset)
        _arguments.check_stream_options(on_duplicate_stream, stream_resume)
        _arguments.warn_if_more_workers_than_cpus(num_workers)
        self.dataset = dataset
        self.batch_size = batch_size
        self._sampler, self._batch_sampler = sampler, batch_sampler  # the user's
        self.num_workers = num_workers
        self.drop_last = drop_last
        self.timeout = timeout
        self.generator = generator
        # torch's attributes, with torch's kinds of values (frameworks read them).
        self.prefetch_factor = prefetch_factor if prefetch_factor is not None else \
            _arguments.torch_prefetch_default(num_workers)
        self.persistent_workers = persistent_workers
        self.pin_memory = bool(pin_memory)
        self.pin_memory_device = pin_memory_device
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        # "spawn" and "forkserver" start workers that run Python as fresh
        # interpreters (seedloader._spawned); the others are forked.
        self._start_method = ("fork" if multiprocessing_context is None else
                              _arguments.check_start_method(multiprocessing_context, num_workers))
        self._payload = None  # a spawned worker's recipe (_spawned.Payload)
        self._spawn_args = None
        self._recipe = None  # how the engine's data set was built (_spawned)
        self.in_order = in_order
        self.collate_fn = collate_fn if collate_fn is not None else _arguments.default_collate(
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
        self._collate = None if collate_fn is None or _arguments.is_default_collate(collate_fn) \
            else collate_fn
        if self._collate is not None and self._unbatched:
            self._collate = _arguments.OneSample(self._collate)
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
            self._mixture_history = _arguments.check_mixture_arguments(
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
        # The base seed every stream derives from, kept here alone (a DrawnSeed
        # until the ranks agree on it). An attribute, not a property: a framework
        # that rebuilds a loader from vars() and the __init__ signature must get
        # the same seed on every rank.
        self.seed = seed
        del config["seed"]  # a pickle takes self.seed, drawn or agreed
        config.update(generator=None)
        self._config = config
        self._skip_steps, self._skip_samples = set(), set()  # declared with skip()
        self._canonical_fixed = False  # by the first epoch, or a state loaded
        if self._canonical_default:
            self._set_canonical_nodes(_core.default_canonical_nodes(self._engine_options()))
        self._worker_init_fn, self._format = worker_init_fn, format
        self._pin_request = pin_memory if pin_memory is not None else (
            None if format == "torch" else False)
        self._loader = None      # the engine (_core.Loader), built when a pass starts
        self._layout = None      # a Python dataset's sample tree (seedloader._samples)
        self._built_for = None   # len(dataset) when the engine was built
        self._plan = None        # (epoch, [[index]]) drawn from sampler / batch_sampler
        self._epoch = 0
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
            _core.validate(self._engine_options(), len(dataset))
        self.sampler, self.batch_sampler = _compat.samplers(self)
        # A fleet that makes the batches elsewhere (seedloader.ray.Fleet), or None.
        self._remote = _remote.check_remote(self, remote)
        self._remote_recipe = None  # (key, the recipe's object ref) sent to the fleet
        self._pass_end = None    # a pass that ends before the epoch does: its end
        self._initialized = True

    def __len__(self):
        if self._mixture_history is not None:
            self._place()
            return self._mixture_order().steps_per_epoch
        if self._batch_sampler is not None:
            return len(self._batch_sampler)
        if self._sampler is not None:
            return _core.batches_per_epoch(len(self._sampler), self._batch_size,
                                           self.drop_last)
        self._place()
        return _core.epoch_batches(self._engine_options(), len(self.dataset))

    def __setattr__(self, name, value):
        # torch's rule: what decides the batches is fixed once the loader exists.
        if name in _arguments.FIXED_AFTER_INIT and self.__dict__.get("_initialized", False):
            raise ValueError("%s attribute should not be set after %s is initialized"
                             % (name, type(self).__name__))
        super().__setattr__(name, value)

    def __getstate__(self):
        """A pickled loader is its configuration and position: unpickled, it is a new
        loader (no workers yet) with the same arguments, the same base seed on every
        copy, and state_dict() loaded, as torch.multiprocessing.spawn needs."""
        return {"config": dict(self._config, seed=self.seed), "state": self.state_dict()}

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
        indices = array.array("Q", raw).tolist()
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
        epoch = _arguments.epoch_number(epoch)
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
        if self._remote is not None:  # made by a fleet's actors (seedloader._remote)
            batches = _remote.RemotePass(self)
        else:  # a pass that runs in C++ per batch (seedloader._core.Batches says how)
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
            warnings.warn(
                "seedloader.DataLoader: %d samples over %d ranks pad %d ranks' last "
                "batches of %d; accelerate's gather_for_metrics drops padding only from "
                "the end of the gathered batch, so it keeps these duplicates. For "
                "evaluation use partition='elastic' (with seeding='sample'), whose "
                "padding comes last" % (n, ranks, padded, last), stacklevel=2)
        return -1

    def _start(self, batches):
        """The first next() of pass `batches`: takes the rank and world size, claims
        its epoch (the resume point, else the next epoch once one has started) and
        readies the engine; returns its _core.PassStart, or None when nothing is
        left of the epoch. An older pass is replaced either way."""
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
        first = self._claim_epoch()
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
            layout = _arguments.Unbatch(layout)
        return _core.PassStart(core, first, replay, layout, self.pad_variable)

    def _claim_epoch(self):
        """Takes the rank and world size and the seed the ranks agree on, and claims
        the pass's epoch: the resume point, else the next epoch once one has
        started; returns the batch the pass starts at."""
        self._agree_seed(self._place(announce=True))
        self._canonical_fixed = True  # C is the run's from its first epoch on
        if self._resume is not None:
            self._epoch, first = self._resume
        else:
            if self._epoch_used:
                self._epoch = _arguments.epoch_number(self._epoch + 1, "the next epoch")
            first = 0
        self._resume, self._done_epoch = None, None
        self._epoch_used = True
        self._pass = None
        return first

    def _agree_seed(self, source):
        """A drawn seed becomes rank 0's on every rank (seedloader._agreement) when
        this pass runs over several; the engine is rebuilt if it changed."""
        seed = _agreement.agreed_seed(self.seed, self.rank, self.world_size, source,
                                      self._order_depends_on_seed())
        if seed is not self.seed:
            self._set_seed(seed)

    def _set_seed(self, seed):
        """Makes `seed` the base seed (an agreed one, a loaded state's); an engine
        built for another is rebuilt, and pinned again, when the next pass starts."""
        if seed != self.seed:
            self._close_engine()
        self.__dict__["seed"] = seed  # the loader's own change: past __setattr__'s rule

    def _order_depends_on_seed(self):
        """Whether the epoch's order is drawn from the base seed (not a user's
        sampler's, not sequential)."""
        if self._mixture_history is not None:
            return True
        return self._shuffle and self._sampler is None and self._batch_sampler is None

    def _begin_epoch(self, core, first):
        """Begins this epoch on `core` from batch `first`; returns how many batches
        the pass loads and drops before it delivers one."""
        if (first or self._pass_end is not None) and self.seeding == "sample":
            # The batches before `first` (and from a part's end on) are not loaded.
            core.resume(self._epoch, first, self._pass_end)
            return 0
        core.set_epoch(self._epoch)
        return first  # worker streams must advance as they did: load, discard

    def _placement(self):
        """(rank, world size, source) now: the given ones, the others from
        distributed_context(). Given ones that a torch.distributed process group
        contradicts are a ConfigError: never a silent single-rank epoch."""
        given_rank, given_size = self._given_placement
        rank, size, source = _placement.distributed_context()
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
        if announce:
            _placement.announce(rank, size, source)
        if (rank, size) == (self.rank, self.world_size):
            return source
        if not 0 <= rank < size:
            raise ConfigError("rank %d is not in [0, world_size %d)" % (rank, size))
        self._close_engine()
        self.rank, self.world_size = rank, size
        if self._canonical_default and not self._canonical_fixed:
            self._set_canonical_nodes(_core.default_canonical_nodes(self._engine_options()))
        return source

    def _node_count(self, world_size):
        return _placement.node_count(world_size) if self._nodes is None else self._nodes

    def _set_canonical_nodes(self, parts):
        if parts != self.canonical_nodes and self.__dict__.get("_loader") is not None:
            self._close_engine()  # rebuilt with the new split
        self.canonical_nodes = parts

    def _raise_batch_error(self, batches):
        """Raises the error the pass `batches` met, in this API's terms: a held slot
        as what to do about it; a dataset's exception as a WorkerError that is also
        of that exception's type, and with num_workers=0 chained to the exception
        itself and its traceback (the binding sets it as the error's __cause__)."""
        try:
            batches.rethrow()
        except Error as e:
            held = _errors.held_slot_error(e)
            if held is not None:
                raise held from None
            own = _errors.as_dataset_error(e) if isinstance(e, WorkerError) else None
            if own is not None:
                raise own from e.__cause__
            raise

    def _mixture_order(self):
        """The Mixture's order for this rank (_core.MixtureOrder), kept while the
        history, placement, batch size and seed stay."""
        if self.world_size > 1 and self.partition != "elastic":
            raise ConfigError("DataLoader: a Mixture over %d ranks needs "
                              "partition='elastic' (its global batches are composed "
                              "whole), not %r" % (self.world_size, self.partition))
        m = self.dataset
        key = (self._mixture_history, self._mixture_known, self.rank, self.world_size,
               self._batch_size, self.seed)
        if self._mixture_cache is None or self._mixture_cache[0] != key:
            self._mixture_cache = (key, _core.MixtureOrder(
                m.names, m.sizes, self._mixture_history, m.samples_per_epoch,
                self._batch_size, self.world_size, self.rank, self.seed,
                self._mixture_known))
        return self._mixture_cache[1]

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

    def _epoch_order(self):
        """This rank's sample order in the current epoch under the built-in samplers
        (a Mixture's own)."""
        self._place()
        if self._mixture_history is not None:
            return self._mixture_order().order(self._epoch)[0]
        return _core.epoch_order(self._engine_options(), len(self.dataset), self._epoch)

    def _engine_options(self, **overrides):
        """The engine's LoaderOptions, derived afresh from the arguments as given and
        what the loader holds now (placement, seed, canonical nodes, skips), with
        `overrides` by name (a collate_fn's engine runs whole batches as items)."""
        c = self._config
        values = dict(
            num_workers=self.num_workers,
            # One slot per worker more than prefetch_factor: the batch the loop
            # variable still holds while the next is fetched.
            prefetch=(2 if c["prefetch_factor"] is None else c["prefetch_factor"]) + 1,
            shuffle=self._shuffle, order=self.order, shuffle_block=self.shuffle_block,
            seed=self.seed, drop_last=self.drop_last,
            persistent_workers=self.persistent_workers, rank=self.rank,
            world_size=self.world_size, partition=self.partition, seeding=self.seeding,
            canonical_nodes=self.canonical_nodes, nodes=self._node_count(self.world_size),
            on_bad_sample=c["on_bad_sample"], timeout=float(self.timeout),
            mixup_alpha=float(c["mixup_alpha"]), cutmix_alpha=float(c["cutmix_alpha"]),
            cutmix_prob=float(c["cutmix_prob"]),
            num_classes=0 if c["num_classes"] is None else int(c["num_classes"]),
            batch_size=self._batch_size or 1, skip_steps=sorted(self._skip_steps),
            skip_samples=sorted(self._skip_samples))
        values.update(overrides)
        return _arguments.loader_options(**values)

    # The loader's other parts, each a module of functions of the loader.
    state_dict = _state.state_dict
    load_state_dict = _state.load_state_dict
    _consumed = _state.consumed
    _mixture_state = _state.mixture_state
    ledger = _ledger.ledger
    skip = _ledger.skip
    _sample_index = _ledger.sample_index
    _set_skips = _ledger.set_skips
    _engine = _assembly.engine
    _build_engine = _assembly.build_engine
    _sample_dataset = _assembly.sample_dataset
    _take_replay = _assembly.take_replay
    _mixture_dataset = _assembly.mixture_dataset
    _collated_dataset = _assembly.collated_dataset
    _worker_init = _assembly.worker_start
    _publish = _assembly.publish
    _draw_plan = _assembly.draw_plan
    _keyed_plan = _assembly.keyed_plan
    _pin = _assembly.pin
    _unpin = _assembly.unpin
    _learn_layout = _layout_pass.learn_layout
    _learn_mixture_layout = _layout_pass.learn_mixture_layout
    _layout_pass_can = _layout_pass.layout_pass_can
    _learn_from_batches = _layout_pass.learn_from_batches
    stats = _remote.stats

    def __del__(self):
        # The workers go with the loader, as torch's go with their iterator, even
        # while batches are kept: those keep only their memory (the engine's region
        # lives as long as they do).
        try:
            self._close_engine()
        except Exception:  # interpreter shutdown: CUDA or the module may be gone
            pass


class StreamLoader(DataLoader):
    """seedloader.DataLoader over a torch IterableDataset, as torch's loader reads
    one (DataLoader.__new__ makes it): seedloader._streams."""

    def __init__(self, *args, **kwargs):
        _streams.init(self, _SIGNATURE, *args, **kwargs)

    __len__ = _streams.length
    __iter__ = _streams.new_pass
    set_epoch = _streams.set_epoch
    worker_pids = _streams.worker_pids
    stats = _streams.stats
    skip = _streams.skip
    ledger = _streams.ledger
    state_dict = _streams.state_dict
    load_state_dict = _streams.load_state_dict
    _close_engine = _streams.close_engine


_SIGNATURE = inspect.signature(DataLoader.__init__)
_STREAM_CLASSES: dict = {}  # a subclass of DataLoader -> the same over StreamLoader


def _stream_class(cls):
    """`cls` (a subclass of DataLoader) over a stream: its own methods first, then
    StreamLoader's."""
    if cls not in _STREAM_CLASSES:
        _STREAM_CLASSES[cls] = type(cls.__name__, (cls, StreamLoader), {
            "__module__": cls.__module__, "__qualname__": cls.__qualname__})
    return _STREAM_CLASSES[cls]
