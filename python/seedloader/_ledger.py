"""What each step trains on and what it leaves out: DataLoader.ledger (the
samples of a step, from the configuration alone) and DataLoader.skip (steps and
samples declared not to deliver, kept as the engine's skip list). Functions of
the loader they are bound to.
"""
from seedloader import _arguments, _checks, _core
from seedloader._core import Dataset
from seedloader._errors import ConfigError
from seedloader._mixture import Mixture


def ledger(loader, step, epoch=None, rank=None, skipped_only=False):
    """The samples global step `step` of `epoch` (default: loader.epoch) trains on,
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
    if loader._sampler is not None or loader._batch_sampler is not None:
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
    epoch = loader._epoch if epoch is None else _arguments.epoch_number(epoch)
    loader._place(announce=False)
    options = loader._engine_options()
    mixture = None
    if loader._mixture_history is not None:
        m = loader.dataset
        mixture = _core.LedgerMixture(m.names, m.sizes, loader._mixture_history,
                                      m.samples_per_epoch, loader._mixture_known)
    entries = []
    for e in _core.ledger(
            options, len(loader.dataset), epoch,
            _checks.integer(steps.start, "DataLoader.ledger: step"),
            _checks.integer(steps.stop, "DataLoader.ledger: step"),
            None if rank is None else _checks.integer(rank, "DataLoader.ledger: rank"),
            bool(skipped_only), mixture,
            loader.dataset if isinstance(loader.dataset, Dataset) else None):
        entry = {"epoch": e.epoch, "step": e.step, "rank": e.rank, "worker": e.worker,
                 "slot": e.slot, "index": e.index, "stream": e.stream,
                 "fingerprint": e.fingerprint, "skipped": e.skipped}
        if mixture is not None:
            entry.update(source=loader.dataset.names[e.source],
                         source_index=e.source_index, source_epoch=e.stream_epoch)
        entries.append(entry)
    return entries


def skip(loader, steps=(), samples=()):
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
    per_epoch = len(loader)
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
    new_samples = {sample_index(loader, i) for i in samples}
    if new_samples and loader._collate is not None:
        raise ConfigError("DataLoader.skip: samples cannot be skipped under a "
                          "collate_fn (the engine reads whole batches); skip steps")
    if new_samples and loader.seeding != "sample":
        raise ConfigError("DataLoader.skip: skipping samples needs seeding=\"sample\": "
                          "under worker streams the samples after a skipped one would "
                          "be augmented differently")
    set_skips(loader, loader._skip_steps | new_steps, loader._skip_samples | new_samples)


def sample_index(loader, sample):
    """The index skip() is given a sample by: an index, or over a Mixture also
    (source name, index in it), as last_indices and the trace name samples."""
    if loader._mixture_history is None or not isinstance(sample, (tuple, list)):
        index = _checks.integer(sample, "DataLoader.skip: sample")
        if index >= len(loader.dataset):
            own = isinstance(loader.dataset, (Dataset, Mixture))
            raise ConfigError("DataLoader.skip: sample %d is outside the data set's "
                              "%d samples (%s)" % (index, len(loader.dataset),
                                                   repr(loader.dataset) if own else
                                                   type(loader.dataset).__name__))
        return index
    m = loader.dataset
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


def set_skips(loader, steps, samples):
    """Makes `steps` ((epoch, first, end) triples, or (epoch, first, end, epochs)
    for the whole epochs of a long span) and `samples` the skip list;
    the engine is rebuilt for it when the next pass starts (a pass in progress
    runs on as it began)."""
    if (steps, samples) == (loader._skip_steps, loader._skip_samples):
        return
    loader._skip_steps, loader._skip_samples = set(steps), set(samples)
    loader._skips_changed = True
