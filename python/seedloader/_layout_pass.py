"""The layout of a Python data set's samples, learned when the first pass
starts: by the layout pass (the pass's first batches read in the pass's own
workers through recorders, the workers then handed over to the pass), else by a
probe (seedloader._probe). Functions of the loader they are bound to.
"""
import array
import dataclasses
import itertools
import os

from seedloader import _core, _dataset, _errors, _probe, _recording, _samples, _spawned
from seedloader._errors import ConfigError


# How many failed batches in a row the layout pass reads on, looking for a sample
# to learn the layout from, before the pass raises their errors in turn and ends.
_FAILED_BATCHES = 64


def learn_mixture_layout(loader, sources, options):
    """{name: layout} of a Mixture's Python sources drawn in the layout pass's
    first batches (`sources`: {name: the data set its engine reads}; the
    Mixture has no other; `options`: the engine's); empty when the pass cannot
    run, or has no batch."""
    m = loader.dataset
    if len(m) == 0 or not layout_pass_can(loader):
        return {}
    paths, budget = loader._variable
    names = list(sources)
    return learn_from_batches(
        loader, options, [sources[n] for n in names], None, _dataset.PROBE_SAMPLES,
        lambda files, read: _recording.layout_of_mixture_batches(
            files, read, m.locate, names, paths, budget),
        _spawned.MixtureRecipe(m.names, [], loader._mixture_history, m.samples_per_epoch,
                               loader._mixture_known),
        ["source %r sample" % n for n in names]) or {}


def learn_layout(loader, dataset=None, learn=None, count=_dataset.PROBE_SAMPLES,
                 engine_dataset=None, plan=None, merge=None, options=None):
    """The layout of `dataset`'s items (the dataset's samples by default) from
    learn([(index, item)]), on the first `count` items; or, where
    _learn_from_batches can, from the pass's first batches (at least `count`
    items) of `engine_dataset` with the engine's `plan` and `options`,
    merge(memory files, batches read) making the layout of what their
    recorders wrote (by default the samples', _recording.layout_of_batches)."""
    paths, budget = loader._variable
    unbatched = loader._unbatched and loader._collate is None
    samples = dataset is None
    if samples:
        dataset = loader.dataset
        declared = getattr(dataset, "fields", None)
        if declared is not None and isinstance(declared, dict):
            return _samples.Layout.declared(declared)
    if engine_dataset is not None and len(dataset) > 0 and layout_pass_can(loader):
        if merge is None:
            merge = lambda files, read: _recording.layout_of_batches(  # noqa: E731
                files[0], read, paths, budget, unbatched)
        layout = learn_from_batches(loader, options, [engine_dataset], plan, count, merge,
                                    noun="sample" if samples else "batch")
        if layout is not None:
            return layout
    if samples and loader._plan is not None and loader._plan[0] == loader._epoch and \
            any(loader._plan[1]):
        # The probe reads the sampler's first items, indices or keys.
        dataset = _dataset.Items(dataset, list(
            itertools.islice(itertools.chain.from_iterable(loader._plan[1]), count)))
    if len(dataset) == 0:
        raise ConfigError("%s is empty" % type(dataset).__name__)
    if learn is None:
        learn = lambda samples: _samples.Layout.learn(  # noqa: E731
            samples, paths, budget, unbatched)
    with_rng = _dataset.takes_rng(dataset)
    if loader.num_workers > 0:
        return _probe.learn_in_child(dataset, with_rng, loader.seed, loader._epoch,
                                     learn, loader.timeout, count)
    return _probe.learn_in_process(dataset, with_rng, loader.seed, loader._epoch, learn,
                                   count)


def layout_pass_can(loader):
    """Whether the layout pass can learn this pass's layout: not when it resumes
    under worker seeding, whose batches before the resume point are loaded and
    dropped (the workers would keep every sample of them for the replay)."""
    return loader._pass_first == 0 or loader.seeding == "sample"


