"""The engine a DataLoader's passes run on (_core.Loader), assembled from the
loader's options and data set: a seedloader data set as it is; a Python one
with its layout (learned by the layout pass, seedloader._layout_pass) and its
recipe for spawned workers (seedloader._spawned); a Mixture's sources; a
collate_fn's batches published to the workers each epoch; a user's sampler drawn
once per epoch; the slots pinned for CUDA. Functions of the loader they are
bound to; the loader owns what they build (its _loader, closed by
_close_engine).
"""
import warnings

from seedloader import (_checks, _core, _dataset, _plan_channel, _recording, _samples,
                        _spawned)
from seedloader._core import Dataset
from seedloader._errors import ConfigError, Error


def engine(loader):
    """The engine, built on first use; a Python dataset's layout is learned here.
    A Python dataset that grew or shrank since gets a new engine (same layout),
    as PyTorch's loader takes len(dataset) afresh for each iteration."""
    if loader._loader is not None:
        if isinstance(loader.dataset, Dataset) or len(loader.dataset) == loader._built_for:
            return loader._loader
        loader._close_engine()
    try:
        return build_engine(loader)
    finally:
        if loader._handover is not None:  # the layout pass's workers, not adopted
            loader._handover.abandon()
            loader._handover = None


def build_engine(loader):
    if not isinstance(loader.dataset, Dataset):
        loader._built_for = len(loader.dataset)
    loader._channel = None
    if loader._collate is not None:
        # One item per batch, in the order the published batches give.
        options = loader._engine_options(batch_size=1, shuffle=False, drop_last=False,
                                         partition="strided")
        dataset, plan = collated_dataset(loader, options)
    elif loader._mixture_history is not None:
        options = loader._engine_options()
        dataset, plan = mixture_dataset(loader, options), None
    else:
        dataset, plan, options = sample_dataset(loader)
    worker_init = worker_start(loader)
    spawned = (loader._start_method in ("spawn", "forkserver") and loader.num_workers > 0
               and loader._recipe is not None)
    if (loader._start_method in ("spawn", "forkserver") and loader.num_workers > 0 and
            loader._recipe is None and loader._mixture_history is not None and
            not all(isinstance(d, Dataset) for d in loader.dataset.sources.values())):
        # The caller's line: above build_engine, engine and _start.
        warnings.warn("seedloader.DataLoader: multiprocessing_context=%r, but this "
                      "Mixture holds seedloader's own data sets, whose workers are "
                      "forked: its Python sources are read in forked workers too"
                      % loader._start_method, stacklevel=4)
    if spawned:
        # Written before the engine exists: a recipe that does not pickle
        # leaves no engine behind whose workers would read an empty one.
        payload = _spawned.Payload()
        spawn_args = (loader._recipe, _spawned.options_state(options),
                      worker_init, loader._format, plan is not None,
                      "the dataset, its layout and worker_init_fn")
        try:
            payload.write(*spawn_args)
        except BaseException:
            payload.close()
            raise
        loader._payload, loader._spawn_args = payload, spawn_args
        options.worker_command = _spawned.command(payload.fd)
        options.worker_fds = [payload.fd] + (
            [loader._channel._fd] if loader._channel is not None else [])
    adopt, handover = None, loader._handover
    if handover is not None and loader._recipe is not None and handover.ready(
            loader._recipe, _spawned.options_state(options), loader._format,
            plan is not None):
        adopt = (handover.pids, handover.adopt)  # the layout pass's workers go on
    loader._loader = _core.Loader(dataset, options, worker_init, loader._format, plan,
                                  adopt=adopt)
    if adopt is not None:
        loader._handover = None  # the engine owns them now
    loader._skips_changed = False  # built with the skips declared now
    if loader._pin_request is not False:
        pin(loader, required=bool(loader._pin_request))
    return loader._loader


def sample_dataset(loader):
    """(the engine's dataset, its batch plan or None, its options): a C++ dataset
    as it is, a Python one with its layout; a user's sampler drawn, its largest
    batch the engine's batch size."""
    dataset, plan = loader.dataset, None
    loader._recipe = None  # seedloader's own data set: its workers are forked
    capacity = loader._batch_size
    if loader._sampler is not None or loader._batch_sampler is not None:
        plan = loader._draw_plan
        drawn = draw_plan(loader, loader._epoch)
        capacity = max([getattr(loader._batch_sampler, "batch_size", None) or 1] +
                       [len(b) for b in drawn] + [loader._batch_size or 1])
    options = loader._engine_options(batch_size=capacity)
    if not isinstance(dataset, Dataset):
        if plan is not None:  # its items may be keys, in any epoch
            loader._channel = _plan_channel.PlanChannel()
            dataset, plan = _dataset.KeyedSamples(dataset, loader._channel), loader._keyed_plan
        if loader.num_workers == 0 and loader.seeding == "sample":
            dataset = _dataset.SampleSeeded(dataset)
        if loader._layout is None:
            loader._layout = loader._learn_layout(engine_dataset=dataset, plan=plan,
                                                  options=options)
        loader._recipe = _spawned.PythonRecipe.of(dataset, loader._layout,
                                                  _dataset.takes_rng(dataset))
        dataset = _spawned.build_engine_dataset(loader._recipe, take_replay(loader))
    return dataset, plan, options