def learn_from_batches(loader, options, datasets, plan, least, merge, mixture=None,
                       noun="sample"):
    """The layout of Python data sets' samples (`datasets`: the engine's one, or
    the sources of `mixture`, a _spawned.MixtureRecipe whose sources are the
    recorders'), learned by the layout pass: an engine with the pass's engine's
    `options` (MixUp and CutMix aside), plan and
    worker_init, its batches of a one-byte placeholder, runs the pass's first
    batches (every worker's first, and at least `least` items), each
    worker reading its batch as it will in the pass itself (its worker_init_fn
    run, get_worker_info() set, its streams), and the recorders (one per data
    set) each worker reads through say what the samples are made of
    (seedloader._recording.LayoutRecorder, whose messages call an item `noun`,
    or per data set noun[i]; merge(their files, per data set, and the batches
    read) gives the layout). Then the pass's own engine starts from the same
    batch, on the same workers, handed over (_recording.HandOver; num_workers=0: in this
    process), and each serves the samples it read already from what it
    recorded (_recording.Replay). A batch that failed fails in its turn. While
    every batch has failed the layout pass goes on, up to _FAILED_BATCHES
    batches: then the first error is raised here and the pass raises the
    others in turn, and ends. A worker that died or timed out is raised here.
    None when the pass has no batch."""
    workers = max(loader.num_workers, 1)
    files, handover, core, passes, kept, payload = [], None, None, None, [], None
    try:
        for _ in datasets:
            files.append([os.memfd_create("seedloader-layout", os.MFD_CLOEXEC)
                          for _ in range(workers)])
        nouns = noun if isinstance(noun, list) else [noun] * len(datasets)
        recorders = [_recording.LayoutRecorder(d, fds, n)
                     for d, fds, n in zip(datasets, files, nouns)]
        if loader.num_workers:
            handover = _recording.HandOver(loader.num_workers, recorders)
        options = _spawned.options_from(_spawned.options_state(options))  # a copy
        options.prefetch, options.persistent_workers = 1, False
        # The placeholder has no image to mix; mixing never moves a sample's stream.
        options.mixup_alpha = options.cutmix_alpha = 0.0
        recipes = [_spawned.PythonRecipe.of(r, _recording.PLACEHOLDER, True)
                   for r in recorders]
        recipe = recipes[0] if mixture is None else \
            dataclasses.replace(mixture, sources=recipes)
        init = _recording.RecordingInit(recorders, loader._worker_init())
        handoff = handover.serve if handover is not None else None
        if loader.num_workers and loader._start_method in ("spawn", "forkserver"):
            # Spawned as the pass's workers are, each keeping the recorder's
            # files and its end of the hand-over across its exec.
            payload = _spawned.Payload()
            payload.write(recipe, _spawned.options_state(options), init, "numpy",
                          plan is not None, "the dataset and worker_init_fn", handoff)
            options.worker_command = _spawned.command(payload.fd)
            options.worker_fds = [payload.fd] + sum(files, []) + \
                handover.worker_ends() + (
                    [loader._channel._fd] if loader._channel is not None else [])
        core = _core.Loader(_spawned.build_engine_dataset(recipe), options, init,
                            "numpy", plan, handoff=handoff)
        first = loader._pass_first

        def start(batches):
            replay = loader._begin_epoch(core, first)  # 0: see _layout_pass_can
            return _core.PassStart(core, first, replay, _recording.PLACEHOLDER, False)

        passes = _core.Batches(start, loader._raise_batch_error)
        read, errors = [], []
        with _dataset.generators_kept(loader.num_workers == 0):
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
                indices = array.array("Q")
                indices.frombytes(position.last_indices)
                read.append((position.last_worker, indices.tolist()))
        if not read and errors:
            # Every batch failed: the pass raises each batch's error in turn,
            # as torch's iterator does, and ends.
            loader._starting.raise_later(errors[1:])
            raise errors[0]
        if not read:
            return None  # the pass has no batch left: the first samples tell
        layout = merge(files, read)
        if handover is not None:
            handover.pids = core.release_workers()
            loader._handover, handover = handover, None
        else:
            loader._replayed = [r.cache for r in recorders]
        return layout
    finally:
        del kept
        if passes is not None:
            passes.close()
        if core is not None:
            core.close()
        for fd in sum(files, []):
            os.close(fd)
        if payload is not None:
            payload.close()
        if handover is not None:
            handover.abandon()
        elif loader._handover is not None:
            loader._handover.forked()