def take_replay(loader):
    """With num_workers=0, what the layout pass read in this process, to be served
    again (once): one Replay per Python data set of the engine's recipe."""
    replays = [_recording.Replay(c) for c in loader._replayed] if loader._replayed else None
    loader._replayed = None
    return replays


def mixture_dataset(loader, options):
    """The engine's MixtureDataset over the sources: seedloader's own as they are,
    Python ones each with its layout (learned, or declared by `fields`), which
    must be one; the batches are built from the first's. Beside seedloader's own
    sources a Python source's samples are dicts of their fields: its layout is
    theirs, and the batches are built as theirs are. `options`: the engine's,
    which a layout pass runs with."""
    m = loader.dataset
    native = next((m.sources[n] for n in m.names if isinstance(m.sources[n], Dataset)),
                  None)
    python = [n for n in m.names if not isinstance(m.sources[n], Dataset)]
    read = {n: _dataset.SampleSeeded(m.sources[n])
            if loader.num_workers == 0 and loader.seeding == "sample" else m.sources[n]
            for n in python}
    layouts = {}
    for name in python:
        declared = getattr(m.sources[name], "fields", None)
        if native is not None:
            declared = {f[0]: (f[2], f[1]) for f in native.fields}
        if isinstance(declared, dict):
            layouts[name] = _samples.Layout.declared(declared)
    if native is None and len(layouts) < len(python):
        if loader._layout is None:
            # Learned once, each source's by the layout pass from its samples in
            # the first batches, or by the probe where it has none there.
            learned = loader._learn_mixture_layout(read, options)
            for name in python:
                if name not in layouts:
                    layouts[name] = learned.get(name) or \
                        loader._learn_layout(m.sources[name])
        for name in python:
            layouts.setdefault(name, loader._layout)  # checked when it was learned
    if native is None:  # else the engine checks them against the native's
        first = python[0]
        loader._layout = layouts[first]
        for name in python:
            if _fields_of(layouts[name]) != _fields_of(loader._layout):
                raise ConfigError(
                    "Mixture: the sources' samples must have one layout; %r gives "
                    "%s, %r gives %s" % (
                        first, _recording.describe_fields(loader._layout), name,
                        _recording.describe_fields(layouts[name])))
    recipes = {name: _spawned.PythonRecipe.of(read[name], layouts[name],
                                              _dataset.takes_rng(read[name]))
               for name in python}
    if len(python) == len(m.names):
        loader._recipe = _spawned.MixtureRecipe(
            m.names, [recipes[n] for n in m.names], loader._mixture_history,
            m.samples_per_epoch, loader._mixture_known)
        return _spawned.build_engine_dataset(loader._recipe, take_replay(loader))
    loader._recipe = None  # seedloader's own sources: the workers are forked
    return _core.MixtureDataset(
        m.names, [_spawned.build_engine_dataset(recipes[n]) if n in recipes
                  else m.sources[n] for n in m.names],
        loader._mixture_history, m.samples_per_epoch, loader._mixture_known)


def collated_dataset(loader, options):
    """(the engine's dataset, its batch plan) under a collate_fn: one item per
    batch (seedloader._dataset.CollatedBatches), the epoch's batches drawn here
    and published to the workers; `options`: the engine's, which a layout pass
    runs with."""
    loader._channel = _plan_channel.PlanChannel()
    samples = (_dataset.MixtureSamples(loader.dataset) if loader._mixture_history is not None
               else _dataset.Samples(loader.dataset))
    batches = _dataset.CollatedBatches(
        samples, loader._collate, loader._channel, loader.seed,
        loader.seeding == "sample", max(len(loader), 1))
    loader._collated_size = len(batches)
    publish(loader, loader._epoch)
    if loader._layout is None:
        budget = loader._variable[1]
        loader._layout = loader._learn_layout(
            batches, lambda outputs: _samples.Collated.learn(outputs, budget), 2,
            batches, loader._publish,
            lambda files, read: _recording.collated_of_batches(files[0], read, budget),
            options)
    loader._recipe = _spawned.PythonRecipe(
        batches, [f.as_tuple() for f in loader._layout.fields], loader._layout, True)
    dataset = _spawned.build_engine_dataset(loader._recipe, take_replay(loader))
    return dataset, loader._publish


def worker_start(loader):
    """What each forked worker runs first: torch's get_worker_info() set for a
    Python dataset, then the user's worker_init_fn."""
    user, workers, dataset = loader._worker_init_fn, loader.num_workers, loader.dataset
    if isinstance(dataset, Dataset) and user is None:
        return None  # the workers run no Python at all
    return _dataset.WorkerInit(user, workers, dataset)


def publish(loader, epoch):
    """The engine's plan under a collate_fn: the epoch's batches go to the
    workers through the channel, and the engine runs batch k as item k."""
    streams = None
    if loader._sampler is not None or loader._batch_sampler is not None:
        drawn = draw_plan(loader, epoch)
    elif loader._mixture_history is not None:  # whole steps, each sample's source epoch
        order, epochs = loader._mixture_order().order(epoch)
        drawn = _batched(order.tolist(), loader._batch_size, False)
        streams = _batched(epochs.tolist(), loader._batch_size, False)
    else:
        order = _core.epoch_order(loader._engine_options(), len(loader.dataset), epoch)
        drawn = _batched(order.tolist(), loader._batch_size, loader.drop_last)
    bound = loader._collated_size
    if len(drawn) > bound:
        raise ConfigError("epoch %d has %d batches; this loader with a collate_fn "
                          "was built for at most %d (len(loader) when it started)"
                          % (epoch, len(drawn), bound))
    loader._channel.publish(epoch, drawn, streams, shared=loader.num_workers > 0)
    loader._collated = (epoch, drawn)
    return [[k] for k in range(len(drawn))]


def draw_plan(loader, epoch):
    """The epoch's batches from the user's sampler or batch_sampler, drawn once
    per epoch in this process (and kept for state_dict)."""
    if loader._plan is not None and loader._plan[0] == epoch:
        return loader._plan[1]
    # Checked once per epoch here: the engine takes uint64 indices below the
    # data set's size, and int() would truncate a float.
    size, keys = len(loader.dataset), not isinstance(loader.dataset, Dataset)
    if loader._batch_sampler is not None:
        batches = _checks.plan(loader._batch_sampler, size, "DataLoader: batch_sampler "
                               + type(loader._batch_sampler).__name__, epoch, keys)
    else:
        indices = _checks.indices(loader._sampler, size, "DataLoader: sampler "
                                  + type(loader._sampler).__name__, epoch,
                                  loader._batch_size, keys)
        batches = _batched(indices, loader._batch_size, loader.drop_last)
        if isinstance(indices, _checks.Keyed):
            batches = _checks.Keyed(batches)
    loader._plan = (epoch, batches)
    return batches


def keyed_plan(loader, epoch):
    """The engine's plan over a Python dataset under a user's sampler
    (_dataset.KeyedSamples): the drawn batches, published to the workers; in a
    Keyed epoch, the items' positions in the epoch, batched alike."""
    drawn = draw_plan(loader, epoch)
    if not isinstance(drawn, _checks.Keyed):
        loader._channel.publish(epoch, [])  # the engine's indices are the samples'
        return drawn
    if loader._skip_samples:
        raise ConfigError("DataLoader: skip() names samples %s by index, but the "
                          "sampler yields keys in epoch %d, whose samples have no "
                          "index; skip steps instead"
                          % (sorted(loader._skip_samples)[:8], epoch))
    count = len(drawn.items())
    if count > len(loader.dataset):
        who = loader._batch_sampler if loader._batch_sampler is not None else loader._sampler
        raise ConfigError("DataLoader: %s yields %d keys in epoch %d; keys are read by "
                          "their position in the epoch, which must stay below the data "
                          "set's len() %d" % (type(who).__name__, count, epoch,
                                              len(loader.dataset)))
    loader._channel.publish(epoch, drawn, shared=loader.num_workers > 0)
    return [list(range(drawn.start(k), drawn.start(k) + len(b)))
            for k, b in enumerate(drawn)]


def pin(loader, required):
    try:
        import torch
        available = torch.cuda.is_available()
    except ImportError:
        available = False
    if not available:
        if required and not loader._warned_pinning:
            # torch's loader warns and goes on unpinned; so does this one.
            loader._warned_pinning = True
            # The caller's line: above pin, build_engine, engine and __init__ or
            # _start (the pass's next() is no Python frame).
            warnings.warn("seedloader.DataLoader: pin_memory=True, but torch sees no "
                          "CUDA device: batches stay in unpinned memory",
                          stacklevel=5)
        return
    address, size = loader._loader.shared_memory()
    rc = torch.cuda.cudart().cudaHostRegister(address, size, 0)
    if int(rc) != 0:
        raise Error("cudaHostRegister of the %d-byte shared region failed (%s)"
                    % (size, rc))
    loader._pinned = address


def unpin(loader):
    if loader._pinned is not None:
        import torch
        torch.cuda.cudart().cudaHostUnregister(loader._pinned)
        loader._pinned = None


def _fields_of(layout):
    """A layout's fields as the engine takes them (and as they compare)."""
    return [f.as_tuple() for f in layout.fields]


def _batched(indices, size, drop_last):
    """`indices` in batches of `size`, the last one shorter or, with drop_last, gone."""
    batches = [indices[k:k + size] for k in range(0, len(indices), size)]
    if drop_last and batches and len(batches[-1]) < size:
        batches.pop()
    return batches
